/*
 * A watcher (docs/syncd.md "Push"): a forked process with one IMAP
 * connection that EXAMINEs one folder and stays in IDLE (RFC 2177), telling
 * the scheduler over its socketpair what the server reports (MB_IPC_WATCH:
 * new mail, expunges, flag changes).  It never touches the index and never
 * fetches a message: the scheduler answers an event with a targeted sync
 * through the queue, the workers and the writer.
 *
 * Where the server offers NOTIFY (RFC 5465) and the scheduler handed it
 * other folders, the watcher asks for their events too (NOTIFY SET before
 * the IDLE) and reports each STATUS line the server sends for one of them
 * as a change of that folder: one connection then watches them all.
 *
 * Staying alive: the IDLE is renewed (DONE, IDLE) every SYNC_WATCH_RENEW
 * seconds; a DONE not answered within WATCH_DONE_MS, a lost connection or
 * a BYE means a reconnect, after a backoff that doubles from 1 s to 5 min,
 * with jitter, and goes back to 1 s once a connection has lasted a minute.
 * Every (re)connect is reported (UP), so the scheduler syncs the folder
 * once: mail that arrived while the connection was down is found then.
 *
 * Three things end the watcher, each reported once (MB_IPC_FAIL) before it
 * exits: a refused login (MB_E_AUTH: no further LOGIN until the next tick),
 * a server without IDLE or that refuses it (MB_E_CONFIG: the tick alone
 * serves the folder), and a folder the server will not EXAMINE
 * (MB_E_NOTFOUND).  It dies with the scheduler (PR_SET_PDEATHSIG) and exits
 * when its socket closes.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "syncd.h"

#define WATCH_DONE_MS		10000	/* a DONE (or a line) must be answered within this */
#define WATCH_BACKOFF_MIN_MS	1000
#define WATCH_BACKOFF_MAX_MS	300000
#define WATCH_STABLE_MS		60000	/* a connection this old resets the backoff */

struct watcher {
	const struct sd_watch_args	*a;
	struct mb_ipc_conn		 conn;
	unsigned			 reconnects;
};

/* folder: NULL for the watcher's own (the examined one), else a NOTIFY one's. */
static void
tell(struct watcher *w, enum sd_watch_event ev, uint32_t n, const char *folder,
    const char *detail)
{
	struct mb_ipc_out o;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, MB_IPC_WATCH, 0);
	mb_ipc_put_u32(&o, (uint32_t)ev);
	mb_ipc_put_u32(&o, n);
	mb_ipc_put_u32(&o, w->reconnects);
	mb_ipc_put_str(&o, folder);
	mb_ipc_put_str(&o, detail);
	if (mb_ipc_out_finish(&o, &err) == -1 || mb_ipc_send(&w->conn, &o, &err) == -1)
		_exit(0);	/* the scheduler is gone */
}

_Noreturn static void
give_up(struct watcher *w, const struct mb_err *e, struct mb_imap **imapp)
{
	struct mb_ipc_out o;
	struct mb_err err = { 0 };

	mb_imap_close(imapp);
	mb_ipc_out_begin(&o, MB_IPC_FAIL, 0);
	mb_ipc_put_u32(&o, (uint32_t)e->code);
	mb_ipc_put_str(&o, e->msg);
	if (mb_ipc_out_finish(&o, &err) == 0)
		(void)mb_ipc_send(&w->conn, &o, &err);
	_exit(0);
}

/*
 * Wait up to ms for the scheduler's socket; exit if it closed (the scheduler
 * stopping).  Returns whether fd (another descriptor, -1: none) is readable.
 */
static bool
wait_input(struct watcher *w, int fd, int ms)
{
	struct pollfd pfd[2] = {
		{ .fd = w->a->fd, .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	int r;

	do
		r = poll(pfd, fd >= 0 ? 2 : 1, ms);
	while (r == -1 && errno == EINTR);
	if (pfd[0].revents != 0)
		_exit(0);	/* the scheduler sends nothing: input is its end closing */
	return fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

/* IDLE, renewed, until the connection fails: err says why. */
static void
idle_loop(struct watcher *w, struct mb_imap *imap, struct mb_err *err)
{
	static const enum sd_watch_event map[] = {
		[MB_IMAP_IDLE_EXISTS] = SD_WATCH_EXISTS,
		[MB_IMAP_IDLE_EXPUNGE] = SD_WATCH_EXPUNGE,
		[MB_IMAP_IDLE_FLAGS] = SD_WATCH_FLAGS,
	};
	long long renew_ms = 1000LL * w->a->conf->sync_watch_renew;

	for (;;) {
		long long renew_at = mb_now_ms() + renew_ms;
		bool idling = true;

		mb_imap_set_deadline(imap, mb_now_ms() + WATCH_DONE_MS);
		if (mb_imap_idle_start(imap, err) == -1)
			return;
		mb_imap_set_deadline(imap, 0);
		while (idling) {
			long long left = renew_at - mb_now_ms();
			enum mb_imap_idle_event ev;
			char *other;
			uint32_t n;

			if (!mb_imap_idle_buffered(imap) &&
			    !wait_input(w, mb_imap_idle_fd(imap), left > 0 ? (int)left : 0)) {
				if (mb_now_ms() < renew_at)
					continue;
				/* RFC 2177: servers may drop an IDLE after 30 minutes. */
				mb_imap_set_deadline(imap, mb_now_ms() + WATCH_DONE_MS);
				if (mb_imap_idle_done(imap, err) == -1)
					return;	/* "DONE: deadline passed", or why not */
				mb_imap_set_deadline(imap, 0);
				mb_log_debug("watch: IDLE renewed");
				break;
			}
			/* A line has begun: the rest of it follows at once. */
			mb_imap_set_deadline(imap, mb_now_ms() + WATCH_DONE_MS);
			if (mb_imap_idle_read(imap, &ev, &n, &other, err) == -1)
				return;
			mb_imap_set_deadline(imap, 0);
			switch (ev) {
			case MB_IMAP_IDLE_NOTHING:
				break;
			case MB_IMAP_IDLE_STATUS:
				tell(w, SD_WATCH_CHANGED, 0, other, NULL);
				free(other);
				break;
			case MB_IMAP_IDLE_ENDED:
				mb_log_debug("watch: the server ended the IDLE; idling again");
				idling = false;
				break;
			default:
				tell(w, map[ev], n, NULL, NULL);
				break;
			}
		}
	}
}

_Noreturn void
sd_watch_main(const struct sd_watch_args *a)
{
	static char procname[64];
	struct watcher w = { .a = a };
	struct mb_imap_conf c;
	long long backoff = WATCH_BACKOFF_MIN_MS;

	sd_proc_child_setup(a->parent);
	snprintf(procname, sizeof(procname), "syncd/watch[%.40s]", a->folder);
	mb_log_init(procname, sd_conf_log_level(a->conf));
	mb_ipc_conn_init(&w.conn, a->fd, 0);
	srandom((unsigned)getpid() ^ (unsigned)mb_now_ms());
	sd_imap_conf(a->conf, a->password, &c);
	for (;;) {
		struct mb_imap *imap = NULL;
		struct mb_imap_status st;
		struct mb_err err = { 0 };
		long long up_ms, wait;

		if (mb_imap_connect(&c, &imap, &err) == -1) {
			if (err.code == MB_E_AUTH || err.code == MB_E_CONFIG)
				give_up(&w, &err, &imap);
			goto lost;
		}
		if (!mb_imap_has_capability(imap, "IDLE")) {
			mb_err_set(&err, MB_E_CONFIG, "server does not offer IDLE");
			give_up(&w, &err, &imap);
		}
		mb_imap_set_deadline(imap, mb_now_ms() + WATCH_DONE_MS);
		if (mb_imap_examine(imap, a->folder, &st, &err) == -1) {
			if (err.code == MB_E_NOTFOUND)
				give_up(&w, &err, &imap);
			goto lost;
		}
		/* NOTIFY: this one connection reports the other folders too. */
		if (a->n_others > 0) {
			if (mb_imap_notify_set(imap, a->others, a->n_others, &err) == 0)
				tell(&w, SD_WATCH_NOTIFY, (uint32_t)a->n_others, NULL, NULL);
			else if (err.code == MB_E_CONFIG) {
				mb_log_debug("watch: %s; one connection per folder", err.msg);
				mb_err_clear(&err);
			} else
				goto lost;
		}
		mb_imap_set_deadline(imap, 0);
		up_ms = mb_now_ms();
		tell(&w, SD_WATCH_UP, st.exists, NULL, NULL);
		idle_loop(&w, imap, &err);
		if (err.code == MB_E_CONFIG)	/* IDLE answered with BAD or NO */
			give_up(&w, &err, &imap);
		if (mb_now_ms() - up_ms >= WATCH_STABLE_MS)
			backoff = WATCH_BACKOFF_MIN_MS;
lost:
		mb_imap_close(&imap);
		w.reconnects++;
		/* Jitter: half to one and a half of the backoff, so that watchers
		 * (and other clients) kicked together do not return together. */
		wait = backoff / 2 + random() % (backoff + 1);
		tell(&w, SD_WATCH_LOST, 0, NULL, err.msg);
		mb_log_debug("watch: reconnecting in %lld ms", wait);
		(void)wait_input(&w, -1, (int)wait);
		backoff = backoff * 2 > WATCH_BACKOFF_MAX_MS ? WATCH_BACKOFF_MAX_MS : backoff * 2;
	}
}
