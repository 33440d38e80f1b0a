/*
 * The durable queue of UID ranges (work_queue) and the ranges that ran out
 * of attempts (dead_letters), in the index (libmailbox/core/index_queue.c).
 * A range survives a crash or a restart; syncd removes it only in the
 * transaction that writes its rows, so delivery is at least once.  Which
 * ranges are in flight is the caller's memory, not the table's.  Errors as
 * in mailbox/index.h: a busy or locked database is MB_E_TEMP.
 */
#ifndef MAILBOX_INDEX_QUEUE_H
#define MAILBOX_INDEX_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_index;

/* One queued range. */
struct mb_queue_range {
	int64_t		 id;		/* work_queue.id */
	int64_t		 folder_id;
	char		*folder;	/* owned: free with mb_queue_range_release() */
	uint32_t	 uidvalidity;
	uint32_t	 first, last;
	unsigned	 attempts;	/* failures so far */
};
void	mb_queue_range_release(struct mb_queue_range *r);	/* frees folder, zeroes *r */

/* Queue first:last unless that exact range is queued; *added_r says which. */
int	mb_index_queue_add(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t first, uint32_t last, bool *added_r, struct mb_err *err);
/*
 * The oldest range due at now (unix seconds) whose id is not in
 * busy[0..n_busy), among folder_id's ranges (0: any folder's): 1 and *r
 * filled (its folder is the caller's: mb_queue_range_release), 0 when none
 * is due, -1 on error.
 */
int	mb_index_queue_take(struct mb_index *idx, int64_t now, int64_t folder_id,
	    const int64_t *busy, size_t n_busy, struct mb_queue_range *r, struct mb_err *err);
/* Done: remove range id (syncd calls it inside the writer's transaction). */
int	mb_index_queue_ack(struct mb_index *idx, int64_t id, struct mb_err *err);
/*
 * A failed attempt of r, why its error.  Below max_attempts the range waits
 * backoff * 2^(n-1) seconds (at most a day) after now; at max_attempts it
 * moves to dead_letters, atomically, and *dead_r is set.
 */
int	mb_index_queue_fail(struct mb_index *idx, const struct mb_queue_range *r,
	    const char *why, unsigned max_attempts, unsigned backoff, int64_t now, bool *dead_r,
	    struct mb_err *err);
/*
 * Drop a folder's queued ranges: of every uidvalidity (keep_uidvalidity 0),
 * or of all but keep_uidvalidity.  *dropped_r how many.
 */
int	mb_index_queue_drop_folder(struct mb_index *idx, int64_t folder_id,
	    uint32_t keep_uidvalidity, unsigned *dropped_r, struct mb_err *err);
/* Queued ranges, and the earliest not_before among them (0 when none). */
int	mb_index_queue_depth(struct mb_index *idx, unsigned *depth_r, int64_t *next_due_r,
	    struct mb_err *err);

#endif
