/*
 * The durable queue of UID ranges (work_queue) and the ranges that ran out
 * of attempts (dead_letters).  The queue lives in the index, so a range
 * survives a crash or a restart; it is removed only in the transaction that
 * writes its rows (writer.c), so delivery is at least once and the upserts
 * make that harmless.  Which ranges are in flight is the scheduler's memory,
 * not the table's: after a crash every queued range is simply due again.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/log.h"
#include "syncd.h"

void
sd_range_release(struct sd_range *r)
{
	free(r->folder);
	memset(r, 0, sizeof(*r));
}

static int
q_err(struct mb_index *idx, const char *what, struct mb_err *err)
{
	return mb_err_set(err, MB_E_INTERNAL, "queue: %s: %s", what,
	    sqlite3_errmsg(mb_index_db(idx)));
}

static sqlite3_stmt *
q_prepare(struct mb_index *idx, const char *sql, struct mb_err *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(mb_index_db(idx), sql, -1, &st, NULL) != SQLITE_OK) {
		q_err(idx, "prepare", err);
		return NULL;
	}
	return st;
}

/* Step a statement that returns no rows, and finalize it. */
static int
q_exec(struct mb_index *idx, sqlite3_stmt *st, const char *what, struct mb_err *err)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE) {
		q_err(idx, what, err);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}

int
sd_queue_add(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint32_t first,
    uint32_t last, bool *added_r, struct mb_err *err)
{
	sqlite3_stmt *st = q_prepare(idx, "INSERT OR IGNORE INTO work_queue (folder_id, "
	    "uidvalidity, first_uid, last_uid, created_at) VALUES (?, ?, ?, ?, unixepoch())", err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, first);
	sqlite3_bind_int64(st, 4, last);
	if (q_exec(idx, st, "add", err) == -1)
		return -1;
	*added_r = sqlite3_changes(mb_index_db(idx)) > 0;
	return 0;
}

int
sd_queue_take(struct mb_index *idx, int64_t now, const int64_t *busy, size_t n_busy,
    struct sd_range *r, struct mb_err *err)
{
	return sd_queue_take_folder(idx, now, 0, busy, n_busy, r, err);
}

int
sd_queue_take_folder(struct mb_index *idx, int64_t now, int64_t folder_id, const int64_t *busy,
    size_t n_busy, struct sd_range *r, struct mb_err *err)
{
	/* At most n_busy of the first n_busy + 1 due rows are in flight. */
	sqlite3_stmt *st = q_prepare(idx, "SELECT q.id, q.folder_id, f.name, q.uidvalidity, "
	    "q.first_uid, q.last_uid, q.attempts FROM work_queue q JOIN folders f ON "
	    "f.id = q.folder_id WHERE q.not_before <= ?1 AND (?3 = 0 OR q.folder_id = ?3) "
	    "ORDER BY q.not_before, q.id LIMIT ?2", err);
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
		q_err(idx, "take", err);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return found;
}

int
sd_queue_ack(struct mb_index *idx, int64_t id, struct mb_err *err)
{
	sqlite3_stmt *st = q_prepare(idx, "DELETE FROM work_queue WHERE id = ?", err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	return q_exec(idx, st, "ack", err);
}

int
sd_queue_fail(struct mb_index *idx, const struct sd_range *r, const char *why,
    unsigned max_attempts, unsigned backoff, int64_t now, bool *dead_r, struct mb_err *err)
{
	unsigned attempts = r->attempts + 1;
	sqlite3_stmt *st;

	*dead_r = attempts >= max_attempts;
	if (*dead_r) {
		st = q_prepare(idx, "INSERT INTO dead_letters (folder_id, folder_name, uidvalidity, "
		    "first_uid, last_uid, attempts, last_error, failed_at) "
		    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", err);
		if (st == NULL)
			return -1;
		sqlite3_bind_int64(st, 1, r->folder_id);
		sqlite3_bind_text(st, 2, r->folder, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, r->uidvalidity);
		sqlite3_bind_int64(st, 4, r->first);
		sqlite3_bind_int64(st, 5, r->last);
		sqlite3_bind_int64(st, 6, attempts);
		sqlite3_bind_text(st, 7, why, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 8, now);
		if (q_exec(idx, st, "dead letter", err) == -1)
			return -1;
		return sd_queue_ack(idx, r->id, err);
	}
	st = q_prepare(idx, "UPDATE work_queue SET attempts = ?, not_before = ?, last_error = ? "
	    "WHERE id = ?", err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, attempts);
	/* backoff, 2x, 4x ... capped at a day; shifts stay small by the attempt cap. */
	{
		int64_t wait = (int64_t)backoff << (attempts - 1 < 16 ? attempts - 1 : 16);

		sqlite3_bind_int64(st, 2, now + (wait > 86400 ? 86400 : wait));
	}
	sqlite3_bind_text(st, 3, why, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, r->id);
	return q_exec(idx, st, "retry", err);
}

int
sd_queue_drop_folder(struct mb_index *idx, int64_t folder_id, uint32_t keep_uidvalidity,
    unsigned *dropped_r, struct mb_err *err)
{
	sqlite3_stmt *st = q_prepare(idx, "DELETE FROM work_queue WHERE folder_id = ? "
	    "AND uidvalidity != ?", err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, keep_uidvalidity);	/* 0 is never a uidvalidity */
	if (q_exec(idx, st, "drop", err) == -1)
		return -1;
	*dropped_r = (unsigned)sqlite3_changes(mb_index_db(idx));
	return 0;
}

int
sd_queue_depth(struct mb_index *idx, unsigned *depth_r, int64_t *next_due_r,
    struct mb_err *err)
{
	sqlite3_stmt *st = q_prepare(idx, "SELECT count(*), coalesce(min(not_before), 0) "
	    "FROM work_queue", err);

	if (st == NULL)
		return -1;
	if (sqlite3_step(st) != SQLITE_ROW) {
		q_err(idx, "depth", err);
		sqlite3_finalize(st);
		return -1;
	}
	*depth_r = (unsigned)sqlite3_column_int64(st, 0);
	*next_due_r = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	return 0;
}

int
sd_count_rows(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint64_t *n_r,
    struct mb_err *err)
{
	sqlite3_stmt *st = q_prepare(idx, "SELECT count(*) FROM messages WHERE folder_id = ? "
	    "AND uidvalidity = ?", err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	if (sqlite3_step(st) != SQLITE_ROW) {
		q_err(idx, "count", err);
		sqlite3_finalize(st);
		return -1;
	}
	*n_r = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}
