/*
 * The JSON-RPC layer of MCP over Streamable HTTP: one POST body in, one HTTP
 * status and body out.  Transport-neutral, so the fuzzer drives it directly.
 * http.c has already checked Host, Origin, Accept, Content-Type and the body
 * size; this file checks everything about the body, the session and the
 * MCP headers.  A message of the 2026-07-28 era goes to rpc_modern.c; this
 * file serves the 2025 revisions (initialize and sessions) and the methods
 * both eras share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/util.h"
#include "auth.h"
#include "mcpd.h"

static const char *const proto_versions[] = {
	MCP_PROTO_2025_11_25, MCP_PROTO_2025_06_18, MCP_PROTO_2025_03_26,
};

bool
mcp_proto_supported(const char *v)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(proto_versions); i++)
		if (strcmp(v, proto_versions[i]) == 0)
			return true;
	return false;
}

bool
mcp_proto_is_modern(const char *v)
{
	return v != NULL && strcmp(v, MCP_PROTO_FIRST_MODERN) >= 0;
}

/* The version to answer initialize with: the client's if we speak it, else the latest. */
static const char *
negotiate(const char *asked)
{
	for (size_t i = 0; asked && i < MB_ARRAY_LEN(proto_versions); i++)
		if (strcmp(asked, proto_versions[i]) == 0)
			return proto_versions[i];
	return MCP_PROTO_LATEST;
}

json_t *
mcp_rpc_error(json_t *id, int code, const char *message)
{
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
	    id ? id : json_null(), "error", "code", code, "message", message);
}

json_t *
mcp_rpc_result(json_t *id, json_t *result)	/* steals result */
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

size_t
mcp_json_depth(const char *s, size_t len, size_t limit)
{
	size_t depth = 0, max = 0, i;
	bool in_str = false;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"')
			in_str = true;
		else if (c == '[' || c == '{') {
			if (++depth > max)
				max = depth;
			if (max > limit)
				return limit + 1;
		} else if ((c == ']' || c == '}') && depth > 0)
			depth--;
	}
	return max;
}

void
mcp_rpc_answer(struct mcp_post *post, int status, json_t *msg)	/* steals msg */
{
	post->status = status;
	free(post->body);
	post->body = mcp_json_dumps(msg);	/* NULL msg: no body */
	json_decref(msg);
}

/* What a session-bound request needs: the session's version, or an HTTP error set. */
static const char *
session_check(struct mcp_server *srv, struct mcp_post *post)
{
	const char *v;

	if (post->session_id == NULL) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_SERVER,
		    "Bad Request: Mcp-Session-Id header is required (send initialize first)"));
		return NULL;
	}
	v = mcp_session_touch(srv->sessions, post->session_id, post->owner);
	if (v == NULL)
		mcp_rpc_answer(post, 404, mcp_rpc_error(NULL, MCP_RPC_SESSION_NOT_FOUND,
		    "Session not found: initialize a new session"));
	return v;
}

static json_t *
do_initialize(struct mcp_server *srv, json_t *params, struct mcp_post *post, int *code_r,
    const char **msg_r)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = negotiate(asked);

	if (mcp_session_create(srv->sessions, version, post->owner, post->caller,
	    post->new_session, sizeof(post->new_session)) == -1) {
		*code_r = MCP_RPC_INTERNAL;
		*msg_r = "internal error; see the server log";
		mb_log_error("initialize: no random bytes for a session id");
		return NULL;
	}
	return json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:o, s:s}",
	    "protocolVersion", version,
	    "capabilities",
	    "tools", "listChanged", 0,
	    "resources", "subscribe", 0, "listChanged", 0,
	    "logging",
	    "serverInfo", mcp_server_info(),
	    "instructions", mcp_server_instructions);
}

/*
 * The rate limit counts every request, whatever its method (a batch is as
 * many requests as it holds): a method that only reads the index costs as
 * much as a tool call.  The bucket is the caller's, whatever its sessions.
 */
static bool
rate_ok(struct mcp_server *srv, struct mcp_post *post)
{
	return mcp_session_allow(srv->sessions, post->caller);
}

static const char *const log_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

json_t *
mcp_rpc_method(struct mcp_server *srv, const char *method, json_t *params,
    struct mcp_post *post, bool modern, int *code_r, const char **msg_r, struct mb_err *err)
{
	const struct mcp_caller who = { .owner = post->owner, .may_write = post->may_write };
	json_t *result = NULL;

	*code_r = MCP_RPC_METHOD_NOT_FOUND;
	*msg_r = "Method not found";
	if (params != NULL && !json_is_object(params)) {
		*code_r = MCP_RPC_INVALID_PARAMS;
		*msg_r = "params must be an object";
		return NULL;
	}
	if (!rate_ok(srv, post)) {
		if (strcmp(method, "tools/call") == 0)	/* a tool result the model can read */
			return mcp_tool_error("rate limit: too many tool calls; wait a second "
			    "and retry");
		*code_r = MCP_RPC_SERVER;
		*msg_r = "rate limit: too many requests; wait a second and retry";
		return NULL;
	}
	if (strcmp(method, "ping") == 0 && !modern)	/* 2026-07-28 removed it */
		result = json_object();
	else if (strcmp(method, "tools/list") == 0) {
		const char *cursor = json_string_value(json_object_get(params, "cursor"));

		if (json_object_get(params, "cursor") != NULL && (cursor == NULL || *cursor != '\0')) {
			/* one page only: any cursor is one we never issued */
			*code_r = MCP_RPC_INVALID_PARAMS;
			*msg_r = "invalid cursor";
		} else
			result = mcp_tools_list(srv, &who);
	} else if (strcmp(method, "tools/call") == 0) {
		json_t *name = json_object_get(params, "name");
		json_t *args = json_object_get(params, "arguments");

		if (!json_is_string(name)) {
			*code_r = MCP_RPC_INVALID_PARAMS;
			*msg_r = "tools/call needs params.name (a string)";
		} else if (args != NULL && !json_is_object(args) && !json_is_null(args)) {
			*code_r = MCP_RPC_INVALID_PARAMS;
			*msg_r = "tools/call params.arguments must be an object";
		} else if ((result = mcp_tools_call(srv, json_string_value(name),
		    json_is_object(args) ? args : NULL, &who, err)) == NULL) {
			*code_r = MCP_RPC_INVALID_PARAMS;	/* an unknown tool */
			*msg_r = err->msg;
		}
	} else if (strcmp(method, "resources/list") == 0)
		result = mcp_resources_list(srv, &who, params, code_r, msg_r);
	else if (strcmp(method, "resources/templates/list") == 0)
		result = mcp_resource_templates_list();
	else if (strcmp(method, "resources/read") == 0) {
		result = mcp_resources_read(srv, &who, params, code_r, msg_r);
		if (result == NULL && *code_r == MCP_RPC_RESOURCE_NOT_FOUND && modern)
			*code_r = MCP_RPC_INVALID_PARAMS;	/* 2026-07-28's code for it */
	} else if (strcmp(method, "logging/setLevel") == 0 && !modern) {
		const char *lv = json_string_value(json_object_get(params, "level"));
		size_t i;

		for (i = 0; lv && i < MB_ARRAY_LEN(log_levels); i++)
			if (strcmp(lv, log_levels[i]) == 0)
				break;
		if (lv == NULL || i == MB_ARRAY_LEN(log_levels)) {
			*code_r = MCP_RPC_INVALID_PARAMS;
			*msg_r = "level must be one of debug, info, notice, warning, error, critical, "
			    "alert, emergency";
		} else {
			if (post->session_id)
				mcp_session_set_level(srv->sessions, post->session_id, post->owner,
				    (int)i);
			result = json_object();
		}
	}
	return result;
}

bool
mcp_rpc_scope_refused(struct mcp_server *srv, const char *method, json_t *params, json_t *id,
    struct mcp_post *post)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const struct mcp_tool *t;
	const char *scope = srv->auth ? mcp_auth_scope_write(srv->auth) : "the write scope";
	struct mb_buf b = MB_BUF_INIT(512);
	char *msg;

	if (post->may_write || srv->conf->read_only || strcmp(method, "tools/call") != 0 ||
	    name == NULL || (t = mcp_tools_find(name)) == NULL || t->scope != MCP_SCOPE_WRITE)
		return false;
	mb_buf_addf(&b, "Forbidden: %s needs the scope %s, which the token does not grant: "
	    "ask the authorization server for it and retry", t->name, scope);
	msg = mb_buf_detach(&b, NULL);
	mcp_rpc_answer(post, 403, mcp_rpc_error(id, MCP_RPC_SERVER, msg));
	free(msg);
	post->insufficient_scope = true;
	return true;
}

/* One legacy request (method + id); returns the response message. */
static json_t *
dispatch(struct mcp_server *srv, const char *method, json_t *id, json_t *params,
    struct mcp_post *post, bool in_batch)
{
	struct mb_err err = { 0 };
	json_t *result = NULL, *e;
	int code = MCP_RPC_METHOD_NOT_FOUND;
	const char *msg = "Method not found";

	if (strcmp(method, "initialize") == 0) {
		if (in_batch)
			return mcp_rpc_error(id, MCP_RPC_INVALID_REQUEST,
			    "initialize must not be part of a batch");
		if (params != NULL && !json_is_object(params))
			return mcp_rpc_error(id, MCP_RPC_INVALID_PARAMS, "params must be an object");
		if (!rate_ok(srv, post))
			return mcp_rpc_error(id, MCP_RPC_SERVER,
			    "rate limit: too many requests; wait a second and retry");
		result = do_initialize(srv, params, post, &code, &msg);
	} else
		result = mcp_rpc_method(srv, method, params, post, false, &code, &msg, &err);
	if (result != NULL)
		return mcp_rpc_result(id, result);
	e = mcp_rpc_error(id, code, msg);
	if (code == MCP_RPC_RESOURCE_NOT_FOUND) {	/* data names the uri */
		json_t *uri = json_object_get(params, "uri");

		json_object_set_new(json_object_get(e, "error"), "data",
		    json_pack("{s:O}", "uri", uri ? uri : json_null()));
	}
	return e;
}

enum msg_kind { MSG_INVALID, MSG_REQUEST, MSG_NOTIFICATION, MSG_RESPONSE };

/* Classify one message; *why_r says what is wrong with an invalid one. */
static enum msg_kind
classify(json_t *m, const char **why_r)
{
	json_t *id, *method;

	if (!json_is_object(m)) {
		*why_r = "a JSON-RPC message must be an object";
		return MSG_INVALID;
	}
	if (!json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") != 0) {
		*why_r = "jsonrpc must be \"2.0\"";
		return MSG_INVALID;
	}
	id = json_object_get(m, "id");
	method = json_object_get(m, "method");
	if (id != NULL && !json_is_string(id) && !json_is_integer(id)) {
		*why_r = "id must be a string or an integer";
		return MSG_INVALID;
	}
	if (method != NULL) {
		if (!json_is_string(method)) {
			*why_r = "method must be a string";
			return MSG_INVALID;
		}
		return id ? MSG_REQUEST : MSG_NOTIFICATION;
	}
	if (id != NULL && (json_object_get(m, "result") != NULL) !=
	    (json_object_get(m, "error") != NULL))
		return MSG_RESPONSE;
	*why_r = "not a request, notification or response";
	return MSG_INVALID;
}

/* The id to echo in an error about m: its id when readable, else null. */
static json_t *
echo_id(json_t *m)
{
	json_t *id = json_is_object(m) ? json_object_get(m, "id") : NULL;

	return (json_is_string(id) || json_is_integer(id)) ? id : NULL;
}

bool
mcp_rpc_wants_progress(json_t *m)
{
	json_t *tok = json_object_get(json_object_get(json_object_get(m, "params"), "_meta"),
	    "progressToken");

	return json_is_string(tok) || json_is_integer(tok);
}

/* An SSE body: a progress notification (when asked for), then the response. */
void
mcp_rpc_sse(struct mcp_post *post, json_t *request, json_t *response)	/* steals response */
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);
	json_t *tok = json_object_get(json_object_get(json_object_get(request, "params"),
	    "_meta"), "progressToken");
	json_t *note = json_pack("{s:s, s:s, s:{s:O, s:i, s:i, s:s}}", "jsonrpc", "2.0",
	    "method", "notifications/progress", "params", "progressToken", tok, "progress", 1,
	    "total", 1, "message", "done");
	char *t1 = json_dumps(note, JSON_COMPACT), *t2 = json_dumps(response, JSON_COMPACT);

	mb_buf_addf(&b, "event: message\ndata: %s\n\nevent: message\ndata: %s\n\n", t1, t2);
	free(t1);
	free(t2);
	json_decref(note);
	json_decref(response);
	free(post->body);
	post->body = mb_buf_detach(&b, NULL);
	post->status = 200;
	post->sse = true;
}

/*
 * A batch's answer is assembled as text, one entry at a time: each response
 * is serialised and freed before the next request runs, so what a batch
 * holds is its bytes, never a tree per entry (a tools/list tree is over a
 * hundred KiB of jansson objects).  Once those bytes pass MCP_MAX_RESPONSE
 * the remaining requests are not run and each gets a short error; the buffer
 * refuses anything past the budget plus room for those errors, so the bound
 * is enforced, not assumed.
 */
struct batch_out {
	struct mb_buf	 b;
	size_t		 budget;	/* MCP_MAX_RESPONSE */
	size_t		 n;		/* entries written */
	bool		 full;		/* the budget is spent: run nothing more */
};

/* Append resp (stolen; NULL: the request with id was not run) or, past the budget, an error. */
static void
batch_append(struct batch_out *o, json_t *resp, json_t *id)
{
	char *s = resp ? mcp_json_dumps(resp) : NULL;
	size_t len = s ? strlen(s) : 0;

	json_decref(resp);
	if (s != NULL && o->b.len + len + 2 > o->budget) {
		o->full = true;
		free(s);
		s = NULL;
	}
	if (s == NULL) {	/* this one did not fit or was not run: its error does fit */
		json_t *e = mcp_rpc_error(id, MCP_RPC_SERVER, "response size limit reached: "
		    "this request was not run; send it again in a smaller batch");

		s = mcp_json_dumps(e);
		len = strlen(s);
		json_decref(e);
	}
	if ((o->n > 0 && mb_buf_add(&o->b, ",", 1) == -1) || mb_buf_add(&o->b, s, len) == -1)
		mb_log_error("batch answer over its hard bound; entry dropped");	/* cannot happen */
	else
		o->n++;
	free(s);
}

static void
post_batch(struct mcp_server *srv, json_t *batch, struct mcp_post *post)
{
	const char *version = session_check(srv, post);
	size_t max_batch = srv->conf->max_batch ? srv->conf->max_batch : MCP_DEFAULT_MAX_BATCH;
	struct batch_out o = { .budget = srv->conf->max_response ? srv->conf->max_response :
	    MCP_DEFAULT_MAX_RESPONSE };
	char msg[160];
	json_t *m;
	size_t i;

	if (version == NULL)
		return;
	if (strcmp(version, MCP_PROTO_2025_03_26) != 0) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_INVALID_REQUEST,
		    "JSON-RPC batches are only accepted on sessions negotiated at 2025-03-26"));
		return;
	}
	if (json_array_size(batch) == 0) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_INVALID_REQUEST, "empty batch"));
		return;
	}
	if (json_array_size(batch) > max_batch) {
		snprintf(msg, sizeof(msg), "Invalid Request: a batch of %zu entries is too long "
		    "(limit %zu, MCP_MAX_BATCH): send fewer at a time", json_array_size(batch),
		    max_batch);
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_INVALID_REQUEST, msg));
		return;
	}
	/* the hard bound: the budget, then an error per entry, each echoing an id from the body */
	mb_buf_init(&o.b, o.budget + max_batch * MCP_BATCH_ERROR_BYTES + MCP_MAX_BODY);
	mb_buf_add(&o.b, "[", 1);
	o.n = 0;
	json_array_foreach(batch, i, m) {
		const char *why = NULL;

		switch (classify(m, &why)) {
		case MSG_INVALID:
			batch_append(&o, mcp_rpc_error(echo_id(m), MCP_RPC_INVALID_REQUEST, why),
			    NULL);
			break;
		case MSG_REQUEST:
			batch_append(&o, o.full ? NULL : dispatch(srv,
			    json_string_value(json_object_get(m, "method")), json_object_get(m, "id"),
			    json_object_get(m, "params"), post, true), json_object_get(m, "id"));
			break;
		case MSG_NOTIFICATION:
		case MSG_RESPONSE:
			break;
		}
	}
	if (o.n == 0) {
		mb_buf_release(&o.b);
		mcp_rpc_answer(post, 202, NULL);
		return;
	}
	mb_buf_add(&o.b, "]", 1);
	post->status = 200;
	free(post->body);
	post->body = mb_buf_detach(&o.b, NULL);
}

/* A copy of header value h without the optional whitespace around it (RFC 9110 5.5). */
static char *
trim_ows(const char *h)
{
	size_t n;

	if (h == NULL)
		return NULL;
	h += strspn(h, " \t");
	n = strlen(h);
	while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	return mb_xstrndup(h, n);
}

static void post_message(struct mcp_server *srv, const char *body, size_t len,
    struct mcp_post *post);

void
mcp_rpc_post(struct mcp_server *srv, const char *body, size_t len, struct mcp_post *post)
{
	const char *pv = post->proto_header, *mh = post->method_header, *nh = post->name_header;
	char *tpv = trim_ows(pv), *tmh = trim_ows(mh), *tnh = trim_ows(nh);

	/* the headers are compared with the body: compare what they say, not their padding */
	post->proto_header = tpv;
	post->method_header = tmh;
	post->name_header = tnh;
	post_message(srv, body, len, post);
	post->proto_header = pv;
	post->method_header = mh;
	post->name_header = nh;
	free(tpv);
	free(tmh);
	free(tnh);
}

static void
post_message(struct mcp_server *srv, const char *body, size_t len, struct mcp_post *post)
{
	json_error_t jerr;
	json_t *m, *id, *params;
	const char *why = NULL, *method;
	enum msg_kind kind;

	post->status = 500;
	post->body = NULL;
	post->sse = false;
	post->insufficient_scope = false;
	post->new_session[0] = '\0';
	if (mcp_json_depth(body, len, MCP_MAX_JSON_DEPTH) > MCP_MAX_JSON_DEPTH) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_INVALID_REQUEST,
		    "JSON nested too deeply"));
		return;
	}
	m = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (m == NULL) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_PARSE, "Parse error"));
		return;
	}
	kind = json_is_array(m) ? MSG_REQUEST : classify(m, &why);
	if (kind == MSG_INVALID) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(echo_id(m), MCP_RPC_INVALID_REQUEST, why));
		json_decref(m);
		return;
	}
	switch (mcp_modern_classify(m, post)) {
	case MCP_CLASS_REJECTED:
		json_decref(m);
		return;
	case MCP_CLASS_MODERN:
		mcp_modern_post(srv, m, post);
		json_decref(m);
		return;
	case MCP_CLASS_LEGACY:
		break;
	}
	if (post->proto_header != NULL && !mcp_proto_supported(post->proto_header)) {
		mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_SERVER, "Bad Request: "
		    "Unsupported protocol version (supported versions: 2026-07-28, 2025-11-25, "
		    "2025-06-18, 2025-03-26)"));
		json_decref(m);
		return;
	}
	if (json_is_array(m)) {
		post_batch(srv, m, post);
		json_decref(m);
		return;
	}
	switch (kind) {
	case MSG_INVALID:
		break;
	case MSG_NOTIFICATION:
	case MSG_RESPONSE:
		/* initialized, cancelled (we answer fast; nothing to stop), responses */
		if (session_check(srv, post) != NULL)
			mcp_rpc_answer(post, 202, NULL);
		break;
	case MSG_REQUEST:
		method = json_string_value(json_object_get(m, "method"));
		id = json_object_get(m, "id");
		params = json_object_get(m, "params");
		if (strcmp(method, "initialize") == 0) {
			if (post->session_id != NULL &&
			    mcp_session_touch(srv->sessions, post->session_id, post->owner) != NULL) {
				mcp_rpc_answer(post, 400, mcp_rpc_error(id, MCP_RPC_INVALID_REQUEST,
				    "Invalid Request: Server already initialized"));
				break;
			}
		} else if (session_check(srv, post) == NULL ||
		    mcp_rpc_scope_refused(srv, method, params, id, post))
			break;
		if (mcp_rpc_wants_progress(m))
			mcp_rpc_sse(post, m, dispatch(srv, method, id, params, post, false));
		else
			mcp_rpc_answer(post, 200, dispatch(srv, method, id, params, post, false));
		break;
	}
	json_decref(m);
}
