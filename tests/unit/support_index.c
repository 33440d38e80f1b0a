#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "support_index.h"

void
mb_test_folder_examined(struct mb_index *idx, const char *name)
{
	struct mb_folder_state st;
	struct mb_err err = { 0 };

	if (mb_index_folder_get(idx, name, &st, &err) == -1)
		mb_fatalx("test index: %s", err.msg);
	st.uidvalidity = 1;
	if (mb_index_folder_update(idx, &st, &err) == -1)
		mb_fatalx("test index: %s", err.msg);
	mb_folder_state_release(&st);
}

void
mb_test_put(struct mb_index *idx, int64_t folder, uint32_t uid, const struct mb_test_msg *t)
{
	struct mb_msg *m = mb_msg_new();
	struct mb_index_row row = { .folder_id = folder,
	    .uidvalidity = t->uidvalidity ? t->uidvalidity : 1, .uid = uid,
	    .flags = t->flags, .keywords = t->keywords, .internaldate = t->internaldate,
	    .size = t->size ? t->size : 100,
	    .headers_only = t->headers_only, .msg = m };
	struct mb_err err = { 0 };

	m->subject = mb_xstrdup(t->subject);
	m->from.addr = mb_xstrdup(t->from == NULL ? "alice@example.com" : *t->from ? t->from : NULL);
	m->from.name = mb_xstrdup(t->from_name);
	if (t->to) {
		m->to = mb_xcalloc(1, sizeof(*m->to));
		m->to[0].addr = mb_xstrdup(t->to);
		m->to[0].name = mb_xstrdup(t->to_name);
		m->n_to = 1;
	}
	if (t->cc) {
		m->cc = mb_xcalloc(1, sizeof(*m->cc));
		m->cc[0].addr = mb_xstrdup(t->cc);
		m->n_cc = 1;
	}
	free(m->body);
	m->body = mb_xstrdup(t->body ? t->body : "");
	m->body_len = strlen(m->body);
	m->has_date = t->date != 0;
	m->date = t->date;
	m->message_id = mb_xstrdup(t->message_id);
	m->in_reply_to = mb_xstrdup(t->in_reply_to);
	if (mb_index_upsert(idx, &row, NULL, &err) == -1)
		mb_fatalx("test index: %s", err.msg);
	mb_msg_free(&m);
}

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void
mb_test_rmtree(const char *dir)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

void
mb_test_index_open(struct mb_test_index *t, const char *tag)
{
	struct mb_err err = { 0 };

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/%s.XXXXXX", tag);
	if (mkdtemp(t->dir) == NULL)
		mb_fatal("mkdtemp %s", t->dir);
	snprintf(t->path, sizeof(t->path), "%s/index.db", t->dir);
	if (mb_index_open(t->path, MB_INDEX_RW, &t->idx, &err) == -1 ||
	    mb_index_folder_ensure(t->idx, "INBOX", NULL, &t->inbox, &err) == -1)
		mb_fatalx("test index: %s", err.msg);
	mb_test_folder_examined(t->idx, "INBOX");
}

struct mb_index *
mb_test_index_reader(struct mb_test_index *t)
{
	struct mb_err err = { 0 };

	if (t->ro == NULL && mb_index_open(t->path, MB_INDEX_RO, &t->ro, &err) == -1)
		mb_fatalx("test index: read-only: %s", err.msg);
	return t->ro;
}

void
mb_test_index_close(struct mb_test_index *t)
{
	mb_index_close(&t->ro);
	mb_index_close(&t->idx);
	mb_test_rmtree(t->dir);
}

int
mb_test_index_setup(void **state)
{
	struct mb_test_index *t = mb_xcalloc(1, sizeof(*t));

	mb_test_index_open(t, "mb_test_index");
	*state = t;
	return 0;
}

int
mb_test_index_teardown(void **state)
{
	struct mb_test_index *t = *state;

	mb_test_index_close(t);
	free(t);
	return 0;
}

struct sqlite3 *
mb_test_index_lock(struct mb_test_index *t)
{
	sqlite3 *db = NULL;

	sqlite3_busy_timeout(mb_index_db(t->idx), 50);
	if (sqlite3_open(t->path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		mb_fatalx("test index: lock: %s", sqlite3_errmsg(db));
	return db;
}

void
mb_test_index_unlock(struct sqlite3 **dbp)
{
	sqlite3_exec(*dbp, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(*dbp);
	*dbp = NULL;
}

int64_t
mb_test_index_int(struct mb_test_index *t, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(mb_index_db(t->idx), sql, -1, &st, NULL) != SQLITE_OK)
		mb_fatalx("test index: %s: %s", sql, sqlite3_errmsg(mb_index_db(t->idx)));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

void
mb_test_fts_consistent(struct mb_index *idx)
{
	char *msg = NULL;

	if (sqlite3_exec(mb_index_db(idx),
	    "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)",
	    NULL, NULL, &msg) != SQLITE_OK)
		mb_fatalx("fts integrity-check: %s", msg);
}

size_t
mb_test_bm25_order_where(struct mb_index *idx, const char *text, const char *where,
    int64_t *ids, size_t max)
{
	char sql[2048];
	struct mb_query q;
	struct mb_err err = { 0 };
	sqlite3_stmt *st;
	size_t n = 0;
	int rc;

	snprintf(sql, sizeof(sql),
	    "SELECT m.id FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid "
	    "WHERE messages_fts MATCH ?1 AND (%s) ORDER BY bm25(messages_fts, 10.0, 4.0, 2.0, "
	    "1.0, 4.0, 1.0), m.sort_date DESC NULLS LAST, m.id DESC", where);
	mb_query_init(&q);
	if (mb_query_compile(text, strlen(text), &q, &err) == -1)
		mb_fatalx("test index: query \"%s\": %s", text, err.msg);
	if (sqlite3_prepare_v2(mb_index_db(idx), sql, -1, &st, NULL) != SQLITE_OK)
		mb_fatalx("test index: %s", sqlite3_errmsg(mb_index_db(idx)));
	sqlite3_bind_text(st, 1, q.match, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == max)
			mb_fatalx("test index: \"%s\" matches more than %zu", text, max);
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE)
		mb_fatalx("test index: %s", sqlite3_errmsg(mb_index_db(idx)));
	sqlite3_finalize(st);
	mb_query_release(&q);
	return n;
}

size_t
mb_test_bm25_order(struct mb_index *idx, const char *text, int64_t *ids, size_t max)
{
	return mb_test_bm25_order_where(idx, text, "1", ids, max);
}

size_t
mb_test_rank_build(struct mb_test_index *t)
{
	struct mb_err err = { 0 };
	size_t built = 0;

	if (mb_index_rank_build(t->idx, 1, 1000, &built, &err) == -1)
		mb_fatalx("test index: rank build: %s", err.msg);
	return built;
}

double
mb_test_bm25_of(struct mb_index *idx, const char *text, int64_t id)
{
	struct mb_query q;
	struct mb_err err = { 0 };
	sqlite3_stmt *st;
	double score;

	mb_query_init(&q);
	if (mb_query_compile(text, strlen(text), &q, &err) == -1)
		mb_fatalx("test index: query \"%s\": %s", text, err.msg);
	if (sqlite3_prepare_v2(mb_index_db(idx), "SELECT bm25(messages_fts, 10.0, 4.0, 2.0, 1.0, "
	    "4.0, 1.0) FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid = ?2", -1, &st,
	    NULL) != SQLITE_OK)
		mb_fatalx("test index: %s", sqlite3_errmsg(mb_index_db(idx)));
	sqlite3_bind_text(st, 1, q.match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		mb_fatalx("test index: \"%s\" does not match id %lld", text, (long long)id);
	score = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	mb_query_release(&q);
	return score;
}
