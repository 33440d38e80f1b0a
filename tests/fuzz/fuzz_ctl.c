/*
 * Fuzz the control socket as syncd reads it (docs/writes.md): arbitrary
 * bytes in arbitrary chunks through the IPC reader with the control
 * channel's type mask, each frame decoded with mb_ctl_get_request (and,
 * for the client's side, mb_ctl_get_reply; for a write process's result,
 * mb_ctl_get_result).  A decoded request or result is encoded again and
 * must decode to the same fields.  Nothing may crash, leak or
 * read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/ctl.h"
#include "mailbox/ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
str_eq(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

static bool
strs_eq(char *const *a, uint32_t na, char *const *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (!str_eq(a[i], b[i]))
			return false;
	return true;
}

static void
roundtrip(const struct mb_ctl_request *rq)
{
	struct mb_ipc_out o;
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	struct mb_ctl_request back;
	struct mb_ctl_request_view v;
	struct mb_err err = { 0 };

	mb_ctl_request_view(rq, &v);
	if (mb_ctl_put_request(&o, 7, &v, &err) == -1) {
		mb_ipc_out_release(&o);
		return;
	}
	mb_ipc_conn_init(&c, -1, MB_IPC_BIT(MB_IPC_CTL_REQUEST));
	if (mb_ipc_feed(&c, o.buf.data, o.buf.len, &err) == 0 && mb_ipc_next(&c, &f, &err) == 1) {
		if (mb_ctl_get_request(&f.cur, &back, &err) == -1 || back.op != rq->op ||
		    back.message_id != rq->message_id || back.add != rq->add ||
		    back.remove != rq->remove || strcmp(back.who, rq->who) != 0 ||
		    !str_eq(rq->dest, back.dest) || !str_eq(rq->subject, back.subject) ||
		    !str_eq(rq->body, back.body) || !strs_eq(rq->to, rq->n_to, back.to, back.n_to) ||
		    !strs_eq(rq->cc, rq->n_cc, back.cc, back.n_cc) ||
		    !strs_eq(rq->labels_add, rq->n_labels_add, back.labels_add,
		    back.n_labels_add) || !strs_eq(rq->labels_remove, rq->n_labels_remove,
		    back.labels_remove, back.n_labels_remove))
			abort();
		mb_ctl_request_release(&back);
	} else
		abort();
	mb_ipc_conn_release(&c);
	mb_ipc_out_release(&o);
}

static void
result_roundtrip(const struct mb_ctl_result *r)
{
	struct mb_ipc_out o;
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	static struct mb_ctl_result back;
	struct mb_err err = { 0 };

	if (mb_ctl_put_result(&o, r, &err) == -1) {
		mb_ipc_out_release(&o);
		return;
	}
	mb_ipc_conn_init(&c, -1, MB_IPC_BIT(MB_IPC_WRITE_RESULT));
	if (mb_ipc_feed(&c, o.buf.data, o.buf.len, &err) != 0 || mb_ipc_next(&c, &f, &err) != 1 ||
	    mb_ctl_get_result(&f.cur, &back, &err) == -1 || back.outcome != r->outcome ||
	    strcmp(back.detail, r->detail) != 0 || back.flags != r->flags ||
	    back.uidvalidity != r->uidvalidity || back.uid != r->uid ||
	    back.used_move != r->used_move || back.keywords_known != r->keywords_known ||
	    (r->keywords_known && strcmp(back.keywords, r->keywords) != 0))
		abort();
	mb_ipc_conn_release(&c);
	mb_ipc_out_release(&o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	size_t off = 0, step = size ? (size_t)data[0] % 64 + 1 : 1;
	int r = 0;

	mb_ipc_conn_init(&c, -1, MB_IPC_BIT(MB_IPC_CTL_REQUEST) | MB_IPC_BIT(MB_IPC_CTL_REPLY) |
	    MB_IPC_BIT(MB_IPC_WRITE_RESULT));
	while (off < size && r >= 0) {
		size_t n = size - off < step ? size - off : step;

		if (mb_ipc_feed(&c, data + off, n, &err) == -1)
			break;
		off += n;
		while ((r = mb_ipc_next(&c, &f, &err)) == 1) {
			struct mb_ctl_request rq;
			struct mb_ctl_reply rp;
			struct mb_ctl_result res;

			if (f.hdr.type == MB_IPC_CTL_REQUEST) {
				if (mb_ctl_get_request(&f.cur, &rq, &err) == 0) {
					roundtrip(&rq);
					mb_ctl_request_release(&rq);
				}
			} else if (f.hdr.type == MB_IPC_WRITE_RESULT) {
				if (mb_ctl_get_result(&f.cur, &res, &err) == 0)
					result_roundtrip(&res);
			} else if (mb_ctl_get_reply(&f.cur, &rp, &err) == 0)
				mb_ctl_reply_release(&rp);
			mb_err_clear(&err);
		}
	}
	mb_ipc_conn_release(&c);
	return 0;
}
