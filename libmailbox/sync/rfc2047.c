/*
 * Unstructured header values to UTF-8: RFC 2047 encoded words and raw 8-bit
 * bytes.  See mime-private.h.  Written here rather than taken from GMime so
 * that a word in an unknown charset keeps its characters (GMime drops them)
 * and a character split across two adjacent words survives.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mailbox/utf8.h"
#include "mime-private.h"

#define HDR_MAX	(1u << 20)	/* a decoded header value never needs more */
#define EW_MAX	2048		/* longest encoded word we accept */

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int
b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static void
decode_q(const char *s, size_t n, struct mb_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		int h, l;

		if (s[i] == '_')
			(void)mb_buf_addc(out, ' ');
		else if (s[i] == '=' && i + 2 < n &&
		    (h = hexval(s[i + 1])) >= 0 && (l = hexval(s[i + 2])) >= 0) {
			(void)mb_buf_addc(out, (char)(h << 4 | l));
			i += 2;
		} else
			(void)mb_buf_addc(out, s[i]);
	}
}

static void
decode_b(const char *s, size_t n, struct mb_buf *out)
{
	uint32_t acc = 0;
	int bits = 0, v;

	for (size_t i = 0; i < n; i++) {
		if ((v = b64val(s[i])) < 0)
			continue;	/* padding and junk */
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			(void)mb_buf_addc(out, (char)((acc >> bits) & 0xff));
		}
	}
}

/*
 * An encoded word at s (=?charset[*lang]?B|Q?text?=) within len bytes: on
 * success returns its length, sets the charset span and appends the decoded
 * bytes to bytes.
 */
static size_t
encoded_word(const char *s, size_t len, const char **cs, size_t *cslen, struct mb_buf *bytes)
{
	const char *p = s + 2, *end = s + len, *q, *text;
	char enc;

	if (len < 8 || s[0] != '=' || s[1] != '?')
		return 0;
	/*
	 * RFC 2047 allows 75 characters; real mailers write longer ones, but a
	 * "word" past this is not one, and the bound keeps a header full of
	 * unterminated "=?" linear rather than quadratic.
	 */
	if (len > EW_MAX)
		len = EW_MAX;
	end = s + len;
	for (q = p; q < end && *q != '?' && *q != ' ' && *q != '\t'; q++)
		;
	if (q == p || q + 3 >= end || *q != '?' || q[2] != '?')
		return 0;
	enc = q[1];
	if (enc != 'B' && enc != 'b' && enc != 'Q' && enc != 'q')
		return 0;
	*cs = p;
	*cslen = (size_t)(q - p);
	if (memchr(p, '*', *cslen) != NULL)	/* RFC 2231 language suffix */
		*cslen = (size_t)((const char *)memchr(p, '*', *cslen) - p);
	text = q + 3;
	for (q = text; q + 1 < end; q++) {
		if (*q == ' ' || *q == '\t')
			return 0;
		if (q[0] == '?' && q[1] == '=')
			break;
	}
	if (q + 1 >= end)
		return 0;
	if (enc == 'B' || enc == 'b')
		decode_b(text, (size_t)(q - text), bytes);
	else
		decode_q(text, (size_t)(q - text), bytes);
	return (size_t)(q + 2 - s);
}

/*
 * Collapse whitespace and control characters, drop invisible ones, trim.
 * Returns a new string the caller frees; in is modified.
 */
static char *
clean_line(struct mb_buf *in)
{
	struct mb_buf b = MB_BUF_INIT(HDR_MAX + 8);
	bool space = false;
	size_t i = 0, n;
	uint32_t cp;

	in->len = mb_utf8_strip_invisible(in->data, in->len);
	while (i < in->len) {
		unsigned char c = (unsigned char)in->data[i];

		if (c < 0x20 || c == 0x7f || c == ' ') {
			space = b.len > 0;
			i++;
			continue;
		}
		n = 1;
		if (c >= 0x80 && (n = mb_utf8_decode(in->data + i, in->len - i, &cp)) == 0)
			n = 1;
		if (space)
			(void)mb_buf_addc(&b, ' ');
		space = false;
		(void)mb_buf_add(&b, in->data + i, n);
		i += n;
	}
	return mb_buf_detach(&b, NULL);
}

char *
mb_rfc2047_decode(const char *raw, size_t len)
{
	struct mb_buf out = MB_BUF_INIT(HDR_MAX);
	struct mb_buf word = MB_BUF_INIT(HDR_MAX);	/* bytes of adjacent words */
	const char *wcs = NULL, *cs;
	size_t wcslen = 0, cslen, i = 0, n, ws = 0;
	bool after_word = false;
	char csname[64];
	char *r;

	if (len > HDR_MAX)
		len = HDR_MAX;
	while (i < len) {
		char c = raw[i];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			for (n = i; n < len && (raw[n] == ' ' || raw[n] == '\t' ||
			    raw[n] == '\r' || raw[n] == '\n'); n++)
				;
			ws = n - i;
			i = n;
			if (!after_word) {
				(void)mb_buf_addc(&out, ' ');
				ws = 0;
			}
			continue;
		}
		if (c == '=' && i + 1 < len && raw[i + 1] == '?') {
			size_t before = word.len;
			const char *pcs = wcs;
			size_t pcslen = wcslen;

			if ((n = encoded_word(raw + i, len - i, &cs, &cslen, &word)) != 0) {
				/* A word in another charset: decode what we held first. */
				if (pcs != NULL && (pcslen != cslen || strncasecmp(pcs, cs, cslen) != 0)) {
					struct mb_buf tail = MB_BUF_INIT(HDR_MAX);

					(void)mb_buf_add(&tail, word.data + before, word.len - before);
					mb_buf_truncate(&word, before);
					snprintf(csname, sizeof(csname), "%.*s", (int)pcslen, pcs);
					(void)mb_charset_to_utf8(csname, word.data, word.len, &out);
					mb_buf_reset(&word);
					(void)mb_buf_add(&word, tail.data, tail.len);
					mb_buf_release(&tail);
				}
				wcs = cs;
				wcslen = cslen;
				ws = 0;	/* whitespace between encoded words is dropped */
				after_word = true;
				i += n;
				continue;
			}
		}
		/* Plain text: flush the held words, then the held whitespace. */
		if (wcs != NULL) {
			snprintf(csname, sizeof(csname), "%.*s", (int)wcslen, wcs);
			(void)mb_charset_to_utf8(csname, word.data, word.len, &out);
			mb_buf_reset(&word);
			wcs = NULL;
		}
		if (ws > 0)
			(void)mb_buf_addc(&out, ' ');
		ws = 0;
		after_word = false;
		for (n = i + 1; n < len && raw[n] != ' ' && raw[n] != '\t' && raw[n] != '\r' &&
		    raw[n] != '\n' && !(raw[n] == '=' && n + 1 < len && raw[n + 1] == '?'); n++)
			;
		(void)mb_charset_to_utf8(NULL, raw + i, n - i, &out);
		i = n;
	}
	if (wcs != NULL) {
		snprintf(csname, sizeof(csname), "%.*s", (int)wcslen, wcs);
		(void)mb_charset_to_utf8(csname, word.data, word.len, &out);
	}
	mb_buf_release(&word);
	r = clean_line(&out);
	mb_buf_release(&out);
	return r;
}
