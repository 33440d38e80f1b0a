/*
 * The main loop (docs/syncd.md): one poll() over the signalfd and the worker
 * sockets; the timeout is the nearest of the next tick, a worker's deadline,
 * a queued range's backoff and the progress redraw.  No work happens in a
 * signal handler: signals are blocked and read from the signalfd.
 *
 * A tick has two halves.  sched.c enumerates (blocking, bounded by
 * deadlines) and queues ranges; then the loop drains the queue through the
 * workers until nothing is due, in flight, or waiting out a backoff.  Then
 * the workers are stopped (an idle IMAP connection held for an hour helps
 * nobody) and the next tick is SYNC_INTERVAL after this one started.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/notify.h"
#include "control.h"
#include "syncd.h"

#define PROGRESS_TTY_MS		500
#define PROGRESS_PLAIN_MS	10000

void
sd_signals(struct sd *sd)
{
	struct signalfd_siginfo si;

	if (sd->sigfd < 0)
		return;
	while (read(sd->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			if (!sd->quit)
				mb_log_info("%s: finishing the write in progress and stopping",
				    si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			sd->quit = true;
			break;
		case SIGCHLD:
			sd_pool_reap(sd);
			break;
		case SIGHUP:
			/* "Sync now": the next tick starts as soon as this one is over. */
			if (sd->mode == SD_DAEMON) {
				mb_log_info("SIGHUP: syncing now");
				sd->sync_now = true;
				if (!sd->in_tick)
					sd->next_tick_ms = 0;
			}
			break;
		default:
			break;
		}
	}
}

static void
fmt_duration(char *buf, size_t len, double s)
{
	long t = (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

/* Redraw the backfill's progress: per folder indexed of total, rate, ETA. */
static void
progress_draw(struct sd *sd, bool force)
{
	long long now = mb_now_ms();
	double secs = (double)(now - sd->run_started_ms) / 1000.0;
	struct mb_err err = { 0 };
	unsigned lines = 0;

	if (sd->mode != SD_BACKFILL || (!force && now < sd->progress_next_ms))
		return;
	sd->progress_next_ms = now + (sd->progress_tty ? PROGRESS_TTY_MS : PROGRESS_PLAIN_MS);
	if (sd->progress_tty && sd->progress_lines > 0)
		printf("\033[%uA", sd->progress_lines);	/* back to the top of the block */
	for (size_t i = 0; i < sd->n_progress; i++) {
		struct sd_progress *p = &sd->progress[i];
		double rate, pct;
		char eta[32] = "-";

		if (sd_count_rows(sd->idx, p->folder_id, p->uidvalidity, &p->indexed, &err) == -1)
			break;
		rate = secs > 0.5 ? (double)(p->indexed - p->at_start) / secs : 0;
		pct = p->total ? 100.0 * (double)p->indexed / p->total : 100.0;
		if (pct > 100.0)
			pct = 100.0;
		if (p->indexed >= p->total)
			snprintf(eta, sizeof(eta), "done");
		else if (rate > 0)
			fmt_duration(eta, sizeof(eta), (double)(p->total - p->indexed) / rate);
		if (sd->progress_tty) {
			int bar = (int)(pct / 5), j;
			char b[21];

			for (j = 0; j < 20; j++)
				b[j] = j < bar ? '#' : '.';
			b[20] = '\0';
			printf("\r\033[K%-24.24s [%s] %7llu/%-7u %6.1f msg/s  ETA %s\n", p->name, b,
			    (unsigned long long)p->indexed, p->total, rate, eta);
		} else if (force || p->indexed != p->at_start || p->indexed < p->total)
			printf("backfill: %s: %llu of %u indexed, %.1f msg/s, ETA %s\n", p->name,
			    (unsigned long long)p->indexed, p->total, rate, eta);
		lines++;
	}
	sd->progress_lines = lines;
	fflush(stdout);
}

static void
tick_start(struct sd *sd)
{
	struct mb_err err = { 0 };

	sd->ticks++;
	sd->sync_now = false;
	sd->tick_started_ms = mb_now_ms();
	sd->auth_blocked = false;
	sd->write_failed = false;
	sd->spawn_failures = 0;
	sd->tick_rows = 0;
	sd->tick_dead = 0;
	sd->tick_converged = false;
	mb_log_debug("tick %u", sd->ticks);
	if (sd_sched_tick(sd, &err) == -1) {
		switch (err.code) {
		case MB_E_AUTH:
			mb_log_error("login refused: %s; not retrying until the next tick", err.msg);
			sd->auth_blocked = true;
			break;
		case MB_E_CONFIG:
			mb_log_error("%s; not retrying until the next tick", err.msg);
			sd->auth_blocked = true;
			break;
		default:
			mb_log_warnx("tick: %s", err.msg);
			break;
		}
		sd->in_tick = false;
		sd->exit_code = 1;
		return;
	}
	sd->exit_code = 0;
	sd->in_tick = true;
	if (sd->tick_queued > 0)
		mb_log_info("tick %u: %u range%s queued", sd->ticks, sd->tick_queued,
		    sd->tick_queued == 1 ? "" : "s");
}

/*
 * The drain is over when nothing is in flight and nothing is queued that
 * could run this tick (a refused login stops it at once).  *wait_ms_r gets
 * the time to the next due range otherwise (-1: none pending).
 */
static bool
tick_drained(struct sd *sd, int *wait_ms_r)
{
	unsigned depth = 0;
	int64_t next = 0, now = (int64_t)time(NULL);
	struct mb_err err = { 0 };

	*wait_ms_r = -1;
	if (sd->auth_blocked || sd->write_failed || sd->quit)
		return sd_pool_busy(sd) == 0 || sd->quit;
	if (sd_pool_busy(sd) > 0)
		return false;
	if (sd_queue_depth(sd->idx, &depth, &next, &err) == -1) {
		mb_log_error("%s", err.msg);
		return true;
	}
	if (depth == 0)
		return true;
	/* Workers that cannot start (server down) end the tick; ranges wait. */
	if (sd->spawn_failures >= 3) {
		mb_log_warnx("workers cannot log in; %u range%s left for the next tick", depth,
		    depth == 1 ? "" : "s");
		return true;
	}
	*wait_ms_r = next > now ? (int)((next - now) * 1000) : 0;
	return false;
}

/*
 * Commit the writer's open group when it is due, or when no range is in
 * flight (nothing more would join it soon, and readers should see the rows).
 */
static void
writer_tend(struct sd *sd, bool force)
{
	struct mb_err err = { 0 };

	if (!sd->txn_open)
		return;
	if (force || sd_pool_busy(sd) == 0 || mb_now_ms() >= sd->txn_deadline_ms)
		(void)sd_writer_flush(sd, &err);	/* logged there; the tick then ends */
}

static void
tick_end(struct sd *sd)
{
	writer_tend(sd, true);
	sd_pool_stop(sd);
	sd->in_tick = false;
	sd->next_tick_ms = sd->sync_now ? 0 :
	    sd->tick_started_ms + 1000LL * sd->conf->sync_interval;
	mb_log_info("tick %u done: %llu message%s written%s in %.1f s", sd->ticks,
	    (unsigned long long)sd->tick_rows, sd->tick_rows == 1 ? "" : "s",
	    sd->tick_dead ? ", some ranges dead-lettered" : "",
	    (double)(mb_now_ms() - sd->tick_started_ms) / 1000.0);
	if (sd->mode == SD_ONCE)
		sd->quit = true;
	if (sd->mode != SD_BACKFILL)
		return;
	progress_draw(sd, true);
	if (sd->auth_blocked || sd->write_failed) {
		sd->exit_code = 1;
		sd->quit = true;
	} else if (sd->tick_converged) {
		printf("backfill: every folder is indexed\n");
		sd->progress_lines = 0;	/* the block is above this line now */
		sd->quit = true;
	} else if (sd->tick_rows == 0 && ++sd->idle_ticks >= 2) {
		/* Two ticks wrote nothing and did not converge: ranges keep failing
		 * or workers cannot log in.  Another tick would only do it again. */
		printf("backfill: no progress (ranges keep failing); see syncd --status\n");
		sd->progress_lines = 0;
		sd->exit_code = 1;
		sd->quit = true;
	} else {
		if (sd->tick_rows > 0)
			sd->idle_ticks = 0;
		sd->next_tick_ms = mb_now_ms();	/* straight into the next tick */
	}
	fflush(stdout);
}

int
sd_run(struct sd *sd)
{
	struct pollfd *pfd = mb_xcalloc(1 + sd->conf->sync_workers + SD_CTL_POLLFDS, sizeof(*pfd));
	nfds_t n_work;

	sd_pool_init(sd);
	if (sd->mode == SD_DAEMON && sd_control_open(sd) == -1) {
		free(pfd);
		return 1;
	}
	sd->run_started_ms = mb_now_ms();
	sd->next_tick_ms = sd->run_started_ms;
	sd->progress_tty = isatty(STDOUT_FILENO);
	(void)mb_notify("READY=1\nSTATUS=syncing");	/* systemd Type=notify */
	while (!sd->quit) {
		long long now = mb_now_ms();
		int timeout = -1, wait_ms, dl, wd = mb_notify_watchdog();
		nfds_t n = 0;

		sd_signals(sd);
		if (sd->quit)
			break;
		if (!sd->in_tick && now >= sd->next_tick_ms) {
			tick_start(sd);
			if (!sd->in_tick) {	/* the tick failed before any work */
				sd->next_tick_ms = sd->tick_started_ms + 1000LL * sd->conf->sync_interval;
				if (sd->mode != SD_DAEMON)
					break;
			}
			continue;
		}
		if (sd->in_tick) {
			writer_tend(sd, false);
			sd_pool_dispatch(sd);
			if (tick_drained(sd, &wait_ms)) {
				tick_end(sd);
				continue;
			}
			if (wait_ms >= 0 && sd_pool_busy(sd) == 0)
				timeout = wait_ms + 50;
		} else
			timeout = (int)(sd->next_tick_ms - now);
		dl = sd_pool_deadlines(sd);
		if (dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		if (sd->txn_open) {
			long long due = sd->txn_deadline_ms - mb_now_ms();

			dl = due < 0 ? 0 : (int)due;
			if (timeout < 0 || dl < timeout)
				timeout = dl;
		}
		dl = sd_control_timeout(sd);
		if (dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		if (sd->mode == SD_BACKFILL) {
			progress_draw(sd, false);
			if (timeout < 0 || timeout > (int)(sd->progress_next_ms - mb_now_ms()))
				timeout = (int)(sd->progress_next_ms - mb_now_ms());
		}
		if (timeout < 0 && !sd->in_tick)
			timeout = 0;
		if (sd->in_tick && timeout < 0)
			timeout = 1000;	/* workers starting: look again soon */
		if (timeout < 0)
			timeout = 0;
		if (wd >= 0 && wd < timeout)
			timeout = wd;	/* the next WATCHDOG=1 */

		pfd[n++] = (struct pollfd){ .fd = sd->sigfd, .events = POLLIN };
		for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
			struct sd_worker *w = &sd->workers[i];

			if (w->pid == 0)
				continue;
			pfd[n++] = (struct pollfd){ .fd = w->conn.fd, .events = POLLIN |
			    (mb_ipc_want_write(&w->conn) ? POLLOUT : 0) };
		}
		n_work = n;
		n += sd_control_pollfds(sd, pfd + n);
		if (poll(pfd, n, timeout) == -1) {
			if (errno == EINTR)
				continue;
			mb_fatal("poll");
		}
		if (pfd[0].revents & POLLIN)
			sd_signals(sd);
		sd_control_dispatch(sd, pfd + n_work, n - n_work);
		for (nfds_t k = 1; k < n_work; k++) {
			for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
				struct sd_worker *w = &sd->workers[i];

				if (w->pid == 0 || w->conn.fd != pfd[k].fd)
					continue;
				if (pfd[k].revents & POLLOUT)
					sd_pool_output(sd, w);
				if (w->pid != 0 && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
					sd_pool_input(sd, w);
				break;
			}
		}
	}
	(void)mb_notify("STOPPING=1");
	/* Stopping: the ranges in the open group are complete; keep them. */
	writer_tend(sd, true);
	sd_pool_stop(sd);
	sd_control_close(sd);
	if (sd->mode == SD_BACKFILL && sd->n_progress > 0 && !sd->tick_converged)
		progress_draw(sd, true);
	if (sd->quit && sd->mode == SD_BACKFILL && !sd->tick_converged && sd->exit_code == 0)
		printf("backfill: stopped; run it again to resume\n");
	free(pfd);
	for (size_t i = 0; i < sd->n_progress; i++)
		free(sd->progress[i].name);
	free(sd->progress);
	sd->progress = NULL;
	free(sd->workers);
	sd->workers = NULL;
	/* A daemon's failed ticks were logged; being asked to stop is success. */
	return sd->mode == SD_DAEMON ? 0 : sd->exit_code;
}
