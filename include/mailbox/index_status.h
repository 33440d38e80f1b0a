/*
 * What syncd --status shows, read from the index as structs
 * (libmailbox/core/index_status.c), and the reset of --rebuild.  The queue
 * depth is mb_index_queue_depth (mailbox/index_queue.h), the last writes
 * mb_index_audit_recent (mailbox/index_audit.h).  Works on a read-only
 * handle next to a running syncd.  A busy or locked database is MB_E_TEMP.
 */
#ifndef MAILBOX_INDEX_STATUS_H
#define MAILBOX_INDEX_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_index;

/* One folder's sync state and what the index holds of it. */
struct mb_status_folder {
	char		*name;		/* owned */
	uint32_t	 uidvalidity;	/* 0: never examined */
	uint32_t	 uidnext;
	uint32_t	 watermark;
	int64_t		 last_sync;	/* unix seconds; 0: never */
	uint64_t	 indexed;	/* rows under the folder's current uidvalidity */
	uint64_t	 queued;	/* ranges in the work queue */
};
/* Every folder, by name.  *list_r is the caller's: mb_status_folders_free(list_r, *n_r). */
int	mb_index_status_folders(struct mb_index *idx, struct mb_status_folder **list_r,
	    size_t *n_r, struct mb_err *err);
void	mb_status_folders_free(struct mb_status_folder **listp, size_t n);	/* *listp = NULL */

/* A range that ran out of attempts. */
struct mb_dead_letter {
	char		*folder;	/* owned: the folder's name when it failed */
	uint32_t	 uidvalidity;
	uint32_t	 first, last;
	unsigned	 attempts;
	char		*last_error;	/* owned; NULL: none recorded */
	int64_t		 failed_at;	/* unix seconds */
};
/*
 * The newest limit (>= 1) dead letters, newest first, and *total_r how many
 * there are in all.  *list_r is the caller's: mb_dead_letters_free(list_r, *n_r).
 */
int	mb_index_dead_letters(struct mb_index *idx, size_t limit, struct mb_dead_letter **list_r,
	    size_t *n_r, uint64_t *total_r, struct mb_err *err);
void	mb_dead_letters_free(struct mb_dead_letter **listp, size_t n);	/* *listp = NULL */

/*
 * --rebuild: empty messages, attachments, threads, folders, the queue and
 * the dead letters, in one transaction; write_log and the schema are kept.
 */
int	mb_index_reset(struct mb_index *idx, struct mb_err *err);

#endif
