/*
 * Labels (include/mailbox/labels.h): which names label_message may write,
 * and the case-insensitive membership test the write process verifies with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "mailbox/labels.h"

/* An IMAP atom without a backslash, within the length, is a label; nothing else is. */
static void
label_valid_is_an_imap_atom_without_backslash(void **state)
{
	static const char *const good[] = { "project-x", "$Label1", "$Important", "a", "Nj&AB-",
	    "x.y_z+1", "[bracket", "}" };
	static const char *const bad[] = { "", "has space", "\\Seen", "a\\b", "a(b", "a)b",
	    "a{b", "a%b", "a*b", "a\"b", "a]b", "tab\there", "caf\xc3\xa9", "nl\n", "\x7f" };
	char longest[129], too_long[130];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(mb_label_valid(good[i], 128));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(mb_label_valid(bad[i], 128));
	assert_false(mb_label_valid(NULL, 128));
	memset(longest, 'k', 128);
	longest[128] = '\0';
	assert_true(mb_label_valid(longest, 128));
	memset(too_long, 'k', 129);
	too_long[129] = '\0';
	assert_false(mb_label_valid(too_long, 128));
}

/* Membership ignores ASCII case and matches whole keywords only. */
static void
labels_has_whole_keywords_any_case(void **state)
{
	(void)state;
	assert_true(mb_labels_has("$Important project-x", "PROJECT-X"));
	assert_true(mb_labels_has("$Important project-x", "$important"));
	assert_false(mb_labels_has("$Important project-x", "project"));
	assert_false(mb_labels_has("project-xy", "project-x"));
	assert_false(mb_labels_has("", "a"));
	assert_false(mb_labels_has(NULL, "a"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(label_valid_is_an_imap_atom_without_backslash),
		cmocka_unit_test(labels_has_whole_keywords_any_case),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
