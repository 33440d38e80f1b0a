/*
 * The scheduler's side of a worker (syncd/pool.c), with a fake worker: a
 * forked child that writes chosen bytes on the socketpair and waits to be
 * killed.  A bad frame, of any kind, kills that worker and costs its range
 * one attempt; the scheduler carries on.  A good range is written and acked.
 * And the children's side under it (syncd/proc.c): what a forked child
 * holds, and who reaps which child.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/index_raw.h"
#include "mailbox/log.h"
#include "syncd.h"

#define FROM_WORKER	(MB_IPC_BIT(MB_IPC_READY) | MB_IPC_BIT(MB_IPC_ROW) | \
			 MB_IPC_BIT(MB_IPC_RANGE_DONE) | MB_IPC_BIT(MB_IPC_FAIL))

struct fixture {
	char		 dir[64];
	struct sd_conf	 conf;
	struct sd	 sd;
	int64_t		 folder_id;
};

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct mb_err err = { 0 };
	char path[128];
	bool added;

	mb_log_init("test_pool", MB_LOG_ERR);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_pool.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(path, sizeof(path), "%s/index.db", fx->dir);
	assert_int_equal(mb_index_open(path, MB_INDEX_RW, &fx->sd.idx, &err), 0);
	fx->conf.sync_workers = 1;
	fx->conf.sync_max_attempts = 3;
	fx->conf.sync_retry_backoff = 0;
	fx->conf.sync_range_timeout = 60;
	fx->sd.conf = &fx->conf;
	fx->sd.proc.sigfd = -1;
	sd_pool_init(&fx->sd);
	assert_int_equal(mb_index_folder_ensure(fx->sd.idx, "INBOX", NULL, &fx->folder_id, &err), 0);
	assert_int_equal(sd_queue_add(fx->sd.idx, fx->folder_id, 7, 1, 100, &added, &err), 0);
	assert_true(added);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	mb_index_close(&fx->sd.idx);
	sd_pool_release(&fx->sd);
	sd_proc_close(&fx->sd.proc);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	free(fx);
	return system(cmd) == 0 ? 0 : -1;
}

/* A fake worker holding the queued range, that will send bytes then wait. */
static struct sd_worker *
fake_worker(struct fixture *fx, const void *bytes, size_t len, bool close_after)
{
	struct sd_worker *w = &fx->sd.pool.workers[0];
	struct mb_err err = { 0 };
	int sv[2];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		(void)!write(sv[1], bytes, len);
		if (close_after)
			_exit(0);
		for (;;)
			pause();
	}
	close(sv[1]);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	mb_ipc_conn_init(&w->conn, sv[0], FROM_WORKER);
	w->pid = pid;
	w->ready = true;
	assert_int_equal(sd_queue_take(fx->sd.idx, 0x7fffffff, NULL, 0, &w->range, &err), 1);
	w->busy = true;
	return w;
}

/* Feed what the fake worker sent to the pool until it is dealt with. */
static void
pump(struct fixture *fx, struct sd_worker *w)
{
	pid_t pid = w->pid;

	for (int i = 0; i < 200 && w->pid == pid && (w->busy || w->pid != 0); i++) {
		struct pollfd p = { .fd = w->conn.fd, .events = POLLIN };

		if (poll(&p, 1, 50) == 1)
			sd_pool_input(&fx->sd, w);
		if (!w->busy && w->pid == pid)
			break;	/* range done, worker still alive */
	}
}

static void
row_frame(struct mb_ipc_out *o, int64_t folder_id, uint32_t uidvalidity, uint32_t uid,
    uint32_t range_id)
{
	struct mb_msg *m = mb_msg_new();
	struct mb_index_row row = { .folder_id = folder_id, .uidvalidity = uidvalidity,
	    .uid = uid, .msg = m };

	m->subject = strdup("hello");
	m->message_id = strdup("id@x");
	mb_ipc_out_begin(o, MB_IPC_ROW, range_id);
	mb_ipc_put_row(o, &row);
	assert_int_equal(mb_ipc_out_finish(o, NULL), 0);
	mb_msg_free(&m);
}

static void
done_frame(struct mb_ipc_out *o, uint32_t range_id, uint32_t count)
{
	mb_ipc_out_begin(o, MB_IPC_RANGE_DONE, range_id);
	mb_ipc_put_u32(o, count);
	assert_int_equal(mb_ipc_out_finish(o, NULL), 0);
}

static int64_t
sql_int(struct fixture *fx, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(mb_index_db(fx->sd.idx), sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

enum bad { BAD_VERSION, BAD_LENGTH, BAD_TYPE, BAD_UID, BAD_FOLDER, BAD_COUNT, BAD_TRUNCATED,
	BAD_TRAILING, BAD_END };

static void
build_bad(struct fixture *fx, enum bad kind, uint32_t range_id, struct mb_buf *out)
{
	struct mb_ipc_out o;
	uint32_t words[4];

	switch (kind) {
	case BAD_VERSION:
	case BAD_LENGTH:
	case BAD_TYPE:
		words[0] = kind == BAD_TYPE ? MB_IPC_RANGE : MB_IPC_READY;
		words[1] = kind == BAD_LENGTH ? MB_IPC_MAX + 1 : MB_IPC_HDR_LEN;
		words[2] = range_id;
		words[3] = kind == BAD_VERSION ? 99 : MB_IPC_VERSION;
		mb_buf_add(out, words, sizeof(words));
		return;
	case BAD_UID:
		row_frame(&o, fx->folder_id, 7, 101, range_id);	/* outside 1:100 */
		break;
	case BAD_FOLDER:
		row_frame(&o, fx->folder_id + 1, 7, 5, range_id);
		break;
	case BAD_COUNT:
		row_frame(&o, fx->folder_id, 7, 5, range_id);
		mb_buf_add(out, o.buf.data, o.buf.len);
		mb_ipc_out_release(&o);
		done_frame(&o, range_id, 2);	/* one row sent, two claimed */
		break;
	case BAD_TRUNCATED:
		row_frame(&o, fx->folder_id, 7, 5, range_id);
		o.buf.len /= 2;		/* then the worker closes its end */
		break;
	case BAD_TRAILING:
		done_frame(&o, range_id, 0);
		mb_ipc_put_u32(&o, 0);
		assert_int_equal(mb_ipc_out_finish(&o, NULL), 0);
		break;
	case BAD_END:
		return;
	}
	mb_buf_add(out, o.buf.data, o.buf.len);
	mb_ipc_out_release(&o);
}

static void
pool_bad_frame_kills_the_worker_and_costs_one_attempt(void **state)
{
	for (enum bad kind = 0; kind < BAD_END; kind++) {
		struct fixture *fx;
		struct sd_worker *w;
		struct mb_buf bytes = MB_BUF_INIT(MB_IPC_MAX * 2);
		pid_t pid;
		int status;

		setup(state);
		fx = *state;
		build_bad(fx, kind, 1, &bytes);
		w = fake_worker(fx, bytes.data, bytes.len, kind == BAD_TRUNCATED);
		pid = w->pid;
		pump(fx, w);
		if (w->pid != 0)
			fail_msg("kind %d: worker still alive", kind);
		assert_int_equal(waitpid(pid, &status, WNOHANG), -1);	/* reaped already */
		assert_int_equal(errno, ECHILD);
		if (sql_int(fx, "SELECT attempts FROM work_queue") != 1)
			fail_msg("kind %d: attempts %lld", kind,
			    (long long)sql_int(fx, "SELECT attempts FROM work_queue"));
		assert_int_equal(sql_int(fx, "SELECT count(*) FROM messages"), 0);
		mb_buf_release(&bytes);
		teardown(state);
	}
}

static void
pool_good_range_is_written_and_acked(void **state)
{
	struct fixture *fx = *state;
	struct mb_buf bytes = MB_BUF_INIT(MB_IPC_MAX);
	struct mb_ipc_out o;
	struct sd_worker *w;
	pid_t pid;

	for (uint32_t uid = 3; uid <= 5; uid++) {
		row_frame(&o, fx->folder_id, 7, uid, 1);
		mb_buf_add(&bytes, o.buf.data, o.buf.len);
		mb_ipc_out_release(&o);
	}
	done_frame(&o, 1, 3);
	mb_buf_add(&bytes, o.buf.data, o.buf.len);
	mb_ipc_out_release(&o);
	w = fake_worker(fx, bytes.data, bytes.len, false);
	pid = w->pid;
	pump(fx, w);
	assert_int_equal(w->pid, pid);		/* still alive, idle */
	assert_false(w->busy);
	/* The writer groups ranges: commit the open group, then nothing is pending. */
	{
		struct mb_err err = { 0 };

		assert_int_equal(sd_writer_flush(&fx->sd, false, &err), 0);
		assert_false(fx->sd.writer.txn_open);
		assert_true(sqlite3_get_autocommit(mb_index_db(fx->sd.idx)));
		assert_int_equal(fx->sd.writer.tick_rows, 3);
	}
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM messages WHERE uidvalidity = 7"), 3);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM work_queue"), 0);
	/* The same range again (at-least-once): still three rows. */
	mb_buf_release(&bytes);
	sd_pool_stop(&fx->sd);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM messages"), 3);
}

static void
pool_third_failure_is_a_dead_letter(void **state)
{
	struct fixture *fx = *state;

	for (int attempt = 1; attempt <= 3; attempt++) {
		struct mb_ipc_out o;
		struct sd_worker *w;

		mb_ipc_out_begin(&o, MB_IPC_FAIL, 1);
		mb_ipc_put_u32(&o, MB_E_TEMP);
		mb_ipc_put_str(&o, "imap: BYE");
		assert_int_equal(mb_ipc_out_finish(&o, NULL), 0);
		w = fake_worker(fx, o.buf.data, o.buf.len, true);
		mb_ipc_out_release(&o);
		pump(fx, w);
		for (int i = 0; i < 100 && w->pid != 0; i++) {
			struct pollfd p = { .fd = w->conn.fd, .events = POLLIN };

			if (poll(&p, 1, 50) == 1)
				sd_pool_input(&fx->sd, w);
		}
		assert_int_equal(w->pid, 0);
	}
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM work_queue"), 0);
	assert_int_equal(sql_int(fx, "SELECT attempts FROM dead_letters WHERE folder_name = 'INBOX' "
	    "AND uidvalidity = 7 AND first_uid = 1 AND last_uid = 100"), 3);
	assert_int_equal(fx->sd.pool.tick_dead, 1);
}

/*
 * What pid's descriptors above stderr point at ("/path", "socket:[inode]",
 * "pipe:[inode]"), up to max of them; returns how many.
 */
static size_t
fd_targets(pid_t pid, char (*t)[512], size_t max)
{
	char dir[64], link[400];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	assert_non_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL && n < max) {
		ssize_t len;

		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		if (atoi(de->d_name) <= 2 || (len = readlink(link, t[n], sizeof(t[n]) - 1)) <= 0)
			continue;
		t[n++][len] = '\0';
	}
	closedir(d);
	return n;
}

/* How many of pid's descriptors above stderr point at a path starting with prefix. */
static int
fds_under(pid_t pid, const char *prefix)
{
	static char t[64][512];
	size_t n = fd_targets(pid, t, 64);
	int hits = 0;

	for (size_t i = 0; i < n; i++)
		hits += strncmp(t[i], prefix, strlen(prefix)) == 0;
	return hits;
}

/* The first of child's descriptors above stderr that parent holds too; NULL: none. */
static const char *
shared_fd(pid_t parent, pid_t child)
{
	static char pt[64][512], ct[64][512];
	size_t np = fd_targets(parent, pt, 64), nc = fd_targets(child, ct, 64);

	for (size_t i = 0; i < nc; i++)
		for (size_t j = 0; j < np; j++)
			if (strcmp(ct[i], pt[j]) == 0)
				return ct[i];
	return NULL;
}

/*
 * A real worker, spawned by the pool, holds none of the index's descriptors
 * (index.db, its -wal and -shm) nor any other of the scheduler's above
 * stderr: it parses hostile mail and never touches the index.  Its IMAP server here
 * accepts and never greets, so the worker is caught alive, after its fork,
 * on its way to logging in.
 */
static void
pool_worker_holds_no_index_descriptor(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	struct pollfd p;
	int lfd, cfd;
	pid_t pid;

	assert_true((lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
	fx->conf.imap_host = "127.0.0.1";
	fx->conf.imap_port = ntohs(sin.sin_port);
	fx->conf.imap_tls = 2;	/* none */
	fx->conf.imap_user = "alice";
	fx->conf.data_dir = fx->dir;
	fx->sd.password = "pw";
	/* The index is in WAL mode: open all three of its files, as a tick does. */
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM messages"), 0);
	assert_true(fds_under(getpid(), fx->dir) >= 2);	/* else the check sees nothing */

	sd_pool_dispatch(&fx->sd);
	pid = fx->sd.pool.workers[0].pid;
	assert_true(pid > 0);
	p = (struct pollfd){ .fd = lfd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 10000), 1);	/* the worker is connecting */
	assert_true((cfd = accept(lfd, NULL, NULL)) >= 0);
	if (fds_under(pid, fx->dir) != 0)
		fail_msg("worker %ld holds %d descriptors under %s", (long)pid,
		    fds_under(pid, fx->dir), fx->dir);
	/* Nor any other of the scheduler's (its end of the channel, the listener,
	 * the connection it accepted: each socket has its own inode). */
	assert_true(fds_under(getpid(), "socket:") >= 3);
	if (shared_fd(getpid(), pid) != NULL)
		fail_msg("worker %ld holds the scheduler's %s", (long)pid, shared_fd(getpid(), pid));
	sd_pool_stop(&fx->sd);
	assert_int_equal(fx->sd.pool.workers[0].pid, 0);
	close(cfd);
	close(lfd);
}

struct exits {
	int	 calls;
	pid_t	 pid;
	int	 status;
};

static void
on_exit_note(void *arg, pid_t pid, int status)
{
	struct exits *e = arg;

	e->calls++;
	e->pid = pid;
	e->status = status;
}

/*
 * sd_proc_fork's child holds nothing above stderr but its socket (it checks
 * a descriptor opened before the fork and says so in its exit status).
 * sd_proc_reap reaps the table's children by pid, tells the owner that gave
 * a handler, and leaves alone a child the table does not know: another
 * module's, which that module reaps itself.
 */
static void
proc_reaps_its_children_by_pid_and_tells_their_owner(void **state)
{
	struct sd_proc p = { .sigfd = -1 };
	struct exits e = { 0 };
	struct mb_err err = { 0 };
	int before = open("/dev/null", O_RDONLY), fd, status;
	pid_t owned, silent, other;

	assert_true(before > 2);
	owned = sd_proc_fork(&p, "test child", on_exit_note, &e, &fd, &err);
	assert_true(owned >= 0);
	if (owned == 0)
		_exit(fcntl(before, F_GETFD) == -1 && errno == EBADF && fcntl(fd, F_GETFD) != -1 ?
		    7 : 1);
	close(fd);
	silent = sd_proc_fork(&p, "test child", NULL, NULL, &fd, &err);
	assert_true(silent >= 0);
	if (silent == 0)
		_exit(0);
	close(fd);
	if ((other = fork()) == 0)
		_exit(3);
	assert_true(other > 0);
	assert_int_equal(p.n_children, 2);
	/* Everyone has exited once the last of the table's children is reapable. */
	for (int i = 0; i < 500 && (e.calls == 0 || p.n_children > 0); i++) {
		struct timespec ts = { 0, 10 * 1000000 };

		sd_proc_reap(&p);
		nanosleep(&ts, NULL);
	}
	assert_int_equal(e.calls, 1);
	assert_int_equal(e.pid, owned);
	assert_true(WIFEXITED(e.status));
	assert_int_equal(WEXITSTATUS(e.status), 7);	/* before was closed, its socket not */
	assert_int_equal(p.n_children, 0);
	assert_int_equal(waitpid(silent, &status, WNOHANG), -1);	/* reaped, forgotten */
	assert_int_equal(waitpid(other, &status, 0), other);	/* not stolen */
	assert_int_equal(WEXITSTATUS(status), 3);
	close(before);
	sd_proc_close(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pool_bad_frame_kills_the_worker_and_costs_one_attempt),
		cmocka_unit_test_setup_teardown(pool_good_range_is_written_and_acked, setup, teardown),
		cmocka_unit_test_setup_teardown(pool_third_failure_is_a_dead_letter, setup, teardown),
		cmocka_unit_test_setup_teardown(pool_worker_holds_no_index_descriptor, setup,
		    teardown),
		cmocka_unit_test(proc_reaps_its_children_by_pid_and_tells_their_owner),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
