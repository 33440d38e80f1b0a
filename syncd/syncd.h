/*
 * syncd's parts, shared by main.c and the tests (the static library
 * syncd_parts).  One process role or job per file:
 *
 *	settings.c	the configuration table and its struct; the IMAP settings
 *	sched.c		the tick: one IMAP session enumerates, finds gaps, queues ranges
 *	reconcile.c	the tick: flags and expunges of mail already indexed
 *	attach.c	the tick: attachments' re-extraction and blob collection
 *	queue.c		the durable work_queue and dead_letters tables
 *	proc.c		signals, and every child: the one fork, the table, the reaping
 *	pool.c		the scheduler's side of the workers: spawn, dispatch, deadlines, loss
 *	worker.c	the worker process: fetch a range, normalise, write blobs, send rows
 *	writer.c	the single writer: one transaction per range, then the ack
 *	progress.c	the backfill's progress display
 *	control.c	the control socket: clients, requests, replies (control.h)
 *	writes.c	the writes the control socket carries: checks, jobs, replies (writes.h)
 *	writeproc.c	the write process: one IMAP write, one answer (writes.h)
 *	loop.c		the main loop: poll + signals + timers; the tick's start and end
 *	status.c	--status and --rebuild
 *	watch.c		push: the watchers' table, their events, the targeted syncs due
 *	watchproc.c	a watcher process: one IMAP connection in IDLE on one folder
 *
 * Layering (docs/syncd.md, "Inside syncd"): a file calls only files on
 * lower lines, never one on its own line or above; an event that must go up
 * (a child exited, a write answered) is a callback the upper file
 * registered or a value it is returned.
 *
 *	main.c
 *	loop.c
 *	control.c
 *	sched.c      pool.c       writes.c     watch.c
 *	writer.c     worker.c     writeproc.c  progress.c   status.c     watchproc.c
 *	queue.c      settings.c   proc.c       reconcile.c  attach.c
 *
 * main.c calls loop, proc, settings and status; loop.c calls control,
 * sched, pool, writer, progress, proc and queue; control.c calls writes;
 * sched.c calls reconcile, attach, queue, writer, progress, proc and settings;
 * pool.c calls writer, worker, queue and proc; watch.c calls watchproc,
 * proc and settings; writes.c calls writer,
 * writeproc and proc; writer.c, progress.c and status.c call queue;
 * worker.c and writeproc.c call settings.
 *
 * The daemon's state, struct sd, is one part per module, each written only
 * by the module named on it; the others may read it.  main.c fills in the
 * settings and opens what the parts start from.
 */
#ifndef SYNCD_SYNCD_H
#define SYNCD_SYNCD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "mailbox/conf.h"
#include "mailbox/err.h"
#include "mailbox/extract.h"
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
	unsigned	 sync_flag_budget;	/* flags fetched per tick without CONDSTORE */
	char		*data_dir;
	unsigned	 log_level;		/* index into sd_log_levels */
	char		*syncd_socket;		/* the control socket (docs/writes.md) */
	char		*syncd_allowed_uids;	/* who may connect; empty: syncd's own uid */
	unsigned	 write_timeout;		/* seconds one write may take */
	char		*draft_from;		/* From of drafts; NULL: imap_user if an address */
	char		*sync_since;		/* YYYY-MM-DD: index mail on or after it; NULL: all */
	char		*my_addresses;		/* MY_ADDRESSES: comma-separated; NULL none */
	struct mb_extract_limits extract;	/* attachment text (docs/attachments.md) */
	char		*sync_watch;		/* comma-separated folders held in IDLE */
	unsigned	 sync_watch_max;	/* connections the watch may hold; 0: off */
	unsigned	 sync_watch_renew;	/* seconds between IDLE renewals */
	unsigned	 sync_push_keep;	/* seconds a push keeps its sessions; 0: none */
	/* OAuth 2.0 login (oauth.c, docs/syncd.md "OAuth 2.0") */
	unsigned	 imap_auth;		/* enum mb_imap_auth, same order as the choices */
	char		*oauth_provider;	/* a preset's name, or NULL */
	char		*oauth_token_url;
	char		*oauth_device_url;
	char		*oauth_client_id;
	char		*oauth_client_secret_file;	/* NULL: a public client (or credential) */
	char		*oauth_refresh_token_file;
	char		*oauth_scope;
};

extern const struct mb_conf_key	sd_conf_keys[];
extern const size_t		sd_conf_nkeys;
enum mb_log_level	sd_conf_log_level(const struct sd_conf *conf);
/*
 * The IMAP settings of the scheduler, the workers and the write processes:
 * c's strings point into conf and at password (borrowed; nothing to free).
 */
void	sd_imap_conf(const struct sd_conf *conf, const char *password, struct mb_imap_conf *c);
/* SYNC_FOLDERS split on commas, blanks trimmed; *names_r is the caller's. */
int	sd_split_folders(const char *spec, char ***names_r, size_t *n_r);
void	sd_free_names(char **names, size_t n);
/*
 * Checks across a setting's whole value that the table cannot make: a
 * SYNC_FOLDERS that is not empty but names no folder (" , "), a SYNC_SINCE
 * that is not a real YYYY-MM-DD day.  MB_E_CONFIG naming the key.
 */
int	sd_conf_check(const struct sd_conf *conf, struct mb_err *err);
/*
 * SYNC_SINCE as a day into *day: true when it is set (and valid: checked by
 * sd_conf_check), false when every message is indexed.
 */
bool	sd_conf_since(const struct sd_conf *conf, struct mb_imap_day *day);

/* ---- oauth.c: the access token (docs/syncd.md "OAuth 2.0") */

/*
 * The scheduler's token state.  Only the scheduler refreshes: it makes sure
 * the token has a while to live before it logs in itself and before it
 * forks a worker, a watcher or a write process, which inherit the token in
 * their copy of memory and never reach the token endpoint.
 */
struct sd_oauth {
	char		*refresh_token;	/* owned, wiped */
	char		*client_secret;	/* owned, wiped; NULL: public client */
	char		*access_token;	/* owned, wiped; NULL: none yet */
	long long	 expires_ms;	/* mb_now_ms() at which it expires; 0: not said */
	long long	 lifetime_ms;	/* what the server gave the last one */
	bool		 writable;	/* the refresh token's file can take a rotated one */
	unsigned	 refreshes;	/* grants asked for, for the log */
};

/*
 * Fill in the preset (IMAP_OAUTH_PROVIDER) under what is set, and check that
 * IMAP_AUTH=oauth2 has its settings.  MB_E_CONFIG naming the key.
 */
int	sd_oauth_conf_check(struct sd_conf *conf, struct mb_err *err);
/*
 * Read the refresh token and client secret (file, or creds_dir's
 * imap-oauth-refresh-token and imap-oauth-client-secret).  MB_E_CONFIG.
 */
int	sd_oauth_open(struct sd_oauth *o, const struct sd_conf *conf, const char *creds_dir,
	    struct mb_err *err);
void	sd_oauth_close(struct sd_oauth *o);	/* wipes; idempotent */
/*
 * The credential the IMAP login takes (the password, or an access token with
 * a while to live, refreshed first if not), borrowed until the next call.
 * NULL with err: the refresh failed (MB_E_AUTH: the grant was refused, e.g.
 * a revoked refresh token; MB_E_TEMP: the token endpoint unreachable).
 */
struct sd;
const char	*sd_credential(struct sd *sd, struct mb_err *err);
/*
 * The scheduler's login: sd_imap_conf, mb_imap_connect with the credential;
 * with OAuth, a login refused with a token that was not fresh from the
 * endpoint is retried once after a refresh (it may have been revoked or
 * expired early).  As mb_imap_connect otherwise.
 */
int	sd_connect(struct sd *sd, bool qresync, struct mb_imap **imap_r, struct mb_err *err);
/* syncd --oauth-login: the device authorization grant (RFC 8628); an exit status. */
int	sd_oauth_login(const struct sd_conf *conf, const char *creds_dir);

/* ---- queue.c: durable ranges in the index (libmailbox/core/index_queue.c) */

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

/* ---- proc.c: signals and every child process */

#define SD_SIG_STOP	0x1	/* SIGTERM or SIGINT */
#define SD_SIG_HUP	0x2
#define SD_SIG_CHLD	0x4

/* One child: who reaps it is proc.c; who hears of its exit is on_exit's owner. */
struct sd_child {
	pid_t		 pid;
	const char	*what;		/* static: "worker", "write process" (for the log) */
	void		(*on_exit)(void *arg, pid_t pid, int status);	/* NULL: forgotten */
	void		*arg;
};

/* Written by proc.c only. */
struct sd_proc {
	int		 sigfd;		/* -1: none (the unit tests) */
	unsigned	 pending;	/* SD_SIG_* read and not yet taken */
	int		 stop_signo;	/* the first SIGTERM/SIGINT of pending */
	struct sd_child	*children;	/* owned; the live (unreaped) children */
	size_t		 n_children, cap_children;
};

/*
 * Ignore SIGPIPE, block TERM, INT, CHLD and HUP and open the signalfd they
 * are read from.  -1 with err.  sd_proc_close closes it and frees the table
 * (the children are not touched).
 */
int	sd_proc_open(struct sd_proc *p, struct mb_err *err);
void	sd_proc_close(struct sd_proc *p);
/* Read every pending signal (non-blocking) into p->pending; returns it. */
unsigned	sd_proc_signals(struct sd_proc *p);
/* The same, and clear them: the caller acts on what it is returned. */
unsigned	sd_proc_take(struct sd_proc *p);
/*
 * Fork a child with a socketpair (OpenSMTPD's mproc_fork).  In the child:
 * returns 0, *fd_r is its end, and every other descriptor above stderr is
 * closed (the index's, the lock's, the control socket's, other children's,
 * the signalfd).  In the parent: returns the pid, *fd_r is the parent's end
 * (blocking, close-on-exec; the caller owns it), and the child is in the
 * table: on_exit(arg, pid, status) is called when sd_proc_reap reaps it.
 * -1 with err (MB_E_TEMP) when the socketpair or the fork fails.
 */
pid_t	sd_proc_fork(struct sd_proc *p, const char *what, void (*on_exit)(void *arg, pid_t pid,
	    int status), void *arg, int *fd_r, struct mb_err *err);
/*
 * Reap pid now (block) or if it has exited (!block), taking it out of the
 * table without calling its on_exit: the caller is its owner.  1: reaped
 * (*status_r, if not NULL), 0: still running, -1: not a child (errno).
 */
int	sd_proc_wait(struct sd_proc *p, pid_t pid, int *status_r, bool block);
/* After SIGCHLD: reap every exited child of the table, each by its pid, and tell its owner. */
void	sd_proc_reap(struct sd_proc *p);
/*
 * In a child that holds the password (a worker, a watcher), first thing:
 * die with the scheduler (and exit now if parent is already gone), no core
 * file, default TERM, ignored INT, no blocked signals.
 */
void	sd_proc_child_setup(pid_t parent);

/* ---- the daemon's state: one part per module */

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

/*
 * Exit statuses of --once and --backfill (a daemon exits 0 when asked to
 * stop), so cron and systemd see a failure (docs/syncd.md "Commands");
 * the values are sysexits(3)'s.
 */
#define SD_EXIT_OK	0
#define SD_EXIT_FAIL	1	/* anything else: the server unreachable, the index unwritable */
#define SD_EXIT_USAGE	2	/* bad command line */
#define SD_EXIT_PARTIAL	75	/* ranges dead-lettered, or a backfill that stopped progressing */
#define SD_EXIT_AUTH	77	/* a LOGIN was refused (the scheduler's or a worker's) */
#define SD_EXIT_CONFIG	78	/* a bad setting, or one the server refuses */

/* Written by loop.c only: the run and its ticks. */
struct sd_tick_state {
	bool			 quit;
	bool			 sync_now;	/* SIGHUP: tick again as soon as this one ends */
	int			 exit_code;	/* SD_EXIT_* */
	bool			 partial;	/* a range was dead-lettered in this run */
	bool			 in_tick;
	long long		 tick_started_ms;
	long long		 next_tick_ms;
	unsigned		 ticks;
	unsigned		 idle_ticks;	/* backfill: ticks in a row that wrote nothing */
	long long		 run_started_ms;
	char			*targeted;	/* owned: the folder of a targeted sync (push), else NULL */
	long long		 wait_ms;	/* this tick: time in poll(), waiting on workers */
};

/* Written by sched.c only: what the current tick's enumeration did. */
struct sd_sched_state {
	unsigned		 tick_queued;	/* ranges added */
	unsigned		 folder_limit;	/* tick_queued may reach this for the folder at hand */
	unsigned		 rotate;	/* ticks so far: where this tick's folder order starts */
	bool			 tick_converged;	/* every folder at the top, nothing queued */
	bool			 targeted;	/* sd_sched_folder: queue only the new UIDs */
	uint64_t		 flag_share;	/* flags the folder at hand may fetch (no CONDSTORE) */
	uint64_t		 flag_used;	/* flags fetched so far this tick */
	struct mb_imap		*kept;		/* owned: the last push's session, for the next push */
	long long		 kept_until_ms;	/* kept is closed then */
	long long		 kept_since_ms;	/* kept was last used then */
};

/* Written by attach.c only: where its slices of work got to. */
struct sd_attach_state {
	int64_t			 after_id;	/* re-extraction: the last attachment id read */
	unsigned		 gc_slot;	/* blob collection: the next blobs/xx directory */
};

/* Written by pool.c only. */
struct sd_pool {
	struct sd_worker	*workers;	/* owned; conf->sync_workers slots */
	bool			 auth_blocked;	/* a refused login: nothing until the next tick */
	unsigned		 spawn_failures;	/* workers that died before READY, this tick */
	unsigned		 tick_dead;	/* ranges dead-lettered this tick */
	long long		 warm_until_ms;	/* after a push: workers kept until then; 0: none */
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

/* Written by progress.c only. */
struct sd_progress_state {
	struct sd_progress	*folders;	/* owned (sd_progress_release) */
	size_t			 n_folders;
	long long		 next_ms;	/* the next redraw */
	bool			 tty;
	unsigned		 lines;		/* lines drawn last time (tty) */
};

/*
 * Written by writer.c only.  The writer's open transaction: completed
 * ranges are grouped into one transaction, committed by size, age or an
 * idle pool.
 */
struct sd_writer_state {
	bool			 txn_open;
	long long		 txn_deadline_ms;	/* commit by then (monotonic) */
	uint64_t		 txn_rows;	/* rows written in it so far */
	bool			 write_failed;	/* a group commit failed: end the tick */
	uint64_t		 tick_rows;	/* rows committed this tick */
	/* Test hook: _exit() at this commit point (0: never).  Odd points are just
	 * before a COMMIT, even ones just after (main.c reads SYNCD_TEST_CRASH_AT_COMMIT). */
	unsigned		 crash_at;
	unsigned		 commit_points;
	/* The full-text merge (writer.c): a daemon's, a step at a time while idle. */
	bool			 merge_pending;
	long long		 merge_started_ms;	/* monotonic */
	/* This tick's writing time (ms, monotonic), logged at its end beside
	 * loop.c's wait: staging ranges, committing groups, building bounds. */
	long long		 stage_ms, commit_ms, bounds_ms;
};

struct sd_ctl;
struct sd_writes;
struct sd_watch;

struct sd {
	/* Set by main.c before sd_run, then only read. */
	const struct sd_conf	*conf;
	const char		*password;	/* borrowed, wiped by main; NULL with OAuth */
	struct sd_oauth		*oauth;		/* oauth.c; NULL: password login */
	struct mb_index		*idx;
	enum sd_mode		 mode;

	struct sd_proc		 proc;		/* proc.c (opened by main.c) */
	struct sd_tick_state	 tick;		/* loop.c */
	struct sd_sched_state	 sched;		/* sched.c */
	struct sd_attach_state	 attach;	/* attach.c */
	struct sd_pool		 pool;		/* pool.c */
	struct sd_progress_state progress;	/* progress.c */
	struct sd_writer_state	 writer;	/* writer.c (crash_at set by main.c) */
	struct sd_ctl		*ctl;		/* control.c; NULL: no control socket */
	struct sd_writes	*writes;	/* writes.c; NULL: no write in flight yet */
	struct sd_watch		*watch;		/* watch.c; NULL: no push (not a daemon, or off) */
};

/* Ask the index how many rows a folder has under a uidvalidity. */
int	sd_count_rows(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint64_t *n_r,
	    struct mb_err *err);

/* ---- attach.c */

/*
 * One bounded slice of attachment housekeeping (the tick's end): extract
 * stored attachments that never were, collect unreferenced blobs.  Logs
 * what it could not do; never fails the tick.
 */
void	sd_attach_tick(struct sd *sd);

/* ---- sched.c */

/* Ticks in a row a folder may be missing from LIST before its rows are purged
 * (it is hidden from the first); docs/syncd.md "When the mailbox changes shape". */
#define SD_ABSENT_PURGE_TICKS	3

/*
 * Run the enumeration half of a tick: LOGIN, LIST, EXAMINE each folder,
 * find gaps, queue ranges (sd->sched says how many, and whether every
 * folder converged).  -1 with err: MB_E_AUTH (stop until the next tick),
 * MB_E_CONFIG, or a temporary failure; the tick ends either way.
 */
int	sd_sched_tick(struct sd *sd, struct mb_err *err);
/*
 * A targeted sync of one folder (push, docs/syncd.md "Push"): LOGIN (or the
 * last push's session, kept SYNC_PUSH_KEEP seconds), EXAMINE, the same
 * reconciliation of flags and expunges as a tick, and ranges queued for the
 * UIDs above the watermark only (no LIST, no other folder).  Errors as sd_sched_tick.
 */
int	sd_sched_folder(struct sd *sd, const char *folder, struct mb_err *err);
/* Close the session the last push kept (a tick, a stop); NULL-safe as to the session. */
void	sd_sched_release(struct sd *sd);
/* Close the kept session when its time is up; ms until then (-1: none kept). */
int	sd_sched_kept_timeout(struct sd *sd);

/* ---- reconcile.c: flags and expunges of indexed mail (docs/syncd.md) */

/*
 * Bring the flags of st's indexed rows (st: the state recorded by the last
 * tick, same uidvalidity as ex, this tick's EXAMINE) up to date, in the
 * caller's transaction: UID FETCH (CHANGEDSINCE) when HIGHESTMODSEQ moved,
 * with VANISHED under QRESYNC, nothing when it did not; once a full UID
 * FLAGS rescan when mod-sequences become usable.  Without them, the flags
 * of a window of at most budget indexed messages, from st->flag_cursor on
 * (wrapping to UID 1), with the indexed ones missing from the answer
 * deleted as expunged; st->flag_cursor is advanced.  *used_r: the messages
 * whose flags were asked for.  The caller records ex's HIGHESTMODSEQ and
 * st in the same transaction.  -1: IMAP or index error (roll back).
 */
int	sd_reconcile_flags(struct sd *sd, struct mb_imap *imap, struct mb_folder_state *st,
	    const struct mb_imap_status *ex, uint64_t budget, uint64_t *used_r,
	    struct mb_err *err);
/*
 * How many messages' flags the folder name would have fetched this tick if
 * the budget were unlimited: its indexed rows when the server lacks
 * CONDSTORE (condstore false) or the last tick recorded no HIGHESTMODSEQ for
 * it, else 0.  Errors: 0.
 */
uint64_t	sd_reconcile_demand(struct sd *sd, const char *name, bool condstore);
/*
 * The budget share of the folder whose demand is demand[0], when demand[1..n)
 * are those of the folders after it this tick and left is what remains of
 * the budget: max-min fair, so a folder that needs less than an equal part
 * gets all it needs and the rest is shared equally by the larger ones.
 */
uint64_t	sd_flag_share(uint64_t left, const uint64_t *demand, size_t n);
/*
 * Expunges not yet seen: compare EXISTS (less above_wm, the server's UIDs
 * above st->watermark this tick listed that EXISTS counted) with the rows
 * at or below the watermark; only when they differ, list the UIDs (UID
 * SEARCH), delete the rows the server no longer has, and lower
 * st->watermark below any UID the index lacks (returns 1 then, else 0).
 * -1: IMAP or index error.
 */
int	sd_reconcile_expunges(struct sd *sd, struct mb_imap *imap, struct mb_folder_state *st,
	    uint32_t exists, size_t above_wm, struct mb_err *err);

/* ---- pool.c */

void	sd_pool_init(struct sd *sd);
/* A new tick: logins allowed again, failure counts at zero. */
void	sd_pool_tick_begin(struct sd *sd);
/* Start workers and hand out due ranges. */
void	sd_pool_dispatch(struct sd *sd);
/* Read and act on what a worker sent (POLLIN/POLLHUP on its socket). */
void	sd_pool_input(struct sd *sd, struct sd_worker *w);
void	sd_pool_output(struct sd *sd, struct sd_worker *w);
/* Kill workers past their deadline; returns ms to the next deadline (-1 none). */
int	sd_pool_deadlines(struct sd *sd);
unsigned	sd_pool_busy(const struct sd *sd);
/*
 * How long a push keeps its workers (pool.c) and the scheduler's session
 * (sched.c): SYNC_PUSH_KEEP seconds, by default a minute, which covers a
 * conversation's replies and a list's trickle; the most, 29 minutes, stays
 * under the 30 a server may drop an idle session after (RFC 3501 5.4), and
 * a session dropped anyway is found by a NOOP and replaced by a new LOGIN
 * (worker.c session_ready, sched.c push_session).  0 keeps nothing: every
 * push logs in, for a server that counts connections tightly.
 */
long long	sd_push_keep_ms(const struct sd *sd);
/* What a kept thing has left of its time: ms to until_ms, -1 once it is up or when until_ms is 0 (nothing kept). */
int	sd_warm_left(long long until_ms);
/* Stop every worker (TERM, then KILL after a grace period); ranges stay queued. */
void	sd_pool_stop(struct sd *sd);
/*
 * After a push (a targeted sync): keep the workers, logged in with their
 * folder examined, for sd_push_keep_ms(), so that the next push fetches after
 * a NOOP rather than a LOGIN and an EXAMINE (docs/syncd.md, "Push"); stop
 * them now when a login was refused, a write failed or the login is OAuth's
 * (a worker's token could expire while it is kept).
 */
void	sd_pool_keep_warm(struct sd *sd);
/* Stop kept workers whose time is up; ms until the next is due (-1: none kept). */
int	sd_pool_warm_timeout(struct sd *sd);
/* sd_pool_init's slots freed (after sd_pool_stop). */
void	sd_pool_release(struct sd *sd);
/* A targeted sync begins: failure counts at zero, a refused login still stands. */
void	sd_pool_round_begin(struct sd *sd);
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
/*
 * Commit the open group now (no-op when none); -1: rolled back, ranges
 * requeued.  in_flight: workers hold ranges, so the ranking bounds' chunks
 * may gather (writer.c) rather than be built one at a time.
 */
int	sd_writer_flush(struct sd *sd, bool in_flight, struct mb_err *err);
/* A new tick: write_failed cleared, tick_rows at zero. */
void	sd_writer_tick_begin(struct sd *sd);
/*
 * The full-text index merged into one segment (docs/syncd.md "Merging the
 * full-text index"), once the writer has caught up: sd_writer_merge_check
 * at the end of a tick that found nothing left to fetch sees whether one is
 * due (mb_index_fts_merge_due); --backfill and --once then merge at once,
 * a daemon one step per turn of its loop while no tick runs
 * (sd_writer_merge_step, while merge_pending).  Failures are logged: a
 * search is exact whatever the segments.
 */
void	sd_writer_merge_check(struct sd *sd);
void	sd_writer_merge_step(struct sd *sd);
/*
 * After a tick's or a push's last commit, when it wrote rows: the ranking
 * bounds of the chunks still waiting, which a backfill gathers while ranges
 * are in flight.
 */
void	sd_writer_bounds_rest(struct sd *sd);
#define SD_TXN_ROWS	1000	/* rows per group commit: ~5 MB staged in the scheduler */
#define SD_TXN_MS	1000	/* the oldest uncommitted row waits at most this (plus a range) */
#define SD_RANK_CHUNKS	8	/* ranking bounds built after a commit, at most (writer.c) */
#define SD_RANK_GATHER	8	/* ... and at least, while workers have ranges in flight */

/* ---- progress.c: the backfill's progress display on stdout */

void	sd_progress_init(struct sd_progress_state *ps, bool tty);
/* Record a folder's total (EXISTS) and what is indexed of it (first_tick: the start). */
void	sd_progress_note(struct sd_progress_state *ps, struct mb_index *idx, const char *name,
	    int64_t folder_id, uint32_t uidvalidity, uint32_t total, bool first_tick);
/* Redraw per folder: indexed of total, rate since started_ms, ETA (when due, or force). */
void	sd_progress_draw(struct sd_progress_state *ps, struct mb_index *idx, long long started_ms,
	    bool force);
/* Print line below the block; the next draw starts a new block under it. */
void	sd_progress_say(struct sd_progress_state *ps, const char *line);
bool	sd_progress_any(const struct sd_progress_state *ps);	/* a folder was noted */
void	sd_progress_release(struct sd_progress_state *ps);

/* ---- loop.c */

/* The main loop until stopped (sd->proc open, the index open); the exit status. */
int	sd_run(struct sd *sd);

/* ---- status.c */

int	sd_status_print(struct mb_index *idx, FILE *out, struct mb_err *err);
/* The watches the running daemon last recorded (DATA_DIR/watch.status). */
void	sd_status_print_watch(const char *data_dir, FILE *out);

/* ---- watch.c: push (docs/syncd.md "Push") */

/* What a watcher tells the scheduler (MB_IPC_WATCH). */
enum sd_watch_event {
	SD_WATCH_UP,		/* logged in, folder examined, idling (after every (re)connect) */
	SD_WATCH_EXISTS,	/* new mail */
	SD_WATCH_EXPUNGE,	/* EXPUNGE or VANISHED */
	SD_WATCH_FLAGS,		/* FETCH: flags changed */
	SD_WATCH_LOST,		/* the connection was lost; reconnecting after a backoff */
	SD_WATCH_NOTIFY,	/* NOTIFY accepted: this connection reports the others too */
	SD_WATCH_CHANGED,	/* NOTIFY: another folder changed (STATUS) */
	SD_WATCH_EVENT_MAX
};

/* The table of SYNC_WATCH (capped at SYNC_WATCH_MAX); no process yet.  Daemon mode only. */
void	sd_watch_init(struct sd *sd);
/* A full tick begins: events so far are its to see; logins are allowed again. */
void	sd_watch_tick_begin(struct sd *sd);
/* A tick ended: start the watchers that are not running (and not given up on). */
void	sd_watch_start(struct sd *sd);
/* A login was refused (tick, targeted sync or worker): stop every watcher until the next tick. */
void	sd_watch_auth_failed(struct sd *sd);
/*
 * The folder of an event that is due for a targeted sync (its burst has
 * settled), taken off the table: a copy the caller frees.  NULL when none.
 */
char	*sd_watch_take_due(struct sd *sd);
/* ms to the next event due (-1: none). */
int	sd_watch_timeout(const struct sd *sd);
/* Most descriptors sd_watch_pollfds fills. */
size_t	sd_watch_max_pollfds(const struct sd *sd);
struct pollfd;
size_t	sd_watch_pollfds(struct sd *sd, struct pollfd *pfd);
void	sd_watch_dispatch(struct sd *sd, const struct pollfd *pfd, size_t n);
/* Stop every watcher (TERM, reap), remove the status file, free the table. */
void	sd_watch_release(struct sd *sd);

/* ---- watchproc.c */

struct sd_watch_args {
	const struct sd_conf	*conf;
	const char		*password;
	int			 fd;
	const char		*folder;
	const char *const	*others;	/* for NOTIFY, where offered; borrowed */
	size_t			 n_others;
	pid_t			 parent;
};
/* The watcher process's body (after fork); never returns. */
_Noreturn void	sd_watch_main(const struct sd_watch_args *a);

#endif
