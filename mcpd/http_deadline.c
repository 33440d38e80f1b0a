/*
 * The request deadline (http_deadline.h).  Each open connection has an entry
 * in a list; from its first byte until its answer is queued a request has
 * the deadline, then none until the answer is sent and the next request may
 * begin (so an idle keep-alive connection also ends at the deadline, and its
 * client simply connects again).  A reaper thread looks four times a second
 * and shuts down the socket of a request past it; libmicrohttpd then sees
 * the connection end and closes it.  Entries leave the list when
 * libmicrohttpd notifies that the connection closed, which it does before
 * closing the socket, and the reaper only acts under the same lock: it never
 * touches a descriptor that was reused.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "mailbox/log.h"
#include "mailbox/util.h"
#include "http_deadline.h"

struct conn {
	struct conn	*next;
	int		 fd;
	long long	 deadline_ms;	/* 0: answering, no deadline */
};

struct mcp_deadlines {
	pthread_mutex_t	 lock;
	pthread_cond_t	 stop_cond;
	struct conn	*conns;		/* open connections */
	unsigned	 seconds;
	pthread_t	 reaper;
	bool		 stopping;
};

void
mcp_deadline_notify(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct mcp_deadlines *d = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn *k, **kp;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci == NULL)
			return;
		k = mb_xcalloc(1, sizeof(*k));
		k->fd = ci->connect_fd;
		pthread_mutex_lock(&d->lock);
		k->deadline_ms = mb_now_ms() + 1000LL * d->seconds;
		k->next = d->conns;
		d->conns = k;
		pthread_mutex_unlock(&d->lock);
		*socket_context = k;
		return;
	}
	if ((k = *socket_context) == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	for (kp = &d->conns; *kp != NULL; kp = &(*kp)->next)
		if (*kp == k) {
			*kp = k->next;
			break;
		}
	pthread_mutex_unlock(&d->lock);
	free(k);
	*socket_context = NULL;
}

void
mcp_deadline_set(struct mcp_deadlines *d, struct MHD_Connection *c, bool arm)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci != NULL ? ci->socket_context : NULL;

	if (k == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	k->deadline_ms = arm ? mb_now_ms() + 1000LL * d->seconds : 0;
	pthread_mutex_unlock(&d->lock);
}

static void *
reaper_main(void *arg)
{
	struct mcp_deadlines *d = arg;
	struct timespec ts;
	long long now;

	pthread_mutex_lock(&d->lock);
	while (!d->stopping) {
		now = mb_now_ms();
		for (struct conn *k = d->conns; k != NULL; k = k->next)
			if (k->deadline_ms != 0 && now >= k->deadline_ms) {
				k->deadline_ms = 0;
				(void)shutdown(k->fd, SHUT_RDWR);
				mb_log_info("closed a connection whose request passed "
				    "MCP_REQUEST_TIMEOUT");
			}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&d->stop_cond, &d->lock, &ts);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct mcp_deadlines *
mcp_deadlines_start(unsigned seconds, struct mb_err *err)
{
	struct mcp_deadlines *d = mb_xcalloc(1, sizeof(*d));

	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->stop_cond, NULL);
	d->seconds = seconds ? seconds : 1;
	if (pthread_create(&d->reaper, NULL, reaper_main, d) != 0) {
		pthread_cond_destroy(&d->stop_cond);
		pthread_mutex_destroy(&d->lock);
		free(d);
		mb_err_set(err, MB_E_INTERNAL, "cannot start the request-deadline thread");
		return NULL;
	}
	return d;
}

void
mcp_deadlines_stop(struct mcp_deadlines **dp)
{
	struct mcp_deadlines *d = *dp;
	struct conn *k;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_signal(&d->stop_cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->reaper, NULL);
	while ((k = d->conns) != NULL) {
		d->conns = k->next;
		free(k);
	}
	pthread_cond_destroy(&d->stop_cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
	*dp = NULL;
}
