/*
 * UTF-8 helpers: decoding refuses what is not UTF-8, a cut never splits a
 * character, and the characters that hide text from a reader are stripped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "mailbox/buf.h"
#include "mailbox/utf8.h"

#include "support_rand.h"

static void
utf8_decodes_every_length(void **state)
{
	static const struct { const char *s; size_t n; uint32_t cp; } ok[] = {
		{ "A", 1, 0x41 }, { "\xc3\xa9", 2, 0xe9 }, { "\xe2\x82\xac", 3, 0x20ac },
		{ "\xf0\x9f\x98\x80", 4, 0x1f600 }, { "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
	};
	char enc[4];
	uint32_t cp;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(mb_utf8_decode(ok[i].s, strlen(ok[i].s), &cp), ok[i].n);
		assert_int_equal(cp, ok[i].cp);
		assert_int_equal(mb_utf8_encode(ok[i].cp, enc), ok[i].n);
		assert_memory_equal(enc, ok[i].s, ok[i].n);
	}
}

static void
utf8_refuses_overlong_surrogate_and_truncated(void **state)
{
	static const char *bad[] = {
		"\xc0\xaf",		/* overlong '/' */
		"\xe0\x80\xaf",		/* overlong */
		"\xed\xa0\x80",		/* surrogate U+D800 */
		"\xf4\x90\x80\x80",	/* past U+10FFFF */
		"\xe2\x82",		/* truncated */
		"\x80",			/* lone continuation */
		"\xff",
	};
	uint32_t cp;
	char enc[4];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mb_utf8_decode(bad[i], strlen(bad[i]), &cp), 0);
		assert_false(mb_utf8_valid(bad[i], strlen(bad[i])));
	}
	assert_int_equal(mb_utf8_encode(0xd800, enc), 0);
	assert_int_equal(mb_utf8_encode(0x110000, enc), 0);
	assert_true(mb_utf8_valid("caf\xc3\xa9 \xe4\xbc\x9a\xe8\xad\xb0", 12));
}

static void
utf8_boundary_never_splits_a_character(void **state)
{
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";	/* a é € 😀 z */
	size_t len = strlen(s);
	static const size_t want[] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11 };

	for (size_t max = 0; max <= len; max++) {
		size_t n = mb_utf8_boundary(s, len, max);

		assert_int_equal(n, want[max]);
		assert_true(mb_utf8_valid(s, n));
	}
	assert_int_equal(mb_utf8_boundary(s, len, 100), len);
}

static void
utf8_counts_and_offsets_characters(void **state)
{
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
	size_t len = strlen(s);

	assert_int_equal(mb_utf8_count(s, len), 5);
	assert_int_equal(mb_utf8_offset(s, len, 0), 0);
	assert_int_equal(mb_utf8_offset(s, len, 2), 3);
	assert_int_equal(mb_utf8_offset(s, len, 4), 10);
	assert_int_equal(mb_utf8_offset(s, len, 99), len);
}

/* What get_message's paging sees in a body with stray bytes. */
static void
utf8_counts_and_offsets_in_invalid_text(void **state)
{
	/* a stray continuation byte, then a, a lone lead byte, then b */
	const char *s = "\x80" "a\xe2" "b";

	assert_int_equal(mb_utf8_count(s, 4), 3);	/* a, \xe2, b */
	assert_int_equal(mb_utf8_offset(s, 4, 0), 0);
	assert_int_equal(mb_utf8_offset(s, 4, 1), 1);	/* \x80 is one character */
	assert_int_equal(mb_utf8_offset(s, 4, 2), 2);
	assert_int_equal(mb_utf8_offset(s, 4, 3), 3);
	assert_int_equal(mb_utf8_offset("\xe2\x82", 2, 1), 2);	/* a truncated € is one */
}

/* One table for the tokenizer and the query compiler (docs/index.md). */
static void
utf8_cjk_ranges(void **state)
{
	static const uint32_t cjk[] = { 0x4e00, 0x9fff, 0x3042, 0x30a2, 0x30fc, 0xac00,
	    0x3005, 0xff76, 0xffa1, 0x3105, 0x3131, 0x1100, 0x20000, 0x1b001, 0xf900 };
	static const uint32_t other[] = { 'a', 0xe9, 0x3001, 0x3002, 0x300c, 0x30fb, 0x3040,
	    0xff01, 0xff65, 0x10ff, 0x2e7f, 0xd800, 0x31350 };

	for (size_t i = 0; i < sizeof(cjk) / sizeof(cjk[0]); i++)
		if (!mb_utf8_is_cjk(cjk[i]))
			fail_msg("U+%04X should be CJK", (unsigned)cjk[i]);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (mb_utf8_is_cjk(other[i]))
			fail_msg("U+%04X should not be CJK", (unsigned)other[i]);
}

static void
utf8_invisible_ranges(void **state)
{
	static const uint32_t hidden[] = { 0x200b, 0x200c, 0x200d, 0x2060, 0xfeff, 0x202a,
	    0x202e, 0x2066, 0x2069, 0xe0000, 0xe0041, 0xe007f, 0xad, 0x200e, 0x200f, 0x61c,
	    0x180e, 0x2061, 0x2064 };
	static const uint32_t shown[] = { 0x20, 0xe9, 0xac, 0xae, 0x200a, 0x2010, 0x2029,
	    0x2065, 0x206a, 0x61b, 0x180d, 0x180f, 0xe0080, 0x4f1a };

	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		assert_true(mb_utf8_is_invisible(hidden[i]));
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
		assert_false(mb_utf8_is_invisible(shown[i]));
}

static void
utf8_strip_removes_zero_width_bidi_and_tags(void **state)
{
	/* pass<ZWSP>word <RLO>exe<PDF> <TAG A><TAG B>ok<BOM> */
	char s[] = "pass\xe2\x80\x8bword \xe2\x80\xae" "exe\xe2\x80\xac "
	    "\xf3\xa0\x81\x81\xf3\xa0\x81\x82ok\xef\xbb\xbf";
	size_t n = mb_utf8_strip_invisible(s, strlen(s));

	assert_int_equal(n, strlen("password exe ok"));
	assert_string_equal(s, "password exe ok");
}

static void
utf8_strip_replaces_bad_bytes_where_room(void **state)
{
	/* A 4-byte invisible frees room for U+FFFD; a bad byte with no room is dropped. */
	char a[] = "\xf3\xa0\x81\x81\xff!";
	char b[] = "x\xffy";
	size_t n;

	n = mb_utf8_strip_invisible(a, strlen(a));
	assert_int_equal(n, 4);
	assert_memory_equal(a, "\xef\xbf\xbd!", 4);
	n = mb_utf8_strip_invisible(b, strlen(b));
	assert_int_equal(n, 2);
	assert_string_equal(b, "xy");
}

/* NFC for storage: decomposed text is composed, everything else kept. */
static void
utf8_nfc_composes(void **state)
{
	struct mb_buf b = MB_BUF_INIT(1024);

	(void)state;
	assert_int_equal(mb_utf8_nfc("re\xcc\x81sume\xcc\x81", 10, &b), 0);
	assert_string_equal(b.data, "r\xc3\xa9sum\xc3\xa9");
	mb_buf_reset(&b);
	/* NFC is not NFKC: the ligature stays in what is stored */
	assert_int_equal(mb_utf8_nfc("\xef\xac\x81 plain", 9, &b), 0);
	assert_string_equal(b.data, "\xef\xac\x81 plain");
	mb_buf_reset(&b);
	/* not UTF-8: appended as it is */
	assert_int_equal(mb_utf8_nfc("a\xff", 2, &b), 0);
	assert_memory_equal(b.data, "a\xff", 2);
	mb_buf_release(&b);
}

/* Folding for search, with each output byte mapped to the input it came from. */
static void
utf8_fold_maps_back_to_the_input(void **state)
{
	static const char lig[] = "x\xef\xac\x81y";	/* xﬁy */
	char *out;
	size_t n;
	uint32_t *map;

	(void)state;
	assert_true(mb_utf8_fold(lig, sizeof(lig) - 1, &out, &n, &map));
	assert_string_equal(out, "xfiy");
	assert_int_equal(n, 4);
	assert_int_equal(map[0], 0);		/* x */
	assert_int_equal(map[1], 1);
	assert_int_equal(map[2], 1);		/* f of U+FB01, bytes 1..4 */
	assert_int_equal(map[3], 4);
	assert_int_equal(map[4], 1);		/* i of U+FB01 */
	assert_int_equal(map[5], 4);
	assert_int_equal(map[6], 4);		/* y */
	assert_int_equal(map[7], 5);
	free(out);
	free(map);
	/* NFD to NFC: e + U+0301 is one cluster */
	assert_true(mb_utf8_fold("e\xcc\x81!", 4, &out, &n, &map));
	assert_string_equal(out, "\xc3\xa9!");
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 3);
	assert_int_equal(map[4], 3);
	free(out);
	free(map);
	/* full width and circled digits */
	assert_true(mb_utf8_fold("\xef\xbc\xa1\xe2\x91\xa0", 6, &out, &n, &map));
	assert_string_equal(out, "A1");
	free(out);
	free(map);
	/* nothing to fold: false, nothing allocated */
	assert_false(mb_utf8_fold("plain ascii", 11, &out, &n, &map));
	assert_null(out);
	assert_null(map);
	assert_false(mb_utf8_fold("caf\xc3\xa9 \xe4\xbc\x9a\xe8\xad\xb0", 12, &out, &n, &map));
	/* invalid bytes are copied, alone */
	assert_true(mb_utf8_fold("\xff\xef\xac\x81", 4, &out, &n, &map));
	assert_memory_equal(out, "\xff" "fi", 3);
	free(out);
	free(map);
}

/* The ASCII run ends at the first byte at or above 0x80, wherever it is. */
static void
utf8_ascii_run_stops_at_the_first_high_byte(void **state)
{
	(void)state;
	for (size_t len = 0; len <= 40; len++) {
		char *s = malloc(len ? len : 1);	/* exact size: ASan sees a read past it */

		memset(s, 'a', len);
		assert_int_equal(mb_utf8_ascii_run(s, len), len);
		for (size_t at = 0; at < len; at++) {
			s[at] = (char)(at % 2 ? 0x80 : 0xff);
			assert_int_equal(mb_utf8_ascii_run(s, len), at);
			assert_int_equal(mb_utf8_ascii_run(s + at, len - at), 0);
			s[at] = 'a';
		}
		free(s);
	}
}

/*
 * The fold as it was written first, a character at a time: each character
 * with the combining marks after it is one cluster, normalised (NFKC) on
 * its own, an invalid byte copied alone.  Same contract as mb_utf8_fold().
 */
static bool
fold_by_characters(const char *s, size_t len, char **out_r, size_t *n_r, uint32_t **map_r)
{
	struct mb_buf out = MB_BUF_INIT(SIZE_MAX / 2);
	uint32_t *map = NULL;
	size_t i = 0, n;
	bool changed = false;
	uint32_t cp;

	while (i < len) {
		size_t start = i, at = out.len, glen;
		gchar *g = NULL;

		if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0)
			i++;
		else
			for (i += n; i < len; i += n)
				if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0 ||
				    g_unichar_combining_class(cp) == 0)
					break;
		if (i - start > 1 || (unsigned char)s[start] >= 0x80)
			g = g_utf8_normalize(s + start, (gssize)(i - start), G_NORMALIZE_NFKC);
		if (g != NULL) {
			glen = strlen(g);
			changed |= glen != i - start || memcmp(g, s + start, glen) != 0;
			assert_int_equal(mb_buf_add(&out, g, glen), 0);
			g_free(g);
		} else
			assert_int_equal(mb_buf_add(&out, s + start, i - start), 0);
		map = realloc(map, 2 * (out.len + 1) * sizeof(*map));
		for (size_t k = at; k < out.len; k++) {
			map[2 * k] = (uint32_t)start;
			map[2 * k + 1] = (uint32_t)i;
		}
	}
	if (!changed) {
		mb_buf_release(&out);
		free(map);
		return false;
	}
	*out_r = mb_buf_detach(&out, n_r);
	*map_r = map;
	return true;
}

/*
 * Random text of ASCII runs among the characters folding cares about (a
 * combining mark after ASCII and after a non-ASCII letter, a ligature, full
 * width, no-break space, precomposed é, Hangul jamo, CJK, broken bytes):
 * the fold, which copies ASCII runs whole, gives what a character at a
 * time gives, byte for byte and map entry for map entry.
 */
static void
utf8_fold_equals_folding_a_character_at_a_time(void **state)
{
	static const char *const pieces[] = {
		"a", "Z", " ", "0", "tion", "e\xcc\x81", "\xcc\x81", "\xcc\x81\xcc\xa3",
		"\xef\xac\x81", "\xef\xbc\xa1", "\xc2\xa0", "\xc3\xa9", "\xe1\x84\x80\xe1\x85\xa1",
		"\xe4\xbc\x9a", "\xff", "\x80", "\xe2\x91\xa0", "\xc3\xa9\xcc\x81", "hello world ",
	};
	uint64_t seed = 19;
	char buf[256];

	(void)state;
	for (int round = 0; round < 20000; round++) {
		size_t len = 0, pieces_n = mb_test_rand(&seed) % 24;
		char *a = NULL, *b = NULL;
		uint32_t *ma = NULL, *mb = NULL;
		size_t na = 0, nb = 0;
		bool fa, fb;

		for (size_t k = 0; k < pieces_n; k++) {
			const char *p = pieces[mb_test_rand(&seed) % (sizeof(pieces) / sizeof(pieces[0]))];

			if (len + strlen(p) > sizeof(buf))
				break;
			memcpy(buf + len, p, strlen(p));
			len += strlen(p);
		}
		fa = mb_utf8_fold(buf, len, &a, &na, &ma);
		fb = fold_by_characters(buf, len, &b, &nb, &mb);
		assert_int_equal(fa, fb);
		if (fa) {
			assert_int_equal(na, nb);
			assert_memory_equal(a, b, na);
			assert_memory_equal(ma, mb, 2 * na * sizeof(*ma));
		}
		free(a);
		free(b);
		free(ma);
		free(mb);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(utf8_decodes_every_length),
		cmocka_unit_test(utf8_refuses_overlong_surrogate_and_truncated),
		cmocka_unit_test(utf8_boundary_never_splits_a_character),
		cmocka_unit_test(utf8_counts_and_offsets_characters),
		cmocka_unit_test(utf8_counts_and_offsets_in_invalid_text),
		cmocka_unit_test(utf8_cjk_ranges),
		cmocka_unit_test(utf8_invisible_ranges),
		cmocka_unit_test(utf8_strip_removes_zero_width_bidi_and_tags),
		cmocka_unit_test(utf8_strip_replaces_bad_bytes_where_room),
		cmocka_unit_test(utf8_nfc_composes),
		cmocka_unit_test(utf8_fold_maps_back_to_the_input),
		cmocka_unit_test(utf8_ascii_run_stops_at_the_first_high_byte),
		cmocka_unit_test(utf8_fold_equals_folding_a_character_at_a_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
