/*
 * syncd --status (what is indexed, what is queued, what failed, what was
 * written) and the reset half of --rebuild.  Both read or write the index
 * directly; --status opens it read-only, so it works next to a running
 * daemon.
 */
#include <stdio.h>
#include <time.h>

#include <sqlite3.h>

#include "syncd.h"

static void
fmt_time(char *buf, size_t len, int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t == 0 || gmtime_r(&tt, &tm) == NULL)
		snprintf(buf, len, "never");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

static int
st_err(struct mb_index *idx, struct mb_err *err)
{
	return mb_err_set(err, MB_E_INTERNAL, "status: %s", sqlite3_errmsg(mb_index_db(idx)));
}

int
sd_status_print(struct mb_index *idx, FILE *out, struct mb_err *err)
{
	sqlite3 *db = mb_index_db(idx);
	sqlite3_stmt *st = NULL;
	unsigned depth = 0;
	int64_t next = 0;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT f.name, f.uidvalidity, f.uidnext, f.watermark, "
	    "f.last_sync, (SELECT count(*) FROM messages m WHERE m.folder_id = f.id AND "
	    "m.uidvalidity = f.uidvalidity), (SELECT count(*) FROM work_queue q WHERE "
	    "q.folder_id = f.id) FROM folders f ORDER BY f.name", -1, &st, NULL) != SQLITE_OK)
		return st_err(idx, err);
	fprintf(out, "%-28s %10s %10s %10s %10s %6s  %s\n", "folder", "indexed", "uidnext",
	    "watermark", "uidvalid.", "queued", "last sync");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char when[32];

		fmt_time(when, sizeof(when), sqlite3_column_int64(st, 4));
		fprintf(out, "%-28s %10lld %10lld %10lld %10lld %6lld  %s\n",
		    (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 5),
		    sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
		    sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 6), when);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return st_err(idx, err);
	if (sd_queue_depth(idx, &depth, &next, err) == -1)
		return -1;
	fprintf(out, "\nqueue: %u range%s", depth, depth == 1 ? "" : "s");
	if (depth > 0) {
		char when[32];

		fmt_time(when, sizeof(when), next);
		fprintf(out, ", next due %s", next <= time(NULL) ? "now" : when);
	}
	fputc('\n', out);

	if (sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM dead_letters), folder_name, "
	    "uidvalidity, first_uid, last_uid, attempts, last_error, failed_at FROM dead_letters "
	    "ORDER BY id DESC LIMIT 10", -1, &st, NULL) != SQLITE_OK)
		return st_err(idx, err);
	rc = sqlite3_step(st);
	fprintf(out, "dead letters: %lld\n", rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0LL);
	for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
		char when[32];

		fmt_time(when, sizeof(when), sqlite3_column_int64(st, 7));
		fprintf(out, "  %s  folder '%s' uidvalidity %lld UIDs %lld:%lld, %lld attempts: %s\n",
		    when, (const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 2),
		    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
		    sqlite3_column_int64(st, 5), sqlite3_column_text(st, 6) ?
		    (const char *)sqlite3_column_text(st, 6) : "");
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return st_err(idx, err);

	if (sqlite3_prepare_v2(db, "SELECT at, tool, coalesce(requested_by, ''), outcome, "
	    "coalesce(folder, ''), coalesce(uid, 0) FROM write_log ORDER BY id DESC LIMIT 5", -1,
	    &st, NULL) != SQLITE_OK)
		return st_err(idx, err);
	fprintf(out, "last writes:%s\n", "");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char when[32];

		fmt_time(when, sizeof(when), sqlite3_column_int64(st, 0));
		fprintf(out, "  %s  %s by '%s' on '%s' UID %lld: %s\n", when,
		    (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2),
		    (const char *)sqlite3_column_text(st, 4), sqlite3_column_int64(st, 5),
		    (const char *)sqlite3_column_text(st, 3));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return st_err(idx, err);
	return 0;
}

int
sd_rebuild_reset(struct mb_index *idx, struct mb_err *err)
{
	static const char *const sql[] = {
		"DELETE FROM work_queue",
		"DELETE FROM attachments",
		"DELETE FROM messages",		/* the FTS triggers follow */
		"DELETE FROM thread_refs",
		"DELETE FROM dead_letters",
		"DELETE FROM folders",
	};

	if (mb_index_begin(idx, err) == -1)
		return -1;
	for (size_t i = 0; i < MB_ARRAY_LEN(sql); i++)
		if (sqlite3_exec(mb_index_db(idx), sql[i], NULL, NULL, NULL) != SQLITE_OK) {
			st_err(idx, err);
			mb_index_rollback(idx);
			return -1;
		}
	return mb_index_commit(idx, err);
}
