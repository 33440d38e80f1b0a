/*
 * sd_notify(3)'s datagram protocol: the state string, as is, in one
 * SOCK_DGRAM message to $NOTIFY_SOCKET.  See include/mailbox/notify.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mailbox/notify.h"
#include "mailbox/util.h"

int
mb_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;
	size_t n;
	ssize_t sent;
	int fd, saved;

	if (path == NULL || path[0] == '\0')
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path)) {
		errno = EAFNOSUPPORT;	/* vsock and other families: not used here */
		return -1;
	}
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@') {
		sa.sun_path[0] = '\0';	/* abstract: the length counts, no NUL */
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	saved = errno;
	close(fd);
	errno = saved;
	return sent == (ssize_t)strlen(state) ? 1 : -1;
}

long long
mb_notify_watchdog_period_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long us;

	if (usec == NULL || *usec == '\0' || getenv("NOTIFY_SOCKET") == NULL)
		return 0;
	if (pid != NULL && *pid != '\0') {
		unsigned long long p;

		errno = 0;
		p = strtoull(pid, &end, 10);
		if (errno != 0 || *end != '\0' || p != (unsigned long long)getpid())
			return 0;
	}
	errno = 0;
	us = strtoull(usec, &end, 10);
	if (errno != 0 || *end != '\0' || us == 0)
		return 0;
	us /= 2000;	/* half the interval, in ms */
	return us > 0 ? (long long)us : 1;
}

int
mb_notify_watchdog(void)
{
	static long long period = -1, last;
	long long now = mb_now_ms(), left;

	if (period == -1)
		period = mb_notify_watchdog_period_ms();
	if (period == 0)
		return -1;
	if (last == 0 || now - last >= period) {
		(void)mb_notify("WATCHDOG=1");
		last = now;
	}
	left = last + period - now;
	return left > 0x7fffffff ? 0x7fffffff : (int)left;
}
