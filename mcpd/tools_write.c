/*
 * The write tools (docs/writes.md): flag_message, move_message,
 * trash_message, create_draft and label_message are forwarded to syncd over its control socket (mcpd holds
 * no credential and cannot reach IMAP); list_recent_writes reads write_log.
 * With MCP_READ_ONLY=1 the write tools do not exist; a token without the
 * write scope does not see them and cannot call them (tool_table.c sees to
 * both).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mailbox/ctl.h"
#include "mailbox/index_audit.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mcpd.h"

#define CTL_TIMEOUT_S	60	/* syncd's own write deadline is shorter (SYNC_WRITE_TIMEOUT) */

/*
 * ["\\Seen", "flagged", ...] (either spelling, any case) to bits; -1 with
 * *bad naming the refused flag.  \\Deleted passes: syncd refuses it and logs
 * the attempt.  \\Draft does not: only a draft is saved with it.
 */
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
		enum mb_flag bit = mb_flag_parse(s);

		if (s == NULL) {
			*bad = "(not a string)";
			return -1;
		}
		if (bit == 0 || bit == MB_FLAG_DRAFT) {
			*bad = s;
			return -1;
		}
		*bits_r |= bit;
	}
	return 0;
}

/*
 * Hand rq to acc's syncd: its answer as the CallToolResult, or NULL + err
 * (MB_E_TEMP).  The reply's message id is acc's, shown as mcpd's id.
 */
static json_t *
forward(const struct mcp_account *acc, const struct mb_ctl_request_view *rq,
    struct mb_err *err)
{
	struct mb_ctl_reply rp;
	struct mb_err e = { 0 };
	json_t *data, *r;

	if (mcp_ctl_call(acc->syncd_socket, rq, CTL_TIMEOUT_S, &rp, &e) == -1) {
		mb_log_warnx("%s: %s", mb_ctl_op_name(rq->op), e.msg);
		/* syncd's words are for the operator and the model alike (no secret, no path
		 * but SYNCD_SOCKET's): say them, whatever went wrong */
		mb_err_set(err, MB_E_TEMP, "the write could not be handed to syncd: %s", e.msg);
		return NULL;
	}
	data = json_pack("{s:s, s:o, s:I, s:s}", "outcome", mb_ctl_outcome_name(rp.outcome),
	    "detail", mcp_str_json(rp.detail), "write_log_id", (json_int_t)rp.log_id,
	    "account", acc->name);
	json_object_set_new(data, "id", rp.message_id ? json_integer(mcp_gid(acc,
	    rp.message_id)) : json_null());
	json_object_set_new(data, "folder", mcp_str_json(rp.folder));
	if ((rq->op == MB_CTL_FLAG && rp.outcome == MB_CTL_OK) || rp.keywords != NULL)
		/* the words search and get_message use, not the IMAP names */
		json_object_set_new(data, "flags", mcp_flag_list(rp.flags));
	if (rp.keywords != NULL)	/* label_message: as get_message shows them */
		json_object_set_new(data, "labels", mcp_label_list(rp.keywords));
	{
		struct mb_buf text = MB_BUF_INIT(4096);

		/* syncd's detail names folders, and folder names come from the mailbox:
		 * both quoted (fence.c) */
		mb_buf_addf(&text, "%s%s: %s: ", mb_ctl_op_name(rq->op), acc->tag,
		    mb_ctl_outcome_name(rp.outcome));
		mcp_fence_inline(&text, rp.detail);
		if (rp.folder) {
			mb_buf_adds(&text, "; folder: ");
			mcp_fence_inline(&text, rp.folder);
		}
		r = json_pack("{s:[{s:s, s:s%}], s:o, s:b}", "content", "type", "text", "text",
		    text.data, text.len, "structuredContent", data, "isError",
		    rp.outcome != MB_CTL_OK);
		mb_buf_release(&text);
	}
	mb_ctl_reply_release(&rp);
	return r;
}

/*
 * An array of addresses (checked: strings, at most maxItems) into *v_r
 * (borrowed strings; the array is the caller's, also on error).  -1 + err
 * when one cannot go on the wire.
 */
static int
draft_addresses(json_t *args, const char *key, const char ***v_r, uint32_t *n_r,
    struct mb_err *err)
{
	json_t *a = json_object_get(args, key), *v;
	size_t i;

	*v_r = NULL;
	*n_r = 0;
	if (a == NULL)
		return 0;
	if (json_array_size(a) > MB_CTL_RCPT_MAX)
		return mb_err_set(err, MB_E_INVALID, "create_draft: %s must be an array of at "
		    "most %d email addresses", key, MB_CTL_RCPT_MAX);
	*v_r = mb_xcalloc(json_array_size(a) + 1, sizeof(**v_r));
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (*s == '\0' || json_string_length(v) > MB_CTL_LINE_MAX ||
		    strlen(s) != json_string_length(v))
			return mb_err_set(err, MB_E_INVALID, "create_draft: %s[%zu] must be an "
			    "email address (name@example.org or Name <name@example.org>)", key, i);
		(*v_r)[(*n_r)++] = s;
	}
	return 0;
}

/* create_draft's (checked) arguments into rq (borrowed from args); -1 + err. */
static int
draft_request(json_t *args, struct mb_ctl_request_view *rq, struct mb_err *err)
{
	json_t *v;

	rq->op = MB_CTL_DRAFT;
	if (draft_addresses(args, "to", &rq->to, &rq->n_to, err) == -1 ||
	    draft_addresses(args, "cc", &rq->cc, &rq->n_cc, err) == -1)
		return -1;
	if ((v = json_object_get(args, "subject")) != NULL) {
		if (json_string_length(v) > MB_CTL_LINE_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return mb_err_set(err, MB_E_INVALID, "create_draft: subject must be a "
			    "string of at most %d bytes", MB_CTL_LINE_MAX);
		if (json_string_length(v) > 0)
			rq->subject = json_string_value(v);
	}
	v = json_object_get(args, "body");
	if (json_string_length(v) > MB_CTL_BODY_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return mb_err_set(err, MB_E_INVALID, "create_draft: body must be a string of at "
		    "most %u bytes", MB_CTL_BODY_MAX);
	rq->body = json_string_value(v);
	return 0;
}

/* A nullable column of write_log: the text, or JSON null. */
static json_t *
audit_text(const char *s)
{
	return s != NULL ? mcp_json_text(s, strlen(s)) : json_null();
}

/* A nullable integer column of write_log (-1: none), or JSON null. */
static json_t *
audit_int(int64_t v)
{
	return v != -1 ? json_integer(v) : json_null();
}

/* One write_log row of some account, for the merged list. */
struct audit_row {
	const struct mcp_account	*acc;
	const struct mb_audit_entry	*e;	/* borrowed from its account's list */
};

struct audit_ctx {
	size_t			 limit;
	struct mb_audit_entry	*lists[MCP_ACCOUNTS_MAX];	/* owned */
	size_t			 sizes[MCP_ACCOUNTS_MAX];
	size_t			 n_lists;
	struct audit_row	*rows;		/* owned */
	size_t			 n;
};

static int
audit_of(struct mcp_server *srv, const struct mcp_account *acc, struct mb_index *idx,
    void *vctx, struct mb_err *err)
{
	struct audit_ctx *c = vctx;
	struct mb_audit_entry *e;
	size_t n;

	(void)srv;
	if (mb_index_audit_recent(idx, c->limit, &e, &n, err) == -1) {
		if (err->code == MB_E_TEMP) {	/* SQLite's words stay in the log */
			mb_log_warnx("write_log: %s", err->msg);
			mb_err_clear(err);
			mb_err_set(err, MB_E_TEMP, "the audit log is busy; try again");
		}
		return -1;
	}
	c->lists[c->n_lists] = e;
	c->sizes[c->n_lists++] = n;
	for (size_t i = 0; i < n; i++)
		c->rows[c->n++] = (struct audit_row){ .acc = acc, .e = &e[i] };
	return 0;
}

/* Newest first; within a second, the account's table order, then the latest row. */
static int
audit_cmp(const void *pa, const void *pb)
{
	const struct audit_row *a = pa, *b = pb;

	if (a->e->at != b->e->at)
		return a->e->at > b->e->at ? -1 : 1;
	if (a->acc != b->acc)
		return a->acc < b->acc ? -1 : 1;
	return a->e->id > b->e->id ? -1 : a->e->id < b->e->id;
}

static json_t *
audit_json(const struct audit_row *r)
{
	const struct mb_audit_entry *e = r->e;
	json_t *w = json_object();
	char d[32];
	struct tm tm;
	time_t t = (time_t)e->at;

	if (gmtime_r(&t, &tm) != NULL && strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%SZ", &tm))
		json_object_set_new(w, "at", json_string(d));
	json_object_set_new(w, "account", json_string(r->acc->name));
	json_object_set_new(w, "write_log_id", json_integer(e->id));
	json_object_set_new(w, "tool", audit_text(e->tool));
	json_object_set_new(w, "requested_by", audit_text(e->requested_by));
	json_object_set_new(w, "peer_uid", audit_int(e->peer_uid));
	json_object_set_new(w, "id", e->message_id > 0 ? json_integer(mcp_gid(r->acc,
	    e->message_id)) : audit_int(e->message_id));
	json_object_set_new(w, "folder", audit_text(e->folder));
	json_object_set_new(w, "uidvalidity", audit_int(e->uidvalidity));
	json_object_set_new(w, "uid", audit_int(e->uid));
	json_object_set_new(w, "arguments", audit_text(e->arguments));
	json_object_set_new(w, "outcome", audit_text(e->outcome));
	json_object_set_new(w, "detail", audit_text(e->detail));
	return w;
}

json_t *
mcp_tool_list_recent_writes(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct audit_ctx c = { .limit = (size_t)mcp_arg_int(args, "limit") };
	json_t *writes, *data, *r = NULL;
	uint64_t set;

	if (mcp_account_arg(srv->conf, who, args, &set, err) == -1)
		return NULL;
	c.rows = mb_xcalloc(c.limit * srv->conf->n_accounts + 1, sizeof(*c.rows));
	if (mcp_each_account(srv, set, audit_of, &c, err) == -1)
		goto out;
	qsort(c.rows, c.n, sizeof(*c.rows), audit_cmp);
	writes = json_array();
	for (size_t i = 0; i < c.n && i < c.limit; i++)
		json_array_append_new(writes, audit_json(&c.rows[i]));
	data = json_pack("{s:o}", "writes", writes);
	{
		char *text = json_dumps(data, JSON_COMPACT);

		r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text",
		    "text", text ? text : "{}", "structuredContent", data, "isError", 0);
		free(text);
	}
out:
	for (size_t i = 0; i < c.n_lists; i++)
		mb_audit_list_free(&c.lists[i], c.sizes[i]);
	free(c.rows);
	return r;
}

/*
 * Whether who may write account i of srv (a tool error in err when not):
 * the caller's WRITERS, and a syncd socket for the account.
 */
static int
may_write(struct mcp_server *srv, const struct mcp_caller *who, size_t i, const char *tool,
    struct mb_err *err)
{
	const struct mcp_account *acc = &srv->conf->accounts[i];

	if (!(mcp_may_write(srv->conf, who) >> i & 1))
		return mb_err_set(err, MB_E_AUTH, "%s: this caller may read account %s but not "
		    "change it", tool, acc->name);
	if (acc->syncd_socket == NULL)
		return mb_err_set(err, MB_E_INVALID, "%s: account %s is read-only on this server "
		    "(it has no ACCOUNT_%s_SYNCD_SOCKET)", tool, acc->name, acc->name);
	return 0;
}

/*
 * The account a write tool's message id (gid) belongs to, checked writable
 * by who, with the id in its index in *local_r; NULL with err (an id who
 * cannot read is "no message", as get_message says).
 */
static const struct mcp_account *
write_target(struct mcp_server *srv, const struct mcp_caller *who, int64_t gid,
    const char *tool, int64_t *local_r, struct mb_err *err)
{
	int i = mcp_account_of(srv->conf, who, gid, local_r);

	if (i < 0) {
		mb_err_set(err, MB_E_NOTFOUND, "no message with id %lld; ids come from "
		    "search_messages or get_thread", (long long)gid);
		return NULL;
	}
	if (may_write(srv, who, (size_t)i, tool, err) == -1)
		return NULL;
	return &srv->conf->accounts[i];
}

/*
 * The request every write tool starts from: who asks (the token subject, cut
 * to the wire's limit) into who_buf, and the message id (in its account's
 * index).
 */
static void
write_request(struct mb_ctl_request_view *rq, char who_buf[MB_CTL_WHO_MAX + 1],
    const struct mcp_caller *who, int64_t id)
{
	const char *owner = who->owner;

	/* A subject longer than the wire allows is cut (at a character): the
	 * audit log keeps its start rather than the write being refused. */
	snprintf(who_buf, MB_CTL_WHO_MAX + 1, "%.*s", owner == NULL ? 5 :
	    (int)mb_utf8_boundary(owner, strlen(owner), MB_CTL_WHO_MAX),
	    owner != NULL ? owner : "local");
	memset(rq, 0, sizeof(*rq));
	rq->who = who_buf;
	rq->message_id = id;
}

/*
 * The write tools.  The dispatcher has refused them on a read-only server
 * and to a token without the write scope, and refused unknown arguments: a
 * misspelt "bcc" silently dropped would be a draft to fewer people than
 * asked.
 */

json_t *
mcp_tool_flag_message(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_ctl_request_view rq;
	char who_buf[MB_CTL_WHO_MAX + 1];
	const char *bad = NULL;
	const struct mcp_account *acc;
	int64_t local = 0;

	if ((acc = write_target(srv, who, mcp_arg_int(args, "id"), "flag_message", &local,
	    err)) == NULL)
		return NULL;
	write_request(&rq, who_buf, who, local);
	rq.op = MB_CTL_FLAG;
	if (parse_flags(json_object_get(args, "add"), &rq.add, &bad) == -1 ||
	    parse_flags(json_object_get(args, "remove"), &rq.remove, &bad) == -1) {
		mb_err_set(err, MB_E_INVALID, "flag_message: only seen, flagged and answered "
		    "may be set or cleared; refused: %s", bad);
		return NULL;
	}
	if ((rq.add | rq.remove) == 0) {
		mb_err_set(err, MB_E_INVALID, "flag_message: name at least one flag to add or "
		    "remove");
		return NULL;
	}
	if (rq.add & rq.remove) {
		mb_err_set(err, MB_E_INVALID, "flag_message: a flag cannot be both added and "
		    "removed");
		return NULL;
	}
	return forward(acc, &rq, err);
}

json_t *
mcp_tool_move_message(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_ctl_request_view rq;
	char who_buf[MB_CTL_WHO_MAX + 1];
	const char *d = mcp_arg_str(args, "destination");
	const struct mcp_account *acc;
	int64_t local = 0;

	if ((acc = write_target(srv, who, mcp_arg_int(args, "id"), "move_message", &local,
	    err)) == NULL)
		return NULL;
	write_request(&rq, who_buf, who, local);
	if (*d == '\0' || strlen(d) > MB_CTL_FOLDER_MAX) {
		mb_err_set(err, MB_E_INVALID, "move_message: destination must be a folder name");
		return NULL;
	}
	rq.op = MB_CTL_MOVE;
	rq.dest = d;
	return forward(acc, &rq, err);
}

json_t *
mcp_tool_trash_message(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_ctl_request_view rq;
	char who_buf[MB_CTL_WHO_MAX + 1];
	const struct mcp_account *acc;
	int64_t local = 0;

	if ((acc = write_target(srv, who, mcp_arg_int(args, "id"), "trash_message", &local,
	    err)) == NULL)
		return NULL;
	write_request(&rq, who_buf, who, local);
	rq.op = MB_CTL_TRASH;
	return forward(acc, &rq, err);
}

/*
 * create_draft's account: its "account" argument, which is required when
 * who may write more than one; in_reply_to_id (when given) must be of it.
 * *local_r is in_reply_to_id in that account's index (0: none).
 */
static const struct mcp_account *
draft_account(struct mcp_server *srv, const struct mcp_caller *who, json_t *args,
    int64_t *local_r, struct mb_err *err)
{
	uint64_t writable = mcp_may_write(srv->conf, who), set;
	int64_t reply = mcp_arg_int(args, "in_reply_to_id");
	size_t i;

	*local_r = 0;
	if (mcp_account_arg(srv->conf, who, args, &set, err) == -1)
		return NULL;
	if (mcp_arg_str(args, "account") == NULL) {
		set = writable;
		if (set & (set - 1)) {
			struct mb_buf b = MB_BUF_INIT(4096);

			mcp_accounts_text(srv->conf, writable, &b);
			mb_err_set(err, MB_E_INVALID, "create_draft: name the account to save the "
			    "draft in (account: one of %s)", b.data);
			mb_buf_release(&b);
			return NULL;
		}
	}
	for (i = 0; i < srv->conf->n_accounts && !(set >> i & 1); i++)
		;
	if (i == srv->conf->n_accounts) {
		mb_err_set(err, MB_E_AUTH, "create_draft: this caller may write no account");
		return NULL;
	}
	if (may_write(srv, who, i, "create_draft", err) == -1)
		return NULL;
	if (reply != 0) {
		int r = mcp_account_of(srv->conf, who, reply, local_r);

		if (r < 0) {
			mb_err_set(err, MB_E_NOTFOUND, "no message with id %lld; ids come from "
			    "search_messages or get_thread", (long long)reply);
			return NULL;
		}
		if ((size_t)r != i) {
			mb_err_set(err, MB_E_INVALID, "create_draft: in_reply_to_id %lld is a message "
			    "of account %s, not %s; a reply is saved in the account of the message",
			    (long long)reply, srv->conf->accounts[r].name, srv->conf->accounts[i].name);
			return NULL;
		}
	}
	return &srv->conf->accounts[i];
}

json_t *
mcp_tool_create_draft(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_ctl_request_view rq;
	char who_buf[MB_CTL_WHO_MAX + 1];
	const struct mcp_account *acc;
	int64_t local = 0;
	json_t *r = NULL;

	if ((acc = draft_account(srv, who, args, &local, err)) == NULL)
		return NULL;
	write_request(&rq, who_buf, who, local);
	if (draft_request(args, &rq, err) == 0)
		r = forward(acc, &rq, err);
	free(rq.to);	/* the arrays are ours, their strings are args' */
	free(rq.cc);
	return r;
}

/*
 * An array of labels (borrowed strings of args) into *v_r (the caller's,
 * also on error).  Their syntax is syncd's to check (a refusal is logged);
 * here only what cannot go on the wire is refused.
 */
static int
label_list(json_t *args, const char *key, const char ***v_r, uint32_t *n_r, struct mb_err *err)
{
	json_t *a = json_object_get(args, key), *v;
	size_t i;

	*v_r = NULL;
	*n_r = 0;
	if (a == NULL)
		return 0;
	if (json_array_size(a) > MB_CTL_LABELS_MAX)
		return mb_err_set(err, MB_E_INVALID, "label_message: %s takes at most %d labels",
		    key, MB_CTL_LABELS_MAX);
	*v_r = mb_xcalloc(json_array_size(a) + 1, sizeof(**v_r));
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (s == NULL || *s == '\0' || json_string_length(v) > MB_CTL_LABEL_MAX ||
		    strlen(s) != json_string_length(v))
			return mb_err_set(err, MB_E_INVALID, "label_message: %s[%zu] must be a label "
			    "of 1 to %d bytes", key, i, MB_CTL_LABEL_MAX);
		(*v_r)[(*n_r)++] = s;
	}
	return 0;
}

json_t *
mcp_tool_label_message(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_ctl_request_view rq;
	char who_buf[MB_CTL_WHO_MAX + 1];
	const struct mcp_account *acc;
	int64_t local = 0;
	json_t *r = NULL;

	if ((acc = write_target(srv, who, mcp_arg_int(args, "id"), "label_message", &local,
	    err)) == NULL)
		return NULL;
	write_request(&rq, who_buf, who, local);
	rq.op = MB_CTL_LABEL;
	if (label_list(args, "add", &rq.labels_add, &rq.n_labels_add, err) == 0 &&
	    label_list(args, "remove", &rq.labels_remove, &rq.n_labels_remove, err) == 0) {
		if (rq.n_labels_add + rq.n_labels_remove == 0)
			mb_err_set(err, MB_E_INVALID, "label_message: name at least one label to add "
			    "or remove");
		else
			r = forward(acc, &rq, err);
	}
	free(rq.labels_add);	/* the arrays are ours, their strings are args' */
	free(rq.labels_remove);
	return r;
}
