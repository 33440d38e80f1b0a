/*
 * The 2026-07-28 ("modern") path: no initialize and no session; every request
 * names its protocol version and client capabilities in params._meta, and the
 * Streamable HTTP headers MCP-Protocol-Version, Mcp-Method and Mcp-Name mirror
 * the body.  rpc.c hands each parsed message to mcp_modern_classify() first;
 * what it calls modern is served here, the rest stays on the 2025 path
 * untouched.  The rules (which error for which mix of headers and body, in
 * which order) are those of the spec's versioning and transport pages, in the
 * order the reference SDK applies them; docs/mcpd.md has them as a table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "mailbox/util.h"
#include "mcpd.h"

#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT	"io.modelcontextprotocol/clientInfo"
#define META_LEVEL	"io.modelcontextprotocol/logLevel"
#define META_SERVER	"io.modelcontextprotocol/serverInfo"

/* Cache hints (ttlMs): how long a client may keep an answer without asking again. */
#define TTL_STATIC_MS	300000	/* discover, tools, templates: change only with a restart */
#define TTL_MAIL_MS	30000	/* resources: change as syncd indexes mail */

static json_t *
meta_of(json_t *m)
{
	json_t *meta = json_object_get(json_object_get(m, "params"), "_meta");

	return json_is_object(meta) ? meta : NULL;
}

/* The id to echo: the request's, when it is one a response can carry. */
static json_t *
id_of(json_t *m)
{
	json_t *id = json_object_get(m, "id");

	return (json_is_string(id) || json_is_integer(id)) ? id : NULL;
}

static void
reject(struct mcp_post *post, int status, json_t *m, int code, const char *msg, json_t *data)
{
	json_t *e = mcp_rpc_error(id_of(m), code, msg);

	if (data != NULL)
		json_object_set_new(json_object_get(e, "error"), "data", data);
	mcp_rpc_answer(post, status, e);
}

/* The first thing wrong with a present envelope (key and problem), or false. */
static bool
envelope_issue(json_t *meta, const char **key_r, const char **problem_r)
{
	static const char *const levels[] = {
		"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
	};
	json_t *v = json_object_get(meta, META_VERSION), *caps = json_object_get(meta, META_CAPS);
	json_t *ci = json_object_get(meta, META_CLIENT), *lv = json_object_get(meta, META_LEVEL);

	*problem_r = "missing";
	if (v == NULL || caps == NULL) {
		*key_r = v == NULL ? META_VERSION : META_CAPS;
		return true;
	}
	*problem_r = "expected a string";
	if (!json_is_string(v)) {
		*key_r = META_VERSION;
		return true;
	}
	*problem_r = "expected an object";
	if (!json_is_object(caps)) {
		*key_r = META_CAPS;
		return true;
	}
	if (ci != NULL && (!json_is_object(ci) ||
	    !json_is_string(json_object_get(ci, "name")) ||
	    !json_is_string(json_object_get(ci, "version")))) {
		*key_r = META_CLIENT;
		*problem_r = "expected an object with name and version strings";
		return true;
	}
	if (lv != NULL) {
		for (size_t i = 0; json_is_string(lv) && i < MB_ARRAY_LEN(levels); i++)
			if (strcmp(json_string_value(lv), levels[i]) == 0)
				return false;
		*key_r = META_LEVEL;
		*problem_r = "expected a log level (debug ... emergency)";
		return true;
	}
	return false;
}

static void
mismatch(struct mcp_post *post, json_t *m, const char *header, const char *msg)
{
	reject(post, 400, m, MCP_RPC_HEADER_MISMATCH, msg,
	    json_pack("{s:{s:s}}", "mismatch", "header", header));
}

enum mcp_class
mcp_modern_classify(json_t *m, struct mcp_post *post)
{
	const char *pv = post->proto_header, *method, *key, *problem, *claim;
	json_t *meta, *mv;
	bool modern_header = mcp_proto_is_modern(pv);
	char msg[200];
	size_t i;

	if (json_is_array(m)) {
		json_array_foreach(m, i, mv) {
			if (json_object_get(meta_of(mv), META_VERSION) != NULL) {
				mcp_rpc_answer(post, 400, mcp_rpc_error(NULL, MCP_RPC_INVALID_REQUEST,
				    "Bad Request: JSON-RPC batches may not contain requests for "
				    "protocol revision 2026-07-28 or later"));
				return MCP_CLASS_REJECTED;
			}
		}
		return MCP_CLASS_LEGACY;
	}
	method = json_string_value(json_object_get(m, "method"));
	if (!json_is_object(m) || method == NULL)
		return MCP_CLASS_LEGACY;	/* responses, and what rpc.c calls invalid */
	meta = meta_of(m);
	mv = json_object_get(meta, META_VERSION);
	if (json_object_get(m, "id") == NULL) {
		/* a notification: the claim or, lacking one, the header decides */
		if (mv == NULL)
			return modern_header ? MCP_CLASS_MODERN : MCP_CLASS_LEGACY;
		if (!json_is_string(mv)) {
			reject(post, 400, m, MCP_RPC_INVALID_PARAMS, "Invalid _meta envelope: "
			    META_VERSION ": expected a string", NULL);
			return MCP_CLASS_REJECTED;
		}
		if (pv != NULL && strcmp(pv, json_string_value(mv)) != 0) {
			mismatch(post, m, pv, "Bad Request: the notification's _meta and the "
			    "MCP-Protocol-Version header name different protocol versions");
			return MCP_CLASS_REJECTED;
		}
		return MCP_CLASS_MODERN;
	}
	if (strcmp(method, "initialize") == 0 && !(json_is_string(mv) &&
	    mcp_proto_is_modern(json_string_value(mv)) && !envelope_issue(meta, &key, &problem))) {
		if (modern_header) {
			mismatch(post, m, pv, "Bad Request: initialize (the 2025 handshake) was sent "
			    "with a 2026-07-28 or later MCP-Protocol-Version header");
			return MCP_CLASS_REJECTED;
		}
		return MCP_CLASS_LEGACY;
	}
	if (mv == NULL) {
		if (!modern_header)
			return MCP_CLASS_LEGACY;
		snprintf(msg, sizeof(msg), "Invalid params: the MCP-Protocol-Version header names "
		    "%s, but the request has no %s in params._meta", pv, META_VERSION);
		reject(post, 400, m, MCP_RPC_INVALID_PARAMS, msg,
		    json_pack("{s:{s:[s]}}", "envelope", "missing", META_VERSION));
		return MCP_CLASS_REJECTED;
	}
	if (envelope_issue(meta, &key, &problem)) {
		snprintf(msg, sizeof(msg), "Invalid _meta envelope: %s: %s", key, problem);
		reject(post, 400, m, MCP_RPC_INVALID_PARAMS, msg,
		    json_pack("{s:{s:s, s:s}}", "envelope", "key", key, "problem", problem));
		return MCP_CLASS_REJECTED;
	}
	claim = json_string_value(mv);
	if (pv != NULL && strcmp(pv, claim) != 0) {
		mismatch(post, m, pv, "Bad Request: params._meta and the MCP-Protocol-Version "
		    "header name different protocol versions");
		return MCP_CLASS_REJECTED;
	}
	if (post->method_header != NULL && strcmp(post->method_header, method) != 0) {
		mismatch(post, m, post->method_header,
		    "Bad Request: the Mcp-Method header does not name the body's method");
		return MCP_CLASS_REJECTED;
	}
	return MCP_CLASS_MODERN;
}

/*
 * An Mcp-Name value as the client meant it: plain, or "=?base64?...?=" for a
 * value that is not plain ASCII.  Returns a string the caller frees, or NULL
 * when the encoding is broken.
 */
static char *
decode_name(const char *h)
{
	size_t n = strlen(h), len;
	unsigned char *out;
	int got;

	if (n < 11 || strncmp(h, "=?base64?", 9) != 0 || strcmp(h + n - 2, "?=") != 0)
		return mb_xstrdup(h);
	len = n - 11;
	if (len % 4 != 0)
		return NULL;
	out = mb_xmalloc(len / 4 * 3 + 1);
	got = EVP_DecodeBlock(out, (const unsigned char *)h + 9, (int)len);
	if (got < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as decoded zero bytes */
	for (size_t i = len; i > 0 && h[9 + i - 1] == '='; i--)
		got--;
	if (memchr(out, '\0', (size_t)got) != NULL) {	/* not a string we could compare */
		free(out);
		return NULL;
	}
	out[got] = '\0';
	return (char *)out;
}

/* The standard headers a 2026-07-28 request must carry; false: post is answered. */
static bool
headers_ok(json_t *m, const char *method, struct mcp_post *post)
{
	const char *field = strcmp(method, "tools/call") == 0 ||
	    strcmp(method, "prompts/get") == 0 ? "name" :
	    strcmp(method, "resources/read") == 0 ? "uri" : NULL;
	const char *body = field ? json_string_value(json_object_get(json_object_get(m, "params"),
	    field)) : NULL;
	char *name;
	bool same;

	if (post->proto_header == NULL) {
		mismatch(post, m, "(missing)",
		    "Bad Request: the MCP-Protocol-Version header is required");
		return false;
	}
	if (post->method_header == NULL) {
		mismatch(post, m, "(missing)", "Bad Request: the Mcp-Method header is required");
		return false;
	}
	if (field == NULL || (post->name_header == NULL && body == NULL))
		return true;
	if (post->name_header == NULL) {
		mismatch(post, m, "(missing)", field[0] == 'u' ?
		    "Bad Request: the Mcp-Name header is required (params.uri)" :
		    "Bad Request: the Mcp-Name header is required (params.name)");
		return false;
	}
	if ((name = decode_name(post->name_header)) == NULL) {
		mismatch(post, m, post->name_header,
		    "Bad Request: the Mcp-Name header's base64 value is broken");
		return false;
	}
	same = body == NULL || strcmp(name, body) == 0;
	free(name);
	if (!same)
		mismatch(post, m, post->name_header, field[0] == 'u' ?
		    "Bad Request: the Mcp-Name header does not match params.uri" :
		    "Bad Request: the Mcp-Name header does not match params.name");
	return same;
}

static json_t *
discover(void)
{
	return json_pack("{s:[s], s:{s:{}, s:{}}, s:s}", "supportedVersions",
	    MCP_PROTO_2026_07_28, "capabilities", "tools", "resources",
	    "instructions", mcp_server_instructions);
}

/* What every 2026-07-28 result carries: resultType, serverInfo and, where due, cache hints. */
static void
decorate(const struct mcp_post *post, const char *method, json_t *result)
{
	json_t *meta = json_object_get(result, "_meta");
	long long ttl = -1;
	const char *scope = "private";

	json_object_set_new(result, "resultType", json_string("complete"));
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, META_SERVER, mcp_server_info());
	if (strcmp(method, "server/discover") == 0 ||
	    strcmp(method, "resources/templates/list") == 0) {
		ttl = TTL_STATIC_MS;
		scope = "public";	/* the same for every caller */
	} else if (strcmp(method, "tools/list") == 0) {
		ttl = TTL_STATIC_MS;	/* with tokens, the write tools depend on the token's scope */
		scope = post->owner == NULL ? "public" : "private";
	} else if (strcmp(method, "resources/list") == 0 || strcmp(method, "resources/read") == 0)
		ttl = TTL_MAIL_MS;	/* the user's mail */
	if (ttl >= 0) {
		json_object_set_new(result, "ttlMs", json_integer(ttl));
		json_object_set_new(result, "cacheScope", json_string(scope));
	}
}

void
mcp_modern_post(struct mcp_server *srv, json_t *m, struct mcp_post *post)
{
	json_t *params = json_object_get(m, "params"), *mv, *id = id_of(m), *result, *msg;
	const char *method = json_string_value(json_object_get(m, "method")), *text;
	struct mb_err err = { 0 };
	int code;

	mv = json_object_get(meta_of(m), META_VERSION);
	if (id == NULL) {
		/* no client notification means anything here (closing a stream cancels) */
		mcp_rpc_answer(post, 202, NULL);
		return;
	}
	if (strcmp(json_string_value(mv), MCP_PROTO_2026_07_28) != 0) {
		/* a later revision, or a 2025 one named the 2026 way: both eras mixed */
		reject(post, 400, m, MCP_RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
		    json_pack("{s:[s], s:O}", "supported", MCP_PROTO_2026_07_28, "requested", mv));
		return;
	}
	if (!headers_ok(m, method, post) || mcp_rpc_scope_refused(srv, method, params, id, post))
		return;
	if (strcmp(method, "server/discover") == 0)
		result = discover();
	else if (strcmp(method, "tools/list") == 0 || strcmp(method, "tools/call") == 0 ||
	    strncmp(method, "resources/", 10) == 0)
		result = mcp_rpc_method(srv, method, params, post, true, &code, &text, &err);
	else {
		/* ping, logging/setLevel, resources/subscribe, initialize, ...: not in 2026-07-28 */
		reject(post, 404, m, MCP_RPC_METHOD_NOT_FOUND, "Method not found", NULL);
		return;
	}
	if (result == NULL && code == MCP_RPC_METHOD_NOT_FOUND) {	/* resources/subscribe */
		reject(post, 404, m, MCP_RPC_METHOD_NOT_FOUND, "Method not found", NULL);
		return;
	}
	if (result == NULL) {
		json_t *uri = json_object_get(params, "uri");

		msg = mcp_rpc_error(id, code, text);
		if (strcmp(method, "resources/read") == 0 && code == MCP_RPC_INVALID_PARAMS && uri)
			json_object_set_new(json_object_get(msg, "error"), "data",
			    json_pack("{s:O}", "uri", uri));
	} else {
		decorate(post, method, result);
		msg = mcp_rpc_result(id, result);
	}
	if (mcp_rpc_wants_progress(m))
		mcp_rpc_sse(post, m, msg);
	else
		mcp_rpc_answer(post, 200, msg);
}
