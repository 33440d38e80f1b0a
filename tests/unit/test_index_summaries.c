/*
 * The overview summaries (migration 0011: contact_stats, contact_names,
 * thread_stats, count_days, count_senders, count_labels) against the
 * per-message truth, after every way the writer
 * changes the index: upserts and a redelivered range, flag updates,
 * expunges, a move, a thread merge, a new UIDVALIDITY and its purge, a
 * folder hidden, shown and purged, the account's own addresses changing,
 * and the migration's backfill of mail indexed before it.  The truth is
 * computed here from the messages rows (the view message_addrs_of and the
 * thread's messages) with the readers' own test of a current row
 * (IDX_CURRENT), and compared with what find_contacts and awaiting_reply
 * answer, field by field; count_messages without a query is compared with
 * its per-message path, and list_folders' counts of messages and unread
 * ones (count_days, and count_unread of migration 0028) with the messages
 * themselves.
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
#include "mailbox/index_writes.h"
#include "mailbox/msg.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"
#include "mailbox/read.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/index-private.h"
#include "../../libmailbox/core/search-private.h"

#define DAY	86400
#define T0	1704067200	/* 2024-01-01T00:00:00Z */
#define ME	"me@example.org"
#define OWN	"(SELECT address FROM account_addresses)"
#define NO_ROLE	"coalesce(f.role, '') NOT IN ('\\Drafts', '\\Trash', '\\Junk')"

/*
 * Every contact as find_contacts ranks them, from each message's addresses
 * (one row per address and message, the first role kept, as message_addrs
 * keeps it) over current rows.
 */
static const char truth_contacts_sql[] =
	"WITH am AS (SELECT addr, msg, min(role) AS role, sender, date, folder_id, uidvalidity "
	"FROM message_addrs_of GROUP BY addr, msg) "
	"SELECT a.addr, sum(a.role = 0) AS received, sum(a.role > 0 AND a.sender IN " OWN ") "
	"AS sent, count(*) AS n, min(a.date), max(a.date) FROM am AS a JOIN folders AS f "
	"ON f.id = a.folder_id WHERE " IDX_CURRENT("a", "f") " AND a.addr NOT IN " OWN " "
	"GROUP BY a.addr ORDER BY received + sent DESC, n DESC, a.addr";
static const char truth_names_sql[] =
	"SELECT a.name FROM message_addrs AS a JOIN folders AS f ON f.id = a.folder_id "
	"WHERE a.addr = ?1 AND a.name IS NOT NULL AND " IDX_CURRENT("a", "f") " "
	"GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT 5";
/*
 * Every thread awaiting a reply: its last dated current message outside
 * drafts, trash and junk, whose turn it is.  The scenario gives no two
 * messages of a thread one date, so the last is unambiguous.
 */
static const char truth_await_sql[] =
	"WITH last AS (SELECT m.thread_id AS tid, max(m.sort_date) AS date, m.id AS id, "
	"lower(coalesce(m.from_addr, '')) AS sender, m.flags AS flags, count(*) AS n "
	"FROM messages AS m JOIN folders AS f ON f.id = m.folder_id WHERE "
	IDX_CURRENT("m", "f") " AND m.sort_date IS NOT NULL AND " NO_ROLE " "
	"GROUP BY m.thread_id), "
	"turn AS (SELECT tid, date, id, n, CASE WHEN sender IN " OWN " THEN 1 "
	"WHEN (flags & 2) = 0 AND EXISTS (SELECT 1 FROM message_addrs_of AS a "
	"WHERE a.msg = last.id AND a.role > 0 AND a.addr IN " OWN ") THEN 2 ELSE 0 END AS dir "
	"FROM last) SELECT tid, dir, id, date, n FROM turn WHERE dir > 0 "
	"ORDER BY date DESC, tid DESC";

/* Each listed folder's current messages and unread ones, by name. */
static const char truth_folders_sql[] =
	"SELECT f.name, count(m.id), coalesce(sum((m.flags & 1) = 0), 0) FROM folders AS f "
	"LEFT JOIN messages AS m ON m.folder_id = f.id AND " IDX_CURRENT("m", "f") " "
	"WHERE " IDX_LISTED("f") " GROUP BY f.id ORDER BY f.name";

struct fx {
	struct mb_test_index t;
	int64_t		 inbox, sent, drafts, trash, lists;
};

static int64_t
folder(struct fx *f, const char *name, const char *role)
{
	struct mb_err err = { 0 };
	int64_t id;

	if (mb_index_folder_ensure(f->t.idx, name, role, &id, &err) == -1)
		fail_msg("folder: %s", err.msg);
	mb_test_folder_examined(f->t.idx, name);
	return id;
}

static void
own(struct fx *f, const char *const *addrs, size_t n)
{
	struct mb_account_address a[4];
	struct mb_err err = { 0 };

	for (size_t i = 0; i < n; i++)
		a[i] = (struct mb_account_address){ addrs[i], "MY_ADDRESSES" };
	if (mb_account_set_addresses(f->t.idx, a, n, &err) == -1)
		fail_msg("own: %s", err.msg);
}

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	mb_test_index_open(&f->t, "test_index_summaries");
	f->inbox = f->t.inbox;
	f->sent = folder(f, "Sent", "\\Sent");
	f->drafts = folder(f, "Drafts", "\\Drafts");
	f->trash = folder(f, "Trash", "\\Trash");
	f->lists = folder(f, "Lists", NULL);
	own(f, (const char *const[]){ ME }, 1);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	mb_test_index_close(&f->t);
	free(f);
	return 0;
}

static sqlite3_stmt *
prep(struct fx *f, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(mb_index_db(f->t.idx), sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("prepare: %s", sqlite3_errmsg(mb_index_db(f->t.idx)));
	return st;
}

/* find_contacts (everyone, and the names of each) against the truth. */
static void
check_contacts(struct fx *f, const char *when)
{
	struct mb_contact_page pg;
	struct mb_err err = { 0 };
	sqlite3_stmt *st = prep(f, truth_contacts_sql);
	size_t i = 0;

	if (mb_overview_contacts(f->t.idx, NULL, 0, MB_OVERVIEW_MAX_LIMIT, &pg, &err) == -1)
		fail_msg("%s: contacts: %s", when, err.msg);
	for (; sqlite3_step(st) == SQLITE_ROW; i++) {
		const struct mb_contact *c = &pg.list[i];
		sqlite3_stmt *nst;
		size_t k = 0;

		if (i >= pg.n)
			fail_msg("%s: contact %s missing", when, sqlite3_column_text(st, 0));
		if (strcmp(c->address, (const char *)sqlite3_column_text(st, 0)) != 0 ||
		    c->received_from != sqlite3_column_int64(st, 1) ||
		    c->sent_to != sqlite3_column_int64(st, 2) ||
		    c->messages != sqlite3_column_int64(st, 3) ||
		    c->has_dates != (sqlite3_column_type(st, 4) != SQLITE_NULL) ||
		    (c->has_dates && (c->first_date != sqlite3_column_int64(st, 4) ||
		    c->last_date != sqlite3_column_int64(st, 5))))
			fail_msg("%s: contact %zu: %s %lld/%lld/%lld %lld..%lld, truth %s "
			    "%lld/%lld/%lld %lld..%lld", when, i, c->address,
			    (long long)c->received_from, (long long)c->sent_to,
			    (long long)c->messages, (long long)c->first_date,
			    (long long)c->last_date, sqlite3_column_text(st, 0),
			    sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
			    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
			    sqlite3_column_int64(st, 5));
		nst = prep(f, truth_names_sql);
		sqlite3_bind_text(nst, 1, c->address, -1, SQLITE_STATIC);
		for (; sqlite3_step(nst) == SQLITE_ROW; k++)
			if (k >= c->n_names ||
			    strcmp(c->names[k], (const char *)sqlite3_column_text(nst, 0)) != 0)
				fail_msg("%s: %s: name %zu is not %s", when, c->address, k,
				    sqlite3_column_text(nst, 0));
		if (k != c->n_names)
			fail_msg("%s: %s: %zu names, truth %zu", when, c->address, c->n_names, k);
		sqlite3_finalize(nst);
	}
	sqlite3_finalize(st);
	if (i != pg.n)
		fail_msg("%s: %zu contacts, truth %zu", when, pg.n, i);
	mb_contact_page_release(&pg);
}

/* awaiting_reply (both turns, no age) against the truth. */
static void
check_awaiting(struct fx *f, const char *when)
{
	struct mb_await_page pg;
	struct mb_err err = { 0 };
	sqlite3_stmt *st = prep(f, truth_await_sql);
	size_t i = 0;

	if (mb_overview_awaiting(f->t.idx, MB_AWAIT_OTHERS | MB_AWAIT_ME, INT64_MAX, 0,
	    MB_OVERVIEW_MAX_LIMIT, &pg, &err) == -1)
		fail_msg("%s: awaiting: %s", when, err.msg);
	for (; sqlite3_step(st) == SQLITE_ROW; i++) {
		const struct mb_await_thread *t = &pg.list[i];

		if (i >= pg.n)
			fail_msg("%s: thread %lld missing", when, sqlite3_column_int64(st, 0));
		if (t->thread_id != sqlite3_column_int64(st, 0) ||
		    (int)t->dir != sqlite3_column_int(st, 1) || t->id != sqlite3_column_int64(st, 2) ||
		    t->date != sqlite3_column_int64(st, 3) ||
		    t->messages != sqlite3_column_int64(st, 4))
			fail_msg("%s: thread %zu: %lld dir %d last %lld n %lld, truth %lld dir %d "
			    "last %lld n %lld", when, i, (long long)t->thread_id, (int)t->dir,
			    (long long)t->id, (long long)t->messages, sqlite3_column_int64(st, 0),
			    sqlite3_column_int(st, 1), sqlite3_column_int64(st, 2),
			    sqlite3_column_int64(st, 4));
	}
	sqlite3_finalize(st);
	if (i != pg.n)
		fail_msg("%s: %zu threads waiting, truth %zu", when, pg.n, i);
	mb_await_page_release(&pg);
}

static void
count(struct fx *f, const char *query, enum mb_count_group g, struct mb_count_page *pg)
{
	struct mb_query q;
	struct mb_err err = { 0 };

	mb_query_init(&q);
	if (query && mb_query_compile(query, strlen(query), &q, &err) == -1)
		fail_msg("compile %s: %s", query, err.msg);
	if (mb_overview_count(f->t.idx, &q, g, 0, MB_OVERVIEW_MAX_LIMIT, pg, &err) == -1)
		fail_msg("count: %s", err.msg);
	mb_query_release(&q);
}

/*
 * count_messages of query (NULL: none) by g against the same count with a
 * filter every message passes added, which takes the per-message path:
 * the same total, the same groups with the same counts, in order.
 */
static void
expect_counts_per_message(struct fx *f, const char *when, const char *query,
    enum mb_count_group g)
{
	struct mb_count_page sum, per;
	char truth[128];

	snprintf(truth, sizeof(truth), "%s smaller:100G", query ? query : "");
	count(f, query, g, &sum);
	count(f, truth, g, &per);
	if (sum.total != per.total || sum.ungrouped != per.ungrouped ||
	    sum.groups != per.groups || sum.n != per.n)
		fail_msg("%s: '%s' by %s: total %lld/%lld ungrouped %lld/%lld groups %lld/%lld",
		    when, query ? query : "", mb_count_group_name(g), (long long)sum.total,
		    (long long)per.total, (long long)sum.ungrouped, (long long)per.ungrouped,
		    (long long)sum.groups, (long long)per.groups);
	for (size_t i = 0; i < sum.n; i++)
		if (strcmp(sum.rows[i].key, per.rows[i].key) != 0 ||
		    sum.rows[i].count != per.rows[i].count)
			fail_msg("%s: '%s' by %s: group %zu: %s %lld, truth %s %lld", when,
			    query ? query : "", mb_count_group_name(g), i, sum.rows[i].key,
			    (long long)sum.rows[i].count, per.rows[i].key,
			    (long long)per.rows[i].count);
	mb_count_page_release(&sum);
	mb_count_page_release(&per);
}

/*
 * count_messages without a query (the summaries) by every grouping, and of
 * the unread messages by every grouping (count_unread, migration 0028, by
 * folder and date; count_unread_senders and count_unread_labels, 0029, by
 * sender, domain and label), also in one folder and over whole days, each
 * against its per-message count.
 */
static void
check_counts(struct fx *f, const char *when)
{
	static const char *const unread[] = {
		"is:unread", "is:unread in:INBOX", "is:unread after:2024-01-03",
		"is:unread before:2024-01-05 in:INBOX",
	};

	for (int g = MB_COUNT_FOLDER; g <= MB_COUNT_LABEL; g++)
		expect_counts_per_message(f, when, NULL, (enum mb_count_group)g);
	for (size_t k = 0; k < MB_ARRAY_LEN(unread); k++)
		for (int g = MB_COUNT_FOLDER; g <= MB_COUNT_LABEL; g++)
			expect_counts_per_message(f, when, unread[k], (enum mb_count_group)g);
}

/* list_folders (mb_read_folders) against the messages, folder by folder. */
static void
check_folders(struct fx *f, const char *when)
{
	sqlite3_stmt *st = prep(f, truth_folders_sql);
	struct mb_read_folder *list;
	struct mb_err err = { 0 };
	size_t n, i = 0;

	if (mb_read_folders(f->t.idx, &list, &n, &err) == -1)
		fail_msg("%s: folders: %s", when, err.msg);
	for (; sqlite3_step(st) == SQLITE_ROW; i++) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (i >= n || strcmp(list[i].name, name) != 0)
			fail_msg("%s: folder %zu: %s, truth %s", when, i, i < n ? list[i].name : "none",
			    name);
		if (list[i].messages != sqlite3_column_int64(st, 1) ||
		    list[i].unread != sqlite3_column_int64(st, 2))
			fail_msg("%s: %s: %lld messages, %lld unread; truth %lld, %lld", when, name,
			    (long long)list[i].messages, (long long)list[i].unread,
			    (long long)sqlite3_column_int64(st, 1),
			    (long long)sqlite3_column_int64(st, 2));
	}
	if (i != n)
		fail_msg("%s: %zu folders listed, truth %zu", when, n, i);
	sqlite3_finalize(st);
	mb_read_folders_free(&list, n);
}

static void
check(struct fx *f, const char *when)
{
	check_contacts(f, when);
	check_awaiting(f, when);
	check_counts(f, when);
	check_folders(f, when);
}

/* Rows of a summary table for folder_id (any generation). */
static int64_t
summary_rows(struct fx *f, const char *table_sql, int64_t folder_id)
{
	sqlite3_stmt *st = prep(f, table_sql);
	int64_t n;

	sqlite3_bind_int64(st, 1, folder_id);
	n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	return n;
}

/*
 * A small mailbox with every shape the summaries distinguish: threads
 * across INBOX and Sent, a draft and a trashed last word, names that
 * differ, a Cc, an undated message, a list.
 */
static void
mailbox(struct fx *f)
{
	struct mb_index *x = f->t.idx;

	mb_test_put(x, f->inbox, 1, &(struct mb_test_msg){ .subject = "q1", .from = "Anna@Acme.example",
	    .from_name = "Anna B", .to = ME, .date = T0, .keywords = "project-x $Important",
	    .message_id = "t1a@x" });
	mb_test_put(x, f->sent, 1, &(struct mb_test_msg){ .subject = "re: q1", .from = ME, .to =
	    "anna@acme.example", .to_name = "Anna Bell", .cc = "carol@acme.example",
	    .date = T0 + DAY, .flags = MB_FLAG_SEEN, .message_id = "t1b@x",
	    .in_reply_to = "t1a@x" });
	mb_test_put(x, f->inbox, 2, &(struct mb_test_msg){ .subject = "q2", .from = "bob@b.example",
	    .to = ME, .cc = "carol@acme.example", .date = T0 + 2 * DAY, .keywords = "project-x",
	    .message_id = "t2@x" });
	mb_test_put(x, f->drafts, 1, &(struct mb_test_msg){ .subject = "re: q2", .from = ME,
	    .to = "bob@b.example", .date = T0 + 3 * DAY, .message_id = "t2b@x",
	    .in_reply_to = "t2@x" });
	mb_test_put(x, f->inbox, 3, &(struct mb_test_msg){ .subject = "q3", .from = "anna@acme.example",
	    .from_name = "Anna", .to = ME, .date = T0 + 4 * DAY, .message_id = "t3@x" });
	mb_test_put(x, f->trash, 1, &(struct mb_test_msg){ .subject = "re: q3", .from = "dave@d.example",
	    .to = ME, .date = T0 + 5 * DAY, .message_id = "t3b@x", .in_reply_to = "t3@x" });
	mb_test_put(x, f->inbox, 4, &(struct mb_test_msg){ .subject = "undated",
	    .from = "nodate@acme.example", .to = ME, .message_id = "t4@x" });
	mb_test_put(x, f->lists, 1, &(struct mb_test_msg){ .subject = "news", .from = "list@l.example",
	    .to = "all@l.example", .date = T0 + 6 * DAY, .message_id = "t5@x" });
	/* no From at all: its recipients are contacts all the same */
	mb_test_put(x, f->inbox, 5, &(struct mb_test_msg){ .subject = "anonymous", .from = "",
	    .to = "gil@g.example", .cc = ME, .date = T0 + 8 * DAY, .message_id = "t6@x" });
	mb_test_put(x, f->lists, 2, &(struct mb_test_msg){ .subject = "re: news", .from = "bob@b.example",
	    .to = "all@l.example", .cc = ME, .date = T0 + 7 * DAY, .flags = MB_FLAG_SEEN,
	    .message_id = "t5b@x", .in_reply_to = "t5@x" });
}

static void
test_upsert_flags_expunge(void **state)
{
	struct fx *f = *state;
	struct mb_index *x = f->t.idx;
	struct mb_err err = { 0 };
	bool changed;

	check(f, "empty");
	mailbox(f);
	check(f, "upserted");
	mailbox(f);
	check(f, "redelivered unchanged");
	/* a redelivery that changes the people and the date of a message */
	mb_test_put(x, f->sent, 1, &(struct mb_test_msg){ .subject = "re: q1", .from = ME,
	    .to = "erin@e.example", .to_name = "Erin", .date = T0 + 9 * DAY,
	    .message_id = "t1b@x", .in_reply_to = "t1a@x" });
	check(f, "redelivered changed");
	/* and one that moves an unread message to another day */
	mb_test_put(x, f->inbox, 2, &(struct mb_test_msg){ .subject = "q2", .from = "bob@b.example",
	    .to = ME, .cc = "carol@acme.example", .date = T0 + 10 * DAY, .keywords = "project-x",
	    .message_id = "t2@x" });
	check(f, "redelivered on another day");

	assert_int_equal(mb_index_update_flags(x, f->inbox, 1, 2, MB_FLAG_ANSWERED, NULL, 0, &err),
	    0);
	check(f, "answered");
	assert_int_equal(mb_index_update_flags_changed(x, f->inbox, 1, 2, MB_FLAG_SEEN, "done", 0,
	    &changed, &err), 0);
	assert_true(changed);
	check(f, "reconciled");
	assert_int_equal(mb_index_update_flags(x, f->lists, 1, 1, MB_FLAG_SEEN, NULL, 0, &err), 0);
	check(f, "read");
	assert_int_equal(mb_index_update_flags(x, f->lists, 1, 1, MB_FLAG_FLAGGED, NULL, 0, &err),
	    0);
	check(f, "unread again");
	assert_int_equal(mb_index_update_flags(x, f->lists, 1, 1, MB_FLAG_SEEN | MB_FLAG_FLAGGED,
	    NULL, 0, &err), 0);
	check(f, "read and flagged");

	/* anna's newest, then her oldest: her dates are read again */
	assert_int_equal(mb_index_delete(x, f->inbox, 1, 3, &err), 0);
	check(f, "expunged newest");
	assert_int_equal(mb_index_delete(x, f->inbox, 1, 1, &err), 0);
	check(f, "expunged oldest");
	assert_int_equal(mb_index_delete(x, f->sent, 1, 1, &err), 0);
	check(f, "expunged a thread's last");
	assert_int_equal(mb_index_delete(x, f->inbox, 1, 5, &err), 0);
	check(f, "expunged the message without a sender");
}

static void
test_move_merge(void **state)
{
	struct fx *f = *state;
	struct mb_index *x = f->t.idx;
	struct mb_err err = { 0 };
	int64_t id = 0;

	mailbox(f);
	/* bob's question moves to Lists; then the list thread's reply to Trash */
	assert_int_equal(mb_index_message_find(x, f->inbox, 1, 2, &id, &err), 0);
	assert_int_equal(mb_index_message_rekey(x, id, f->lists, 1, 9, &err), 0);
	check(f, "moved");
	assert_int_equal(mb_index_message_find(x, f->lists, 1, 2, &id, &err), 0);
	assert_int_equal(mb_index_message_rekey(x, id, f->trash, 1, 9, &err), 0);
	check(f, "moved to trash");

	/* two replies to a parent never fetched, then the parent, linking a third thread */
	mb_test_put(x, f->inbox, 10, &(struct mb_test_msg){ .subject = "a", .from = "fay@f.example",
	    .to = ME, .date = T0 + 20 * DAY, .message_id = "m1@x", .in_reply_to = "p@x" });
	mb_test_put(x, f->sent, 10, &(struct mb_test_msg){ .subject = "b", .from = ME,
	    .to = "fay@f.example", .date = T0 + 21 * DAY, .message_id = "m2@x",
	    .in_reply_to = "t3@x" });
	check(f, "two threads");
	mb_test_put(x, f->inbox, 11, &(struct mb_test_msg){ .subject = "p", .from = "fay@f.example",
	    .to = ME, .date = T0 + 19 * DAY, .message_id = "p@x", .in_reply_to = "m2@x" });
	check(f, "merged");
}

static void
test_generations_and_hidden_folders(void **state)
{
	static const char cs_sql[] = "SELECT count(*) FROM contact_stats WHERE folder_id = ?1";
	static const char ts_sql[] = "SELECT count(*) FROM thread_stats WHERE folder_id = ?1";
	struct fx *f = *state;
	struct mb_index *x = f->t.idx;
	struct mb_folder_state fs;
	struct mb_err err = { 0 };
	unsigned n = 0, absent = 0;

	mailbox(f);
	/* INBOX gets a new UIDVALIDITY: its old rows stop counting at once */
	assert_int_equal(mb_index_folder_get(x, "INBOX", &fs, &err), 0);
	fs.uidvalidity = 2;
	assert_int_equal(mb_index_folder_update(x, &fs, &err), 0);
	mb_folder_state_release(&fs);
	check(f, "new generation");
	mb_test_put(x, f->inbox, 1, &(struct mb_test_msg){ .subject = "q1", .from = "anna@acme.example",
	    .to = ME, .uidvalidity = 2, .date = T0, .message_id = "t1a@x" });
	check(f, "new generation refilled");
	assert_int_equal(mb_index_purge_generations(x, f->inbox, 2, &n, &err), 0);
	assert_int_equal(n, 5);
	check(f, "old generation purged");
	assert_int_equal(mb_index_purge_generations(x, f->inbox, 2, &n, &err), 0);
	assert_int_equal(n, 0);

	/*
	 * Lists hidden (LIST stopped showing it), shown again, left out of
	 * SYNC_FOLDERS (listed, not wanted: hidden too), back, hidden and purged.
	 */
	assert_int_equal(mb_index_folder_presence(x, f->lists, false, true, &absent, &err), 0);
	check(f, "hidden");
	assert_int_equal(mb_index_folder_presence(x, f->lists, true, true, &absent, &err), 0);
	check(f, "shown again");
	assert_int_equal(mb_index_folder_presence(x, f->lists, true, false, &absent, &err), 0);
	check(f, "left out of SYNC_FOLDERS");
	assert_int_equal(mb_index_folder_presence(x, f->lists, true, true, &absent, &err), 0);
	check(f, "wanted again");
	assert_int_equal(mb_index_folder_presence(x, f->lists, false, true, &absent, &err), 0);
	assert_int_equal(mb_index_purge_folder(x, f->lists, &n, &err), 0);
	assert_int_equal(n, 2);
	check(f, "purged folder");
	assert_int_equal(summary_rows(f, cs_sql, f->lists), 0);
	assert_int_equal(summary_rows(f, ts_sql, f->lists), 0);
}

static void
test_own_addresses_change(void **state)
{
	struct fx *f = *state;

	mailbox(f);
	own(f, (const char *const[]){ ME, "bob@b.example" }, 2);
	check(f, "bob is me too");
	own(f, (const char *const[]){ "anna@acme.example" }, 1);
	check(f, "only anna is me");
	own(f, (const char *const[]){ "anna@acme.example" }, 1);
	check(f, "the same set again");
	own(f, (const char *const[]){ ME }, 1);
	check(f, "back to me");
}

/*
 * list_folders reads the folders' summaries, not their messages: its
 * statement takes fewer steps than a folder of 600 messages over 5 days
 * has messages (a few a day of count_days it sums; it took 12,121 when it
 * joined every message of every folder to count them and their unread
 * ones: at 1,000,000 messages 725 ms of CPU for the first tool a model
 * calls).
 */
static void
test_folders_read_from_summaries(void **state)
{
	struct fx *f = *state;
	struct mb_index *x = f->t.idx;
	struct mb_read_folder *list;
	struct mb_count_page pg;
	struct mb_err err = { 0 };
	uint64_t steps;
	size_t n;

	assert_int_equal(mb_index_begin(x, &err), 0);
	for (uint32_t uid = 1; uid <= 600; uid++)
		mb_test_put(x, f->inbox, uid, &(struct mb_test_msg){ .subject = "bulk",
		    .from = uid % 4 ? "bulk@b.example" : "other@c.example", .date = T0 + uid * 600,
		    .keywords = uid % 2 ? "news" : NULL, .flags = uid % 3 ? MB_FLAG_SEEN : 0 });
	assert_int_equal(mb_index_commit(x, &err), 0);
	check_folders(f, "600 in INBOX");
	steps = idx_read_folders_steps;
	assert_int_equal(mb_read_folders(x, &list, &n, &err), 0);
	steps = idx_read_folders_steps - steps;
	assert_int_equal(n, 5);
	assert_string_equal(list[1].name, "INBOX");
	assert_int_equal(list[1].messages, 600);
	assert_int_equal(list[1].unread, 200);
	mb_read_folders_free(&list, n);
	if (steps >= 600)
		fail_msg("list_folders took %llu steps for 600 messages", (unsigned long long)steps);
	/*
	 * And count_messages of the unread ones by folder, month, sender or
	 * label: a few steps a day, sender or label, a tenth of what counting
	 * them one by one takes (the same count with a filter every message
	 * passes); by sender and label it counted them one by one until
	 * migration 0029.
	 */
	static const enum mb_count_group summarised[] = { MB_COUNT_FOLDER, MB_COUNT_MONTH,
	    MB_COUNT_SENDER, MB_COUNT_SENDER_DOMAIN, MB_COUNT_LABEL };

	for (size_t i = 0; i < MB_ARRAY_LEN(summarised); i++) {
		enum mb_count_group g = summarised[i];
		uint64_t each;

		steps = idx_count_steps;
		count(f, "is:unread", g, &pg);
		steps = idx_count_steps - steps;
		assert_int_equal(pg.total, 200);
		mb_count_page_release(&pg);
		each = idx_count_steps;
		count(f, "is:unread smaller:100G", g, &pg);
		each = idx_count_steps - each;
		assert_int_equal(pg.total, 200);
		mb_count_page_release(&pg);
		if (steps * 10 >= each)
			fail_msg("count_messages is:unread by %s took %llu steps, one by one %llu",
			    mb_count_group_name(g), (unsigned long long)steps,
			    (unsigned long long)each);
	}
	/*
	 * an index syncd has not yet taken to migration 0029, then 0028 (nor to
	 * any after them): counted from the messages (check_counts compares
	 * those counts with the per-message ones)
	 */
	assert_int_equal(sqlite3_exec(mb_index_db(x), "DROP TRIGGER count_unread_people_insert; "
	    "DROP TRIGGER count_unread_people_delete; DROP TRIGGER count_unread_people_update; "
	    "DROP TABLE count_unread_senders; DROP TABLE count_unread_labels; "
	    "DELETE FROM schema_migrations WHERE version >= 29", NULL, NULL, NULL), SQLITE_OK);
	check_counts(f, "before migration 0029");
	assert_int_equal(sqlite3_exec(mb_index_db(x), "DROP TRIGGER count_unread_insert; "
	    "DROP TRIGGER count_unread_delete; DROP TRIGGER count_unread_update; "
	    "DROP TABLE count_unread; DELETE FROM schema_migrations WHERE version >= 28",
	    NULL, NULL, NULL), SQLITE_OK);
	check_folders(f, "before migration 0028");
	check_counts(f, "before migration 0028");
}

/*
 * Mail indexed before migrations 0011, 0028 and 0029: their objects are dropped
 * and their records removed, and opening the index applies them again with
 * their backfills, which must give the summaries the triggers would have
 * kept.
 */
static void
test_migration_backfill(void **state)
{
	static const char undo_sql[] =
		"DROP TRIGGER contact_stats_insert; DROP TRIGGER contact_stats_delete; "
		"DROP TRIGGER thread_stats_insert; DROP TRIGGER thread_stats_delete; "
		"DROP TRIGGER thread_stats_update; DROP VIEW contact_stats_of; "
		"DROP VIEW contact_names_of; DROP VIEW thread_stats_of; DROP TABLE contact_stats; "
		"DROP TABLE contact_names; DROP TABLE thread_stats; DROP TRIGGER count_stats_insert; "
		"DROP TRIGGER count_stats_delete; DROP TRIGGER count_stats_update; "
		"DROP TABLE count_days; DROP TABLE count_senders; DROP TABLE count_labels; "
		"DROP TRIGGER count_unread_insert; DROP TRIGGER count_unread_delete; "
		"DROP TRIGGER count_unread_update; DROP TABLE count_unread; "
		"DROP TRIGGER count_unread_people_insert; DROP TRIGGER count_unread_people_delete; "
		"DROP TRIGGER count_unread_people_update; DROP TABLE count_unread_senders; "
		"DROP TABLE count_unread_labels; "
		"ALTER TABLE messages DROP COLUMN sort_day; "
		"DELETE FROM schema_migrations WHERE version IN (11, 28, 29)";
	struct fx *f = *state;
	struct mb_err err = { 0 };

	mailbox(f);
	assert_int_equal(sqlite3_exec(mb_index_db(f->t.idx), undo_sql, NULL, NULL, NULL),
	    SQLITE_OK);
	mb_index_close(&f->t.idx);
	if (mb_index_open(f->t.path, MB_INDEX_RW, &f->t.idx, &err) == -1)
		fail_msg("reopen: %s", err.msg);
	assert_int_equal(mb_test_index_int(&f->t, "SELECT count(*) FROM thread_stats") > 0, 1);
	check(f, "backfilled");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_upsert_flags_expunge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_move_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generations_and_hidden_folders, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_own_addresses_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migration_backfill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folders_read_from_summaries, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
