/*
 * IPC framing between processes on this host (docs/syncd.md): syncd <-> its
 * workers over socketpairs, and mcpd -> syncd over the control socket.
 *
 * A frame is a fixed 16-byte header, four u32 in host byte order (both ends
 * are on this host): type, len (header + payload), id (request id, echoed in
 * the reply), version (MB_IPC_VERSION); then the payload, built field by
 * field with the typed mb_ipc_put_*() and read back with mb_ipc_get_*().  No
 * struct is ever copied onto the wire.
 *
 * Peers are untrusted (workers parse hostile mail): a receiver checks, in
 * this order, the version, MB_IPC_HDR_LEN <= len <= MB_IPC_MAX, and the
 * channel's allowed-type mask, before it decodes anything; a decoder ends
 * with mb_ipc_end(), so a short or overlong payload is refused.  Every such
 * failure is MB_E_PROTO, and the right answer is to drop the peer.
 */
#ifndef MAILBOX_IPC_H
#define MAILBOX_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/buf.h"
#include "mailbox/err.h"
#include "mailbox/index.h"

#define MB_IPC_VERSION	6		/* bump on ANY wire change (2: create_draft;
				   3: MB_IPC_WRITE_RESULT; 4: an address's group and the
				   In-Reply-To ids; 5: attachment text, MB_IPC_WATCH;
				   6: label_message's labels and keywords) */
#define MB_IPC_HDR_LEN	16u
#define MB_IPC_MAX	(4u << 20)	/* header + payload: a 1 MiB body plus headers fits */
#define MB_IPC_QUEUE_MAX (64u << 20)	/* bytes a writer may have waiting */

enum mb_ipc_type {
	MB_IPC_NONE = 0,
	/* syncd -> worker */
	MB_IPC_RANGE = 1,	/* u64 folder_id, str folder, u32 uidvalidity, u32 first, u32 last,
				   u64 deadline (CLOCK_MONOTONIC ms; one clock for the whole host) */
	/* worker -> syncd */
	MB_IPC_READY,		/* logged in; empty payload */
	MB_IPC_ROW,		/* one normalised message: mb_ipc_put_row() */
	MB_IPC_RANGE_DONE,	/* u32 rows sent */
	MB_IPC_FAIL,		/* u32 enum mb_errcode, str message (for the log) */
	/* mcpd -> syncd control socket: ctl.h */
	MB_IPC_CTL_REQUEST,
	MB_IPC_CTL_REPLY,
	/* a syncd write process -> syncd: mb_ctl_put_result() (ctl.h) */
	MB_IPC_WRITE_RESULT,
	/* syncd's watcher -> syncd: u32 event (enum sd_watch_event), u32 number
	   (EXISTS count, 0 if none), u32 reconnects so far, str folder (NULL: the
	   watcher's own), str detail (for the log) */
	MB_IPC_WATCH,
	MB_IPC_TYPE_MAX
};
#define MB_IPC_BIT(t)	(1u << (t))

/* A frame header as decoded (never read off the wire with memcpy). */
struct mb_ipc_hdr {
	uint32_t	type;
	uint32_t	len;
	uint32_t	id;
	uint32_t	version;
};

/*
 * A read cursor over a payload.  A get past the end, or of a malformed
 * field, sets bad and returns 0/NULL; later gets keep failing (sticky), so a
 * decoder reads every field and checks once, with mb_ipc_end().
 */
struct mb_ipc_cur {
	const uint8_t	*p, *end;
	bool		 bad;
};

uint32_t	 mb_ipc_get_u32(struct mb_ipc_cur *c);
uint64_t	 mb_ipc_get_u64(struct mb_ipc_cur *c);
bool		 mb_ipc_get_bool(struct mb_ipc_cur *c);	/* a byte that must be 0 or 1 */
/* u32 length + bytes; points into the frame (valid as long as the frame). */
const void	*mb_ipc_get_bytes(struct mb_ipc_cur *c, size_t *len_r);
/*
 * A string (a presence byte, then bytes that hold no NUL); NULL when absent
 * or bad (tell them apart with c->bad).  Returns a copy the caller frees.
 */
char		*mb_ipc_get_strdup(struct mb_ipc_cur *c);
/* 0 when every get succeeded and no bytes remain; else -1 (MB_E_PROTO). */
int		 mb_ipc_end(const struct mb_ipc_cur *c, struct mb_err *err);

/* A frame being built.  Puts past MB_IPC_MAX set bad (sticky). */
struct mb_ipc_out {
	struct mb_buf	buf;
	bool		bad;
};
void	mb_ipc_out_begin(struct mb_ipc_out *o, enum mb_ipc_type type, uint32_t id);
void	mb_ipc_put_u32(struct mb_ipc_out *o, uint32_t v);
void	mb_ipc_put_u64(struct mb_ipc_out *o, uint64_t v);
void	mb_ipc_put_bool(struct mb_ipc_out *o, bool v);
void	mb_ipc_put_bytes(struct mb_ipc_out *o, const void *p, size_t len);
void	mb_ipc_put_str(struct mb_ipc_out *o, const char *s);	/* s may be NULL */
/*
 * Patch the length into the header.  -1 (MB_E_INVALID) when a put failed
 * (the frame would pass MB_IPC_MAX); the frame is then unusable.
 */
int	mb_ipc_out_finish(struct mb_ipc_out *o, struct mb_err *err);
void	mb_ipc_out_release(struct mb_ipc_out *o);

/* One decoded frame; cur points into the connection's buffer. */
struct mb_ipc_frame {
	struct mb_ipc_hdr	hdr;
	struct mb_ipc_cur	cur;	/* the payload; valid until the next mb_ipc_next/read/feed */
};

/* One end of a channel: a non-blocking reader and a queued writer. */
struct mb_ipc_conn {
	int		fd;		/* borrowed; -1 for a feed-only reader (tests, fuzzing) */
	uint32_t	allowed;	/* MB_IPC_BIT() of every type this end accepts */
	struct mb_buf	in;		/* received, not yet consumed */
	size_t		in_off;		/* start of the next frame in in */
	struct mb_buf	out;		/* queued, not yet written */
	size_t		out_off;
};

void	mb_ipc_conn_init(struct mb_ipc_conn *c, int fd, uint32_t allowed);
void	mb_ipc_conn_release(struct mb_ipc_conn *c);	/* frees buffers; does not close fd */

/* Append bytes as if read from the fd (tests and fuzzers). */
int	mb_ipc_feed(struct mb_ipc_conn *c, const void *p, size_t n, struct mb_err *err);
/*
 * One read(2) of up to 64 KiB from the fd into the input buffer.  Returns
 * the bytes read, 0 at end of file, -1 on error (MB_E_TEMP; MB_E_PROTO when
 * the peer overfills the buffer).  EAGAIN returns -1 with errno EAGAIN and
 * err untouched: not an error, poll again.
 */
ssize_t	mb_ipc_read(struct mb_ipc_conn *c, struct mb_err *err);
/*
 * The next complete frame: 1 and *f filled, 0 when more bytes are needed,
 * -1 (MB_E_PROTO) on a frame that fails the checks above; the connection is
 * then unusable.  *f is valid until the next call on c.
 */
int	mb_ipc_next(struct mb_ipc_conn *c, struct mb_ipc_frame *f, struct mb_err *err);
/* True when bytes of an incomplete frame are buffered (EOF now is a truncation). */
bool	mb_ipc_pending_input(const struct mb_ipc_conn *c);

/*
 * Queue a finished frame (o is released).  -1 (MB_E_TEMP) when the queue
 * would pass MB_IPC_QUEUE_MAX, or when o is bad.
 */
int	mb_ipc_queue(struct mb_ipc_conn *c, struct mb_ipc_out *o, struct mb_err *err);
/* Write what the fd takes now.  0 (maybe partly written), -1 on error (MB_E_TEMP). */
int	mb_ipc_flush(struct mb_ipc_conn *c, struct mb_err *err);
bool	mb_ipc_want_write(const struct mb_ipc_conn *c);
/* Queue o and write until the queue is empty (blocking fds: workers). */
int	mb_ipc_send(struct mb_ipc_conn *c, struct mb_ipc_out *o, struct mb_err *err);

/*
 * A message row on the wire: everything of struct mb_index_row and its
 * struct mb_msg except attachment bytes (workers store those as blobs and
 * send the sha256) and charsets; an attachment's extracted text and its
 * status travel with it.  Decoding checks every field and ends with
 * mb_ipc_end(); on success *r is the caller's (mb_ipc_row_release).
 */
struct mb_ipc_row {
	struct mb_index_row	 row;	/* row.msg and row.keywords point into the fields below */
	struct mb_msg		*msg;	/* owned */
	char			*keywords;	/* owned; may be NULL */
};
void	mb_ipc_put_row(struct mb_ipc_out *o, const struct mb_index_row *row);
int	mb_ipc_get_row(struct mb_ipc_cur *c, struct mb_ipc_row *r, struct mb_err *err);
void	mb_ipc_row_release(struct mb_ipc_row *r);	/* idempotent */

#endif
