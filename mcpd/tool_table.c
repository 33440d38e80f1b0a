/*
 * The tools: one table entry per tool (its handler and scope), one
 * definition file per tool (mcpd/tools/<name>.json: title, description,
 * schemas, annotations; compiled in), one builder for tools/list and one
 * dispatcher for tools/call.  Adding a tool: docs/mcpd.md.
 *
 * The fence note is written once, as MCP_FENCE_NOTE in mcpd.h, and spliced
 * in at load where a description says @FENCE_NOTE@: the answers' text says
 * the same words, so the two cannot drift apart.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "mailbox/log.h"
#include "mailbox/util.h"
#include "mcpd.h"

/* In tools/list order. */
static const struct mcp_tool tools[] = {
	{ "search_messages",	MCP_SCOPE_READ,		mcp_tool_search_messages },
	{ "get_message",	MCP_SCOPE_READ,		mcp_tool_get_message },
	{ "get_thread",		MCP_SCOPE_READ,		mcp_tool_get_thread },
	{ "list_folders",	MCP_SCOPE_READ,		mcp_tool_list_folders },
	{ "list_recent_writes",	MCP_SCOPE_READ,		mcp_tool_list_recent_writes },
	{ "flag_message",	MCP_SCOPE_WRITE,	mcp_tool_flag_message },
	{ "move_message",	MCP_SCOPE_WRITE,	mcp_tool_move_message },
	{ "trash_message",	MCP_SCOPE_WRITE,	mcp_tool_trash_message },
	{ "create_draft",	MCP_SCOPE_WRITE,	mcp_tool_create_draft },
	{ "count_messages",	MCP_SCOPE_READ,		mcp_tool_count_messages },
	{ "find_contacts",	MCP_SCOPE_READ,		mcp_tool_find_contacts },
	{ "awaiting_reply",	MCP_SCOPE_READ,		mcp_tool_awaiting_reply },
	{ "get_attachment",	MCP_SCOPE_READ,		mcp_tool_get_attachment },
	{ "label_message",	MCP_SCOPE_WRITE,	mcp_tool_label_message },
	{ "list_accounts",	MCP_SCOPE_READ,		mcp_tool_list_accounts },
};

#define FENCE_MARK	"@FENCE_NOTE@"

/* The parsed definitions, tools[i]'s at defs[i]; read-only once loaded. */
static json_t *defs[MB_ARRAY_LEN(tools)];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct mb_err load_err;

/* Put "prefix: " before err's message (its class stays). */
static void
err_prefix(struct mb_err *err, const char *prefix)
{
	enum mb_errcode code = err->code;
	char why[sizeof(err->msg)];

	memcpy(why, err->msg, sizeof(why));
	mb_err_clear(err);
	mb_err_set(err, code, "%s: %s", prefix, why);
}

/* The description with the fence note spliced in for FENCE_MARK. */
static int
splice_fence_note(json_t *def, struct mb_err *err)
{
	const char *d = json_string_value(json_object_get(def, "description"));
	const char *at;
	struct mb_buf b = MB_BUF_INIT(64 * 1024);

	if (d == NULL)
		return mb_err_set(err, MB_E_CONFIG, "no description");
	if ((at = strstr(d, FENCE_MARK)) == NULL)
		return 0;
	mb_buf_add(&b, d, (size_t)(at - d));
	mb_buf_adds(&b, MCP_FENCE_NOTE);
	mb_buf_adds(&b, at + strlen(FENCE_MARK));
	json_object_set_new(def, "description", json_stringn(b.data, b.len));
	mb_buf_release(&b);
	return 0;
}

/* Parse file f into the definition of the tool it names; -1 + err. */
static int
load_file(const struct mcp_tool_file *f, struct mb_err *err)
{
	json_error_t je;
	json_t *def = json_loads(f->json, JSON_REJECT_DUPLICATES, &je);
	const char *name = json_string_value(json_object_get(def, "name"));
	size_t i;

	if (def == NULL)
		return mb_err_set(err, MB_E_CONFIG, "mcpd/tools/%s.json: line %d: %s", f->name,
		    je.line, je.text);
	for (i = 0; i < MB_ARRAY_LEN(tools); i++)
		if (strcmp(tools[i].name, f->name) == 0)
			break;
	if (name == NULL || strcmp(name, f->name) != 0)
		mb_err_set(err, MB_E_CONFIG, "mcpd/tools/%s.json: name must be \"%s\"", f->name,
		    f->name);
	else if (i == MB_ARRAY_LEN(tools))
		mb_err_set(err, MB_E_CONFIG, "mcpd/tools/%s.json: no entry in the tool table "
		    "(tool_table.c)", f->name);
	else if (defs[i] != NULL)
		mb_err_set(err, MB_E_CONFIG, "mcpd/tools/%s.json: defined twice", f->name);
	else if (mcp_args_schema_ok(json_object_get(def, "inputSchema"), err) == -1 ||
	    splice_fence_note(def, err) == -1) {
		char file[128];

		snprintf(file, sizeof(file), "mcpd/tools/%s.json", f->name);
		err_prefix(err, file);
	} else {
		defs[i] = def;
		return 0;
	}
	json_decref(def);
	return -1;
}

static void
load_all(void)
{
	for (unsigned i = 0; i < mcp_tool_files_count; i++)
		if (load_file(&mcp_tool_files[i], &load_err) == -1)
			return;
	for (size_t i = 0; i < MB_ARRAY_LEN(tools); i++)
		if (defs[i] == NULL) {
			mb_err_set(&load_err, MB_E_CONFIG, "tool %s has no mcpd/tools/%s.json",
			    tools[i].name, tools[i].name);
			return;
		}
}

int
mcp_tools_load(struct mb_err *err)
{
	pthread_once(&load_once, load_all);
	if (load_err.code == MB_OK)
		return 0;
	return mb_err_set(err, load_err.code, "%s", load_err.msg);
}

/* mcp_server_init() loaded them; a caller without a server dies here, loudly. */
static void
loaded(void)
{
	struct mb_err err = { 0 };

	if (mcp_tools_load(&err) == -1)
		mb_fatalx("%s", err.msg);
}

/* The index of name in tools[], or -1. */
static int
tool_index(const char *name)
{
	loaded();
	for (size_t i = 0; i < MB_ARRAY_LEN(tools); i++)
		if (strcmp(tools[i].name, name) == 0)
			return (int)i;
	return -1;
}

const struct mcp_tool *
mcp_tools_find(const char *name)
{
	int i = tool_index(name);

	return i < 0 ? NULL : &tools[i];
}

/* Whether who may see and call tools[i] on srv. */
static bool
allowed(struct mcp_server *srv, size_t i, const struct mcp_caller *who)
{
	return tools[i].scope == MCP_SCOPE_READ || (!srv->conf->read_only && who->may_write);
}

json_t *
mcp_tools_list(struct mcp_server *srv, const struct mcp_caller *who)
{
	json_t *list = json_array();

	loaded();
	for (size_t i = 0; i < MB_ARRAY_LEN(tools); i++)
		if (allowed(srv, i, who)) {
			json_t *t = json_deep_copy(defs[i]);	/* defs stay untouched */

			json_object_set_new(t, "icons", mcp_icons());
			json_array_append_new(list, t);
		}
	return json_pack("{s:o}", "tools", list);
}

json_t *
mcp_tools_call(struct mcp_server *srv, const char *name, json_t *args,
    const struct mcp_caller *who, struct mb_err *err)
{
	struct mb_err e = { 0 };
	json_t *checked, *r;
	int i = tool_index(name);

	if (i < 0) {
		mb_err_set(err, MB_E_NOTFOUND, "Unknown tool: tools/list names the tools");
		return NULL;
	}
	/* A write tool the caller cannot see is still named: the answer says why. */
	if (tools[i].scope == MCP_SCOPE_WRITE && srv->conf->read_only)
		mb_err_set(&e, MB_E_INVALID, "%s: this server is read-only (MCP_READ_ONLY=1)",
		    name);
	else if (!allowed(srv, (size_t)i, who))
		mb_err_set(&e, MB_E_AUTH, "%s: the token does not grant the write scope", name);
	if (e.code != MB_OK)
		return mcp_tool_failure(name, &e);
	checked = mcp_args_check(json_object_get(defs[i], "inputSchema"), args, &e);
	if (checked == NULL) {
		err_prefix(&e, name);
		return mcp_tool_failure(name, &e);
	}
	r = tools[i].call(srv, checked, who, &e);
	json_decref(checked);
	if (r == NULL) {
		if (MB_NEVER(e.code == MB_OK))
			mb_err_set(&e, MB_E_INTERNAL, "failed without saying why");
		r = mcp_tool_failure(name, &e);
	}
	mcp_json_drop_nulls(json_object_get(r, "structuredContent"));
	return r;
}
