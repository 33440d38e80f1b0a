/*
 * Control-socket payloads (include/mailbox/ctl.h): typed fields over the
 * IPC framing, checked field by field; the peer is untrusted.
 */
#include <stdlib.h>
#include <string.h>

#include "mailbox/ctl.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#define FLAG_BITS	(MB_FLAG_SEEN | MB_FLAG_ANSWERED | MB_FLAG_FLAGGED | MB_FLAG_DELETED | \
			 MB_FLAG_DRAFT)

const char *
mb_ctl_op_name(uint32_t op)
{
	switch (op) {
	case MB_CTL_FLAG:	return "flag_message";
	case MB_CTL_MOVE:	return "move_message";
	case MB_CTL_TRASH:	return "trash_message";
	case MB_CTL_DRAFT:	return "create_draft";
	case MB_CTL_LABEL:	return "label_message";
	default:		return "?";
	}
}

const char *
mb_ctl_outcome_name(uint32_t outcome)
{
	switch (outcome) {
	case MB_CTL_OK:		return "ok";
	case MB_CTL_REFUSED:	return "refused";
	default:		return "failed";
	}
}

int
mb_ctl_put_request(struct mb_ipc_out *o, uint32_t id, const struct mb_ctl_request_view *rq,
    struct mb_err *err)
{
	mb_ipc_out_begin(o, MB_IPC_CTL_REQUEST, id);
	mb_ipc_put_u32(o, rq->op);
	mb_ipc_put_str(o, rq->who);
	mb_ipc_put_u64(o, (uint64_t)rq->message_id);
	mb_ipc_put_u32(o, rq->add);
	mb_ipc_put_u32(o, rq->remove);
	mb_ipc_put_str(o, rq->dest);
	mb_ipc_put_u32(o, rq->n_to);
	for (uint32_t i = 0; i < rq->n_to; i++)
		mb_ipc_put_str(o, rq->to[i]);
	mb_ipc_put_u32(o, rq->n_cc);
	for (uint32_t i = 0; i < rq->n_cc; i++)
		mb_ipc_put_str(o, rq->cc[i]);
	mb_ipc_put_str(o, rq->subject);
	mb_ipc_put_str(o, rq->body);
	mb_ipc_put_u32(o, rq->n_labels_add);
	for (uint32_t i = 0; i < rq->n_labels_add; i++)
		mb_ipc_put_str(o, rq->labels_add[i]);
	mb_ipc_put_u32(o, rq->n_labels_remove);
	for (uint32_t i = 0; i < rq->n_labels_remove; i++)
		mb_ipc_put_str(o, rq->labels_remove[i]);
	return mb_ipc_out_finish(o, err);
}

int
mb_ctl_put_reply(struct mb_ipc_out *o, uint32_t id, const struct mb_ctl_reply *rp,
    struct mb_err *err)
{
	mb_ipc_out_begin(o, MB_IPC_CTL_REPLY, id);
	mb_ipc_put_u32(o, rp->outcome);
	mb_ipc_put_str(o, rp->detail ? rp->detail : "");
	mb_ipc_put_u64(o, (uint64_t)rp->message_id);
	mb_ipc_put_u32(o, rp->flags);
	mb_ipc_put_str(o, rp->folder);
	mb_ipc_put_u64(o, (uint64_t)rp->log_id);
	mb_ipc_put_str(o, rp->keywords);
	return mb_ipc_out_finish(o, err);
}

int
mb_ctl_put_result(struct mb_ipc_out *o, const struct mb_ctl_result *r, struct mb_err *err)
{
	mb_ipc_out_begin(o, MB_IPC_WRITE_RESULT, 0);
	mb_ipc_put_u32(o, r->outcome);
	mb_ipc_put_str(o, r->detail);
	mb_ipc_put_u32(o, r->flags);
	mb_ipc_put_u32(o, r->uidvalidity);
	mb_ipc_put_u32(o, r->uid);
	mb_ipc_put_bool(o, r->used_move);
	mb_ipc_put_bool(o, r->keywords_known);
	mb_ipc_put_str(o, r->keywords_known ? r->keywords : NULL);
	return mb_ipc_out_finish(o, err);
}

int
mb_ctl_get_result(struct mb_ipc_cur *c, struct mb_ctl_result *r, struct mb_err *err)
{
	char *detail, *kw;

	memset(r, 0, sizeof(*r));
	r->outcome = mb_ipc_get_u32(c);
	detail = mb_ipc_get_strdup(c);
	r->flags = mb_ipc_get_u32(c);
	r->uidvalidity = mb_ipc_get_u32(c);
	r->uid = mb_ipc_get_u32(c);
	r->used_move = mb_ipc_get_bool(c);
	r->keywords_known = mb_ipc_get_bool(c);
	kw = mb_ipc_get_strdup(c);
	if (mb_ipc_end(c, err) == -1 || r->outcome > MB_CTL_FAILED || detail == NULL ||
	    strlen(detail) > MB_CTL_DETAIL_MAX || (r->flags & ~FLAG_BITS) != 0 ||
	    r->keywords_known != (kw != NULL) ||
	    (kw != NULL && strlen(kw) > MB_CTL_KEYWORDS_MAX)) {
		free(detail);
		free(kw);
		mb_err_clear(err);
		return mb_err_set(err, MB_E_PROTO, "write process: malformed result");
	}
	memcpy(r->detail, detail, strlen(detail) + 1);
	if (kw != NULL)
		memcpy(r->keywords, kw, strlen(kw) + 1);
	free(detail);
	free(kw);
	return 0;
}

static bool
str_ok(const char *s, size_t max)
{
	return s != NULL && *s != '\0' && strlen(s) <= max;
}

/*
 * A count, then that many strings.  The count is checked before anything is
 * allocated, so a hostile count costs nothing; *v_r is NULL when n is 0.
 */
static bool
get_strs(struct mb_ipc_cur *c, char ***v_r, uint32_t *n_r, uint32_t max_n, size_t max_len)
{
	uint32_t n = mb_ipc_get_u32(c);

	*v_r = NULL;
	*n_r = 0;
	if (c->bad || n > max_n)
		return false;
	if (n == 0)
		return true;
	*v_r = mb_xcalloc(n, sizeof(**v_r));
	*n_r = n;
	for (uint32_t i = 0; i < n; i++)
		if (!str_ok((*v_r)[i] = mb_ipc_get_strdup(c), max_len))
			return false;
	return true;
}

/* The fields of a draft are there exactly for a draft, within the limits. */
static bool
draft_fields_ok(const struct mb_ctl_request *rq)
{
	if ((rq->op == MB_CTL_LABEL) != (rq->n_labels_add + rq->n_labels_remove > 0))
		return false;	/* labels exactly for a label request */
	if (rq->op != MB_CTL_DRAFT)
		return rq->n_to == 0 && rq->n_cc == 0 && rq->subject == NULL && rq->body == NULL;
	return rq->dest == NULL && (rq->add | rq->remove) == 0 && rq->body != NULL &&
	    strlen(rq->body) <= MB_CTL_BODY_MAX &&
	    (rq->subject == NULL || strlen(rq->subject) <= MB_CTL_LINE_MAX);
}

int
mb_ctl_get_request(struct mb_ipc_cur *c, struct mb_ctl_request *rq, struct mb_err *err)
{
	uint64_t mid;

	memset(rq, 0, sizeof(*rq));
	rq->op = mb_ipc_get_u32(c);
	rq->who = mb_ipc_get_strdup(c);
	mid = mb_ipc_get_u64(c);
	rq->add = mb_ipc_get_u32(c);
	rq->remove = mb_ipc_get_u32(c);
	rq->dest = mb_ipc_get_strdup(c);
	if (!get_strs(c, &rq->to, &rq->n_to, MB_CTL_RCPT_MAX, MB_CTL_LINE_MAX) ||
	    !get_strs(c, &rq->cc, &rq->n_cc, MB_CTL_RCPT_MAX, MB_CTL_LINE_MAX)) {
		mb_err_set(err, MB_E_PROTO, "control: malformed request (recipients)");
		goto bad;
	}
	rq->subject = mb_ipc_get_strdup(c);
	rq->body = mb_ipc_get_strdup(c);
	if (!get_strs(c, &rq->labels_add, &rq->n_labels_add, MB_CTL_LABELS_MAX,
	    MB_CTL_LABEL_MAX) || !get_strs(c, &rq->labels_remove, &rq->n_labels_remove,
	    MB_CTL_LABELS_MAX, MB_CTL_LABEL_MAX)) {
		mb_err_set(err, MB_E_PROTO, "control: malformed request (labels)");
		goto bad;
	}
	if (mb_ipc_end(c, err) == -1)
		goto bad;
	if (rq->op == 0 || rq->op >= MB_CTL_OP_MAX || mid > INT64_MAX ||
	    (mid == 0 && rq->op != MB_CTL_DRAFT) || !draft_fields_ok(rq) ||
	    !str_ok(rq->who, MB_CTL_WHO_MAX) || ((rq->add | rq->remove) & ~FLAG_BITS) != 0 ||
	    (rq->op == MB_CTL_MOVE) != (rq->dest != NULL) ||
	    (rq->dest != NULL && !str_ok(rq->dest, MB_CTL_FOLDER_MAX)) ||
	    (rq->op != MB_CTL_FLAG && (rq->add | rq->remove) != 0) ||
	    (rq->op == MB_CTL_FLAG && (rq->add | rq->remove) == 0)) {
		mb_err_set(err, MB_E_PROTO, "control: malformed request");
		goto bad;
	}
	rq->message_id = (int64_t)mid;
	return 0;
bad:
	mb_ctl_request_release(rq);
	return -1;
}

int
mb_ctl_get_reply(struct mb_ipc_cur *c, struct mb_ctl_reply *rp, struct mb_err *err)
{
	memset(rp, 0, sizeof(*rp));
	rp->outcome = mb_ipc_get_u32(c);
	rp->detail = mb_ipc_get_strdup(c);
	rp->message_id = (int64_t)mb_ipc_get_u64(c);
	rp->flags = mb_ipc_get_u32(c);
	rp->folder = mb_ipc_get_strdup(c);
	rp->log_id = (int64_t)mb_ipc_get_u64(c);
	rp->keywords = mb_ipc_get_strdup(c);
	if (mb_ipc_end(c, err) == -1)
		goto bad;
	if (rp->outcome > MB_CTL_FAILED || rp->detail == NULL ||
	    strlen(rp->detail) > 4 * MB_CTL_DETAIL_MAX ||
	    (rp->keywords != NULL && strlen(rp->keywords) > MB_CTL_KEYWORDS_MAX)) {
		mb_err_set(err, MB_E_PROTO, "control: malformed reply");
		goto bad;
	}
	return 0;
bad:
	mb_ctl_reply_release(rp);
	return -1;
}

static void
strs_free(char ***vp, uint32_t *np)
{
	for (uint32_t i = 0; *vp != NULL && i < *np; i++)
		free((*vp)[i]);
	free(*vp);
	*vp = NULL;
	*np = 0;
}

void
mb_ctl_request_release(struct mb_ctl_request *rq)
{
	free(rq->who);
	free(rq->dest);
	free(rq->subject);
	free(rq->body);
	rq->who = rq->dest = rq->subject = rq->body = NULL;
	strs_free(&rq->to, &rq->n_to);
	strs_free(&rq->cc, &rq->n_cc);
	strs_free(&rq->labels_add, &rq->n_labels_add);
	strs_free(&rq->labels_remove, &rq->n_labels_remove);
}

void
mb_ctl_request_view(const struct mb_ctl_request *rq, struct mb_ctl_request_view *v)
{
	*v = (struct mb_ctl_request_view){ .op = rq->op, .who = rq->who,
	    .message_id = rq->message_id, .add = rq->add, .remove = rq->remove,
	    .dest = rq->dest, .n_to = rq->n_to, .n_cc = rq->n_cc, .subject = rq->subject,
	    .body = rq->body };
	/* char ** to const char **: C needs the cast; the view only reads them */
	v->to = (const char **)rq->to;
	v->cc = (const char **)rq->cc;
	v->labels_add = (const char **)rq->labels_add;
	v->labels_remove = (const char **)rq->labels_remove;
	v->n_labels_add = rq->n_labels_add;
	v->n_labels_remove = rq->n_labels_remove;
}

void
mb_ctl_reply_release(struct mb_ctl_reply *rp)
{
	free(rp->detail);
	free(rp->folder);
	free(rp->keywords);
	rp->detail = rp->folder = rp->keywords = NULL;
}
