/*
 * search_messages: the arguments checked against its schema, the search
 * engine of each account asked (mailbox/search.h), the pages merged by the
 * engine's own order, and the page answered as an MCP result: hits as data
 * in structuredContent and, fenced (fence.c), in the text block.
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

#define SEARCH_MAX_LIMIT	50	/* = search_messages.json's limit maximum */

/* ---- search_messages */

_Static_assert(SEARCH_MAX_LIMIT <= MB_SEARCH_MAX_LIMIT, "a page the engine cannot give");

/* Add the structured filters (checked arguments) to q; -1 + err (MB_E_INVALID) on a bad value. */
static int
structured_filters(json_t *args, struct mb_query *q, struct mb_err *err)
{
	struct mb_search_filters f = {
		.folder = mcp_arg_str(args, "folder"), .from = mcp_arg_str(args, "from"),
		.since = mcp_arg_str(args, "since"), .until = mcp_arg_str(args, "until"),
	};

	return mb_search_narrow(q, &f, err);
}

/* A hit's labels (IMAP keywords) as a JSON array of strings. */
static json_t *
labels_json(const struct mb_search_hit *h)
{
	json_t *a = json_array();

	for (size_t i = 0; i < h->n_labels; i++)
		json_array_append_new(a, mcp_str_json(h->labels[i]));
	return a;
}

/*
 * The attachment a hit matched in (docs/attachments.md): its id for
 * get_attachment, its name and a snippet of its text when it has them.
 */
static void
hit_attachment(json_t *j, const struct mb_search_hit *h, const struct mcp_account *acc)
{
	json_t *a;

	if (h->att_id == 0)
		return;
	a = json_pack("{s:I, s:s}", "id", (json_int_t)mcp_gid(acc, h->att_id), "matched",
	    h->att_by_name ? "name" : "text");
	if (h->att_name != NULL)
		json_object_set_new(a, "name", mcp_str_json(h->att_name));
	if (h->att_snippet != NULL)
		json_object_set_new(a, "snippet", mcp_str_json(h->att_snippet));
	json_object_set_new(j, "attachment", a);
}

/* One hit of account acc as structured data. */
static json_t *
hit_json(const struct mb_search_hit *h, const struct mcp_account *acc)
{
	json_t *from, *to, *o;

	/* The display strings only: a hit stays short, get_message has the lists. */
	json_decref(mcp_addr_one_json(h->from_name, h->from_addr, &from));
	json_decref(mcp_addr_list_json(h->to_json, &to));
	if (json_is_null(from) && h->from != NULL) {
		json_decref(from);
		from = mcp_str_json(h->from);
	}
	o = json_pack("{s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o}",
	    "id", (json_int_t)mcp_gid(acc, h->id), "account", acc->name,
	    "folder", mcp_str_json(h->folder),
	    "date", mcp_date_json(h->has_date, h->date), "from", from,
	    "to", to, "subject", mcp_str_json(h->subject),
	    "flags", mcp_flag_list(h->flags), "labels", labels_json(h),
	    "attachment_count", (json_int_t)h->attachment_count,
	    "thread_id", (json_int_t)mcp_gid(acc, h->thread_id),
	    "snippet", h->snippet ? mcp_json_text(h->snippet, h->snippet_len) : json_null());
	mcp_set_optional(o, "message_id", h->message_id);
	if (h->has_received)
		json_object_set_new(o, "received", mcp_date_json(true, h->received));
	if (h->has_date || h->has_received)
		json_object_set_new(o, "date_used", json_string(h->dated_by_header ? "date" :
		    "received"));
	hit_attachment(o, h, acc);
	return o;
}

/*
 * " | labels: \"a\", \"b\"" when the hit has any.  Keywords are IMAP atoms set
 * by the user's mail clients, not text of the mail, so they stand outside the
 * fence, quoted as every mailbox string there is (fence.c); one that is not a
 * short printable ASCII atom is left to structuredContent, where it is data.
 */
static void
labels_text(struct mb_buf *b, json_t *labels)
{
	size_t i, n = 0;
	json_t *l;

	json_array_foreach(labels, i, l) {
		const char *s = json_string_value(l);
		size_t k;

		for (k = 0; s[k] != '\0' && k <= 64 && s[k] > ' ' && s[k] < 0x7f; k++)
			;
		if (s[k] != '\0')
			continue;
		mb_buf_adds(b, n++ == 0 ? " | labels: " : ", ");
		mcp_fence_inline(b, s);	/* set by mail clients, from the mailbox: quoted */
	}
}

/* "312 messages match." or "At least 10000 messages match." */
static void
total_text(struct mb_buf *b, int64_t total, bool exact)
{
	mb_buf_addf(b, "%s%lld message%s match%s.", exact ? "" : "At least ",
	    (long long)total, total == 1 ? "" : "s", total == 1 ? "es" : "");
}

/* The text block of a search answer, from its structured results. */
static void
search_text(struct mcp_answer *a, json_t *results, int64_t offset, int64_t total, bool exact,
    bool several)
{
	static const char *const keys[] = { "from", "to", "subject", "snippet", "att_name",
	    "att_snippet" };
	static const char *const labels[] = { "From", "To", "Subject", "Snippet", "Attachment",
	    "Attachment snippet" };
	size_t n = json_array_size(results);

	if (n == 0)
		mb_buf_addf(&a->text, "%s",
		    offset > 0 ? "No more results: this was the last page.\n" :
		    "No messages matched. Try fewer or different words, a prefix (e.g. meet* for "
		    "meeting/meetings), fewer filters, or another folder (list_folders names "
		    "them).\n");
	else {
		total_text(&a->text, total, exact);
		mb_buf_addf(&a->text, " Results %lld-%lld, best match first. %s\n\n",
		    (long long)offset + 1, (long long)offset + (long long)n, MCP_FENCE_NOTE);
	}
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_array_get(results, i);
		json_t *d = json_object_get(h, "date");
		json_t *att, *flat = NULL;

		mb_buf_addf(&a->text, "%zu. id %" JSON_INTEGER_FORMAT " | ",
		    (size_t)offset + i + 1, json_integer_value(json_object_get(h, "id")));
		if (several)	/* account names are the operator's, not mail */
			mb_buf_addf(&a->text, "account %s | ",
			    json_string_value(json_object_get(h, "account")));
		mcp_fence_inline(&a->text, json_string_value(json_object_get(h, "folder")));
		mb_buf_addf(&a->text, " | %s | ", json_is_string(d) ? json_string_value(d) : "no date");
		mcp_add_flags_text(&a->text, json_object_get(h, "flags"));
		labels_text(&a->text, json_object_get(h, "labels"));
		mb_buf_addf(&a->text, " | attachments: %" JSON_INTEGER_FORMAT,
		    json_integer_value(json_object_get(h, "attachment_count")));
		att = json_object_get(h, "attachment");
		if (att != NULL) {
			/* The attachment's strings are mail: fenced with the rest. */
			mb_buf_addf(&a->text, " | matched in the %s of attachment id %"
			    JSON_INTEGER_FORMAT " (read it with get_attachment)",
			    json_string_value(json_object_get(att, "matched")),
			    json_integer_value(json_object_get(att, "id")));
			flat = json_copy(h);
			json_object_set(flat, "att_name", json_object_get(att, "name"));
			json_object_set(flat, "att_snippet", json_object_get(att, "snippet"));
		}
		mb_buf_addc(&a->text, '\n');
		mcp_add_fenced_fields(a, flat != NULL ? flat : h, keys, labels, MB_ARRAY_LEN(keys));
		json_decref(flat);
	}
}

/* A search over the caller's accounts. */
struct search_run {
	struct mb_query		 q;
	uint64_t		 set;		/* the accounts searched */
	struct mcp_merge_part	 parts[MCP_ACCOUNTS_MAX];	/* one per account in set */
	struct mb_search_page	 pages[MCP_ACCOUNTS_MAX];	/* parts[i]'s rows */
	size_t			 n_parts;
	long long		 limit;
	uint64_t		 qhash;		/* q, the caller's accounts and set */
};

/*
 * Whether hit a (of part pa) comes before hit b (of pb) in the engine's
 * order: score, then the newest sort date (none last), then the highest id
 * as the caller sees ids.
 */
static bool
hit_before(const struct mcp_merge_part *pa, const void *va, const struct mcp_merge_part *pb,
    const void *vb)
{
	const struct mb_search_hit *a = va, *b = vb;

	if (a->score != b->score)
		return a->score < b->score;
	if (a->has_sort_date != b->has_sort_date)
		return a->has_sort_date;
	if (a->has_sort_date && a->sort_date != b->sort_date)
		return a->sort_date > b->sort_date;
	return mcp_gid(pa->acc, a->id) > mcp_gid(pb->acc, b->id);
}

static void
hit_take(const struct mcp_merge_part *p, const void *row, void *results)
{
	json_array_append_new(results, hit_json(row, p->acc));
}

/* The CallToolResult for the merged page of r's parts. */
static json_t *
search_answer(struct mcp_server *srv, struct search_run *r)
{
	struct mcp_answer a;
	json_t *results = json_array();
	int64_t offset = 0, total = 0, next[MCP_ACCOUNTS_MAX];
	bool exact = true, more;
	size_t n;

	for (size_t i = 0; i < r->n_parts; i++) {
		struct mcp_merge_part *p = &r->parts[i];

		offset += p->offset;
		total += r->pages[i].total;
		exact &= r->pages[i].total_exact;
		mcp_merge_page(p, r->pages[i].hits, r->pages[i].n, sizeof(r->pages[i].hits[0]),
		    r->pages[i].more, r->pages[i].next_offset);
	}
	n = mcp_merge_take(r->parts, r->n_parts, (size_t)r->limit, hit_before, hit_take, results);
	more = mcp_merge_next(r->parts, r->n_parts, next);
	mcp_answer_init(&a);
	json_object_set_new(a.data, "results", results);
	json_object_set_new(a.data, "total", json_integer(total));
	json_object_set_new(a.data, "total_exact", json_boolean(exact));
	search_text(&a, results, offset, total, exact, srv->conf->n_accounts > 1);
	if (n == 0 && offset == 0)
		json_object_set_new(a.data, "hint", json_string("no messages matched: try fewer "
		    "words, a prefix (meet*), or another folder"));
	if (more) {
		char *c = mcp_cursor_make_multi(srv, 's', next, r->n_parts, r->qhash);

		json_object_set_new(a.data, "next_cursor", json_string(c));
		mb_buf_addf(&a.text, "\nMore results: call search_messages again with the same "
		    "arguments and cursor \"%s\".\n", c);
		free(c);
	}
	return mcp_add_message_links(mcp_answer_result(&a), results);
}

/* Compile the (checked) arguments into r (q, the accounts, their offsets, limit,
 * qhash); -1 + err (MB_E_INVALID) when they make no search (r->q is then released). */
static int
search_args(struct mcp_server *srv, const struct mcp_caller *who, json_t *args,
    struct search_run *r, struct mb_err *err)
{
	const char *text = mcp_arg_str(args, "query"), *cursor = mcp_arg_str(args, "cursor");
	int64_t offsets[MCP_ACCOUNTS_MAX] = { 0 };
	struct mb_err qerr = { 0 };
	uint64_t chash;

	mb_query_init(&r->q);
	r->limit = mcp_arg_int(args, "limit");
	if (MB_NEVER(r->limit < 1 || r->limit > SEARCH_MAX_LIMIT))	/* the page arrays */
		return mb_err_set(err, MB_E_INTERNAL, "limit %lld: search_messages.json and "
		    "SEARCH_MAX_LIMIT disagree", r->limit);
	if (text && mb_query_compile(text, strlen(text), &r->q, &qerr) == -1)
		return mb_err_set(err, MB_E_INVALID, "%s", qerr.msg);
	if (structured_filters(args, &r->q, err) == -1) {
		mb_query_release(&r->q);
		return -1;
	}
	r->qhash = mb_search_hash(&r->q);	/* with thread:N as given, before it is local */
	if (mcp_merge_accounts(srv, who, args, &r->q, &r->set, &r->qhash, err) == -1) {
		mb_query_release(&r->q);
		return -1;
	}
	r->n_parts = mcp_merge_parts(srv, r->set, r->parts);
	if (mb_query_empty(&r->q)) {
		mb_query_release(&r->q);
		return mb_err_set(err, MB_E_INVALID, "nothing to search for: give query some words "
		    "(e.g. \"invoice\", \"meeting notes\", \"budg*\") or a filter (folder:INBOX, "
		    "from:alice, after:2024-01-01, is:unread)");
	}
	if (cursor) {
		if (mcp_cursor_parse_multi(srv, cursor, 's', offsets, r->n_parts, &chash) == -1) {
			mb_query_release(&r->q);
			return mb_err_set(err, MB_E_INVALID, "invalid cursor: pass next_cursor exactly "
			    "as the previous search_messages answer gave it, or leave cursor out for "
			    "the first page");
		}
		if (chash != r->qhash) {
			mb_query_release(&r->q);
			return mb_err_set(err, MB_E_INVALID, "this cursor belongs to a different "
			    "search: repeat the same query and filters with it, or leave cursor out "
			    "to start over");
		}
	}
	for (size_t i = 0; i < r->n_parts; i++)
		r->parts[i].offset = offsets[i];
	return 0;
}

/*
 * Each account's page.  An account without the query's folder (or role, or
 * own address) has no hit; only when every account lacks it is it an error,
 * the first account's.
 */
static int
search_parts(struct mcp_server *srv, struct search_run *r, struct mb_err *err)
{
	struct mb_err missing = { 0 };
	size_t n_missing = 0;

	for (size_t i = 0; i < r->n_parts; i++) {
		struct mb_index *idx = mcp_merge_index(srv, &r->parts[i], err);

		if (idx == NULL)
			return -1;
		if (mb_search_run(idx, &r->q, r->parts[i].offset, (size_t)r->limit, &r->pages[i],
		    err) == 0)
			continue;
		if (err->code != MB_E_NOTFOUND)
			return -1;
		if (n_missing++ == 0)
			missing = *err;
		mb_err_clear(err);
		mb_search_page_release(&r->pages[i]);
	}
	if (n_missing > 0 && n_missing == r->n_parts) {
		*err = missing;
		return -1;
	}
	return 0;
}

json_t *
mcp_tool_search_messages(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct search_run *r = mb_xcalloc(1, sizeof(*r));
	json_t *res = NULL;

	if (search_args(srv, who, args, r, err) == -1) {
		free(r);
		return NULL;
	}
	if (search_parts(srv, r, err) == 0)
		res = search_answer(srv, r);
	else if (err->code == MB_E_NOTFOUND && r->q.folder) {
		mb_err_clear(err);
		mb_err_set(err, MB_E_NOTFOUND, "there is no folder named \"%.100s\"; "
		    "list_folders shows the folder names", r->q.folder);
	} else if (err->code != MB_E_NOTFOUND && err->code != MB_E_TEMP)
		mcp_index_failure(err);	/* NOTFOUND: a role or from:me: the index's words */
	for (size_t i = 0; i < r->n_parts; i++)
		mb_search_page_release(&r->pages[i]);
	mb_query_release(&r->q);
	free(r);
	return res;
}
