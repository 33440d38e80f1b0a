/*
 * The flag-name table (include/mailbox/msg.h): every flag once, in bit
 * order, and a client's spelling of either kind maps to its bit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "mailbox/msg.h"

static void
flag_table_has_every_flag_once_in_bit_order(void **state)
{
	unsigned seen = 0;

	for (size_t i = 0; i < MB_FLAG_COUNT; i++) {
		const struct mb_flag_name *f = &mb_flag_names[i];

		assert_int_equal(f->bit, 1u << i);
		assert_int_equal(seen & f->bit, 0);
		seen |= f->bit;
		/* the IMAP name is the word, capitalised, after one backslash */
		assert_int_equal(f->imap[0], '\\');
		assert_int_equal(strlen(f->imap), strlen(f->word) + 1);
		assert_int_equal(strncasecmp(f->imap + 1, f->word, strlen(f->word)), 0);
	}
	assert_string_equal(mb_flag_names[0].unset_word, "unread");
}

static void
flag_parse_takes_both_spellings_in_any_case(void **state)
{
	static const struct { const char *s; unsigned bit; } cases[] = {
		{ "\\Seen", MB_FLAG_SEEN }, { "\\SEEN", MB_FLAG_SEEN }, { "seen", MB_FLAG_SEEN },
		{ "Flagged", MB_FLAG_FLAGGED }, { "\\flagged", MB_FLAG_FLAGGED },
		{ "\\Answered", MB_FLAG_ANSWERED }, { "answered", MB_FLAG_ANSWERED },
		{ "\\Deleted", MB_FLAG_DELETED }, { "draft", MB_FLAG_DRAFT },
		{ "unread", 0 }, { "\\\\Seen", 0 }, { "Seen ", 0 }, { "", 0 }, { "\\", 0 },
		{ "$Forwarded", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (mb_flag_parse(cases[i].s) != cases[i].bit)
			fail_msg("'%s' -> %u, want %u", cases[i].s, (unsigned)mb_flag_parse(cases[i].s),
			    cases[i].bit);
	assert_int_equal(mb_flag_parse(NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flag_table_has_every_flag_once_in_bit_order),
		cmocka_unit_test(flag_parse_takes_both_spellings_in_any_case),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
