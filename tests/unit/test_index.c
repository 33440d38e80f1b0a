/*
 * The index on a real SQLite file under mkdtemp(): migrations, upserts,
 * full-text search (diacritics, stemming, CJK), buckets, the watermark,
 * read-only handles, threads, backup.
 */
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/account.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/migrations.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#include "support_index.h"

struct fx {
	char		 dir[64];
	char		 path[128];
	struct mb_index	*idx;
	int64_t		 inbox;
};

static int
rm_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(p);
}

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct mb_err err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_index.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/data/index.db", f->dir);
	if (mb_index_open(f->path, MB_INDEX_RW, &f->idx, &err) == -1)
		fail_msg("open: %s", err.msg);
	assert_int_equal(mb_index_folder_ensure(f->idx, "INBOX", NULL, &f->inbox, &err), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	mb_index_close(&f->idx);
	nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* A message with the given fields; refs is NULL-terminated (may be NULL). */
static struct mb_msg *
msg(const char *subject, const char *body, const char *mid, const char *irt,
    const char *const *refs)
{
	struct mb_msg *m = mb_msg_new();

	m->subject = mb_xstrdup(subject);
	free(m->body);
	m->body = mb_xstrdup(body ? body : "");
	m->body_len = strlen(m->body);
	m->message_id = mb_xstrdup(mid);
	m->in_reply_to = mb_xstrdup(irt);
	for (size_t i = 0; refs && refs[i]; i++) {
		m->references = mb_xrealloc(m->references, (i + 1) * sizeof(char *));
		m->references[i] = mb_xstrdup(refs[i]);
		m->n_references = i + 1;
	}
	m->from.name = mb_xstrdup("Alice Example");
	m->from.addr = mb_xstrdup("alice@example.org");
	m->has_date = true;
	m->date = 1700000000;
	return m;
}

static int64_t
put(struct fx *f, uint32_t uid, struct mb_msg *m, unsigned flags)
{
	struct mb_index_row row = {
		.folder_id = f->inbox, .uidvalidity = 7, .uid = uid, .flags = flags,
		.size = 1234, .internaldate = 1700000100, .msg = m,
	};
	struct mb_err err = { 0 };
	int64_t id = 0;

	if (mb_index_upsert(f->idx, &row, &id, &err) == -1)
		fail_msg("upsert uid %u: %s", uid, err.msg);
	mb_msg_free(&m);
	return id;
}

/* One integer from a query with up to one text and one integer parameter. */
static int64_t
q_int(struct mb_index *idx, const char *sql, const char *text, int64_t num)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(mb_index_db(idx), sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("prepare %s: %s", sql, sqlite3_errmsg(mb_index_db(idx)));
	if (text != NULL)
		sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_int64(st, 1, num);
	if (sqlite3_bind_parameter_count(st) > 1)
		sqlite3_bind_int64(st, 2, num);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		fail_msg("%s: %s", sql, sqlite3_errmsg(mb_index_db(idx)));
	sqlite3_finalize(st);
	return v;
}

/* How many messages an FTS query matches. */
static int64_t
hits(struct mb_index *idx, const char *query)
{
	return q_int(idx, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1",
	    query, 0);
}

/* The uids an FTS query matches, ascending, comma-separated (caller frees). */
static char *
matched(struct mb_index *idx, const char *query)
{
	sqlite3_stmt *st;
	char *s;

	if (sqlite3_prepare_v2(mb_index_db(idx),
	    "SELECT coalesce(group_concat(uid, ','), '') FROM (SELECT m.uid FROM messages_fts f"
	    " JOIN messages m ON m.id = f.rowid WHERE messages_fts MATCH ?1 ORDER BY m.uid)",
	    -1, &st, NULL) != SQLITE_OK)
		fail_msg("prepare: %s", sqlite3_errmsg(mb_index_db(idx)));
	sqlite3_bind_text(st, 1, query, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		fail_msg("%s: %s", query, sqlite3_errmsg(mb_index_db(idx)));
	s = mb_xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return s;
}

static void
assert_matches(struct mb_index *idx, const char *query, const char *uids)
{
	char *got = matched(idx, query);

	if (strcmp(got, uids) != 0)
		fail_msg("MATCH '%s': uids [%s], want [%s]", query, got, uids);
	free(got);
}

static int64_t
thread_of(struct fx *f, uint32_t uid)
{
	return q_int(f->idx, "SELECT thread_id FROM messages WHERE uid = ?1", NULL, uid);
}

static void
migrations_apply_once(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	int v = 0;

	mb_index_close(&f->idx);
	assert_int_equal(mb_index_open(f->path, MB_INDEX_RW, &f->idx, &err), 0);
	mb_index_close(&f->idx);
	assert_int_equal(mb_index_open(f->path, MB_INDEX_RW, &f->idx, &err), 0);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM schema_migrations WHERE ?1 = 0",
	    NULL, 0), (int64_t)mb_migrations_count);
	assert_true(mb_migrations_count >= 1);
	assert_int_equal(q_int(f->idx,
	    "SELECT count(DISTINCT version) FROM schema_migrations WHERE ?1 = 0", NULL, 0),
	    (int64_t)mb_migrations_count);
	assert_int_equal(mb_index_schema_version(f->idx, &v, &err), 0);
	assert_int_equal(v, mb_index_code_schema_version());
	/* The folder made in setup survived the reopenings. */
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM folders WHERE name = ?1", "INBOX", 0),
	    1);
	/* WAL, foreign keys, no secure_delete. */
	assert_int_equal(q_int(f->idx, "SELECT foreign_keys + ?1 FROM pragma_foreign_keys", NULL,
	    0), 1);
	assert_int_equal(q_int(f->idx, "SELECT secure_delete + ?1 FROM pragma_secure_delete", NULL,
	    0), 0);
	assert_int_equal(q_int(f->idx, "SELECT journal_mode = 'wal' AND ?1 = 0"
	    " FROM pragma_journal_mode", NULL, 0), 1);
}

static void
newer_schema_is_refused(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	int code = mb_index_code_schema_version();
	char want[160];

	assert_int_equal(q_int(f->idx, "INSERT INTO schema_migrations VALUES (?2, 'future', 0)"
	    " RETURNING version + length(?1)", "x", code + 2), code + 3);
	mb_index_close(&f->idx);
	snprintf(want, sizeof(want),
	    "index schema version %d is newer than this build (%d): upgrade imap-mcp",
	    code + 2, code);
	assert_int_equal(mb_index_open(f->path, MB_INDEX_RW, &f->idx, &err), -1);
	assert_null(f->idx);
	assert_string_equal(err.msg, want);
	mb_err_clear(&err);
	assert_int_equal(mb_index_open(f->path, MB_INDEX_RO, &f->idx, &err), -1);
	assert_string_equal(err.msg, want);
}

static void
ro_refuses_missing_or_uninitialised(void **state)
{
	struct fx *f = *state;
	struct mb_index *ro = NULL;
	struct mb_err err = { 0 };
	char p[160];
	sqlite3 *db;

	snprintf(p, sizeof(p), "%s/missing.db", f->dir);
	assert_int_equal(mb_index_open(p, MB_INDEX_RO, &ro, &err), -1);
	assert_non_null(strstr(err.msg, "does not exist"));
	assert_int_equal(access(p, F_OK), -1);	/* and it was not created */

	snprintf(p, sizeof(p), "%s/empty.db", f->dir);
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	mb_err_clear(&err);
	assert_int_equal(mb_index_open(p, MB_INDEX_RO, &ro, &err), -1);
	assert_non_null(strstr(err.msg, "not initialised"));
}

static void
ro_handle_cannot_write_but_can_search(void **state)
{
	struct fx *f = *state;
	struct mb_index *ro = NULL;
	struct mb_err err = { 0 };
	struct mb_folder_state st;
	int64_t id;

	put(f, 1, msg("Budget", "会議は月曜日です", "a@x", NULL, NULL), 0);
	assert_int_equal(mb_index_open(f->path, MB_INDEX_RO, &ro, &err), 0);
	assert_int_not_equal(sqlite3_exec(mb_index_db(ro),
	    "INSERT INTO folders (name) VALUES ('Evil')", NULL, NULL, NULL), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(mb_index_db(ro),
	    "DELETE FROM messages", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(mb_index_folder_ensure(ro, "Evil", NULL, &id, &err), -1);
	/* Reads work, including the CJK tokenizer at query time. */
	assert_int_equal(hits(ro, "会議"), 1);
	assert_int_equal(mb_index_folder_get(ro, "INBOX", &st, &err), 0);
	mb_folder_state_release(&st);
	mb_index_close(&ro);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 1);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM folders WHERE name = ?1", "Evil", 0),
	    0);
}

static void
ro_reader_is_not_blocked_by_the_writer(void **state)
{
	struct fx *f = *state;
	struct mb_index *ro = NULL;
	struct mb_err err = { 0 };

	put(f, 1, msg("one", "first", "r1@x", NULL, NULL), 0);
	assert_int_equal(mb_index_open(f->path, MB_INDEX_RO, &ro, &err), 0);
	/* The writer holds an open write transaction: the reader reads the last commit. */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	put(f, 2, msg("two", "second", "r2@x", NULL, NULL), 0);
	assert_int_equal(q_int(ro, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 1);
	assert_int_equal(hits(ro, "second"), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	assert_int_equal(q_int(ro, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 2);
	assert_int_equal(hits(ro, "second"), 1);
	mb_index_close(&ro);
}

static void
second_upsert_updates_in_place(void **state)
{
	struct fx *f = *state;
	int64_t a, b;

	a = put(f, 5, msg("First subject", "first body", "m5@x", NULL, NULL), 0);
	b = put(f, 5, msg("Second subject", "second body", "m5@x", NULL, NULL),
	    MB_FLAG_SEEN | MB_FLAG_FLAGGED);
	assert_int_equal(a, b);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE uid = ?1", NULL, 5), 1);
	assert_int_equal(q_int(f->idx, "SELECT flags FROM messages WHERE id = ?1", NULL, a),
	    MB_FLAG_SEEN | MB_FLAG_FLAGGED);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages"
	    " WHERE subject = ?1 AND body = 'second body'", "Second subject", 0), 1);
	/* The same uid under another uidvalidity is another message. */
	struct mb_index_row row = { .folder_id = f->inbox, .uidvalidity = 8, .uid = 5,
	    .msg = msg("Other", "x", NULL, NULL, NULL) };
	struct mb_err err = { 0 };
	assert_int_equal(mb_index_upsert(f->idx, &row, NULL, &err), 0);
	mb_msg_free((struct mb_msg **)&row.msg);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE uid = ?1", NULL, 5), 2);
}

static void
stored_fields(void **state)
{
	struct fx *f = *state;
	struct mb_msg *m = msg("Hi", "body", "id1@x", "p@x", (const char *const[]){ "r@x", "p@x",
	    NULL });
	sqlite3_stmt *st;

	m->to = mb_xcalloc(2, sizeof(*m->to));
	m->to[0].name = mb_xstrdup("Bob \"B\"");
	m->to[0].addr = mb_xstrdup("bob@example.org");
	m->to[1].addr = mb_xstrdup("carol@example.org");
	m->n_to = 2;
	m->cc = mb_xcalloc(1, sizeof(*m->cc));
	m->cc[0].name = mb_xstrdup("Dave");
	m->cc[0].addr = mb_xstrdup("dave@example.org");
	m->n_cc = 1;
	m->has_date = false;
	put(f, 9, m, MB_FLAG_ANSWERED);
	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx),
	    "SELECT from_text, recipients, to_json, cc_json, refs, date IS NULL, internaldate,"
	    " size FROM messages WHERE uid = 9", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(st, 0), "Alice Example <alice@example.org>");
	/* A display name that is not a plain phrase is quoted (RFC 5322). */
	assert_string_equal(sqlite3_column_text(st, 1),
	    "\"Bob \\\"B\\\"\" <bob@example.org>, carol@example.org, Dave <dave@example.org>");
	assert_string_equal(sqlite3_column_text(st, 2),
	    "[{\"name\":\"Bob \\\"B\\\"\",\"addr\":\"bob@example.org\"},"
	    "{\"name\":null,\"addr\":\"carol@example.org\"}]");
	assert_string_equal(sqlite3_column_text(st, 3),
	    "[{\"name\":\"Dave\",\"addr\":\"dave@example.org\"}]");
	assert_string_equal(sqlite3_column_text(st, 4), "r@x p@x");
	assert_int_equal(sqlite3_column_int(st, 5), 1);
	assert_int_equal(sqlite3_column_int64(st, 6), 1700000100);
	assert_int_equal(sqlite3_column_int64(st, 7), 1234);
	sqlite3_finalize(st);
	/* The JSON is JSON: SQLite's parser takes it. */
	assert_int_equal(q_int(f->idx, "SELECT json_array_length(to_json) FROM messages"
	    " WHERE uid = ?1", NULL, 9), 2);
	assert_int_equal(hits(f->idx, "recipients:carol"), 1);
	assert_int_equal(hits(f->idx, "from_text:alice"), 1);
}

/* m with one more To address (name may be NULL). */
static struct mb_msg *
with_to(struct mb_msg *m, const char *name, const char *addr)
{
	m->to = mb_xrealloc(m->to, (m->n_to + 1) * sizeof(*m->to));
	m->to[m->n_to++] = (struct mb_addr){ .name = name ? mb_xstrdup(name) : NULL,
	    .addr = mb_xstrdup(addr) };
	return m;
}

/*
 * A message that names one address twice (its From in To too, as a
 * reply-to-all does) fetched again with other recipients: the second
 * upsert is the stage's ON CONFLICT DO UPDATE, and SQLite runs the
 * triggers of an upsert's update under its ABORT rule, overriding the
 * OR IGNORE that folds the second naming into the first.  The update
 * must go through, and the contact rows follow it.
 */
static void
an_address_named_twice_survives_a_second_upsert(void **state)
{
	struct fx *f = *state;
	int64_t a, b;

	a = put(f, 9, with_to(msg("Re: plans", "see you", "t9@x", NULL, NULL),
	    "Alice", "alice@example.org"), 0);
	b = put(f, 9, with_to(with_to(msg("Re: plans", "see you", "t9@x", NULL, NULL),
	    "Alice", "alice@example.org"), "Bob", "bob@example.org"), 0);
	assert_int_equal(a, b);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM message_addrs WHERE msg = ?1",
	    NULL, a), 2);
	/* the first naming keeps its role: From */
	assert_int_equal(q_int(f->idx, "SELECT role FROM message_addrs WHERE addr = ?1",
	    "alice@example.org", 0), 0);
	assert_int_equal(q_int(f->idx, "SELECT role FROM message_addrs WHERE addr = ?1",
	    "bob@example.org", 0), 1);
	assert_int_equal(q_int(f->idx, "SELECT n FROM contact_stats WHERE addr = ?1",
	    "bob@example.org", 0), 1);
	assert_int_equal(q_int(f->idx, "SELECT n FROM contact_stats WHERE addr = ?1",
	    "alice@example.org", 0), 1);
}

/*
 * No trigger statement may rely on an OR conflict rule of its own: inside
 * the triggers of an upsert's DO UPDATE (the stage's flush) SQLite replaces
 * it with ABORT (an_address_named_twice_survives_a_second_upsert).  A
 * trigger handles a key it may meet with an upsert clause instead.
 */
static void
no_trigger_leans_on_a_conflict_rule(void **state)
{
	struct fx *f = *state;

	/*
	 * each trigger's SQL upper-cased, tabs and newlines as spaces, runs of
	 * spaces (?1: two) halved three times: any run of up to eight is one
	 */
	assert_int_equal(q_int(f->idx, "WITH t(s) AS (SELECT ' ' || upper(replace(replace(replace("
	    "replace(replace(sql, char(10), ' '), char(9), ' '), ?1, ' '), ?1, ' '), ?1, ' '))"
	    " || ' ' FROM sqlite_master"
	    " WHERE type = 'trigger')"
	    " SELECT count(*) FROM t WHERE s GLOB '* OR IGNORE *' OR s GLOB '* OR REPLACE *'"
	    " OR s GLOB '* OR ABORT *' OR s GLOB '* OR FAIL *' OR s GLOB '* OR ROLLBACK *'"
	    " OR s GLOB '*[ ;]REPLACE INTO *'", "  ", 0), 0);
}

static void
fts_follows_updates_and_deletes(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };

	put(f, 1, msg("Quarterly report", "the zeppelin lands at noon", "q@x", NULL, NULL), 0);
	assert_int_equal(hits(f->idx, "zeppelin"), 1);
	put(f, 1, msg("Quarterly report", "the submarine surfaces at dawn", "q@x", NULL, NULL), 0);
	assert_int_equal(hits(f->idx, "zeppelin"), 0);
	assert_int_equal(hits(f->idx, "submarine"), 1);
	assert_int_equal(hits(f->idx, "quarterly"), 1);
	mb_test_fts_consistent(f->idx);
	assert_int_equal(mb_index_delete(f->idx, f->inbox, 7, 1, &err), 0);
	assert_int_equal(hits(f->idx, "submarine"), 0);
	assert_int_equal(hits(f->idx, "quarterly"), 0);
	mb_test_fts_consistent(f->idx);
}

static void
flag_updates_do_not_reindex(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	int64_t segs;

	put(f, 1, msg("Stable", "words that do not change", "s@x", NULL, NULL), 0);
	segs = q_int(f->idx, "SELECT count(*) + ?1 FROM messages_fts_data", NULL, 0);
	/* A re-upsert with new flags only, and a flag sync. */
	put(f, 1, msg("Stable", "words that do not change", "s@x", NULL, NULL), MB_FLAG_SEEN);
	assert_int_equal(mb_index_update_flags(f->idx, f->inbox, 7, 1,
	    MB_FLAG_SEEN | MB_FLAG_ANSWERED, "$Label1 Work", 42, &err), 0);
	assert_int_equal(q_int(f->idx, "SELECT flags + modseq FROM messages WHERE uid = ?1",
	    NULL, 1), 3 + 42);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE keywords = ?1",
	    "$Label1 Work", 0), 1);
	assert_int_equal(mb_index_update_flags(f->idx, f->inbox, 7, 99, 0, NULL, 0, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_int_equal(q_int(f->idx, "SELECT count(*) + ?1 FROM messages_fts_data", NULL, 0),
	    segs);
	/* A text change does write to the index: the check above can fail. */
	put(f, 1, msg("Stable", "words that did change", "s@x", NULL, NULL), MB_FLAG_SEEN);
	assert_true(q_int(f->idx, "SELECT count(*) + ?1 FROM messages_fts_data", NULL, 0) > segs);
	mb_test_fts_consistent(f->idx);
}

/* Reconciliation writes a row only when its flag state changed. */
static void
flag_reconcile_skips_unchanged_rows(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	bool changed;

	put(f, 1, msg("One", "a", "r1@x", NULL, NULL), MB_FLAG_SEEN);
	assert_int_equal(mb_index_update_flags_changed(f->idx, f->inbox, 7, 1, MB_FLAG_SEEN, "",
	    0, &changed, &err), 0);
	assert_false(changed);
	assert_int_equal(mb_index_update_flags_changed(f->idx, f->inbox, 7, 1, MB_FLAG_FLAGGED,
	    "$Work", 9, &changed, &err), 0);
	assert_true(changed);
	assert_int_equal(q_int(f->idx, "SELECT flags * 100 + modseq FROM messages WHERE uid = ?1",
	    NULL, 1), MB_FLAG_FLAGGED * 100 + 9);
	/* No modseq sent (a server without CONDSTORE): the row's stays. */
	assert_int_equal(mb_index_update_flags_changed(f->idx, f->inbox, 7, 1, MB_FLAG_FLAGGED,
	    "$Work", 0, &changed, &err), 0);
	assert_false(changed);
	assert_int_equal(mb_index_update_flags_changed(f->idx, f->inbox, 7, 1, 0, NULL, 0,
	    &changed, &err), 0);
	assert_true(changed);
	assert_int_equal(q_int(f->idx, "SELECT modseq FROM messages WHERE uid = ?1 AND "
	    "keywords IS NULL", NULL, 1), 9);
	/* Not indexed (new mail): no error, nothing written. */
	assert_int_equal(mb_index_update_flags_changed(f->idx, f->inbox, 7, 99, 0, NULL, 0,
	    &changed, &err), 0);
	assert_false(changed);
}

static void
uid_count_and_list(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	uint32_t *uids, max;
	uint64_t n;
	size_t nu;

	assert_int_equal(mb_index_uid_count(f->idx, f->inbox, 7, 1, UINT32_MAX, &n, &max, &err), 0);
	assert_true(n == 0 && max == 0);
	assert_int_equal(mb_index_uids(f->idx, f->inbox, 7, 1, UINT32_MAX, &uids, &nu, &err), 0);
	assert_non_null(uids);
	assert_int_equal(nu, 0);
	free(uids);
	for (uint32_t u = 2; u <= 600; u += 2)
		put(f, u, msg("x", "y", NULL, NULL, NULL), 0);
	assert_int_equal(mb_index_uid_count(f->idx, f->inbox, 7, 1, 99, &n, &max, &err), 0);
	assert_true(n == 49 && max == 98);
	assert_int_equal(mb_index_uid_count(f->idx, f->inbox, 8, 1, 99, &n, &max, &err), 0);
	assert_true(n == 0 && max == 0);	/* another uidvalidity */
	assert_int_equal(mb_index_uids(f->idx, f->inbox, 7, 3, UINT32_MAX, &uids, &nu, &err), 0);
	assert_int_equal(nu, 299);
	assert_true(uids[0] == 4 && uids[298] == 600);
	free(uids);
}

static void
fts_folds_diacritics_and_stems(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("Lunch", "See you at the café on Friday", "c@x", NULL, NULL), 0);
	put(f, 2, msg("Planning", "Too many meetings this week", "d@x", NULL, NULL), 0);
	assert_int_equal(hits(f->idx, "cafe"), 1);
	assert_int_equal(hits(f->idx, "café"), 1);
	assert_int_equal(hits(f->idx, "meeting"), 1);
	assert_int_equal(hits(f->idx, "meetings"), 1);
	assert_int_equal(hits(f->idx, "lunch AND cafe"), 1);
	assert_int_equal(hits(f->idx, "submarine"), 0);
}

/* The highlight() of row uid's body for query, as "[word]" marks. */
static char *
highlighted(struct fx *f, uint32_t uid, const char *query)
{
	sqlite3_stmt *st;
	char *r;

	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx),
	    "SELECT highlight(messages_fts, 3, '[', ']') FROM messages_fts JOIN messages AS m"
	    " ON m.id = messages_fts.rowid WHERE messages_fts MATCH ?1 AND m.uid = ?2", -1, &st,
	    NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, query, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, uid);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	r = mb_xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return r;
}

#define assert_highlight(f, uid, query, want) do {				\
	char *h_ = highlighted((f), (uid), (query));				\
	assert_string_equal(h_, (want));					\
	free(h_);								\
} while (0)

/*
 * Compatibility forms and decomposed text match their plain spelling, in
 * the text and in the query alike (the tokenizer folds both), and the marks
 * of highlight() still fall on the bytes of the text as stored.
 */
static void
fts_folds_compatibility_forms_both_ways(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("a", "the \xef\xac\x81nancial report", "f1@x", NULL, NULL), 0);	/* U+FB01 */
	put(f, 2, msg("b", "the financial report", "f2@x", NULL, NULL), 0);
	put(f, 3, msg("c", "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 form \xe2\x91\xa0", "f3@x", NULL,
	    NULL), 0);							/* ＡＢＣ ① */
	put(f, 4, msg("d", "re\xcc\x81sume\xcc\x81 attached", "f4@x", NULL, NULL), 0);	/* NFD */
	put(f, 5, msg("e", "r\xc3\xa9sum\xc3\xa9 attached", "f5@x", NULL, NULL), 0);	/* NFC */
	assert_matches(f->idx, "financial", "1,2");
	assert_matches(f->idx, "\xef\xac\x81nancial", "1,2");
	assert_matches(f->idx, "\xef\xac\x81n*", "1,2");
	assert_matches(f->idx, "abc", "3");
	assert_matches(f->idx, "\xef\xbd\x81\xef\xbd\x82\xef\xbd\x83", "3");	/* ａｂｃ */
	assert_matches(f->idx, "\"form 1\"", "3");
	assert_matches(f->idx, "r\xc3\xa9sum\xc3\xa9", "4,5");
	assert_matches(f->idx, "re\xcc\x81sume\xcc\x81", "4,5");
	assert_matches(f->idx, "resume", "4,5");
	assert_highlight(f, 1, "financial", "the [\xef\xac\x81nancial] report");
	assert_highlight(f, 3, "abc", "[\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3] form \xe2\x91\xa0");
	assert_highlight(f, 4, "resume", "[re\xcc\x81sume\xcc\x81] attached");
	mb_test_fts_consistent(f->idx);
}

/*
 * Version-like identifiers (docs/normaliser.md): a token that glues letters
 * to digits also carries its digits, so the bare number finds the labelled
 * one; the labelled query stays specific and does not find the bare number.
 */
static void
fts_version_tokens_carry_their_digits(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("a", "upgrade to v4.2.1 today", "v1@x", NULL, NULL), 0);
	put(f, 2, msg("b", "upgrade to 4.2.1 today", "v2@x", NULL, NULL), 0);
	put(f, 3, msg("c", "release 4.2.1rc1 is out", "v3@x", NULL, NULL), 0);
	put(f, 4, msg("d", "meet at 10am", "v4@x", NULL, NULL), 0);
	assert_matches(f->idx, "\"4.2.1\"", "1,2,3");
	assert_matches(f->idx, "\"v4.2.1\"", "1");
	assert_matches(f->idx, "\"V4.2.1\"", "1");
	assert_matches(f->idx, "\"4.2.1rc1\"", "3");
	assert_matches(f->idx, "10", "4");
	assert_matches(f->idx, "10am", "4");
	assert_matches(f->idx, "v4*", "1");
	assert_highlight(f, 1, "\"4.2.1\"", "upgrade to [v4.2.1] today");
	mb_test_fts_consistent(f->idx);
}

static void
fts_segments_cjk(void **state)
{
	struct fx *f = *state;
	sqlite3_stmt *st;

	put(f, 1, msg("予定", "会議は月曜日です", "j1@x", NULL, NULL), 0);
	put(f, 2, msg("天気", "今日は晴れです", "j2@x", NULL, NULL), 0);
	put(f, 3, msg("회의", "내일 회의가 있습니다", "k1@x", NULL, NULL), 0);
	put(f, 4, msg("mixed", "Agenda: 会議 at 10, then lunch", "m1@x", NULL, NULL), 0);
	put(f, 5, msg("kana", "ｶｲｷﾞ and カタカナ", "h1@x", NULL, NULL), 0);
	put(f, 6, msg("one", "猫 sleeps", "o1@x", NULL, NULL), 0);

	assert_matches(f->idx, "会議", "1,4");	/* not 2, the unrelated CJK body */
	assert_matches(f->idx, "月曜日", "1");		/* a phrase of bigrams */
	assert_matches(f->idx, "会議は", "1");
	assert_matches(f->idx, "晴れ", "2");
	assert_matches(f->idx, "火曜日", "");
	assert_matches(f->idx, "회의", "3");
	assert_matches(f->idx, "カタカナ", "5");
	assert_matches(f->idx, "ｶｲｷﾞ", "5");
	assert_matches(f->idx, "猫", "6");		/* a one-character run */
	assert_matches(f->idx, "会*", "1,4");		/* prefix: bigrams starting with 会 */
	assert_matches(f->idx, "agenda AND lunch", "4");	/* Latin around CJK intact */
	assert_matches(f->idx, "subject:予定", "1");
	assert_matches(f->idx, "kana", "5");

	/* Offsets are right: highlight() marks exactly the matched characters. */
	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx),
	    "SELECT highlight(messages_fts, 3, '[', ']') FROM messages_fts"
	    " WHERE messages_fts MATCH ?1 ORDER BY rowid", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, "会議", -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(st, 0), "[会議]は月曜日です");
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(st, 0), "Agenda: [会議] at 10, then lunch");
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, "月曜日", -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(st, 0), "会議は[月曜日]です");
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, "lunch", -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(st, 0), "Agenda: 会議 at 10, then [lunch]");
	sqlite3_finalize(st);
}

static void
fts_cjk_survives_broken_utf8(void **state)
{
	struct fx *f = *state;
	sqlite3_stmt *st;

	/* A stray byte before the run, a truncated character after it. */
	put(f, 1, msg("broken", "\xff会議\xe4\xbc", "x1@x", NULL, NULL), 0);
	put(f, 2, msg("broken", "会\xe8", "x2@x", NULL, NULL), 0);
	assert_matches(f->idx, "会議", "1");
	assert_matches(f->idx, "会", "2");
	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx),
	    "SELECT highlight(messages_fts, 3, '[', ']') FROM messages_fts"
	    " WHERE messages_fts MATCH '会議'", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal(sqlite3_column_text(st, 0), "\xff[会議]\xe4\xbc");
	sqlite3_finalize(st);
	mb_test_fts_consistent(f->idx);
}

static void
bucket_counts(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	uint32_t c[4];
	static const uint32_t uids[] = { 1, 2, 3, 10, 11, 25, 39, 40 };

	for (size_t i = 0; i < MB_ARRAY_LEN(uids); i++)
		put(f, uids[i], msg("b", "b", NULL, NULL, NULL), 0);
	/* [1,11) [11,21) [21,31) [31,41) */
	assert_int_equal(mb_index_bucket_counts(f->idx, f->inbox, 7, 1, 10, 4, c, &err), 0);
	assert_int_equal(c[0], 4);
	assert_int_equal(c[1], 1);
	assert_int_equal(c[2], 1);
	assert_int_equal(c[3], 2);
	/* Another uidvalidity sees none of them. */
	assert_int_equal(mb_index_bucket_counts(f->idx, f->inbox, 6, 1, 10, 4, c, &err), 0);
	assert_int_equal(c[0] + c[1] + c[2] + c[3], 0);
	/* Buckets straddling the end of the UID space do not overflow. */
	assert_int_equal(mb_index_bucket_counts(f->idx, f->inbox, 7, UINT32_MAX - 5, 100, 4, c,
	    &err), 0);
	assert_int_equal(c[0], 0);
	assert_int_equal(mb_index_bucket_counts(f->idx, f->inbox, 7, 1, 0, 4, c, &err), -1);
}

static void
watermark_with_out_of_order_ranges(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	uint32_t box[30], wm;
	size_t n = 0;

	/* The mailbox holds 1..30 except 15 (expunged). */
	for (uint32_t u = 1; u <= 30; u++)
		if (u != 15)
			box[n++] = u;
	/* Range 21..30 completes first, then 1..10; 11..20 is still out. */
	for (uint32_t u = 21; u <= 30; u++)
		put(f, u, msg("w", "w", NULL, NULL, NULL), 0);
	assert_int_equal(mb_index_watermark(f->idx, f->inbox, 7, 0, box, n, &wm, &err), 0);
	assert_int_equal(wm, 0);
	for (uint32_t u = 1; u <= 10; u++)
		put(f, u, msg("w", "w", NULL, NULL, NULL), 0);
	assert_int_equal(mb_index_watermark(f->idx, f->inbox, 7, 0, box, n, &wm, &err), 0);
	assert_int_equal(wm, 10);
	/* 11..20 arrives (15 does not exist upstream): everything is in. */
	for (uint32_t u = 11; u <= 20; u++)
		if (u != 15)
			put(f, u, msg("w", "w", NULL, NULL, NULL), 0);
	assert_int_equal(mb_index_watermark(f->idx, f->inbox, 7, 10, box + 9, n - 9, &wm, &err),
	    0);
	assert_int_equal(wm, 30);
	/* A row the server no longer lists does not hide a gap after it. */
	static const uint32_t later[] = { 31, 33 };
	put(f, 32, msg("w", "w", NULL, NULL, NULL), 0);
	put(f, 31, msg("w", "w", NULL, NULL, NULL), 0);
	assert_int_equal(mb_index_watermark(f->idx, f->inbox, 7, 30, later, 2, &wm, &err), 0);
	assert_int_equal(wm, 32);
	/* Nothing listed above the old watermark: it stays. */
	assert_int_equal(mb_index_watermark(f->idx, f->inbox, 7, 30, NULL, 0, &wm, &err), 0);
	assert_int_equal(wm, 30);
}

static void
thread_reply_chain_joins(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("Plan", "a", "root@x", NULL, NULL), 0);
	put(f, 2, msg("Re: Plan", "b", "r1@x", "root@x", (const char *const[]){ "root@x", NULL }),
	    0);
	put(f, 3, msg("Re: Re: Plan", "c", "r2@x", "r1@x",
	    (const char *const[]){ "root@x", "r1@x", NULL }), 0);
	/* References only (no In-Reply-To) also joins. */
	put(f, 4, msg("Re: Plan", "d", "r3@x", NULL, (const char *const[]){ "root@x", NULL }), 0);
	assert_int_equal(thread_of(f, 2), thread_of(f, 1));
	assert_int_equal(thread_of(f, 3), thread_of(f, 1));
	assert_int_equal(thread_of(f, 4), thread_of(f, 1));
	/* A re-upsert keeps the thread. */
	int64_t t = thread_of(f, 1);
	put(f, 1, msg("Plan", "a2", "root@x", NULL, NULL), MB_FLAG_SEEN);
	assert_int_equal(thread_of(f, 1), t);
}

static void
thread_replies_to_missing_parent_join(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("Re: lost", "a", "c1@x", "gone@x", (const char *const[]){ "gone@x", NULL }),
	    0);
	put(f, 2, msg("Re: lost", "b", "c2@x", "gone@x", NULL), 0);
	put(f, 3, msg("unrelated", "c", "u@x", NULL, NULL), 0);
	assert_int_equal(thread_of(f, 1), thread_of(f, 2));
	assert_int_not_equal(thread_of(f, 3), thread_of(f, 1));
	/* The parent arrives later and lands in their thread. */
	put(f, 4, msg("lost", "d", "gone@x", NULL, NULL), 0);
	assert_int_equal(thread_of(f, 4), thread_of(f, 1));
}

static void
thread_linking_message_merges(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("A", "a", "a@x", NULL, NULL), 0);
	put(f, 2, msg("Re: A", "a", "a2@x", "a@x", NULL), 0);
	/* c names b, which is not indexed: a thread of its own, apart from a's. */
	put(f, 3, msg("Re: B", "c", "c@x", "b@x", NULL), 0);
	assert_int_not_equal(thread_of(f, 1), thread_of(f, 3));
	/* b replies to a: it links the two threads, which become one. */
	put(f, 4, msg("B", "b", "b@x", "a@x", NULL), 0);
	assert_int_equal(thread_of(f, 3), thread_of(f, 1));
	assert_int_equal(thread_of(f, 4), thread_of(f, 1));
	assert_int_equal(thread_of(f, 2), thread_of(f, 1));
	assert_int_equal(q_int(f->idx, "SELECT count(DISTINCT thread_id) FROM messages WHERE ?1 = 0",
	    NULL, 0), 1);
	/* A later reply to c also lands in the merged thread. */
	put(f, 5, msg("Re: Re: B", "e", "e@x", "c@x", NULL), 0);
	assert_int_equal(thread_of(f, 5), thread_of(f, 1));
}

static void
thread_merges_inside_one_batch(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_msg *m[5] = {
		msg("Re: B", "c", "c@x", "b@x", NULL),		/* waits for b */
		msg("A", "a", "a@x", NULL, NULL),
		msg("B", "b", "b@x", "a@x", NULL),		/* links c's thread to a's */
		msg("no id", "x", NULL, NULL, NULL),
		msg("no id", "y", NULL, NULL, NULL),
	};
	struct mb_index_row rows[5];

	for (int i = 0; i < 5; i++)
		rows[i] = (struct mb_index_row){ .folder_id = f->inbox, .uidvalidity = 7,
		    .uid = (uint32_t)i + 1, .msg = m[i] };
	assert_int_equal(mb_index_upsert_batch(f->idx, rows, 5, &err), 0);
	assert_int_equal(thread_of(f, 1), thread_of(f, 2));
	assert_int_equal(thread_of(f, 3), thread_of(f, 2));
	/* Two id-less messages staged together still get a thread each. */
	assert_int_not_equal(thread_of(f, 4), thread_of(f, 5));
	assert_int_not_equal(thread_of(f, 4), thread_of(f, 1));
	assert_int_equal(q_int(f->idx, "SELECT count(DISTINCT thread_id) FROM messages WHERE ?1 = 0",
	    NULL, 0), 3);
	for (int i = 0; i < 5; i++)
		mb_msg_free(&m[i]);
}

static void
thread_never_by_subject(void **state)
{
	struct fx *f = *state;

	put(f, 1, msg("Hello", "a", "h1@x", NULL, NULL), 0);
	put(f, 2, msg("Re: Hello", "b", "h2@x", NULL, NULL), 0);
	put(f, 3, msg("Hello", "c", NULL, NULL, NULL), 0);
	put(f, 4, msg("Hello", "d", NULL, NULL, NULL), 0);
	assert_int_not_equal(thread_of(f, 1), thread_of(f, 2));
	assert_int_not_equal(thread_of(f, 3), thread_of(f, 4));
	assert_int_not_equal(thread_of(f, 3), thread_of(f, 1));
	/* A message with no ids keeps its own thread when re-upserted. */
	int64_t t = thread_of(f, 3);
	put(f, 3, msg("Hello", "c", NULL, NULL, NULL), MB_FLAG_SEEN);
	assert_int_equal(thread_of(f, 3), t);
}

static void
attachments_replaced_and_cascade(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_msg *m = msg("files", "see attached", "att@x", NULL, NULL);
	int64_t id;

	m->attachments = mb_xcalloc(2, sizeof(*m->attachments));
	m->attachments[0].filename = mb_xstrdup("a.pdf");
	m->attachments[0].mime_type = mb_xstrdup("application/pdf");
	m->attachments[0].size = 100;
	memcpy(m->attachments[0].sha256, "ab", 3);
	m->attachments[1].filename = mb_xstrdup("b.png");
	m->attachments[1].mime_type = mb_xstrdup("image/png");
	m->attachments[1].content_id = mb_xstrdup("img1@x");
	m->attachments[1].is_inline = true;
	m->n_attachments = 2;
	id = put(f, 1, m, 0);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM attachments WHERE message_id = ?1",
	    NULL, id), 2);
	assert_int_equal(q_int(f->idx, "SELECT attachment_count FROM messages WHERE id = ?1",
	    NULL, id), 2);
	/* The names are searchable from the insert on (att_names, set in the stage). */
	assert_int_equal(hits(f->idx, "att_names:pdf"), 1);

	m = msg("files", "see attached", "att@x", NULL, NULL);
	m->attachments = mb_xcalloc(1, sizeof(*m->attachments));
	m->attachments[0].filename = mb_xstrdup("c.txt");
	m->attachments[0].mime_type = mb_xstrdup("text/plain");
	m->n_attachments = 1;
	assert_int_equal(put(f, 1, m, 0), id);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM attachments WHERE message_id = ?1",
	    NULL, id), 1);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM attachments WHERE filename = ?1",
	    "c.txt", 0), 1);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM attachments WHERE filename = ?1",
	    "a.pdf", 0), 0);
	assert_int_equal(hits(f->idx, "att_names:pdf"), 0);
	assert_int_equal(hits(f->idx, "att_names:txt"), 1);
	/* Re-upserted without attachments: nothing of them is left to find. */
	assert_int_equal(put(f, 1, msg("files", "see attached", "att@x", NULL, NULL), 0), id);
	assert_int_equal(hits(f->idx, "att_names:txt"), 0);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE id = ?1"
	    " AND att_names IS NULL AND att_text IS NULL", NULL, id), 1);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM attachments WHERE message_id = ?1",
	    NULL, id), 0);
	assert_int_equal(mb_index_delete(f->idx, f->inbox, 7, 1, &err), 0);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM attachments WHERE ?1 = 0", NULL, 0),
	    0);
}

static void
batch_is_all_or_none(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_index_row rows[3];
	struct mb_msg *m[3];

	for (int i = 0; i < 3; i++) {
		m[i] = msg("batch", "batch body", NULL, NULL, NULL);
		rows[i] = (struct mb_index_row){ .folder_id = f->inbox, .uidvalidity = 7,
		    .uid = (uint32_t)i + 1, .msg = m[i] };
	}
	rows[2].uid = 0;	/* invalid: the whole batch must fail */
	assert_int_equal(mb_index_upsert_batch(f->idx, rows, 3, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 0);
	rows[2].uid = 3;
	mb_err_clear(&err);
	assert_int_equal(mb_index_upsert_batch(f->idx, rows, 3, &err), 0);
	assert_int_equal(hits(f->idx, "batch"), 3);
	/* Inside the caller's transaction, a rollback undoes the batch. */
	for (int i = 0; i < 3; i++)
		rows[i].uid += 10;
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	assert_int_equal(mb_index_upsert_batch(f->idx, rows, 3, &err), 0);
	mb_index_rollback(f->idx);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 3);
	for (int i = 0; i < 3; i++)
		mb_msg_free(&m[i]);
}

/*
 * syncd's writer: several batches staged in one transaction, then one flush.
 * Staging needs the caller's transaction; a rollback drops what was staged;
 * a key staged twice is one row; the flushed rows are searchable and threaded.
 */
static void
stage_then_flush_in_one_transaction(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_index_row rows[4];
	struct mb_msg *m[4];

	m[0] = msg("grouped one", "alpha", "g1@x", NULL, NULL);
	m[1] = msg("grouped two", "beta", "g2@x", "g1@x", NULL);
	m[2] = msg("grouped three", "gamma", "g3@x", NULL, NULL);
	m[3] = msg("grouped three again", "delta", "g3@x", NULL, NULL);
	for (int i = 0; i < 4; i++)
		rows[i] = (struct mb_index_row){ .folder_id = f->inbox, .uidvalidity = 7,
		    .uid = (uint32_t)(i < 3 ? i + 1 : 3), .msg = m[i] };
	assert_int_equal(mb_index_stage(f->idx, rows, 2, &err), -1);	/* no transaction */
	assert_int_equal(err.code, MB_E_INVALID);
	mb_err_clear(&err);
	assert_int_equal(mb_index_flush(f->idx, &err), -1);
	mb_err_clear(&err);

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	assert_int_equal(mb_index_stage(f->idx, rows, 2, &err), 0);
	mb_index_rollback(f->idx);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 0);

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	assert_int_equal(mb_index_stage(f->idx, rows, 2, &err), 0);	/* one range */
	assert_int_equal(mb_index_stage(f->idx, rows + 2, 2, &err), 0);	/* another */
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 0);
	assert_int_equal(mb_index_flush(f->idx, &err), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	assert_int_equal(q_int(f->idx, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 3);
	assert_int_equal(hits(f->idx, "grouped"), 3);
	assert_int_equal(hits(f->idx, "delta"), 1);	/* the later staging of uid 3 won */
	assert_int_equal(hits(f->idx, "gamma"), 0);
	assert_int_equal(thread_of(f, 1), thread_of(f, 2));
	assert_true(thread_of(f, 1) != thread_of(f, 3));
	mb_test_fts_consistent(f->idx);
	for (int i = 0; i < 4; i++)
		mb_msg_free(&m[i]);
}

static void
folder_state_round_trip(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_folder_state st, *list = NULL;
	size_t n = 0;
	int64_t id, again;

	assert_int_equal(mb_index_folder_ensure(f->idx, "Archive/2020 Ü", "\\Archive", &id, &err),
	    0);
	assert_int_equal(mb_index_folder_ensure(f->idx, "Archive/2020 Ü", NULL, &again, &err), 0);
	assert_int_equal(id, again);
	assert_int_equal(mb_index_folder_get(f->idx, "Archive/2020 Ü", &st, &err), 0);
	assert_string_equal(st.role, "\\Archive");	/* NULL role kept the old one */
	assert_int_equal(st.uidvalidity, 0);
	st.uidvalidity = 4000000000u;
	st.uidnext = 101;
	st.highestmodseq = 9000000000ull;
	st.watermark = 100;
	st.last_sync = 1700000000;
	assert_int_equal(mb_index_folder_update(f->idx, &st, &err), 0);
	mb_folder_state_release(&st);
	assert_int_equal(mb_index_folder_get(f->idx, "Archive/2020 Ü", &st, &err), 0);
	assert_int_equal(st.uidvalidity, 4000000000u);
	assert_int_equal(st.uidnext, 101);
	assert_true(st.highestmodseq == 9000000000ull);
	assert_int_equal(st.watermark, 100);
	assert_int_equal(st.last_sync, 1700000000);
	mb_folder_state_release(&st);
	assert_int_equal(mb_index_folder_get(f->idx, "Nope", &st, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_int_equal(mb_index_folder_list(f->idx, &list, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].name, "Archive/2020 Ü");
	assert_string_equal(list[1].name, "INBOX");
	assert_null(list[1].role);
	mb_folder_list_free(&list, n);
}

static void
backup_is_a_readable_copy(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_index *copy = NULL;
	char dest[160];

	put(f, 1, msg("Backup me", "会議は月曜日です", "b1@x", NULL, NULL), 0);
	put(f, 2, msg("And me", "the zeppelin", "b2@x", "b1@x", NULL), 0);
	snprintf(dest, sizeof(dest), "%s/backup.db", f->dir);
	assert_int_equal(mb_index_backup(f->idx, dest, &err), 0);
	/* Writes after the backup are not in it. */
	put(f, 3, msg("Later", "later", "b3@x", NULL, NULL), 0);
	assert_int_equal(mb_index_open(dest, MB_INDEX_RO, &copy, &err), 0);
	/* A rollback-journal file: no stale -wal can be replayed into it. */
	assert_int_equal(q_int(copy, "SELECT journal_mode = 'delete' AND ?1 = 0"
	    " FROM pragma_journal_mode", NULL, 0), 1);
	assert_int_equal(q_int(copy, "SELECT count(*) FROM messages WHERE ?1 = 0", NULL, 0), 2);
	assert_int_equal(hits(copy, "会議"), 1);
	assert_int_equal(hits(copy, "zeppelin"), 1);
	assert_int_equal(q_int(copy, "SELECT count(DISTINCT thread_id) FROM messages WHERE ?1 = 0",
	    NULL, 0), 1);
	mb_index_close(&copy);
	/* The FTS index in the copy agrees with its messages (a check that writes). */
	assert_int_equal(mb_index_open(dest, MB_INDEX_RW, &copy, &err), 0);
	mb_test_fts_consistent(copy);
	mb_index_close(&copy);
}

/* The account's own addresses: bare and "Name <addr>" forms, lower-cased, replaced whole. */
static void
account_addresses_replace_and_read(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	const struct mb_account_address first[] = {
		{ "Anna@Example.ORG", "IMAP_USER" },
		{ "\"Smith, Anna\" <anna.smith@Work.example>", "DRAFT_FROM" },
		{ "anna@example.org", "MY_ADDRESSES" },	/* a duplicate keeps one row */
		{ "not-an-address", "MY_ADDRESSES" },	/* skipped */
	};
	const struct mb_account_address second[] = { { "new@example.net", "IMAP_USER" } };
	char **list = NULL;
	char *a;

	assert_int_equal(mb_account_set_addresses(f->idx, first, 4, &err), 0);
	assert_int_equal(mb_account_addresses(f->idx, &list, &err), 0);
	assert_non_null(list[0]);
	assert_string_equal(list[0], "anna.smith@work.example");
	assert_string_equal(list[1], "anna@example.org");
	assert_null(list[2]);
	mb_account_addresses_free(&list);
	assert_null(list);

	assert_int_equal(mb_account_set_addresses(f->idx, second, 1, &err), 0);
	assert_int_equal(mb_account_addresses(f->idx, &list, &err), 0);
	assert_string_equal(list[0], "new@example.net");
	assert_null(list[1]);
	mb_account_addresses_free(&list);

	assert_null(mb_account_address_of("no address here"));
	assert_null(mb_account_address_of(NULL));
	a = mb_account_address_of("  Bob <<b@x.example> ");
	assert_string_equal(a, "b@x.example");
	free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(migrations_apply_once, setup, teardown),
		cmocka_unit_test_setup_teardown(newer_schema_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(ro_refuses_missing_or_uninitialised, setup, teardown),
		cmocka_unit_test_setup_teardown(ro_handle_cannot_write_but_can_search, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(ro_reader_is_not_blocked_by_the_writer, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(second_upsert_updates_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(an_address_named_twice_survives_a_second_upsert,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(no_trigger_leans_on_a_conflict_rule, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(stored_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(fts_follows_updates_and_deletes, setup, teardown),
		cmocka_unit_test_setup_teardown(flag_updates_do_not_reindex, setup, teardown),
		cmocka_unit_test_setup_teardown(flag_reconcile_skips_unchanged_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(uid_count_and_list, setup, teardown),
		cmocka_unit_test_setup_teardown(fts_folds_diacritics_and_stems, setup, teardown),
		cmocka_unit_test_setup_teardown(fts_segments_cjk, setup, teardown),
		cmocka_unit_test_setup_teardown(fts_folds_compatibility_forms_both_ways, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(fts_version_tokens_carry_their_digits, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(fts_cjk_survives_broken_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(bucket_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(watermark_with_out_of_order_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(thread_reply_chain_joins, setup, teardown),
		cmocka_unit_test_setup_teardown(thread_replies_to_missing_parent_join, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(thread_linking_message_merges, setup, teardown),
		cmocka_unit_test_setup_teardown(thread_merges_inside_one_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(thread_never_by_subject, setup, teardown),
		cmocka_unit_test_setup_teardown(attachments_replaced_and_cascade, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_is_all_or_none, setup, teardown),
		cmocka_unit_test_setup_teardown(stage_then_flush_in_one_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(folder_state_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(backup_is_a_readable_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(account_addresses_replace_and_read, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
