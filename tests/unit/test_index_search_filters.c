/*
 * The query language's filters over a real index (index_search.c): every
 * filter finds exactly its messages, alone and beside a word (the two
 * statements a search can run); labels are shown in hits and searched;
 * roles, from:me and to:me resolve through the index; the total is exact
 * where the page knows it, exact for every ranked search, and a flagged
 * lower bound past MB_SEARCH_COUNT_CAP (1,000).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/account.h"
#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/search-private.h"

#define T0	1709251200	/* 2024-03-01T00:00:00Z */
#define DAY	86400

struct fx {
	struct mb_test_index	 t;
	struct mb_index		*ro;
	int64_t			 sent, trash;
};

static void
sql(struct fx *f, const char *text)
{
	char *msg = NULL;

	if (sqlite3_exec(mb_index_db(f->t.idx), text, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", text, msg);
}

/*
 * Six messages (ids 1..6), each set apart by the filters:
 *   1 INBOX  alice -> me        "budget"  5 KB   labels $Label1 Project-X  list dev.example.org
 *   2 INBOX  bob -> carol       "budget"  50 KB  label done                thread of 1
 *   3 Sent   me -> bob (cc)     "budget"  1 KB   answered
 *   4 Sent   me -> alice        "lunch"   2 MB   draft
 *   5 Trash  eve -> x.me        "budget"  3 KB   list other.example.org
 *   6 INBOX  carol -> me (cc)   "lunch"   900 B  flagged, 2023
 */
static int
setup(void **state)
{
	struct fx *f = mb_xcalloc(1, sizeof(*f));
	struct mb_err err = { 0 };
	struct mb_test_index *t = &f->t;
	static const struct mb_account_address me[] = {
		{ "me@example.com", "IMAP_USER" }, { "Me.Too@Example.NET", "MY_ADDRESSES" },
	};

	mb_test_index_open(t, "test_index_search_filters");
	if (mb_index_folder_ensure(t->idx, "Sent", "\\Sent", &f->sent, &err) == -1 ||
	    mb_index_folder_ensure(t->idx, "Deleted Items", "\\Trash", &f->trash, &err) == -1)
		fail_msg("%s", err.msg);
	mb_test_put(t->idx, t->inbox, 1, &(struct mb_test_msg){ .subject = "Q1 budget",
	    .from = "alice@example.org", .body = "The budget.", .date = T0, .size = 5 * 1024,
	    .message_id = "one@example.org" });
	mb_test_put(t->idx, t->inbox, 2, &(struct mb_test_msg){ .subject = "Re: Q1 budget",
	    .from = "bob@example.org", .body = "budget agreed", .date = T0 + DAY,
	    .size = 50 * 1024, .message_id = "two@example.org", .in_reply_to = "one@example.org" });
	mb_test_put(t->idx, f->sent, 1, &(struct mb_test_msg){ .subject = "budget numbers",
	    .from = "ME@example.com", .body = "see budget", .date = T0 + 2 * DAY, .size = 1024,
	    .flags = MB_FLAG_ANSWERED | MB_FLAG_SEEN });
	mb_test_put(t->idx, f->sent, 2, &(struct mb_test_msg){ .subject = "lunch",
	    .from = "me.too@example.net", .body = "lunch at noon", .date = T0 + 3 * DAY,
	    .size = 2 * 1024 * 1024, .flags = MB_FLAG_DRAFT });
	mb_test_put(t->idx, f->trash, 1, &(struct mb_test_msg){ .subject = "budget spam",
	    .from = "eve@example.org", .body = "cheap budget", .date = T0 + 4 * DAY, .size = 3000 });
	mb_test_put(t->idx, t->inbox, 3, &(struct mb_test_msg){ .subject = "lunch last year",
	    .from = "carol@example.org", .body = "lunch", .date = T0 - 300 * DAY, .size = 900,
	    .flags = MB_FLAG_FLAGGED });
	/* what mb_test_msg does not carry: recipients (the JSON lists and the text
	 * the index renders from them), keywords, List-Id; and the
	 * folders' UIDVALIDITY, which makes the rows current */
	sql(f, "UPDATE folders SET uidvalidity = 1;"
	    "UPDATE messages SET to_json = '[{\"name\":null,\"addr\":\"me@example.com\"}]', "
	    "recipients = 'me@example.com', "
	    "keywords = '$Label1 Project-X \\Old', list_id = 'Dev.Example.ORG' WHERE id = 1;"
	    "UPDATE messages SET to_json = '[{\"name\":\"Carol\",\"addr\":\"carol@example.org\"}]',"
	    " recipients = 'Carol <carol@example.org>',"
	    " keywords = 'done' WHERE id = 2;"
	    "UPDATE messages SET to_json = '[{\"name\":null,\"addr\":\"x@example.org\"}]', "
	    "cc_json = '[{\"name\":\"Bob\",\"addr\":\"bob@example.org\"}]', "
	    "recipients = 'x@example.org, Bob <bob@example.org>' WHERE id = 3;"
	    "UPDATE messages SET to_json = '[{\"name\":null,\"addr\":\"alice@example.org\"}]', "
	    "recipients = 'alice@example.org' WHERE id = 4;"
	    "UPDATE messages SET to_json = '[{\"name\":null,\"addr\":\"x.me@example.com\"}]', "
	    "recipients = 'x.me@example.com', list_id = 'other.example.org' WHERE id = 5;"
	    "UPDATE messages SET cc_json = '[{\"name\":null,\"addr\":\"Me.Too@example.net\"}]', "
	    "recipients = 'Me.Too@example.net' WHERE id = 6;");
	if (mb_account_set_addresses(t->idx, me, MB_ARRAY_LEN(me), &err) == -1)
		fail_msg("%s", err.msg);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	mb_index_close(&f->ro);
	mb_test_index_close(&f->t);
	free(f);
	return 0;
}

/* The search of text on a read-only handle, as mcpd runs it: 0 or -1 with err. */
static int
run(struct fx *f, const char *text, int64_t offset, size_t limit, struct mb_search_page *pg,
    struct mb_err *err)
{
	struct mb_query q;
	int rc;

	if (f->ro == NULL && mb_index_open(f->t.path, MB_INDEX_RO, &f->ro, err) == -1)
		fail_msg("open ro: %s", err->msg);
	mb_query_init(&q);
	if (mb_query_compile(text, strlen(text), &q, err) == -1)
		fail_msg("'%s': %s", text, err->msg);
	rc = mb_search_run(f->ro, &q, offset, limit, pg, err);
	mb_query_release(&q);
	return rc;
}

static int
cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The ids text finds, sorted, as "1,3"; and its total matches their number, exactly. */
static char *
ids(struct fx *f, const char *text)
{
	struct mb_search_page pg;
	struct mb_err err = { 0 };
	struct mb_buf b = MB_BUF_INIT(4096);
	int64_t v[50];
	size_t n;

	if (run(f, text, 0, 50, &pg, &err) == -1)
		fail_msg("'%s': %s", text, err.msg);
	n = pg.n;
	for (size_t i = 0; i < n; i++)
		v[i] = pg.hits[i].id;
	if (pg.total != (int64_t)n || !pg.total_exact)
		fail_msg("'%s': %zu hits, total %lld%s", text, n, (long long)pg.total,
		    pg.total_exact ? "" : " (lower bound)");
	mb_search_page_release(&pg);
	qsort(v, n, sizeof(v[0]), cmp_id);
	for (size_t i = 0; i < n; i++)
		mb_buf_addf(&b, "%s%lld", i ? "," : "", (long long)v[i]);
	return b.data ? mb_buf_detach(&b, NULL) : mb_xstrdup("");
}

static void
expect(struct fx *f, const char *text, const char *want)
{
	char *got = ids(f, text);

	if (strcmp(got, want) != 0)
		fail_msg("'%s' found {%s}, want {%s}", text, got, want);
	free(got);
}

/*
 * Each filter alone (the newest-first list) and beside a word (the ranked
 * statement): the same messages either way.
 */
static void
every_filter_finds_its_messages(void **state)
{
	static const struct {
		const char *filter, *alone, *with_budget;
	} cases[] = {
		{ "larger:4K", "1,2,4", "1,2" },
		{ "smaller:3000", "3,6", "3" },
		{ "size:3000..5K", "1,5", "1,5" },
		{ "size:1M", "4", "" },
		{ "id:<one@example.org>", "1", "1" },
		{ "msgid:two@example.org", "2", "2" },
		{ "list:dev.example", "1", "1" },
		{ "list:example.org", "1,5", "1,5" },
		{ "label:project-x", "1", "1" },
		{ "tag:$LABEL1", "1", "1" },
		{ "keyword:done", "2", "2" },
		{ "-label:done", "1,3,4,5,6", "1,3,5" },
		{ "label:old", "", "" },	/* \Old is a system flag, not a label */
		{ "in:sent", "3,4", "3" },
		{ "in:trash", "5", "5" },
		{ "in:inbox", "1,2,6", "1,2" },
		{ "in:\"Deleted Items\"", "5", "5" },
		{ "is:draft", "4", "" },
		{ "is:replied", "3", "3" },
		{ "is:starred", "6", "" },
		{ "from:me", "3,4", "3" },
		{ "-from:me", "1,2,5,6", "1,2,5" },
		/* x.me@example.com holds the words of me@example.com, not the address */
		{ "to:me", "1,6", "1" },
		{ "-to:me", "2,3,4,5", "2,3,5" },
		{ "date:2024-03", "1,2,3,4,5", "1,2,3,5" },
		{ "date:2024-03-02..2024-03-03", "2,3", "2,3" },
		{ "date:..2023", "6", "" },
		{ "date:2024-03-04..", "4,5", "5" },
		{ "after:2024-03-02 before:2024-03-04", "2,3", "2,3" },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		char with[128];

		expect(*state, cases[i].filter, cases[i].alone);
		snprintf(with, sizeof(with), "budget %s", cases[i].filter);
		expect(*state, with, cases[i].with_budget);
	}
}

/* thread: takes the thread_id a hit gives. */
static void
thread_finds_the_thread_of_a_hit(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_err err = { 0 };
	char q[64];

	assert_int_equal(run(f, "id:one@example.org", 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	snprintf(q, sizeof(q), "thread:%lld", (long long)pg.hits[0].thread_id);
	mb_search_page_release(&pg);
	expect(f, q, "1,2");
	snprintf(q + strlen(q), sizeof(q) - strlen(q), " agreed");
	expect(f, q, "2");
}

static void
hits_show_labels_without_system_flags(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_err err = { 0 };

	assert_int_equal(run(f, "label:project-x", 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.hits[0].n_labels, 2);
	assert_string_equal(pg.hits[0].labels[0], "$Label1");
	assert_string_equal(pg.hits[0].labels[1], "Project-X");
	mb_search_page_release(&pg);
	assert_int_equal(run(f, "lunch", 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 2);
	assert_int_equal(pg.hits[0].n_labels, 0);
	assert_null(pg.hits[0].labels);
	mb_search_page_release(&pg);
}

static void
unknown_roles_and_unknown_own_addresses_are_not_found(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_err err = { 0 };

	assert_int_equal(run(f, "budget in:junk", 0, 10, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "no folder has the special-use role \\Junk"));
	mb_search_page_release(&pg);
	mb_err_clear(&err);
	if (mb_account_set_addresses(f->t.idx, NULL, 0, &err) == -1)
		fail_msg("%s", err.msg);
	assert_int_equal(run(f, "from:me", 0, 10, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "MY_ADDRESSES"));
	mb_search_page_release(&pg);
}

/*
 * n more messages in INBOX with the word "common" (UIDs from base + 1, every
 * other one read), dated from T0 back, in one statement.
 */
static void
bulk(struct fx *f, int base, int n)
{
	char text[1024];

	snprintf(text, sizeof(text),
	    "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) "
	    "INSERT INTO messages (folder_id, uidvalidity, uid, thread_id, subject, from_text, "
	    "body, date, size, flags, indexed_at) SELECT %lld, 1, %d + i, 1000000 + %d + i, "
	    "'common ' || i, 'x@example.org', 'common words here', %d - i, 100, "
	    "CASE WHEN i %% 2 THEN 1 ELSE 0 END, 0 FROM k", n, (long long)f->t.inbox, base, base,
	    T0);
	sql(f, "BEGIN");
	sql(f, text);
	sql(f, "COMMIT");
}

static void
expect_total(struct fx *f, const char *text, int64_t offset, int64_t total, bool exact)
{
	struct mb_search_page pg;
	struct mb_err err = { 0 };

	if (run(f, text, offset, 20, &pg, &err) == -1)
		fail_msg("'%s': %s", text, err.msg);
	if (pg.total != total || pg.total_exact != exact)
		fail_msg("'%s' at %lld: total %lld%s, want %lld%s", text, (long long)offset,
		    (long long)pg.total, pg.total_exact ? "" : " (at least)", (long long)total,
		    exact ? "" : " (at least)");
	mb_search_page_release(&pg);
}

/*
 * A ranked search counts every match as it ranks them: exact at any size.
 * A list of filters alone is counted, and past MB_SEARCH_COUNT_CAP its
 * total is the cap, flagged as a lower bound.  Rows of an older UIDVALIDITY
 * generation are not counted.
 */
static void
totals_are_exact_or_flagged_lower_bounds(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_err err = { 0 };

	/* from:me alone on a page of one: counted, its addresses as FTS5 phrases */
	if (run(f, "from:me", 0, 1, &pg, &err) == -1)
		fail_msg("from:me: %s", err.msg);
	assert_true(pg.more);
	assert_int_equal(pg.total, 2);
	assert_true(pg.total_exact);
	mb_search_page_release(&pg);
	bulk(f, 1000, 800);
	expect_total(f, "common", 0, 800, true);		/* every match ranked */
	expect_total(f, "common", 40, 800, true);
	expect_total(f, "common is:read", 0, 400, true);
	expect_total(f, "is:read", 0, 400 + 1, true);	/* filters alone: counted */
	expect_total(f, "is:read", 380, 401, true);	/* a next page: counted */
	expect_total(f, "is:read", 400, 401, true);	/* the last page: offset + n */
	expect_total(f, "budget", 0, 4, true);
	expect_total(f, "zzz", 0, 0, true);
	/* an older generation of INBOX is not current */
	sql(f, "UPDATE messages SET uidvalidity = 0 WHERE uid > 1000 AND uid <= 1100");
	expect_total(f, "common", 0, 700, true);
	expect_total(f, "is:unread in:inbox", 0, 350 + 3, true);	/* and 1, 2, 6 */
	bulk(f, 10000, MB_SEARCH_COUNT_CAP);
	expect_total(f, "common", 0, 700 + MB_SEARCH_COUNT_CAP, true);	/* ranked: exact */
	expect_total(f, "in:inbox", 0, MB_SEARCH_COUNT_CAP, false);
}

/*
 * Filters alone with text's: its pages of 7, newest first, are the current
 * messages where (SQL over m, the messages), and its first page's total
 * their number, counted.
 */
static void
expect_list(struct fx *f, const char *text, const char *where)
{
	char oracle[512];
	sqlite3_stmt *st;
	int64_t want[1000];
	size_t n = 0;

	snprintf(oracle, sizeof(oracle), "SELECT m.id FROM messages AS m JOIN folders AS f ON "
	    "f.id = m.folder_id WHERE m.uidvalidity = f.uidvalidity AND %s "
	    "ORDER BY m.sort_date DESC, m.id DESC", where);
	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->t.idx), oracle, -1, &st, NULL),
	    SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && n < MB_ARRAY_LEN(want))
		want[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	assert_true(n > 7);
	for (size_t offset = 0; offset < n; offset += 7) {
		struct mb_search_page pg;
		struct mb_err err = { 0 };

		if (run(f, text, (int64_t)offset, 7, &pg, &err) == -1)
			fail_msg("'%s': %s", text, err.msg);
		if (offset == 0 && (pg.total != (int64_t)n || !pg.total_exact))
			fail_msg("'%s': total %lld, want %zu", text, (long long)pg.total, n);
		for (size_t i = 0; i < pg.n; i++)
			if (offset + i >= n || pg.hits[i].id != want[offset + i])
				fail_msg("'%s': position %zu is id %lld, want %lld", text, offset + i,
				    (long long)pg.hits[i].id,
				    offset + i < n ? (long long)want[offset + i] : -1LL);
		assert_int_equal(pg.n, n - offset < 7 ? n - offset : 7);
		mb_search_page_release(&pg);
	}
}

/*
 * Each case (the query, and its filters in SQL) in folder: its pages of 7
 * and their totals are its messages' own (expect_list), in at most
 * list_most steps of SQLite's for the pages and total_most for the counts.
 */
static void
expect_folder_lists(struct fx *f, const char *const (*cases)[2], size_t n, int64_t folder,
    uint64_t list_most, uint64_t total_most)
{
	char where[512];

	for (size_t i = 0; i < n; i++) {
		uint64_t list = idx_list_steps, total = idx_total_steps;

		snprintf(where, sizeof(where), "m.folder_id = %lld AND %s", (long long)folder,
		    cases[i][1]);
		expect_list(f, cases[i][0], where);
		list = idx_list_steps - list;
		total = idx_total_steps - total;
		if (list > list_most || total > total_most)
			fail_msg("'%s': %llu steps for its pages, %llu for their counts",
			    cases[i][0], (unsigned long long)list, (unsigned long long)total);
	}
}

/*
 * A folder without words (in:NAME, a role) is listed from its own entries
 * of messages_folder_sort_date, newest first, and counted from them too:
 * "?2 IS NULL OR folder_id = ?2" hid the folder from the planner, which
 * walked every message newest first reading each row, and the count read
 * every entry of messages_search_filter (`in:Notes`, 40 messages of
 * 1,000,000: 520 ms).  Here 20 of 3,006 messages are in Notes, on 20
 * days: its pages and totals, with dates and flags too, are its messages'
 * own, in fewer steps of SQLite's than the index has messages.
 */
static void
a_small_folder_is_listed_from_its_own_entries(void **state)
{
	static const char *const cases[][2] = {	/* the query, and its filters in SQL */
		{ "in:Notes", "1" },
		{ "in:Notes after:2024-02-10", "m.sort_date >= 1707523200" },
		{ "in:Notes after:2024-02-06 before:2024-02-20",
		    "m.sort_date >= 1707177600 AND m.sort_date < 1708387200" },
		{ "in:Notes is:read", "(m.flags & 1) = 1" },
		{ "in:Notes -is:flagged before:2024-02-28", "(m.flags & 4) = 0 AND "
		    "m.sort_date < 1709078400" },
	};
	struct fx *f = *state;
	struct mb_err err = { 0 };
	int64_t notes = 0;
	char move[256];

	assert_int_equal(mb_index_folder_ensure(f->t.idx, "Notes", NULL, &notes, &err), 0);
	mb_test_folder_examined(f->t.idx, "Notes");
	bulk(f, 1000, 3000);
	/* 20 of them into Notes, each on a day of its own in February, every other read */
	snprintf(move, sizeof(move), "UPDATE messages SET folder_id = %lld, date = date - "
	    "(uid / 150 %% 30 + 1) * 86400, flags = uid / 150 %% 2 "
	    "WHERE uid > 1000 AND uid %% 150 = 7", (long long)notes);
	sql(f, move);
	/*
	 * Its pages of 7: ten steps a message of the index in all (a walk of
	 * every message takes 60,000); their counts three (a scan, 25,000).
	 */
	expect_folder_lists(f, cases, MB_ARRAY_LEN(cases), notes, 10 * 3006, 3 * 3006);
}

/*
 * thread:N without words is listed through messages_thread and counted
 * through it too: the count read every entry of messages_search_filter
 * until the cap had passed (`thread:1`, 4,302 messages of 1,000,000: 3.3
 * million steps, 30 ms of CPU, for its "1000+").  Here 30 of 3,006
 * messages are one thread, one in a hundred ids: its pages and totals,
 * with dates and flags too, are its messages' own, and the counts of its
 * five pages of 7 take fewer than 10,000 steps of SQLite's (through the
 * scan, 172,428).
 */
static void
a_thread_is_counted_from_its_own_entries(void **state)
{
	static const char *const cases[][2] = {	/* the query, and its filters in SQL */
		{ "thread:77", "m.thread_id = 77" },
		{ "thread:77 is:read", "m.thread_id = 77 AND (m.flags & 1) = 1" },
		{ "thread:77 before:2024-02-20", "m.thread_id = 77 AND m.sort_date < 1708387200" },
		{ "thread:77 in:INBOX", "m.thread_id = 77" },
	};
	struct fx *f = *state;

	bulk(f, 1000, 3000);	/* all in INBOX */
	sql(f, "UPDATE messages SET thread_id = 77, date = date - (uid / 100 % 30 + 1) * 86400 "
	    "WHERE uid > 1000 AND uid % 100 = 7");
	expect_folder_lists(f, cases, MB_ARRAY_LEN(cases), f->t.inbox, 10 * 3006, 10000 - 1);
}

/*
 * A small folder beside a filter few messages pass (has:attachment, a
 * label, a lower size bound, is:answered) or beside is:flagged was read
 * through the whole narrow index or the flagged ids, whatever the
 * folder's size: `in:Notes has:attachment`, 40 messages of 1,000,000, read
 * every entry of messages_search_filter (38 ms of CPU), `in:Notes
 * is:flagged` the 10,000 flagged ids (13 ms).  Here 40 of 3,006 messages
 * are in Notes, each filter on about half of them and, of the others,
 * flags and answers on one in eight: the pages and totals are the
 * folder's own, read from its own entries.
 */
static void
a_small_folder_with_a_rare_filter_is_listed_from_its_own_entries(void **state)
{
	static const char *const cases[][2] = {	/* the query, and its filters in SQL */
		{ "in:Notes has:attachment", "m.attachment_count > 0" },
		{ "in:Notes is:flagged", "(m.flags & 4) <> 0" },
		{ "in:Notes is:answered after:2024-02-10", "(m.flags & 2) <> 0 AND "
		    "m.sort_date >= 1707523200" },
		{ "in:Notes label:notes-x", "' ' || m.keywords || ' ' LIKE '% notes-x %'" },
		{ "in:Notes larger:20K", "m.size >= 20480" },
		{ "in:Notes has:attachment -is:flagged", "m.attachment_count > 0 AND "
		    "(m.flags & 4) = 0" },
	};
	struct fx *f = *state;
	struct mb_err err = { 0 };
	int64_t notes = 0;
	char move[512];

	assert_int_equal(mb_index_folder_ensure(f->t.idx, "Notes", NULL, &notes, &err), 0);
	mb_test_folder_examined(f->t.idx, "Notes");
	bulk(f, 1000, 3000);
	sql(f, "UPDATE messages SET flags = flags | CASE uid % 8 WHEN 3 THEN 4 WHEN 5 THEN 2 "
	    "ELSE 0 END WHERE uid > 1000");
	/* 40 of them into Notes (k = uid / 75), each on a day of its own, the filters on halves */
	snprintf(move, sizeof(move), "UPDATE messages SET folder_id = %lld, date = date - "
	    "(uid / 75 %% 30 + 1) * 86400, attachment_count = uid / 75 %% 2, "
	    "flags = 1 | (uid / 150 %% 2) * 4 | (uid / 75 %% 3 > 0) * 2, "
	    "keywords = CASE WHEN uid / 75 %% 4 < 2 THEN 'Notes-X' END, "
	    "size = CASE WHEN uid / 75 %% 2 = 0 THEN 100 ELSE 30000 END "
	    "WHERE uid > 1000 AND uid %% 75 = 7", (long long)notes);
	sql(f, move);
	/*
	 * Its pages of 7 and their counts: a hundred steps a message of the
	 * folder each (the narrow index whole took 40,000, the flagged ids 12,000)
	 */
	expect_folder_lists(f, cases, MB_ARRAY_LEN(cases), notes, 100 * 40, 100 * 40);
}

/*
 * is:flagged, is:unread, label:X, has:attachment, larger:, list:,
 * is:answered and is:draft without words read the flagged, unread,
 * labelled, attached, large, listed, answered or draft ids from their
 * indexes (migrations 0019, 0020, 0024, 0025, 0026 and 0027): the list and
 * its count are the messages' own, and the same from an index without them.
 */
static void
flag_and_label_lists_are_their_messages(void **state)
{
	static const char *const cases[][2] = {	/* the query, and its filters in SQL */
		{ "is:flagged", "(m.flags & 4) <> 0" },
		{ "is:starred in:inbox after:2024-02-01", "(m.flags & 4) <> 0 AND m.folder_id = "
		    "(SELECT id FROM folders WHERE name = 'INBOX') AND m.sort_date >= 1706745600" },
		{ "is:unread", "(m.flags & 1) = 0" },
		{ "is:unread -is:flagged smaller:1000", "(m.flags & 5) = 0 AND m.size < 1000" },
		{ "is:unread in:inbox", "(m.flags & 1) = 0 AND m.folder_id = "
		    "(SELECT id FROM folders WHERE name = 'INBOX')" },
		{ "label:project-x", "' ' || m.keywords || ' ' LIKE '% project-x %'" },
		{ "label:project-x -is:flagged in:inbox", "' ' || m.keywords || ' ' LIKE "
		    "'% project-x %' AND (m.flags & 4) = 0 AND m.folder_id = "
		    "(SELECT id FROM folders WHERE name = 'INBOX')" },
		{ "has:attachment", "m.attachment_count > 0" },
		{ "has:attachment larger:500 in:inbox", "m.attachment_count > 0 AND "
		    "m.size >= 500 AND m.folder_id = (SELECT id FROM folders WHERE name = 'INBOX')" },
		{ "larger:500", "m.size >= 500" },
		{ "larger:500 -has:attachment", "m.size >= 500 AND m.attachment_count = 0" },
		{ "list:rare", "instr(lower(m.list_id), 'rare') > 0" },
		{ "list:rare.lists -has:attachment in:inbox", "instr(lower(m.list_id), "
		    "'rare.lists') > 0 AND m.attachment_count = 0 AND m.folder_id = "
		    "(SELECT id FROM folders WHERE name = 'INBOX')" },
		{ "is:answered", "(m.flags & 2) <> 0" },
		{ "is:replied -is:flagged", "(m.flags & 6) = 2" },
		{ "is:draft", "(m.flags & 16) <> 0" },
		{ "is:draft -is:flagged in:inbox", "(m.flags & 20) = 16 AND m.folder_id = "
		    "(SELECT id FROM folders WHERE name = 'INBOX')" },
	};
	struct fx *f = *state;

	bulk(f, 1000, 800);
	/*
	 * few flagged, unread, answered, drafts and labelled: the lists and
	 * counts read their indexes
	 */
	sql(f, "UPDATE messages SET flags = CASE WHEN uid % 40 = 9 THEN 0 ELSE 1 END | "
	    "CASE WHEN uid % 50 = 7 THEN 4 ELSE 0 END | CASE WHEN uid % 65 = 9 OR uid % 45 = 5 "
	    "THEN 2 ELSE 0 END | CASE WHEN uid % 75 = 10 OR uid % 50 = 7 THEN 16 ELSE 0 END, "
	    "keywords = CASE WHEN uid % 45 = 4 THEN "
	    "'Project-X' WHEN uid % 45 = 5 THEN 'other' END, attachment_count = "
	    "CASE WHEN uid % 35 = 6 THEN 2 ELSE 0 END, size = CASE WHEN uid % 70 = 6 OR "
	    "uid % 60 = 7 THEN 1000 ELSE 100 END, list_id = CASE WHEN uid % 55 = 8 THEN "
	    "'Rare.Lists.example.org' WHEN uid % 55 = 9 THEN 'rare-two.example.net' WHEN "
	    "uid % 3 = 0 THEN 'common.example.org' END WHERE uid > 1000");
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
			uint64_t reads = idx_few_reads;

			expect_list(f, cases[i][0], cases[i][1]);
			/* its page or its count through an index of few, while there is one */
			if ((idx_few_reads > reads) != (pass == 0))
				fail_msg("'%s': %llu reads through the indexes of few", cases[i][0],
				    (unsigned long long)(idx_few_reads - reads));
		}
		if (pass == 0) {	/* again on an index from before the migrations */
			sql(f, "DROP INDEX messages_flagged; DROP INDEX messages_unread; "
			    "DROP INDEX messages_labelled; DROP INDEX messages_attached; "
			    "DROP INDEX messages_size; DROP INDEX messages_list; "
			    "DROP INDEX messages_answered; DROP INDEX messages_draft");
			mb_index_close(&f->ro);
		}
	}
}

/*
 * A filter that few messages may pass (a label, has:attachment, from:me, a
 * List-Id, a lower size bound) was listed by reading the whole of
 * messages_search_filter: where it is on a quarter of the mail, as labels,
 * attachments and mailing lists are in real mail, a page is found among
 * the newest hundred messages instead (has:attachment at 1,000,000
 * messages: 109 ms).  A sample of the messages now chooses: a label on a
 * quarter is walked newest first, one on one message in 200 (and a page
 * too deep for the walk) reads the narrow index whole.  Pages and totals
 * are the messages' own either way.
 */
/* Whether text's page of 7 at offset was read by the whole narrow index. */
static bool
first_page_whole(struct fx *f, const char *text, int64_t offset)
{
	struct mb_search_page pg;
	struct mb_err err = { 0 };
	uint64_t scans = idx_list_scans;

	if (run(f, text, offset, 7, &pg, &err) == -1)
		fail_msg("'%s' at %lld: %s", text, (long long)offset, err.msg);
	assert_int_equal(pg.n, 7);
	mb_search_page_release(&pg);
	return idx_list_scans > scans;
}

/*
 * text's first page of 7 not read by the whole narrow index, with want
 * statements through an index of few (index names it) for that page and
 * its total, and every page and total its messages' own (expect_list).
 */
static void
expect_few_reads(struct fx *f, const char *text, const char *where, uint64_t want,
    const char *index)
{
	uint64_t reads = idx_few_reads;

	if (first_page_whole(f, text, 0) || idx_few_reads - reads != want)
		fail_msg("'%s': its first page read by the whole narrow index, or %llu reads "
		    "through %s (want %llu)", text, (unsigned long long)(idx_few_reads - reads),
		    index, (unsigned long long)want);
	expect_list(f, text, where);	/* every page */
}

static void
a_label_on_much_mail_is_listed_newest_first(void **state)
{
	static const struct {
		const char	*text, *where;
		bool		 whole;	/* read by the whole narrow index */
	} cases[] = {
		{ "label:work", "' ' || m.keywords || ' ' LIKE '% work %'", false },
		{ "label:work is:read", "' ' || m.keywords || ' ' LIKE '% work %' AND "
		    "(m.flags & 1) = 1", false },
		{ "label:rare", "' ' || m.keywords || ' ' LIKE '% rare %'", true },
	};
	struct fx *f = *state;

	bulk(f, 1000, 1600);
	sql(f, "UPDATE messages SET keywords = CASE WHEN uid % 4 = 1 THEN 'Work' "
	    "WHEN uid % 200 = 3 THEN 'Rare' END WHERE uid > 1000");
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		expect_list(f, cases[i].text, cases[i].where);	/* every page */
		if (first_page_whole(f, cases[i].text, 0) != cases[i].whole)
			fail_msg("'%s': its first page read %s", cases[i].text, cases[i].whole ?
			    "newest first" : "by the whole narrow index");
	}
	/* a page past what the walk would find in the sample's reckoning: the index whole */
	assert_true(first_page_whole(f, "label:work", 390));
}

/*
 * A page of filters alone through an index of few seeks each of its ids and
 * sorts them all: for a mailing list of a twelfth of the mail that read
 * 81,000 ids at 1,000,000 messages (`list:spamassassin`, 89 ms of CPU)
 * where the walk newest first finds the page in some 300 rows (23 ms).
 * The sample now weighs the two: a list on one message in 10 is walked
 * newest first, through neither the lists' index nor the whole narrow
 * index; one on one message in 90 is read through the lists' index.
 * Pages and totals are the messages' own either way; the total is counted
 * through the lists' index for both (a count reads at most 1,000 ids).
 */
static void
a_list_of_much_mail_is_listed_newest_first(void **state)
{
	static const struct {
		const char	*text, *where;
		bool		 few;	/* read through an index of few */
	} cases[] = {
		{ "list:big", "instr(lower(m.list_id), 'big') > 0", false },
		{ "list:small", "instr(lower(m.list_id), 'small') > 0", true },
	};
	struct fx *f = *state;

	bulk(f, 1000, 6000);
	sql(f, "UPDATE messages SET list_id = CASE WHEN uid % 10 = 1 THEN 'Big.List.example' "
	    "WHEN uid % 90 = 7 THEN 'small.example' END WHERE uid > 1000");
	/* the total is counted through the lists' index either way */
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++)
		expect_few_reads(f, cases[i].text, cases[i].where, cases[i].few ? 2 : 1,
		    "the lists' index");
}

/*
 * smaller:N where few messages are that small: its page and total read the
 * ids below the bound in messages_size (migrations/0025), as larger:N's
 * read those above it, each looked up for the other filters; until
 * 2026-12-06 it had no index of its own, and `is:unread -is:flagged
 * smaller:1000` at 1,000,000 messages walked 1,600,000 steps for its page.
 * Here one message in 25 of 3,000 is small, half of those unread: both the
 * page and the total go through that index, and every page and total is
 * the messages' own.
 */
static void
a_size_below_a_bound_few_messages_have_reads_the_sizes(void **state)
{
	static const char *const cases[][2] = {	/* the query, and its filters in SQL */
		{ "smaller:1000", "m.size < 1000" },
		{ "smaller:1000 is:unread", "m.size < 1000 AND (m.flags & 1) = 0" },
		{ "size:..500", "m.size <= 500" },
	};
	struct fx *f = *state;

	bulk(f, 1000, 3000);
	sql(f, "UPDATE messages SET size = CASE WHEN uid % 25 = 3 THEN 100 ELSE 5000 END "
	    "WHERE uid > 1000");
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++)	/* the page's read and the total's */
		expect_few_reads(f, cases[i][0], cases[i][1], 2, "the sizes' index");
}

/*
 * Two filters, each on much mail, that few messages pass together: a list
 * on one message in 9 and, of its messages, one in about 8 unread.  The 64
 * samples over every id found at most one that passed, which the sample
 * took for "few", and the page was read through the lists' index, each of
 * its ids sought (`list:spamassassin is:unread` at 1,000,000 messages:
 * 81,000 ids, 65 ms of CPU, where the walk newest first finds the page in
 * about 1,000 rows).  When the sample is that thin and the other read that
 * dear, more samples are taken: here the walk.  Pages and totals are the
 * messages' own either way; the total is counted through the lists' index.
 */
static void
a_thin_sample_beside_a_dear_index_samples_again(void **state)
{
	static const char where[] = "instr(lower(m.list_id), 'big') > 0 AND (m.flags & 1) = 0";
	struct fx *f = *state;

	bulk(f, 1000, 40000);
	sql(f, "UPDATE messages SET list_id = CASE WHEN uid % 9 = 1 THEN 'Big.List.example' END, "
	    "flags = CASE WHEN uid % 9 = 1 AND (uid * 7919) % 61 < 8 THEN 0 "
	    "WHEN uid % 9 <> 1 AND uid % 4 = 0 THEN 0 ELSE 1 END WHERE uid > 1000");
	/* walked: only the total through the lists' index */
	expect_few_reads(f, "list:big is:unread", where, 1, "the lists' index");
}

/*
 * The sample is over the ids, the walk in date order: where the messages
 * that pass are all old, it read every newer message first
 * (`list:spamassassin larger:10000` at 1,000,000 messages: 415,000 rows,
 * 400 ms of CPU, where the lists' index served in 130).  Here the list
 * above, with two in three of its messages unread, but only in the oldest
 * quarter of the messages: the sample still chooses the walk, which now
 * gives up past what the lists' index would cost, and the page is read
 * through that index, in fewer than half the steps of SQLite's that
 * walking the 30,000 newer messages takes (13 or more each).  Pages and
 * totals are the messages' own.
 */
static void
a_walk_past_what_the_other_read_costs_gives_up(void **state)
{
	static const char where[] = "instr(lower(m.list_id), 'big') > 0 AND (m.flags & 1) = 0";
	struct fx *f = *state;
	uint64_t reads, steps, given_up;

	bulk(f, 1000, 40000);	/* the higher the uid, the older */
	sql(f, "UPDATE messages SET list_id = CASE WHEN uid % 9 = 1 THEN 'Big.List.example' END, "
	    "flags = CASE WHEN uid % 9 = 1 AND uid > 31000 AND (uid * 7919) % 61 < 40 THEN 0 "
	    "WHEN uid % 9 <> 1 AND uid % 4 = 0 THEN 0 ELSE 1 END WHERE uid > 1000");
	reads = idx_few_reads;
	steps = idx_list_steps;
	given_up = idx_list_walks_given_up;
	if (first_page_whole(f, "list:big is:unread", 0))
		fail_msg("'list:big is:unread': its first page read by the whole narrow index");
	if (idx_list_walks_given_up - given_up != 1 || idx_few_reads - reads != 2 ||
	    idx_list_steps - steps >= 30000 * 13 / 2)
		fail_msg("'list:big is:unread': %llu walks given up, %llu reads of the lists' "
		    "index, %llu steps", (unsigned long long)(idx_list_walks_given_up - given_up),
		    (unsigned long long)(idx_few_reads - reads),
		    (unsigned long long)(idx_list_steps - steps));
	expect_list(f, "list:big is:unread", where);	/* every page */
}

/*
 * Two filters that each have an index of few and each hold much of the
 * mail, few messages passing both: a list on one message in 9, large
 * messages on one in 8 of the others and one in 101 of the list's.  The
 * page was read through the narrower index, each of its ids sought in
 * messages_search_filter, and the total counted so again
 * (`list:spamassassin larger:10000` at 1,000,000 messages: 80,208 and
 * 85,007 ids, 1,500 on both, 112-160 ms of CPU).  Now the wider's ids are
 * read into a bitmap and only the ids both hold are sought: the first
 * page and its total in under a third of SQLite's steps, the total
 * counted by that read.  Every page and total is the messages' own, with
 * a third filter too, tested by the seek.
 */
static void
two_filters_on_much_mail_are_read_where_their_indexes_meet(void **state)
{
	static const char where[] = "instr(lower(m.list_id), 'big') > 0 AND m.size >= 10000";
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_err err = { 0 };
	uint64_t steps;

	bulk(f, 1000, 40000);
	sql(f, "UPDATE messages SET list_id = CASE WHEN uid % 9 = 1 THEN 'Big.List.example' END, "
	    "size = CASE WHEN uid % 9 = 1 AND uid % 101 = 5 THEN 20000 "
	    "WHEN uid % 9 <> 1 AND uid % 8 = 3 THEN 20000 ELSE 500 END WHERE uid > 1000");
	steps = idx_list_steps + idx_total_steps;
	if (run(f, "list:big larger:10000", 0, 7, &pg, &err) == -1)
		fail_msg("'list:big larger:10000': %s", err.msg);
	assert_true(pg.more && pg.total_exact);
	mb_search_page_release(&pg);
	/*
	 * the two indexes' 8,400 ids at a few steps each, 44 sought; before,
	 * each of the narrower's 3,900 ids was sought for the page and again
	 * for the total: 209,000 steps
	 */
	if (idx_list_steps + idx_total_steps - steps > 60000)
		fail_msg("'list:big larger:10000': %llu steps for its first page and total",
		    (unsigned long long)(idx_list_steps + idx_total_steps - steps));
	expect_list(f, "list:big larger:10000", where);	/* every page */
	expect_list(f, "list:big larger:10000 is:unread", "instr(lower(m.list_id), 'big') > 0 "
	    "AND m.size >= 10000 AND (m.flags & 1) = 0");
}

/*
 * Whether a filter few messages pass is walked newest first or read
 * through the whole narrow index was chosen by a sample over every id,
 * also beside a folder, whose walk reads the folder's entries alone: a
 * folder of 30% of 1,000,000 messages held 19 of the 64 samples, and
 * `in:Lists has:attachment` (a fifth of the folder's mail) read the
 * narrow index whole when none of them had one (78 ms of CPU).  The
 * sample is now of the folder's own messages.  Here 2,000 of 20,006
 * messages are in Big, in one run of ids, and one in 25 of them is
 * answered (no other message is), and is:answered's own index
 * (migrations/0027) is dropped, so that it is a filter few messages pass
 * with no index, as from:me is: the 7 samples over every id that fall in
 * Big all miss, 3 of 64 over Big's own messages pass.
 * Without messages_folder_ids (migrations/0021) the sample is over every id.
 */
static void
a_big_folder_is_sampled_over_its_own_messages(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	int64_t big = 0;
	char text[256], where[128];

	assert_int_equal(mb_index_folder_ensure(f->t.idx, "Big", NULL, &big, &err), 0);
	mb_test_folder_examined(f->t.idx, "Big");
	bulk(f, 1000, 20000);
	snprintf(text, sizeof(text), "UPDATE messages SET folder_id = %lld, flags = flags | "
	    "(uid %% 25 = 0) * 2 WHERE uid > 9000 AND uid <= 11000", (long long)big);
	sql(f, text);
	sql(f, "DROP INDEX messages_answered");
	if (first_page_whole(f, "in:Big is:answered", 0))
		fail_msg("'in:Big is:answered' read the narrow index whole");
	snprintf(where, sizeof(where), "m.folder_id = %lld AND (m.flags & 2) <> 0",
	    (long long)big);
	expect_list(f, "in:Big is:answered", where);
	/* an index from before migrations/0021 samples every id, as before */
	sql(f, "DROP INDEX messages_folder_ids");
	mb_index_close(&f->ro);
	if (!first_page_whole(f, "in:Big is:answered", 0))
		fail_msg("'in:Big is:answered' walked without messages_folder_ids");
	expect_list(f, "in:Big is:answered", where);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_filter_finds_its_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(thread_finds_the_thread_of_a_hit, setup, teardown),
		cmocka_unit_test_setup_teardown(hits_show_labels_without_system_flags, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(unknown_roles_and_unknown_own_addresses_are_not_found,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(totals_are_exact_or_flagged_lower_bounds, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(flag_and_label_lists_are_their_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(a_thread_is_counted_from_its_own_entries, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_small_folder_is_listed_from_its_own_entries, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    a_small_folder_with_a_rare_filter_is_listed_from_its_own_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(a_label_on_much_mail_is_listed_newest_first, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_list_of_much_mail_is_listed_newest_first, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_big_folder_is_sampled_over_its_own_messages, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_size_below_a_bound_few_messages_have_reads_the_sizes,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    two_filters_on_much_mail_are_read_where_their_indexes_meet, setup, teardown),
		cmocka_unit_test_setup_teardown(a_thin_sample_beside_a_dear_index_samples_again,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(a_walk_past_what_the_other_read_costs_gives_up,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
