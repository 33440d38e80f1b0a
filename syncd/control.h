/*
 * The control socket (control.c; docs/writes.md): the clients, their
 * requests and the replies.  The writes the requests ask for are
 * writes.c's (writes.h).  Served from the main loop in daemon mode only.
 */
#ifndef SYNCD_CONTROL_H
#define SYNCD_CONTROL_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>

#include "mailbox/err.h"
#include "writes.h"

struct sd;

#define SD_CTL_CLIENTS		16	/* connections at once */
#define SD_CTL_PER_UID		8	/* connections at once from one uid */
/* The listener, the clients and their writes in flight. */
#define SD_CTL_POLLFDS		(1 + SD_CTL_CLIENTS + SD_WRITES_MAX)

/* Open the listener (sd->ctl; none when SYNCD_SOCKET is empty).  -1: cannot serve (logged). */
int	sd_control_open(struct sd *sd);
/* Stop the writes in flight (their clients are told), close every client and the listener. */
void	sd_control_close(struct sd *sd);
/* What to poll: the listener, the clients, the writes in flight (at most SD_CTL_POLLFDS). */
nfds_t	sd_control_pollfds(struct sd *sd, struct pollfd *pfd);
/* Act on what poll said of sd_control_pollfds' descriptors. */
void	sd_control_dispatch(struct sd *sd, const struct pollfd *pfd, nfds_t n);
int	sd_control_timeout(struct sd *sd);	/* ms to the next write deadline; -1 none */
/*
 * Parse SYNCD_ALLOWED_UIDS ("mcpd, 0, imap-mcp"): names or numbers; empty:
 * syncd's own uid.  *uids_r is the caller's to free().
 */
int	sd_control_parse_uids(const char *spec, uid_t **uids_r, size_t *n_r, struct mb_err *err);

#endif
