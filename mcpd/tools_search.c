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

/* One hit as structured data. */
static json_t *
hit_json(const struct mb_search_hit *h)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o}",
	    "id", (json_int_t)h->id, "folder", mcp_str_json(h->folder),
	    "date", mcp_date_json(h->has_date, h->date), "from", mcp_str_json(h->from),
	    "to", mcp_str_json(h->to), "subject", mcp_str_json(h->subject),
	    "flags", mcp_flag_list(h->flags), "attachment_count", (json_int_t)h->attachment_count,
	    "thread_id", (json_int_t)h->thread_id,
	    "snippet", h->snippet ? mcp_json_text(h->snippet, h->snippet_len) : json_null());
}

/* The text block of a search answer, from its structured results. */
static void
search_text(struct mcp_answer *a, json_t *results, int64_t offset)
{
	static const char *const keys[] = { "from", "to", "subject", "snippet" };
	static const char *const labels[] = { "From", "To", "Subject", "Snippet" };
	size_t n = json_array_size(results);

	if (n == 0)
		mb_buf_addf(&a->text, "%s",
		    offset > 0 ? "No more results: this was the last page.\n" :
		    "No messages matched. Try fewer or different words, a prefix (e.g. meet* for "
		    "meeting/meetings), fewer filters, or another folder (list_folders names "
		    "them).\n");
	else
		mb_buf_addf(&a->text, "Results %lld-%lld, best match first. %s\n\n",
		    (long long)offset + 1, (long long)offset + (long long)n, MCP_FENCE_NOTE);
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_array_get(results, i);
		json_t *d = json_object_get(h, "date");

		mb_buf_addf(&a->text, "%zu. id %" JSON_INTEGER_FORMAT " | ",
		    (size_t)offset + i + 1, json_integer_value(json_object_get(h, "id")));
		mcp_fence_inline(&a->text, json_string_value(json_object_get(h, "folder")));
		mb_buf_addf(&a->text, " | %s | ", json_is_string(d) ? json_string_value(d) : "no date");
		mcp_add_flags_text(&a->text, json_object_get(h, "flags"));
		mb_buf_addf(&a->text, " | attachments: %" JSON_INTEGER_FORMAT "\n",
		    json_integer_value(json_object_get(h, "attachment_count")));
		mcp_add_fenced_fields(a, h, keys, labels, MB_ARRAY_LEN(keys));
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
	search_text(&a, results, offset);
	if (n == 0 && offset == 0)
		json_object_set_new(a.data, "hint", json_string("no messages matched: try fewer "
		    "words, a prefix (meet*), or another folder"));
	if (pg->capped && n > 0) {
		json_object_set_new(a.data, "ranked_newest", json_integer(MB_SEARCH_RANK_CAP));
		mb_buf_addf(&a.text, "\nThese words match more than %d messages: only the newest "
		    "%d matches were ranked. Add words or filters (after:, from:, folder:) to reach "
		    "older mail.\n", MB_SEARCH_RANK_CAP, MB_SEARCH_RANK_CAP);
	}
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
	} else
		mcp_index_failure(err);
	mb_search_page_release(&pg);
	mb_query_release(&q);
	return r;
}
