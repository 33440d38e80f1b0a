/*
 * The control-socket client (docs/writes.md): one connection per request to
 * syncd's socket, a request frame, a reply frame with the same id.  Blocking
 * with SO_RCVTIMEO/SO_SNDTIMEO, so a stuck syncd costs one thread at most the
 * timeout.  mcpd holds no credential: the kernel tells syncd our uid.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "mailbox/ctl.h"
#include "mailbox/ipc.h"
#include "mcpd.h"

static atomic_uint next_id = 1;

int
mcp_ctl_call(const char *path, const struct mb_ctl_request_view *rq, unsigned timeout_s,
    struct mb_ctl_reply *rp, struct mb_err *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_s };
	struct mb_ipc_conn conn;
	struct mb_ipc_out o;
	struct mb_ipc_frame f;
	uint32_t id = atomic_fetch_add(&next_id, 1);
	int fd, r = -1;

	memset(rp, 0, sizeof(*rp));
	if (strlen(path) >= sizeof(sun.sun_path))
		return mb_err_set(err, MB_E_CONFIG, "SYNCD_SOCKET is too long");
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return mb_err_set(err, MB_E_TEMP, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		mb_err_set(err, MB_E_TEMP, "syncd is not reachable at %s (%s): is it running as a "
		    "daemon, and is this user in SYNCD_ALLOWED_UIDS?", path, strerror(errno));
		close(fd);
		return -1;
	}
	mb_ipc_conn_init(&conn, fd, MB_IPC_BIT(MB_IPC_CTL_REPLY));
	if (mb_ctl_put_request(&o, id, rq, err) == -1) {
		mb_ipc_out_release(&o);
		goto out;
	}
	if (mb_ipc_send(&conn, &o, err) == -1)
		goto out;
	for (;;) {
		ssize_t n;
		int k = mb_ipc_next(&conn, &f, err);

		if (k == -1)
			goto out;
		if (k == 1)
			break;
		n = mb_ipc_read(&conn, err);
		if (n == 0) {
			mb_err_set(err, MB_E_TEMP, "syncd closed the connection without an answer "
			    "(refused uid, or syncd stopped)");
			goto out;
		}
		if (n == -1) {
			if (err->code == 0)
				mb_err_set(err, MB_E_TEMP, "no answer from syncd within %u s; the "
				    "write may or may not have happened", timeout_s);
			goto out;
		}
	}
	if (f.hdr.id != id) {
		mb_err_set(err, MB_E_PROTO, "syncd answered another request");
		goto out;
	}
	r = mb_ctl_get_reply(&f.cur, rp, err);
out:
	mb_ipc_conn_release(&conn);
	close(fd);
	return r;
}
