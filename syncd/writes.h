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
/* The write processes' sockets to poll (at most SD_WRITES_MAX). */
nfds_t	sd_writes_pollfds(const struct sd *sd, struct pollfd *pfd);
/*
 * Read the write processes' answers (pfd[0..n): what poll said, other
 * descriptors ignored) and kill those past their deadline.  The replies of
 * the writes that ended go in out[] (room for SD_WRITES_MAX); their count
 * is returned.
 */
size_t	sd_writes_dispatch(struct sd *sd, const struct pollfd *pfd, nfds_t n,
	    struct sd_write_reply *out);
int	sd_writes_timeout(const struct sd *sd);	/* ms to the next write deadline; -1 none */
/* Stopping: kill every write in flight (logged as failed), replies in out[]; frees the state. */
size_t	sd_writes_stop(struct sd *sd, struct sd_write_reply *out);

#endif
