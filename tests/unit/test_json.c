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
		cmocka_unit_test(json_reports_a_full_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
