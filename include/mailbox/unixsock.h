/*
 * A listening Unix stream socket, made the careful way for both daemons
 * (syncd's control socket, mcpd's MCP_LISTEN=unix:/path).
 */
#ifndef MAILBOX_UNIXSOCK_H
#define MAILBOX_UNIXSOCK_H

#include <sys/types.h>

#include "mailbox/err.h"

#define MB_UNIX_NONBLOCK	0x1	/* the listening socket is O_NONBLOCK */

/*
 * Bind and listen on path with backlog, the socket file getting exactly
 * mode (e.g. 0660).  Something already at path is handled thus:
 *   - not a socket (a regular file, a directory, a symlink...): refused,
 *     never deleted;
 *   - a socket that answers connect(): a live server's, refused;
 *   - a socket that does not: a dead server's, replaced (logged at info).
 * The process umask is set to ~mode around bind(), so the file is never
 * wider than mode, not even until a chmod(); not thread-safe for that moment
 * (call it before starting threads).  flags: MB_UNIX_NONBLOCK or 0.  The
 * socket is close-on-exec.  Returns the fd (the caller closes it and unlinks
 * path when done), or -1 with err: MB_E_CONFIG for a path that is too long,
 * taken or not a socket, MB_E_INTERNAL when a system call fails.  Messages
 * name the path, not the setting: callers prefix that.
 */
int	mb_unix_listen(const char *path, mode_t mode, int flags, int backlog,
	    struct mb_err *err);

#endif
