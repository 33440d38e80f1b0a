/*
 * mcpd's 2026-07-28 path at the JSON-RPC layer (rpc.c, rpc_modern.c): which
 * era a message is served in, the answers a dual-era client reads to decide,
 * the sessionless rate limit, and output fields without nulls.
 * tests/integration/test_mcpd_clients.sh runs the same rules over HTTP and
 * with real clients.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcpd.h"

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"

static struct mcp_server srv;
static struct mcp_config conf = { .max_sessions = 8, .rate = 1000,
	.index_path = "/nonexistent/index.db" };

static int
setup(void **state)
{
	struct mb_err err = { 0 };

	(void)state;
	return mcp_server_init(&srv, &conf, &err);
}

static int
teardown(void **state)
{
	(void)state;
	mcp_server_release(&srv);
	return 0;
}

/* POST body with the given headers; returns the parsed answer (or NULL: none). */
static json_t *
post(const char *body, const char *version, const char *method, const char *name,
    const char *session, int *status_r)
{
	struct mcp_post p;
	json_t *j = NULL;

	memset(&p, 0, sizeof(p));
	p.proto_header = version;
	p.method_header = method;
	p.name_header = name;
	p.session_id = session;
	p.may_write = true;
	mcp_rpc_post(&srv, body, strlen(body), &p);
	*status_r = p.status;
	if (p.body != NULL)
		j = json_loads(p.body, 0, NULL);
	free(p.body);
	return j;
}

static int
code_of(json_t *j)
{
	return (int)json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
}

static void
discover_answers_without_a_session(void **state)
{
	json_t *j, *r;
	int status;

	(void)state;
	j = post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}",
	    "2026-07-28", "server/discover", NULL, NULL, &status);
	assert_int_equal(status, 200);
	r = json_object_get(j, "result");
	assert_string_equal(json_string_value(json_array_get(json_object_get(r,
	    "supportedVersions"), 0)), "2026-07-28");
	assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
	assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "public");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(r,
	    "_meta"), "io.modelcontextprotocol/serverInfo"), "name")), "imap-mcp");
	assert_int_equal(mcp_session_count(srv.sessions), 0);
	json_decref(j);
}

/* Each answer a dual-era client takes as "modern server": never -32000 for a modern probe. */
static void
modern_errors_are_the_ones_the_spec_names(void **state)
{
	static const struct {
		const char	*body, *version, *method, *name;
		int		 status, code;
	} cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{" META "}}",
		    "2026-07-28", "ping", NULL, 404, MCP_RPC_METHOD_NOT_FOUND },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}",
		    "2026-07-28", NULL, NULL, 400, MCP_RPC_HEADER_MISMATCH },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}",
		    NULL, "tools/list", NULL, 400, MCP_RPC_HEADER_MISMATCH },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\","
		    META "}}", "2026-07-28", "tools/call", "b", 400, MCP_RPC_HEADER_MISMATCH },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}",
		    "2026-07-28", "tools/list", NULL, 400, MCP_RPC_INVALID_PARAMS },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
		    "\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\","
		    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
		    "2030-01-01", "tools/list", NULL, 400, MCP_RPC_UNSUPPORTED_VERSION },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
		    "2026-07-28", NULL, NULL, 400, MCP_RPC_HEADER_MISMATCH },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
		    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
		    "2026-07-28", "tools/list", NULL, 400, MCP_RPC_INVALID_PARAMS },
	};
	json_t *j;
	int status;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		j = post(cases[i].body, cases[i].version, cases[i].method, cases[i].name, NULL,
		    &status);
		if (status != cases[i].status || code_of(j) != cases[i].code)
			fail_msg("case %zu: HTTP %d code %d, want %d %d", i, status, code_of(j),
			    cases[i].status, cases[i].code);
		assert_int_equal(json_integer_value(json_object_get(j, "id")), 1);
		json_decref(j);
	}
	j = post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
	    "\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\","
	    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", "2030-01-01", "tools/list",
	    NULL, NULL, &status);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(
	    json_object_get(j, "error"), "data"), "supported"), 0)), "2026-07-28");
	json_decref(j);
}

/* The 2025 path is what it was: initialize makes a session, results have no resultType. */
static void
legacy_clients_are_served_as_before(void **state)
{
	json_t *j;
	int status;

	(void)state;
	j = post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
	    "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}", NULL, NULL, NULL, NULL,
	    &status);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "result"),
	    "protocolVersion")), "2025-06-18");
	assert_null(json_object_get(json_object_get(j, "result"), "resultType"));
	json_decref(j);
	j = post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", "1999-01-01", NULL, NULL,
	    NULL, &status);
	assert_int_equal(status, 400);
	assert_int_equal(code_of(j), MCP_RPC_SERVER);
	json_decref(j);
}

/* With no session to hang a bucket on, a caller's calls take from its one bucket. */
static void
sessionless_calls_are_rate_limited_per_owner(void **state)
{
	struct mcp_sessions *s = mcp_sessions_new(4);
	int allowed = 0;

	(void)state;
	mcp_sessions_set_rate(s, 2);	/* bursts of 4 */
	for (int i = 0; i < 10; i++)
		allowed += mcp_session_allow(s, "sub:alice");
	assert_int_equal(allowed, 4);
	assert_true(mcp_session_allow(s, "sub:bob"));
	assert_int_equal(mcp_session_count(s), 0);	/* buckets are not sessions */
	mcp_sessions_free(&s);
}

/*
 * docs/auth.md: a token without the write scope calling a write tool is told
 * to step up, HTTP 403 (http.c adds the challenge), on both eras; a batch
 * entry keeps its tool error, as one entry cannot change a batch's status.
 */
static void
write_tool_without_the_write_scope_is_403(void **state)
{
	const char *legacy = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"flag_message\",\"arguments\":{\"id\":1}}}";
	const char *modern = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"flag_message\",\"arguments\":{\"id\":1}," META "}}";
	char sid[2 * MCP_SESSION_ID_BYTES + 1];
	struct mcp_post p;

	(void)state;
	assert_int_equal(mcp_session_create(srv.sessions, MCP_PROTO_2025_11_25, "bob", "sub:bob",
	    sid, sizeof(sid)), 0);
	for (int era = 0; era < 2; era++) {
		memset(&p, 0, sizeof(p));
		p.owner = "bob";
		p.caller = "sub:bob";
		p.may_write = false;
		p.session_id = era == 0 ? sid : NULL;
		p.proto_header = era == 0 ? NULL : "2026-07-28";
		p.method_header = era == 0 ? NULL : "tools/call";
		p.name_header = era == 0 ? NULL : "flag_message";
		mcp_rpc_post(&srv, era == 0 ? legacy : modern, strlen(era == 0 ? legacy : modern),
		    &p);
		assert_int_equal(p.status, 403);
		assert_true(p.insufficient_scope);
		assert_non_null(strstr(p.body, "\"code\":-32000"));
		assert_non_null(strstr(p.body, "flag_message needs the scope"));
		free(p.body);
	}
	/* the write scope, or a read tool: no 403 */
	memset(&p, 0, sizeof(p));
	p.owner = "bob";
	p.session_id = sid;
	p.may_write = true;
	mcp_rpc_post(&srv, legacy, strlen(legacy), &p);
	assert_int_equal(p.status, 200);
	assert_false(p.insufficient_scope);
	free(p.body);
}

static void
null_output_fields_are_left_out(void **state)
{
	json_t *j = json_loads("{\"a\":null,\"b\":[{\"c\":null,\"d\":1}],\"e\":{\"f\":null}}", 0,
	    NULL);
	char *s;

	(void)state;
	mcp_json_drop_nulls(j);
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"b\":[{\"d\":1}],\"e\":{}}");
	free(s);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(discover_answers_without_a_session),
		cmocka_unit_test(modern_errors_are_the_ones_the_spec_names),
		cmocka_unit_test(legacy_clients_are_served_as_before),
		cmocka_unit_test(sessionless_calls_are_rate_limited_per_owner),
		cmocka_unit_test(write_tool_without_the_write_scope_is_403),
		cmocka_unit_test(null_output_fields_are_left_out),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
