/*
 * syncd's names for the durable queue, which lives in the index
 * (libmailbox/core/index_queue.c, include/mailbox/index_queue.h): the
 * scheduler and the pool carry a range as struct sd_range, and these
 * convert.  A range is removed only in the transaction that writes its rows
 * (writer.c), so delivery is at least once and the upserts make that
 * harmless; after a crash every queued range is simply due again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/index_queue.h"
#include "syncd.h"

void
sd_range_release(struct sd_range *r)
{
	free(r->folder);
	memset(r, 0, sizeof(*r));
}

int
sd_queue_add(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint32_t first,
    uint32_t last, bool *added_r, struct mb_err *err)
{
	return mb_index_queue_add(idx, folder_id, uidvalidity, first, last, added_r, err);
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
	struct mb_queue_range q = { 0 };
	int got = mb_index_queue_take(idx, now, folder_id, busy, n_busy, &q, err);

	if (got == 1)	/* the folder name changes hands */
		*r = (struct sd_range){ .id = q.id, .folder_id = q.folder_id,
		    .folder = q.folder, .uidvalidity = q.uidvalidity, .first = q.first,
		    .last = q.last, .attempts = q.attempts };
	return got;
}

int
sd_queue_ack(struct mb_index *idx, int64_t id, struct mb_err *err)
{
	return mb_index_queue_ack(idx, id, err);
}

int
sd_queue_fail(struct mb_index *idx, const struct sd_range *r, const char *why,
    unsigned max_attempts, unsigned backoff, int64_t now, bool *dead_r, struct mb_err *err)
{
	const struct mb_queue_range q = { .id = r->id, .folder_id = r->folder_id,
	    .folder = r->folder, .uidvalidity = r->uidvalidity, .first = r->first,
	    .last = r->last, .attempts = r->attempts };	/* folder borrowed */

	return mb_index_queue_fail(idx, &q, why, max_attempts, backoff, now, dead_r, err);
}

int
sd_queue_drop_folder(struct mb_index *idx, int64_t folder_id, uint32_t keep_uidvalidity,
    unsigned *dropped_r, struct mb_err *err)
{
	return mb_index_queue_drop_folder(idx, folder_id, keep_uidvalidity, dropped_r, err);
}

int
sd_queue_depth(struct mb_index *idx, unsigned *depth_r, int64_t *next_due_r,
    struct mb_err *err)
{
	return mb_index_queue_depth(idx, depth_r, next_due_r, err);
}

int
sd_count_rows(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint64_t *n_r,
    struct mb_err *err)
{
	uint32_t max;

	return mb_index_uid_count(idx, folder_id, uidvalidity, 0, UINT32_MAX, n_r, &max, err);
}
