/*
 * The acceptor of the HTTP transport (http_accept.h says why it exists).
 * A thread polls the listening socket and a stop descriptor; each time the
 * socket is readable it accepts until none is left and gives each
 * connection to libmicrohttpd (MHD_add_connection), which closes it when
 * the per-address limit refuses it, as its own accept would.  With as many
 * connections open as the limit allows it accepts none, and looks again
 * every 10 ms, so that the next waits in the backlog for a place.  Out of
 * descriptors or memory, it waits a tenth of a second before it tries
 * again rather than spin on the same error.
 *
 * A connection counts as open from the moment it is handed over, not from
 * libmicrohttpd's word that it started: a handed connection waits in its
 * thread's queue until the thread next looks, and twelve that arrived at
 * once were all accepted before the first started, so the ones past the
 * limit were closed unanswered by libmicrohttpd (and its check there left
 * the thread's lock held; http.c sets its limit where it is never reached).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/util.h"
#include "http_accept.h"

struct mcp_acceptor {
	int			 listen_fd;	/* the caller's */
	int			 stop_fd;	/* owned: an eventfd, written by _stop */
	struct MHD_Daemon	*daemon;
	const atomic_uint	*closed;	/* the caller's: connections closed so far */
	unsigned		 handed;	/* connections handed over so far */
	unsigned		 limit;
	pthread_t		 thread;
};

/*
 * Whether a place is free for one more connection: those handed over less
 * those closed (both count on, and their difference stays right as they wrap).
 */
static bool
room(const struct mcp_acceptor *a)
{
	return a->handed - atomic_load_explicit(a->closed, memory_order_relaxed) < a->limit;
}

/*
 * Accept the connections waiting on a->listen_fd while there is room; false
 * once an error, or the limit, says wait.
 */
static bool
accept_waiting(struct mcp_acceptor *a)
{
	for (;;) {
		struct sockaddr_storage addr;
		socklen_t len = sizeof(addr);
		int fd;

		if (!room(a))
			return false;
		fd = accept4(a->listen_fd, (struct sockaddr *)&addr, &len,
		    SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return true;
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			mb_log_warn("http: accept");	/* EMFILE, ENFILE, ENOBUFS, ENOMEM */
			return false;
		}
		/* closed by libmicrohttpd when it cannot take it (the per-address
		 * limit, memory), before it is started, so never counted closed */
		a->handed++;
		if (MHD_add_connection(a->daemon, fd, (struct sockaddr *)&addr, len) != MHD_YES)
			a->handed--;
	}
}

static void *
accept_loop(void *arg)
{
	struct mcp_acceptor *a = arg;
	struct pollfd p[2] = { { .fd = a->stop_fd, .events = POLLIN },
	    { .fd = a->listen_fd, .events = POLLIN } };
	int wait_ms = -1;

	for (;;) {
		int rc;

		if (wait_ms < 0 && !room(a))
			wait_ms = 10;	/* at the limit: look again soon */
		/* after an error or at the limit: only the stop descriptor, for a while */
		rc = poll(p, wait_ms < 0 ? 2 : 1, wait_ms);

		if (rc == -1 && errno != EINTR) {
			mb_log_warn("http: poll of the listening socket");
			wait_ms = 100;
			continue;
		}
		if (rc > 0 && (p[0].revents & POLLIN))
			return NULL;
		if (wait_ms >= 0) {
			wait_ms = -1;	/* the while is over: accept again */
			continue;
		}
		if (rc > 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP)))
			wait_ms = accept_waiting(a) ? -1 : room(a) ? 100 : 10;
	}
}

struct mcp_acceptor *
mcp_acceptor_start(int listen_fd, struct MHD_Daemon *daemon, const atomic_uint *closed,
    unsigned limit, struct mb_err *err)
{
	struct mcp_acceptor *a = mb_xcalloc(1, sizeof(*a));
	int flags = fcntl(listen_fd, F_GETFL);
	int rc;

	a->listen_fd = listen_fd;
	a->daemon = daemon;
	a->closed = closed;
	a->limit = limit;
	/* non-blocking: a connection reset between poll() and accept() must not block */
	if (flags == -1 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) == -1 ||
	    (a->stop_fd = eventfd(0, EFD_CLOEXEC)) == -1) {
		mb_err_set(err, MB_E_INTERNAL, "http: the acceptor: %s", strerror(errno));
		free(a);
		return NULL;
	}
	if ((rc = pthread_create(&a->thread, NULL, accept_loop, a)) != 0) {
		mb_err_set(err, MB_E_INTERNAL, "http: the acceptor's thread: %s", strerror(rc));
		close(a->stop_fd);
		free(a);
		return NULL;
	}
	return a;
}

void
mcp_acceptor_stop(struct mcp_acceptor **ap)
{
	struct mcp_acceptor *a = *ap;
	uint64_t one = 1;

	if (a == NULL)
		return;
	while (write(a->stop_fd, &one, sizeof(one)) == -1 && errno == EINTR)
		;
	pthread_join(a->thread, NULL);
	close(a->stop_fd);
	free(a);
	*ap = NULL;
}
