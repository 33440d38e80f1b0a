/*
 * Signals and child processes: the one place syncd forks and reaps.
 *
 * Signals are blocked and read from a signalfd, never handled
 * asynchronously; what was read is kept as flags (SD_SIG_*) that the main
 * loop takes and acts on.  Every child (fetch workers, write processes) is
 * forked by sd_proc_fork, which closes in the child every descriptor above
 * stderr except the child's end of its socketpair: the index's SQLite files
 * (index.db, -wal, -shm), the data directory's lock, the control listener
 * and its clients, the other children's sockets and the signalfd.  Closing
 * all of them, instead of a list kept in step with whoever opens what,
 * means a descriptor added later cannot leak into a process that parses
 * hostile mail.  (Closing the child's copies releases nothing of the
 * parent's: POSIX record locks belong to the process, and the child has
 * none.)
 *
 * Every child is entered in one table with its owner's exit handler, and
 * is reaped by its pid only: a SIGCHLD reaps each exited child in the table
 * and hands its status to the owner; an owner that must wait for its child
 * now (kill, then reap) does so with sd_proc_wait.  No waitpid(-1), so no
 * module reaps a child another module is waiting for.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "syncd.h"

int
sd_proc_open(struct sd_proc *p, struct mb_err *err)
{
	sigset_t set;

	memset(p, 0, sizeof(*p));
	p->sigfd = -1;
	signal(SIGPIPE, SIG_IGN);	/* a dead child's socket is an error return, not a death */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (p->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		return mb_err_set(err, MB_E_INTERNAL, "signalfd: %s", strerror(errno));
	return 0;
}

void
sd_proc_close(struct sd_proc *p)
{
	if (p->sigfd >= 0)
		close(p->sigfd);
	p->sigfd = -1;
	free(p->children);
	p->children = NULL;
	p->n_children = p->cap_children = 0;
}

unsigned
sd_proc_signals(struct sd_proc *p)
{
	struct signalfd_siginfo si;

	if (p->sigfd < 0)
		return p->pending;
	while (read(p->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			if (!(p->pending & SD_SIG_STOP))
				p->stop_signo = (int)si.ssi_signo;
			p->pending |= SD_SIG_STOP;
			break;
		case SIGCHLD:
			p->pending |= SD_SIG_CHLD;
			break;
		case SIGHUP:
			p->pending |= SD_SIG_HUP;
			break;
		default:
			break;
		}
	}
	return p->pending;
}

unsigned
sd_proc_take(struct sd_proc *p)
{
	unsigned bits = sd_proc_signals(p);

	p->pending = 0;
	return bits;
}

/* Close every descriptor above stderr but keep (the child's socket). */
static void
close_inherited(int keep)
{
	long max;

	if ((keep <= 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
	/* A kernel without close_range (before 5.9). */
	max = sysconf(_SC_OPEN_MAX);
	for (long fd = 3; fd < (max > 0 ? max : 1024); fd++)
		if (fd != keep)
			(void)close((int)fd);
}

static void
table_add(struct sd_proc *p, pid_t pid, const char *what,
    void (*on_exit)(void *, pid_t, int), void *arg)
{
	if (p->n_children == p->cap_children) {
		p->cap_children = p->cap_children ? p->cap_children * 2 : 8;
		p->children = mb_xrealloc(p->children, p->cap_children * sizeof(*p->children));
	}
	p->children[p->n_children++] = (struct sd_child){ pid, what, on_exit, arg };
}

/* Take pid out of the table; its entry in *c_r when c_r is not NULL.  false: not there. */
static bool
table_remove(struct sd_proc *p, pid_t pid, struct sd_child *c_r)
{
	for (size_t i = 0; i < p->n_children; i++) {
		if (p->children[i].pid != pid)
			continue;
		if (c_r != NULL)
			*c_r = p->children[i];
		p->children[i] = p->children[--p->n_children];
		return true;
	}
	return false;
}

pid_t
sd_proc_fork(struct sd_proc *p, const char *what, void (*on_exit)(void *arg, pid_t pid,
    int status), void *arg, int *fd_r, struct mb_err *err)
{
	int sv[2];
	pid_t pid;

	*fd_r = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		return mb_err_set(err, MB_E_TEMP, "socketpair: %s", strerror(errno));
	fflush(NULL);	/* nothing buffered is written twice */
	/*
	 * Give the heap's free pages back first, or every child inherits them:
	 * a tick's enumeration of 1,000,000 UIDs leaves ~19 MB free in the heap,
	 * and each worker forked after it kept a copy-on-write map of it (12.5
	 * MiB of Pss a worker instead of 7; docs/benchmarks.md).
	 */
	malloc_trim(0);
	if ((pid = fork()) == -1) {
		mb_err_set(err, MB_E_TEMP, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close_inherited(sv[1]);
		*fd_r = sv[1];
		return 0;
	}
	close(sv[1]);
	table_add(p, pid, what, on_exit, arg);
	*fd_r = sv[0];
	return pid;
}

int
sd_proc_wait(struct sd_proc *p, pid_t pid, int *status_r, bool block)
{
	int status = 0;
	pid_t r;

	while ((r = waitpid(pid, &status, block ? 0 : WNOHANG)) == -1 && errno == EINTR)
		;
	if (r == 0)
		return 0;
	(void)table_remove(p, pid, NULL);
	if (r == -1)
		return -1;
	if (status_r != NULL)
		*status_r = status;
	return 1;
}

void
sd_proc_reap(struct sd_proc *p)
{
	size_t i = 0;

	while (i < p->n_children) {
		struct sd_child c = p->children[i];
		int status = 0;
		pid_t r = waitpid(c.pid, &status, WNOHANG);

		if (r == 0 || (r == -1 && errno == EINTR)) {
			i++;
			continue;
		}
		/* Out of the table before its owner hears of it: the handler may fork. */
		(void)table_remove(p, c.pid, NULL);
		if (r == -1) {
			mb_log_warn("%s pid %ld: waitpid", c.what, (long)c.pid);
			continue;
		}
		mb_log_debug("%s pid %ld: reaped", c.what, (long)c.pid);
		if (c.on_exit != NULL)
			c.on_exit(c.arg, c.pid, status);
		i = 0;	/* the handler may have changed the table */
	}
}

void
sd_proc_child_setup(pid_t parent)
{
	sigset_t none;

	/* Die with the scheduler; no core file holding the password. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_DUMPABLE, 0);
	sigemptyset(&none);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_IGN);	/* Ctrl-C is the scheduler's to handle */
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
}
