/*
 * What a reader's handle adds to the index (include/mailbox/index.h,
 * index-private.h): statements cached by the address of their SQL, for
 * the modules that keep their SQL beside the code (index_search.c,
 * index_read.c), copies of column values, and the reader's connection
 * options (per-thread handles, mmap).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/util.h"

#include "index-private.h"

sqlite3_stmt *
idx_stmt_sql(struct mb_index *idx, const char *sql, struct mb_err *err)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int rc;

	for (i = 0; i < IDX_SQL_CACHE && idx->by_sql[i].sql != NULL; i++)
		if (idx->by_sql[i].sql == sql) {
			sqlite3_reset(idx->by_sql[i].st);
			sqlite3_clear_bindings(idx->by_sql[i].st);
			return idx->by_sql[i].st;
		}
	if (MB_NEVER(i == IDX_SQL_CACHE)) {
		mb_err_set(err, MB_E_INTERNAL, "index: statement cache full");
		return NULL;
	}
	rc = sqlite3_prepare_v3(idx->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK) {
		idx_sqlerr(idx, rc, "prepare", err);
		sqlite3_finalize(st);
		return NULL;
	}
	idx->by_sql[i].sql = sql;
	idx->by_sql[i].st = st;
	return st;
}


char *
idx_col_text(sqlite3_stmt *st, int col, size_t *len_r)
{
	const unsigned char *s;
	size_t len;
	char *p;

	if (len_r != NULL)
		*len_r = 0;
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return NULL;
	s = sqlite3_column_text(st, col);
	len = (size_t)sqlite3_column_bytes(st, col);
	p = mb_xmalloc(len + 1);
	if (len > 0)
		memcpy(p, s, len);
	p[len] = '\0';
	if (len_r != NULL)
		*len_r = len;
	return p;
}

/*
 * Serialized mode (Debian's default) puts a mutex around every call on a
 * connection, and the allocation statistics a global mutex around every
 * malloc: for a reader whose handles never change threads that only cost
 * 5-15% of a search's CPU, measured.  Multi-thread mode keeps SQLite's own
 * shared state locked.  sqlite3_config() fails harmlessly once SQLite is in
 * use, hence "before the first open".
 */
void
mb_index_per_thread_handles(void)
{
	(void)sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int
mb_index_set_mmap(struct mb_index *idx, int64_t max_bytes, struct mb_err *err)
{
	char sql[64];
	int rc;

	/* a number, formatted here: PRAGMA takes no bound parameter */
	snprintf(sql, sizeof(sql), "PRAGMA mmap_size = %lld", (long long)max_bytes);
	rc = sqlite3_exec(idx->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : idx_sqlerr(idx, rc, "mmap_size", err);
}

int
idx_one_int64(struct mb_index *idx, const char *sql, const char *text, const char *what,
    int64_t *v_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	int rc;

	if (st == NULL)
		return -1;
	if (text != NULL)
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v_r = sqlite3_column_int64(st, 0);
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, what, err);
}

int
idx_max_id(struct mb_index *idx, const char *what, int64_t *max_r, struct mb_err *err)
{
	return idx_one_int64(idx, "SELECT coalesce(max(id), 0) FROM messages", NULL, what, max_r,
	    err);
}
