/*
 * The overview tools: count_messages, find_contacts, awaiting_reply
 * (mailbox/overview.h).  Each checks its arguments, asks the index on the
 * thread's read-only handle and answers with the page as structuredContent
 * and, with every string from mail fenced (fence.c), as text.  Paged by
 * signed cursors that carry the offset and a hash of the arguments.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mailbox/buf.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "mcpd.h"

#define OVERVIEW_MAX_LIMIT	100	/* = the tools' limit maximum */
_Static_assert(OVERVIEW_MAX_LIMIT <= MB_OVERVIEW_MAX_LIMIT, "a page the index cannot give");

#define CURSOR_COUNT	'c'
#define CURSOR_CONTACTS	'p'
#define CURSOR_AWAIT	'w'

/* FNV-1a over s (NULL counts as empty), from h: the arguments a cursor belongs to. */
static uint64_t
hash_str(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return (h ^ 0xff) * 0x100000001b3ull;
}

/*
 * The offset a cursor carries into *offset_r (0 without one), checked to
 * belong to the same arguments (hash) of the same tool (kind).
 */
static int
page_start(struct mcp_server *srv, json_t *args, char kind, uint64_t hash, const char *tool,
    int64_t *offset_r, struct mb_err *err)
{
	const char *cursor = mcp_arg_str(args, "cursor");
	uint64_t chash;

	*offset_r = 0;
	if (cursor == NULL)
		return 0;
	if (mcp_cursor_parse(srv, cursor, kind, offset_r, &chash) == -1)
		return mb_err_set(err, MB_E_INVALID, "invalid cursor: pass next_cursor exactly as "
		    "the previous %s answer gave it, or leave cursor out for the first page", tool);
	if (chash != hash)
		return mb_err_set(err, MB_E_INVALID, "this cursor belongs to other arguments: "
		    "repeat the same arguments with it, or leave cursor out to start over");
	return 0;
}

/* next_cursor into the answer's data and a line of text, when more follows. */
static void
page_more(struct mcp_server *srv, struct mcp_answer *a, bool more, int64_t next, char kind,
    uint64_t hash, const char *tool)
{
	char *c;

	if (!more)
		return;
	c = mcp_cursor_make(srv, kind, next, hash);
	json_object_set_new(a->data, "next_cursor", json_string(c));
	mb_buf_addf(&a->text, "\nMore: call %s again with the same arguments and cursor "
	    "\"%s\".\n", tool, c);
	free(c);
}

/* An optional string field: set when s is not NULL (never a null). */
static void
set_opt_str(json_t *o, const char *key, const char *s)
{
	if (s != NULL)
		json_object_set_new(o, key, mcp_str_json(s));
}

static void
set_date(json_t *o, const char *key, int64_t t)
{
	char d[32];

	mcp_iso_date(t, d);
	json_object_set_new(o, key, json_string(d));
}

/* ---- count_messages */

/* The groups as text: plain for folders and dates, fenced where keys come from mail. */
static void
count_text(struct mcp_answer *a, const struct mb_count_page *pg, enum mb_count_group g,
    int64_t offset)
{
	struct mb_buf list = MB_BUF_INIT(1u << 20);
	bool from_mail = g == MB_COUNT_SENDER || g == MB_COUNT_SENDER_DOMAIN ||
	    g == MB_COUNT_LABEL;

	mb_buf_addf(&a->text, "%" PRId64 " message%s match%s", pg->total, pg->total == 1 ? "" :
	    "s", pg->total == 1 ? "es" : "");
	if (pg->ungrouped > 0)
		mb_buf_addf(&a->text, " (%" PRId64 " without a %s)", pg->ungrouped,
		    mb_count_group_name(g));
	mb_buf_addf(&a->text, ". %" PRId64 " group%s by %s", pg->groups, pg->groups == 1 ? "" :
	    "s", mb_count_group_name(g));
	if (pg->n == 0) {
		mb_buf_addf(&a->text, "%s\n", offset > 0 ? "; no more groups: this was the last "
		    "page." : ".");
		mb_buf_release(&list);
		return;
	}
	mb_buf_addf(&a->text, "; %" PRId64 "-%" PRId64 ", %s:%s\n", offset + 1,
	    offset + (int64_t)pg->n, g == MB_COUNT_YEAR || g == MB_COUNT_MONTH ||
	    g == MB_COUNT_DAY ? "newest first" : "largest first", from_mail ? " " MCP_FENCE_NOTE :
	    "");
	for (size_t i = 0; i < pg->n; i++) {
		if (g == MB_COUNT_FOLDER)	/* a folder name is mail's: quoted (fence.c) */
			mcp_fence_inline(&a->text, pg->rows[i].key);
		else
			mb_buf_adds(from_mail ? &list : &a->text, pg->rows[i].key);
		mb_buf_addf(from_mail ? &list : &a->text, ": %" PRId64 "\n", pg->rows[i].count);
	}
	if (from_mail)
		mcp_fence_add(&a->text, a->nonce, list.data, list.len);
	mb_buf_release(&list);
}

json_t *
mcp_tool_count_messages(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const char *text = mcp_arg_str(args, "query");
	int64_t limit = mcp_arg_int(args, "limit"), offset;
	struct mb_count_page pg = { 0 };
	struct mb_err qerr = { 0 };
	enum mb_count_group g;
	struct mcp_answer a;
	struct mb_index *idx;
	struct mb_query q;
	json_t *results;
	uint64_t hash;

	(void)who;
	if (mb_count_group_parse(mcp_arg_str(args, "group_by"), &g, err) == -1)
		return NULL;
	if (MB_NEVER(limit < 1 || limit > OVERVIEW_MAX_LIMIT)) {
		mb_err_set(err, MB_E_INTERNAL, "limit %" PRId64 ": count_messages.json and "
		    "OVERVIEW_MAX_LIMIT disagree", limit);
		return NULL;
	}
	mb_query_init(&q);
	if (text && mb_query_compile(text, strlen(text), &q, &qerr) == -1) {
		mb_err_set(err, MB_E_INVALID, "%s", qerr.msg);
		return NULL;
	}
	hash = mb_search_hash(&q) ^ (uint64_t)g;
	if (page_start(srv, args, CURSOR_COUNT, hash, "count_messages", &offset, err) == -1) {
		mb_query_release(&q);
		return NULL;
	}
	if ((idx = mcp_server_index(srv, err)) == NULL) {
		mb_query_release(&q);
		return mcp_index_unavailable(err);
	}
	if (mb_overview_count(idx, &q, g, offset, (size_t)limit, &pg, err) == -1) {
		if (err->code == MB_E_NOTFOUND && q.folder) {
			mb_err_clear(err);
			mb_err_set(err, MB_E_NOTFOUND, "there is no folder named \"%.100s\"; "
			    "list_folders shows the folder names", q.folder);
		} else
			mcp_index_failure(err);
		mb_count_page_release(&pg);
		mb_query_release(&q);
		return NULL;
	}
	mb_query_release(&q);
	mcp_answer_init(&a);
	results = json_array();
	for (size_t i = 0; i < pg.n; i++)
		json_array_append_new(results, json_pack("{s:o, s:I}", "key",
		    mcp_str_json(pg.rows[i].key), "count", (json_int_t)pg.rows[i].count));
	json_object_set_new(a.data, "group_by", json_string(mb_count_group_name(g)));
	json_object_set_new(a.data, "total", json_integer(pg.total));
	json_object_set_new(a.data, "ungrouped", json_integer(pg.ungrouped));
	json_object_set_new(a.data, "groups", json_integer(pg.groups));
	json_object_set_new(a.data, "results", results);
	count_text(&a, &pg, g, offset);
	page_more(srv, &a, pg.more, pg.next_offset, CURSOR_COUNT, hash, "count_messages");
	mb_count_page_release(&pg);
	return mcp_answer_result(&a);
}

/* ---- find_contacts */

static json_t *
contact_json(const struct mb_contact *c)
{
	json_t *o = json_pack("{s:o, s:[], s:I, s:I, s:I}", "address", mcp_str_json(c->address),
	    "names", "received_from", (json_int_t)c->received_from, "sent_to",
	    (json_int_t)c->sent_to, "messages", (json_int_t)c->messages);

	for (size_t i = 0; i < c->n_names; i++)
		json_array_append_new(json_object_get(o, "names"), mcp_str_json(c->names[i]));
	if (c->has_dates) {
		set_date(o, "first_date", c->first_date);
		set_date(o, "last_date", c->last_date);
	}
	return o;
}

static void
contact_text(struct mb_buf *b, size_t n, const struct mb_contact *c)
{
	mb_buf_addf(b, "%zu. %s", n, c->address);
	for (size_t i = 0; i < c->n_names; i++)
		mb_buf_addf(b, "%s%s", i ? ", " : " (", c->names[i]);
	mb_buf_addf(b, "%s: %" PRId64 " from them, %" PRId64 " to them, %" PRId64 " in all\n",
	    c->n_names ? ")" : "", c->received_from, c->sent_to, c->messages);
}

json_t *
mcp_tool_find_contacts(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const char *frag = mcp_arg_str(args, "query");
	int64_t limit = mcp_arg_int(args, "limit"), offset;
	struct mb_buf list = MB_BUF_INIT(1u << 20);
	struct mb_contact_page pg = { 0 };
	uint64_t hash = hash_str(0xcbf29ce484222325ull, frag);
	struct mcp_answer a;
	struct mb_index *idx;
	json_t *results;

	(void)who;
	if (MB_NEVER(limit < 1 || limit > OVERVIEW_MAX_LIMIT)) {
		mb_err_set(err, MB_E_INTERNAL, "limit %" PRId64 ": find_contacts.json and "
		    "OVERVIEW_MAX_LIMIT disagree", limit);
		return NULL;
	}
	if (page_start(srv, args, CURSOR_CONTACTS, hash, "find_contacts", &offset, err) == -1)
		return NULL;
	if ((idx = mcp_server_index(srv, err)) == NULL)
		return mcp_index_unavailable(err);
	if (mb_overview_contacts(idx, frag, offset, (size_t)limit, &pg, err) == -1) {
		mb_contact_page_release(&pg);
		return mcp_index_failure(err);
	}
	mcp_answer_init(&a);
	results = json_array();
	for (size_t i = 0; i < pg.n; i++) {
		json_array_append_new(results, contact_json(&pg.list[i]));
		contact_text(&list, (size_t)offset + i + 1, &pg.list[i]);
	}
	json_object_set_new(a.data, "results", results);
	if (pg.n == 0)
		mb_buf_addf(&a.text, "%s\n", offset > 0 ? "No more people: this was the last page." :
		    frag ? "Nobody in the mail has a name or an address containing that; try a "
		    "shorter fragment (a first name, a domain)." : "The index holds no addresses.");
	else {
		mb_buf_addf(&a.text, "People %" PRId64 "-%" PRId64 ", most mail exchanged first. %s\n",
		    offset + 1, offset + (int64_t)pg.n, MCP_FENCE_NOTE);
		mcp_fence_add(&a.text, a.nonce, list.data, list.len);
	}
	mb_buf_release(&list);
	page_more(srv, &a, pg.more, pg.next_offset, CURSOR_CONTACTS, hash, "find_contacts");
	mb_contact_page_release(&pg);
	return mcp_answer_result(&a);
}

/* ---- awaiting_reply */

static const char *
await_word(enum mb_await_dir d)
{
	return d == MB_AWAIT_ME ? "me" : "others";
}

static json_t *
await_json(const struct mb_await_thread *t)
{
	json_t *o = json_pack("{s:I, s:s, s:I, s:o, s:I}", "thread_id", (json_int_t)t->thread_id,
	    "waiting_on", await_word(t->dir), "id", (json_int_t)t->id, "folder",
	    mcp_str_json(t->folder), "messages", (json_int_t)t->messages);

	set_date(o, "date", t->date);
	set_opt_str(o, "from", t->from);
	set_opt_str(o, "to", t->to);
	set_opt_str(o, "subject", t->subject);
	return o;
}

static void
await_text(struct mcp_answer *a, json_t *results, int64_t offset, long long days)
{
	static const char *const keys[] = { "from", "to", "subject" };
	static const char *const labels[] = { "From", "To", "Subject" };
	size_t n = json_array_size(results);

	if (n == 0) {
		mb_buf_addf(&a->text, offset > 0 ? "No more conversations: this was the last "
		    "page.\n" : "No conversation has waited %lld days or more for a reply.\n", days);
		return;
	}
	mb_buf_addf(&a->text, "Conversations %lld-%lld waiting for a reply %lld days or more, "
	    "newest first. %s\n\n", (long long)offset + 1, (long long)offset + (long long)n, days,
	    MCP_FENCE_NOTE);
	for (size_t i = 0; i < n; i++) {
		json_t *t = json_array_get(results, i);

		mb_buf_addf(&a->text, "%lld. waiting on %s | thread %" JSON_INTEGER_FORMAT
		    " (%" JSON_INTEGER_FORMAT " messages) | last: id %" JSON_INTEGER_FORMAT
		    " | ", (long long)offset + (long long)i + 1,
		    json_string_value(json_object_get(t, "waiting_on")),
		    json_integer_value(json_object_get(t, "thread_id")),
		    json_integer_value(json_object_get(t, "messages")),
		    json_integer_value(json_object_get(t, "id")));
		mcp_fence_inline(&a->text, json_string_value(json_object_get(t, "folder")));
		mb_buf_addf(&a->text, " | %s\n", json_string_value(json_object_get(t, "date")));
		mcp_add_fenced_fields(a, t, keys, labels, MB_ARRAY_LEN(keys));
	}
}

json_t *
mcp_tool_awaiting_reply(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const char *dir = mcp_arg_str(args, "direction");
	int64_t limit = mcp_arg_int(args, "limit"), days = mcp_arg_int(args, "days"), offset;
	unsigned dirs = MB_AWAIT_OTHERS | MB_AWAIT_ME;
	struct mb_await_page pg = { 0 };
	struct mcp_answer a;
	struct mb_index *idx;
	json_t *results;
	uint64_t hash;

	(void)who;
	if (dir && strcmp(dir, "others") == 0)
		dirs = MB_AWAIT_OTHERS;
	else if (dir && strcmp(dir, "me") == 0)
		dirs = MB_AWAIT_ME;
	if (MB_NEVER(limit < 1 || limit > OVERVIEW_MAX_LIMIT || days < 0 || days > 36500)) {
		mb_err_set(err, MB_E_INTERNAL, "limit or days: awaiting_reply.json and mcpd "
		    "disagree");
		return NULL;
	}
	hash = ((uint64_t)days << 2 | dirs) * 0x100000001b3ull;
	if (page_start(srv, args, CURSOR_AWAIT, hash, "awaiting_reply", &offset, err) == -1)
		return NULL;
	if ((idx = mcp_server_index(srv, err)) == NULL)
		return mcp_index_unavailable(err);
	if (mb_overview_awaiting(idx, dirs, (int64_t)time(NULL) - days * 86400, offset,
	    (size_t)limit, &pg, err) == -1) {
		mb_await_page_release(&pg);
		if (err->code != MB_E_CONFIG)
			return mcp_index_failure(err);
		err->code = MB_E_INVALID;	/* no own address: said as it is, for the operator */
		return NULL;
	}
	mcp_answer_init(&a);
	results = json_array();
	for (size_t i = 0; i < pg.n; i++)
		json_array_append_new(results, await_json(&pg.list[i]));
	json_object_set_new(a.data, "results", results);
	await_text(&a, results, offset, (long long)days);
	page_more(srv, &a, pg.more, pg.next_offset, CURSOR_AWAIT, hash, "awaiting_reply");
	mb_await_page_release(&pg);
	return mcp_answer_result(&a);
}
