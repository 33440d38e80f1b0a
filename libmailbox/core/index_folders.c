/* Per-folder sync state in the folders table: see include/mailbox/index.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/util.h"

#include "index-private.h"

void
mb_folder_state_release(struct mb_folder_state *st)
{
	if (st == NULL)
		return;
	free(st->name);
	free(st->role);
	st->name = NULL;
	st->role = NULL;
}

void
mb_folder_list_free(struct mb_folder_state **listp, size_t n)
{
	if (*listp == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		mb_folder_state_release(&(*listp)[i]);
	free(*listp);
	*listp = NULL;
}

/* Columns id, name, role, uidvalidity, uidnext, highestmodseq, watermark, last_sync,
 * absent_ticks, role_source, left_out, flag_cursor. */
static void
folder_from_row(sqlite3_stmt *st, struct mb_folder_state *f)
{
	f->id = sqlite3_column_int64(st, 0);
	f->name = mb_xstrdup((const char *)sqlite3_column_text(st, 1));
	f->role = mb_xstrdup((const char *)sqlite3_column_text(st, 2));
	f->uidvalidity = (uint32_t)sqlite3_column_int64(st, 3);
	f->uidnext = (uint32_t)sqlite3_column_int64(st, 4);
	f->highestmodseq = (uint64_t)sqlite3_column_int64(st, 5);
	f->watermark = (uint32_t)sqlite3_column_int64(st, 6);
	f->last_sync = sqlite3_column_int64(st, 7);
	f->absent_ticks = (unsigned)sqlite3_column_int64(st, 8);
	f->role_by_name = f->role != NULL && sqlite3_column_text(st, 9) != NULL &&
	    strcmp((const char *)sqlite3_column_text(st, 9), "name") == 0;
	f->left_out = sqlite3_column_int(st, 10) != 0;
	f->flag_cursor = (uint32_t)sqlite3_column_int64(st, 11);
}

int
mb_index_folder_ensure(struct mb_index *idx, const char *name, const char *role,
    int64_t *id_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	if (name == NULL || *name == '\0')
		return mb_err_set(err, MB_E_INVALID, "index: empty folder name");
	st = idx_stmt(idx, IDX_FOLDER_ENSURE, err);
	if (st == NULL)
		return -1;
	idx_bind_text(st, 1, name);
	idx_bind_text(st, 2, role);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		idx_sqlerr(idx, rc, "folder ensure", err);
		idx_stmt_done(st);
		return -1;
	}
	*id_r = sqlite3_column_int64(st, 0);
	/* Step to the end: RETURNING completes its write only then. */
	return idx_step_done(idx, st, "folder ensure", err);
}

int
mb_index_folder_get(struct mb_index *idx, const char *name, struct mb_folder_state *st_r,
    struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	memset(st_r, 0, sizeof(*st_r));
	st = idx_stmt(idx, IDX_FOLDER_GET, err);
	if (st == NULL)
		return -1;
	idx_bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		folder_from_row(st, st_r);
	else if (rc == SQLITE_DONE)
		mb_err_set(err, MB_E_NOTFOUND, "index: no folder '%s'", name);
	else
		idx_sqlerr(idx, rc, "folder get", err);
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

int
mb_index_folder_update(struct mb_index *idx, const struct mb_folder_state *f,
    struct mb_err *err)
{
	sqlite3_stmt *st;

	st = idx_stmt(idx, IDX_FOLDER_UPDATE, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, f->id);
	idx_bind_text(st, 2, f->role);
	sqlite3_bind_int64(st, 3, f->uidvalidity);
	sqlite3_bind_int64(st, 4, f->uidnext);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)f->highestmodseq);
	sqlite3_bind_int64(st, 6, f->watermark);
	sqlite3_bind_int64(st, 7, f->last_sync);
	sqlite3_bind_int(st, 8, f->role_by_name);
	sqlite3_bind_int64(st, 9, f->flag_cursor);
	if (idx_step_done(idx, st, "folder update", err) == -1)
		return -1;
	if (sqlite3_changes(idx->db) == 0)
		return mb_err_set(err, MB_E_NOTFOUND, "index: no folder with id %lld",
		    (long long)f->id);
	return 0;
}

int
mb_index_folder_list(struct mb_index *idx, struct mb_folder_state **list_r, size_t *n_r,
    struct mb_err *err)
{
	struct mb_folder_state *list = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int rc;

	*list_r = NULL;
	*n_r = 0;
	st = idx_stmt(idx, IDX_FOLDER_LIST, err);
	if (st == NULL)
		return -1;
	for (rc = sqlite3_step(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			list = mb_xrealloc(list, cap * sizeof(*list));
		}
		folder_from_row(st, &list[n++]);
	}
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		mb_folder_list_free(&list, n);
		return idx_sqlerr(idx, rc, "folder list", err);
	}
	*list_r = list;
	*n_r = n;
	return 0;
}

int
mb_index_folder_presence(struct mb_index *idx, int64_t id, bool listed, bool wanted,
    unsigned *absent_r, struct mb_err *err)
{
	static const char sql[] = "UPDATE folders SET absent_ticks = CASE WHEN ?2 AND ?3 THEN 0 "
	    "ELSE absent_ticks + 1 END, left_out = ?2 AND NOT ?3 WHERE id = ?1 "
	    "RETURNING absent_ticks";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	int rc;

	*absent_r = 0;
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, listed);
	sqlite3_bind_int(st, 3, wanted);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		idx_stmt_done(st);
		return mb_err_set(err, MB_E_NOTFOUND, "index: no folder with id %lld",
		    (long long)id);
	}
	if (rc != SQLITE_ROW) {
		idx_sqlerr(idx, rc, "folder presence", err);
		idx_stmt_done(st);
		return -1;
	}
	*absent_r = (unsigned)sqlite3_column_int64(st, 0);
	/* Step to the end: RETURNING completes its write only then. */
	return idx_step_done(idx, st, "folder presence", err);
}
