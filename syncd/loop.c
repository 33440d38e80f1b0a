/*
 * The main loop: one poll() over the signalfd, the worker sockets and the
 * control socket's descriptors; the timeout is the nearest of the next
 * tick, a worker's deadline, a write's deadline, a queued range's backoff
 * and the progress redraw.  No work happens in a signal handler: signals
 * are blocked, read from the signalfd by proc.c, and acted on here.
 *
 * A tick has two halves.  sched.c enumerates (blocking, bounded by
 * deadlines) and queues ranges; then the loop drains the queue through the
 * workers until nothing is due, in flight, or waiting out a backoff.  Then
 * the workers are stopped (an idle IMAP connection held for an hour helps
 * nobody) and the next tick is SYNC_INTERVAL after this one started.  After
 * a push they are kept SYNC_PUSH_KEEP seconds (sd_pool_keep_warm; not with
 * OAuth): the next push's fetch then needs no LOGIN and no EXAMINE.  So is the push's
 * own session (sched.c, push_session): the next push EXAMINEs on it.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/notify.h"
#include "control.h"
#include "syncd.h"
#include "writes.h"

/* A due tick waiting for a write looks again this often (the write's answer wakes poll too). */
#define SD_WRITE_WAIT_MS	50

/* Act on the signals proc.c has read (at the top of every turn, and after poll). */
static void
signals(struct sd *sd)
{
	unsigned sig = sd_proc_take(&sd->proc);

	if (sig & SD_SIG_STOP) {
		if (!sd->tick.quit)
			mb_log_info("%s: finishing the write in progress and stopping",
			    sd->proc.stop_signo == SIGTERM ? "SIGTERM" : "SIGINT");
		sd->tick.quit = true;
	}
	if (sig & SD_SIG_CHLD)
		sd_proc_reap(&sd->proc);	/* each child's owner hears of its exit */
	/* "Sync now": the next tick starts as soon as this one is over. */
	if ((sig & SD_SIG_HUP) && sd->mode == SD_DAEMON) {
		mb_log_info("SIGHUP: syncing now");
		sd->tick.sync_now = true;
		if (!sd->tick.in_tick)
			sd->tick.next_tick_ms = 0;
	}
}

static void
tick_start(struct sd *sd)
{
	struct mb_err err = { 0 };

	sd->tick.ticks++;
	sd->tick.sync_now = false;
	sd->tick.tick_started_ms = mb_now_ms();
	sd->tick.wait_ms = 0;
	sd_pool_tick_begin(sd);
	sd_writer_tick_begin(sd);
	sd_watch_tick_begin(sd);
	mb_log_debug("tick %u", sd->tick.ticks);
	if (sd_sched_tick(sd, &err) == -1) {
		switch (err.code) {
		/* No worker starts: the tick is over until the next one. */
		case MB_E_AUTH:
			mb_log_error("login refused: %s; not retrying until the next tick", err.msg);
			sd_watch_auth_failed(sd);
			break;
		case MB_E_CONFIG:
			mb_log_error("%s; not retrying until the next tick", err.msg);
			break;
		default:
			mb_log_warnx("tick: %s", err.msg);
			break;
		}
		sd->tick.in_tick = false;
		sd->tick.exit_code = err.code == MB_E_AUTH ? SD_EXIT_AUTH :
		    err.code == MB_E_CONFIG ? SD_EXIT_CONFIG : SD_EXIT_FAIL;
		return;
	}
	sd->tick.exit_code = SD_EXIT_OK;
	sd->tick.in_tick = true;
	if (sd->sched.tick_queued > 0)
		mb_log_info("tick %u: %u range%s queued", sd->tick.ticks, sd->sched.tick_queued,
		    sd->sched.tick_queued == 1 ? "" : "s");
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
	if (sd->pool.auth_blocked || sd->writer.write_failed || sd->tick.quit)
		return sd_pool_busy(sd) == 0 || sd->tick.quit;
	if (sd_pool_busy(sd) > 0)
		return false;
	if (sd_queue_depth(sd->idx, &depth, &next, &err) == -1) {
		mb_log_error("%s", err.msg);
		return true;
	}
	if (depth == 0)
		return true;
	/* Workers that cannot start (server down) end the tick; ranges wait. */
	if (sd->pool.spawn_failures >= 3) {
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
	unsigned busy;

	if (!sd->writer.txn_open)
		return;
	busy = sd_pool_busy(sd);
	/* a failure is logged there, and the tick then ends */
	if (force || busy == 0 || mb_now_ms() >= sd->writer.txn_deadline_ms)
		(void)sd_writer_flush(sd, busy > 0, &err);
}

/*
 * Push: a targeted sync of one folder (docs/syncd.md "Push"), drained like a
 * tick but not one: the tick count and the next tick's time stay as they are.
 */
static void
targeted_start(struct sd *sd, char *folder)
{
	struct mb_err err = { 0 };

	sd->tick.targeted = folder;
	sd->tick.tick_started_ms = mb_now_ms();
	sd->tick.wait_ms = 0;
	sd_pool_round_begin(sd);
	sd_writer_tick_begin(sd);
	if (sd_sched_folder(sd, folder, &err) == -1) {
		if (err.code == MB_E_AUTH) {
			mb_log_error("login refused: %s; not retrying until the next tick", err.msg);
			sd_watch_auth_failed(sd);
		} else
			mb_log_warnx("watch '%s': sync: %s", folder, err.msg);
		free(sd->tick.targeted);
		sd->tick.targeted = NULL;
		return;
	}
	sd->tick.in_tick = true;
}

static void
targeted_end(struct sd *sd)
{
	writer_tend(sd, true);
	sd_writer_bounds_rest(sd);
	sd_pool_keep_warm(sd);
	sd->tick.in_tick = false;
	if (sd->pool.auth_blocked)
		sd_watch_auth_failed(sd);
	mb_log_info("watch '%s': %llu message%s written in %.2f s", sd->tick.targeted,
	    (unsigned long long)sd->writer.tick_rows, sd->writer.tick_rows == 1 ? "" : "s",
	    (double)(mb_now_ms() - sd->tick.tick_started_ms) / 1000.0);
	free(sd->tick.targeted);
	sd->tick.targeted = NULL;
	if (sd->tick.sync_now)
		sd->tick.next_tick_ms = 0;
}

/* A tick that found nothing left to fetch: merge the full-text index if due. */
static void
merge_when_caught_up(struct sd *sd)
{
	if (sd->sched.tick_converged && !sd->writer.write_failed && !sd->pool.auth_blocked)
		sd_writer_merge_check(sd);
}

/*
 * Where the tick's time went in the scheduler, the single writer: with one
 * process writing, a tick can go no faster than its writing, and the wait
 * on the workers is all that more overlap with them could win back
 * (docs/syncd.md, "The writer"; scripts/bench-syncd sums these lines).
 */
static void
log_tick_time(const struct sd *sd)
{
	const double s = 1000.0;

	mb_log_info("tick %u time: staging %.1f s, committing %.1f s, ranking bounds %.1f s, "
	    "waiting for workers %.1f s", sd->tick.ticks, (double)sd->writer.stage_ms / s,
	    (double)sd->writer.commit_ms / s, (double)sd->writer.bounds_ms / s,
	    (double)sd->tick.wait_ms / s);
}

static void
tick_end(struct sd *sd)
{
	if (sd->tick.targeted != NULL) {
		targeted_end(sd);
		return;
	}
	writer_tend(sd, true);
	sd_writer_bounds_rest(sd);
	sd_pool_stop(sd);
	sd->tick.in_tick = false;
	if (sd->pool.auth_blocked)
		sd_watch_auth_failed(sd);
	else
		sd_watch_start(sd);
	sd->tick.next_tick_ms = sd->tick.sync_now ? 0 :
	    sd->tick.tick_started_ms + 1000LL * sd->conf->sync_interval;
	mb_log_info("tick %u done: %llu message%s written%s in %.1f s", sd->tick.ticks,
	    (unsigned long long)sd->writer.tick_rows, sd->writer.tick_rows == 1 ? "" : "s",
	    sd->pool.tick_dead ? ", some ranges dead-lettered" : "",
	    (double)(mb_now_ms() - sd->tick.tick_started_ms) / 1000.0);
	if (sd->writer.tick_rows > 0)
		log_tick_time(sd);
	sd->tick.partial |= sd->pool.tick_dead > 0;
	/* What --once and --backfill exit with: the worst of the run. */
	if (sd->pool.auth_blocked)
		sd->tick.exit_code = SD_EXIT_AUTH;
	else if (sd->writer.write_failed)
		sd->tick.exit_code = SD_EXIT_FAIL;
	else if (sd->tick.partial && sd->tick.exit_code == SD_EXIT_OK)
		sd->tick.exit_code = SD_EXIT_PARTIAL;
	if (sd->mode == SD_ONCE)
		sd->tick.quit = true;
	if (sd->mode != SD_BACKFILL) {
		merge_when_caught_up(sd);
		return;
	}
	sd_progress_draw(&sd->progress, sd->idx, sd->tick.run_started_ms, true);
	if (sd->pool.auth_blocked || sd->writer.write_failed) {
		sd->tick.quit = true;
	} else if (sd->sched.tick_converged) {
		sd_progress_say(&sd->progress, "backfill: every folder is indexed");
		merge_when_caught_up(sd);
		sd->tick.quit = true;
	} else if (sd->writer.tick_rows == 0 && ++sd->tick.idle_ticks >= 2) {
		/* Two ticks wrote nothing and did not converge: ranges keep failing
		 * or workers cannot log in.  Another tick would only do it again. */
		sd_progress_say(&sd->progress,
		    "backfill: no progress (ranges keep failing); see syncd --status");
		sd->tick.exit_code = SD_EXIT_PARTIAL;
		sd->tick.quit = true;
	} else {
		if (sd->writer.tick_rows > 0)
			sd->tick.idle_ticks = 0;
		sd->tick.next_tick_ms = mb_now_ms();	/* straight into the next tick */
	}
	fflush(stdout);
}

int
sd_run(struct sd *sd)
{
	struct pollfd *pfd = mb_xcalloc(1 + sd->conf->sync_workers + SD_CTL_POLLFDS +
	    sd_watch_max_pollfds(sd), sizeof(*pfd));
	nfds_t n_work, n_ctl;
	char *due_folder;
	bool writing;

	sd_pool_init(sd);
	if (sd->mode == SD_DAEMON && sd_control_open(sd) == -1) {
		free(pfd);
		return 1;
	}
	if (sd->mode == SD_DAEMON)
		sd_watch_init(sd);
	sd->tick.run_started_ms = mb_now_ms();
	sd->tick.next_tick_ms = sd->tick.run_started_ms;
	sd_progress_init(&sd->progress, isatty(STDOUT_FILENO));
	(void)mb_notify("READY=1\nSTATUS=syncing");	/* systemd Type=notify */
	while (!sd->tick.quit) {
		long long now = mb_now_ms(), t0;
		int timeout = -1, wait_ms, dl, r, wd = mb_notify_watchdog();
		nfds_t n = 0;

		signals(sd);
		if (sd->tick.quit)
			break;
		/*
		 * No tick starts while a write is in flight: its answer re-keys
		 * the row it moved, and a tick between the server's MOVE and that
		 * answer saw the message vanish and deleted the row first
		 * (test_writes met it).  A write ends by its deadline.
		 */
		writing = sd_writes_in_flight(sd);
		if (!sd->tick.in_tick && !writing && now >= sd->tick.next_tick_ms) {
			tick_start(sd);
			if (!sd->tick.in_tick) {	/* the tick failed before any work */
				sd->tick.next_tick_ms = sd->tick.tick_started_ms + 1000LL * sd->conf->sync_interval;
				if (sd->mode != SD_DAEMON)
					break;
			}
			continue;
		}
		if (!sd->tick.in_tick && !writing && (due_folder = sd_watch_take_due(sd)) != NULL) {
			targeted_start(sd, due_folder);
			continue;
		}
		if (sd->tick.in_tick) {
			writer_tend(sd, false);
			sd_pool_dispatch(sd);
			if (tick_drained(sd, &wait_ms)) {
				tick_end(sd);
				continue;
			}
			if (wait_ms >= 0 && sd_pool_busy(sd) == 0)
				timeout = wait_ms + 50;
		} else if (sd->writer.merge_pending && !writing) {
			sd_writer_merge_step(sd);	/* then look at everything else */
			timeout = 0;
		} else
			timeout = (int)(sd->tick.next_tick_ms - now);
		dl = sd_pool_deadlines(sd);
		if (dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		if (sd->writer.txn_open) {
			long long due = sd->writer.txn_deadline_ms - mb_now_ms();

			dl = due < 0 ? 0 : (int)due;
			if (timeout < 0 || dl < timeout)
				timeout = dl;
		}
		dl = sd_watch_timeout(sd);
		if (!sd->tick.in_tick && dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		dl = sd->tick.in_tick ? -1 : sd_pool_warm_timeout(sd);
		if (dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		dl = sd->tick.in_tick ? -1 : sd_sched_kept_timeout(sd);
		if (dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		dl = sd_control_timeout(sd);
		if (dl >= 0 && (timeout < 0 || dl < timeout))
			timeout = dl;
		if (sd->mode == SD_BACKFILL) {
			sd_progress_draw(&sd->progress, sd->idx, sd->tick.run_started_ms, false);
			if (timeout < 0 || timeout > (int)(sd->progress.next_ms - mb_now_ms()))
				timeout = (int)(sd->progress.next_ms - mb_now_ms());
		}
		if (timeout < 0 && !sd->tick.in_tick)
			timeout = 0;
		if (sd->tick.in_tick && timeout < 0)
			timeout = 1000;	/* workers starting: look again soon */
		if (timeout < 0)
			timeout = 0;
		/* a tick or a folder is due but waits for the write: its answer wakes poll */
		if (writing && !sd->tick.in_tick && timeout < SD_WRITE_WAIT_MS)
			timeout = SD_WRITE_WAIT_MS;
		if (wd >= 0 && wd < timeout)
			timeout = wd;	/* the next WATCHDOG=1 */

		pfd[n++] = (struct pollfd){ .fd = sd->proc.sigfd, .events = POLLIN };
		for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
			struct sd_worker *w = &sd->pool.workers[i];

			if (w->pid == 0)
				continue;
			pfd[n++] = (struct pollfd){ .fd = w->conn.fd, .events = POLLIN |
			    (mb_ipc_want_write(&w->conn) ? POLLOUT : 0) };
		}
		n_work = n;
		n += sd_control_pollfds(sd, pfd + n);
		n_ctl = n;
		n += sd_watch_pollfds(sd, pfd + n);
		t0 = mb_now_ms();
		r = poll(pfd, n, timeout);
		if (sd->tick.in_tick)
			sd->tick.wait_ms += mb_now_ms() - t0;
		if (r == -1) {
			if (errno == EINTR)
				continue;
			mb_fatal("poll");
		}
		if (pfd[0].revents & POLLIN)
			signals(sd);
		sd_control_dispatch(sd, pfd + n_work, n_ctl - n_work);
		sd_watch_dispatch(sd, pfd + n_ctl, n - n_ctl);
		for (nfds_t k = 1; k < n_work; k++) {
			for (unsigned i = 0; i < sd->conf->sync_workers; i++) {
				struct sd_worker *w = &sd->pool.workers[i];

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
	sd_sched_release(sd);
	sd_watch_release(sd);
	free(sd->tick.targeted);
	sd->tick.targeted = NULL;
	sd_control_close(sd);
	if (sd->mode == SD_BACKFILL && sd_progress_any(&sd->progress) && !sd->sched.tick_converged)
		sd_progress_draw(&sd->progress, sd->idx, sd->tick.run_started_ms, true);
	if (sd->tick.quit && sd->mode == SD_BACKFILL && !sd->sched.tick_converged && sd->tick.exit_code == 0)
		printf("backfill: stopped; run it again to resume\n");
	free(pfd);
	sd_progress_release(&sd->progress);
	sd_pool_release(sd);
	/* A daemon's failed ticks were logged; being asked to stop is success. */
	return sd->mode == SD_DAEMON ? 0 : sd->tick.exit_code;
}
