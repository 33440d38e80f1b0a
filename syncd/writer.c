/*
 * The single writer.  Workers never touch the index: they send rows, and the
 * scheduler writes a whole range in one transaction, acknowledging the range
 * (removing it from work_queue) in that same transaction.  A crash before
 * COMMIT leaves the range queued and the rows unwritten; after it, both are
 * done.  There is no state in between to repair.
 */
#include <stdlib.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "syncd.h"

/* The crash hook (STYLE B9): _exit at commit point n, like isync's -Tj. */
static void
crash_point(struct sd *sd)
{
	if (sd->crash_at != 0 && ++sd->commit_points == sd->crash_at) {
		mb_log_warnx("test hook: exiting at commit point %u", sd->crash_at);
		_exit(86);
	}
}

int
sd_begin(struct sd *sd, struct mb_err *err)
{
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

int
sd_writer_commit_range(struct sd *sd, struct sd_worker *w, struct mb_err *err)
{
	if (sd_begin(sd, err) == -1)
		return -1;
	for (size_t i = 0; i < w->n_rows; i++)
		if (mb_index_upsert(sd->idx, &w->rows[i].row, NULL, err) == -1)
			goto fail;
	if (sd_queue_ack(sd->idx, w->range.id, err) == -1)
		goto fail;
	if (sd_commit(sd, err) == -1)
		return -1;
	sd->tick_rows += w->n_rows;
	return 0;
fail:
	mb_index_rollback(sd->idx);
	return -1;
}
