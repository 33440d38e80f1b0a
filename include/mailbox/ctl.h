/*
 * The control socket's requests and replies (mcpd -> syncd; docs/writes.md),
 * carried in MB_IPC_CTL_REQUEST / MB_IPC_CTL_REPLY frames (ipc.h), and the
 * result a write process hands syncd (MB_IPC_WRITE_RESULT).  The frame id
 * is the request id, echoed in the reply.  The peer's uid is never
 * in a payload: syncd reads it from the kernel (SO_PEERCRED).
 */
#ifndef MAILBOX_CTL_H
#define MAILBOX_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "mailbox/err.h"
#include "mailbox/ipc.h"

enum mb_ctl_op {
	MB_CTL_FLAG = 1,	/* message_id, add, remove (enum mb_flag bits) */
	MB_CTL_MOVE,		/* message_id, dest */
	MB_CTL_TRASH,		/* message_id (to the \Trash folder) */
	MB_CTL_DRAFT,		/* to, cc, subject, body; message_id: the original of a reply, or 0 */
	MB_CTL_LABEL,		/* message_id, labels_add, labels_remove (IMAP keywords) */
	MB_CTL_OP_MAX
};

enum mb_ctl_outcome {
	MB_CTL_OK = 0,
	MB_CTL_REFUSED,		/* not tried: bad request, stale id, not allowed */
	MB_CTL_FAILED,		/* tried and failed (IMAP error, deadline) */
};

#define MB_CTL_WHO_MAX		256	/* bytes of "who asked" */
#define MB_CTL_FOLDER_MAX	1024	/* bytes of a folder name */
#define MB_CTL_DETAIL_MAX	1024	/* bytes of a reply's detail */
#define MB_CTL_RCPT_MAX		100	/* recipients in to, and in cc */
#define MB_CTL_LINE_MAX		998	/* bytes of one recipient, or of the subject */
#define MB_CTL_BODY_MAX		(1u << 20)	/* bytes of a draft's body */
#define MB_CTL_LABELS_MAX	32	/* labels in labels_add, and in labels_remove */
#define MB_CTL_LABEL_MAX	128	/* bytes of one label */
#define MB_CTL_KEYWORDS_MAX	4096	/* bytes of a result's keywords */

/* A decoded request: every string is the struct's (mb_ctl_request_release()). */
struct mb_ctl_request {
	uint32_t	 op;		/* enum mb_ctl_op */
	char		*who;		/* owned; the OAuth subject, or "local" */
	int64_t		 message_id;	/* messages.id */
	uint32_t	 add, remove;	/* MB_CTL_FLAG */
	char		*dest;		/* owned; MB_CTL_MOVE; NULL otherwise */
	/* MB_CTL_DRAFT only (empty and NULL otherwise) */
	char		**to, **cc;	/* owned arrays of owned strings */
	uint32_t	 n_to, n_cc;
	char		*subject;	/* owned; NULL: none (a reply: the original's) */
	char		*body;		/* owned; never NULL for a draft ("" allowed) */
	/* MB_CTL_LABEL only (at least one label in all; empty otherwise) */
	char		**labels_add, **labels_remove;	/* owned arrays of owned strings */
	uint32_t	 n_labels_add, n_labels_remove;
};

/*
 * A request to encode, built by the sender from strings it keeps (a tool's
 * JSON arguments): nothing here is owned, so nothing is freed through it
 * but the sender's own to/cc arrays.  Fields as in struct mb_ctl_request.
 */
struct mb_ctl_request_view {
	uint32_t	 op;
	const char	*who;
	int64_t		 message_id;
	uint32_t	 add, remove;
	const char	*dest;
	const char	**to, **cc;	/* arrays of borrowed strings */
	uint32_t	 n_to, n_cc;
	const char	*subject;
	const char	*body;
	const char	**labels_add, **labels_remove;	/* arrays of borrowed strings */
	uint32_t	 n_labels_add, n_labels_remove;
};

struct mb_ctl_reply {
	uint32_t	 outcome;	/* enum mb_ctl_outcome */
	char		*detail;	/* owned; never NULL after a decode */
	int64_t		 message_id;	/* the row after the write (a move keeps or drops it: 0) */
	uint32_t	 flags;		/* MB_CTL_FLAG: the flags the server reported after */
	char		*folder;	/* owned; where the message is now; may be NULL */
	int64_t		 log_id;	/* write_log.id */
	char		*keywords;	/* owned; MB_CTL_LABEL done: the message's keywords
					 * after, as the server reported them; else NULL */
};

/*
 * What a write process reports to syncd (MB_IPC_WRITE_RESULT, over the
 * socketpair to its parent): a frame type and layout of its own, not a
 * second layout of MB_IPC_CTL_REPLY.  Held by value: nothing to release.
 */
struct mb_ctl_result {
	uint32_t	 outcome;	/* enum mb_ctl_outcome */
	char		 detail[MB_CTL_DETAIL_MAX + 1];	/* NUL-terminated */
	uint32_t	 flags;		/* MB_CTL_FLAG: the flags the server reported after */
	uint32_t	 uidvalidity, uid;	/* COPYUID/APPENDUID; 0 when unknown */
	bool		 used_move;	/* the server did UID MOVE (not COPY + EXPUNGE) */
	bool		 keywords_known;	/* MB_CTL_LABEL: keywords is the fetch's */
	char		 keywords[MB_CTL_KEYWORDS_MAX + 1];	/* NUL-terminated, space-separated */
};

/* Build a request or reply frame with request id id (mb_ipc_out_finish is called). */
int	mb_ctl_put_request(struct mb_ipc_out *o, uint32_t id,
	    const struct mb_ctl_request_view *rq, struct mb_err *err);
int	mb_ctl_put_reply(struct mb_ipc_out *o, uint32_t id, const struct mb_ctl_reply *rp,
	    struct mb_err *err);
/*
 * Decode a payload (the frame's cursor), checking every field: the op, the
 * string lengths, no unknown flag bits, dest present exactly for a move,
 * recipients, subject and body exactly for a draft, labels exactly for a
 * label request (within the limits; their syntax is syncd's to check, so
 * a bad one is refused and logged, not dropped as malformed).
 * -1 (MB_E_PROTO) on any failure; *rq is then released.
 */
int	mb_ctl_get_request(struct mb_ipc_cur *c, struct mb_ctl_request *rq, struct mb_err *err);
int	mb_ctl_get_reply(struct mb_ipc_cur *c, struct mb_ctl_reply *rp, struct mb_err *err);
void	mb_ctl_request_release(struct mb_ctl_request *rq);	/* idempotent */

/* A view of the decoded rq, for encoding it again; valid while rq is. */
void	mb_ctl_request_view(const struct mb_ctl_request *rq, struct mb_ctl_request_view *v);

/*
 * A write result frame (id 0), and its decoder: -1 (MB_E_PROTO) for a
 * malformed one (an unknown outcome, a detail longer than MB_CTL_DETAIL_MAX).
 */
int	mb_ctl_put_result(struct mb_ipc_out *o, const struct mb_ctl_result *r,
	    struct mb_err *err);
int	mb_ctl_get_result(struct mb_ipc_cur *c, struct mb_ctl_result *r, struct mb_err *err);
void	mb_ctl_reply_release(struct mb_ctl_reply *rp);		/* idempotent */

const char	*mb_ctl_op_name(uint32_t op);		/* "flag_message", ...; "?" */
const char	*mb_ctl_outcome_name(uint32_t outcome);	/* "ok", "refused", "failed" */

#endif
