/*
 * The single writer.  Workers never touch the index: they send rows, and the
 * scheduler writes a whole range and acknowledges it (removes it from
 * work_queue) in one transaction.  Several completed ranges share a
 * transaction: it is committed when it holds SD_TXN_ROWS rows, when it is
 * SD_TXN_MS old, when no worker has a range in flight (loop.c), and before
 * any other transaction begins.  A crash before COMMIT leaves every range of
 * the group queued and its rows unwritten; after it, all are done.  There is
 * no state in between to repair.
 *
 * The rows of the group are staged (mb_index_stage) as each range completes
 * and moved into messages with one statement (mb_index_flush) just before the
 * COMMIT, so FTS5 writes one segment per group.  Why: FTS5 flushes its
 * in-memory terms at every statement savepoint, so a range per statement was
 * a 100-row segment per range and the writer spent its time merging them;
 * and each commit writes every page it dirtied to the WAL, FTS5's structure
 * record and the b-tree interiors included (docs/benchmarks.md).
 */
#include <stdlib.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "syncd.h"

/* The crash hook (docs/syncd.md): _exit at commit point n, like isync's -Tj. */
static void
crash_point(struct sd *sd)
{
	if (sd->writer.crash_at != 0 && ++sd->writer.commit_points == sd->writer.crash_at) {
		mb_log_warnx("test hook: exiting at commit point %u", sd->writer.crash_at);
		_exit(86);
	}
}

int
sd_begin(struct sd *sd, struct mb_err *err)
{
	if (sd_writer_flush(sd, false, err) == -1)
		return -1;
	return mb_index_begin(sd->idx, err);
}

int
sd_commit(struct sd *sd, struct mb_err *err)
{
	crash_point(sd);	/* odd points: the transaction is open and is lost */
	if (mb_index_commit(sd->idx, err) == -1) {
		mb_index_rollback(sd->idx);
		return -1;
	}
	crash_point(sd);	/* even points: committed, nothing after it has run */
	return 0;
}

void
sd_writer_tick_begin(struct sd *sd)
{
	sd->writer.write_failed = false;
	sd->writer.tick_rows = 0;
	sd->writer.stage_ms = sd->writer.commit_ms = sd->writer.bounds_ms = 0;
}

/*
 * The ranking's block bounds for the chunks of ids the commit completed
 * (mb_index_rank_build, docs/index.md "Ranking"), a few at a time so that
 * a backfill keeps up (a chunk is 2,048 messages, a group commit 1,000)
 * without one commit waiting on many.  While workers have ranges in flight
 * (in_flight: a backfill; the caller knows, the pool's state is not the
 * writer's to read) the chunks gather until SD_RANK_GATHER wait, which the
 * builder reads with one statement a term instead of one a chunk (a
 * backfill of 1,000,000 messages spent 156 s of the writer's wall on them,
 * now 56: docs/benchmarks.md, "Bounds built for neighbouring chunks
 * together"); once nothing is in flight it builds what is left.  Searches
 * are exact without them, so a failure is logged and retried after the
 * next commit.
 */
static void
writer_bounds(struct sd *sd, bool in_flight)
{
	struct mb_err err = { 0 };
	size_t built = 0;
	long long t0 = mb_now_ms();

	if (mb_index_rank_build(sd->idx, in_flight ? SD_RANK_GATHER : 1,
	    SD_RANK_CHUNKS, &built, &err) == -1)
		mb_log_warnx("ranking bounds: %s; searches read every match meanwhile",
		    err.msg);
	else if (built > 0)
		mb_log_debug("ranking bounds: %zu chunks of ids bounded", built);
	sd->writer.bounds_ms += mb_now_ms() - t0;
}

void
sd_writer_bounds_rest(struct sd *sd)
{
	if (sd->writer.tick_rows > 0 && !sd->writer.txn_open && !sd->writer.write_failed)
		writer_bounds(sd, false);
}

static void
merge_done(struct sd *sd)
{
	sd->writer.merge_pending = false;
	mb_log_info("full-text index merged into one segment in %.1f s",
	    (double)(mb_now_ms() - sd->writer.merge_started_ms) / 1000.0);
}

void
sd_writer_merge_step(struct sd *sd)
{
	struct mb_err err = { 0 };
	bool done = false;

	if (!sd->writer.merge_pending)
		return;
	if (mb_index_fts_merge_step(sd->idx, MB_INDEX_FTS_MERGE_PAGES, &done, &err) == -1) {
		mb_log_warnx("merging the full-text index: %s; trying again after a tick",
		    err.msg);
		sd->writer.merge_pending = false;
	} else if (done)
		merge_done(sd);
}

void
sd_writer_merge_check(struct sd *sd)
{
	struct mb_err err = { 0 };
	bool due = false;

	if (sd->writer.merge_pending || sd->writer.txn_open)
		return;
	if (mb_index_fts_merge_due(sd->idx, &due, &err) == -1) {
		mb_log_warnx("merging the full-text index: %s", err.msg);
		return;
	}
	if (!due)
		return;
	mb_log_info("merging the full-text index into one segment: caught up, and a quarter "
	    "or more of it is new since the last merge");
	sd->writer.merge_pending = true;
	sd->writer.merge_started_ms = mb_now_ms();
	if (sd->mode == SD_DAEMON)
		return;		/* a step a turn: sd_run() */
	if (sd->mode == SD_BACKFILL)
		sd_progress_say(&sd->progress, "backfill: merging the full-text index");
	while (sd->writer.merge_pending)
		sd_writer_merge_step(sd);
}

int
sd_writer_flush(struct sd *sd, bool in_flight, struct mb_err *err)
{
	long long t0;

	if (!sd->writer.txn_open)
		return 0;
	t0 = mb_now_ms();
	sd->writer.txn_open = false;
	if (mb_index_flush(sd->idx, err) == 0 && sd_commit(sd, err) == 0) {
		sd->writer.tick_rows += sd->writer.txn_rows;
		sd->writer.txn_rows = 0;
		sd->writer.commit_ms += mb_now_ms() - t0;
		writer_bounds(sd, in_flight);
		return 0;
	}
	mb_index_rollback(sd->idx);	/* no-op when sd_commit already rolled back */
	/* Its ranges are queued again.  A disk that refuses one commit will likely
	 * refuse the next, so the tick ends (loop.c) instead of refetching them. */
	mb_log_error("writing the index: %s; %llu rows rolled back, stopping this tick",
	    err->msg, (unsigned long long)sd->writer.txn_rows);
	sd->writer.write_failed = true;
	sd->writer.txn_rows = 0;
	return -1;
}

/*
 * The range's rows are staged, not upserted one statement each: a statement
 * per row was an FTS5 segment per message (557 msg/s end to end at 10,000
 * messages; docs/benchmarks.md).
 */
int
sd_writer_commit_range(struct sd *sd, struct sd_worker *w, struct mb_err *err)
{
	struct mb_index_row *rows = mb_xcalloc(w->n_rows ? w->n_rows : 1, sizeof(*rows));
	long long t0 = mb_now_ms();

	for (size_t i = 0; i < w->n_rows; i++)
		rows[i] = w->rows[i].row;	/* shallow: the pointers stay w's */
	if (!sd->writer.txn_open) {
		if (mb_index_begin(sd->idx, err) == -1)
			goto fail;
		sd->writer.txn_open = true;
		sd->writer.txn_rows = 0;
		sd->writer.txn_deadline_ms = mb_now_ms() + SD_TXN_MS;
	}
	if (mb_index_stage(sd->idx, rows, w->n_rows, err) == -1)
		goto fail;
	if (sd_queue_ack(sd->idx, w->range.id, err) == -1)
		goto fail;
	free(rows);
	sd->writer.stage_ms += mb_now_ms() - t0;
	sd->writer.txn_rows += w->n_rows;
	/* w's range is in flight until this returns */
	if (sd->writer.txn_rows >= SD_TXN_ROWS || mb_now_ms() >= sd->writer.txn_deadline_ms)
		return sd_writer_flush(sd, true, err);
	return 0;
fail:
	free(rows);
	/* The whole group goes: its ranges are back in work_queue, and due. */
	sd->writer.txn_open = false;
	sd->writer.txn_rows = 0;
	mb_index_rollback(sd->idx);
	return -1;
}
