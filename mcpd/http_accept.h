/*
 * The HTTP transport's acceptor (http_accept.c): one thread that accepts
 * every connection on the listening socket and hands it to libmicrohttpd's
 * pool, which places a connection it is handed on a pool thread by its
 * descriptor, in turn.  libmicrohttpd's own accept let whichever pool thread
 * woke first take up to ten connections at once: sixteen that arrived
 * together were served by two threads of four, or one, and mcpd used one
 * core under load (docs/mcpd.md, Transport).  Only http.c uses it.
 */
#ifndef MCPD_HTTP_ACCEPT_H
#define MCPD_HTTP_ACCEPT_H

#include <stdatomic.h>

#include <microhttpd.h>

#include "mailbox/err.h"

struct mcp_acceptor;

/*
 * Start accepting on listen_fd (listening; the caller keeps and closes it,
 * after _stop) into daemon (started with MHD_USE_NO_LISTEN_SOCKET and
 * MHD_USE_ITC, and a connection limit it never reaches: limit plus one a
 * pool thread), while fewer than limit connections it handed over are
 * still open (*closed, the caller's count of libmicrohttpd's closed
 * notifications, read as it changes): at the limit the next connection
 * waits in the socket's backlog, as it did when libmicrohttpd accepted,
 * instead of being accepted and refused.  Free with _stop.  NULL + err.
 */
struct mcp_acceptor	*mcp_acceptor_start(int listen_fd, struct MHD_Daemon *daemon,
			    const atomic_uint *closed, unsigned limit, struct mb_err *err);
/* Stop accepting and join the thread; call before MHD_stop_daemon(). */
void	mcp_acceptor_stop(struct mcp_acceptor **ap);

#endif
