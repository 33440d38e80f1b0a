/*
 * The write tools (docs/writes.md): flag_message, move_message,
 * trash_message and create_draft are forwarded to syncd over its control socket (mcpd holds
 * no credential and cannot reach IMAP); list_recent_writes reads write_log.
 * With MCP_READ_ONLY=1 the write tools do not exist; a token without the
 * write scope does not see them and cannot call them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/ctl.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mcpd.h"

#define CTL_TIMEOUT_S	60	/* syncd's own write deadline is shorter (SYNC_WRITE_TIMEOUT) */

#define ID_SCHEMA "\"id\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The message id " \
	"(from search_messages or get_message)\"}"
#define RESULT_SCHEMA "\"outputSchema\":{\"type\":\"object\",\"properties\":{" \
	"\"outcome\":{\"type\":\"string\",\"enum\":[\"ok\",\"refused\",\"failed\"]}," \
	"\"detail\":{\"type\":\"string\"},\"id\":{\"type\":[\"integer\",\"null\"]}," \
	"\"folder\":{\"type\":[\"string\",\"null\"]},\"flags\":{\"type\":\"array\"," \
	"\"items\":{\"type\":\"string\"}},\"write_log_id\":{\"type\":\"integer\"}}," \
	"\"required\":[\"outcome\",\"detail\"]}"
#define ADDR_SCHEMA "{\"type\":\"string\",\"minLength\":3,\"maxLength\":998," \
	"\"description\":\"name@example.org or Name <name@example.org>\"}"
#define FLAG_ENUM "{\"type\":\"string\",\"enum\":[\"\\\\Seen\",\"\\\\Flagged\",\"\\\\Answered\"]}"

static const char write_tools_json[] = "["
"{\"name\":\"flag_message\",\"title\":\"Set or clear flags\","
"\"description\":\"Add or remove the \\\\Seen, \\\\Flagged or \\\\Answered flag of one message "
"in the mailbox (not \\\\Deleted). The result is checked against the server and recorded in "
"the audit log (list_recent_writes).\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{" ID_SCHEMA ","
"\"add\":{\"type\":\"array\",\"items\":" FLAG_ENUM "},"
"\"remove\":{\"type\":\"array\",\"items\":" FLAG_ENUM "}},"
"\"required\":[\"id\"],\"additionalProperties\":false}," RESULT_SCHEMA ","
"\"annotations\":{\"title\":\"Set or clear flags\",\"readOnlyHint\":false,"
"\"destructiveHint\":false,\"idempotentHint\":true,\"openWorldHint\":true}},"

"{\"name\":\"move_message\",\"title\":\"Move a message\","
"\"description\":\"Move one message to another folder (list_folders names them). Recorded in "
"the audit log (list_recent_writes).\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{" ID_SCHEMA ","
"\"destination\":{\"type\":\"string\",\"minLength\":1}},"
"\"required\":[\"id\",\"destination\"],\"additionalProperties\":false}," RESULT_SCHEMA ","
"\"annotations\":{\"title\":\"Move a message\",\"readOnlyHint\":false,"
"\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true}},"

"{\"name\":\"trash_message\",\"title\":\"Move a message to Trash\","
"\"description\":\"Move one message to the folder whose special-use role is \\\\Trash. Nothing "
"is deleted permanently. Recorded in the audit log (list_recent_writes).\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{" ID_SCHEMA "},"
"\"required\":[\"id\"],\"additionalProperties\":false}," RESULT_SCHEMA ","
"\"annotations\":{\"title\":\"Move a message to Trash\",\"readOnlyHint\":false,"
"\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true}},"

"{\"name\":\"create_draft\",\"title\":\"Save a draft\","
"\"description\":\"Save a new plain-text draft in the Drafts folder, for the user to review "
"and send from their mail client. Nothing is sent. To reply, give in_reply_to_id (a message "
"id): the draft gets 'Re:' and threading headers from that message, and the subject may be "
"left out. Returns the draft's message id. Recorded in the audit log (list_recent_writes).\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"to\":{\"type\":\"array\",\"maxItems\":100,\"items\":" ADDR_SCHEMA "},"
"\"cc\":{\"type\":\"array\",\"maxItems\":100,\"items\":" ADDR_SCHEMA "},"
"\"subject\":{\"type\":\"string\",\"maxLength\":998},"
"\"body\":{\"type\":\"string\",\"description\":\"Plain text (UTF-8, at most 1 MiB)\"},"
"\"in_reply_to_id\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The message "
"this draft replies to (from search_messages or get_message)\"}},"
"\"required\":[\"to\",\"body\"],\"additionalProperties\":false}," RESULT_SCHEMA ","
"\"annotations\":{\"title\":\"Save a draft\",\"readOnlyHint\":false,"
"\"destructiveHint\":false,\"idempotentHint\":false,\"openWorldHint\":true}}"
"]";

static const char list_writes_json[] =
"{\"name\":\"list_recent_writes\",\"title\":\"Recent changes made through this server\","
"\"description\":\"The audit log: the most recent write attempts (flag, move, trash, draft), newest "
"first, with who asked, the message, the arguments and the outcome (ok, refused, failed).\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"limit\":{\"type\":\"integer\","
"\"minimum\":1,\"maximum\":100,\"default\":20}},\"additionalProperties\":false},"
"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"writes\":{\"type\":\"array\","
"\"items\":{\"type\":\"object\"}}},\"required\":[\"writes\"]},"
"\"annotations\":{\"title\":\"Recent writes\",\"readOnlyHint\":true,"
"\"openWorldHint\":false,\"idempotentHint\":true}}";

void
mcp_tools_write_list(struct mcp_server *srv, json_t *list, bool may_write)
{
	json_t *tools = json_object_get(list, "tools"), *w;
	json_error_t e;

	if (!json_is_array(tools))
		return;
	w = json_loads(list_writes_json, 0, &e);
	if (MB_NEVER(w == NULL))
		mb_fatalx("list_writes_json: %s", e.text);
	json_array_append_new(tools, w);
	if (srv->conf->read_only || !may_write)
		return;
	w = json_loads(write_tools_json, 0, &e);
	if (MB_NEVER(w == NULL))
		mb_fatalx("write_tools_json: line %d: %s", e.line, e.text);
	json_array_extend(tools, w);
	json_decref(w);
}

bool
mcp_tools_write_is(const char *name)
{
	return strcmp(name, "flag_message") == 0 || strcmp(name, "move_message") == 0 ||
	    strcmp(name, "trash_message") == 0 || strcmp(name, "create_draft") == 0 ||
	    strcmp(name, "list_recent_writes") == 0;
}

static json_t *
flag_names(unsigned flags)
{
	json_t *a = json_array();

	if (flags & MB_FLAG_SEEN)
		json_array_append_new(a, json_string("\\Seen"));
	if (flags & MB_FLAG_ANSWERED)
		json_array_append_new(a, json_string("\\Answered"));
	if (flags & MB_FLAG_FLAGGED)
		json_array_append_new(a, json_string("\\Flagged"));
	if (flags & MB_FLAG_DELETED)
		json_array_append_new(a, json_string("\\Deleted"));
	if (flags & MB_FLAG_DRAFT)
		json_array_append_new(a, json_string("\\Draft"));
	return a;
}

/* ["\\Seen", ...] to bits; -1 with *bad naming the refused flag. */
static int
parse_flags(json_t *a, unsigned *bits_r, const char **bad)
{
	size_t i;
	json_t *v;

	*bits_r = 0;
	if (a == NULL)
		return 0;
	if (!json_is_array(a)) {
		*bad = "(not an array)";
		return -1;
	}
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (s == NULL) {
			*bad = "(not a string)";
			return -1;
		}
		if (strcasecmp(s, "\\Seen") == 0)
			*bits_r |= MB_FLAG_SEEN;
		else if (strcasecmp(s, "\\Flagged") == 0)
			*bits_r |= MB_FLAG_FLAGGED;
		else if (strcasecmp(s, "\\Answered") == 0)
			*bits_r |= MB_FLAG_ANSWERED;
		else if (strcasecmp(s, "\\Deleted") == 0)
			*bits_r |= MB_FLAG_DELETED;	/* syncd refuses it, and logs the attempt */
		else {
			*bad = s;
			return -1;
		}
	}
	return 0;
}

static json_t *
forward(struct mcp_server *srv, struct mb_ctl_request *rq)
{
	struct mb_ctl_reply rp;
	struct mb_err err = { 0 };
	json_t *data, *r;

	if (mcp_ctl_call(srv->conf->syncd_socket, rq, CTL_TIMEOUT_S, &rp, &err) == -1) {
		mb_log_warnx("%s: %s", mb_ctl_op_name(rq->op), err.msg);
		return mcp_tool_error("the write could not be handed to syncd: %s", err.msg);
	}
	data = json_pack("{s:s, s:s, s:I}", "outcome", mb_ctl_outcome_name(rp.outcome),
	    "detail", rp.detail, "write_log_id", (json_int_t)rp.log_id);
	json_object_set_new(data, "id", rp.message_id ? json_integer(rp.message_id) : json_null());
	json_object_set_new(data, "folder", rp.folder ? json_string(rp.folder) : json_null());
	if (rq->op == MB_CTL_FLAG && rp.outcome == MB_CTL_OK)
		json_object_set_new(data, "flags", flag_names(rp.flags));
	{
		char text[1400];

		snprintf(text, sizeof(text), "%s: %s: %s%s%s", mb_ctl_op_name(rq->op),
		    mb_ctl_outcome_name(rp.outcome), rp.detail, rp.folder ? "; folder: " : "",
		    rp.folder ? rp.folder : "");
		r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
		    "structuredContent", data, "isError", rp.outcome != MB_CTL_OK);
	}
	mb_ctl_reply_release(&rp);
	return r;
}

/* An optional array of addresses into *v_r (borrowed strings; the array is the caller's). */
static json_t *
draft_addresses(json_t *args, const char *key, char ***v_r, uint32_t *n_r)
{
	json_t *a = json_object_get(args, key), *v;
	size_t i;

	*v_r = NULL;
	*n_r = 0;
	if (a == NULL)
		return NULL;
	if (!json_is_array(a) || json_array_size(a) > MB_CTL_RCPT_MAX)
		return mcp_tool_error("create_draft: %s must be an array of at most %d email "
		    "addresses", key, MB_CTL_RCPT_MAX);
	*v_r = mb_xcalloc(json_array_size(a) + 1, sizeof(**v_r));
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (s == NULL || *s == '\0' || json_string_length(v) > MB_CTL_LINE_MAX ||
		    strlen(s) != json_string_length(v))
			return mcp_tool_error("create_draft: %s[%zu] must be an email address "
			    "(name@example.org or Name <name@example.org>)", key, i);
		(*v_r)[(*n_r)++] = (char *)s;
	}
	return NULL;
}

/* create_draft's arguments into rq (borrowed from args), or a tool error. */
static json_t *
draft_request(json_t *args, struct mb_ctl_request *rq)
{
	json_t *v, *e;

	rq->op = MB_CTL_DRAFT;
	if (!json_is_array(json_object_get(args, "to")))
		return mcp_tool_error("create_draft: to must be an array of email addresses");
	if ((e = draft_addresses(args, "to", &rq->to, &rq->n_to)) != NULL ||
	    (e = draft_addresses(args, "cc", &rq->cc, &rq->n_cc)) != NULL)
		return e;
	if ((v = json_object_get(args, "subject")) != NULL) {
		if (!json_is_string(v) || json_string_length(v) > MB_CTL_LINE_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return mcp_tool_error("create_draft: subject must be a string of at most %d "
			    "bytes", MB_CTL_LINE_MAX);
		if (json_string_length(v) > 0)
			rq->subject = (char *)json_string_value(v);
	}
	v = json_object_get(args, "body");
	if (!json_is_string(v) || json_string_length(v) > MB_CTL_BODY_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return mcp_tool_error("create_draft: body must be a string of at most %u bytes",
		    MB_CTL_BODY_MAX);
	rq->body = (char *)json_string_value(v);
	return NULL;
}

static json_t *
list_recent_writes(struct mcp_server *srv, json_t *args)
{
	static const char sql[] = "SELECT id, at, tool, requested_by, peer_uid, message_id, "
	    "folder, uidvalidity, uid, arguments, outcome, detail FROM write_log "
	    "ORDER BY id DESC LIMIT ?1";
	json_t *lim = json_object_get(args, "limit"), *writes, *data;
	json_int_t limit = 20;
	struct mb_err err = { 0 };
	sqlite3_stmt *st;
	int rc;

	if (lim != NULL) {
		if (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
		    json_integer_value(lim) > 100)
			return mcp_tool_error("limit must be an integer from 1 to 100");
		limit = json_integer_value(lim);
	}
	if (mcp_server_index(srv, &err) == NULL)
		return mcp_tool_error("the mail index is not available right now");
	if ((st = mcp_server_stmt(srv, sql)) == NULL)
		return mcp_tool_error("internal error while reading the index; see the server log");
	sqlite3_bind_int64(st, 1, limit);
	writes = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *w = json_object();
		char d[32];
		struct tm tm;
		time_t t = (time_t)sqlite3_column_int64(st, 1);
		static const char *const names[] = { "write_log_id", NULL, "tool", "requested_by",
		    "peer_uid", "id", "folder", "uidvalidity", "uid", "arguments", "outcome",
		    "detail" };

		if (gmtime_r(&t, &tm) != NULL && strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%SZ", &tm))
			json_object_set_new(w, "at", json_string(d));
		for (int i = 0; i < 12; i++) {
			if (names[i] == NULL)
				continue;
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_NULL:
				json_object_set_new(w, names[i], json_null());
				break;
			case SQLITE_INTEGER:
				json_object_set_new(w, names[i],
				    json_integer(sqlite3_column_int64(st, i)));
				break;
			default:
				json_object_set_new(w, names[i], mcp_json_text(
				    (const char *)sqlite3_column_text(st, i),
				    (size_t)sqlite3_column_bytes(st, i)));
			}
		}
		json_array_append_new(writes, w);
	}
	mcp_server_stmt_done(st);
	data = json_pack("{s:o}", "writes", writes);
	{
		char *text = json_dumps(data, JSON_COMPACT);
		json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text",
		    "text", text ? text : "{}", "structuredContent", data, "isError", 0);

		free(text);
		return r;
	}
}

/* The arguments each write tool's inputSchema names. */
static const char *const *
arg_names(const char *tool)
{
	static const char *const flag[] = { "id", "add", "remove", NULL };
	static const char *const move[] = { "id", "destination", NULL };
	static const char *const trash[] = { "id", NULL };
	static const char *const draft[] = { "to", "cc", "subject", "body", "in_reply_to_id",
	    NULL };

	if (strcmp(tool, "flag_message") == 0)
		return flag;
	if (strcmp(tool, "move_message") == 0)
		return move;
	return strcmp(tool, "create_draft") == 0 ? draft : trash;
}

json_t *
mcp_tools_write_call(struct mcp_server *srv, const char *name, json_t *args,
    const char *owner, bool may_write)
{
	struct mb_ctl_request rq = { 0 };
	char who[MB_CTL_WHO_MAX + 1], msg[512];
	json_t *empty = NULL, *r;
	const char *bad = NULL;
	bool draft;

	if (args == NULL)
		args = empty = json_object();
	if (strcmp(name, "list_recent_writes") == 0) {
		r = list_recent_writes(srv, args);
		goto out;
	}
	if (srv->conf->read_only) {
		r = mcp_tool_error("%s: this server is read-only (MCP_READ_ONLY=1)", name);
		goto out;
	}
	if (!may_write) {
		r = mcp_tool_error("%s: the token does not grant the write scope", name);
		goto out;
	}
	/* A subject longer than the wire allows is cut (at a character): the
	 * audit log keeps its start rather than the write being refused. */
	snprintf(who, sizeof(who), "%.*s", owner == NULL ? 5 : (int)mb_utf8_boundary(owner,
	    strlen(owner), MB_CTL_WHO_MAX), owner != NULL ? owner : "local");
	rq.who = who;
	/* Unknown arguments are refused: a misspelt "bcc" silently dropped would
	 * be a draft to fewer people than asked. */
	draft = strcmp(name, "create_draft") == 0;
	if (mcp_known_args(args, arg_names(name), msg, sizeof(msg)) == -1 ||
	    mcp_id_arg(args, draft ? "in_reply_to_id" : "id", !draft, &rq.message_id, msg,
	    sizeof(msg)) == -1) {
		r = mcp_tool_error("%s: %s", name, msg);
		goto out;
	}
	if (draft) {
		if ((r = draft_request(args, &rq)) == NULL)
			r = forward(srv, &rq);
		free(rq.to);	/* the arrays are ours, their strings are args' */
		free(rq.cc);
		goto out;
	}
	if (strcmp(name, "flag_message") == 0) {
		rq.op = MB_CTL_FLAG;
		if (parse_flags(json_object_get(args, "add"), &rq.add, &bad) == -1 ||
		    parse_flags(json_object_get(args, "remove"), &rq.remove, &bad) == -1) {
			r = mcp_tool_error("flag_message: only \\Seen, \\Flagged and \\Answered may be set "
			    "or cleared; refused: %s", bad);
			goto out;
		}
		if ((rq.add | rq.remove) == 0) {
			r = mcp_tool_error("flag_message: name at least one flag to add or remove");
			goto out;
		}
		if (rq.add & rq.remove) {
			r = mcp_tool_error("flag_message: a flag cannot be both added and removed");
			goto out;
		}
	} else if (strcmp(name, "move_message") == 0) {
		const char *d = json_string_value(json_object_get(args, "destination"));

		if (d == NULL || *d == '\0' || strlen(d) > MB_CTL_FOLDER_MAX) {
			r = mcp_tool_error("move_message: destination must be a folder name");
			goto out;
		}
		rq.op = MB_CTL_MOVE;
		rq.dest = (char *)d;
	} else
		rq.op = MB_CTL_TRASH;
	r = forward(srv, &rq);
out:
	json_decref(empty);
	return r;
}
