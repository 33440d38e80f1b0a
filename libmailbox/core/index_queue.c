/*
 * The work queue and the dead letters (include/mailbox/index_queue.h).
 * The queue is on the hot path of a backfill: every statement is prepared
 * once, in the handle's cache.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index_queue.h"
#include "mailbox/util.h"

#include "index-private.h"

#define QUEUE_MAX_WAIT	86400	/* the backoff is capped at a day */

void
mb_queue_range_release(struct mb_queue_range *r)
{
	free(r->folder);
	memset(r, 0, sizeof(*r));
}

int
mb_index_queue_add(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
    uint32_t first, uint32_t last, bool *added_r, struct mb_err *err)
{
	static const char sql[] = "INSERT OR IGNORE INTO work_queue (folder_id, uidvalidity, "
	    "first_uid, last_uid, created_at) VALUES (?1, ?2, ?3, ?4, unixepoch())";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, first);
	sqlite3_bind_int64(st, 4, last);
	if (idx_step_done(idx, st, "queue add", err) == -1)
		return -1;
	*added_r = sqlite3_changes(idx->db) > 0;
	return 0;
}

int
mb_index_queue_take(struct mb_index *idx, int64_t now, int64_t folder_id, const int64_t *busy,
    size_t n_busy, struct mb_queue_range *r, struct mb_err *err)
{
	/* At most n_busy of the first n_busy + 1 due rows are in flight. */
	static const char sql[] = "SELECT q.id, q.folder_id, f.name, q.uidvalidity, "
	    "q.first_uid, q.last_uid, q.attempts FROM work_queue q JOIN folders f ON f.id = "
	    "q.folder_id WHERE q.not_before <= ?1 AND (?3 = 0 OR q.folder_id = ?3) "
	    "ORDER BY q.not_before, q.id LIMIT ?2";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	int rc, found = 0;

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)n_busy + 1);
	sqlite3_bind_int64(st, 3, folder_id);
	while (!found && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		bool taken = false;

		for (size_t i = 0; i < n_busy; i++)
			taken |= busy[i] == id;
		if (taken)
			continue;
		r->id = id;
		r->folder_id = sqlite3_column_int64(st, 1);
		r->folder = mb_xstrdup((const char *)sqlite3_column_text(st, 2));
		r->uidvalidity = (uint32_t)sqlite3_column_int64(st, 3);
		r->first = (uint32_t)sqlite3_column_int64(st, 4);
		r->last = (uint32_t)sqlite3_column_int64(st, 5);
		r->attempts = (unsigned)sqlite3_column_int64(st, 6);
		found = 1;
	}
	if (!found && rc != SQLITE_DONE) {
		idx_sqlerr(idx, rc, "queue take", err);
		idx_stmt_done(st);
		return -1;
	}
	idx_stmt_done(st);
	return found;
}

int
mb_index_queue_ack(struct mb_index *idx, int64_t id, struct mb_err *err)
{
	static const char sql[] = "DELETE FROM work_queue WHERE id = ?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	return idx_step_done(idx, st, "queue ack", err);
}

/*
 * Move r to dead_letters with its attempts and last error, in one unit.  One
 * row per range: a range dead-lettered again (the fault persists, tick after
 * tick) adds its attempts to its row and refreshes the error and the time.
 */
static int
queue_bury(struct mb_index *idx, const struct mb_queue_range *r, unsigned attempts,
    const char *why, int64_t now, struct mb_err *err)
{
	static const char dead_sql[] = "INSERT INTO dead_letters (folder_id, folder_name, "
	    "uidvalidity, first_uid, last_uid, attempts, last_error, failed_at) "
	    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
	    "ON CONFLICT (folder_name, uidvalidity, first_uid, last_uid) DO UPDATE SET "
	    "folder_id = excluded.folder_id, attempts = attempts + excluded.attempts, "
	    "last_error = excluded.last_error, failed_at = excluded.failed_at";
	struct idx_unit u;
	sqlite3_stmt *st;
	bool ok = false;

	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	st = idx_stmt_sql(idx, dead_sql, err);
	if (st != NULL) {
		sqlite3_bind_int64(st, 1, r->folder_id);
		idx_bind_text(st, 2, r->folder);
		sqlite3_bind_int64(st, 3, r->uidvalidity);
		sqlite3_bind_int64(st, 4, r->first);
		sqlite3_bind_int64(st, 5, r->last);
		sqlite3_bind_int64(st, 6, attempts);
		idx_bind_text(st, 7, why);
		sqlite3_bind_int64(st, 8, now);
		ok = idx_step_done(idx, st, "dead letter", err) == 0 &&
		    mb_index_queue_ack(idx, r->id, err) == 0;
	}
	return idx_unit_end(idx, &u, ok, err);
}

int
mb_index_queue_fail(struct mb_index *idx, const struct mb_queue_range *r, const char *why,
    unsigned max_attempts, unsigned backoff, int64_t now, bool *dead_r, struct mb_err *err)
{
	static const char retry_sql[] = "UPDATE work_queue SET attempts = ?1, not_before = ?2, "
	    "last_error = ?3 WHERE id = ?4";
	unsigned attempts = r->attempts + 1;
	sqlite3_stmt *st;
	int64_t wait;

	*dead_r = attempts >= max_attempts;
	if (*dead_r)
		return queue_bury(idx, r, attempts, why, now, err);
	st = idx_stmt_sql(idx, retry_sql, err);
	if (st == NULL)
		return -1;
	/* backoff, 2x, 4x ...; the shift stays small by the attempt cap. */
	wait = (int64_t)backoff << (attempts - 1 < 16 ? attempts - 1 : 16);
	sqlite3_bind_int64(st, 1, attempts);
	sqlite3_bind_int64(st, 2, now + (wait > QUEUE_MAX_WAIT ? QUEUE_MAX_WAIT : wait));
	idx_bind_text(st, 3, why);
	sqlite3_bind_int64(st, 4, r->id);
	return idx_step_done(idx, st, "queue retry", err);
}

int
mb_index_queue_drop_folder(struct mb_index *idx, int64_t folder_id, uint32_t keep_uidvalidity,
    unsigned *dropped_r, struct mb_err *err)
{
	static const char sql[] = "DELETE FROM work_queue WHERE folder_id = ?1 AND "
	    "uidvalidity != ?2";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, keep_uidvalidity);	/* 0 is never a uidvalidity */
	if (idx_step_done(idx, st, "queue drop", err) == -1)
		return -1;
	*dropped_r = (unsigned)sqlite3_changes(idx->db);
	return 0;
}

int
mb_index_queue_depth(struct mb_index *idx, unsigned *depth_r, int64_t *next_due_r,
    struct mb_err *err)
{
	static const char sql[] = "SELECT count(*), coalesce(min(not_before), 0) FROM "
	    "work_queue";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	int rc;

	if (st == NULL)
		return -1;
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		idx_sqlerr(idx, rc, "queue depth", err);
		idx_stmt_done(st);
		return -1;
	}
	*depth_r = (unsigned)sqlite3_column_int64(st, 0);
	*next_due_r = sqlite3_column_int64(st, 1);
	idx_stmt_done(st);
	return 0;
}
