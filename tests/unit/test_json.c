/*
 * JSON string literals (include/mailbox/json.h): what a JSON parser reads
 * back is the input, and the spelling is jansson's, byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "mailbox/buf.h"
#include "mailbox/json.h"

static char *
quote(const char *s, size_t len)
{
	struct mb_buf b = MB_BUF_INIT(1u << 20);

	assert_int_equal(mb_json_quote(&b, s, len), 0);
	return mb_buf_detach(&b, NULL);
}

static void
json_escapes_quotes_backslashes_and_controls(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "plain", "\"plain\"" },
		{ "", "\"\"" },
		{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
		{ "C:\\tmp", "\"C:\\\\tmp\"" },
		{ "a\nb\tc\r\b\f", "\"a\\nb\\tc\\r\\b\\f\"" },
		{ "\x01\x1f", "\"\\u0001\\u001F\"" },
		{ "caf\xc3\xa9 \xe4\xbc\x9a", "\"caf\xc3\xa9 \xe4\xbc\x9a\"" },
		{ "\x7f/", "\"\x7f/\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = quote(cases[i].in, strlen(cases[i].in));

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

/* Every byte below 0x80 (and a NUL inside), as jansson spells it, and read back. */
static void
json_matches_jansson_and_reads_back(void **state)
{
	char all[128];
	json_t *j, *back;
	json_error_t e;
	char *ours, *theirs;

	for (int i = 0; i < 128; i++)
		all[i] = (char)i;
	j = json_stringn(all, sizeof(all));
	assert_non_null(j);
	theirs = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	ours = quote(all, sizeof(all));
	assert_string_equal(ours, theirs);
	back = json_loads(ours, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	assert_non_null(back);
	assert_int_equal(json_string_length(back), sizeof(all));
	assert_memory_equal(json_string_value(back), all, sizeof(all));
	json_decref(back);
	json_decref(j);
	free(ours);
	free(theirs);
}

/*
 * mb_json_quote() skips runs 8 bytes at a time: every character that needs
 * an escape, at every offset of a word and in the tail after the last whole
 * word, between plain ASCII or between UTF-8 bytes (0x80 and up, which must
 * never count), spelled as jansson spells it.
 */
static void
json_escapes_at_every_offset(void **state)
{
	static const char specials[] = { '"', '\\', '\n', '\t', '\x01', '\x1f', '\0' };
	static const char *const fillers[] = { "a", "\xc3\xa9", " ", "\x7f" };

	for (size_t f = 0; f < sizeof(fillers) / sizeof(fillers[0]); f++) {
		size_t fl = strlen(fillers[f]);

		for (size_t len = 0; len <= 19; len++) {
			for (size_t sp = 0; sp <= sizeof(specials); sp++) {	/* the last: none */
				for (size_t at = 0; at <= len; at++) {
					char in[64];
					size_t n = 0;
					json_t *j;
					char *ours, *theirs;

					for (size_t k = 0; k < len; k++) {
						if (k == at && sp < sizeof(specials))
							in[n++] = specials[sp];
						memcpy(in + n, fillers[f], fl);
						n += fl;
					}
					if (at == len && sp < sizeof(specials))
						in[n++] = specials[sp];
					j = json_stringn(in, n);
					assert_non_null(j);
					theirs = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
					ours = quote(in, n);
					assert_string_equal(ours, theirs);
					free(ours);
					free(theirs);
					json_decref(j);
				}
			}
		}
	}
}

static void
json_reports_a_full_buffer(void **state)
{
	struct mb_buf b = MB_BUF_INIT(4);

	assert_int_equal(mb_json_quote(&b, "too long", 8), -1);
	mb_buf_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_escapes_quotes_backslashes_and_controls),
		cmocka_unit_test(json_matches_jansson_and_reads_back),
		cmocka_unit_test(json_escapes_at_every_offset),
		cmocka_unit_test(json_reports_a_full_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
