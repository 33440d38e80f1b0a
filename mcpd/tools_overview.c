/*
 * The overview tools: count_messages, find_contacts, awaiting_reply
 * (mailbox/overview.h).  Each checks its arguments, asks the index on the
 * thread's read-only handle of each account the caller may read (or the
 * one its "account" argument names), merges the pages (merge.c) and answers
 * with the page as structuredContent and, with every string from mail
 * fenced (fence.c), as text.  Paged by signed cursors that carry an offset
 * per account and a hash of the arguments and accounts.
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
 * The offsets a cursor carries into the parts (0 without one), checked to
 * belong to the same arguments and accounts (hash) of the same tool (kind).
 */
static int
page_start(struct mcp_server *srv, json_t *args, char kind, uint64_t hash, const char *tool,
    struct mcp_merge_part *p, size_t n, struct mb_err *err)
{
	const char *cursor = mcp_arg_str(args, "cursor");
	int64_t offsets[MCP_ACCOUNTS_MAX];
	uint64_t chash;

	if (cursor == NULL)
		return 0;
	if (mcp_cursor_parse_multi(srv, cursor, kind, offsets, n, &chash) == -1)
		return mb_err_set(err, MB_E_INVALID, "invalid cursor: pass next_cursor exactly as "
		    "the previous %s answer gave it, or leave cursor out for the first page", tool);
	if (chash != hash)
		return mb_err_set(err, MB_E_INVALID, "this cursor belongs to other arguments: "
		    "repeat the same arguments with it, or leave cursor out to start over");
	for (size_t i = 0; i < n; i++)
		p[i].offset = offsets[i];
	return 0;
}

/* Where the merged page starts: the rows before it, in every account. */
static int64_t
page_offset(const struct mcp_merge_part *p, size_t n)
{
	int64_t o = 0;

	for (size_t i = 0; i < n; i++)
		o += p[i].offset;
	return o;
}

/* next_cursor into the answer's data and a line of text, when more follows the parts. */
static void
page_more(struct mcp_server *srv, struct mcp_answer *a, const struct mcp_merge_part *p,
    size_t n, char kind, uint64_t hash, const char *tool)
{
	int64_t next[MCP_ACCOUNTS_MAX];
	char *c;

	if (!mcp_merge_next(p, n, next))
		return;
	c = mcp_cursor_make_multi(srv, kind, next, n, hash);
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

/* What count_messages merges: one page of groups per account. */
struct count_run {
	enum mb_count_group	 g;
	struct mcp_merge_part	 parts[MCP_ACCOUNTS_MAX];
	struct mb_count_page	 pages[MCP_ACCOUNTS_MAX];
	size_t			 n;
	int64_t			 total, ungrouped, groups;
};

static bool
by_date(enum mb_count_group g)
{
	return g == MB_COUNT_YEAR || g == MB_COUNT_MONTH || g == MB_COUNT_DAY;
}

/* The engine's order: dates newest first, other groups largest first, then by key. */
static bool
count_before(const struct mcp_merge_part *pa, const void *va, const struct mcp_merge_part *pb,
    const void *vb)
{
	const struct mb_count_row *a = va, *b = vb;
	const enum mb_count_group *g = pa->ctx;
	int k = strcmp(a->key, b->key);

	if (by_date(*g))
		return k != 0 ? k > 0 : pa < pb;
	if (a->count != b->count)
		return a->count > b->count;
	return k != 0 ? k < 0 : pa < pb;
}

static void
count_take(const struct mcp_merge_part *p, const void *row, void *results)
{
	const struct mb_count_row *r = row;

	json_array_append_new(results, json_pack("{s:o, s:I, s:s}", "key", mcp_str_json(r->key),
	    "count", (json_int_t)r->count, "account", p->acc->name));
}

/* The groups as text: plain for folders and dates, fenced where keys come from mail. */
static void
count_text(struct mcp_answer *a, const struct count_run *c, json_t *results, int64_t offset,
    bool several)
{
	struct mb_buf list = MB_BUF_INIT(1u << 20);
	enum mb_count_group g = c->g;
	bool from_mail = g == MB_COUNT_SENDER || g == MB_COUNT_SENDER_DOMAIN ||
	    g == MB_COUNT_LABEL;
	size_t n = json_array_size(results), i;
	json_t *r;

	mb_buf_addf(&a->text, "%" PRId64 " message%s match%s", c->total, c->total == 1 ? "" :
	    "s", c->total == 1 ? "es" : "");
	if (c->ungrouped > 0)
		mb_buf_addf(&a->text, " (%" PRId64 " without a %s)", c->ungrouped,
		    mb_count_group_name(g));
	mb_buf_addf(&a->text, ". %" PRId64 " group%s by %s", c->groups, c->groups == 1 ? "" :
	    "s", mb_count_group_name(g));
	if (n == 0) {
		mb_buf_addf(&a->text, "%s\n", offset > 0 ? "; no more groups: this was the last "
		    "page." : ".");
		mb_buf_release(&list);
		return;
	}
	mb_buf_addf(&a->text, "; %" PRId64 "-%" PRId64 ", %s:%s\n", offset + 1,
	    offset + (int64_t)n, by_date(g) ? "newest first" : "largest first", from_mail ?
	    " " MCP_FENCE_NOTE : "");
	json_array_foreach(results, i, r) {
		const char *key = json_string_value(json_object_get(r, "key"));

		if (g == MB_COUNT_FOLDER)	/* a folder name is mail's: quoted (fence.c) */
			mcp_fence_inline(&a->text, key);
		else
			mb_buf_adds(from_mail ? &list : &a->text, key);
		mb_buf_addf(from_mail ? &list : &a->text, ": %" JSON_INTEGER_FORMAT "%s%s%s\n",
		    json_integer_value(json_object_get(r, "count")), several ? " (account " : "",
		    several ? json_string_value(json_object_get(r, "account")) : "",
		    several ? ")" : "");
	}
	if (from_mail)
		mcp_fence_add(&a->text, a->nonce, list.data, list.len);
	mb_buf_release(&list);
}

/*
 * Each account's page of groups into c.  An account without the query's
 * folder has none; only when every account lacks it is it an error.
 */
static int
count_parts(struct mcp_server *srv, struct count_run *c, const struct mb_query *q,
    size_t limit, struct mb_err *err)
{
	size_t missing = 0;

	for (size_t i = 0; i < c->n; i++) {
		struct mcp_merge_part *p = &c->parts[i];
		struct mb_index *idx = mcp_merge_index(srv, p, err);

		if (idx == NULL)
			return -1;
		if (mb_overview_count(idx, q, c->g, p->offset, limit, &c->pages[i], err) == -1) {
			if (err->code != MB_E_NOTFOUND || !q->folder) {
				mcp_index_failure(err);
				return -1;
			}
			if (++missing < c->n)
				mb_err_clear(err);
			continue;
		}
		mcp_merge_page(p, c->pages[i].rows, c->pages[i].n, sizeof(c->pages[i].rows[0]),
		    c->pages[i].more, c->pages[i].next_offset);
		p->ctx = &c->g;
		c->total += c->pages[i].total;
		c->ungrouped += c->pages[i].ungrouped;
		c->groups += c->pages[i].groups;
	}
	if (missing > 0 && missing == c->n) {
		mb_err_clear(err);
		return mb_err_set(err, MB_E_NOTFOUND, "there is no folder named \"%.100s\"; "
		    "list_folders shows the folder names", q->folder);
	}
	return 0;
}

json_t *
mcp_tool_count_messages(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const char *text = mcp_arg_str(args, "query");
	int64_t limit = mcp_arg_int(args, "limit");
	struct mb_err qerr = { 0 };
	struct count_run *c;
	struct mcp_answer a;
	struct mb_query q;
	json_t *results, *r = NULL;
	uint64_t hash, set;

	if (MB_NEVER(limit < 1 || limit > OVERVIEW_MAX_LIMIT)) {
		mb_err_set(err, MB_E_INTERNAL, "limit %" PRId64 ": count_messages.json and "
		    "OVERVIEW_MAX_LIMIT disagree", limit);
		return NULL;
	}
	c = mb_xcalloc(1, sizeof(*c));
	mb_query_init(&q);
	if (mb_count_group_parse(mcp_arg_str(args, "group_by"), &c->g, err) == -1)
		goto out;
	if (text && mb_query_compile(text, strlen(text), &q, &qerr) == -1) {
		mb_err_set(err, MB_E_INVALID, "%s", qerr.msg);
		goto out;
	}
	hash = mb_search_hash(&q) ^ (uint64_t)c->g;
	if (mcp_merge_accounts(srv, who, args, &q, &set, &hash, err) == -1)
		goto out;
	c->n = mcp_merge_parts(srv, set, c->parts);
	if (page_start(srv, args, CURSOR_COUNT, hash, "count_messages", c->parts, c->n,
	    err) == -1 || count_parts(srv, c, &q, (size_t)limit, err) == -1)
		goto out;
	mcp_answer_init(&a);
	results = json_array();
	mcp_merge_take(c->parts, c->n, (size_t)limit, count_before, count_take, results);
	json_object_set_new(a.data, "group_by", json_string(mb_count_group_name(c->g)));
	json_object_set_new(a.data, "total", json_integer(c->total));
	json_object_set_new(a.data, "ungrouped", json_integer(c->ungrouped));
	json_object_set_new(a.data, "groups", json_integer(c->groups));
	json_object_set_new(a.data, "results", results);
	count_text(&a, c, results, page_offset(c->parts, c->n), srv->conf->n_accounts > 1);
	page_more(srv, &a, c->parts, c->n, CURSOR_COUNT, hash, "count_messages");
	r = mcp_answer_result(&a);
out:
	for (size_t i = 0; i < c->n; i++)
		mb_count_page_release(&c->pages[i]);
	mb_query_release(&q);
	free(c);
	return r;
}

/* ---- find_contacts */

static json_t *
contact_json(const struct mb_contact *c, const struct mcp_account *acc)
{
	json_t *o = json_pack("{s:o, s:s, s:[], s:I, s:I, s:I}", "address",
	    mcp_str_json(c->address), "account", acc->name, "names", "received_from",
	    (json_int_t)c->received_from, "sent_to", (json_int_t)c->sent_to, "messages",
	    (json_int_t)c->messages);

	for (size_t i = 0; i < c->n_names; i++)
		json_array_append_new(json_object_get(o, "names"), mcp_str_json(c->names[i]));
	if (c->has_dates) {
		set_date(o, "first_date", c->first_date);
		set_date(o, "last_date", c->last_date);
	}
	return o;
}

/* The engine's order: most mail exchanged, then most messages, then the address. */
static bool
contact_before(const struct mcp_merge_part *pa, const void *va, const struct mcp_merge_part *pb,
    const void *vb)
{
	const struct mb_contact *a = va, *b = vb;
	int k;

	if (a->received_from + a->sent_to != b->received_from + b->sent_to)
		return a->received_from + a->sent_to > b->received_from + b->sent_to;
	if (a->messages != b->messages)
		return a->messages > b->messages;
	k = strcmp(a->address ? a->address : "", b->address ? b->address : "");
	return k != 0 ? k < 0 : pa < pb;
}

/* What a merged contacts page collects: the JSON rows and the fenced text. */
struct contact_out {
	json_t		*results;
	struct mb_buf	 list;
	int64_t		 offset;
	bool		 several;
};

static void
contact_take(const struct mcp_merge_part *p, const void *row, void *vout)
{
	struct contact_out *o = vout;
	const struct mb_contact *c = row;
	struct mb_buf *b = &o->list;

	json_array_append_new(o->results, contact_json(c, p->acc));
	mb_buf_addf(b, "%zu. %s", json_array_size(o->results) + (size_t)o->offset, c->address);
	for (size_t i = 0; i < c->n_names; i++)
		mb_buf_addf(b, "%s%s", i ? ", " : " (", c->names[i]);
	mb_buf_addf(b, "%s: %" PRId64 " from them, %" PRId64 " to them, %" PRId64 " in all%s%s"
	    "%s\n", c->n_names ? ")" : "", c->received_from, c->sent_to, c->messages,
	    o->several ? " (account " : "", o->several ? p->acc->name : "", o->several ? ")" : "");
}

json_t *
mcp_tool_find_contacts(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const char *frag = mcp_arg_str(args, "query");
	int64_t limit = mcp_arg_int(args, "limit");
	struct mcp_merge_part parts[MCP_ACCOUNTS_MAX];
	struct mb_contact_page pages[MCP_ACCOUNTS_MAX];
	struct contact_out o = { .list = MB_BUF_INIT(1u << 20),
	    .several = srv->conf->n_accounts > 1 };
	uint64_t hash = hash_str(0xcbf29ce484222325ull, frag), set;
	struct mcp_answer a;
	json_t *r = NULL;
	size_t n = 0;

	if (MB_NEVER(limit < 1 || limit > OVERVIEW_MAX_LIMIT)) {
		mb_err_set(err, MB_E_INTERNAL, "limit %" PRId64 ": find_contacts.json and "
		    "OVERVIEW_MAX_LIMIT disagree", limit);
		return NULL;
	}
	memset(pages, 0, sizeof(pages));
	if (mcp_merge_accounts(srv, who, args, NULL, &set, &hash, err) == -1)
		goto out;
	n = mcp_merge_parts(srv, set, parts);
	if (page_start(srv, args, CURSOR_CONTACTS, hash, "find_contacts", parts, n, err) == -1)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mb_index *idx = mcp_merge_index(srv, &parts[i], err);

		if (idx == NULL)
			goto out;
		if (mb_overview_contacts(idx, frag, parts[i].offset, (size_t)limit, &pages[i],
		    err) == -1) {
			mcp_index_failure(err);
			goto out;
		}
		mcp_merge_page(&parts[i], pages[i].list, pages[i].n, sizeof(pages[i].list[0]),
		    pages[i].more, pages[i].next_offset);
	}
	mcp_answer_init(&a);
	o.results = json_array();
	o.offset = page_offset(parts, n);
	mcp_merge_take(parts, n, (size_t)limit, contact_before, contact_take, &o);
	json_object_set_new(a.data, "results", o.results);
	if (json_array_size(o.results) == 0)
		mb_buf_addf(&a.text, "%s\n", o.offset > 0 ? "No more people: this was the last "
		    "page." : frag ? "Nobody in the mail has a name or an address containing that; "
		    "try a shorter fragment (a first name, a domain)." : "The index holds no "
		    "addresses.");
	else {
		mb_buf_addf(&a.text, "People %" PRId64 "-%" PRId64 ", most mail exchanged first. %s\n",
		    o.offset + 1, o.offset + (int64_t)json_array_size(o.results), MCP_FENCE_NOTE);
		mcp_fence_add(&a.text, a.nonce, o.list.data, o.list.len);
	}
	page_more(srv, &a, parts, n, CURSOR_CONTACTS, hash, "find_contacts");
	r = mcp_answer_result(&a);
out:
	mb_buf_release(&o.list);
	for (size_t i = 0; i < n; i++)
		mb_contact_page_release(&pages[i]);
	return r;
}

/* ---- awaiting_reply */

static const char *
await_word(enum mb_await_dir d)
{
	return d == MB_AWAIT_ME ? "me" : "others";
}

/* The engine's order: newest first, then the highest thread id (as the caller sees ids). */
static bool
await_before(const struct mcp_merge_part *pa, const void *va, const struct mcp_merge_part *pb,
    const void *vb)
{
	const struct mb_await_thread *a = va, *b = vb;

	if (a->date != b->date)
		return a->date > b->date;
	return mcp_gid(pa->acc, a->thread_id) > mcp_gid(pb->acc, b->thread_id);
}

static void
await_take(const struct mcp_merge_part *p, const void *row, void *results)
{
	const struct mb_await_thread *t = row;
	json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:o, s:I}", "thread_id",
	    (json_int_t)mcp_gid(p->acc, t->thread_id), "account", p->acc->name, "waiting_on",
	    await_word(t->dir), "id", (json_int_t)mcp_gid(p->acc, t->id), "folder",
	    mcp_str_json(t->folder), "messages", (json_int_t)t->messages);

	set_date(o, "date", t->date);
	set_opt_str(o, "from", t->from);
	set_opt_str(o, "to", t->to);
	set_opt_str(o, "subject", t->subject);
	json_array_append_new(results, o);
}

static void
await_text(struct mcp_answer *a, json_t *results, int64_t offset, long long days, bool several)
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
		if (several)
			mb_buf_addf(&a->text, "account %s | ",
			    json_string_value(json_object_get(t, "account")));
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
	int64_t limit = mcp_arg_int(args, "limit"), days = mcp_arg_int(args, "days");
	unsigned dirs = MB_AWAIT_OTHERS | MB_AWAIT_ME;
	struct mcp_merge_part parts[MCP_ACCOUNTS_MAX];
	struct mb_await_page pages[MCP_ACCOUNTS_MAX];
	struct mb_buf unknown = MB_BUF_INIT(4096);	/* accounts left out, comma-separated */
	struct mcp_answer a;
	json_t *results, *r = NULL;
	uint64_t hash, set;
	size_t n = 0;

	if (dir && strcmp(dir, "others") == 0)
		dirs = MB_AWAIT_OTHERS;
	else if (dir && strcmp(dir, "me") == 0)
		dirs = MB_AWAIT_ME;
	if (MB_NEVER(limit < 1 || limit > OVERVIEW_MAX_LIMIT || days < 0 || days > 36500)) {
		mb_err_set(err, MB_E_INTERNAL, "limit or days: awaiting_reply.json and mcpd "
		    "disagree");
		return NULL;
	}
	memset(pages, 0, sizeof(pages));
	hash = ((uint64_t)days << 2 | dirs) * 0x100000001b3ull;
	if (mcp_merge_accounts(srv, who, args, NULL, &set, &hash, err) == -1)
		goto out;
	n = mcp_merge_parts(srv, set, parts);
	if (page_start(srv, args, CURSOR_AWAIT, hash, "awaiting_reply", parts, n, err) == -1)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mb_index *idx = mcp_merge_index(srv, &parts[i], err);

		if (idx == NULL)
			goto out;
		if (mb_overview_awaiting(idx, dirs, (int64_t)time(NULL) - days * 86400,
		    parts[i].offset, (size_t)limit, &pages[i], err) == -1) {
			if (err->code != MB_E_CONFIG) {
				mcp_index_failure(err);
				goto out;
			}
			/*
			 * No own address: one account without them must not take
			 * the others' answer away, so beside others it is left out
			 * and named; alone it is the error, said for the operator.
			 */
			if (n == 1) {
				err->code = MB_E_INVALID;
				goto out;
			}
			mb_buf_addf(&unknown, "%s%s", unknown.len ? ", " : "", parts[i].acc->name);
			mb_err_clear(err);
		}
		mcp_merge_page(&parts[i], pages[i].list, pages[i].n, sizeof(pages[i].list[0]),
		    pages[i].more, pages[i].next_offset);
	}
	mcp_answer_init(&a);
	results = json_array();
	mcp_merge_take(parts, n, (size_t)limit, await_before, await_take, results);
	json_object_set_new(a.data, "results", results);
	await_text(&a, results, page_offset(parts, n), (long long)days, srv->conf->n_accounts > 1);
	if (unknown.len)
		mb_buf_addf(&a.text, "Left out: account %s, whose own addresses the index does not "
		    "know (syncd records them from IMAP_USER when it is an address, DRAFT_FROM and "
		    "MY_ADDRESSES), so whose turn a conversation is cannot be told there.\n",
		    unknown.data);
	page_more(srv, &a, parts, n, CURSOR_AWAIT, hash, "awaiting_reply");
	r = mcp_answer_result(&a);
out:
	mb_buf_release(&unknown);
	for (size_t i = 0; i < n; i++)
		mb_await_page_release(&pages[i]);
	return r;
}
