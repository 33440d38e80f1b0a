/*
 * The writes the control socket carries (writes.c; docs/writes.md).
 * writes.c owns each write in flight (its job: the request, what the index
 * said of the message, the forked write process); control.c owns the
 * client that asked.  control.c hands a request in with a token naming
 * the client, and is handed the reply back, now or later, with that token:
 * writes.c never writes on a client.
 */
#ifndef SYNCD_WRITES_H
#define SYNCD_WRITES_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mailbox/ctl.h"

struct sd;
struct sd_conf;

#define SD_WRITES_MAX	16	/* writes in flight at once: tokens are 0..SD_WRITES_MAX-1 */

/* The answer to request req_id of the client named by token. */
struct sd_write_reply {
	unsigned		 token;
	uint32_t		 req_id;
	struct mb_ctl_reply	 rp;	/* detail and folder owned (sd_write_reply_release) */
};
void	sd_write_reply_release(struct sd_write_reply *r);

/*
 * Accept rq (taken over: *rq is emptied) from peer uid: write_log row,
 * checks, and (when they pass) a forked write process.  0: answered now
 * (refused, or failed before anything was tried), *now filled for the
 * caller to send and release.  1: a write process is on it; its reply comes
 * from sd_writes_dispatch or sd_writes_stop.  token (< SD_WRITES_MAX) must
 * have no write in flight.
 */
int	sd_write_start(struct sd *sd, unsigned token, uid_t peer, uint32_t req_id,
	    struct mb_ctl_request *rq, struct sd_write_reply *now);
bool	sd_write_busy(const struct sd *sd, unsigned token);	/* a write in flight */
bool	sd_writes_in_flight(const struct sd *sd);		/* any write */
/* The write processes' sockets to poll (at most SD_WRITES_MAX). */
nfds_t	sd_writes_pollfds(const struct sd *sd, struct pollfd *pfd);
/*
 * Read the write processes' answers (pfd[0..n): what poll said, other
 * descriptors ignored) and kill those past their deadline.  The replies of
 * the writes that ended go in out[] (room for SD_WRITES_MAX), each the
 * caller's to send and release (sd_write_reply_release); their count is
 * returned.
 */
size_t	sd_writes_dispatch(struct sd *sd, const struct pollfd *pfd, nfds_t n,
	    struct sd_write_reply *out);
int	sd_writes_timeout(const struct sd *sd);	/* ms to the next write deadline; -1 none */
/*
 * Stopping: kill every write in flight (logged as failed) and free the
 * state; their replies in out[] as sd_writes_dispatch's.
 */
size_t	sd_writes_stop(struct sd *sd, struct sd_write_reply *out);

/* ---- writeproc.c: the write process */

/* What the write process is to do: the request, and the message as indexed. */
struct sd_write_order {
	uint32_t	 op;		/* enum mb_ctl_op */
	uint32_t	 add, remove;	/* MB_CTL_FLAG: flag bits */
	const char	*folder;	/* the message's folder; NULL for a draft */
	uint32_t	 uidvalidity, uid;
	const char	*dest;		/* move, trash, draft: the destination folder */
	const char *const *labels_add, *const *labels_remove;	/* MB_CTL_LABEL: keywords */
	uint32_t	 n_labels_add, n_labels_remove;
	const char	*raw;		/* draft: the message to append */
	size_t		 raw_len;
	long long	 deadline_ms;	/* its IMAP watchdog fires 500 ms before (monotonic) */
};
/*
 * The write process's body (after sd_proc_fork; fd: its socket): one
 * write, one answer frame on fd, then _exit.  Never returns.
 */
_Noreturn void	sd_write_process(const struct sd_conf *conf, const char *password,
	    const struct sd_write_order *o, int fd);

#endif
