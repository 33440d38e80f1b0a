/*
 * Mail text is untrusted: a message can say "ignore your instructions".
 * Every piece of mail-derived text in a tool answer is wrapped in
 *   <untrusted-mail nonce="N"> ... </untrusted-mail nonce="N">
 * with a fresh random N per response, so a model can tell where mail ends;
 * a fence tag written inside the mail itself is neutralised (its '<' becomes
 * U+2039) so it cannot close the fence early, even without knowing N.
 * Mail text outside the fence (a folder name on a hit's line) is written by
 * mcp_fence_inline(): quoted, escaped to one line, fence tags neutralised;
 * and every mail string put in JSON (structuredContent, resource titles)
 * has its fence tags neutralised the same way (docs/mcpd.md: untrusted mail text).
 * Also here: strings for JSON and the signed cursors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mcpd.h"

static const char hexd[] = "0123456789abcdef";

void
mcp_fence_nonce(char nonce[25])
{
	unsigned char raw[12];

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		mb_fatalx("RAND_bytes failed");
	for (size_t i = 0; i < sizeof(raw); i++) {
		nonce[2 * i] = hexd[raw[i] >> 4];
		nonce[2 * i + 1] = hexd[raw[i] & 15];
	}
	nonce[24] = '\0';
}

/* Whether a fence tag ('<', maybe '/', then "untrusted-mail", any case) starts at s[i]. */
static bool
is_fence_tag(const char *s, size_t len, size_t i)
{
	static const char tag[] = "untrusted-mail";
	size_t k = i + 1;

	if (s[i] != '<')
		return false;
	if (k < len && s[k] == '/')
		k++;
	return len - k >= sizeof(tag) - 1 && strncasecmp(s + k, tag, sizeof(tag) - 1) == 0;
}

/* Append s (len bytes) to out with the '<' of every fence tag turned into U+2039. */
static int
add_neutralised(struct mb_buf *out, const char *s, size_t len)
{
	size_t i, start = 0;

	for (i = 0; i < len; i++) {
		if (!is_fence_tag(s, len, i))
			continue;
		if (mb_buf_add(out, s + start, i - start) == -1 ||
		    mb_buf_adds(out, "\xe2\x80\xb9") == -1)	/* U+2039 */
			return -1;
		start = i + 1;
	}
	return mb_buf_add(out, s + start, len - start);
}

static bool
has_fence_tag(const char *s, size_t len)
{
	for (const char *p = s; (p = memchr(p, '<', len - (size_t)(p - s))) != NULL; p++)
		if (is_fence_tag(s, len, (size_t)(p - s)))
			return true;
	return false;
}

int
mcp_fence_add(struct mb_buf *out, const char *nonce, const char *s, size_t len)
{
	if (mb_buf_addf(out, "<untrusted-mail nonce=\"%s\">\n", nonce) == -1 ||
	    add_neutralised(out, s, len) == -1)
		return -1;
	if (len > 0 && s[len - 1] != '\n' && mb_buf_addc(out, '\n') == -1)
		return -1;
	return mb_buf_addf(out, "</untrusted-mail nonce=\"%s\">\n", nonce);
}

int
mcp_fence_inline(struct mb_buf *out, const char *s)
{
	size_t len = s ? strlen(s) : 0, i = 0, n;
	uint32_t cp;
	int rc = mb_buf_addc(out, '"');

	while (rc == 0 && i < len) {
		n = mb_utf8_decode(s + i, len - i, &cp);
		if (n == 0) {
			rc = mb_buf_adds(out, "\xef\xbf\xbd");	/* U+FFFD */
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			rc = mb_buf_addf(out, "\\%c", (char)cp);
		else if (cp == '\n')
			rc = mb_buf_adds(out, "\\n");
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == 0x2028 ||
		    cp == 0x2029)	/* controls and line breaks: one line, visibly */
			rc = mb_buf_addf(out, "\\u%04x", (unsigned)cp);
		else if (is_fence_tag(s, len, i))
			rc = mb_buf_adds(out, "\xe2\x80\xb9");
		else
			rc = mb_buf_add(out, s + i, n);
		i += n;
	}
	return rc == 0 ? mb_buf_addc(out, '"') : -1;
}

json_t *
mcp_json_text(const char *s, size_t len)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);
	json_t *j;
	size_t i = 0;
	uint32_t cp;

	if (s == NULL)
		return json_null();
	if (!has_fence_tag(s, len) && (j = json_stringn(s, len)) != NULL)
		return j;	/* the common case: valid UTF-8, no fence tag */
	while (i < len) {
		size_t n = mb_utf8_decode(s + i, len - i, &cp);

		if (n == 0) {
			mb_buf_adds(&b, "\xef\xbf\xbd");	/* U+FFFD */
			i++;
			continue;
		}
		if (is_fence_tag(s, len, i))
			mb_buf_adds(&b, "\xe2\x80\xb9");
		else
			mb_buf_add(&b, s + i, n);
		i += n;
	}
	j = json_stringn(b.data, b.len);
	mb_buf_release(&b);
	return j ? j : json_string("");
}

/*
 * A cursor is hex(payload) "." hex(HMAC-SHA256(key, payload)[0..12)), the
 * payload being "<kind>:<offset>[,<offset>...]:<qhash>" (one offset per
 * account a merged search reads).  The key is random per process, so a
 * cursor is valid only against the server that issued it, which is what
 * MCP asks (clients must not persist cursors).
 */
#define CURSOR_PAYLOAD_MAX	(24 * MCP_ACCOUNTS_MAX + 32)

static void
cursor_mac(struct mcp_server *srv, const char *payload, size_t len, unsigned char mac[32])
{
	unsigned int mac_len = 32;

	HMAC(EVP_sha256(), srv->cursor_key, sizeof(srv->cursor_key),
	    (const unsigned char *)payload, len, mac, &mac_len);
}

char *
mcp_cursor_make_multi(struct mcp_server *srv, char kind, const int64_t *offsets, size_t n,
    uint64_t qhash)
{
	struct mb_buf p = MB_BUF_INIT(CURSOR_PAYLOAD_MAX);
	struct mb_buf b = MB_BUF_INIT(2 * CURSOR_PAYLOAD_MAX + 64);
	unsigned char mac[32];

	mb_buf_addf(&p, "%c:", kind);
	for (size_t i = 0; i < n; i++)
		mb_buf_addf(&p, "%s%lld", i ? "," : "", (long long)offsets[i]);
	mb_buf_addf(&p, ":%016llx", (unsigned long long)qhash);
	cursor_mac(srv, p.data, p.len, mac);
	for (size_t i = 0; i < p.len; i++) {
		mb_buf_addc(&b, hexd[(unsigned char)p.data[i] >> 4]);
		mb_buf_addc(&b, hexd[(unsigned char)p.data[i] & 15]);
	}
	mb_buf_addc(&b, '.');
	for (int i = 0; i < 12; i++) {
		mb_buf_addc(&b, hexd[mac[i] >> 4]);
		mb_buf_addc(&b, hexd[mac[i] & 15]);
	}
	mb_buf_release(&p);
	return mb_buf_detach(&b, NULL);
}

char *
mcp_cursor_make(struct mcp_server *srv, char kind, int64_t offset, uint64_t qhash)
{
	return mcp_cursor_make_multi(srv, kind, &offset, 1, qhash);
}

static int
unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
mcp_cursor_parse_multi(struct mcp_server *srv, const char *cursor, char kind, int64_t *offsets,
    size_t n, uint64_t *qhash_r)
{
	const char *dot = strchr(cursor, '.');
	char payload[CURSOR_PAYLOAD_MAX], *end;
	unsigned char mac[32], given[12];
	size_t plen, i;
	unsigned long long h;

	if (dot == NULL || (size_t)(dot - cursor) % 2 != 0 || strlen(dot + 1) != 24)
		return -1;
	plen = (size_t)(dot - cursor) / 2;
	if (plen == 0 || plen >= sizeof(payload))
		return -1;
	for (i = 0; i < plen; i++) {
		int hi = unhex(cursor[2 * i]), lo = unhex(cursor[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		payload[i] = (char)(hi << 4 | lo);
	}
	payload[plen] = '\0';
	for (i = 0; i < 12; i++) {
		int hi = unhex(dot[1 + 2 * i]), lo = unhex(dot[2 + 2 * i]);

		if (hi < 0 || lo < 0)
			return -1;
		given[i] = (unsigned char)(hi << 4 | lo);
	}
	cursor_mac(srv, payload, plen, mac);
	if (CRYPTO_memcmp(mac, given, sizeof(given)) != 0)
		return -1;
	/* signed by us: the shape is ours, but check it anyway */
	if (payload[0] != kind || payload[1] != ':')
		return -1;
	end = payload + 1;
	for (i = 0; i < n; i++) {
		long long off;

		if (*end != (i == 0 ? ':' : ','))
			return -1;	/* fewer offsets: another set of accounts */
		off = strtoll(end + 1, &end, 10);
		if (off < 0)
			return -1;
		offsets[i] = off;
	}
	if (*end != ':')
		return -1;	/* more offsets: another set of accounts */
	h = strtoull(end + 1, &end, 16);
	if (*end != '\0')
		return -1;
	*qhash_r = h;
	return 0;
}

int
mcp_cursor_parse(struct mcp_server *srv, const char *cursor, char kind, int64_t *offset_r,
    uint64_t *qhash_r)
{
	return mcp_cursor_parse_multi(srv, cursor, kind, offset_r, 1, qhash_r);
}
