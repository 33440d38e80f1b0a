/*
 * The HTTP transport: libmicrohttpd with an internal thread pool, its
 * connections accepted by http_accept.c.  This file, http_accept.c and
 * http_deadline.c (the request deadline) are the only ones that know
 * libmicrohttpd.  It enforces what the MCP
 * Streamable HTTP transport asks of the HTTP layer, in this order:
 *   Host allow-list (DNS rebinding) -> 403, Origin allow-list -> 403,
 *   path (/mcp, /healthz) -> 404, method -> 405, Accept -> 406,
 *   Content-Type -> 415, body size -> 413;
 * and hands the body and the MCP headers to rpc.c, which checks those (the
 * protocol version decides the era, and that needs the body).  Limits
 * (docs/mcpd.md: limits): connections, connections per peer address, the idle
 * timeout, a deadline for a whole request's headers and body, per-connection
 * memory, body size.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <microhttpd.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/unixsock.h"
#include "mailbox/util.h"
#include "auth.h"
#include "http_accept.h"
#include "http_deadline.h"
#include "mcpd.h"

struct mcp_http {
	struct MHD_Daemon	*daemon;
	struct mcp_server	*srv;
	char			**hosts;	/* owned, NULL-terminated: allowed Host values */
	char			**origins;	/* owned, NULL-terminated: allowed Origin values */
	int			 listen_fd;	/* owned: the listening socket, or -1 */
	struct mcp_acceptor	*acceptor;	/* owned: hands its connections to the daemon */
	atomic_uint		 closed;	/* connections closed (connection_notify) */
	struct mcp_deadlines	*deadlines;	/* owned; MCP_REQUEST_TIMEOUT */
};

/* Per-request state, in *req_cls; freed in request_completed(). */
struct req {
	struct mb_buf	body;
	char		*owner;		/* owned; the token subject, or NULL */
	char		*caller;	/* owned; the rate limit's key (mcpd.h: struct mcp_post) */
	bool		may_write;	/* the write scope (always without auth) */
	bool		too_large;
	bool		early;		/* a response was queued before the body */
};

static void
list_add(char ***listp, size_t *np, const char *s)
{
	*listp = mb_xrealloc(*listp, (*np + 2) * sizeof(**listp));
	(*listp)[(*np)++] = mb_xstrdup(s);
	(*listp)[*np] = NULL;
}

static void
list_free(char ***listp)
{
	if (*listp == NULL)
		return;
	for (size_t i = 0; (*listp)[i]; i++)
		free((*listp)[i]);
	free(*listp);
	*listp = NULL;
}

static bool
list_has(char **list, const char *s, bool nocase)
{
	for (size_t i = 0; list && list[i]; i++)
		if (nocase ? strcasecmp(list[i], s) == 0 : strcmp(list[i], s) == 0)
			return true;
	return false;
}

static enum MHD_Result
send_body(struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
    size_t len, const char *session)	/* takes body (malloc'd or NULL) */
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body ? body : (char *)"",
	    body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (session && *session)
		MHD_add_response_header(r, "Mcp-Session-Id", session);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A JSON-RPC error body with id null (transport errors). */
static enum MHD_Result
send_error(struct MHD_Connection *c, unsigned status, int code, const char *message)
{
	json_t *e = mcp_rpc_error(NULL, code, message);
	char *s = json_dumps(e, JSON_COMPACT);

	json_decref(e);
	return send_body(c, status, "application/json", s, s ? strlen(s) : 0, NULL);
}

/* Accept must name both application/json and text/event-stream (or their wildcards). */
static bool
accept_ok(const char *accept)
{
	bool json = false, sse = false;
	const char *p = accept;

	if (accept == NULL)
		return false;
	while (*p) {
		const char *end = strchr(p, ','), *semi;
		size_t n;

		if (end == NULL)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		semi = memchr(p, ';', (size_t)(end - p));
		n = (size_t)((semi ? semi : end) - p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if ((n == 16 && strncasecmp(p, "application/json", 16) == 0) ||
		    (n == 13 && strncasecmp(p, "application/*", 13) == 0))
			json = true;
		if ((n == 17 && strncasecmp(p, "text/event-stream", 17) == 0) ||
		    (n == 6 && strncasecmp(p, "text/*", 6) == 0))
			sse = true;
		if (n == 3 && strncmp(p, "*/*", 3) == 0)
			json = sse = true;
		p = *end ? end + 1 : end;
	}
	return json && sse;
}

static bool
content_type_ok(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return false;
	while (*ct == ' ')
		ct++;
	n = strcspn(ct, "; \t");
	return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static enum MHD_Result
handle_healthz(struct mcp_http *h, struct MHD_Connection *c, const char *method)
{
	int status;
	char *s;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, -32000, "Method not allowed");
	s = mcp_healthz(h->srv, &status);
	return send_body(c, (unsigned)status, "application/json", s, s ? strlen(s) : 0, NULL);
}

static enum MHD_Result
handle_delete(struct mcp_http *h, struct MHD_Connection *c, const char *owner)
{
	const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");

	if (sid == NULL)
		return send_error(c, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
	if (!mcp_session_delete(h->srv->sessions, sid, owner))
		return send_error(c, 404, -32001, "Session not found");
	return send_body(c, 200, NULL, NULL, 0, NULL);
}

/*
 * A write tool called with a token lacking the write scope: rpc.c's 403 and
 * its body, with the challenge mcp_auth_check() makes for the write scope
 * (error="insufficient_scope", the scope needed, then those granted), so a
 * client can ask for the scope and retry (MCP step-up authorization).
 */
static enum MHD_Result
send_step_up(struct mcp_http *h, struct MHD_Connection *c, struct mcp_post *post)
{
	struct mcp_auth_result res;
	struct MHD_Response *r;
	enum MHD_Result ret;

	mcp_auth_check(h->srv->auth, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    mcp_auth_header_name(h->srv->auth)), mcp_auth_scope_write(h->srv->auth), &res);
	r = MHD_create_response_from_buffer(strlen(post->body), post->body,
	    MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(post->body);
		mcp_auth_result_release(&res);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (res.www_authenticate != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, res.www_authenticate);
	ret = MHD_queue_response(c, MHD_HTTP_FORBIDDEN, r);
	MHD_destroy_response(r);
	mcp_auth_result_release(&res);
	return ret;
}

static enum MHD_Result
handle_post(struct mcp_http *h, struct MHD_Connection *c, struct req *rq)
{
	struct mcp_post post;
	const char *pv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
	unsigned status;

	if (rq->too_large)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, -32600,
		    "Request body too large (limit 1 MiB)");
	memset(&post, 0, sizeof(post));
	post.session_id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
	post.proto_header = pv;
	post.method_header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Method");
	post.name_header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Name");
	post.owner = rq->owner;
	post.caller = rq->caller;
	post.may_write = rq->may_write;
	mcp_rpc_post(h->srv, rq->body.data, rq->body.len, &post);
	status = (unsigned)post.status;
	if (post.insufficient_scope && h->srv->auth != NULL)
		return send_step_up(h, c, &post);
	if (post.body == NULL)
		return send_body(c, status, NULL, NULL, 0, post.new_session);
	if (post.sse) {
		struct MHD_Response *r = MHD_create_response_from_buffer(strlen(post.body),
		    post.body, MHD_RESPMEM_MUST_FREE);
		enum MHD_Result ret;

		if (r == NULL) {
			free(post.body);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-transform");
		MHD_add_response_header(r, "X-Accel-Buffering", "no");
		if (post.new_session[0])
			MHD_add_response_header(r, "Mcp-Session-Id", post.new_session);
		ret = MHD_queue_response(c, status, r);
		MHD_destroy_response(r);
		return ret;
	}
	return send_body(c, status, "application/json", post.body, strlen(post.body),
	    post.new_session);
}

/*
 * Whose limits a request counts under: the token subject with OAuth, else the
 * peer address (every client of a unix socket is one caller).  New string.
 */
static char *
caller_of(struct MHD_Connection *c, const char *owner)
{
	const union MHD_ConnectionInfo *ci;
	struct mb_buf b = MB_BUF_INIT(512);
	char addr[INET6_ADDRSTRLEN] = "unix";

	if (owner != NULL) {
		mb_buf_addf(&b, "sub:%s", owner);
		return mb_buf_detach(&b, NULL);
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci != NULL && ci->client_addr != NULL) {
		const struct sockaddr *sa = ci->client_addr;

		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
			    addr, sizeof(addr));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6,
			    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, addr,
			    sizeof(addr));
	}
	mb_buf_addf(&b, "addr:%s", addr);
	return mb_buf_detach(&b, NULL);
}

/* The checks every /mcp request passes before its body is read. */
static enum MHD_Result
early_checks(struct mcp_http *h, struct MHD_Connection *c, const char *url, const char *method,
    struct req *rq, bool *handled_r)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");

	*handled_r = true;
	if (host == NULL || !list_has(h->hosts, host, true)) {
		mb_log_info("refused a request for a Host that is not allowed");
		return send_error(c, 403, -32000, "Forbidden: Host not allowed");
	}
	if (origin != NULL && !list_has(h->origins, origin, true)) {
		mb_log_info("refused a request from an Origin that is not allowed");
		return send_error(c, 403, -32000, "Forbidden: Origin not allowed");
	}
	if (strcmp(url, "/healthz") == 0)
		return handle_healthz(h, c, method);
	if (h->srv->auth != NULL && mcp_auth_is_metadata_path(h->srv->auth, url)) {
		/* RFC 9728 protected resource metadata: public, no token */
		char *doc = mcp_auth_metadata_json(h->srv->auth);
		struct MHD_Response *r;
		enum MHD_Result ret;

		if (doc == NULL)
			return MHD_NO;
		r = MHD_create_response_from_buffer(strlen(doc), doc, MHD_RESPMEM_MUST_FREE);
		if (r == NULL) {
			free(doc);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
		ret = MHD_queue_response(c, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strcmp(url, "/mcp") != 0)
		return send_error(c, 404, -32000, "Not found: the MCP endpoint is /mcp");
	rq->may_write = true;
	if (h->srv->auth != NULL) {
		/* the bearer token on every request, sessions or not (docs/auth.md) */
		struct mcp_auth_result res;
		const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    mcp_auth_header_name(h->srv->auth));

		mcp_auth_check(h->srv->auth, v, NULL, &res);
		if (res.status != 200) {
			struct MHD_Response *r = MHD_create_response_from_buffer(0, (char *)"",
			    MHD_RESPMEM_PERSISTENT);
			enum MHD_Result ret;

			if (r == NULL) {
				mcp_auth_result_release(&res);
				return MHD_NO;
			}
			if (res.www_authenticate != NULL)
				MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				    res.www_authenticate);
			ret = MHD_queue_response(c, res.status, r);
			MHD_destroy_response(r);
			mcp_auth_result_release(&res);
			return ret;
		}
		rq->owner = mb_xstrdup(res.sub);	/* sessions are bound to it */
		rq->may_write = res.may_write;
		mcp_auth_result_release(&res);
	}
	rq->caller = caller_of(c, rq->owner);
	if (strcmp(method, "DELETE") == 0)
		return handle_delete(h, c, rq->owner);
	if (strcmp(method, "POST") != 0)
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, -32000,
		    "Method not allowed: this server sends no server-initiated stream; use POST");
	if (!accept_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT)))
		return send_error(c, 406, -32000,
		    "Not Acceptable: Accept must include application/json and text/event-stream");
	if (!content_type_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_TYPE)))
		return send_error(c, 415, -32000,
		    "Unsupported Media Type: Content-Type must be application/json");
	*handled_r = false;
	return MHD_YES;
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	struct mcp_http *h = cls;
	struct req *rq = *req_cls;
	bool handled;
	enum MHD_Result ret;

	if (rq == NULL) {
		const char *cl;

		rq = mb_xcalloc(1, sizeof(*rq));
		mb_buf_init(&rq->body, MCP_MAX_BODY);
		*req_cls = rq;
		ret = early_checks(h, c, url, method, rq, &handled);
		if (handled) {
			rq->early = true;
			mcp_deadline_set(h->deadlines, c, false);
			return ret;
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > MCP_MAX_BODY) {
			rq->early = true;
			return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, -32600,
			    "Request body too large (limit 1 MiB)");
		}
		return MHD_YES;
	}
	if (rq->early) {	/* answered already: drain what the client still sends */
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (!rq->too_large && mb_buf_add(&rq->body, upload, *upload_size) == -1) {
			rq->too_large = true;
			mb_buf_release(&rq->body);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	mcp_deadline_set(h->deadlines, c, false);	/* the body is in: the rest is ours */
	return handle_post(h, c, rq);
}

static void
request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct mcp_http *h = cls;
	struct req *rq = *req_cls;

	/* the next request on this keep-alive connection starts its own clock */
	mcp_deadline_set(h->deadlines, c, true);
	if (rq == NULL)
		return;
	mb_buf_release(&rq->body);
	free(rq->owner);
	free(rq->caller);
	free(rq);
	*req_cls = NULL;
}

/*
 * libmicrohttpd's word that a connection began or ended: an end is counted
 * for the acceptor (it accepts none while MCP_MAX_CONNECTIONS of those it
 * handed over are open), then both are the deadline's.
 */
static void
connection_notify(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct mcp_http *h = cls;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
		atomic_fetch_add(&h->closed, 1);
	mcp_deadline_notify(h->deadlines, c, socket_context, toe);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) MB_PRINTF(2, 0);

/* libmicrohttpd's own errors, into our log (its format strings are its own). */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	mb_log_warnx("http: %s", line);
}

/* The careful listener (include/mailbox/unixsock.h), its errors naming the setting. */
static int
open_unix(const char *path, struct mb_err *err)
{
	struct mb_err e = { 0 };
	int fd = mb_unix_listen(path, 0660, 0, 64, &e);

	if (fd == -1)
		mb_err_set(err, e.code, "MCP_LISTEN: %s", e.msg);
	return fd;
}

/*
 * A TCP listener on the address in ss (len bytes), bound and listening, and
 * its port (the one asked for, or the kernel's choice for port 0) in
 * *port_r: the descriptor, or -1.
 * Bound here rather than by libmicrohttpd so that the port is known before
 * the daemon's threads start: the allowed Host values name it, and a list a
 * running thread could read while it grows is a data race (a request that
 * arrives as the daemon starts could read the array realloc() just freed).
 */
static int
open_tcp(const struct sockaddr_storage *ss, socklen_t len, const char *listen_at,
    unsigned *port_r, struct mb_err *err)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int one = 1, saved;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd == -1) {
		mb_err_set(err, MB_E_CONFIG, "cannot listen on %s: %s", listen_at, strerror(errno));
		return -1;
	}
	/* as libmicrohttpd sets its own: a restart may bind at once, v6 is v6 only */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) == -1 || listen(fd, SOMAXCONN) == -1 ||
	    getsockname(fd, (struct sockaddr *)&bound, &blen) == -1) {
		saved = errno;
		close(fd);
		mb_err_set(err, MB_E_CONFIG, "cannot listen on %s: %s", listen_at, strerror(saved));
		return -1;
	}
	*port_r = ntohs(bound.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&bound)->sin6_port : ((struct sockaddr_in *)&bound)->sin_port);
	return fd;
}

/* The allowed Host and Origin values (h->hosts, h->origins) for port. */
static void
allowed_lists(struct mcp_http *h, const struct mcp_config *conf, unsigned port)
{
	size_t nh = 0, no = 0;
	char buf[300];

	/* loopback names on our port, plus MCP_ALLOWED_HOSTS and MCP_ALLOWED_ORIGINS */
	if (conf->listen_unix)
		list_add(&h->hosts, &nh, "localhost");
	else {
		const char *names[] = { "127.0.0.1", "localhost", "[::1]" };

		for (size_t i = 0; i < MB_ARRAY_LEN(names); i++) {
			snprintf(buf, sizeof(buf), "%s:%u", names[i], port);
			list_add(&h->hosts, &nh, buf);
			snprintf(buf, sizeof(buf), "http://%s:%u", names[i], port);
			list_add(&h->origins, &no, buf);
		}
	}
	for (size_t i = 0; conf->allowed_hosts && conf->allowed_hosts[i]; i++)
		list_add(&h->hosts, &nh, conf->allowed_hosts[i]);
	for (size_t i = 0; conf->allowed_origins && conf->allowed_origins[i]; i++)
		list_add(&h->origins, &no, conf->allowed_origins[i]);
	if (h->origins == NULL)
		h->origins = mb_xcalloc(1, sizeof(*h->origins));
}

/*
 * The listener first, then everything a request reads (the allowed lists),
 * then the daemon: its threads start with the state they share complete,
 * and never see it change.  The daemon listens on nothing: the acceptor
 * (http_accept.c) accepts for it and hands each connection to the pool,
 * which places it on a thread by its descriptor, so that connections that
 * arrive together are spread over the threads.
 */
struct mcp_http *
mcp_http_start(struct mcp_server *srv, unsigned *port_r, struct mb_err *err)
{
	const struct mcp_config *conf = srv->conf;
	struct mcp_http *h = mb_xcalloc(1, sizeof(*h));
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
	    MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	socklen_t len;
	unsigned port = 0;

	h->srv = srv;
	h->listen_fd = -1;
	if ((h->deadlines = mcp_deadlines_start(conf->request_timeout, err)) == NULL)
		goto fail;
	memset(&ss, 0, sizeof(ss));
	if (conf->listen_unix)
		len = 0;	/* open_unix() */
	else if (inet_pton(AF_INET, conf->host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)conf->port);
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, conf->host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)conf->port);
		flags |= MHD_USE_IPv6;
		len = sizeof(*sin6);
	} else {
		mb_err_set(err, MB_E_CONFIG, "MCP_LISTEN: '%s' is not an IP address", conf->host);
		goto fail;
	}
	h->listen_fd = conf->listen_unix ? open_unix(conf->unix_path, err) :
	    open_tcp(&ss, len, conf->listen, &port, err);
	if (h->listen_fd == -1)
		goto fail;
	allowed_lists(h, conf, port);
	/*
	 * The acceptor keeps MCP_MAX_CONNECTIONS; libmicrohttpd's own limit,
	 * which it splits evenly over the pool's threads, is set where no thread
	 * reaches it: its check of a handed-over connection uses counts that lag
	 * (a closed connection is counted until after its closed notification,
	 * a queued one not at all), closes the connection unanswered, and in
	 * 0.9.75 leaves the thread's lock held, so that the thread serves
	 * nothing again.  No thread holds more than the acceptor's limit plus
	 * one closing connection on each thread (notified, not yet uncounted),
	 * which is what each thread's share is here.
	 */
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handler, h,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
	    MHD_OPTION_THREAD_POOL_SIZE, conf->threads,
	    MHD_OPTION_CONNECTION_LIMIT, conf->threads * (conf->max_connections + conf->threads),
	    MHD_OPTION_CONNECTION_TIMEOUT, conf->timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, conf->listen_unix ? 0u : conf->max_per_address,
	    MHD_OPTION_NOTIFY_COMPLETED, request_completed, h,
	    MHD_OPTION_NOTIFY_CONNECTION, connection_notify, h,
	    MHD_OPTION_END);
	if (h->daemon == NULL) {
		mb_err_set(err, MB_E_CONFIG, "cannot listen on %s", conf->listen);
		goto fail;
	}
	if ((h->acceptor = mcp_acceptor_start(h->listen_fd, h->daemon, &h->closed,
	    conf->max_connections, err)) == NULL)
		goto fail;
	*port_r = port;
	return h;
fail:
	mcp_http_stop(&h);
	return NULL;
}

void
mcp_http_stop(struct mcp_http **hp)
{
	struct mcp_http *h = *hp;

	if (h == NULL)
		return;
	mcp_acceptor_stop(&h->acceptor);	/* no new connection, then the daemon's end */
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	mcp_deadlines_stop(&h->deadlines);	/* after the daemon: no more notifications */
	if (h->listen_fd != -1)
		close(h->listen_fd);
	if (h->srv->conf->listen_unix && h->daemon)
		unlink(h->srv->conf->unix_path);
	list_free(&h->hosts);
	list_free(&h->origins);
	free(h);
	*hp = NULL;
}
