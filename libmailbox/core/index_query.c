/*
 * What the readers of a compiled query share (index-private.h): the read
 * transaction a multi-statement answer runs in.  The filters' SQL and binds
 * are the search's (search-private.h), used by the overviews too.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "mailbox/err.h"
#include "mailbox/index.h"
#include "mailbox/query.h"

#include "index-private.h"

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
