/*
 * The request deadline of the HTTP transport (http_deadline.c): MCP_TIMEOUT
 * measures idle gaps only, so a client sending a byte every few seconds
 * would hold a connection, and a place in MCP_MAX_CONNECTIONS, for ever.
 * Here every request gets MCP_REQUEST_TIMEOUT seconds for its headers and
 * body (docs/mcpd.md: limits).  Only http.c uses it.
 */
#ifndef MCPD_HTTP_DEADLINE_H
#define MCPD_HTTP_DEADLINE_H

#include <stdbool.h>

#include <microhttpd.h>

#include "mailbox/err.h"

struct mcp_deadlines;

/* Start the reaper thread for seconds-long deadlines; free with _stop.  NULL + err. */
struct mcp_deadlines	*mcp_deadlines_start(unsigned seconds, struct mb_err *err);
/* Stop the thread and free the list; call after MHD_stop_daemon(). */
void	mcp_deadlines_stop(struct mcp_deadlines **dp);
/* The MHD_OPTION_NOTIFY_CONNECTION callback; cls is the struct mcp_deadlines. */
void	mcp_deadline_notify(void *cls, struct MHD_Connection *c, void **socket_context,
	    enum MHD_ConnectionNotificationCode toe);
/*
 * arm: a request begins on c (its deadline is seconds from now); !arm: its
 * headers and body are in and its answer is being made, no deadline.
 */
void	mcp_deadline_set(struct mcp_deadlines *d, struct MHD_Connection *c, bool arm);

#endif
