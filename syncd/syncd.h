/*
 * syncd's parts, shared by main.c and the tests (the static library
 * syncd_parts).  One process role or job per file:
 *
 *	settings.c	the configuration table and its struct
 *	sched.c		the tick: one IMAP session enumerates, finds gaps, queues ranges
 *	reconcile.c	the tick: flags and expunges of mail already indexed
 *	queue.c		the durable work_queue and dead_letters tables
 *	pool.c		the scheduler's side of the workers: spawn, dispatch, deadlines, loss
 *	worker.c	the worker process: fetch a range, normalise, write blobs, send rows
 *	writer.c	the single writer: one transaction per range, then the ack
 *	loop.c		the main loop: poll + signalfd + timers, backfill progress
 *	status.c	--status and --rebuild
 */
#ifndef SYNCD_SYNCD_H
#define SYNCD_SYNCD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "mailbox/conf.h"
#include "mailbox/err.h"
#include "mailbox/imap.h"
#include "mailbox/index.h"
#include "mailbox/ipc.h"

/* ---- settings.c */

struct sd_conf {
	char		*imap_host;
	unsigned	 imap_port;
	unsigned	 imap_tls;		/* enum mb_imap_tls, same order as the choices */
	char		*imap_user;
	char		*imap_password_file;
	char		*imap_ca_file;
	char		*sync_folders;		/* comma-separated; NULL: every selectable folder */
	unsigned	 sync_interval;		/* seconds between tick starts */
	unsigned	 sync_range_size;	/* UIDs per bucket / range */
	unsigned	 sync_max_ranges;	/* new ranges queued per tick (not with --backfill) */
	unsigned	 sync_workers;
	unsigned	 sync_max_attempts;	/* then dead_letters */
	unsigned	 sync_retry_backoff;	/* seconds; doubled per attempt */
	unsigned	 sync_range_timeout;	/* seconds a worker has for one range */
	unsigned	 sync_max_message_size;	/* bytes; larger messages are indexed headers-only */
	char		*data_dir;
	unsigned	 log_level;		/* index into sd_log_levels */
	char		*syncd_socket;		/* the control socket (docs/writes.md) */
	char		*syncd_allowed_uids;	/* who may connect; empty: syncd's own uid */
	unsigned	 write_timeout;		/* seconds one write may take */
	char		*draft_from;		/* From of drafts; NULL: imap_user if an address */
};

extern const struct mb_conf_key	sd_conf_keys[];
extern const size_t		sd_conf_nkeys;
enum mb_log_level	sd_conf_log_level(const struct sd_conf *conf);

/* ---- queue.c: durable ranges in the index */

struct sd_range {
	int64_t		 id;		/* work_queue.id */
	int64_t		 folder_id;
	char		*folder;	/* owned */
	uint32_t	 uidvalidity;
	uint32_t	 first, last;
	unsigned	 attempts;	/* failures so far */
};
void	sd_range_release(struct sd_range *r);

/* Queue first:last unless that exact range is queued; *added_r says which. */
int	sd_queue_add(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint32_t first,
	    uint32_t last, bool *added_r, struct mb_err *err);
/*
 * The oldest range due at now (unix seconds) whose id is not in busy[0..n);
 * 1 and *r filled (the caller releases it), 0 when none is due.
 */
int	sd_queue_take(struct mb_index *idx, int64_t now, const int64_t *busy, size_t n_busy,
	    struct sd_range *r, struct mb_err *err);
/* As sd_queue_take, among the ranges of one folder (folder_id 0: any folder). */
int	sd_queue_take_folder(struct mb_index *idx, int64_t now, int64_t folder_id,
	    const int64_t *busy, size_t n_busy, struct sd_range *r, struct mb_err *err);
/* Done: remove the range (inside the writer's transaction). */
int	sd_queue_ack(struct mb_index *idx, int64_t id, struct mb_err *err);
/*
 * A failed attempt.  Below max_attempts the range waits backoff * 2^(n-1)
 * seconds; at max_attempts it moves to dead_letters, and *dead_r is set; the
 * caller logs the one line naming folder, uidvalidity and range.
 */
int	sd_queue_fail(struct mb_index *idx, const struct sd_range *r, const char *why,
	    unsigned max_attempts, unsigned backoff, int64_t now, bool *dead_r, struct mb_err *err);
/* Drop queued ranges of a folder: every uidvalidity, or all but keep_uidvalidity (!= 0). */
int	sd_queue_drop_folder(struct mb_index *idx, int64_t folder_id, uint32_t keep_uidvalidity,
	    unsigned *dropped_r, struct mb_err *err);
/* Queued ranges, and the earliest not_before among them (0 when none). */
int	sd_queue_depth(struct mb_index *idx, unsigned *depth_r, int64_t *next_due_r,
	    struct mb_err *err);

/* ---- the daemon's state */

enum sd_mode {
	SD_DAEMON,	/* tick now, then every SYNC_INTERVAL */
	SD_ONCE,	/* one tick, drained, then exit */
	SD_BACKFILL,	/* ticks without the per-tick cap until every folder converged */
};

struct sd_worker {
	pid_t			 pid;		/* 0: free slot */
	unsigned		 slot;
	struct mb_ipc_conn	 conn;
	bool			 ready;		/* logged in */
	bool			 busy;		/* has a range */
	bool			 retiring;	/* said FAIL and is exiting: give it nothing */
	struct sd_range		 range;
	long long		 deadline_ms;	/* kill past this (monotonic) */
	struct mb_ipc_row	*rows;		/* received for the range, not yet written */
	size_t			 n_rows, cap_rows;

	/* Session affinity (pool.c): the folder the worker's session has
	 * examined, so its next range is of the same folder when one is due. */
	int64_t			 sel_folder_id;	/* 0: none (new, or its EXAMINE was refused) */
};

/* Per folder, for the backfill's progress display. */
struct sd_progress {
	char		*name;		/* owned */
	int64_t		 folder_id;
	uint32_t	 uidvalidity;
	uint32_t	 total;		/* EXISTS at the last EXAMINE */
	uint64_t	 at_start;	/* indexed when the run started */
	uint64_t	 indexed;	/* indexed now */
};

struct sd {
	const struct sd_conf	*conf;
	const char		*password;	/* borrowed, wiped by main */
	struct mb_index		*idx;
	enum sd_mode		 mode;
	int			 sigfd;
	int			 lock_fd;	/* DATA_DIR/syncd.lock, flocked; workers close it */
	bool			 quit;
	bool			 sync_now;	/* SIGHUP: tick again as soon as this one ends */
	int			 exit_code;

	struct sd_worker	*workers;	/* conf->sync_workers slots */
	bool			 in_tick;
	bool			 auth_blocked;	/* a refused login: nothing until the next tick */
	unsigned		 spawn_failures;	/* workers that died before READY, this tick */
	long long		 tick_started_ms;
	long long		 next_tick_ms;
	unsigned		 ticks;

	/* What the current tick did. */
	unsigned		 tick_queued;	/* ranges added */
	bool			 tick_converged;	/* every folder at the top, nothing queued */
	uint64_t		 tick_rows;	/* rows written */
	unsigned		 tick_dead;	/* ranges dead-lettered */
	unsigned		 idle_ticks;	/* backfill: ticks in a row that wrote nothing */

	/* Backfill progress. */
	struct sd_progress	*progress;
	size_t			 n_progress;
	long long		 run_started_ms;
	long long		 progress_next_ms;
	bool			 progress_tty;
	unsigned		 progress_lines;	/* lines drawn last time (tty) */

	/* The writer's open transaction (writer.c): completed ranges are grouped
	 * into one transaction, committed by size, age or an idle pool. */
	bool			 txn_open;
	long long		 txn_deadline_ms;	/* commit by then (monotonic) */
	uint64_t		 txn_rows;	/* rows written in it so far */
	bool			 write_failed;	/* a group commit failed: end the tick */

	/* Test hook: _exit() at this commit point (0: never).  Odd points are just
	 * before a COMMIT, even ones just after (main.c reads SYNCD_TEST_CRASH_AT_COMMIT). */
	unsigned		 crash_at;
	unsigned		 commit_points;

	struct sd_ctl		*ctl;		/* the control socket (daemon mode); NULL: none */
};

/* Ask the index how many rows a folder has under a uidvalidity. */
int	sd_count_rows(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint64_t *n_r,
	    struct mb_err *err);

/* ---- sched.c */

/* The IMAP settings for the scheduler and the workers (pointers into conf). */
void	sd_imap_conf(const struct sd *sd, struct mb_imap_conf *c);
/*
 * Run the enumeration half of a tick: LOGIN, LIST, EXAMINE each folder,
 * find gaps, queue ranges.  -1 with err: MB_E_AUTH (stop until the next
 * tick), MB_E_CONFIG, or a temporary failure; the tick ends either way.
 */
int	sd_sched_tick(struct sd *sd, struct mb_err *err);
/* SYNC_FOLDERS split on commas, blanks trimmed; *names_r is the caller's. */
int	sd_split_folders(const char *spec, char ***names_r, size_t *n_r);
void	sd_free_names(char **names, size_t n);

/* ---- reconcile.c: flags and expunges of indexed mail (docs/syncd.md) */

/*
 * Bring the flags of st's indexed rows (st: the state recorded by the last
 * tick, same uidvalidity as ex, this tick's EXAMINE) up to date, in the
 * caller's transaction: UID FETCH (CHANGEDSINCE) when HIGHESTMODSEQ moved,
 * with VANISHED under QRESYNC; without mod-sequences a full UID FLAGS
 * rescan when UIDNEXT moved or every 24th tick; nothing otherwise.  The
 * caller records ex's HIGHESTMODSEQ in the same transaction.  -1: IMAP or
 * index error (roll back).
 */
int	sd_reconcile_flags(struct sd *sd, struct mb_imap *imap, const struct mb_folder_state *st,
	    const struct mb_imap_status *ex, struct mb_err *err);
/*
 * Expunges not yet seen: compare EXISTS (less above_wm, the server's UIDs
 * above st->watermark this tick listed) with the rows at or below the
 * watermark; only when they differ, list the UIDs (UID SEARCH), delete the
 * rows the server no longer has, and lower st->watermark below any UID the
 * index lacks (returns 1 then, else 0).  -1: IMAP or index error.
 */
int	sd_reconcile_expunges(struct sd *sd, struct mb_imap *imap, struct mb_folder_state *st,
	    uint32_t exists, size_t above_wm, struct mb_err *err);

/* ---- pool.c */

void	sd_pool_init(struct sd *sd);
/* Start workers and hand out due ranges. */
void	sd_pool_dispatch(struct sd *sd);
/* Read and act on what a worker sent (POLLIN/POLLHUP on its socket). */
void	sd_pool_input(struct sd *sd, struct sd_worker *w);
void	sd_pool_output(struct sd *sd, struct sd_worker *w);
/* Kill workers past their deadline; returns ms to the next deadline (-1 none). */
int	sd_pool_deadlines(struct sd *sd);
/* A child exited (SIGCHLD): reap it and requeue what it held. */
void	sd_pool_reap(struct sd *sd);
unsigned	sd_pool_busy(const struct sd *sd);
/* Stop every worker (TERM, then KILL after a grace period); ranges stay queued. */
void	sd_pool_stop(struct sd *sd);
/* Handle a failure of w's range (code decides: drop, retry, or stop the tick). */
void	sd_pool_range_failed(struct sd *sd, struct sd_worker *w, enum mb_errcode code,
	    const char *why);

/* ---- worker.c */

struct sd_worker_args {
	const struct sd_conf	*conf;
	const char		*password;
	int			 fd;
	unsigned		 slot;
	pid_t			 parent;
};
/* The worker process's body (after fork); never returns. */
_Noreturn void	sd_worker_main(const struct sd_worker_args *a);
/*
 * Store data as DATA_DIR/blobs/ab/cdef... (its sha256): write a temporary
 * file, fsync, rename.  An existing blob is kept.  sha256_r gets the hex.
 */
int	sd_blob_store(const char *data_dir, const void *data, size_t len, char sha256_r[65],
	    struct mb_err *err);

/* ---- writer.c */

/*
 * BEGIN (first committing the writer's open group, if any), with the crash
 * hook's commit counting around sd_commit().
 */
int	sd_begin(struct sd *sd, struct mb_err *err);
int	sd_commit(struct sd *sd, struct mb_err *err);
/*
 * Upsert w's rows and ack its range in the writer's transaction (begun here
 * if none is open), so the range leaves work_queue exactly when its rows are
 * committed.  The transaction is committed once it holds SD_TXN_ROWS rows or
 * is SD_TXN_MS old; otherwise it stays open for the next range.  On failure
 * the whole open group is rolled back (its ranges are queued again) and -1.
 */
int	sd_writer_commit_range(struct sd *sd, struct sd_worker *w, struct mb_err *err);
/* Commit the open group now (no-op when none); -1: rolled back, ranges requeued. */
int	sd_writer_flush(struct sd *sd, struct mb_err *err);
#define SD_TXN_ROWS	1000	/* rows per group commit: ~5 MB staged in the scheduler */
#define SD_TXN_MS	1000	/* the oldest uncommitted row waits at most this (plus a range) */

/* ---- loop.c */

int	sd_run(struct sd *sd);
/* Read every pending signal from the signalfd (non-blocking) and act on it. */
void	sd_signals(struct sd *sd);

/* ---- status.c */

int	sd_status_print(struct mb_index *idx, FILE *out, struct mb_err *err);
/* Empty the index (messages, folders, queue, dead letters); write_log is kept. */
int	sd_rebuild_reset(struct mb_index *idx, struct mb_err *err);

#endif
