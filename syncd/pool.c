/*
 * The scheduler's side of the workers.  Workers are forked with a socketpair
 * made before the fork (OpenSMTPD's mproc_fork), take one range at a time,
 * and are untrusted: they parse hostile mail.  Whatever a worker does wrong
 * (dies, stalls past its deadline, sends a frame that fails a check) costs
 * that worker its life and its range one attempt, never the scheduler.
 * The fork, and the reaping, are proc.c's: a worker is in its table with
 * worker_exited as the handler of its exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "syncd.h"

#define FROM_WORKER	(MB_IPC_BIT(MB_IPC_READY) | MB_IPC_BIT(MB_IPC_ROW) | \
			 MB_IPC_BIT(MB_IPC_RANGE_DONE) | MB_IPC_BIT(MB_IPC_FAIL))
#define KILL_GRACE_MS	5000	/* after the worker's own IMAP deadline */
#define SPAWN_FAILURES_MAX 3	/* workers dying before READY, then the tick gives up */

void
sd_pool_init(struct sd *sd)
{
	memset(&sd->pool, 0, sizeof(sd->pool));
	sd->pool.workers = mb_xcalloc(sd->conf->sync_workers, sizeof(*sd->pool.workers));
	for (unsigned i = 0; i < sd->conf->sync_workers; i++)
		sd->pool.workers[i].slot = i + 1;
}

void
sd_pool_tick_begin(struct sd *sd)
{
	sd->pool.auth_blocked = false;
	sd->pool.spawn_failures = 0;
	sd->pool.tick_dead = 0;
}

void
sd_pool_round_begin(struct sd *sd)
{
	sd->pool.spawn_failures = 0;
	sd->pool.tick_dead = 0;
}

void
sd_pool_release(struct sd *sd)
{
	free(sd->pool.workers);
	sd->pool.workers = NULL;
}

static void
rows_release(struct sd_worker *w)
{
	for (size_t i = 0; i < w->n_rows; i++)
		mb_ipc_row_release(&w->rows[i]);
	free(w->rows);
	w->rows = NULL;
	w->n_rows = w->cap_rows = 0;
}

static void
worker_clear(struct sd_worker *w)
{
	unsigned slot = w->slot;

	if (w->conn.fd >= 0)
		close(w->conn.fd);
	mb_ipc_conn_release(&w->conn);
	rows_release(w);
	sd_range_release(&w->range);
	memset(w, 0, sizeof(*w));
	w->slot = slot;
	w->conn.fd = -1;
}

static long long
range_deadline(const struct sd *sd)
{
	return mb_now_ms() + 1000LL * sd->conf->sync_range_timeout;
}

static void worker_exited(void *arg, pid_t pid, int status);

static void
worker_spawn(struct sd *sd, struct sd_worker *w)
{
	struct sd_worker_args a = { sd->conf, NULL, -1, w->slot, getpid() };
	struct mb_err err = { 0 };
	pid_t pid;
	int fd;

	/* With OAuth, a token with a while to live, inherited by the child. */
	if ((a.password = sd_credential(sd, &err)) == NULL) {
		if (!sd->pool.auth_blocked)
			mb_log_error("worker[%u]: %s; no more logins until the next tick", w->slot,
			    err.msg);
		if (err.code == MB_E_AUTH)
			sd->pool.auth_blocked = true;
		else
			sd->pool.spawn_failures++;
		return;
	}
	/* The child holds nothing of its siblings, the signals, the lock, the
	 * control socket or the index (proc.c): workers parse hostile mail, and
	 * one outliving a killed scheduler must not keep the lock. */
	pid = sd_proc_fork(&sd->proc, "worker", worker_exited, sd, &fd, &err);
	if (pid == -1) {
		mb_log_warnx("worker[%u]: %s", w->slot, err.msg);
		sd->pool.spawn_failures++;
		return;
	}
	if (pid == 0) {
		a.fd = fd;
		sd_worker_main(&a);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	mb_ipc_conn_init(&w->conn, fd, FROM_WORKER);
	w->pid = pid;
	w->ready = false;
	w->busy = false;
	w->deadline_ms = range_deadline(sd) + KILL_GRACE_MS;	/* to log in */
	mb_log_debug("worker[%u]: started, pid %ld", w->slot, (long)pid);
}

void
sd_pool_range_failed(struct sd *sd, struct sd_worker *w, enum mb_errcode code, const char *why)
{
	struct sd_range *r = &w->range;
	struct mb_err err = { 0 };
	bool dead = false;

	if (!w->busy)
		return;
	switch (code) {
	case MB_E_AUTH:
	case MB_E_CONFIG:
		/* Not the range's fault: it stays queued, with no attempt spent. */
		if (!sd->pool.auth_blocked)
			mb_log_error("worker[%u]: %s; no more logins until the next tick", w->slot,
			    why);
		sd->pool.auth_blocked = true;
		break;
	case MB_E_NOTFOUND:
	case MB_E_INVALID:
		/* The folder went away or changed uidvalidity: the next tick's LIST
		 * and EXAMINE sort it out; retrying this range cannot help. */
		mb_log_warnx("folder '%s' uidvalidity %u UIDs %u:%u: %s; range dropped", r->folder,
		    r->uidvalidity, r->first, r->last, why);
		if (sd_queue_ack(sd->idx, r->id, &err) == -1)
			mb_log_error("%s", err.msg);
		break;
	default:
		if (sd_begin(sd, &err) == -1 ||
		    sd_queue_fail(sd->idx, r, why, sd->conf->sync_max_attempts,
		    sd->conf->sync_retry_backoff, (int64_t)time(NULL), &dead, &err) == -1 ||
		    sd_commit(sd, &err) == -1) {
			mb_index_rollback(sd->idx);
			mb_log_error("folder '%s' UIDs %u:%u: recording the failure: %s", r->folder,
			    r->first, r->last, err.msg);
			break;
		}
		if (dead) {
			sd->pool.tick_dead++;
			mb_log_error("dead letter: folder '%s' uidvalidity %u UIDs %u:%u failed %u "
			    "times; last error: %s", r->folder, r->uidvalidity, r->first, r->last,
			    r->attempts + 1, why);
		} else
			mb_log_warnx("folder '%s' uidvalidity %u UIDs %u:%u: attempt %u of %u failed: "
			    "%s; retrying in %us", r->folder, r->uidvalidity, r->first, r->last,
			    r->attempts + 1, sd->conf->sync_max_attempts, why,
			    sd->conf->sync_retry_backoff << (r->attempts < 16 ? r->attempts : 16));
		break;
	}
	rows_release(w);
	sd_range_release(&w->range);
	w->busy = false;
	w->deadline_ms = 0;
}

/* The worker is gone or must go: kill it, reap it, account for its range. */
static void
worker_lost(struct sd *sd, struct sd_worker *w, const char *why, bool reaped)
{
	if (!reaped) {
		kill(w->pid, SIGKILL);
		(void)sd_proc_wait(&sd->proc, w->pid, NULL, true);
	}
	if (w->busy && sd->tick.quit) {
		/* Stopping: the range stays queued for the next run, no attempt spent. */
		mb_log_debug("worker[%u]: stopped (%s)", w->slot, why);
		w->busy = false;
	} else if (w->busy) {
		mb_log_warnx("worker[%u]: lost (%s) while on folder '%s' UIDs %u:%u", w->slot, why,
		    w->range.folder, w->range.first, w->range.last);
		sd_pool_range_failed(sd, w, MB_E_TEMP, why);
	} else if (!w->ready) {
		sd->pool.spawn_failures++;
		if (w->retiring)	/* it said why (FAIL) before it went */
			mb_log_debug("worker[%u]: exited without logging in (%s)", w->slot, why);
		else
			mb_log_warnx("worker[%u]: lost before logging in (%s)", w->slot, why);
	} else if (w->retiring) {
		mb_log_debug("worker[%u]: exited after its failure (%s)", w->slot, why);
	} else
		mb_log_debug("worker[%u]: exited (%s)", w->slot, why);
	worker_clear(w);
}

static int
handle_row(struct sd_worker *w, struct mb_ipc_frame *f, struct mb_err *err)
{
	struct mb_ipc_row row;
	const struct sd_range *r = &w->range;

	if (mb_ipc_get_row(&f->cur, &row, err) == -1)
		return -1;
	if (row.row.folder_id != r->folder_id || row.row.uidvalidity != r->uidvalidity ||
	    row.row.uid < r->first || row.row.uid > r->last ||
	    w->n_rows > (size_t)(r->last - r->first)) {
		mb_err_set(err, MB_E_PROTO, "row uid %u outside range %u:%u", row.row.uid,
		    r->first, r->last);
		mb_ipc_row_release(&row);
		return -1;
	}
	if (w->n_rows == w->cap_rows) {
		w->cap_rows = w->cap_rows ? w->cap_rows * 2 : 16;
		w->rows = mb_xrealloc(w->rows, w->cap_rows * sizeof(*w->rows));
	}
	w->rows[w->n_rows++] = row;
	/* row.row points into its own fields, which moved with it: re-aim. */
	w->rows[w->n_rows - 1].row.msg = w->rows[w->n_rows - 1].msg;
	w->rows[w->n_rows - 1].row.keywords = w->rows[w->n_rows - 1].keywords;
	return 0;
}

/* One frame from w; -1 (err set) means drop the worker. */
static int
handle_frame(struct sd *sd, struct sd_worker *w, struct mb_ipc_frame *f, struct mb_err *err)
{
	uint32_t code, count;
	char *msg;

	switch (f->hdr.type) {
	case MB_IPC_READY:
		if (w->ready || mb_ipc_end(&f->cur, err) == -1)
			return mb_err_set(err, MB_E_PROTO, "unexpected READY");
		w->ready = true;
		w->deadline_ms = 0;
		sd->pool.spawn_failures = 0;
		return 0;
	case MB_IPC_ROW:
		if (!w->busy || f->hdr.id != (uint32_t)w->range.id)
			return mb_err_set(err, MB_E_PROTO, "row for a range it does not hold");
		return handle_row(w, f, err);
	case MB_IPC_RANGE_DONE:
		count = mb_ipc_get_u32(&f->cur);
		if (mb_ipc_end(&f->cur, err) == -1)
			return -1;
		if (!w->busy || f->hdr.id != (uint32_t)w->range.id || count != w->n_rows)
			return mb_err_set(err, MB_E_PROTO, "RANGE_DONE with %u rows, %zu received",
			    count, w->n_rows);
		if (sd_writer_commit_range(sd, w, err) == -1) {
			mb_log_error("folder '%s' UIDs %u:%u: writing: %s", w->range.folder,
			    w->range.first, w->range.last, err->msg);
			sd_pool_range_failed(sd, w, MB_E_INTERNAL, err->msg);
			mb_err_clear(err);
			return 0;
		}
		mb_log_debug("folder '%s' UIDs %u:%u: %zu messages written", w->range.folder,
		    w->range.first, w->range.last, w->n_rows);
		rows_release(w);
		sd_range_release(&w->range);
		w->busy = false;
		w->deadline_ms = 0;
		return 0;
	case MB_IPC_FAIL:
		code = mb_ipc_get_u32(&f->cur);
		msg = mb_ipc_get_strdup(&f->cur);
		if (mb_ipc_end(&f->cur, err) == -1 || code == MB_OK || code > MB_E_INTERNAL ||
		    msg == NULL) {
			free(msg);
			return mb_err_set(err, MB_E_PROTO, "malformed FAIL");
		}
		/* Only a missing folder or a changed uidvalidity leaves its session usable. */
		if (code != MB_E_NOTFOUND && code != MB_E_INVALID)
			w->retiring = true;
		if (code == MB_E_NOTFOUND)
			w->sel_folder_id = 0;	/* a refused EXAMINE leaves nothing examined */
		if (w->busy)
			sd_pool_range_failed(sd, w, (enum mb_errcode)code, msg);
		else if (code == MB_E_AUTH || code == MB_E_CONFIG) {
			if (!sd->pool.auth_blocked)
				mb_log_error("worker[%u]: %s; no more logins until the next tick",
				    w->slot, msg);
			sd->pool.auth_blocked = true;
		} else
			mb_log_warnx("worker[%u]: %s", w->slot, msg);
		free(msg);
		return 0;
	}
	return mb_err_set(err, MB_E_PROTO, "frame type %u", f->hdr.type);
}

void
sd_pool_input(struct sd *sd, struct sd_worker *w)
{
	struct mb_err err = { 0 };
	struct mb_ipc_frame f;
	ssize_t n = mb_ipc_read(&w->conn, &err);
	int r;

	if (n == -1 && err.code == MB_OK)
		return;		/* EAGAIN */
	if (n == -1) {
		mb_log_warnx("worker[%u]: %s; killing it", w->slot, err.msg);
		worker_lost(sd, w, err.msg, false);
		return;
	}
	while ((r = mb_ipc_next(&w->conn, &f, &err)) == 1 && w->pid != 0)
		if (handle_frame(sd, w, &f, &err) == -1) {
			r = -1;
			break;
		}
	if (r == -1) {
		mb_log_warnx("worker[%u]: bad frame: %s; killing it", w->slot, err.msg);
		worker_lost(sd, w, "bad frame", false);
		return;
	}
	if (n == 0)
		worker_lost(sd, w, mb_ipc_pending_input(&w->conn) ? "closed mid-frame" :
		    "closed its socket", false);
}

void
sd_pool_output(struct sd *sd, struct sd_worker *w)
{
	struct mb_err err = { 0 };

	if (mb_ipc_flush(&w->conn, &err) == -1)
		worker_lost(sd, w, err.msg, false);
}

unsigned
sd_pool_busy(const struct sd *sd)
{
	unsigned n = 0;

	for (unsigned i = 0; i < sd->conf->sync_workers; i++)
		n += sd->pool.workers[i].busy;
	return n;
}

static void
give_range(struct sd *sd, struct sd_worker *w, struct sd_range *r)
{
	struct mb_ipc_out o;
	struct mb_err err = { 0 };
	long long deadline = range_deadline(sd);

	mb_ipc_out_begin(&o, MB_IPC_RANGE, (uint32_t)r->id);
	mb_ipc_put_u64(&o, (uint64_t)r->folder_id);
	mb_ipc_put_str(&o, r->folder);
	mb_ipc_put_u32(&o, r->uidvalidity);
	mb_ipc_put_u32(&o, r->first);
	mb_ipc_put_u32(&o, r->last);
	mb_ipc_put_u64(&o, (uint64_t)deadline);
	w->range = *r;
	w->busy = true;
	w->sel_folder_id = r->folder_id;	/* the worker examines it, if it has not */
	w->deadline_ms = deadline + KILL_GRACE_MS;
	if (mb_ipc_out_finish(&o, &err) == -1 || mb_ipc_queue(&w->conn, &o, &err) == -1 ||
	    mb_ipc_flush(&w->conn, &err) == -1) {
		mb_ipc_out_release(&o);
		worker_lost(sd, w, err.msg, false);
		return;
	}
	mb_log_debug("worker[%u]: folder '%s' UIDs %u:%u (attempt %u)", w->slot, r->folder,
	    r->first, r->last, r->attempts + 1);
}

/*
 * Give idle w the oldest due range not in busy (of folder_id; 0: of any
 * folder) and add it to busy.  1: given, 0: none due, -1: a queue error
 * (logged).
 */
static int
give_due(struct sd *sd, struct sd_worker *w, int64_t folder_id, int64_t now, int64_t *busy,
    size_t *n_busy, size_t max_busy)
{
	struct sd_range r = { 0 };
	struct mb_err err = { 0 };
	int got = sd_queue_take_folder(sd->idx, now, folder_id, busy, *n_busy, &r, &err);

	if (got == -1) {
		mb_log_error("%s", err.msg);
		return -1;
	}
	if (got == 0)
		return 0;
	give_range(sd, w, &r);
	if (w->busy && *n_busy < max_busy)
		busy[(*n_busy)++] = w->range.id;
	return 1;
}

void
sd_pool_dispatch(struct sd *sd)
{
	int64_t busy[64];
	size_t n_busy = 0;
	unsigned alive = 0, want;
	int64_t now = (int64_t)time(NULL);
	struct mb_err err = { 0 };

	if (sd->pool.auth_blocked || sd->writer.write_failed || sd->tick.quit)
		return;
	for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
		struct sd_worker *w = &sd->pool.workers[i];

		alive += w->pid != 0;
		if (w->busy && n_busy < MB_ARRAY_LEN(busy))
			busy[n_busy++] = w->range.id;
	}
	/*
	 * Session affinity first: an idle worker gets the oldest due range of
	 * the folder its session has examined, so it changes folder (and
	 * EXAMINEs) only when its own has nothing due.
	 */
	for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
		struct sd_worker *w = &sd->pool.workers[i];

		if (w->pid == 0 || !w->ready || w->busy || w->retiring || w->sel_folder_id == 0)
			continue;
		if (give_due(sd, w, w->sel_folder_id, now, busy, &n_busy, MB_ARRAY_LEN(busy)) == -1)
			return;
	}
	/* Idle workers that are logged in get the oldest due ranges. */
	for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
		struct sd_worker *w = &sd->pool.workers[i];
		int got;

		if (w->pid == 0 || !w->ready || w->busy || w->retiring)
			continue;
		got = give_due(sd, w, 0, now, busy, &n_busy, MB_ARRAY_LEN(busy));
		if (got == -1)
			return;
		if (got == 0)
			break;
	}
	/*
	 * More workers while due ranges outnumber the idle ones, up to
	 * SYNC_WORKERS.  Not when every slot is taken: this runs on every turn of
	 * the loop, and counting due ranges is a sorted scan of work_queue (1,000
	 * ranges at 100,000 messages), four times per turn for nothing.
	 */
	if (alive < sd->conf->sync_workers) {
		unsigned due = 0;
		struct sd_range r = { 0 };

		while (due < sd->conf->sync_workers) {
			int got = sd_queue_take(sd->idx, now, busy, n_busy, &r, &err);

			if (got != 1)
				break;
			if (n_busy < MB_ARRAY_LEN(busy))
				busy[n_busy++] = r.id;
			sd_range_release(&r);
			due++;
		}
		want = sd_pool_busy(sd) + due;
		/*
		 * One LOGIN in flight at a time: the next worker starts once the
		 * last has logged in, so a refusal (a password revoked since the
		 * scheduler's LOGIN) is the only one this tick (auth_blocked).
		 */
		for (unsigned i = 0; i < sd->conf->sync_workers; i++)
			if (sd->pool.workers[i].pid != 0 && !sd->pool.workers[i].ready)
				want = 0;
		for (unsigned i = 0; i < sd->conf->sync_workers && alive < want; i++) {
			if (sd->pool.workers[i].pid != 0)
				continue;
			if (sd->pool.spawn_failures >= SPAWN_FAILURES_MAX)
				break;
			worker_spawn(sd, &sd->pool.workers[i]);
			break;
		}
	}
}

int
sd_pool_deadlines(struct sd *sd)
{
	long long now = mb_now_ms(), next = -1;

	for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
		struct sd_worker *w = &sd->pool.workers[i];

		if (w->pid == 0 || w->deadline_ms == 0)
			continue;
		if (now >= w->deadline_ms) {
			mb_log_warnx("worker[%u]: pid %ld passed its deadline; killing it", w->slot,
			    (long)w->pid);
			worker_lost(sd, w, "deadline passed", false);
			continue;
		}
		if (next == -1 || w->deadline_ms - now < next)
			next = w->deadline_ms - now;
	}
	return next > 1000000 ? 1000000 : (int)next;
}

/* proc.c reaped one of the pool's workers (after SIGCHLD): requeue what it held. */
static void
worker_exited(void *arg, pid_t pid, int status)
{
	struct sd *sd = arg;

	for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
		struct sd_worker *w = &sd->pool.workers[i];
		char why[64];
		struct mb_ipc_frame f;
		struct mb_err err = { 0 };
		ssize_t n;
		int r = 0;

		if (w->pid != pid)
			continue;
		/* Take what it said before it died (a FAIL names the cause). */
		for (;;) {
			while ((r = mb_ipc_next(&w->conn, &f, &err)) == 1)
				if (handle_frame(sd, w, &f, &err) == -1) {
					r = -1;
					break;
				}
			if (r == -1 || (n = mb_ipc_read(&w->conn, &err)) <= 0)
				break;
		}
		if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
		else
			snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(status));
		worker_lost(sd, w, why, true);
	}
}

long long
sd_push_keep_ms(const struct sd *sd)
{
	return (long long)sd->conf->sync_push_keep * 1000;
}

int
sd_warm_left(long long until_ms)
{
	long long left = until_ms - mb_now_ms();

	if (until_ms == 0 || left <= 0)
		return -1;
	return left > INT_MAX ? INT_MAX : (int)left;
}

void
sd_pool_keep_warm(struct sd *sd)
{
	/*
	 * Not with OAuth: a worker logs in with the token it was forked with,
	 * and kept from push to push it could outlive it; a session dropped
	 * then would log in again with an expired token, a refusal that stops
	 * every login until the next tick.
	 */
	if (sd->pool.auth_blocked || sd->writer.write_failed || sd->tick.quit ||
	    sd->conf->imap_auth == MB_IMAP_AUTH_OAUTH2 || sd_push_keep_ms(sd) == 0) {
		sd_pool_stop(sd);
		return;
	}
	sd->pool.warm_until_ms = mb_now_ms() + sd_push_keep_ms(sd);
}

int
sd_pool_warm_timeout(struct sd *sd)
{
	int left = sd_warm_left(sd->pool.warm_until_ms);

	if (left < 0 && sd->pool.warm_until_ms != 0) {
		mb_log_debug("workers kept after a push: stopping them");
		sd_pool_stop(sd);	/* clears warm_until_ms */
	}
	return left;
}

void
sd_pool_stop(struct sd *sd)
{
	long long until = mb_now_ms() + 2000;
	bool any = false;

	sd->pool.warm_until_ms = 0;
	for (unsigned i = 0; i < sd->conf->sync_workers; i++)
		if (sd->pool.workers[i].pid != 0) {
			kill(sd->pool.workers[i].pid, SIGTERM);
			any = true;
		}
	while (any) {
		any = false;
		for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
			struct sd_worker *w = &sd->pool.workers[i];
			int r;

			if (w->pid == 0)
				continue;
			r = sd_proc_wait(&sd->proc, w->pid, NULL, false);
			if (r == 0 && mb_now_ms() >= until) {
				kill(w->pid, SIGKILL);
				r = sd_proc_wait(&sd->proc, w->pid, NULL, true);
			}
			if (r != 0) {
				/* Its range stays queued, with no attempt spent. */
				w->busy = false;
				worker_clear(w);
				continue;
			}
			any = true;
		}
		if (any) {
			struct timespec ts = { 0, 10 * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
}
