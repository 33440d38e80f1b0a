/*
 * What every reader of a compiled query shares (index-private.h): the
 * binds of its filters, its folder's id, and the read transaction a
 * multi-statement answer runs in.  The search (index_search.c) and the
 * overviews (index_overview.c, index_contacts.c) use these, so a filter
 * the query language gains reaches them all at once.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "mailbox/err.h"
#include "mailbox/index.h"
#include "mailbox/query.h"

#include "index-private.h"

void
idx_query_bind(sqlite3_stmt *st, const struct mb_query *q, int64_t folder_id)
{
	if (q->match)
		sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
	if (q->folder)
		sqlite3_bind_int64(st, 2, folder_id);
	if (q->since != INT64_MIN)
		sqlite3_bind_int64(st, 3, q->since);
	if (q->until != INT64_MAX)
		sqlite3_bind_int64(st, 4, q->until);
	sqlite3_bind_int64(st, 5, q->flags_set);
	sqlite3_bind_int64(st, 6, q->flags_clear);
	if (q->has_attachment >= 0)
		sqlite3_bind_int(st, 7, q->has_attachment);
}

int
idx_folder_id(struct mb_index *idx, const char *name, int64_t *id_r, struct mb_err *err)
{
	struct mb_folder_state fs;

	if (mb_index_folder_get(idx, name, &fs, err) == -1)
		return -1;
	*id_r = fs.id;
	mb_folder_state_release(&fs);
	return 0;
}

static const char begin_sql[] = "BEGIN";
static const char commit_sql[] = "COMMIT";

/* Step one of the transaction statements. */
static int
txn_step(struct mb_index *idx, const char *sql, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	int rc;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, sql, err);
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
idx_read_begin(struct mb_index *idx, struct mb_err *err)
{
	struct mb_err ignored = { 0 };

	/* a COMMIT that failed would leave the connection in the transaction */
	if (!sqlite3_get_autocommit(idx->db))
		(void)txn_step(idx, commit_sql, &ignored);
	return txn_step(idx, begin_sql, err);
}

void
idx_read_end(struct mb_index *idx)
{
	struct mb_err ignored = { 0 };

	/* a read transaction: failing to end it loses nothing (idx_read_begin retries) */
	(void)txn_step(idx, commit_sql, &ignored);
}

int
idx_page_check(int64_t offset, size_t limit, size_t max, struct mb_err *err)
{
	if (limit < 1 || limit > max)
		return mb_err_set(err, MB_E_INVALID, "limit must be between 1 and %zu", max);
	if (offset < 0 || offset > INT64_MAX / 2)
		return mb_err_set(err, MB_E_INVALID, "offset out of range");
	return 0;
}

int
idx_page_step(sqlite3_stmt *st, size_t n, size_t limit, bool *more_r)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW && n == limit) {
		*more_r = true;
		return SQLITE_DONE;
	}
	return rc;
}
