/*
 * The read tools and resources other than search: get_message, get_thread,
 * list_folders, resources/list and resources/read, and /healthz.  Each asks
 * the reader's views of the index (mailbox/read.h) for plain structs and
 * answers them as MCP results; every string from the index reaches the model
 * fenced (fence.c) in the text block, and as data in structuredContent.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/read.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "mcpd.h"

/* ---- get_message */

/* The space-separated ids of the refs column as an array (empty when none). */
static json_t *
id_list(const char *ids)
{
	json_t *arr = json_array();
	const char *p = ids, *q;

	while (p != NULL && *p != '\0') {
		while (*p == ' ')
			p++;
		for (q = p; *q != '\0' && *q != ' '; q++)
			;
		if (q > p)
			json_array_append_new(arr, mcp_json_text(p, (size_t)(q - p)));
		p = q;
	}
	return arr;
}

/*
 * The addresses, identifiers and dates of a message into m: display strings
 * under from/to/cc beside the structured lists, references, received and
 * which date orders the message.
 */
static void
message_envelope(json_t *m, const struct mb_read_message *rm)
{
	json_t *from_s, *to_s, *cc_s, *from_l, *to_l, *cc_l;

	from_l = mcp_addr_one_json(rm->from_name, rm->from_addr, &from_s);
	to_l = mcp_addr_list_json(rm->to_json, &to_s);
	cc_l = mcp_addr_list_json(rm->cc_json, &cc_s);
	if (json_is_null(from_s) && rm->from != NULL) {
		json_decref(from_s);
		from_s = mcp_str_json(rm->from);
	}
	json_object_set_new(m, "from", from_s);
	json_object_set_new(m, "to", to_s);
	json_object_set_new(m, "cc", cc_s);
	json_object_set_new(m, "from_addresses", from_l);
	json_object_set_new(m, "to_addresses", to_l);
	json_object_set_new(m, "cc_addresses", cc_l);
	json_object_set_new(m, "references", id_list(rm->refs));
	if (rm->has_received)
		json_object_set_new(m, "received", mcp_date_json(true, rm->received));
	if (rm->has_date || rm->has_received)
		json_object_set_new(m, "date_used", json_string(rm->dated_by_header ? "date" :
		    "received"));
}

/*
 * One message as structured data, and (a not NULL) its text block.  The
 * labels' values are taken from the structured data, so both show the
 * same repaired text.
 */
static json_t *
message_answer(const struct mb_read_message *rm, const struct mcp_account *acc,
    long long offset, struct mcp_answer *a)
{
	static const char *const keys[] = { "from", "to", "cc", "subject", "date", "received",
	    "message_id", "in_reply_to", "list_id" };
	static const char *const labels[] = { "From", "To", "Cc", "Subject", "Date", "Received",
	    "Message-ID", "In-Reply-To", "List-Id" };
	struct mb_buf inner = MB_BUF_INIT(8u << 20);
	json_t *m, *atts;
	long long gid = mcp_gid(acc, rm->id);

	m = json_pack("{s:I, s:s, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "id", (json_int_t)gid, "account", acc->name, "folder", mcp_str_json(rm->folder),
	    "folder_role", mcp_str_json(rm->folder_role),
	    "thread_id", (json_int_t)mcp_gid(acc, rm->thread_id),
	    "message_id", mcp_str_json(rm->message_id), "in_reply_to", mcp_str_json(rm->in_reply_to),
	    "date", mcp_date_json(rm->has_date, rm->date),
	    "subject", mcp_str_json(rm->subject), "flags", mcp_flag_list(rm->flags),
	    "list_id", mcp_str_json(rm->list_id));
	message_envelope(m, rm);
	json_object_set_new(m, "labels", mcp_label_list(rm->keywords));
	json_object_set_new(m, "body", mcp_json_text(rm->body, rm->body_len));
	json_object_set_new(m, "offset", json_integer(offset));
	json_object_set_new(m, "body_chars", json_integer((json_int_t)rm->body_chars));
	json_object_set_new(m, "next_offset", rm->more ? json_integer(rm->next_offset) :
	    json_null());
	json_object_set_new(m, "body_truncated_at_index", json_boolean(rm->body_truncated));
	json_object_set_new(m, "headers_only", json_boolean(rm->headers_only));
	atts = json_array();
	for (size_t i = 0; i < rm->n_atts; i++)
		json_array_append_new(atts, mcp_attachment_json(&rm->atts[i], acc));
	json_object_set_new(m, "attachments", atts);
	if (a != NULL) {
		size_t i;
		json_t *v;

		mb_buf_addf(&a->text, "Message id %lld%s in folder ", gid, acc->tag);
		mcp_fence_inline(&a->text, json_string_value(json_object_get(m, "folder")));
		mb_buf_addf(&a->text, ", thread %" JSON_INTEGER_FORMAT ", flags: ",
		    json_integer_value(json_object_get(m, "thread_id")));
		mcp_add_flags_text(&a->text, json_object_get(m, "flags"));
		mb_buf_addf(&a->text, ". %s\n", MCP_FENCE_NOTE);
		for (i = 0; i < MB_ARRAY_LEN(keys); i++) {
			v = json_object_get(m, keys[i]);
			if (json_is_string(v))
				mb_buf_addf(&inner, "%s: %s\n", labels[i], json_string_value(v));
		}
		json_array_foreach(json_object_get(m, "labels"), i, v)
			mb_buf_addf(&inner, "%s%s%s", i ? ", " : "Labels: ", json_string_value(v),
			    i + 1 == json_array_size(json_object_get(m, "labels")) ? "\n" : "");
		json_array_foreach(atts, i, v) {
			json_t *nm = json_object_get(v, "name");

			mb_buf_addf(&inner, "Attachment: %s (%s, %" JSON_INTEGER_FORMAT " bytes, id %"
			    JSON_INTEGER_FORMAT ", %s)\n",
			    json_is_string(nm) ? json_string_value(nm) : "(no name)",
			    json_string_value(json_object_get(v, "type")),
			    json_integer_value(json_object_get(v, "size")),
			    json_integer_value(json_object_get(v, "id")),
			    json_string_value(json_object_get(v, "text_status")));
		}
		mb_buf_addc(&inner, '\n');
		mb_buf_add(&inner, rm->body, rm->body_len);
		mcp_fence_add(&a->text, a->nonce, inner.data, inner.len);
		/* Said outside the fence: it is the index's word, not the mail's. */
		if (rm->headers_only)
			mb_buf_addf(&a->text, "\n(body not indexed: the message is %" PRIu64
			    " bytes, over the size cap; only its headers were fetched)\n",
			    rm->size);
		if (rm->more)
			mb_buf_addf(&a->text, "\nThe body continues (characters %" JSON_INTEGER_FORMAT
			    " of %zu shown): call get_message with id %lld and offset %"
			    JSON_INTEGER_FORMAT " for the rest.\n",
			    json_integer_value(json_object_get(m, "next_offset")), rm->body_chars, gid, json_integer_value(json_object_get(m, "next_offset")));
	}
	mb_buf_release(&inner);
	return m;
}

/*
 * The answer for an id mb_read_message or mb_read_thread did not serve:
 * what became of it when it was a row of an older generation or of a folder
 * the server no longer lists, else that there is no such id.  Always NULL
 * with err set (MB_E_NOTFOUND, the client's text).
 */
static json_t *
gone_or_unknown(struct mb_index *idx, int64_t id, int64_t local, const char *where,
    struct mb_err *err)
{
	char why[sizeof(err->msg)];
	int gone = 0;

	if (err->code == MB_E_TEMP)	/* the index cannot be opened: said as it is */
		return NULL;
	mb_err_clear(err);
	if (idx != NULL)	/* NULL: an account this caller cannot see, as a missing id */
		gone = mb_read_gone(idx, local, id - local, why, sizeof(why), err);
	if (gone == -1)
		return mcp_index_failure(err);
	if (gone == 1)
		mb_err_set(err, MB_E_NOTFOUND, "%s; search again for what the mailbox holds now",
		    why);
	else
		mb_err_set(err, MB_E_NOTFOUND, "no message with id %lld; ids come from %s",
		    (long long)id, where);
	return NULL;
}

json_t *
mcp_tool_get_message(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const struct mcp_account *acc;
	struct mb_read_message rm;
	struct mb_index *idx;
	struct mcp_answer a;
	int64_t id = mcp_arg_int(args, "id"), local = 0;
	long long offset = mcp_arg_int(args, "offset");

	acc = mcp_id_route(srv, who, id, &local, &idx, err);
	if (acc == NULL)
		return gone_or_unknown(idx, id, local, "search_messages or get_thread", err);
	if (mb_read_message(idx, local, (size_t)offset, MCP_BODY_CAP_CHARS, &rm, err) == -1) {
		if (err->code != MB_E_NOTFOUND)
			return mcp_index_failure(err);
		return gone_or_unknown(idx, id, local, "search_messages or get_thread", err);
	}
	mcp_answer_init(&a);
	json_decref(a.data);
	a.data = message_answer(&rm, acc, offset, &a);
	mb_read_message_release(&rm);
	return mcp_answer_result(&a);
}

/* ---- get_thread */

json_t *
mcp_tool_get_thread(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	static const char *const keys[] = { "from", "subject", "preview" };
	static const char *const labels[] = { "From", "Subject", "Preview" };
	const struct mcp_account *acc;
	struct mb_read_thread t;
	struct mb_index *idx;
	struct mcp_answer a;
	int64_t id = mcp_arg_int(args, "id"), local = 0;
	long long offset = mcp_arg_int(args, "offset");
	json_t *list;
	size_t n, i;

	acc = mcp_id_route(srv, who, id, &local, &idx, err);
	if (acc == NULL)
		return gone_or_unknown(idx, id, local, "search_messages", err);
	if (mb_read_thread(idx, local, offset, MCP_THREAD_PAGE, MCP_PREVIEW_CHARS, &t,
	    err) == -1) {
		if (err->code != MB_E_NOTFOUND)
			return mcp_index_failure(err);
		return gone_or_unknown(idx, id, local, "search_messages", err);
	}
	mcp_answer_init(&a);
	list = json_array();
	n = t.n;
	for (i = 0; i < n; i++) {
		const struct mb_read_thread_item *it = &t.items[i];

		json_array_append_new(list, json_pack("{s:I, s:s, s:o, s:o, s:o, s:o, s:o}",
		    "id", (json_int_t)mcp_gid(acc, it->id), "account", acc->name, "folder", mcp_str_json(it->folder),
		    "date", mcp_date_json(it->has_date, it->date), "from", mcp_str_json(it->from),
		    "subject", mcp_str_json(it->subject), "preview", mcp_str_json(it->preview)));
	}
	json_object_set_new(a.data, "thread_id", json_integer(mcp_gid(acc, t.thread_id)));
	json_object_set_new(a.data, "account", json_string(acc->name));
	json_object_set_new(a.data, "total", json_integer(t.total));
	json_object_set_new(a.data, "messages", list);
	json_object_set_new(a.data, "next_offset", offset + (long long)n < t.total ?
	    json_integer(offset + (json_int_t)n) : json_null());
	mb_buf_addf(&a.text, "Thread %lld%s: %lld message(s), oldest first; showing "
	    "%lld-%lld. %s\n\n", (long long)mcp_gid(acc, t.thread_id), acc->tag,
	    (long long)t.total, offset + (n ? 1 : 0), offset + (long long)n, MCP_FENCE_NOTE);
	for (i = 0; i < n; i++) {
		json_t *h = json_array_get(list, i);
		json_t *d = json_object_get(h, "date");

		mb_buf_addf(&a.text, "%lld. id %" JSON_INTEGER_FORMAT " | ",
		    offset + (long long)i + 1, json_integer_value(json_object_get(h, "id")));
		mcp_fence_inline(&a.text, json_string_value(json_object_get(h, "folder")));
		mb_buf_addf(&a.text, " | %s\n", json_is_string(d) ? json_string_value(d) : "no date");
		if (json_is_null(json_object_get(h, "preview")))
			json_object_set_new(h, "preview", json_string(""));
		mcp_add_fenced_fields(&a, h, keys, labels, MB_ARRAY_LEN(keys));
	}
	if (offset + (long long)n < t.total)
		mb_buf_addf(&a.text, "\nMore messages: call get_thread with id %lld and offset "
		    "%lld.\n", (long long)id, offset + (long long)n);
	mb_read_thread_release(&t);
	return mcp_answer_result(&a);
}

/* ---- list_folders */

/* One account's folders appended to the list (a JSON array). */
static int
folders_of(struct mcp_server *srv, const struct mcp_account *acc, struct mb_index *idx,
    void *list, struct mb_err *err)
{
	struct mb_read_folder *folders;
	size_t n;

	(void)srv;
	if (mb_read_folders(idx, &folders, &n, err) == -1) {
		mcp_index_failure(err);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:o, s:s, s:o, s:I, s:I, s:o}",
		    "name", mcp_str_json(folders[i].name), "account", acc->name,
		    "role", mcp_str_json(folders[i].role),
		    "messages", (json_int_t)folders[i].messages,
		    "unread", (json_int_t)folders[i].unread,
		    "last_sync", mcp_date_json(folders[i].last_sync > 0, folders[i].last_sync));

		if (folders[i].role != NULL)
			json_object_set_new(o, "role_source",
			    json_string(folders[i].role_by_name ? "name" : "special-use"));
		json_array_append_new(list, o);
	}
	mb_read_folders_free(&folders, n);
	return 0;
}

json_t *
mcp_tool_list_folders(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	bool several = srv->conf->n_accounts > 1;
	struct mcp_answer a;
	json_t *list, *f;
	uint64_t set;
	size_t i;

	if (mcp_account_arg(srv->conf, who, args, &set, err) == -1)
		return NULL;
	list = json_array();
	if (mcp_each_account(srv, set, folders_of, list, err) == -1) {
		json_decref(list);
		return NULL;
	}
	mcp_answer_init(&a);
	json_object_set_new(a.data, "folders", list);
	mb_buf_addf(&a.text, "%zu folder(s):\n", json_array_size(list));
	json_array_foreach(list, i, f) {
		json_t *role = json_object_get(f, "role"), *ls = json_object_get(f, "last_sync");

		/* folder names come from the IMAP server: data, quoted (fence.c) */
		mb_buf_adds(&a.text, "- ");
		if (several)	/* account names are the operator's */
			mb_buf_addf(&a.text, "account %s: ",
			    json_string_value(json_object_get(f, "account")));
		mcp_fence_inline(&a.text, json_string_value(json_object_get(f, "name")));
		mb_buf_addf(&a.text, "%s%s: %" JSON_INTEGER_FORMAT " messages, %"
		    JSON_INTEGER_FORMAT " unread, last sync %s\n",
		    json_is_string(role) ? " " : "", json_is_string(role) ?
		    json_string_value(role) : "",
		    json_integer_value(json_object_get(f, "messages")),
		    json_integer_value(json_object_get(f, "unread")),
		    json_is_string(ls) ? json_string_value(ls) : "never");
	}
	return mcp_answer_result(&a);
}

/* ---- resources */

json_t *
mcp_resource_templates_list(void)
{
	json_t *r = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "resourceTemplates",
	    "uriTemplate", "mail://message/{id}", "name", "message", "title", "A mail message",
	    "description", "One message by id: headers and the normalised plain-text body. "
	    MCP_FENCE_NOTE, "mimeType", "text/plain");

	json_array_append_new(json_object_get(r, "resourceTemplates"), mcp_attachment_template());
	return r;
}

/* One entry of resources/list: a message of some account. */
struct recent_entry {
	const struct mcp_account *acc;
	struct mb_read_recent	 m;	/* subject owned by the list it came from */
};

/* Newest first by sort date, undated last, then the highest id (mb_read_recent's order). */
static int
recent_cmp(const void *pa, const void *pb)
{
	const struct recent_entry *a = pa, *b = pb;
	int64_t ga = mcp_gid(a->acc, a->m.id), gb = mcp_gid(b->acc, b->m.id);

	if (a->m.has_date != b->m.has_date)
		return a->m.has_date ? -1 : 1;
	if (a->m.has_date && a->m.date != b->m.date)
		return a->m.date > b->m.date ? -1 : 1;
	return ga > gb ? -1 : ga < gb;
}

struct recent_ctx {
	struct recent_entry	 all[MCP_RESOURCE_RECENT * MCP_ACCOUNTS_MAX];
	size_t			 n;
	struct mb_read_recent	*lists[MCP_ACCOUNTS_MAX];	/* owned, freed by the caller */
	size_t			 sizes[MCP_ACCOUNTS_MAX];
	size_t			 n_lists;
};

static int
recent_of(struct mcp_server *srv, const struct mcp_account *acc, struct mb_index *idx,
    void *vctx, struct mb_err *err)
{
	struct recent_ctx *c = vctx;
	struct mb_read_recent *list;
	size_t n;
	bool more;

	(void)srv;
	if (mb_read_recent(idx, 0, MCP_RESOURCE_RECENT, &list, &n, &more, err) == -1)
		return -1;
	c->lists[c->n_lists] = list;
	c->sizes[c->n_lists++] = n;
	for (size_t i = 0; i < n; i++)
		c->all[c->n++] = (struct recent_entry){ .acc = acc, .m = list[i] };
	return 0;
}

/*
 * The newest MCP_RESOURCE_RECENT messages of the caller's accounts, merged,
 * in one page: a client that gathers every page (SDK v2's listResources(),
 * the Inspector) stops after 64, so a page per 50 messages made a large
 * mailbox unlistable.  Every other message is reachable through the
 * mail://message/{id} template; search finds them.
 */
json_t *
mcp_resources_list(struct mcp_server *srv, const struct mcp_caller *who, json_t *params,
    int *code_r, const char **message_r)
{
	struct mb_err err = { 0 };
	struct recent_ctx *c;
	json_t *cur = json_object_get(params, "cursor"), *list = NULL;

	if (cur != NULL && !json_is_null(cur)) {	/* we never hand one out */
		*code_r = -32602;
		*message_r = "Invalid params: invalid cursor";
		return NULL;
	}
	c = mb_xcalloc(1, sizeof(*c));
	if (mcp_each_account(srv, mcp_may_read(srv->conf, who), recent_of, c, &err) == -1) {
		bool temp = err.code == MB_E_TEMP;

		if (!temp)
			mb_log_error("resources/list: %s", err.msg);
		*code_r = -32603;
		*message_r = temp ? "Internal error: the mail index is not available" :
		    "Internal error";
	} else {
		qsort(c->all, c->n, sizeof(c->all[0]), recent_cmp);
		list = json_array();
		for (size_t i = 0; i < c->n && i < MCP_RESOURCE_RECENT; i++) {
			const struct recent_entry *e = &c->all[i];
			char uri[64], desc[64];

			snprintf(uri, sizeof(uri), "mail://message/%lld",
			    (long long)mcp_gid(e->acc, e->m.id));
			snprintf(desc, sizeof(desc), "A message of account %s", e->acc->name);
			json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:s, s:s}", "uri", uri,
			    "name", uri, "title", e->m.subject ? mcp_str_json(e->m.subject) :
			    json_string("(no subject)"), "description", desc, "mimeType",
			    "text/plain"));
		}
	}
	for (size_t i = 0; i < c->n_lists; i++)
		mb_read_recent_free(&c->lists[i], c->sizes[i]);
	free(c);
	return list == NULL ? NULL : json_pack("{s:o}", "resources", list);
}

json_t *
mcp_resources_read(struct mcp_server *srv, const struct mcp_caller *who, json_t *params,
    int *code_r, const char **message_r)
{
	static const char prefix[] = "mail://message/";
	const char *uri = json_string_value(json_object_get(params, "uri"));
	const struct mcp_account *acc;
	struct mb_err err = { 0 };
	struct mb_read_message rm;
	struct mb_index *idx;
	struct mcp_answer a;
	const char *p;
	char *end;
	long long id;
	int64_t local = 0;
	json_t *r;

	if (uri == NULL) {
		*code_r = -32602;
		*message_r = "Invalid params: uri (a string) is required";
		return NULL;
	}
	if (strncmp(uri, "mail://attachment/", 18) == 0)
		return mcp_attachment_resource(srv, who, uri, code_r, message_r);
	p = uri + sizeof(prefix) - 1;
	if (strncmp(uri, prefix, sizeof(prefix) - 1) != 0 || *p < '1' || *p > '9') {
		*code_r = -32002;
		*message_r = "Resource not found";
		return NULL;
	}
	errno = 0;
	id = strtoll(p, &end, 10);
	if (*end != '\0' || errno != 0) {
		*code_r = -32002;
		*message_r = "Resource not found";
		return NULL;
	}
	acc = mcp_id_route(srv, who, id, &local, &idx, &err);
	if (acc == NULL && err.code == MB_E_TEMP) {
		*code_r = -32603;
		*message_r = "Internal error: the mail index is not available";
		return NULL;
	}
	if (acc == NULL || mb_read_message(idx, local, 0, MCP_BODY_CAP_CHARS, &rm, &err) == -1) {
		bool failed = err.code != MB_E_NOTFOUND;

		if (failed)
			mb_log_error("resources/read: %s", err.msg);
		*code_r = failed ? -32603 : -32002;
		*message_r = failed ? "Internal error" : "Resource not found";
		return NULL;
	}
	mcp_answer_init(&a);
	json_decref(message_answer(&rm, acc, 0, &a));
	mb_read_message_release(&rm);
	r = json_pack("{s:[{s:s, s:s, s:s%}]}", "contents", "uri", uri, "mimeType",
	    "text/plain", "text", a.text.data, a.text.len);
	mcp_answer_release(&a);
	return r;
}

/* ---- /healthz */

char *
mcp_healthz(struct mcp_server *srv, int *status_r)
{
	struct mb_err err = { 0 };
	json_t *j;
	char *s;
	int version = 0;
	size_t i;

	/* every account's index must be readable: one that is not is a failing search */
	for (i = 0; i < srv->conf->n_accounts; i++) {
		struct mb_index *idx = mcp_account_index(srv, i, &err);

		if (idx == NULL || mb_index_schema_version(idx, &version, &err) == -1)
			break;
	}
	if (i < srv->conf->n_accounts) {
		mb_log_warnx("healthz: account %s: %s", srv->conf->accounts[i].name, err.msg);
		*status_r = 503;
		j = json_pack("{s:s, s:b, s:i}", "status", "unavailable", "index_readable", 0,
		    "code_schema_version", mb_index_code_schema_version());
	} else {
		*status_r = 200;
		j = json_pack("{s:s, s:b, s:i, s:i}", "status", "ok", "index_readable", 1,
		    "schema_version", version, "code_schema_version",
		    mb_index_code_schema_version());
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}
