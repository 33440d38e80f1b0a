/*
 * The control socket (docs/writes.md): a Unix stream socket that
 * mcpd's write tools reach syncd through.  Non-blocking, served from the
 * main poll loop.  A peer is checked on accept with SO_PEERCRED against
 * SYNCD_ALLOWED_UIDS; connections are capped in all and per uid.  Frames
 * are checked by the IPC reader (version, length, type) and the request
 * decoder; a bad one gets an error reply and a disconnect.
 *
 * A client slot is this file's alone.  A good request is handed to
 * writes.c with the slot's index as its token; the reply comes back as a
 * value (now, or from sd_writes_dispatch when the write process answers)
 * and is queued here on the client that has that slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/unixsock.h"
#include "mailbox/util.h"
#include "control.h"
#include "syncd.h"

struct sd_client {
	int			 fd;		/* -1: free slot */
	uid_t			 uid;
	pid_t			 pid;
	struct mb_ipc_conn	 conn;
	bool			 closing;	/* flush the queued reply, then close */
};

/* control.c's state (sd->ctl). */
struct sd_ctl {
	int			 lfd;
	char			*path;		/* owned */
	uid_t			*allowed;	/* owned */
	size_t			 n_allowed;
	struct sd_client	 clients[SD_CTL_CLIENTS];
};

/* A slot's index is its token for writes.c. */
_Static_assert(SD_CTL_CLIENTS <= SD_WRITES_MAX, "a token per client slot");

static unsigned
token(const struct sd_ctl *ctl, const struct sd_client *cl)
{
	return (unsigned)(cl - ctl->clients);
}

/* cl's request is being written: nothing more is read from it meanwhile. */
static bool
writing(const struct sd *sd, const struct sd_client *cl)
{
	return sd_write_busy(sd, token(sd->ctl, cl));
}

int
sd_control_parse_uids(const char *spec, uid_t **uids_r, size_t *n_r, struct mb_err *err)
{
	char *copy = mb_xstrdup(spec ? spec : ""), *save = NULL, *tok;
	uid_t *v = NULL;
	size_t n = 0;

	for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		unsigned long long u;
		struct passwd *pw;

		if (mb_conf_parse_uint(tok, 0, UINT_MAX - 1, &u) == 0)
			;
		else if ((pw = getpwnam(tok)) != NULL)
			u = pw->pw_uid;
		else {
			free(copy);
			free(v);
			return mb_err_set(err, MB_E_CONFIG,
			    "SYNCD_ALLOWED_UIDS: '%s' is neither a uid nor a user", tok);
		}
		v = mb_xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = (uid_t)u;
	}
	free(copy);
	if (n == 0) {	/* empty: syncd's own user only */
		v = mb_xmalloc(sizeof(*v));
		v[n++] = geteuid();
	}
	*uids_r = v;
	*n_r = n;
	return 0;
}

static bool
uid_allowed(const struct sd_ctl *ctl, uid_t uid)
{
	for (size_t i = 0; i < ctl->n_allowed; i++)
		if (ctl->allowed[i] == uid)
			return true;
	return false;
}

/*
 * Bind the listener (include/mailbox/unixsock.h): a live syncd's socket is
 * not stolen, a dead one's is replaced, anything else is left alone.
 */
static int
listen_socket(const char *path)
{
	struct mb_err err = { 0 };
	int fd = mb_unix_listen(path, 0660, MB_UNIX_NONBLOCK, 16, &err);

	if (fd == -1)
		mb_log_error("control: SYNCD_SOCKET: %s", err.msg);
	return fd;
}

int
sd_control_open(struct sd *sd)
{
	struct sd_ctl *ctl;
	struct mb_err err = { 0 };

	if (sd->conf->syncd_socket == NULL || *sd->conf->syncd_socket == '\0')
		return 0;
	ctl = mb_xcalloc(1, sizeof(*ctl));
	ctl->lfd = -1;
	for (size_t i = 0; i < SD_CTL_CLIENTS; i++)
		ctl->clients[i].fd = -1;
	if (sd_control_parse_uids(sd->conf->syncd_allowed_uids, &ctl->allowed, &ctl->n_allowed,
	    &err) == -1) {
		mb_log_error("%s", err.msg);
		free(ctl);
		return -1;
	}
	if ((ctl->lfd = listen_socket(sd->conf->syncd_socket)) == -1) {
		free(ctl->allowed);
		free(ctl);
		return -1;
	}
	ctl->path = mb_xstrdup(sd->conf->syncd_socket);
	sd->ctl = ctl;
	mb_log_info("control: listening on %s", ctl->path);
	return 0;
}

static void
client_close(struct sd_client *cl)
{
	if (cl->fd < 0)
		return;
	close(cl->fd);
	mb_ipc_conn_release(&cl->conn);
	cl->fd = -1;
	cl->closing = false;
}

/* A slot is free when no connection and no write use it. */
static bool
slot_free(const struct sd *sd, const struct sd_client *cl)
{
	return cl->fd < 0 && !writing(sd, cl);
}

/* Queue a reply on cl (nothing when the client is gone). */
static void
client_reply(struct sd_client *cl, uint32_t id, const struct mb_ctl_reply *rp)
{
	struct mb_ipc_out o;
	struct mb_err err = { 0 };

	if (cl->fd < 0)
		return;
	if (mb_ctl_put_reply(&o, id, rp, &err) == -1) {
		mb_ipc_out_release(&o);
		mb_log_warnx("control: reply to pid %ld: %s", (long)cl->pid, err.msg);
		client_close(cl);
		return;
	}
	if (mb_ipc_queue(&cl->conn, &o, &err) == -1) {
		mb_log_warnx("control: reply to pid %ld: %s", (long)cl->pid, err.msg);
		client_close(cl);
		return;
	}
	if (mb_ipc_flush(&cl->conn, &err) == -1)
		client_close(cl);
}

/* Replies from writes.c, each to the client holding its token (if still connected). */
static void
deliver(struct sd_ctl *ctl, struct sd_write_reply *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		client_reply(&ctl->clients[r[i].token], r[i].req_id, &r[i].rp);
		sd_write_reply_release(&r[i]);
	}
}

void
sd_control_close(struct sd *sd)
{
	struct sd_ctl *ctl = sd->ctl;
	struct sd_write_reply out[SD_WRITES_MAX];

	if (ctl == NULL)
		return;
	deliver(ctl, out, sd_writes_stop(sd, out));	/* logged as failed: stopping */
	for (size_t i = 0; i < SD_CTL_CLIENTS; i++)
		client_close(&ctl->clients[i]);
	if (ctl->lfd >= 0) {
		close(ctl->lfd);
		unlink(ctl->path);
	}
	free(ctl->path);
	free(ctl->allowed);
	free(ctl);
	sd->ctl = NULL;
}

nfds_t
sd_control_pollfds(struct sd *sd, struct pollfd *pfd)
{
	struct sd_ctl *ctl = sd->ctl;
	nfds_t n = 0;

	if (ctl == NULL)
		return 0;
	pfd[n++] = (struct pollfd){ .fd = ctl->lfd, .events = POLLIN };
	for (size_t i = 0; i < SD_CTL_CLIENTS; i++) {
		struct sd_client *cl = &ctl->clients[i];

		if (cl->fd >= 0) {
			short ev = mb_ipc_want_write(&cl->conn) ? POLLOUT : 0;

			if (!cl->closing && !writing(sd, cl))
				ev |= POLLIN;	/* one request at a time per connection */
			pfd[n++] = (struct pollfd){ .fd = cl->fd, .events = ev };
		}
	}
	return n + sd_writes_pollfds(sd, pfd + n);
}

static void
do_accept(struct sd *sd)
{
	struct sd_ctl *ctl = sd->ctl;
	struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cred);
	struct sd_client *slot = NULL;
	unsigned same = 0;
	int fd;

	if ((fd = accept4(ctl->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) == -1) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			mb_log_warn("control: accept");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    !uid_allowed(ctl, cred.uid)) {
		mb_log_warnx("control: refused uid %ld pid %ld (not in SYNCD_ALLOWED_UIDS)",
		    (long)cred.uid, (long)cred.pid);
		close(fd);
		return;
	}
	for (size_t i = 0; i < SD_CTL_CLIENTS; i++) {
		struct sd_client *cl = &ctl->clients[i];

		if (cl->fd >= 0 && cl->uid == cred.uid)
			same++;
		if (slot == NULL && slot_free(sd, cl))
			slot = cl;
	}
	if (slot == NULL || same >= SD_CTL_PER_UID) {
		mb_log_warnx("control: refused uid %ld pid %ld: too many connections",
		    (long)cred.uid, (long)cred.pid);
		close(fd);
		return;
	}
	slot->fd = fd;
	slot->uid = cred.uid;	/* write_log records the kernel's word, never the payload's */
	slot->pid = cred.pid;
	slot->closing = false;
	mb_ipc_conn_init(&slot->conn, fd, MB_IPC_BIT(MB_IPC_CTL_REQUEST));
	mb_log_debug("control: connection from uid %ld pid %ld", (long)cred.uid, (long)cred.pid);
}

/* A bad frame: an error reply, then the connection is closed once it is sent. */
static void
client_bad(struct sd_client *cl, uint32_t id, const char *why)
{
	struct mb_ctl_reply rp = { .outcome = MB_CTL_REFUSED, .detail = (char *)why };

	mb_log_warnx("control: uid %ld pid %ld: %s; disconnecting", (long)cl->uid, (long)cl->pid,
	    why);
	/* The input may hold anything: it is not read again. */
	cl->closing = true;
	client_reply(cl, id, &rp);
	if (cl->fd >= 0 && !mb_ipc_want_write(&cl->conn))
		client_close(cl);
}

/* Act on buffered frames while the connection is free: one write in flight at a time. */
static void
client_frames(struct sd *sd, struct sd_client *cl)
{
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	int r;

	while (cl->fd >= 0 && !cl->closing && !writing(sd, cl)) {
		struct mb_ctl_request rq;
		struct sd_write_reply now;

		if ((r = mb_ipc_next(&cl->conn, &f, &err)) == 0)
			return;
		if (r == -1) {
			client_bad(cl, 0, err.msg);
			return;
		}
		if (mb_ctl_get_request(&f.cur, &rq, &err) == -1) {
			client_bad(cl, f.hdr.id, err.msg);
			return;
		}
		if (sd_write_start(sd, token(sd->ctl, cl), cl->uid, f.hdr.id, &rq, &now) == 0)
			deliver(sd->ctl, &now, 1);	/* refused or failed at once */
	}
}

static void
client_input(struct sd *sd, struct sd_client *cl)
{
	struct mb_err err = { 0 };
	ssize_t n;

	n = mb_ipc_read(&cl->conn, &err);
	if (n == -1 && errno == EAGAIN && err.code == 0)
		return;
	if (n == -1) {
		client_bad(cl, 0, err.msg);
		return;
	}
	client_frames(sd, cl);
	if (n == 0 && cl->fd >= 0 && !writing(sd, cl) && !cl->closing) {
		/* EOF: a client that is done, or one that sent half a frame */
		if (mb_ipc_pending_input(&cl->conn))
			mb_log_warnx("control: pid %ld closed mid-frame", (long)cl->pid);
		client_close(cl);
	}
}

void
sd_control_dispatch(struct sd *sd, const struct pollfd *pfd, nfds_t n)
{
	struct sd_ctl *ctl = sd->ctl;
	struct sd_write_reply out[SD_WRITES_MAX];

	if (ctl == NULL)
		return;
	for (nfds_t k = 0; k < n; k++) {
		if (pfd[k].revents == 0)
			continue;
		if (pfd[k].fd == ctl->lfd) {
			do_accept(sd);
			continue;
		}
		for (size_t i = 0; i < SD_CTL_CLIENTS; i++) {
			struct sd_client *cl = &ctl->clients[i];
			struct mb_err err = { 0 };

			if (cl->fd != pfd[k].fd || cl->fd < 0)
				continue;
			if (pfd[k].revents & POLLOUT) {
				if (mb_ipc_flush(&cl->conn, &err) == -1) {
					client_close(cl);
					break;
				}
				if (cl->closing && !mb_ipc_want_write(&cl->conn)) {
					client_close(cl);
					break;
				}
			}
			if (!cl->closing && !writing(sd, cl) &&
			    (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				client_input(sd, cl);
			else if (pfd[k].revents & (POLLHUP | POLLERR))
				client_close(cl);
			break;
		}
	}
	/* The write processes' answers, and the writes past their deadline. */
	deliver(ctl, out, sd_writes_dispatch(sd, pfd, n, out));
	for (size_t i = 0; i < SD_CTL_CLIENTS; i++) {
		struct sd_client *cl = &ctl->clients[i];

		/* a request that arrived behind the one just answered */
		if (cl->fd >= 0 && !writing(sd, cl) && !cl->closing &&
		    mb_ipc_pending_input(&cl->conn))
			client_frames(sd, cl);
	}
}

int
sd_control_timeout(struct sd *sd)
{
	return sd->ctl == NULL ? -1 : sd_writes_timeout(sd);
}
