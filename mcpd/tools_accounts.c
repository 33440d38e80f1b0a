/*
 * list_accounts: the accounts the caller may read (docs/mcpd.md,
 * "Accounts"), each with its number, sizes, newest message, whether the
 * caller may write it and its last sync; no path or socket is shown.
 */
#include <inttypes.h>
#include <stdio.h>

#include "mailbox/buf.h"
#include "mailbox/read.h"
#include "mcpd.h"

struct accounts_ctx {
	json_t			*list;	/* the entries so far */
	const struct mcp_caller	*who;
};

/* One account's entry, appended to the list. */
static int
account_of(struct mcp_server *srv, const struct mcp_account *acc, struct mb_index *idx,
    void *vctx, struct mb_err *err)
{
	const struct accounts_ctx *c = vctx;
	const struct mcp_caller *who = c->who;
	json_t *list = c->list, *o;
	struct mb_read_folder *folders;
	struct mb_read_recent *newest;
	int64_t messages = 0, last_sync = 0;
	size_t n, n_newest;
	bool more;

	if (mb_read_folders(idx, &folders, &n, err) == -1) {
		mcp_index_failure(err);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		messages += folders[i].messages;
		if (folders[i].last_sync > last_sync)
			last_sync = folders[i].last_sync;
	}
	mb_read_folders_free(&folders, n);
	if (mb_read_recent(idx, 0, 1, &newest, &n_newest, &more, err) == -1) {
		mcp_index_failure(err);
		return -1;
	}
	o = json_pack("{s:s, s:I, s:I, s:I, s:b}", "name", acc->name, "number",
	    (json_int_t)acc->number, "messages", (json_int_t)messages, "folders", (json_int_t)n,
	    "may_write", acc->syncd_socket != NULL &&
	    (mcp_may_write(srv->conf, who) >> (acc - srv->conf->accounts) & 1));
	if (n_newest > 0 && newest[0].has_date)
		json_object_set_new(o, "newest", mcp_date_json(true, newest[0].date));
	if (last_sync > 0)
		json_object_set_new(o, "last_sync", mcp_date_json(true, last_sync));
	mb_read_recent_free(&newest, n_newest);
	json_array_append_new(list, o);
	return 0;
}

json_t *
mcp_tool_list_accounts(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	json_t *list = json_array(), *e;
	struct accounts_ctx ctx = { .list = list, .who = who };
	struct mcp_answer a;
	size_t i;

	(void)args;
	if (mcp_each_account(srv, mcp_may_read(srv->conf, who), account_of, &ctx, err) == -1) {
		json_decref(list);
		return NULL;
	}
	mcp_answer_init(&a);
	json_object_set_new(a.data, "accounts", list);
	mb_buf_addf(&a.text, "%zu account(s); an id of account number N is N x 1000000000000 + "
	    "its id in that account:\n", json_array_size(list));
	json_array_foreach(list, i, e) {
		json_t *nw = json_object_get(e, "newest"), *ls = json_object_get(e, "last_sync");

		mb_buf_addf(&a.text, "- %s (number %" JSON_INTEGER_FORMAT "): %" JSON_INTEGER_FORMAT
		    " messages in %" JSON_INTEGER_FORMAT " folders, newest %s, %s, last sync %s\n",
		    json_string_value(json_object_get(e, "name")),
		    json_integer_value(json_object_get(e, "number")),
		    json_integer_value(json_object_get(e, "messages")),
		    json_integer_value(json_object_get(e, "folders")),
		    json_is_string(nw) ? json_string_value(nw) : "none",
		    json_is_true(json_object_get(e, "may_write")) ? "writable" : "read-only",
		    json_is_string(ls) ? json_string_value(ls) : "never");
	}
	return mcp_answer_result(&a);
}
