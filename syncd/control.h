/*
 * The control socket (control.c) and the writes it carries (writes.c);
 * docs/writes.md.  Served from the main loop in daemon mode only.
 */
#ifndef SYNCD_CONTROL_H
#define SYNCD_CONTROL_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mailbox/ctl.h"
#include "mailbox/ipc.h"

struct sd;

#define SD_CTL_CLIENTS		16	/* connections at once */
#define SD_CTL_PER_UID		8	/* connections at once from one uid */
#define SD_CTL_POLLFDS		(1 + 2 * SD_CTL_CLIENTS)

/* One write in flight: a forked process with its own IMAP connection. */
struct sd_wjob {
	pid_t			 pid;		/* 0: none */
	struct mb_ipc_conn	 conn;		/* to the write process */
	long long		 deadline_ms;
	uint32_t		 req_id;
	struct mb_ctl_request	 rq;
	uid_t			 peer_uid;
	int64_t			 log_id;
	/* the message as indexed when the write was accepted */
	int64_t			 folder_id;
	char			*folder;	/* owned */
	uint32_t		 uidvalidity, uid;
	char			*keywords;	/* owned; may be NULL */
	uint64_t		 modseq;
	int64_t			 dest_id;	/* move, draft: the destination folder's row */
	char			*dest;		/* owned; move, draft: its name */
	uint32_t		 dest_uidvalidity;
	char			*raw;		/* owned; draft: the message appended */
	size_t			 raw_len;
	int64_t			 draft_id;	/* draft: its row once indexed; 0 before */
};

struct sd_client {
	int			 fd;		/* -1: free slot */
	uid_t			 uid;
	pid_t			 pid;
	struct mb_ipc_conn	 conn;
	bool			 closing;	/* flush the queued reply, then close */
	struct sd_wjob		 job;
};

struct sd_ctl {
	int			 lfd;
	char			*path;		/* owned */
	uid_t			*allowed;	/* owned */
	size_t			 n_allowed;
	struct sd_client	 clients[SD_CTL_CLIENTS];
};

/* control.c: hooks for loop.c */
int	sd_control_open(struct sd *sd);	/* -1: cannot serve (logged) */
void	sd_control_close(struct sd *sd);
nfds_t	sd_control_pollfds(struct sd *sd, struct pollfd *pfd);
void	sd_control_dispatch(struct sd *sd, const struct pollfd *pfd, nfds_t n);
int	sd_control_timeout(struct sd *sd);	/* ms to the next write deadline; -1 none */
/* A write process: close what a child must not hold. */
void	sd_control_child_close(struct sd *sd);
/* Parse SYNCD_ALLOWED_UIDS ("mcpd, 0, imap-mcp"): names or numbers. */
int	sd_control_parse_uids(const char *spec, uid_t **uids_r, size_t *n_r, struct mb_err *err);

/* writes.c */
/*
 * Accept a request from cl: write_log row, checks, and (when they pass) a
 * forked write.  The reply is queued on cl now (refused) or when the write
 * process reports (sd_write_input).
 */
void	sd_write_start(struct sd *sd, struct sd_client *cl, uint32_t req_id,
	    struct mb_ctl_request *rq);
void	sd_write_input(struct sd *sd, struct sd_client *cl);
void	sd_write_expire(struct sd *sd, struct sd_client *cl);	/* past the deadline */
void	sd_write_release(struct sd_wjob *job);
/* Queue a reply on cl (nothing when the client is gone). */
void	sd_control_reply(struct sd_client *cl, uint32_t id, const struct mb_ctl_reply *rp);

#endif
