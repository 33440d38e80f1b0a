/*
 * auth_http: the auth module behind a real libmicrohttpd daemon, wired in the
 * way docs/auth.md shows, so tests/integration/test_auth.sh can check what a
 * client sees on the wire (status, WWW-Authenticate, the metadata document
 * and its CORS header).  MCP_* settings come from the environment; it
 * listens on 127.0.0.1, port 0, prints the port, and serves until stdin
 * closes:
 *
 *	/.well-known/oauth-protected-resource[/mcp]	the RFC 9728 document
 *	/mcp				200 {"sub":..,"client_id":..,"write":..}
 *	/mcp?tool=write			the same, for a tool that needs the write scope
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "auth.h"
#include "mailbox/log.h"

static const char *
env(const char *name)
{
	return getenv(name);
}

static enum MHD_Result
send_text(struct MHD_Connection *conn, unsigned status, char *body, const char *type,
    const char *challenge)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), body,
	    MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (type != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (challenge != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct mcp_auth *auth = cls;
	struct mcp_auth_result res, res2;
	struct MHD_Response *resp;
	const char *v, *tool;
	enum MHD_Result ret;
	json_t *body;

	if (*req_cls == NULL) {		/* first call: headers only */
		*req_cls = auth;
		if (mcp_auth_is_metadata_path(auth, url)) {
			char *doc = mcp_auth_metadata_json(auth);

			resp = MHD_create_response_from_buffer(strlen(doc), doc,
			    MHD_RESPMEM_MUST_FREE);
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
			    "application/json");
			MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
			ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
			MHD_destroy_response(resp);
			return ret;
		}
		if (strcmp(url, "/mcp") != 0)
			return send_text(conn, MHD_HTTP_NOT_FOUND, strdup("not found\n"), NULL, NULL);
		v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, mcp_auth_header_name(auth));
		mcp_auth_check(auth, v, NULL, &res);
		if (res.status != 200) {
			ret = send_text(conn, res.status, strdup(""), NULL, res.www_authenticate);
			mcp_auth_result_release(&res);
			return ret;
		}
		tool = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tool");
		if (tool != NULL && strcmp(tool, "write") == 0 && !res.may_write) {
			mcp_auth_check(auth, v, mcp_auth_scope_write(auth), &res2);
			ret = send_text(conn, res2.status, strdup(""), NULL, res2.www_authenticate);
			mcp_auth_result_release(&res2);
			mcp_auth_result_release(&res);
			return ret;
		}
		body = json_pack("{s:s, s:s?, s:b}", "sub", res.sub ? res.sub : "-",
		    "client_id", res.client_id, "write", res.may_write);
		mcp_auth_result_release(&res);
		ret = send_text(conn, MHD_HTTP_OK, json_dumps(body, JSON_COMPACT),
		    "application/json", NULL);
		json_decref(body);
		return ret;
	}
	*upload_data_size = 0;	/* a response is queued already; drop any body */
	return MHD_YES;
}

int
main(void)
{
	struct mcp_auth_conf conf;
	struct mcp_auth *auth = NULL;
	struct mb_err err = { 0 };
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char buf[64];

	signal(SIGPIPE, SIG_IGN);
	mb_log_init("auth_http", MB_LOG_INFO);
	if (mcp_auth_conf_load(&conf, env, &err) == -1 ||
	    mcp_auth_listen_check(conf.mode, "127.0.0.1:0", &err) == -1 ||
	    mcp_auth_new(&conf, &auth, &err) == -1) {
		fprintf(stderr, "auth_http: %s\n", err.msg);
		mcp_auth_conf_release(&conf);
		return 2;
	}
	mcp_auth_conf_release(&conf);
	if (mcp_auth_prefetch(auth, &err) == -1)
		mb_log_warnx("auth: %s; will retry on requests", err.msg);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    handler, auth, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
	    MHD_OPTION_THREAD_POOL_SIZE, 4u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
	    MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "auth_http: cannot start the daemon\n");
		mcp_auth_free(&auth);
		return 2;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("%u\n", (unsigned)info->port);
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin) != NULL)
		;
	MHD_stop_daemon(d);
	mcp_auth_free(&auth);
	return 0;
}
