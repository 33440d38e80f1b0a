/*
 * search_messages: the arguments checked against its schema, the search
 * engine asked (mailbox/search.h), and the page answered as an MCP result:
 * hits as data in structuredContent and, fenced (fence.c), in the text block.
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
hit_attachment(json_t *j, const struct mb_search_hit *h)
{
	json_t *a;

	if (h->att_id == 0)
		return;
	a = json_pack("{s:I, s:s}", "id", (json_int_t)h->att_id, "matched",
	    h->att_by_name ? "name" : "text");
	if (h->att_name != NULL)
		json_object_set_new(a, "name", mcp_str_json(h->att_name));
	if (h->att_snippet != NULL)
		json_object_set_new(a, "snippet", mcp_str_json(h->att_snippet));
	json_object_set_new(j, "attachment", a);
}

/* One hit as structured data. */
static json_t *
hit_json(const struct mb_search_hit *h)
{
	json_t *from, *to, *o;

	/* The display strings only: a hit stays short, get_message has the lists. */
	json_decref(mcp_addr_one_json(h->from_name, h->from_addr, &from));
	json_decref(mcp_addr_list_json(h->to_json, &to));
	if (json_is_null(from) && h->from != NULL) {
		json_decref(from);
		from = mcp_str_json(h->from);
	}
	o = json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o}",
	    "id", (json_int_t)h->id, "folder", mcp_str_json(h->folder),
	    "date", mcp_date_json(h->has_date, h->date), "from", from,
	    "to", to, "subject", mcp_str_json(h->subject),
	    "flags", mcp_flag_list(h->flags), "labels", labels_json(h),
	    "attachment_count", (json_int_t)h->attachment_count,
	    "thread_id", (json_int_t)h->thread_id,
	    "snippet", h->snippet ? mcp_json_text(h->snippet, h->snippet_len) : json_null());
	mcp_set_optional(o, "message_id", h->message_id);
	if (h->has_received)
		json_object_set_new(o, "received", mcp_date_json(true, h->received));
	if (h->has_date || h->has_received)
		json_object_set_new(o, "date_used", json_string(h->dated_by_header ? "date" :
		    "received"));
	hit_attachment(o, h);
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
total_text(struct mb_buf *b, const struct mb_search_page *pg)
{
	mb_buf_addf(b, "%s%lld message%s match%s.", pg->total_exact ? "" : "At least ",
	    (long long)pg->total, pg->total == 1 ? "" : "s", pg->total == 1 ? "es" : "");
}

/* The text block of a search answer, from its structured results. */
static void
search_text(struct mcp_answer *a, json_t *results, int64_t offset,
    const struct mb_search_page *pg)
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
		total_text(&a->text, pg);
		mb_buf_addf(&a->text, " Results %lld-%lld, best match first. %s\n\n",
		    (long long)offset + 1, (long long)offset + (long long)n, MCP_FENCE_NOTE);
	}
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_array_get(results, i);
		json_t *d = json_object_get(h, "date");
		json_t *att, *flat = NULL;

		mb_buf_addf(&a->text, "%zu. id %" JSON_INTEGER_FORMAT " | ",
		    (size_t)offset + i + 1, json_integer_value(json_object_get(h, "id")));
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

/* The CallToolResult for a page. */
static json_t *
search_answer(struct mcp_server *srv, const struct mb_search_page *pg, int64_t offset,
    uint64_t qhash)
{
	struct mcp_answer a;
	json_t *results = json_array();
	size_t n = pg->n;

	for (size_t i = 0; i < pg->n; i++)
		json_array_append_new(results, hit_json(&pg->hits[i]));
	mcp_answer_init(&a);
	json_object_set_new(a.data, "results", results);
	json_object_set_new(a.data, "total", json_integer(pg->total));
	json_object_set_new(a.data, "total_exact", json_boolean(pg->total_exact));
	search_text(&a, results, offset, pg);
	if (n == 0 && offset == 0)
		json_object_set_new(a.data, "hint", json_string("no messages matched: try fewer "
		    "words, a prefix (meet*), or another folder"));
	if (pg->more) {
		char *c = mcp_cursor_make(srv, 's', pg->next_offset, qhash);

		json_object_set_new(a.data, "next_cursor", json_string(c));
		mb_buf_addf(&a.text, "\nMore results: call search_messages again with the same "
		    "arguments and cursor \"%s\".\n", c);
		free(c);
	}
	return mcp_add_message_links(mcp_answer_result(&a), results);
}

/* Compile the (checked) arguments into q (and *offset_r, *limit_r, *qhash_r);
 * -1 + err (MB_E_INVALID) when they make no search (q is then released). */
static int
search_args(struct mcp_server *srv, json_t *args, struct mb_query *q, int64_t *offset_r,
    long long *limit_r, uint64_t *qhash_r, struct mb_err *err)
{
	const char *text = mcp_arg_str(args, "query"), *cursor = mcp_arg_str(args, "cursor");
	struct mb_err qerr = { 0 };
	uint64_t chash;

	mb_query_init(q);
	*offset_r = 0;
	*limit_r = mcp_arg_int(args, "limit");
	if (MB_NEVER(*limit_r < 1 || *limit_r > SEARCH_MAX_LIMIT))	/* the page arrays */
		return mb_err_set(err, MB_E_INTERNAL, "limit %lld: search_messages.json and "
		    "SEARCH_MAX_LIMIT disagree", *limit_r);
	if (text && mb_query_compile(text, strlen(text), q, &qerr) == -1)
		return mb_err_set(err, MB_E_INVALID, "%s", qerr.msg);
	if (structured_filters(args, q, err) == -1) {
		mb_query_release(q);
		return -1;
	}
	if (mb_query_empty(q)) {
		mb_query_release(q);
		return mb_err_set(err, MB_E_INVALID, "nothing to search for: give query some words "
		    "(e.g. \"invoice\", \"meeting notes\", \"budg*\") or a filter (folder:INBOX, "
		    "from:alice, after:2024-01-01, is:unread)");
	}
	*qhash_r = mb_search_hash(q);
	if (cursor) {
		if (mcp_cursor_parse(srv, cursor, 's', offset_r, &chash) == -1) {
			mb_query_release(q);
			return mb_err_set(err, MB_E_INVALID, "invalid cursor: pass next_cursor exactly "
			    "as the previous search_messages answer gave it, or leave cursor out for "
			    "the first page");
		}
		if (chash != *qhash_r) {
			mb_query_release(q);
			return mb_err_set(err, MB_E_INVALID, "this cursor belongs to a different "
			    "search: repeat the same query and filters with it, or leave cursor out "
			    "to start over");
		}
	}
	return 0;
}

json_t *
mcp_tool_search_messages(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_query q;
	struct mb_search_page pg;
	struct mb_index *idx;
	long long limit;
	int64_t offset;
	uint64_t qhash = 0;
	json_t *r = NULL;

	if (search_args(srv, args, &q, &offset, &limit, &qhash, err) == -1)
		return NULL;
	idx = mcp_server_index(srv, err);
	if (idx == NULL) {
		mb_query_release(&q);
		return mcp_index_unavailable(err);
	}
	if (mb_search_run(idx, &q, offset, (size_t)limit, &pg, err) == 0)
		r = search_answer(srv, &pg, offset, qhash);
	else if (err->code == MB_E_NOTFOUND && q.folder) {
		mb_err_clear(err);
		mb_err_set(err, MB_E_NOTFOUND, "there is no folder named \"%.100s\"; "
		    "list_folders shows the folder names", q.folder);
	} else if (err->code != MB_E_NOTFOUND)	/* a role or from:me: the index's words */
		mcp_index_failure(err);
	mb_search_page_release(&pg);
	mb_query_release(&q);
	return r;
}
