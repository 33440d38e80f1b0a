/*
 * The write audit (write_log; docs/writes.md): syncd records every write
 * request as a 'pending' row before anything is tried and completes it with
 * the outcome; mcpd's list_recent_writes and syncd --status read it back
 * (libmailbox/core/index_audit.c).  Errors as in mailbox/index.h: a busy or
 * locked database is MB_E_TEMP.
 */
#ifndef MAILBOX_INDEX_AUDIT_H
#define MAILBOX_INDEX_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_index;

/* A new request.  Strings are borrowed for the call. */
struct mb_audit_request {
	int64_t		 at;		/* unix seconds */
	const char	*tool;		/* "flag_message", ... */
	const char	*requested_by;	/* the client's identity; NULL: none */
	int64_t		 peer_uid;	/* SO_PEERCRED uid of the connection */
	int64_t		 message_id;	/* messages.id named; 0: none */
	const char	*arguments;	/* JSON text; NULL: none */
};
/* Insert the request as a 'pending' row, its own statement; *id_r its id (> 0). */
int	mb_index_audit_begin(struct mb_index *idx, const struct mb_audit_request *rq,
	    int64_t *id_r, struct mb_err *err);

/* What a row learns later.  Each NULL or 0 field leaves the row's value alone. */
struct mb_audit_update {
	const char	*folder;	/* where the message is (is now, for a draft) */
	uint32_t	 uidvalidity;
	uint32_t	 uid;
	const char	*outcome;	/* "ok", "refused", "failed"; NULL: still pending */
	const char	*detail;
	int64_t		 message_id;	/* a draft's row names the draft once indexed */
};
/* Update row id (borrowed strings); MB_E_INVALID for an outcome the table refuses. */
int	mb_index_audit_update(struct mb_index *idx, int64_t id, const struct mb_audit_update *u,
	    struct mb_err *err);

/*
 * One row as read back.  Strings are owned by the entry and NULL when the
 * column is; the integers that may be missing are -1 then.
 */
struct mb_audit_entry {
	int64_t		 id;
	int64_t		 at;
	char		*tool;
	char		*requested_by;
	int64_t		 peer_uid;	/* -1: none */
	int64_t		 message_id;	/* -1: none */
	char		*folder;
	int64_t		 uidvalidity;	/* -1: none */
	int64_t		 uid;		/* -1: none */
	char		*arguments;
	char		*outcome;
	char		*detail;
};
/*
 * The newest limit rows, newest first.  *list_r is the caller's (never NULL
 * on success): free it with mb_audit_list_free(list_r, *n_r).
 */
int	mb_index_audit_recent(struct mb_index *idx, size_t limit, struct mb_audit_entry **list_r,
	    size_t *n_r, struct mb_err *err);
void	mb_audit_list_free(struct mb_audit_entry **listp, size_t n);	/* sets *listp = NULL */

#endif
