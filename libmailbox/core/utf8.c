/* UTF-8 helpers: see include/mailbox/utf8.h. */
#include <string.h>

#include "mailbox/utf8.h"

size_t
mb_utf8_decode(const char *s, size_t len, uint32_t *cp_r)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp, min;
	size_t n;

	if (len == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp_r = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
		min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else
		return 0;
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cp_r = cp;
	return n;
}

size_t
mb_utf8_encode(uint32_t cp, char out[4])
{
	unsigned char *o = (unsigned char *)out;

	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp <= 0x10ffff) {
		o[0] = (unsigned char)(0xf0 | (cp >> 18));
		o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[3] = (unsigned char)(0x80 | (cp & 0x3f));
		return 4;
	}
	return 0;
}

size_t
mb_utf8_ascii_run(const char *s, size_t len)
{
	const uint64_t high = 0x8080808080808080ULL;
	size_t i = 0;
	uint64_t w;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);	/* no alignment assumed */
		if (w & high)
			break;
	}
	while (i < len && (unsigned char)s[i] < 0x80)
		i++;
	return i;
}

bool
mb_utf8_valid(const char *s, size_t len)
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		/* ASCII runs are the common case: skip them eight bytes at a time. */
		if ((unsigned char)s[i] < 0x80) {
			i += mb_utf8_ascii_run(s + i, len - i);
			continue;
		}
		if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0)
			return false;
		i += n;
	}
	return true;
}

size_t
mb_utf8_boundary(const char *s, size_t len, size_t max)
{
	size_t n;

	if (max >= len)
		return len;
	/* Back up over continuation bytes: at most 3 in valid UTF-8. */
	n = max;
	while (n > 0 && max - n < 3 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	if (((unsigned char)s[n] & 0xc0) == 0x80)
		return max;	/* not valid UTF-8 here: any cut is as good */
	return n;
}

size_t
mb_utf8_count(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

size_t
mb_utf8_offset(const char *s, size_t len, size_t nchars)
{
	size_t i = 0;

	/* a character is a byte and the continuation bytes after it, so a
	 * stray byte (even one at s[0]) counts as one */
	while (i < len && nchars > 0) {
		i++;
		while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		nchars--;
	}
	return i;
}

bool
mb_utf8_is_cjk(uint32_t c)
{
	if (c < 0x1100)
		return false;	/* the common case: Latin, Greek, Cyrillic ... */
	return (c >= 0x1100 && c <= 0x11ff) ||		/* Hangul Jamo */
	    (c >= 0x2e80 && c <= 0x2fdf) ||		/* CJK and Kangxi radicals */
	    c == 0x3005 || c == 0x3006 || c == 0x3007 ||	/* 々 〆 〇 */
	    (c >= 0x3021 && c <= 0x3029) ||		/* Hangzhou numerals */
	    (c >= 0x3038 && c <= 0x303b) ||
	    (c >= 0x3041 && c <= 0x309f) ||		/* Hiragana */
	    (c >= 0x30a0 && c <= 0x30fa) ||		/* Katakana (not ・) */
	    (c >= 0x30fc && c <= 0x30ff) ||		/* ー ヽ ヾ ヿ */
	    (c >= 0x3105 && c <= 0x312f) ||		/* Bopomofo */
	    (c >= 0x3131 && c <= 0x318e) ||		/* Hangul compatibility Jamo */
	    (c >= 0x31a0 && c <= 0x31bf) ||		/* Bopomofo extended */
	    (c >= 0x31f0 && c <= 0x31ff) ||		/* Katakana phonetic extensions */
	    (c >= 0x3400 && c <= 0x4dbf) ||		/* Han extension A */
	    (c >= 0x4e00 && c <= 0x9fff) ||		/* Han */
	    (c >= 0xa960 && c <= 0xa97f) ||		/* Hangul Jamo extended A */
	    (c >= 0xac00 && c <= 0xd7af) ||		/* Hangul syllables */
	    (c >= 0xd7b0 && c <= 0xd7ff) ||		/* Hangul Jamo extended B */
	    (c >= 0xf900 && c <= 0xfaff) ||		/* Han compatibility */
	    (c >= 0xff66 && c <= 0xff9f) ||		/* halfwidth Katakana */
	    (c >= 0xffa0 && c <= 0xffdc) ||		/* halfwidth Hangul */
	    (c >= 0x1b000 && c <= 0x1b16f) ||		/* Kana supplement, extended A */
	    (c >= 0x20000 && c <= 0x3134f);		/* Han extensions B..G */
}

bool
mb_utf8_is_invisible(uint32_t cp)
{
	return (cp >= 0x200b && cp <= 0x200d) || (cp >= 0x2060 && cp <= 0x2064) ||
	    cp == 0xfeff || cp == 0xad || cp == 0x180e ||	/* soft hyphen, MVS */
	    cp == 0x200e || cp == 0x200f || cp == 0x61c ||	/* LRM, RLM, ALM */
	    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	    (cp >= 0xe0000 && cp <= 0xe007f);
}

size_t
mb_utf8_strip_invisible(char *s, size_t len)
{
	static const char repl[3] = { (char)0xef, (char)0xbf, (char)0xbd };
	size_t r = 0, w = 0, n;
	uint32_t cp;

	while (r < len) {
		if ((unsigned char)s[r] < 0x80) {
			s[w++] = s[r++];
			continue;
		}
		n = mb_utf8_decode(s + r, len - r, &cp);
		if (n == 0) {
			/*
			 * An invalid byte: U+FFFD takes 3 bytes, so it fits only
			 * where earlier stripping has left room.
			 */
			r++;
			if (r - w >= 3) {
				memcpy(s + w, repl, 3);
				w += 3;
			}
			continue;
		}
		if (!mb_utf8_is_invisible(cp)) {
			memmove(s + w, s + r, n);
			w += n;
		}
		r += n;
	}
	if (w < len)
		s[w] = '\0';
	return w;
}
