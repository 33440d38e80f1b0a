/*
 * The flag-name table (include/mailbox/msg.h): every flag once, in bit
 * order, and a client's spelling of either kind maps to its bit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "mailbox/buf.h"
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

/* One address as mb_addr_format writes it (a static buffer). */
static const char *
fmt(const char *name, const char *addr)
{
	static char out[256];
	struct mb_buf b = MB_BUF_INIT(1024);

	assert_int_equal(mb_addr_format(&b, name, addr), 0);
	snprintf(out, sizeof(out), "%s", b.data);
	mb_buf_release(&b);
	return out;
}

/* A display name is quoted exactly when an RFC 5322 parser would misread it bare. */
static void
addr_format_quotes_what_a_parser_would_split(void **state)
{
	(void)state;
	assert_string_equal(fmt("Anna Smith", "a@x"), "Anna Smith <a@x>");
	assert_string_equal(fmt("Smith, Anna", "a@x"), "\"Smith, Anna\" <a@x>");
	assert_string_equal(fmt("J. Smith", "a@x"), "\"J. Smith\" <a@x>");
	assert_string_equal(fmt("say \"hi\" \\ bye", "a@x"), "\"say \\\"hi\\\" \\\\ bye\" <a@x>");
	assert_string_equal(fmt("Ann <boss>", "a@x"), "\"Ann <boss>\" <a@x>");
	assert_string_equal(fmt("two  spaces", "a@x"), "\"two  spaces\" <a@x>");
	assert_string_equal(fmt("Jos\xc3\xa9 M\xc3\xbcller", "a@x"), "Jos\xc3\xa9 M\xc3\xbcller <a@x>");
	assert_string_equal(fmt("O'Brien", "a@x"), "O'Brien <a@x>");
	assert_string_equal(fmt(NULL, "a@x"), "a@x");
	assert_string_equal(fmt("Only, Name", NULL), "\"Only, Name\"");
	assert_string_equal(fmt("", ""), "");
}

/* Groups as RFC 5322 writes them; an empty group is kept. */
static void
addr_list_format_writes_groups(void **state)
{
	struct mb_addr v[] = {
		{ .addr = "a@x" },
		{ .name = "Dee", .addr = "d@x", .group = "Team" },
		{ .addr = "e@x", .group = "Team" },
		{ .group = "undisclosed-recipients" },
		{ .name = "Last, First", .addr = "l@x" },
		{ 0 },
	};
	struct mb_buf b = MB_BUF_INIT(1024);

	(void)state;
	assert_int_equal(mb_addr_list_format(&b, v, MB_ARRAY_LEN(v)), 0);
	assert_string_equal(b.data, "a@x, Team: Dee <d@x>, e@x;, undisclosed-recipients:;, "
	    "\"Last, First\" <l@x>");
	mb_buf_reset(&b);
	assert_int_equal(mb_addr_list_format(&b, &v[3], 1), 0);
	assert_string_equal(b.data, "undisclosed-recipients:;");
	mb_buf_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flag_table_has_every_flag_once_in_bit_order),
		cmocka_unit_test(flag_parse_takes_both_spellings_in_any_case),
		cmocka_unit_test(addr_format_quotes_what_a_parser_would_split),
		cmocka_unit_test(addr_list_format_writes_groups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
