/*
 * The child an extraction of a large parser (poppler, libzip, libxml2 on a
 * document) runs in: fork, close every descriptor but the answer pipe (the
 * worker's IMAP socket and its channel to the scheduler among them), set
 * RLIMIT_CPU and RLIMIT_AS, extract, write the status and the text down the
 * pipe, _exit.  The parent reads at most what the caps allow, within a
 * wall-clock bound of three times the CPU budget, then reaps the child by
 * its pid.  A parser that loops, balloons or crashes costs one attachment's
 * text, never the message, the range or the worker.
 *
 * Under AddressSanitizer RLIMIT_AS is not set: ASan reserves terabytes of
 * address space for its shadow memory and no limit below that would let
 * the child start.  The CPU limit and the wall-clock bound still hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/util.h"

#include "extract-private.h"

#if defined(__SANITIZE_ADDRESS__)
#define EX_NO_AS_LIMIT	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EX_NO_AS_LIMIT	1
#endif
#endif

static void
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(2);
		c += w;
		n -= (size_t)w;
	}
}

static void __attribute__((noreturn))
child(const struct mb_extract_limits *lim, mb_extract_fn *fn, const char *charset,
    const void *data, size_t len, int wfd)
{
	struct rlimit rl;
	struct mb_extract_out out;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (wfd != 3) {
		if (dup2(wfd, 3) == -1)
			_exit(2);
		wfd = 3;
	}
	(void)close_range(4, ~0u, 0);
	/* No limits, no extraction: a parser never runs unbounded. */
	rl.rlim_cur = lim->cpu_seconds;
	rl.rlim_max = lim->cpu_seconds + 1;
	if (setrlimit(RLIMIT_CPU, &rl) == -1)
		_exit(3);
#ifndef EX_NO_AS_LIMIT
	rl.rlim_cur = rl.rlim_max = (rlim_t)lim->memory_mb << 20;
	if (setrlimit(RLIMIT_AS, &rl) == -1)
		_exit(3);
#endif
	rl.rlim_cur = rl.rlim_max = 0;
	(void)setrlimit(RLIMIT_CORE, &rl);
	memset(&out, 0, sizeof(out));
	mb_buf_init(&out.text, (size_t)lim->max_chars * 4 + 64);
	snprintf(out.status, sizeof(out.status), "ok");
	if (fn(lim, charset, data, len, &out) == -1)
		mb_buf_reset(&out.text);
	write_all(wfd, out.status, sizeof(out.status));
	write_all(wfd, out.text.data, out.text.len);
	_exit(0);
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
ex_sandbox(const struct mb_extract_limits *lim, mb_extract_fn *fn, const char *charset,
    const void *data, size_t len, struct mb_extract_out *out)
{
	size_t cap = sizeof(out->status) + (size_t)lim->max_chars * 4 + 64, got = 0;
	long long deadline = now_ms() + 1000LL * (3LL * lim->cpu_seconds + 2);
	char *buf = mb_xmalloc(cap);
	bool timed_out = false, too_much = false;
	int p[2], status = 0;
	pid_t pid;

	mb_buf_reset(&out->text);
	if (pipe2(p, O_CLOEXEC) == -1) {
		free(buf);
		ex_fail(out, "failed: no pipe for the extraction: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == -1) {
		close(p[0]);
		close(p[1]);
		free(buf);
		ex_fail(out, "failed: cannot fork the extraction: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		close(p[0]);
		child(lim, fn, charset, data, len, p[1]);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;
		int r;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		r = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		if (got == cap) {
			too_much = true;
			break;
		}
		n = read(p[0], buf + got, cap - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	if (timed_out || too_much)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (timed_out)
		ex_fail(out, "failed: took longer than %u seconds", 3 * lim->cpu_seconds + 2);
	else if (too_much)
		ex_fail(out, "failed: the extractor answered more than its cap");
	else if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU ||
	    WTERMSIG(status) == SIGKILL))
		ex_fail(out, "failed: over the CPU budget of %u seconds (EXTRACT_CPU_SECONDS)",
		    lim->cpu_seconds);
	else if (WIFSIGNALED(status))
		ex_fail(out, "failed: the extractor died (signal %d; out of memory under the "
		    "%u MiB budget, or a parser crash)", WTERMSIG(status), lim->memory_mb);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		ex_fail(out, "failed: the extraction sandbox cannot set its CPU and memory limits "
		    "(setrlimit refused; see docs/attachments.md)");
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got < sizeof(out->status))
		ex_fail(out, "failed: the extractor exited without an answer");
	else {
		memcpy(out->status, buf, sizeof(out->status));
		out->status[sizeof(out->status) - 1] = '\0';
		if (strncmp(out->status, "ok", 2) == 0)
			(void)mb_buf_add(&out->text, buf + sizeof(out->status),
			    got - sizeof(out->status));
	}
	free(buf);
}
