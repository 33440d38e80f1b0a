/*
 * The filters of the query language (libmailbox/core/query_filter.c): what
 * every prefix compiles to, the dates absolute (UTC) and relative (the
 * server's TZ, from a fixed now), the errors a model reads, the unknown
 * prefix listing the known ones, and that the user's table (docs/query.md)
 * and the fuzzer's dictionary name every prefix the compiler knows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#define NOW	1709294400	/* 2024-03-01T12:00:00Z, a Friday */

static void
compile_at(struct mb_query *q, const char *text, int64_t now)
{
	struct mb_err err = { 0 };

	mb_query_init(q);
	q->now = now;
	if (mb_query_compile(text, strlen(text), q, &err) == -1)
		fail_msg("'%s': %s", text, err.msg);
}

static void
compile(struct mb_query *q, const char *text)
{
	compile_at(q, text, NOW);
}

/* The error text compiles to (and that it is one). */
static void
expect_error(const char *text, const char *says)
{
	struct mb_query q;
	struct mb_err err = { 0 };

	mb_query_init(&q);
	q.now = NOW;
	if (mb_query_compile(text, strlen(text), &q, &err) != -1)
		fail_msg("'%s' compiled", text);
	assert_int_equal(err.code, MB_E_INVALID);
	if (strstr(err.msg, says) == NULL)
		fail_msg("'%s': error '%s' lacks '%s'", text, err.msg, says);
	assert_true(mb_query_empty(&q));
}

static int64_t
utc(int y, int m, int d)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d };

	return (int64_t)timegm(&tm);
}

/* ---- absolute dates: UTC */

static void
absolute_dates_are_utc_days_months_years_and_ranges(void **state)
{
	static const struct {
		const char	*in;
		int64_t		 since, until;
	} cases[] = {
		{ "date:2024", 1704067200, 1735689600 },
		{ "date:2024-02", 1706745600, 1709251200 },		/* 29 days */
		{ "date:2023-12", 1701388800, 1704067200 },
		{ "date:2024-03-01", 1709251200, 1709337600 },
		{ "date:2024-03-01..2024-03-31", 1709251200, 1711929600 },
		{ "date:..2023", INT64_MIN, 1704067200 },
		{ "date:2024..", 1704067200, INT64_MAX },
		{ "date:2023..2024-01", 1672531200, 1706745600 },
		{ "after:2024-03", 1709251200, INT64_MAX },
		{ "before:2024", INT64_MIN, 1704067200 },
		{ "date:2024 after:2024-06-01", 1717200000, 1735689600 },	/* narrowed */
	};

	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		struct mb_query q;

		compile(&q, cases[i].in);
		if (q.since != cases[i].since || q.until != cases[i].until)
			fail_msg("'%s': [%lld, %lld), want [%lld, %lld)", cases[i].in,
			    (long long)q.since, (long long)q.until, (long long)cases[i].since,
			    (long long)cases[i].until);
		assert_false(q.dates_relative);
		mb_query_release(&q);
	}
	assert_int_equal(utc(2024, 3, 1), 1709251200);
}

/* ---- relative dates: the server's time zone */

static void
set_tz(const char *tz)
{
	if (tz)
		setenv("TZ", tz, 1);
	else
		unsetenv("TZ");
	tzset();
}

static void
relative_dates_count_back_from_now_in_the_server_time_zone(void **state)
{
	struct mb_query q;
	const char *old = getenv("TZ");
	char *saved = old ? mb_xstrdup(old) : NULL;

	(void)state;
	set_tz("UTC0");
	compile(&q, "newer_than:7d");
	assert_int_equal(q.since, NOW - 7 * 86400);
	assert_int_equal(q.until, INT64_MAX);
	assert_true(q.dates_relative);
	mb_query_release(&q);
	compile(&q, "older_than:2w");
	assert_int_equal(q.until, NOW - 14 * 86400);
	mb_query_release(&q);
	compile(&q, "newer_than:1m");
	assert_int_equal(q.since, utc(2024, 2, 1) + 12 * 3600);
	mb_query_release(&q);
	compile(&q, "newer_than:1y");
	assert_int_equal(q.since, utc(2023, 3, 1) + 12 * 3600);
	mb_query_release(&q);
	compile(&q, "date:today");
	assert_int_equal(q.since, utc(2024, 3, 1));
	assert_int_equal(q.until, utc(2024, 3, 2));
	mb_query_release(&q);
	compile(&q, "date:yesterday");
	assert_int_equal(q.since, utc(2024, 2, 29));
	assert_int_equal(q.until, utc(2024, 3, 1));
	assert_true(q.dates_relative);
	mb_query_release(&q);
	/* Tokyo (UTC+9): 12:00Z is 21:00 local, "today" starts at 15:00Z the day before */
	set_tz("JST-9");
	compile(&q, "date:today");
	assert_int_equal(q.since, utc(2024, 2, 29) + 15 * 3600);
	assert_int_equal(q.until, utc(2024, 3, 1) + 15 * 3600);
	mb_query_release(&q);
	/* 23:30Z is already the 2nd in Tokyo */
	compile_at(&q, "date:yesterday", NOW + 11 * 3600 + 1800);
	assert_int_equal(q.since, utc(2024, 2, 29) + 15 * 3600);
	mb_query_release(&q);
	/* a month back over a daylight-saving change keeps the local clock time */
	set_tz("CET-1CEST,M3.5.0,M10.5.0/3");
	compile_at(&q, "newer_than:1m", utc(2024, 4, 15) + 10 * 3600);	/* 12:00 CEST */
	assert_int_equal(q.since, utc(2024, 3, 15) + 11 * 3600);	/* 12:00 CET */
	mb_query_release(&q);
	set_tz(saved);
	free(saved);
}

/* A cursor outlives the clock: relative dates are hashed as written. */
static void
relative_dates_keep_a_cursor_valid_as_time_passes(void **state)
{
	struct mb_query a, b;

	(void)state;
	compile_at(&a, "budget newer_than:7d", NOW);
	compile_at(&b, "budget newer_than:7d", NOW + 90);
	assert_true(mb_search_hash(&a) == mb_search_hash(&b));
	mb_query_release(&b);
	compile_at(&b, "budget newer_than:8d", NOW);
	assert_false(mb_search_hash(&a) == mb_search_hash(&b));
	mb_query_release(&b);
	mb_query_release(&a);
	compile(&a, "budget date:2024");
	compile(&b, "budget date:2023");
	assert_false(mb_search_hash(&a) == mb_search_hash(&b));
	mb_query_release(&b);
	mb_query_release(&a);
}

/* ---- the other filters */

static void
sizes_ids_threads_lists_and_labels_become_bounds(void **state)
{
	struct mb_query q;

	(void)state;
	compile(&q, "larger:10K");
	assert_int_equal(q.size_min, 10241);
	assert_int_equal(q.size_max, -1);
	mb_query_release(&q);
	compile(&q, "smaller:5M size:100");
	assert_int_equal(q.size_min, 100);
	assert_int_equal(q.size_max, 5 * 1024 * 1024);
	mb_query_release(&q);
	compile(&q, "size:1k..2KB");
	assert_int_equal(q.size_min, 1024);
	assert_int_equal(q.size_max, 2049);
	mb_query_release(&q);
	compile(&q, "size:..1G");
	assert_int_equal(q.size_min, -1);
	assert_int_equal(q.size_max, 1024LL * 1024 * 1024 + 1);
	mb_query_release(&q);
	compile(&q, "id:<abc.123@example.com>");
	assert_string_equal(q.msgid, "abc.123@example.com");
	mb_query_release(&q);
	compile(&q, "msgid:abc@x id:<abc@x>");
	assert_string_equal(q.msgid, "abc@x");
	mb_query_release(&q);
	compile(&q, "thread:42");
	assert_int_equal(q.thread_id, 42);
	mb_query_release(&q);
	compile(&q, "list:Dev.Lists.Example.ORG");
	assert_string_equal(q.list, "dev.lists.example.org");
	mb_query_release(&q);
	compile(&q, "label:Project-X -keyword:$Junk tag:todo");
	assert_string_equal(q.labels, "+Project-X -$Junk +todo");
	assert_null(q.match);
	mb_query_release(&q);
	compile(&q, "is:draft is:starred -is:replied");
	assert_int_equal(q.flags_set, MB_FLAG_DRAFT | MB_FLAG_FLAGGED);
	assert_int_equal(q.flags_clear, MB_FLAG_ANSWERED);
	mb_query_release(&q);
}

static void
in_names_a_role_or_a_folder(void **state)
{
	static const struct {
		const char *in, *folder, *role;
	} cases[] = {
		{ "in:inbox", "INBOX", NULL }, { "in:INBOX", "INBOX", NULL },
		{ "in:sent", NULL, "\\Sent" }, { "in:Drafts", NULL, "\\Drafts" },
		{ "in:trash", NULL, "\\Trash" }, { "in:junk", NULL, "\\Junk" },
		{ "in:spam", NULL, "\\Junk" }, { "in:archive", NULL, "\\Archive" },
		{ "in:\"Sent Items\"", "Sent Items", NULL }, { "folder:sent", "sent", NULL },
		{ "in:sent in:sent", NULL, "\\Sent" },
	};

	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		struct mb_query q;

		compile(&q, cases[i].in);
		if ((cases[i].folder ? q.folder == NULL || strcmp(q.folder, cases[i].folder) :
		    q.folder != NULL) ||
		    (cases[i].role ? q.role == NULL || strcmp(q.role, cases[i].role) :
		    q.role != NULL))
			fail_msg("'%s': folder %s role %s", cases[i].in,
			    q.folder ? q.folder : "-", q.role ? q.role : "-");
		mb_query_release(&q);
	}
}

static void
from_me_and_to_me_are_filters_not_words(void **state)
{
	struct mb_query q;

	(void)state;
	compile(&q, "from:me");
	assert_int_equal(q.from_me, 1);
	assert_int_equal(q.to_me, -1);
	assert_null(q.match);
	mb_query_release(&q);
	compile(&q, "-from:me to:ME budget");
	assert_int_equal(q.from_me, 0);
	assert_int_equal(q.to_me, 1);
	assert_string_equal(q.match, "\"budget\"");
	mb_query_release(&q);
	compile(&q, "cc:me");
	assert_int_equal(q.to_me, 1);
	mb_query_release(&q);
	/* quoted or a prefix: the word "me" (a sender named Me, me*) */
	compile(&q, "from:\"me\" to:me*");
	assert_int_equal(q.from_me, -1);
	assert_int_equal(q.to_me, -1);
	assert_string_equal(q.match, "{from_text} : \"me\" AND {recipients} : \"me\"*");
	mb_query_release(&q);	/* only the address fields have a "me": elsewhere it is the word */
	compile(&q, "subject:me");
	assert_int_equal(q.to_me, -1);
	assert_int_equal(q.from_me, -1);
	assert_string_equal(q.match, "{subject} : \"me\"");
	mb_query_release(&q);
}

static const struct {
	const char	*in;
	const char	*says;
} errors[] = {
	{ "project:x", "unknown prefix 'project:'" },
	{ "Re: budget", "unknown prefix 'Re:'" },
	{ "-foo:bar budget", "unknown prefix 'foo:'" },
	{ "date:2024-13", "date: wants a day, month or year" },
	{ "date:..", "date: wants" },
	{ "date:2024-02-30", "date: wants" },
	{ "date:1969", "date: wants" },
	{ "-date:2024 x", "cannot be negated; use before: or after:" },
	{ "newer_than:7", "d (days), w (weeks)" },
	{ "newer_than:7x", "d (days)" },
	{ "older_than:d", "d (days)" },
	{ "-newer_than:7d x", "use older_than:" },
	{ "larger:lots", "K, M or G" },
	{ "size:1T", "K, M or G" },
	{ "size:..", "size:1M..5M" },
	{ "-larger:5M x", "use smaller:" },
	{ "id:<>", "wants a Message-ID" },
	{ "id:a@x id:b@x", "two different id:" },
	{ "thread:abc", "thread: wants a thread_id" },
	{ "thread:0", "thread: wants" },
	{ "thread:1 thread:2", "two different thread:" },
	{ "label:\\Seen", "system flags are is: filters" },
	{ "label:\"a b\"", "without spaces" },
	{ "label:a label:b label:c label:d label:e label:f label:g label:h label:i",
	    "too many label:" },
	{ "label:", "label: needs a value, e.g. label:project-x" },
	{ "is:important", "is:draft" },
	{ "in:sent folder:INBOX", "two different folders" },
	{ "in:sent in:trash", "two different folders" },
	{ "-in:sent x", "cannot be negated" },
	{ "from:me -from:me", "contradict" },
	{ "-list:x y", "cannot be negated" },
	{ "-account:work x", "name the accounts to search instead" },
	{ "account:wo-rk x", "account: wants an account name" },
	{ "account:abcdefghijklmnopqrstuvwxyz0123456 x", "account: wants" },
	{ "account: x", "account: needs a value, e.g. account:work" },
};

/*
 * account: is kept for mcpd, lower-cased and each name once, and selects no
 * message by itself: alone it leaves the query empty, beside a word it
 * leaves the MATCH as the word alone; it changes the cursor hash.
 */
static void
account_names_are_kept_for_mcpd(void **state)
{
	struct mb_query q, plain;

	(void)state;
	compile(&q, "account:Work invoice account:home_2 account:work");
	assert_string_equal(q.accounts, "work home_2");
	assert_string_equal(q.match, "\"invoice\"");
	compile(&plain, "invoice");
	assert_true(mb_search_hash(&q) != mb_search_hash(&plain));
	mb_query_release(&plain);
	mb_query_release(&q);
	compile(&q, "account:work");
	assert_true(mb_query_empty(&q));
	assert_string_equal(q.accounts, "work");
	mb_query_release(&q);
	assert_null(q.accounts);
}

static void
bad_filters_say_what_to_change(void **state)
{
	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(errors); i++)
		expect_error(errors[i].in, errors[i].says);
}

/* URLs and quoted text with a colon stay searchable words. */
static void
a_url_or_quoted_colon_is_text(void **state)
{
	struct mb_query q;

	(void)state;
	compile(&q, "https://example.com/a \"Re: budget\" mailto://x");
	assert_string_equal(q.match, "\"https://example.com/a\" AND \"Re: budget\" AND "
	    "\"mailto://x\"");
	mb_query_release(&q);
}

/* ---- every prefix is documented and in the fuzzer's dictionary */

/* The known prefixes, as the unknown-prefix error lists them. */
static size_t
known_prefixes(char out[][16], size_t max)
{
	struct mb_query q;
	struct mb_err err = { 0 };
	const char *p, *end;
	size_t n = 0;

	mb_query_init(&q);
	assert_int_equal(mb_query_compile("nosuch:x", 8, &q, &err), -1);
	p = strstr(err.msg, "the known ones are ");
	assert_non_null(p);
	p += strlen("the known ones are ");
	end = strchr(p, ';');
	assert_non_null(end);
	while (p < end && n < max) {
		const char *c = strchr(p, ':');

		assert_true(c != NULL && c < end && (size_t)(c - p) < 15);
		memcpy(out[n], p, (size_t)(c - p) + 1);
		out[n][c - p + 1] = '\0';
		n++;
		p = c + 1;
		while (p < end && *p == ' ')
			p++;
	}
	return n;
}

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *s;
	long n;

	if (fp == NULL)
		fail_msg("%s: cannot open", path);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	s = mb_xcalloc(1, (size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	return s;
}

static void
every_prefix_is_documented_and_in_the_fuzz_dictionary(void **state)
{
	char names[64][16], want[64];
	size_t n = known_prefixes(names, 64);
	char *doc = slurp(MB_SOURCE_DIR "/docs/query.md");
	char *dict = slurp(MB_SOURCE_DIR "/tests/fuzz/query.dict");

	(void)state;
	assert_true(n >= 25);
	for (size_t i = 0; i < n; i++) {
		/* a table row starts with the prefix in backquotes */
		snprintf(want, sizeof(want), "| `%.15s", names[i]);
		if (strstr(doc, want) == NULL)
			fail_msg("docs/query.md has no row for %s", names[i]);
		snprintf(want, sizeof(want), "\"%.15s\"", names[i]);
		if (strstr(dict, want) == NULL)
			fail_msg("tests/fuzz/query.dict lacks %s", want);
	}
	free(doc);
	free(dict);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(absolute_dates_are_utc_days_months_years_and_ranges),
		cmocka_unit_test(relative_dates_count_back_from_now_in_the_server_time_zone),
		cmocka_unit_test(relative_dates_keep_a_cursor_valid_as_time_passes),
		cmocka_unit_test(sizes_ids_threads_lists_and_labels_become_bounds),
		cmocka_unit_test(in_names_a_role_or_a_folder),
		cmocka_unit_test(from_me_and_to_me_are_filters_not_words),
		cmocka_unit_test(bad_filters_say_what_to_change),
		cmocka_unit_test(a_url_or_quoted_colon_is_text),
		cmocka_unit_test(account_names_are_kept_for_mcpd),
		cmocka_unit_test(every_prefix_is_documented_and_in_the_fuzz_dictionary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
