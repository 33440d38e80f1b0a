/*
 * What syncd's write path (docs/writes.md) reads from the index before a
 * write and changes after one (libmailbox/core/index_writes.c): the message
 * a request names, the destination folder, a reply's original, and the row
 * of a moved message.  Errors as in mailbox/index.h: a busy or locked
 * database is MB_E_TEMP.
 */
#ifndef MAILBOX_INDEX_WRITES_H
#define MAILBOX_INDEX_WRITES_H

#include <stdbool.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_index;

/* The message a write names, where it is indexed, and its folder's state now. */
struct mb_write_target {
	int64_t		 folder_id;
	char		*folder;		/* owned */
	uint32_t	 uidvalidity;		/* the message was indexed under */
	uint32_t	 uid;
	char		*keywords;		/* owned; NULL: none */
	uint64_t	 modseq;
	uint32_t	 folder_uidvalidity;	/* the folder's now: differs when stale */
	bool		 folder_absent;		/* the server's LIST no longer shows it,
						 * or SYNC_FOLDERS left it out */
	bool		 folder_left_out;	/* the latter: not synced any more */
};
/*
 * Message id and its folder.  MB_E_NOTFOUND when no row has that id.  On
 * success the strings of *t_r are the caller's: mb_write_target_release().
 */
int	mb_index_write_target(struct mb_index *idx, int64_t id, struct mb_write_target *t_r,
	    struct mb_err *err);
void	mb_write_target_release(struct mb_write_target *t);	/* frees, zeroes */

enum mb_write_dest {
	MB_WRITE_DEST_NAME,	/* the folder of that name */
	MB_WRITE_DEST_TRASH,	/* the first folder with the \Trash role */
	MB_WRITE_DEST_DRAFTS,	/* the \Drafts folder, else one named "Drafts" */
};
/*
 * The destination folder of a write: its id, name (*name_r the caller's,
 * free()) and uidvalidity.  name is used by MB_WRITE_DEST_NAME only.
 * MB_E_NOTFOUND when there is no such folder among those LIST still shows.
 */
int	mb_index_write_dest(struct mb_index *idx, enum mb_write_dest how, const char *name,
	    int64_t *id_r, char **name_r, uint32_t *uidvalidity_r, struct mb_err *err);

/*
 * What a reply needs of message id: its Message-ID, References and subject,
 * each the caller's (free()) and NULL when absent.  MB_E_NOTFOUND when no
 * row has that id.
 */
int	mb_index_write_original(struct mb_index *idx, int64_t id, char **message_id_r,
	    char **refs_r, char **subject_r, struct mb_err *err);

/* The row id at (folder_id, uidvalidity, uid), 0 when none is indexed. */
int	mb_index_message_find(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t uid, int64_t *id_r, struct mb_err *err);
/*
 * A moved message (COPYUID): row id now lives at (folder_id, uidvalidity,
 * uid), with \Deleted cleared (a COPY fallback set it on the original).  The
 * text stays, so the FTS index is not rewritten.  Inside the caller's
 * transaction if one is open.
 */
int	mb_index_message_rekey(struct mb_index *idx, int64_t id, int64_t folder_id,
	    uint32_t uidvalidity, uint32_t uid, struct mb_err *err);

#endif
