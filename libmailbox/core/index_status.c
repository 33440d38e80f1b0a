/*
 * The whole-index views of syncd's command line (include/mailbox/index_status.h):
 * --status's folders and dead letters, and --rebuild's reset.
 */
#include <stdlib.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_status.h"
#include "mailbox/util.h"

#include "index-private.h"

int
mb_index_status_folders(struct mb_index *idx, struct mb_status_folder **list_r, size_t *n_r,
    struct mb_err *err)
{
	static const char sql[] = "SELECT f.name, f.uidvalidity, f.uidnext, f.watermark, "
	    "f.last_sync, (SELECT count(*) FROM messages m WHERE m.folder_id = f.id AND "
	    "m.uidvalidity = f.uidvalidity), (SELECT count(*) FROM work_queue q WHERE "
	    "q.folder_id = f.id) FROM folders f ORDER BY f.name";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	struct mb_status_folder *list = NULL;
	size_t n = 0, cap = 0;
	int rc;

	*list_r = NULL;
	*n_r = 0;
	if (st == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mb_status_folder *f;

		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			list = mb_xrealloc(list, cap * sizeof(*list));
		}
		f = &list[n++];
		f->name = idx_col_text(st, 0, NULL);
		f->uidvalidity = (uint32_t)sqlite3_column_int64(st, 1);
		f->uidnext = (uint32_t)sqlite3_column_int64(st, 2);
		f->watermark = (uint32_t)sqlite3_column_int64(st, 3);
		f->last_sync = sqlite3_column_int64(st, 4);
		f->indexed = (uint64_t)sqlite3_column_int64(st, 5);
		f->queued = (uint64_t)sqlite3_column_int64(st, 6);
	}
	if (rc != SQLITE_DONE) {
		idx_sqlerr(idx, rc, "status folders", err);
		idx_stmt_done(st);
		mb_status_folders_free(&list, n);
		return -1;
	}
	idx_stmt_done(st);
	*list_r = list;
	*n_r = n;
	return 0;
}

void
mb_status_folders_free(struct mb_status_folder **listp, size_t n)
{
	struct mb_status_folder *list = *listp;

	for (size_t i = 0; list != NULL && i < n; i++)
		free(list[i].name);
	free(list);
	*listp = NULL;
}

int
mb_index_dead_letters(struct mb_index *idx, size_t limit, struct mb_dead_letter **list_r,
    size_t *n_r, uint64_t *total_r, struct mb_err *err)
{
	/* The count rides on every row: one statement, one snapshot. */
	static const char sql[] = "SELECT (SELECT count(*) FROM dead_letters), folder_name, "
	    "uidvalidity, first_uid, last_uid, attempts, last_error, failed_at FROM "
	    "dead_letters ORDER BY failed_at DESC, id DESC LIMIT ?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	struct mb_dead_letter *list;
	size_t n = 0;
	int rc = SQLITE_DONE;

	*list_r = NULL;
	*n_r = 0;
	*total_r = 0;
	if (limit == 0)
		return mb_err_set(err, MB_E_INVALID, "dead letters: the limit must be at least 1");
	if (st == NULL)
		return -1;
	list = mb_xcalloc(limit, sizeof(*list));
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	while (n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mb_dead_letter *d = &list[n++];

		*total_r = (uint64_t)sqlite3_column_int64(st, 0);
		d->folder = idx_col_text(st, 1, NULL);
		d->uidvalidity = (uint32_t)sqlite3_column_int64(st, 2);
		d->first = (uint32_t)sqlite3_column_int64(st, 3);
		d->last = (uint32_t)sqlite3_column_int64(st, 4);
		d->attempts = (unsigned)sqlite3_column_int64(st, 5);
		d->last_error = idx_col_text(st, 6, NULL);
		d->failed_at = sqlite3_column_int64(st, 7);
	}
	if (n < limit && rc != SQLITE_DONE) {
		idx_sqlerr(idx, rc, "dead letters", err);
		idx_stmt_done(st);
		mb_dead_letters_free(&list, n);
		*total_r = 0;
		return -1;
	}
	idx_stmt_done(st);
	*list_r = list;
	*n_r = n;
	return 0;
}

void
mb_dead_letters_free(struct mb_dead_letter **listp, size_t n)
{
	struct mb_dead_letter *list = *listp;

	for (size_t i = 0; list != NULL && i < n; i++) {
		free(list[i].folder);
		free(list[i].last_error);
	}
	free(list);
	*listp = NULL;
}

int
mb_index_reset(struct mb_index *idx, struct mb_err *err)
{
	/* Fixed text, run once per --rebuild: not worth a cached statement. */
	static const char *const sql[] = {
		"DELETE FROM work_queue",
		"DELETE FROM attachments",
		/* before messages: their triggers then have no dates to recompute */
		"DELETE FROM contact_stats",
		"DELETE FROM contact_names",
		"DELETE FROM messages",		/* the FTS and summary triggers follow */
		"DELETE FROM thread_refs",
		"DELETE FROM dead_letters",
		"DELETE FROM folders",
		/* the ranking's bounds: ids are reused from 1, the terms chosen again */
		"DELETE FROM rank_chunks",
		"DELETE FROM rank_bounds",
		"DELETE FROM rank_terms",
		"DELETE FROM rank_state",
		"DELETE FROM rank_lengths",
		/* ids from 1 again: the next merge is due at the first caught-up tick */
		"DELETE FROM fts_merge_state",
	};
	int rc;

	if (mb_index_begin(idx, err) == -1)
		return -1;
	for (size_t i = 0; i < MB_ARRAY_LEN(sql); i++)
		if ((rc = sqlite3_exec(idx->db, sql[i], NULL, NULL, NULL)) != SQLITE_OK) {
			idx_sqlerr(idx, rc, "reset", err);
			mb_index_rollback(idx);
			return -1;
		}
	return mb_index_commit(idx, err);
}
