/*
 * The overviews (mailbox/overview.h) without HTTP: count_messages' seven
 * groupings, their totals, a query as filter (the search's own compiler),
 * paging and errors; find_contacts' counts, names, dates, ranking and
 * fragment; awaiting_reply's two directions and what keeps a thread out.
 * Each test builds a small index with mb_index_upsert and reads it
 * read-only, as mcpd does; a row of an old UIDVALIDITY is never counted.
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
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/msg.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/search-private.h"

#define DAY	86400
#define Y2023	1672531200	/* 2023-01-01T00:00:00Z */
#define Y2024	1704067200	/* 2024-01-01T00:00:00Z */

struct fx {
	char		 dir[64];
	char		 path[96];
	struct mb_index	*rw;
	struct mb_index	*ro;
	int64_t		 inbox, sent, drafts;
};

/* A folder of UIDVALIDITY 1 (the rows' generation), so its rows are current. */
static int64_t
folder(struct mb_index *idx, const char *name, const char *role)
{
	struct mb_folder_state fs;
	struct mb_err err = { 0 };
	int64_t id;

	if (mb_index_folder_ensure(idx, name, role, &id, &err) == -1 ||
	    mb_index_folder_get(idx, name, &fs, &err) == -1)
		fail_msg("folder: %s", err.msg);
	fs.uidvalidity = 1;
	if (mb_index_folder_update(idx, &fs, &err) == -1)
		fail_msg("folder: %s", err.msg);
	mb_folder_state_release(&fs);
	return id;
}

static int
setup(void **state)
{
	struct fx *f = mb_xcalloc(1, sizeof(*f));
	struct mb_err err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_index_overview.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/index.db", f->dir);
	if (mb_index_open(f->path, MB_INDEX_RW, &f->rw, &err) == -1)
		fail_msg("index: %s", err.msg);
	f->inbox = folder(f->rw, "INBOX", NULL);
	f->sent = folder(f->rw, "Sent", "\\Sent");
	f->drafts = folder(f->rw, "Drafts", "\\Drafts");
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	mb_index_close(&f->ro);
	mb_index_close(&f->rw);
	mb_test_rmtree(f->dir);
	free(f);
	return 0;
}

static struct mb_index *
reader(struct fx *f)
{
	struct mb_err err = { 0 };

	if (f->ro == NULL && mb_index_open(f->path, MB_INDEX_RO, &f->ro, &err) == -1)
		fail_msg("open read-only: %s", err.msg);
	return f->ro;
}

/* One message for put(). */
struct pm {
	int64_t		 folder;
	uint32_t	 uid;
	uint32_t	 uidvalidity;	/* 0: 1 */
	const char	*from, *from_name;
	const char	*to, *to_name, *cc;	/* one address each, or NULL */
	const char	*subject;
	int64_t		 date;		/* 0: none */
	unsigned	 flags;
	const char	*keywords;
	const char	*message_id, *in_reply_to;
};

static void
put(struct mb_index *idx, const struct pm *p)
{
	mb_test_put(idx, p->folder, p->uid, &(struct mb_test_msg){
	    .subject = p->subject ? p->subject : "hello", .from = p->from,
	    .from_name = p->from_name, .to = p->to, .to_name = p->to_name, .cc = p->cc,
	    .uidvalidity = p->uidvalidity, .body = "some body text", .date = p->date,
	    .flags = p->flags, .keywords = p->keywords, .message_id = p->message_id,
	    .in_reply_to = p->in_reply_to });
}

static void
own(struct fx *f, const char *addr)
{
	struct mb_account_address a = { addr, "MY_ADDRESSES" };
	struct mb_err err = { 0 };

	if (mb_account_set_addresses(f->rw, &a, 1, &err) == -1)
		fail_msg("own: %s", err.msg);
}

/* A small mailbox: three senders over two years, labels, one stale row. */
static void
mailbox(struct fx *f)
{
	put(f->rw, &(struct pm){ f->inbox, 1, .from = "Anna@Acme.example", .from_name = "Anna B",
	    .to = "me@example.org", .subject = "invoice one", .date = Y2023 + 10 * DAY,
	    .keywords = "project-x $Important" });
	put(f->rw, &(struct pm){ f->inbox, 2, .from = "anna@acme.example", .from_name = "Anna",
	    .to = "me@example.org", .subject = "invoice two", .date = Y2024 + 40 * DAY,
	    .flags = MB_FLAG_SEEN, .keywords = "project-x" });
	put(f->rw, &(struct pm){ f->inbox, 3, .from = "bob@other.example", .to = "me@example.org",
	    .subject = "lunch", .date = Y2024 + 41 * DAY });
	put(f->rw, &(struct pm){ f->sent, 1, .from = "me@example.org", .to = "anna@acme.example",
	    .to_name = "Anna Bell", .cc = "carol@acme.example", .subject = "re: invoice",
	    .date = Y2024 + 42 * DAY, .flags = MB_FLAG_SEEN });
	put(f->rw, &(struct pm){ f->inbox, 4, .from = "nodate@acme.example", .subject = "undated" });
	/* an older generation of INBOX: never counted */
	put(f->rw, &(struct pm){ f->inbox, 9, .uidvalidity = 7, .from = "ghost@old.example",
	    .subject = "invoice ghost", .date = Y2024, .keywords = "project-x" });
}

static void
count(struct fx *f, const char *query, enum mb_count_group g, int64_t offset, size_t limit,
    struct mb_count_page *pg)
{
	struct mb_query q;
	struct mb_err err = { 0 };

	mb_query_init(&q);
	if (query && mb_query_compile(query, strlen(query), &q, &err) == -1)
		fail_msg("compile %s: %s", query, err.msg);
	if (mb_overview_count(reader(f), &q, g, offset, limit, pg, &err) == -1)
		fail_msg("count: %s", err.msg);
	mb_query_release(&q);
}

static void
assert_row(const struct mb_count_page *pg, size_t i, const char *key, int64_t n)
{
	assert_true(i < pg->n);
	assert_string_equal(pg->rows[i].key, key);
	assert_int_equal(pg->rows[i].count, n);
}

static void
test_count_groupings(void **state)
{
	struct fx *f = *state;
	struct mb_count_page pg;

	mailbox(f);
	count(f, NULL, MB_COUNT_FOLDER, 0, 10, &pg);
	assert_int_equal(pg.total, 5);
	assert_int_equal(pg.groups, 2);
	assert_row(&pg, 0, "INBOX", 4);
	assert_row(&pg, 1, "Sent", 1);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_YEAR, 0, 10, &pg);	/* newest first; the undated apart */
	assert_int_equal(pg.total, 5);
	assert_int_equal(pg.ungrouped, 1);
	assert_row(&pg, 0, "2024", 3);
	assert_row(&pg, 1, "2023", 1);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_MONTH, 0, 10, &pg);
	assert_row(&pg, 0, "2024-02", 3);
	assert_row(&pg, 1, "2023-01", 1);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_DAY, 0, 10, &pg);
	assert_int_equal(pg.groups, 4);
	assert_row(&pg, 0, "2024-02-12", 1);
	assert_row(&pg, 3, "2023-01-11", 1);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_SENDER, 0, 10, &pg);	/* case folded: one Anna */
	assert_row(&pg, 0, "anna@acme.example", 2);
	assert_int_equal(pg.groups, 4);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_SENDER_DOMAIN, 0, 10, &pg);
	assert_row(&pg, 0, "acme.example", 3);
	assert_row(&pg, 1, "example.org", 1);
	assert_row(&pg, 2, "other.example", 1);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_LABEL, 0, 10, &pg);	/* the stale row's label is not counted */
	assert_int_equal(pg.total, 5);
	assert_int_equal(pg.ungrouped, 3);
	assert_row(&pg, 0, "project-x", 2);
	assert_row(&pg, 1, "$Important", 1);
	mb_count_page_release(&pg);
}

static void
test_count_query_and_pages(void **state)
{
	struct fx *f = *state;
	struct mb_count_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };
	enum mb_count_group g;

	mailbox(f);
	count(f, "invoice", MB_COUNT_YEAR, 0, 10, &pg);	/* "re: invoice" too; not the ghost */
	assert_int_equal(pg.total, 3);
	assert_row(&pg, 0, "2024", 2);
	assert_row(&pg, 1, "2023", 1);
	mb_count_page_release(&pg);

	count(f, "invoice is:unread after:2023-06-01", MB_COUNT_SENDER, 0, 10, &pg);
	assert_int_equal(pg.total, 0);
	assert_int_equal(pg.n, 0);
	mb_count_page_release(&pg);

	count(f, "folder:Sent", MB_COUNT_FOLDER, 0, 10, &pg);
	assert_int_equal(pg.total, 1);
	assert_row(&pg, 0, "Sent", 1);
	mb_count_page_release(&pg);

	count(f, NULL, MB_COUNT_SENDER, 0, 2, &pg);	/* a page of two, then the rest */
	assert_int_equal(pg.n, 2);
	assert_true(pg.more);
	assert_int_equal(pg.next_offset, 2);
	mb_count_page_release(&pg);
	count(f, NULL, MB_COUNT_SENDER, 2, 2, &pg);
	assert_int_equal(pg.n, 2);
	assert_false(pg.more);
	mb_count_page_release(&pg);

	mb_query_init(&q);
	assert_int_equal(mb_query_compile("folder:Nope", 11, &q, &err), 0);
	assert_int_equal(mb_overview_count(reader(f), &q, MB_COUNT_YEAR, 0, 10, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	mb_count_page_release(&pg);
	mb_err_clear(&err);
	assert_int_equal(mb_overview_count(reader(f), &q, MB_COUNT_YEAR, 0, 0, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	mb_query_release(&q);
	mb_err_clear(&err);
	assert_int_equal(mb_count_group_parse("weekday", &g, &err), -1);
	assert_non_null(strstr(err.msg, "sender_domain"));
	assert_int_equal(mb_count_group_parse("sender_domain", &g, &err), 0);
	assert_int_equal(g, MB_COUNT_SENDER_DOMAIN);
}

/* The count statement mb_overview_count ran last, caught by a trace. */
static char traced[16384];

static int
trace_count(unsigned type, void *ctx, void *p, void *x)
{
	const char *sql = sqlite3_sql(p);

	(void)type, (void)ctx, (void)x;
	if (sql != NULL && strstr(sql, "JOIN folders AS f ON f.id = m.folder_id") != NULL)
		snprintf(traced, sizeof(traced), "%s", sql);
	return 0;
}

/*
 * How SQLite reads the count statement of query: every step of
 * EXPLAIN QUERY PLAN, one a line, into plan.
 */
static void
count_plan(struct fx *f, const char *query, enum mb_count_group g, char *plan, size_t size)
{
	sqlite3 *db = mb_index_db(reader(f));
	struct mb_count_page pg;
	sqlite3_stmt *st;
	char *sql;
	size_t len = 0;

	traced[0] = '\0';
	sqlite3_trace_v2(db, SQLITE_TRACE_STMT, trace_count, NULL);
	count(f, query, g, 0, 10, &pg);
	sqlite3_trace_v2(db, 0, NULL, NULL);
	mb_count_page_release(&pg);
	assert_true(traced[0] != '\0');
	sql = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", traced);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("explain: %s", sqlite3_errmsg(db));
	plan[0] = '\0';
	while (sqlite3_step(st) == SQLITE_ROW)
		len += (size_t)snprintf(plan + len, len < size ? size - len : 0, "%s\n",
		    (const char *)sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
	sqlite3_free(sql);
}

/*
 * A count with a filter reads messages_search_filter alone, never the table's rows
 * (which hold the bodies): naming the generated sort_date or a column the
 * index lacks would make SQLite read every row (docs/benchmarks.md, "Counts
 * with a filter through a covering index").  The date is still sort_date's:
 * a Date two days after INTERNALDATE is counted on INTERNALDATE's day.
 */
static void
test_count_covering(void **state)
{
	static const struct {
		const char		*query;
		enum mb_count_group	 g;
	} cases[] = {
		{ "after:2023-06-01", MB_COUNT_SENDER },
		/* is:unread alone reads the unread summaries: test_index_summaries.c */
		{ "is:unread larger:1", MB_COUNT_SENDER },
		{ "is:unread larger:1 before:2030-01-01", MB_COUNT_DAY },
		{ "invoice", MB_COUNT_MONTH },
		{ "has:attachment", MB_COUNT_FOLDER },
		{ "label:project-x larger:1", MB_COUNT_LABEL },
	};
	struct fx *f = *state;
	struct mb_count_page pg;
	char plan[4096];

	mailbox(f);
	mb_test_put(f->rw, f->inbox, 5, &(struct mb_test_msg){ .subject = "forged",
	    .from = "late@acme.example", .body = "x", .date = Y2024 + 50 * DAY,
	    .internaldate = Y2024 + 45 * DAY });
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		count_plan(f, cases[i].query, cases[i].g, plan, sizeof(plan));
		if (strstr(plan, "USING COVERING INDEX messages_search_filter") == NULL ||
		    strstr(plan, "SCAN m\n") != NULL)
			fail_msg("%s: not the covering index:\n%s", cases[i].query, plan);
	}
	count(f, "is:unread after:2024-02-10", MB_COUNT_DAY, 0, 10, &pg);
	assert_int_equal(pg.total, 2);
	assert_row(&pg, 0, "2024-02-15", 1);
	assert_row(&pg, 1, "2024-02-11", 1);
	mb_count_page_release(&pg);
}

/*
 * A count of words reads FTS5's matches in order and looks each up once in
 * messages_search_filter: no list of the matches is built first (an IN
 * over a subquery did, a b-tree of 158,306 ids for `linux` at 1,000,000
 * messages), and a date's key is made once a day, not once a message
 * (the matches come in id order, their days mixed).  1,200 messages on 30
 * days, every day's messages spread over the ids, two folders.
 */
static void
test_count_words_once_a_match(void **state)
{
	static const struct {
		const char		*query;
		enum mb_count_group	 g;
		const char		*first;		/* the first group, with its count */
		int64_t			 n_first, groups;
		int64_t			 total, n_rest;	/* every group after the first: n_rest */
		uint64_t		 days;		/* the days counted: at most a key each */
	} cases[] = {
		{ "body", MB_COUNT_DAY, "2024-01-30", 40, 30, 1200, 40, 30 },
		{ "body", MB_COUNT_MONTH, "2024-01", 1200, 1, 1200, 0, 30 },
		{ "body", MB_COUNT_YEAR, "2024", 1200, 1, 1200, 0, 30 },
		{ "body", MB_COUNT_FOLDER, "INBOX", 960, 2, 1200, 240, 0 },
		{ "body", MB_COUNT_SENDER_DOMAIN, "d0.example", 400, 3, 1200, 400, 0 },
		{ "body after:2024-01-21", MB_COUNT_MONTH, "2024-01", 400, 1, 400, 0, 10 },
		{ "body in:Sent", MB_COUNT_DAY, "2024-01-26", 40, 6, 240, 40, 6 },
	};
	struct fx *f = *state;
	struct mb_count_page pg;
	char from[64], plan[4096];

	for (uint32_t i = 0; i < 1200; i++) {
		snprintf(from, sizeof(from), "s%u@d%u.example", i % 7, i % 3);
		put(f->rw, &(struct pm){ i % 5 ? f->inbox : f->sent, i + 1, .from = from,
		    .date = Y2024 + (i % 30) * DAY + i });
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		uint64_t keys = idx_count_date_keys;

		count(f, cases[i].query, cases[i].g, 0, 100, &pg);
		keys = idx_count_date_keys - keys;
		if (pg.groups != cases[i].groups || pg.n == 0 ||
		    strcmp(pg.rows[0].key, cases[i].first) != 0 ||
		    pg.rows[0].count != cases[i].n_first || pg.ungrouped != 0 ||
		    pg.total != cases[i].total)
			fail_msg("%s by %s: %lld in %lld groups, the first %s %lld", cases[i].query,
			    mb_count_group_name(cases[i].g), (long long)pg.total, (long long)pg.groups,
			    pg.n ? pg.rows[0].key : "-", pg.n ? (long long)pg.rows[0].count : 0LL);
		for (size_t k = 1; k < pg.n; k++)
			if (pg.rows[k].count != cases[i].n_rest)
				fail_msg("%s by %s: group %s has %lld, want %lld", cases[i].query,
				    mb_count_group_name(cases[i].g), pg.rows[k].key,
				    (long long)pg.rows[k].count, (long long)cases[i].n_rest);
		if (keys > cases[i].days)
			fail_msg("%s by %s: %llu date keys made for %llu days", cases[i].query,
			    mb_count_group_name(cases[i].g), (unsigned long long)keys,
			    (unsigned long long)cases[i].days);
		mb_count_page_release(&pg);
		count_plan(f, cases[i].query, cases[i].g, plan, sizeof(plan));
		if (strstr(plan, "LIST SUBQUERY") != NULL ||
		    strstr(plan, "SCAN messages_fts VIRTUAL TABLE") == NULL ||
		    strstr(plan, "SCAN messages_fts VIRTUAL TABLE") >
		    strstr(plan, "messages_search_filter"))
			fail_msg("%s by %s: the matches not read first, once:\n%s", cases[i].query,
			    mb_count_group_name(cases[i].g), plan);
	}
}

/*
 * Counts of a flag, a label, attachments, a size or a mailing list that few
 * messages have read those messages' ids (migrations 0019, 0020, 0024,
 * 0025, 0026 and 0027, idx_narrow_few): every grouping gives the same rows
 * as the covered scan gives on an index without those indexes.
 */
static void
test_count_few_flags_and_labels(void **state)
{
	static const char *const queries[] = {
		"is:flagged", "is:unread", "label:project-x", "is:starred folder:Sent",
		"label:project-x after:2024-03-01", "is:unread -label:project-x",
		"has:attachment", "larger:50K", "larger:50K -has:attachment folder:INBOX",
		"list:rare", "list:rare -is:unread folder:INBOX", "is:answered",
		"is:draft folder:INBOX",
		/* two with an index of few each: the ids they meet at (idx_narrow_meet) */
		"list:rare larger:50K", "has:attachment larger:50K folder:INBOX",
		"is:flagged list:rare", "label:project-x is:unread",
	};
	const size_t first_met = 13;
	static const enum mb_count_group groups[] = {
		MB_COUNT_FOLDER, MB_COUNT_MONTH, MB_COUNT_SENDER_DOMAIN, MB_COUNT_LABEL,
	};
	struct fx *f = *state;
	struct mb_count_page got[MB_ARRAY_LEN(queries)][MB_ARRAY_LEN(groups)], want;
	char from[64];

	/* moduli prime to the sample's spacing of ten ids */
	for (uint32_t i = 1; i <= 640; i++) {
		snprintf(from, sizeof(from), "s%u@d%u.example", i % 7, i % 3);
		put(f->rw, &(struct pm){ i % 5 ? f->inbox : f->sent, i, .from = from,
		    .date = Y2024 + i * DAY / 4,
		    .flags = (i % 43 == 7 ? 0 : MB_FLAG_SEEN) | (i % 41 == 3 ? MB_FLAG_FLAGGED : 0) |
		    (i % 47 == 5 ? MB_FLAG_ANSWERED : 0) | (i % 53 == 6 ? MB_FLAG_DRAFT : 0),
		    .keywords = i % 37 == 11 ? "project-x" : i % 37 == 12 ? "other $x" : NULL });
	}
	assert_int_equal(sqlite3_exec(mb_index_db(f->rw), "UPDATE messages SET "
	    "attachment_count = (uid % 31 = 5), size = CASE WHEN uid % 29 = 4 OR uid % 31 = 5 "
	    "THEN 90000 ELSE 100 END, list_id = CASE WHEN uid % 23 = 4 THEN 'Rare.Lists.example' "
	    "WHEN uid % 23 = 6 THEN 'rare-two.example' WHEN uid % 2 = 0 THEN 'common.example' "
	    "END", NULL, NULL, NULL), SQLITE_OK);
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
		for (size_t j = 0; j < MB_ARRAY_LEN(groups); j++) {
			uint64_t reads = idx_few_reads, meets = idx_meets;

			count(f, queries[i], groups[j], 0, 100, &got[i][j]);
			/* is:unread alone reads the unread summaries (test_index_summaries.c) */
			if (idx_few_reads == reads && strcmp(queries[i], "is:unread") != 0)
				fail_msg("%s by %s: not through an index of few", queries[i],
				    mb_count_group_name(groups[j]));
			if ((idx_meets > meets) != (i >= first_met))
				fail_msg("%s by %s: %s where two indexes meet", queries[i],
				    mb_count_group_name(groups[j]), i >= first_met ? "not read" :
				    "read");
		}
	assert_int_equal(got[0][0].total, 16);	/* is:flagged */
	assert_int_equal(got[2][0].total, 18);	/* label:project-x */
	assert_int_equal(got[6][0].total, 21);	/* has:attachment: i % 31 == 5 */
	assert_int_equal(got[7][0].total, 42);	/* larger:50K: and i % 29 == 4 */
	assert_int_equal(got[8][0].total, 17);	/* of those, none attached, in INBOX */
	assert_int_equal(got[9][0].total, 56);	/* list:rare: i % 23 == 4 or 6 */
	assert_int_equal(got[11][0].total, 14);	/* is:answered: i % 47 == 5 */
	mb_index_close(&f->ro);
	assert_int_equal(sqlite3_exec(mb_index_db(f->rw), "DROP INDEX messages_flagged; "
	    "DROP INDEX messages_unread; DROP INDEX messages_labelled; "
	    "DROP INDEX messages_attached; DROP INDEX messages_size; DROP INDEX messages_list; "
	    "DROP INDEX messages_answered; DROP INDEX messages_draft",
	    NULL, NULL, NULL),
	    SQLITE_OK);
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
		for (size_t j = 0; j < MB_ARRAY_LEN(groups); j++) {
			const struct mb_count_page *g = &got[i][j];

			count(f, queries[i], groups[j], 0, 100, &want);
			if (g->total != want.total || g->ungrouped != want.ungrouped || g->n != want.n)
				fail_msg("%s by %s: total %lld, %zu groups; want %lld, %zu", queries[i],
				    mb_count_group_name(groups[j]), (long long)g->total, g->n,
				    (long long)want.total, want.n);
			for (size_t k = 0; k < want.n; k++)
				if (strcmp(g->rows[k].key, want.rows[k].key) != 0 ||
				    g->rows[k].count != want.rows[k].count)
					fail_msg("%s by %s: group %zu is %s %lld, want %s %lld",
					    queries[i], mb_count_group_name(groups[j]), k,
					    g->rows[k].key, (long long)g->rows[k].count,
					    want.rows[k].key, (long long)want.rows[k].count);
			mb_count_page_release(&want);
			mb_count_page_release(&got[i][j]);
		}
}

/*
 * A folder alone (in:NAME or a role) is counted from the summary rows of
 * migration 0011, as all mail is, instead of every message of
 * messages_search_filter, and so is a range of days grouped by folder or
 * date: every grouping gives the same rows as the scan (the same query
 * with larger:0, a filter every message passes, which the summaries do not
 * hold), the stale row of an old UIDVALIDITY and the undated messages in
 * neither, in far fewer steps: 600 messages more on 30 days, from 21
 * senders, are some 30 summary rows a folder.
 */
static void
test_count_a_folder_from_its_summaries(void **state)
{
	/* and a range of days, which the days' rows answer by folder or date */
	static const char *const folders[] = {
		"in:INBOX", "in:sent", "in:Sent", "after:2024-01-10",
		"in:INBOX before:2024-01-21", "in:sent after:2024-01-05 before:2024-01-26",
	};
	struct fx *f = *state;
	char from[64];

	mailbox(f);
	for (uint32_t i = 10; i < 610; i++) {
		snprintf(from, sizeof(from), "s%u@d%u.example", i % 7, i % 3);
		put(f->rw, &(struct pm){ i % 5 ? f->inbox : f->sent, i, .from = from,
		    .date = i % 50 ? Y2024 + (i % 30) * DAY + i : 0,
		    .keywords = i % 37 == 11 ? "project-x" : NULL });
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(folders); i++)
		for (int g = 0; g <= MB_COUNT_LABEL; g++) {
			struct mb_count_page got, want;
			char scan[64];
			uint64_t steps = idx_count_steps, got_steps;

			count(f, folders[i], (enum mb_count_group)g, 0, 100, &got);
			got_steps = idx_count_steps - steps;
			snprintf(scan, sizeof(scan), "%s larger:0", folders[i]);
			steps = idx_count_steps;
			count(f, scan, (enum mb_count_group)g, 0, 100, &want);
			/* senders and labels have no days: a range of days is scanned */
			bool summary = strstr(folders[i], "after:") == NULL &&
			    strstr(folders[i], "before:") == NULL ? true : g <= MB_COUNT_DAY;

			if (got.total != want.total || got.ungrouped != want.ungrouped ||
			    got.n != want.n || got.total < 50 ||
			    (summary && got_steps * 2 > idx_count_steps - steps))
				fail_msg("%s by %s: %lld in %zu groups in %llu steps; "
				    "the scan %lld in %zu in %llu", folders[i],
				    mb_count_group_name((enum mb_count_group)g), (long long)got.total,
				    got.n, (unsigned long long)got_steps, (long long)want.total, want.n,
				    (unsigned long long)(idx_count_steps - steps));
			for (size_t k = 0; k < want.n; k++)
				if (strcmp(got.rows[k].key, want.rows[k].key) != 0 ||
				    got.rows[k].count != want.rows[k].count)
					fail_msg("%s by %s: group %zu is %s %lld, want %s %lld",
					    folders[i], mb_count_group_name((enum mb_count_group)g),
					    k, got.rows[k].key, (long long)got.rows[k].count,
					    want.rows[k].key, (long long)want.rows[k].count);
			mb_count_page_release(&got);
			mb_count_page_release(&want);
		}
}

static void
test_contacts(void **state)
{
	struct fx *f = *state;
	struct mb_contact_page pg;
	struct mb_err err = { 0 };

	mailbox(f);
	own(f, "me@example.org");
	assert_int_equal(mb_overview_contacts(reader(f), NULL, 0, 10, &pg, &err), 0);
	/* anna: two from her, one to her; me is not listed; ghost is stale */
	assert_int_equal(pg.n, 4);
	assert_string_equal(pg.list[0].address, "anna@acme.example");
	assert_int_equal(pg.list[0].received_from, 2);
	assert_int_equal(pg.list[0].sent_to, 1);
	assert_int_equal(pg.list[0].messages, 3);
	assert_true(pg.list[0].has_dates);
	assert_int_equal(pg.list[0].first_date, Y2023 + 10 * DAY);
	assert_int_equal(pg.list[0].last_date, Y2024 + 42 * DAY);
	assert_int_equal(pg.list[0].n_names, 3);
	for (size_t i = 0; i < pg.n; i++) {
		assert_string_not_equal(pg.list[i].address, "me@example.org");
		assert_string_not_equal(pg.list[i].address, "ghost@old.example");
	}
	mb_contact_page_release(&pg);

	/* by a name fragment (any case), with all of that person's mail */
	assert_int_equal(mb_overview_contacts(reader(f), "BELL", 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.list[0].address, "anna@acme.example");
	assert_int_equal(pg.list[0].messages, 3);
	mb_contact_page_release(&pg);

	/* by an address fragment, paged */
	assert_int_equal(mb_overview_contacts(reader(f), "acme", 0, 1, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	assert_true(pg.more);
	mb_contact_page_release(&pg);
	assert_int_equal(mb_overview_contacts(reader(f), "acme", 1, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 2);	/* carol (cc), nodate */
	assert_string_equal(pg.list[0].address, "carol@acme.example");
	assert_int_equal(pg.list[0].sent_to, 1);
	assert_false(pg.list[1].has_dates);
	mb_contact_page_release(&pg);

	/* a re-upsert that changes the recipients changes the contacts */
	put(f->rw, &(struct pm){ f->sent, 1, .from = "me@example.org", .to = "dave@d.example",
	    .subject = "re: invoice", .date = Y2024 + 42 * DAY });
	assert_int_equal(mb_overview_contacts(reader(f), "carol", 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 0);
	mb_contact_page_release(&pg);
	assert_int_equal(mb_overview_contacts(reader(f), "dave", 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	mb_contact_page_release(&pg);
}

static void
test_awaiting(void **state)
{
	struct fx *f = *state;
	struct mb_await_page pg;
	struct mb_err err = { 0 };
	int64_t now = Y2024 + 100 * DAY;

	/* t1: I asked, nobody answered (waiting on others) */
	put(f->rw, &(struct pm){ f->inbox, 1, .from = "x@x.example", .to = "me@example.org",
	    .subject = "q1", .date = Y2024, .message_id = "t1a@x" });
	put(f->rw, &(struct pm){ f->sent, 1, .from = "me@example.org", .to = "x@x.example",
	    .subject = "re: q1", .date = Y2024 + DAY, .message_id = "t1b@x",
	    .in_reply_to = "t1a@x" });
	/* t2: they wrote to me last (waiting on me) */
	put(f->rw, &(struct pm){ f->inbox, 2, .from = "y@y.example", .to = "Me@Example.org",
	    .subject = "q2", .date = Y2024 + 2 * DAY, .message_id = "t2@x" });
	/* t3: to me but answered; t4: a list mail not addressed to me */
	put(f->rw, &(struct pm){ f->inbox, 3, .from = "z@z.example", .to = "me@example.org",
	    .subject = "q3", .date = Y2024 + 3 * DAY, .flags = MB_FLAG_ANSWERED,
	    .message_id = "t3@x" });
	put(f->rw, &(struct pm){ f->inbox, 4, .from = "list@l.example", .to = "all@l.example",
	    .subject = "news", .date = Y2024 + 4 * DAY, .message_id = "t4@x" });
	/* t5: my last word is an unsent draft: the thread is waiting on me */
	put(f->rw, &(struct pm){ f->inbox, 5, .from = "w@w.example", .to = "me@example.org",
	    .subject = "q5", .date = Y2024 + 5 * DAY, .message_id = "t5a@x" });
	put(f->rw, &(struct pm){ f->drafts, 1, .from = "me@example.org", .to = "w@w.example",
	    .subject = "re: q5", .date = Y2024 + 6 * DAY, .message_id = "t5b@x",
	    .in_reply_to = "t5a@x" });
	/* t6: my recent question, younger than the cutoff */
	put(f->rw, &(struct pm){ f->sent, 2, .from = "me@example.org", .to = "v@v.example",
	    .subject = "q6", .date = now - DAY, .message_id = "t6@x" });

	assert_int_equal(mb_overview_awaiting(reader(f), MB_AWAIT_OTHERS, now, 0, 10, &pg, &err),
	    -1);
	assert_int_equal(err.code, MB_E_CONFIG);
	mb_await_page_release(&pg);
	mb_err_clear(&err);
	own(f, "me@example.org");

	assert_int_equal(mb_overview_awaiting(reader(f), MB_AWAIT_OTHERS, now - 3 * DAY, 0, 10,
	    &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.list[0].subject, "re: q1");
	assert_int_equal(pg.list[0].dir, MB_AWAIT_OTHERS);
	assert_int_equal(pg.list[0].messages, 2);
	assert_string_equal(pg.list[0].folder, "Sent");
	mb_await_page_release(&pg);

	assert_int_equal(mb_overview_awaiting(reader(f), MB_AWAIT_ME, now, 0, 10, &pg, &err), 0);
	assert_int_equal(pg.n, 2);	/* newest first: q5 (the draft aside), q2 */
	assert_string_equal(pg.list[0].subject, "q5");
	assert_string_equal(pg.list[1].subject, "q2");
	assert_int_equal(pg.list[1].dir, MB_AWAIT_ME);
	mb_await_page_release(&pg);

	assert_int_equal(mb_overview_awaiting(reader(f), MB_AWAIT_ME | MB_AWAIT_OTHERS, now, 0, 2,
	    &pg, &err), 0);
	assert_int_equal(pg.n, 2);
	assert_true(pg.more);
	assert_string_equal(pg.list[0].subject, "q6");
	mb_await_page_release(&pg);
	assert_int_equal(mb_overview_awaiting(reader(f), MB_AWAIT_ME | MB_AWAIT_OTHERS, now, 2, 2,
	    &pg, &err), 0);
	assert_int_equal(pg.n, 2);	/* q2, re: q1 */
	assert_false(pg.more);
	assert_string_equal(pg.list[1].subject, "re: q1");
	mb_await_page_release(&pg);

	assert_int_equal(mb_overview_awaiting(reader(f), 0, now, 0, 10, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	mb_await_page_release(&pg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_count_groupings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_query_and_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_covering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_words_once_a_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_a_folder_from_its_summaries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_few_flags_and_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_contacts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_awaiting, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
