/*
 * Push, the scheduler's side (docs/syncd.md "Push"): the table of watchers
 * (one process per folder of SYNC_WATCH, at most SYNC_WATCH_MAX; the body
 * is watchproc.c), what they report, and which folder is due for a
 * targeted sync.  The loop runs the targeted sync itself (sched.c, then the
 * same drain as a tick), so the queue, the workers and the single writer
 * stay the only way into the index.
 *
 * NOTIFY (RFC 5465): the first folder's watcher is handed the others; if
 * the server takes NOTIFY SET, that one connection reports every folder
 * (the others are "via NOTIFY", with no process and no cap); if not, each
 * folder up to SYNC_WATCH_MAX gets its own watcher.
 *
 * A burst is one sync: an event marks its folder pending and the sync
 * starts WATCH_SETTLE_MS after the first event; events during a sync mark
 * the folder again, for one more sync after it.  A full tick clears what is
 * pending (its EXAMINE sees it all).
 *
 * The one-LOGIN rule: a refused login anywhere (a watcher, a tick, a
 * targeted sync, a worker) stops every watcher and every targeted sync
 * until the next tick, whose own single LOGIN decides.  A server without
 * IDLE is said once, and the folder is left to the tick.
 *
 * The table is written to DATA_DIR/watch.status (replaced whole at every
 * change) for syncd --status, which runs in another process.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "syncd.h"

#define FROM_WATCHER	(MB_IPC_BIT(MB_IPC_WATCH) | MB_IPC_BIT(MB_IPC_FAIL))
#define WATCH_SETTLE_MS	100	/* a burst's first event waits this for the rest */

enum wstate {
	W_OFF,		/* not started yet, or exited: started again after the next tick */
	W_CONNECTING,
	W_IDLE,
	W_RETRY,	/* connection lost: the watcher reconnects after its backoff */
	W_STOPPED,	/* login refused: until the next tick */
	W_NO_IDLE,	/* the server will not IDLE: the tick alone, for this run */
	W_NOT_FOUND,	/* the folder cannot be examined: until the next tick */
	W_NOTIFY,	/* watched by the first folder's connection (NOTIFY) */
	W_CAPPED,	/* over SYNC_WATCH_MAX and no NOTIFY: the tick alone */
};
static const char *const state_names[] = {
	"off", "connecting", "idle", "reconnecting", "stopped (login refused)",
	"no IDLE (tick only)", "folder not found", "via NOTIFY", "over the cap (tick only)",
};
static const char *const event_names[SD_WATCH_EVENT_MAX] = {
	"connected", "new mail", "expunge", "flags", "connection lost", "notify", "changed",
};
enum { NOTIFY_UNKNOWN, NOTIFY_YES, NOTIFY_NO };

struct watch_one {
	char			*folder;	/* owned */
	pid_t			 pid;		/* 0: no process */
	struct mb_ipc_conn	 conn;
	enum wstate		 state;
	int64_t			 since;		/* unix time the state began */
	int64_t			 last_event;	/* unix time; 0: none yet */
	int			 last_kind;	/* enum sd_watch_event; -1: none */
	unsigned		 reconnects;	/* of earlier processes, this run */
	unsigned		 child_reconnects;	/* of the current process */
	bool			 pending;	/* an event waits for a targeted sync */
	long long		 due_ms;
};

struct sd_watch {
	struct watch_one	*w;
	size_t			 n;
	const char		**others;	/* the names of w[1..n), for NOTIFY */
	int			 notify;	/* NOTIFY_*: what w[0]'s last connection found */
	bool			 notify_seen;	/* w[0] said NOTIFY since its last UP */
	bool			 auth_blocked;
	char			*path;		/* owned: DATA_DIR/watch.status */
};

static void
save(struct sd *sd)
{
	struct sd_watch *t = sd->watch;
	char tmp[4300];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", t->path);
	if ((f = fopen(tmp, "w")) == NULL) {
		mb_log_debug("watch: %s: %s", tmp, strerror(errno));
		return;
	}
	fprintf(f, "syncd %ld %lld\n", (long)getpid(), (long long)time(NULL));
	for (size_t i = 0; i < t->n; i++) {
		const struct watch_one *w = &t->w[i];

		/* One line per watch, tab-separated; the name cannot hold a tab
		 * or a newline here (replaced), so the line parses back. */
		for (const char *p = w->folder; *p; p++)
			fputc(*p == '\t' || *p == '\n' ? '?' : *p, f);
		fprintf(f, "\t%s\t%lld\t%lld\t%s\t%u\n", state_names[w->state],
		    (long long)w->since, (long long)w->last_event,
		    w->last_kind >= 0 ? event_names[w->last_kind] : "-",
		    w->reconnects + w->child_reconnects);
	}
	if (fclose(f) != 0 || rename(tmp, t->path) == -1) {
		mb_log_debug("watch: %s: %s", t->path, strerror(errno));
		unlink(tmp);
	}
}

static void
set_state(struct watch_one *w, enum wstate s)
{
	if (w->state != s)
		w->since = (int64_t)time(NULL);
	w->state = s;
}

/* Whether the ticks sync the folder (SYNC_FOLDERS; INBOX in any case). */
static bool
synced(const struct sd_conf *conf, const char *name)
{
	char **names;
	size_t n;
	bool found = conf->sync_folders == NULL;

	if (found)
		return true;
	sd_split_folders(conf->sync_folders, &names, &n);
	for (size_t i = 0; i < n && !found; i++)
		found = strcasecmp(name, "INBOX") == 0 ? strcasecmp(names[i], "INBOX") == 0 :
		    strcmp(name, names[i]) == 0;
	sd_free_names(names, n);
	return found;
}

void
sd_watch_init(struct sd *sd)
{
	struct sd_watch *t;
	char **names = NULL;
	size_t n = 0, keep;

	sd->watch = NULL;
	if (sd->conf->sync_watch != NULL)
		sd_split_folders(sd->conf->sync_watch, &names, &n);
	/* A push must not index what the ticks do not keep. */
	keep = 0;
	for (size_t i = 0; i < n; i++) {
		if (synced(sd->conf, names[i])) {
			names[keep++] = names[i];
			continue;
		}
		mb_log_warnx("SYNC_WATCH: '%s' is not in SYNC_FOLDERS; not watched", names[i]);
		free(names[i]);
	}
	n = keep;
	if (sd->conf->sync_watch_max == 0 || n == 0) {
		mb_log_info("push off (SYNC_WATCH_MAX=0 or no SYNC_WATCH): new mail waits for "
		    "the tick");
		sd_free_names(names, n);
		return;
	}
	if (n > sd->conf->sync_watch_max)
		mb_log_info("SYNC_WATCH names %zu folders, SYNC_WATCH_MAX allows %u connections: "
		    "'%s' and the rest wait for the tick unless the server offers NOTIFY", n,
		    sd->conf->sync_watch_max, names[sd->conf->sync_watch_max]);
	t = mb_xcalloc(1, sizeof(*t));
	t->w = mb_xcalloc(n, sizeof(*t->w));
	t->others = mb_xcalloc(n, sizeof(*t->others));
	t->n = n;
	for (size_t i = 0; i < n; i++) {
		t->w[i].folder = names[i];
		t->w[i].last_kind = -1;
		t->w[i].conn.fd = -1;
		t->w[i].since = (int64_t)time(NULL);
		if (i > 0)
			t->others[i - 1] = names[i];
	}
	free(names);	/* the strings are the table's now */
	t->path = mb_xcalloc(1, strlen(sd->conf->data_dir) + sizeof("/watch.status"));
	sprintf(t->path, "%s/watch.status", sd->conf->data_dir);
	sd->watch = t;
	save(sd);
}

static struct watch_one *
by_name(struct sd_watch *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcasecmp(name, "INBOX") == 0 ? strcasecmp(t->w[i].folder, "INBOX") == 0 :
		    strcmp(name, t->w[i].folder) == 0)
			return &t->w[i];
	return NULL;
}

static struct watch_one *
by_pid(struct sd_watch *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->w[i].pid == pid)
			return &t->w[i];
	return NULL;
}

static void
conn_close(struct watch_one *w)
{
	if (w->conn.fd >= 0)
		close(w->conn.fd);
	mb_ipc_conn_release(&w->conn);
	w->conn.fd = -1;
}

static void	input(struct sd *sd, struct watch_one *w);
static void	stop_one(struct watch_one *w);
static void	mark_pending(struct watch_one *w);

static void
watcher_exited(void *arg, pid_t pid, int status)
{
	struct sd *sd = arg;
	struct watch_one *w = sd->watch ? by_pid(sd->watch, pid) : NULL;

	if (w == NULL)
		return;
	w->pid = 0;
	/* What it said before it went (the FAIL saying why) may not have been
	 * read yet: read to the end of the socket first. */
	while (w->conn.fd >= 0)
		input(sd, w);
	w->reconnects += w->child_reconnects;
	w->child_reconnects = 0;
	if (w->state == W_CONNECTING || w->state == W_IDLE || w->state == W_RETRY) {
		/* Not an exit it announced: a crash, or killed.  The tick serves
		 * the folder; the next one starts a new watcher. */
		mb_log_warnx("watch '%s': watcher exited (%s %d); started again after the next "
		    "tick", w->folder, WIFSIGNALED(status) ? "signal" : "status",
		    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		set_state(w, W_OFF);
	}
	save(sd);
}

static void
spawn(struct sd *sd, struct watch_one *w)
{
	struct sd_watch *t = sd->watch;
	struct sd_watch_args a = { sd->conf, NULL, -1, w->folder, NULL, 0, getpid() };
	struct mb_err err = { 0 };
	pid_t pid;
	int fd;

	if ((a.password = sd_credential(sd, &err)) == NULL) {
		mb_log_warnx("watch '%s': %s; started again after the next tick", w->folder,
		    err.msg);
		return;
	}
	if (w == &t->w[0]) {
		t->notify_seen = false;
		if (t->n > 1 && t->notify != NOTIFY_NO) {
			a.others = t->others;
			a.n_others = t->n - 1;
		}
	}
	pid = sd_proc_fork(&sd->proc, "watcher", watcher_exited, sd, &fd, &err);
	if (pid == -1) {
		mb_log_warnx("watch '%s': %s", w->folder, err.msg);
		return;
	}
	if (pid == 0) {
		a.fd = fd;
		sd_watch_main(&a);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	mb_ipc_conn_init(&w->conn, fd, FROM_WATCHER);
	w->pid = pid;
	set_state(w, W_CONNECTING);
	mb_log_debug("watch '%s': watcher started, pid %ld", w->folder, (long)pid);
}

void
sd_watch_start(struct sd *sd)
{
	struct sd_watch *t = sd->watch;

	if (t == NULL || t->auth_blocked)
		return;
	for (size_t i = 0; i < t->n; i++) {
		struct watch_one *w = &t->w[i];

		/* The others wait until w[0] has found whether NOTIFY serves them. */
		if (w->pid != 0 || w->state == W_NO_IDLE || (i > 0 && t->notify != NOTIFY_NO))
			continue;
		if (i >= sd->conf->sync_watch_max)
			set_state(w, W_CAPPED);
		else
			spawn(sd, w);
	}
	save(sd);
}

/* w[0] is idling: with NOTIFY the others are its, else each gets its own. */
static void
first_up(struct sd *sd)
{
	struct sd_watch *t = sd->watch;
	int was = t->notify;

	t->notify = t->notify_seen ? NOTIFY_YES : NOTIFY_NO;
	t->notify_seen = false;
	if (t->n == 1)
		return;
	if (t->notify == NOTIFY_NO) {
		sd_watch_start(sd);
		return;
	}
	if (was != NOTIFY_YES)
		mb_log_info("watch: NOTIFY: one connection watches %zu folders", t->n);
	for (size_t i = 1; i < t->n; i++) {
		if (t->w[i].state == W_NOTIFY)
			continue;
		stop_one(&t->w[i]);
		set_state(&t->w[i], W_NOTIFY);
		mark_pending(&t->w[i]);		/* what came before */
	}
}

void
sd_watch_tick_begin(struct sd *sd)
{
	struct sd_watch *t = sd->watch;

	if (t == NULL)
		return;
	t->auth_blocked = false;
	for (size_t i = 0; i < t->n; i++)
		t->w[i].pending = false;	/* this tick's EXAMINE sees it */
}

static void
stop_one(struct watch_one *w)
{
	conn_close(w);		/* the watcher exits when its socket closes */
	if (w->pid != 0)
		kill(w->pid, SIGTERM);	/* or now, if it is blocked in a connect */
}

void
sd_watch_auth_failed(struct sd *sd)
{
	struct sd_watch *t = sd->watch;

	if (t == NULL || t->auth_blocked)
		return;
	t->auth_blocked = true;
	for (size_t i = 0; i < t->n; i++) {
		struct watch_one *w = &t->w[i];

		w->pending = false;
		if (w->state == W_NO_IDLE)
			continue;
		stop_one(w);
		set_state(w, W_STOPPED);
	}
	mb_log_info("watch: stopped until the next tick (a login was refused)");
	save(sd);
}

char *
sd_watch_take_due(struct sd *sd)
{
	struct sd_watch *t = sd->watch;
	long long now = mb_now_ms();

	if (t == NULL || t->auth_blocked)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		struct watch_one *w = &t->w[i];

		if (w->pending && now >= w->due_ms) {
			w->pending = false;
			return mb_xstrdup(w->folder);
		}
	}
	return NULL;
}

int
sd_watch_timeout(const struct sd *sd)
{
	const struct sd_watch *t = sd->watch;
	long long now = mb_now_ms(), best = -1;

	if (t == NULL || t->auth_blocked)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		long long d = t->w[i].due_ms - now;

		if (!t->w[i].pending)
			continue;
		if (d < 0)
			d = 0;
		if (best < 0 || d < best)
			best = d;
	}
	return (int)best;
}

size_t
sd_watch_max_pollfds(const struct sd *sd)
{
	return sd->conf->sync_watch_max;	/* one process per connection */
}

size_t
sd_watch_pollfds(struct sd *sd, struct pollfd *pfd)
{
	struct sd_watch *t = sd->watch;
	size_t n = 0;

	for (size_t i = 0; t != NULL && i < t->n; i++)
		if (t->w[i].pid != 0 && t->w[i].conn.fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = t->w[i].conn.fd, .events = POLLIN };
	return n;
}

static void
mark_pending(struct watch_one *w)
{
	if (!w->pending)
		w->due_ms = mb_now_ms() + WATCH_SETTLE_MS;
	w->pending = true;
}

/* One frame from a watcher; -1: drop it (a frame it should not send). */
static int
frame(struct sd *sd, struct watch_one *w, struct mb_ipc_frame *f, struct mb_err *err)
{
	uint32_t ev, num, rec, code;
	char *detail, *folder;
	struct watch_one *of;

	if (f->hdr.type == MB_IPC_FAIL) {
		code = mb_ipc_get_u32(&f->cur);
		detail = mb_ipc_get_strdup(&f->cur);
		if (mb_ipc_end(&f->cur, err) == -1) {
			free(detail);
			return -1;
		}
		switch (code) {
		case MB_E_AUTH:
			mb_log_error("watch '%s': login refused: %s; no more logins until the next "
			    "tick", w->folder, detail ? detail : "");
			conn_close(w);
			set_state(w, W_STOPPED);
			sd_watch_auth_failed(sd);
			break;
		case MB_E_CONFIG:
			mb_log_info("watch '%s': %s; new mail in it waits for the tick (every %u s)",
			    w->folder, detail ? detail : "", sd->conf->sync_interval);
			set_state(w, W_NO_IDLE);
			/* The same server will not IDLE on the others either. */
			for (size_t i = 0; w == &sd->watch->w[0] && i < sd->watch->n; i++)
				if (sd->watch->w[i].pid == 0)
					set_state(&sd->watch->w[i], W_NO_IDLE);
			break;
		default:
			mb_log_warnx("watch '%s': %s; watching it again after the next tick",
			    w->folder, detail ? detail : "");
			set_state(w, W_NOT_FOUND);
			if (w == &sd->watch->w[0] && sd->watch->notify == NOTIFY_UNKNOWN) {
				sd->watch->notify = NOTIFY_NO;	/* the others on their own */
				sd_watch_start(sd);
			}
			break;
		}
		free(detail);
		save(sd);
		return 0;
	}
	ev = mb_ipc_get_u32(&f->cur);
	num = mb_ipc_get_u32(&f->cur);
	rec = mb_ipc_get_u32(&f->cur);
	folder = mb_ipc_get_strdup(&f->cur);
	detail = mb_ipc_get_strdup(&f->cur);
	if (mb_ipc_end(&f->cur, err) == -1 || ev >= SD_WATCH_EVENT_MAX) {
		free(folder);
		free(detail);
		return mb_err_set(err, MB_E_PROTO, "watcher: bad event");
	}
	/* A STATUS of a folder we do not watch (NOTIFY may say more): ignored. */
	of = folder != NULL ? by_name(sd->watch, folder) : w;
	free(folder);
	if (of == NULL || (of != w && of->state != W_NOTIFY)) {
		free(detail);
		return 0;
	}
	w->child_reconnects = rec;
	switch (ev) {
	case SD_WATCH_UP:
		if (w->reconnects + rec == 0 || w->state == W_CONNECTING)
			mb_log_info("watch '%s': idling (IDLE), %u message%s", w->folder, num,
			    num == 1 ? "" : "s");
		else
			mb_log_info("watch '%s': reconnected (%u reconnect%s), idling", w->folder,
			    w->reconnects + rec, w->reconnects + rec == 1 ? "" : "s");
		set_state(w, W_IDLE);
		mark_pending(w);	/* what came while it was away */
		if (w == &sd->watch->w[0])
			first_up(sd);
		break;
	case SD_WATCH_NOTIFY:
		sd->watch->notify_seen = true;
		break;
	case SD_WATCH_LOST:
		mb_log_info("watch '%s': connection lost (%s); reconnecting", w->folder,
		    detail ? detail : "");
		set_state(w, W_RETRY);
		break;
	default:
		mb_log_debug("watch '%s': %s (%u)", of->folder, event_names[ev], num);
		of->last_event = (int64_t)time(NULL);
		of->last_kind = (int)ev;
		mark_pending(of);
		break;
	}
	free(detail);
	save(sd);
	return 0;
}

static void
input(struct sd *sd, struct watch_one *w)
{
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	ssize_t n;
	int r = 0;

	n = mb_ipc_read(&w->conn, &err);
	if (n == -1 && errno == EAGAIN && err.code == MB_OK) {
		if (w->pid == 0)
			conn_close(w);	/* exited: nothing more will come */
		return;
	}
	while (w->conn.fd >= 0 && (r = mb_ipc_next(&w->conn, &f, &err)) == 1)
		if (frame(sd, w, &f, &err) == -1) {
			r = -1;
			break;
		}
	if (w->conn.fd >= 0 && (n <= 0 || r == -1)) {
		if (r == -1 || n == -1)
			mb_log_warnx("watch '%s': %s", w->folder, err.msg);
		stop_one(w);	/* its exit is heard through proc.c */
	}
}

void
sd_watch_dispatch(struct sd *sd, const struct pollfd *pfd, size_t n)
{
	struct sd_watch *t = sd->watch;

	for (size_t k = 0; t != NULL && k < n; k++) {
		if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		for (size_t i = 0; i < t->n; i++)
			if (t->w[i].pid != 0 && t->w[i].conn.fd == pfd[k].fd) {
				input(sd, &t->w[i]);
				break;
			}
	}
}

void
sd_watch_release(struct sd *sd)
{
	struct sd_watch *t = sd->watch;

	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++) {
		struct watch_one *w = &t->w[i];

		if (w->pid != 0) {
			stop_one(w);
			(void)sd_proc_wait(&sd->proc, w->pid, NULL, true);
		}
		conn_close(w);
		free(w->folder);
	}
	unlink(t->path);
	free(t->path);
	free(t->others);
	free(t->w);
	free(t);
	sd->watch = NULL;
}
