/*
 * Mailbox names: what a user sees in a folder list is the UTF-8 name, and
 * EXAMINE must send exactly the bytes the server listed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/mutf7.h"

static const struct {
	const char	*utf8;
	const char	*mutf7;
} names[] = {
	{ "INBOX", "INBOX" },
	{ "Entwürfe", "Entw&APw-rfe" },
	{ "日本", "&ZeVnLA-" },
	{ "Tom & Jerry", "Tom &- Jerry" },
	{ "Entwürfe &Co €", "Entw&APw-rfe &-Co &IKw-" },	/* ends in a shift: needs the flush */
	{ "~peter/mail/台北/日本語", "~peter/mail/&U,BTFw-/&ZeVnLIqe-" },	/* RFC 3501's example */
	{ "😀", "&2D3eAA-" },	/* outside the BMP: a UTF-16 surrogate pair */
};

static void
mutf7_round_trips_listed_names(void **state)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct mb_err err = { 0 };
		char *out = NULL;

		assert_int_equal(mb_mutf7_decode(names[i].mutf7, &out, &err), 0);
		assert_string_equal(out, names[i].utf8);
		free(out);
		assert_int_equal(mb_mutf7_encode(names[i].utf8, &out, &err), 0);
		assert_string_equal(out, names[i].mutf7);
		free(out);
	}
}

static void
mutf7_rejects_what_is_not_modified_utf7(void **state)
{
	static const char *bad[] = {
		"Entw\xc3\xbcrfe",	/* raw UTF-8 on the wire */
		"&Jjo!",		/* unterminated shift with a stray character */
		"&ZeVnLA",		/* shift never closed */
		"&AGE-",		/* "a" inside a shift: not canonical */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mb_err err = { 0 };
		char *out = (char *)1;

		assert_int_equal(mb_mutf7_decode(bad[i], &out, &err), -1);
		assert_null(out);
		assert_int_equal(err.code, MB_E_PROTO);
	}
}

static void
mutf7_encode_rejects_invalid_utf8(void **state)
{
	struct mb_err err = { 0 };
	char *out = (char *)1;

	assert_int_equal(mb_mutf7_encode("caf\xe9", &out, &err), -1);
	assert_null(out);
	assert_int_equal(err.code, MB_E_INVALID);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mutf7_round_trips_listed_names),
		cmocka_unit_test(mutf7_rejects_what_is_not_modified_utf7),
		cmocka_unit_test(mutf7_encode_rejects_invalid_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
