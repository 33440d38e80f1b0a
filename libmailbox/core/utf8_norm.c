/*
 * Unicode normalisation for the index: NFC for what is stored, NFKC-style
 * folding for what is searched (include/mailbox/utf8.h).  GLib's normaliser
 * does the Unicode work: syncd links GLib through GMime anyway, and mcpd
 * links it here, so the text side and the query side of the tokenizer run
 * the very same tables (docs/normaliser.md "Unicode forms").
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

/*
 * Characters that NFKC leaves alone on their own, so that most non-ASCII
 * text (accented Latin-1 letters, Greek and Cyrillic, the Hebrew, Arabic and
 * Thai letters, kana, CJK ideographs, Hangul syllables) does not pay for a
 * call into GLib per character: the ranges hold no character with a
 * decomposition (canonical or compatibility) and none that composes with
 * the one before it.  Whether a combining mark follows is checked apart.
 */
static bool
nfkc_stable(uint32_t cp)
{
	return cp < 0xa0 || (cp >= 0xc0 && cp <= 0xff) || (cp >= 0x388 && cp <= 0x3ce) ||
	    (cp >= 0x400 && cp <= 0x482) || (cp >= 0x48a && cp <= 0x4ff) ||
	    (cp >= 0x5d0 && cp <= 0x5ea) ||
	    (cp >= 0x621 && cp <= 0x63a) || (cp >= 0x641 && cp <= 0x64a) ||
	    (cp >= 0xe01 && cp <= 0xe2e) ||
	    (cp >= 0x3041 && cp <= 0x3096) || (cp >= 0x30a1 && cp <= 0x30fa) ||
	    (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0xac00 && cp <= 0xd7a3);
}

/*
 * The same for NFC, which leaves more alone: also the Latin-1 signs,
 * Latin Extended-A, most general punctuation (dashes, quotes, ellipsis),
 * currency signs, CJK punctuation and the full- and half-width forms.
 */
static bool
nfc_stable(uint32_t cp)
{
	return nfkc_stable(cp) || (cp >= 0xa0 && cp <= 0x17f) ||
	    (cp >= 0x2010 && cp <= 0x2027) || (cp >= 0x2030 && cp <= 0x205e) ||
	    (cp >= 0x20a0 && cp <= 0x20c0) || (cp >= 0x3000 && cp <= 0x3029) ||
	    (cp >= 0xff01 && cp <= 0xffee);
}

/*
 * Whether s is already in the form: every character stable on its own,
 * so no combining mark anywhere either.  The common case, checked without
 * allocating.  Invalid bytes count as stable (they are copied).
 */
static bool
already(const char *s, size_t len, bool (*stable)(uint32_t))
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		if ((unsigned char)s[i] < 0x80) {
			i += mb_utf8_ascii_run(s + i, len - i);
			continue;
		}
		if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0) {
			i++;
			continue;
		}
		if (!stable(cp))
			return false;
		i += n;
	}
	return true;
}

int
mb_utf8_nfc(const char *s, size_t len, struct mb_buf *out)
{
	gchar *n;
	int rc;

	if (already(s, len, nfc_stable) ||
	    (n = g_utf8_normalize(s, (gssize)len, G_NORMALIZE_NFC)) == NULL)
		return mb_buf_add(out, s, len);
	rc = mb_buf_adds(out, n);
	g_free(n);
	return rc;
}

struct fold {
	struct mb_buf	 out;
	uint32_t	*map;
	size_t		 map_cap;
};

/* Append n bytes p to f's text and make room for their entries in its map. */
static size_t
fold_grow(struct fold *f, const char *p, size_t n)
{
	size_t at = f->out.len;

	if (mb_buf_add(&f->out, p, n) == -1)
		mb_fatalx("utf8: fold: out of memory");
	if (2 * f->out.len > f->map_cap) {
		f->map_cap = 4 * f->out.len + 64;
		f->map = mb_xrealloc(f->map, f->map_cap * sizeof(*f->map));
	}
	return at;
}

/* Append n bytes p, all from the cluster [start, end) of the input. */
static void
fold_add(struct fold *f, const char *p, size_t n, size_t start, size_t end)
{
	for (size_t i = fold_grow(f, p, n); i < f->out.len; i++) {
		f->map[2 * i] = (uint32_t)start;
		f->map[2 * i + 1] = (uint32_t)end;
	}
}

/*
 * Append the n ASCII bytes at s + start as they are, each its own cluster:
 * what fold_add() a byte at a time would give, without a decode and a
 * combining-class lookup per byte.
 */
static void
fold_ascii(struct fold *f, const char *s, size_t start, size_t n)
{
	size_t at = fold_grow(f, s + start, n);

	for (size_t k = 0; k < n; k++) {
		f->map[2 * (at + k)] = (uint32_t)(start + k);
		f->map[2 * (at + k) + 1] = (uint32_t)(start + k + 1);
	}
}

bool
mb_utf8_fold(const char *s, size_t len, char **out_r, size_t *out_len_r, uint32_t **map_r)
{
	struct fold f = { .out = MB_BUF_INIT(SIZE_MAX / 2) };
	bool changed = false;
	size_t i = 0;

	*out_r = NULL;
	*out_len_r = 0;
	*map_r = NULL;
	if (len > UINT32_MAX || already(s, len, nfkc_stable))
		return false;
	while (i < len) {
		size_t start = i, n;
		uint32_t cp, mark;
		bool single = true;
		gchar *g;

		/*
		 * An ASCII run is stable, and only its last character can take
		 * combining marks (those after the run): the rest goes as it is.
		 */
		if ((unsigned char)s[i] < 0x80) {
			n = mb_utf8_ascii_run(s + i, len - i);
			if (i + n < len)
				n--;
			if (n > 0) {
				fold_ascii(&f, s, i, n);
				i += n;
				continue;
			}
		}
		if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0) {
			fold_add(&f, s + i, 1, i, i + 1);	/* an invalid byte: as it is */
			i++;
			continue;
		}
		for (i += n; i < len; i += n, single = false)
			if ((n = mb_utf8_decode(s + i, len - i, &mark)) == 0 ||
			    g_unichar_combining_class(mark) == 0)
				break;
		if (single && nfkc_stable(cp)) {
			fold_add(&f, s + start, i - start, start, i);
			continue;
		}
		g = g_utf8_normalize(s + start, (gssize)(i - start), G_NORMALIZE_NFKC);
		if (g == NULL) {
			fold_add(&f, s + start, i - start, start, i);
			continue;
		}
		n = strlen(g);
		if (n != i - start || memcmp(g, s + start, n) != 0)
			changed = true;
		fold_add(&f, g, n, start, i);
		g_free(g);
	}
	if (!changed) {
		mb_buf_release(&f.out);
		free(f.map);
		return false;
	}
	*out_r = mb_buf_detach(&f.out, out_len_r);
	*map_r = f.map;
	return true;
}
