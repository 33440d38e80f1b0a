/*
 * Bytes in a MIME charset to UTF-8: see mime-private.h.  Decoding never
 * fails the message: what iconv cannot read falls back to "UTF-8 where
 * valid, windows-1252 elsewhere", which is what undeclared 8-bit mail
 * almost always is.  iconv descriptors are cached per thread, so a worker
 * opens each charset once, not once per message.
 */
#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "mailbox/utf8.h"
#include "mime-private.h"

/* windows-1252 0x80..0x9F; 0 marks the five undefined bytes. */
static const uint16_t cp1252_c1[32] = {
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
};

static int
add_cp(struct mb_buf *out, uint32_t cp)
{
	char u[4];
	size_t n = mb_utf8_encode(cp, u);

	return mb_buf_add(out, u, n);
}

/* UTF-8 where the bytes are valid UTF-8, windows-1252 for each byte that is not. */
static int
utf8_or_cp1252(const char *in, size_t len, struct mb_buf *out)
{
	size_t i = 0, run, n;
	uint32_t cp;

	while (i < len) {
		for (run = i; run < len && (unsigned char)in[run] < 0x80; run++)
			;
		if (run > i && mb_buf_add(out, in + i, run - i) == -1)
			return -1;
		i = run;
		if (i >= len)
			break;
		if ((n = mb_utf8_decode(in + i, len - i, &cp)) != 0) {
			if (mb_buf_add(out, in + i, n) == -1)
				return -1;
			i += n;
			continue;
		}
		cp = (unsigned char)in[i];
		if (cp < 0xa0)
			cp = cp1252_c1[cp - 0x80] ? cp1252_c1[cp - 0x80] : 0xfffd;
		if (add_cp(out, cp) == -1)
			return -1;
		i++;
	}
	return 0;
}

/*
 * The name iconv should open for a MIME charset label, "" for "read it as
 * UTF-8 with a windows-1252 fallback", or the label itself lower-cased into
 * lower.  Nothing is allocated.
 */
static const char *
charset_canon(const char *label, char *lower, size_t lsz)
{
	static const struct { const char *label, *iconv; } alias[] = {
		/* Labels that mean "no real information": guess from the bytes. */
		{ "us-ascii", "" }, { "ascii", "" }, { "utf-8", "" }, { "utf8", "" },
		{ "iso-8859-1", "" }, { "iso8859-1", "" }, { "latin1", "" },
		{ "iso_8859-1", "" }, { "windows-1252", "" }, { "cp1252", "" },
		{ "x-unknown", "" }, { "unknown-8bit", "" }, { "unknown", "" },
		{ "default", "" }, { "x-user-defined", "" }, { "8bit", "" },
		{ "ansi_x3.4-1968", "" },
		/* Labels whose real-world meaning is a superset. */
		{ "shift_jis", "CP932" }, { "shift-jis", "CP932" }, { "sjis", "CP932" },
		{ "x-sjis", "CP932" }, { "ms_kanji", "CP932" }, { "csshiftjis", "CP932" },
		{ "windows-31j", "CP932" }, { "cp932", "CP932" },
		{ "gb2312", "GB18030" }, { "gbk", "GB18030" }, { "x-gbk", "GB18030" },
		{ "cp936", "GB18030" }, { "euc-cn", "GB18030" },
		{ "ks_c_5601-1987", "CP949" }, { "euc-kr", "CP949" }, { "ks_c_5601", "CP949" },
		{ "big5", "BIG5-HKSCS" }, { "x-big5", "BIG5-HKSCS" },
		{ "iso-8859-8-i", "ISO-8859-8" }, { "iso-8859-8-e", "ISO-8859-8" },
		{ "tis-620", "CP874" }, { "windows-874", "CP874" }, { "iso-8859-11", "CP874" },
		{ "iso-2022-jp", "ISO-2022-JP-2" },
	};
	const char *s = label, *e;
	size_t n = 0;

	while (*s == ' ' || *s == '"' || *s == '\'' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '"' || e[-1] == '\'' || e[-1] == '\t'))
		e--;
	for (; s < e && n + 1 < lsz; s++)
		lower[n++] = (*s >= 'A' && *s <= 'Z') ? (char)(*s - 'A' + 'a') : *s;
	lower[n] = '\0';
	if (n == 0)
		return "";
	for (size_t i = 0; i < MB_ARRAY_LEN(alias); i++)
		if (strcmp(lower, alias[i].label) == 0)
			return alias[i].iconv;
	return lower;
}

#define CS_CACHE	8

struct cs_slot {
	char	 name[40];
	iconv_t	 cd;	/* (iconv_t)-1: iconv does not know this name */
	bool	 used;
};

static _Thread_local struct cs_slot cs_cache[CS_CACHE];
static _Thread_local unsigned cs_next;

/* A reset descriptor for name, or (iconv_t)-1 when iconv cannot read it. */
static iconv_t
cs_open(const char *name)
{
	struct cs_slot *s;

	if (strlen(name) >= sizeof(s->name))
		return (iconv_t)-1;
	for (size_t i = 0; i < CS_CACHE; i++) {
		s = &cs_cache[i];
		if (s->used && strcmp(s->name, name) == 0) {
			if (s->cd != (iconv_t)-1)
				(void)iconv(s->cd, NULL, NULL, NULL, NULL);
			return s->cd;
		}
	}
	s = &cs_cache[cs_next++ % CS_CACHE];
	if (s->used && s->cd != (iconv_t)-1)
		iconv_close(s->cd);
	memcpy(s->name, name, strlen(name) + 1);
	s->cd = iconv_open("UTF-8", name);
	s->used = true;
	return s->cd;
}

static bool
ascii_only(const char *in, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)in[i] >= 0x80 || in[i] == 0x1b || in[i] == '+' || in[i] == '~')
			return false;
	return true;
}

static int
iconv_all(iconv_t cd, const char *in, size_t len, struct mb_buf *out)
{
	char tmp[4096], *o;
	char *ip = (char *)(uintptr_t)in;
	size_t il = len, ol;
	size_t r;

	while (il > 0) {
		o = tmp;
		ol = sizeof(tmp);
		r = iconv(cd, &ip, &il, &o, &ol);
		if (mb_buf_add(out, tmp, (size_t)(o - tmp)) == -1)
			return -1;
		if (r != (size_t)-1)
			break;
		if (errno == E2BIG)
			continue;
		/* EILSEQ: one unreadable byte; EINVAL: a truncated last character. */
		if (add_cp(out, 0xfffd) == -1)
			return -1;
		if (errno != EILSEQ)
			break;
		ip++;
		il--;
		(void)iconv(cd, NULL, NULL, NULL, NULL);
	}
	o = tmp;
	ol = sizeof(tmp);
	(void)iconv(cd, NULL, NULL, &o, &ol);	/* shift back to the initial state */
	return mb_buf_add(out, tmp, (size_t)(o - tmp));
}

int
mb_charset_to_utf8(const char *charset, const char *in, size_t len, struct mb_buf *out)
{
	char lower[64];
	const char *name = charset_canon(charset ? charset : "", lower, sizeof(lower));
	iconv_t cd;

	if (*name == '\0')
		return utf8_or_cp1252(in, len, out);
	/* ASCII is ASCII in every charset mail uses, except the 7-bit shifting ones. */
	if (ascii_only(in, len))
		return mb_buf_add(out, in, len);
	if ((cd = cs_open(name)) == (iconv_t)-1)
		return utf8_or_cp1252(in, len, out);
	return iconv_all(cd, in, len, out);
}
