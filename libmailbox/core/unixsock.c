/*
 * Unix-socket listeners: see include/mailbox/unixsock.h.  Both daemons run
 * as a service user next to other users' processes, so the socket file is
 * the access check (with SO_PEERCRED where the daemon checks uids): a
 * moment with a wider mode, or a path swapped for a file, would be a hole.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/unixsock.h"

/* Whether a server answers at sun; a refused connect() means a stale socket. */
static int
is_live(const struct sockaddr_un *sun, struct mb_err *err)
{
	int fd, r;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return mb_err_set(err, MB_E_INTERNAL, "socket: %s", strerror(errno));
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0;
	close(fd);
	return r;
}

/* Clear path for bind(): nothing there, or a stale socket (removed). */
static int
clear_path(const struct sockaddr_un *sun, struct mb_err *err)
{
	const char *path = sun->sun_path;
	struct stat st;
	int live;

	if (lstat(path, &st) == -1) {
		if (errno == ENOENT)
			return 0;
		return mb_err_set(err, MB_E_CONFIG, "%s: %s", path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return mb_err_set(err, MB_E_CONFIG,
		    "%s exists and is not a socket; not replacing it", path);
	if ((live = is_live(sun, err)) == -1)
		return -1;
	if (live)
		return mb_err_set(err, MB_E_CONFIG,
		    "%s is live (a server answers there); not taking it over", path);
	mb_log_info("removing the stale socket %s", path);
	if (unlink(path) == -1 && errno != ENOENT)
		return mb_err_set(err, MB_E_CONFIG, "removing the stale socket %s: %s", path,
		    strerror(errno));
	return 0;
}

int
mb_unix_listen(const char *path, mode_t mode, int flags, int backlog, struct mb_err *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, type = SOCK_STREAM | SOCK_CLOEXEC, saved;

	if (path == NULL || *path == '\0' || strlen(path) >= sizeof(sun.sun_path))
		return mb_err_set(err, MB_E_CONFIG, "'%.64s': not a usable unix socket path "
		    "(empty, or longer than %zu bytes)", path ? path : "",
		    sizeof(sun.sun_path) - 1);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (clear_path(&sun, err) == -1)
		return -1;
	if (flags & MB_UNIX_NONBLOCK)
		type |= SOCK_NONBLOCK;
	if ((fd = socket(AF_UNIX, type, 0)) == -1)
		return mb_err_set(err, MB_E_INTERNAL, "socket: %s", strerror(errno));
	old = umask(~mode & 0777);	/* mode from the start: no window with a wider one */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		umask(old);
		close(fd);
		return mb_err_set(err, saved == EADDRINUSE ? MB_E_CONFIG : MB_E_INTERNAL,
		    "bind %s: %s", path, strerror(saved));
	}
	umask(old);
	/* chmod() too: under a directory with a default ACL the umask is not
	 * applied, and this narrows what the ACL gave */
	if (chmod(path, mode) == -1 || listen(fd, backlog) == -1) {
		saved = errno;
		close(fd);
		unlink(path);
		return mb_err_set(err, MB_E_INTERNAL, "%s: %s", path, strerror(saved));
	}
	return fd;
}
