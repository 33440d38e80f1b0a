/*
 * IPC framing: rows survive the trip from a worker to the writer intact, and
 * every malformed frame a compromised worker could send is refused with
 * MB_E_PROTO before anything is decoded or allocated from it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "mailbox/ctl.h"
#include "mailbox/ipc.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#define WORKER_TO_SYNCD	(MB_IPC_BIT(MB_IPC_READY) | MB_IPC_BIT(MB_IPC_ROW) | \
			 MB_IPC_BIT(MB_IPC_RANGE_DONE) | MB_IPC_BIT(MB_IPC_FAIL))

static int
setup(void **state)
{
	struct mb_ipc_conn *c = calloc(1, sizeof(*c));

	mb_ipc_conn_init(c, -1, WORKER_TO_SYNCD);
	*state = c;
	return 0;
}

static int
teardown(void **state)
{
	mb_ipc_conn_release(*state);
	free(*state);
	return 0;
}

static void
feed_hdr(struct mb_ipc_conn *c, uint32_t type, uint32_t len, uint32_t version)
{
	struct mb_ipc_hdr h = { .type = type, .len = len, .id = 7, .version = version };
	uint32_t words[4] = { h.type, h.len, h.id, h.version };
	struct mb_err err = { 0 };

	assert_int_equal(mb_ipc_feed(c, words, sizeof(words), &err), 0);
}

static void
ipc_rejects_frame_longer_than_max(void **state)
{
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };

	feed_hdr(*state, MB_IPC_ROW, MB_IPC_MAX + 1, MB_IPC_VERSION);
	assert_int_equal(mb_ipc_next(*state, &f, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
	assert_non_null(strstr(err.msg, "length"));
}

static void
ipc_rejects_frame_shorter_than_its_header(void **state)
{
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };

	feed_hdr(*state, MB_IPC_READY, 8, MB_IPC_VERSION);
	assert_int_equal(mb_ipc_next(*state, &f, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
}

static void
ipc_rejects_wrong_version_before_anything_else(void **state)
{
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };

	/* Bad length and bad type too: the version is what is reported. */
	feed_hdr(*state, 999, MB_IPC_MAX + 1, MB_IPC_VERSION + 1);
	assert_int_equal(mb_ipc_next(*state, &f, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
	assert_non_null(strstr(err.msg, "version"));
}

static void
ipc_rejects_type_not_allowed_on_the_channel(void **state)
{
	static const uint32_t types[] = { MB_IPC_RANGE, MB_IPC_CTL_REQUEST, MB_IPC_NONE,
	    MB_IPC_TYPE_MAX, 31, 32, 0xffffffffu };

	for (size_t i = 0; i < MB_ARRAY_LEN(types); i++) {
		struct mb_ipc_conn c;
		struct mb_ipc_frame f;
		struct mb_err err = { 0 };

		mb_ipc_conn_init(&c, -1, WORKER_TO_SYNCD);
		feed_hdr(&c, types[i], MB_IPC_HDR_LEN, MB_IPC_VERSION);
		assert_int_equal(mb_ipc_next(&c, &f, &err), -1);
		assert_int_equal(err.code, MB_E_PROTO);
		assert_non_null(strstr(err.msg, "not allowed"));
		mb_ipc_conn_release(&c);
	}
}

static void
ipc_waits_for_a_whole_frame(void **state)
{
	struct mb_ipc_out o;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, MB_IPC_RANGE_DONE, 42);
	mb_ipc_put_u32(&o, 100);
	assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
	/* Byte by byte: nothing until the last byte arrives. */
	for (size_t i = 0; i < o.buf.len; i++) {
		assert_int_equal(mb_ipc_next(*state, &f, &err), 0);
		assert_int_equal(mb_ipc_feed(*state, o.buf.data + i, 1, &err), 0);
	}
	assert_int_equal(mb_ipc_next(*state, &f, &err), 1);
	assert_int_equal(f.hdr.type, MB_IPC_RANGE_DONE);
	assert_int_equal(f.hdr.id, 42);
	assert_int_equal(mb_ipc_get_u32(&f.cur), 100);
	assert_int_equal(mb_ipc_end(&f.cur, &err), 0);
	assert_int_equal(mb_ipc_next(*state, &f, &err), 0);
	assert_false(mb_ipc_pending_input(*state));
	mb_ipc_out_release(&o);
}

static void
ipc_truncated_and_trailing_payloads_are_refused(void **state)
{
	struct mb_ipc_out o;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };

	/* RANGE_DONE carries one u32: send two, then none. */
	mb_ipc_out_begin(&o, MB_IPC_RANGE_DONE, 1);
	mb_ipc_put_u32(&o, 1);
	mb_ipc_put_u32(&o, 2);
	assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
	assert_int_equal(mb_ipc_feed(*state, o.buf.data, o.buf.len, &err), 0);
	mb_ipc_out_release(&o);
	assert_int_equal(mb_ipc_next(*state, &f, &err), 1);
	(void)mb_ipc_get_u32(&f.cur);
	assert_int_equal(mb_ipc_end(&f.cur, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
	assert_non_null(strstr(err.msg, "trailing"));

	mb_err_clear(&err);
	mb_ipc_out_begin(&o, MB_IPC_RANGE_DONE, 1);
	assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
	assert_int_equal(mb_ipc_feed(*state, o.buf.data, o.buf.len, &err), 0);
	mb_ipc_out_release(&o);
	assert_int_equal(mb_ipc_next(*state, &f, &err), 1);
	assert_int_equal(mb_ipc_get_u32(&f.cur), 0);
	assert_true(f.cur.bad);
	assert_int_equal(mb_ipc_get_u32(&f.cur), 0);	/* sticky */
	assert_int_equal(mb_ipc_end(&f.cur, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
}

static struct mb_msg *
sample_msg(size_t body_len)
{
	struct mb_msg *m = mb_msg_new();

	m->subject = strdup("Re: Quarterly report — café");
	m->from.name = strdup("Alice Example");
	m->from.addr = strdup("alice@example.org");
	m->n_to = 2;
	m->to = calloc(2, sizeof(struct mb_addr));
	m->to[0].addr = strdup("bob@example.org");
	m->to[1].group = strdup("Undisclosed");
	m->has_date = true;
	m->date = 1700000000;
	m->message_id = strdup("abc@example.org");
	m->n_parents = 2;
	m->parents = calloc(2, sizeof(char *));
	m->parents[0] = strdup("p1@x");
	m->parents[1] = strdup("p2@x");
	m->in_reply_to = strdup("p1@x");
	m->n_references = 2;
	m->references = calloc(2, sizeof(char *));
	m->references[0] = strdup("r1@x");
	m->references[1] = strdup("r2@x");
	free(m->body);
	m->body = malloc(body_len + 1);
	memset(m->body, 'b', body_len);
	m->body[body_len] = '\0';
	m->body_len = body_len;
	m->body_truncated = true;
	m->n_attachments = 1;
	m->attachments = calloc(1, sizeof(struct mb_attachment));
	m->attachments[0].filename = strdup("report.pdf");
	m->attachments[0].mime_type = strdup("application/pdf");
	m->attachments[0].size = 12345;
	memset(m->attachments[0].sha256, 'a', 64);
	m->attachments[0].text = strdup("Quarterly contract\nsigned");
	m->attachments[0].text_len = strlen(m->attachments[0].text);
	m->attachments[0].text_status = strdup("ok");
	m->parse_error = strdup("bad charset");
	return m;
}

static void
ipc_row_round_trip_with_a_one_mebibyte_body(void **state)
{
	struct mb_msg *m = sample_msg(1u << 20);
	struct mb_index_row row = { .folder_id = 3, .uidvalidity = 77, .uid = 4242,
	    .flags = MB_FLAG_SEEN | MB_FLAG_FLAGGED, .keywords = "$Label1 Junk",
	    .internaldate = 1700000100, .size = 2000000, .modseq = 99, .headers_only = false,
	    .msg = m };
	struct mb_ipc_out o;
	struct mb_ipc_frame f;
	struct mb_ipc_row r;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, MB_IPC_ROW, 5);
	mb_ipc_put_row(&o, &row);
	assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
	assert_int_equal(mb_ipc_feed(*state, o.buf.data, o.buf.len, &err), 0);
	mb_ipc_out_release(&o);
	assert_int_equal(mb_ipc_next(*state, &f, &err), 1);
	assert_int_equal(mb_ipc_get_row(&f.cur, &r, &err), 0);
	assert_int_equal(r.row.folder_id, 3);
	assert_int_equal(r.row.uidvalidity, 77);
	assert_int_equal(r.row.uid, 4242);
	assert_int_equal(r.row.flags, MB_FLAG_SEEN | MB_FLAG_FLAGGED);
	assert_string_equal(r.row.keywords, "$Label1 Junk");
	assert_int_equal(r.row.internaldate, 1700000100);
	assert_int_equal(r.row.size, 2000000);
	assert_int_equal(r.row.modseq, 99);
	assert_string_equal(r.msg->subject, m->subject);
	assert_string_equal(r.msg->from.name, "Alice Example");
	assert_int_equal(r.msg->n_to, 2);
	assert_null(r.msg->to[0].name);
	assert_string_equal(r.msg->to[0].addr, "bob@example.org");
	assert_null(r.msg->to[1].addr);
	assert_null(r.msg->to[1].name);
	assert_string_equal(r.msg->to[1].group, "Undisclosed");	/* an empty group */
	assert_null(r.msg->to[0].group);
	assert_int_equal(r.msg->n_cc, 0);
	assert_true(r.msg->has_date);
	assert_int_equal(r.msg->date, 1700000000);
	assert_string_equal(r.msg->in_reply_to, "p1@x");
	assert_int_equal(r.msg->n_parents, 2);
	assert_string_equal(r.msg->parents[1], "p2@x");
	assert_int_equal(r.msg->n_references, 2);
	assert_string_equal(r.msg->references[1], "r2@x");
	assert_int_equal(r.msg->body_len, 1u << 20);
	assert_memory_equal(r.msg->body, m->body, 1u << 20);
	assert_true(r.msg->body_truncated);
	assert_int_equal(r.msg->n_attachments, 1);
	assert_string_equal(r.msg->attachments[0].filename, "report.pdf");
	assert_null(r.msg->attachments[0].data);
	assert_string_equal(r.msg->attachments[0].sha256, m->attachments[0].sha256);
	/* The extracted text and its status travel with the attachment. */
	assert_string_equal(r.msg->attachments[0].text, "Quarterly contract\nsigned");
	assert_int_equal(r.msg->attachments[0].text_len, 25);
	assert_string_equal(r.msg->attachments[0].text_status, "ok");
	assert_string_equal(r.msg->parse_error, "bad charset");
	assert_ptr_equal(r.row.msg, r.msg);
	mb_ipc_row_release(&r);
	mb_ipc_row_release(&r);
	mb_msg_free(&m);
}

static void
ipc_row_larger_than_max_is_refused_by_the_sender(void **state)
{
	struct mb_msg *m = sample_msg(MB_IPC_MAX);
	struct mb_index_row row = { .uid = 1, .msg = m };
	struct mb_ipc_out o;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, MB_IPC_ROW, 5);
	mb_ipc_put_row(&o, &row);
	assert_int_equal(mb_ipc_out_finish(&o, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	mb_ipc_out_release(&o);
	mb_msg_free(&m);
}

/* Build a ROW frame by hand from words, to lie about counts. */
static void
ipc_row_with_impossible_counts_is_refused(void **state)
{
	struct mb_ipc_out o;
	struct mb_ipc_frame f;
	struct mb_ipc_row r;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, MB_IPC_ROW, 1);
	mb_ipc_put_u64(&o, 1);		/* folder */
	mb_ipc_put_u32(&o, 1);		/* uidvalidity */
	mb_ipc_put_u32(&o, 1);		/* uid */
	mb_ipc_put_u32(&o, 0);		/* flags */
	mb_ipc_put_str(&o, NULL);	/* keywords */
	mb_ipc_put_u64(&o, 0);
	mb_ipc_put_u64(&o, 0);
	mb_ipc_put_u64(&o, 0);
	mb_ipc_put_bool(&o, false);
	mb_ipc_put_str(&o, "subject");
	mb_ipc_put_str(&o, NULL);
	mb_ipc_put_str(&o, NULL);
	mb_ipc_put_u32(&o, 0x7fffffff);	/* n_to: two billion addresses in a few bytes */
	assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
	assert_int_equal(mb_ipc_feed(*state, o.buf.data, o.buf.len, &err), 0);
	mb_ipc_out_release(&o);
	assert_int_equal(mb_ipc_next(*state, &f, &err), 1);
	assert_int_equal(mb_ipc_get_row(&f.cur, &r, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
	assert_null(r.msg);
}

static void
ipc_string_with_a_nul_inside_is_refused(void **state)
{
	struct mb_ipc_out o;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, MB_IPC_FAIL, 1);
	mb_ipc_put_u32(&o, MB_E_TEMP);
	mb_ipc_put_bool(&o, true);
	mb_ipc_put_bytes(&o, "abc\0def", 7);
	assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
	assert_int_equal(mb_ipc_feed(*state, o.buf.data, o.buf.len, &err), 0);
	mb_ipc_out_release(&o);
	assert_int_equal(mb_ipc_next(*state, &f, &err), 1);
	(void)mb_ipc_get_u32(&f.cur);
	assert_null(mb_ipc_get_strdup(&f.cur));
	assert_int_equal(mb_ipc_end(&f.cur, &err), -1);
}

static void
ipc_over_a_socketpair_with_many_frames(void **state)
{
	struct mb_ipc_conn a, b;
	struct mb_err err = { 0 };
	int sv[2], got = 0;
	struct mb_ipc_frame f;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	mb_ipc_conn_init(&a, sv[0], MB_IPC_BIT(MB_IPC_RANGE));
	mb_ipc_conn_init(&b, sv[1], WORKER_TO_SYNCD);
	for (uint32_t i = 0; i < 50; i++) {
		struct mb_ipc_out o;

		mb_ipc_out_begin(&o, MB_IPC_FAIL, i);
		mb_ipc_put_u32(&o, MB_E_TEMP);
		mb_ipc_put_str(&o, "imap: connection reset by peer");
		assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
		assert_int_equal(mb_ipc_send(&a, &o, &err), 0);
	}
	close(sv[0]);
	for (;;) {
		ssize_t n = mb_ipc_read(&b, &err);
		int r;

		while ((r = mb_ipc_next(&b, &f, &err)) == 1) {
			char *s;

			assert_int_equal(f.hdr.id, (uint32_t)got);
			assert_int_equal(mb_ipc_get_u32(&f.cur), MB_E_TEMP);
			s = mb_ipc_get_strdup(&f.cur);
			assert_string_equal(s, "imap: connection reset by peer");
			free(s);
			assert_int_equal(mb_ipc_end(&f.cur, &err), 0);
			got++;
		}
		assert_int_equal(r, 0);
		if (n == 0)
			break;
	}
	assert_int_equal(got, 50);
	assert_false(mb_ipc_pending_input(&b));
	close(sv[1]);
	mb_ipc_conn_release(&a);
	mb_ipc_conn_release(&b);
}

static void
ipc_writer_queue_is_capped(void **state)
{
	struct mb_ipc_conn c;
	struct mb_err err = { 0 };
	int sv[2], r = 0;
	size_t frames = 0;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	mb_ipc_conn_init(&c, sv[0], 0);
	/* Nobody reads sv[1]: the queue fills, then refuses. */
	static char chunk[1u << 20];

	while (r == 0 && frames < 200) {
		struct mb_ipc_out o;

		mb_ipc_out_begin(&o, MB_IPC_RANGE, 0);
		mb_ipc_put_bytes(&o, chunk, sizeof(chunk));
		assert_int_equal(mb_ipc_out_finish(&o, &err), 0);
		r = mb_ipc_queue(&c, &o, &err);
		if (r == 0)
			assert_int_equal(mb_ipc_flush(&c, &err), 0);
		frames++;
	}
	assert_int_equal(r, -1);
	assert_int_equal(err.code, MB_E_TEMP);
	assert_true(mb_ipc_want_write(&c));
	close(sv[0]);
	close(sv[1]);
	mb_ipc_conn_release(&c);
}

/* The fuzzer's seed frames are real frames: the stream decodes whole. */
static void
ipc_fuzz_seed_stream_decodes(void **state)
{
	char buf[4096];
	FILE *fp = fopen(MB_SOURCE_DIR "/tests/fuzz/corpus/ipc/stream", "rb");
	size_t n;
	struct mb_ipc_frame f;
	struct mb_ipc_row r;
	struct mb_err err = { 0 };
	int rows = 0, frames = 0;

	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	assert_int_equal(mb_ipc_feed(*state, buf, n, &err), 0);
	while (mb_ipc_next(*state, &f, &err) == 1) {
		frames++;
		if (f.hdr.type == MB_IPC_ROW) {
			assert_int_equal(mb_ipc_get_row(&f.cur, &r, &err), 0);
			assert_string_equal(r.msg->subject, "Hello");
			assert_string_equal(r.msg->body, "hello world");
			mb_ipc_row_release(&r);
			rows++;
		}
	}
	assert_int_equal(frames, 4);
	assert_int_equal(rows, 2);
}

/* Encode rq, then decode it as syncd would: 0 and *back filled, or -1. */
static int
ctl_round_trip(const struct mb_ctl_request_view *rq, struct mb_ctl_request *back)
{
	struct mb_ipc_out o;
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	int r;

	assert_int_equal(mb_ctl_put_request(&o, 9, rq, &err), 0);
	mb_ipc_conn_init(&c, -1, MB_IPC_BIT(MB_IPC_CTL_REQUEST));
	assert_int_equal(mb_ipc_feed(&c, o.buf.data, o.buf.len, &err), 0);
	assert_int_equal(mb_ipc_next(&c, &f, &err), 1);
	r = mb_ctl_get_request(&f.cur, back, &err);
	if (r == -1)
		assert_int_equal(err.code, MB_E_PROTO);
	mb_ipc_conn_release(&c);
	mb_ipc_out_release(&o);
	return r;
}

/* create_draft's fields cross the control socket whole, and only for a draft. */
static void
ctl_draft_request_round_trip_and_limits(void **state)
{
	const char *to[MB_CTL_RCPT_MAX + 1], *cc[] = { "carol@example.org" };
	struct mb_ctl_request_view rq = { .op = MB_CTL_DRAFT, .who = "sub-1", .to = to, .n_to = 2,
	    .cc = cc, .n_cc = 1, .subject = "Grüße", .body = "line one\nline two\n" };
	struct mb_ctl_request back;

	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(to); i++)
		to[i] = "alice@example.org";
	to[1] = "Bob <bob@example.org>";
	assert_int_equal(ctl_round_trip(&rq, &back), 0);
	assert_int_equal(back.op, MB_CTL_DRAFT);
	assert_int_equal(back.message_id, 0);	/* not a reply */
	assert_int_equal(back.n_to, 2);
	assert_string_equal(back.to[1], "Bob <bob@example.org>");
	assert_int_equal(back.n_cc, 1);
	assert_string_equal(back.cc[0], "carol@example.org");
	assert_string_equal(back.subject, "Grüße");
	assert_string_equal(back.body, "line one\nline two\n");
	mb_ctl_request_release(&back);

	rq.message_id = 42;	/* a reply, with no subject and an empty body */
	rq.subject = NULL;
	rq.body = "";
	assert_int_equal(ctl_round_trip(&rq, &back), 0);
	assert_int_equal(back.message_id, 42);
	assert_null(back.subject);
	assert_string_equal(back.body, "");
	mb_ctl_request_release(&back);

	rq.n_to = MB_CTL_RCPT_MAX + 1;	/* too many recipients */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	rq.n_to = 1;
	rq.body = NULL;			/* a draft needs a body */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	rq.body = "x";
	rq.dest = "Archive";		/* and has no destination */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	rq.dest = NULL;
	rq.op = MB_CTL_FLAG;		/* a flag request carries no draft fields */
	rq.add = MB_FLAG_SEEN;
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	rq.n_to = rq.n_cc = 0;
	rq.body = NULL;
	assert_int_equal(ctl_round_trip(&rq, &back), 0);
	mb_ctl_request_release(&back);
}

/* label_message's labels cross the control socket whole, and only for a label request. */
static void
ctl_label_request_round_trip_and_limits(void **state)
{
	const char *add[MB_CTL_LABELS_MAX + 1], *rm[] = { "old" };
	char too_long[MB_CTL_LABEL_MAX + 2];
	struct mb_ctl_request_view rq = { .op = MB_CTL_LABEL, .who = "sub-1", .message_id = 9,
	    .labels_add = add, .n_labels_add = 2, .labels_remove = rm, .n_labels_remove = 1 };
	struct mb_ctl_request back;

	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(add); i++)
		add[i] = "project-x";
	add[1] = "a b";		/* syntax is syncd's to refuse (and log), not the decoder's */
	assert_int_equal(ctl_round_trip(&rq, &back), 0);
	assert_int_equal(back.op, MB_CTL_LABEL);
	assert_int_equal(back.message_id, 9);
	assert_int_equal(back.n_labels_add, 2);
	assert_string_equal(back.labels_add[0], "project-x");
	assert_string_equal(back.labels_add[1], "a b");
	assert_int_equal(back.n_labels_remove, 1);
	assert_string_equal(back.labels_remove[0], "old");
	mb_ctl_request_release(&back);

	rq.n_labels_add = MB_CTL_LABELS_MAX + 1;	/* too many */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	rq.n_labels_add = 1;
	memset(too_long, 'k', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	add[0] = too_long;				/* too long */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	add[0] = "";					/* empty */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	add[0] = "ok";
	rq.n_labels_add = rq.n_labels_remove = 0;	/* a label request names a label */
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
	rq.n_labels_add = 1;
	rq.op = MB_CTL_FLAG;				/* a flag request carries none */
	rq.add = MB_FLAG_SEEN;
	assert_int_equal(ctl_round_trip(&rq, &back), -1);
}

/* A decoded request encodes again, through its view, to the same fields. */
static void
ctl_decoded_request_encodes_again(void **state)
{
	const char *to[] = { "alice@example.org", "Bob <bob@example.org>" };
	struct mb_ctl_request_view rq = { .op = MB_CTL_DRAFT, .who = "sub-1", .to = to,
	    .n_to = 2, .subject = "Hello", .body = "text" };
	struct mb_ctl_request_view v;
	struct mb_ctl_request back, again;

	(void)state;
	assert_int_equal(ctl_round_trip(&rq, &back), 0);
	mb_ctl_request_view(&back, &v);
	assert_int_equal(ctl_round_trip(&v, &again), 0);
	assert_int_equal(again.op, MB_CTL_DRAFT);
	assert_string_equal(again.who, "sub-1");
	assert_int_equal(again.n_to, 2);
	assert_string_equal(again.to[1], "Bob <bob@example.org>");
	assert_string_equal(again.body, "text");
	mb_ctl_request_release(&again);
	mb_ctl_request_release(&back);
}

/* Encode r as a write process does, then decode it as syncd does. */
static int
result_round_trip(const struct mb_ctl_result *r, struct mb_ctl_result *back, uint32_t mask)
{
	struct mb_ipc_out o;
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	int rc = -1;

	assert_int_equal(mb_ctl_put_result(&o, r, &err), 0);
	mb_ipc_conn_init(&c, -1, mask);
	assert_int_equal(mb_ipc_feed(&c, o.buf.data, o.buf.len, &err), 0);
	if (mb_ipc_next(&c, &f, &err) == 1) {
		assert_int_equal(f.hdr.type, MB_IPC_WRITE_RESULT);
		rc = mb_ctl_get_result(&f.cur, back, &err);
	}
	if (rc == -1)
		assert_int_equal(err.code, MB_E_PROTO);
	mb_ipc_conn_release(&c);
	mb_ipc_out_release(&o);
	return rc;
}

/* A label write's keywords cross in the result, known or not, within the limit. */
static void
ctl_write_result_carries_keywords(void **state)
{
	static struct mb_ctl_result r, back;

	(void)state;
	r = (struct mb_ctl_result){ .outcome = MB_CTL_OK, .detail = "labels set and verified",
	    .flags = MB_FLAG_SEEN, .keywords_known = true };
	strcpy(r.keywords, "$Important project-x");
	assert_int_equal(result_round_trip(&r, &back, MB_IPC_BIT(MB_IPC_WRITE_RESULT)), 0);
	assert_true(back.keywords_known);
	assert_string_equal(back.keywords, "$Important project-x");
	r.keywords_known = false;	/* none sent: none read back */
	assert_int_equal(result_round_trip(&r, &back, MB_IPC_BIT(MB_IPC_WRITE_RESULT)), 0);
	assert_false(back.keywords_known);
	assert_string_equal(back.keywords, "");
}

/*
 * A write result is its own frame type: it round-trips whole, a control
 * channel (which takes only replies) refuses it, and a bad one is refused.
 */
static void
ctl_write_result_has_its_own_frame(void **state)
{
	struct mb_ctl_result r = { .outcome = MB_CTL_OK, .detail = "moved to 'Archive' as UID 7",
	    .flags = MB_FLAG_SEEN, .uidvalidity = 12, .uid = 7, .used_move = true }, back;

	(void)state;
	assert_int_equal(result_round_trip(&r, &back, MB_IPC_BIT(MB_IPC_WRITE_RESULT)), 0);
	assert_int_equal(back.outcome, MB_CTL_OK);
	assert_string_equal(back.detail, r.detail);
	assert_int_equal(back.flags, MB_FLAG_SEEN);
	assert_int_equal(back.uidvalidity, 12);
	assert_int_equal(back.uid, 7);
	assert_true(back.used_move);
	/* mcpd's side of the control socket takes replies only */
	assert_int_equal(result_round_trip(&r, &back, MB_IPC_BIT(MB_IPC_CTL_REPLY)), -1);
	r.outcome = MB_CTL_FAILED + 1;
	assert_int_equal(result_round_trip(&r, &back, MB_IPC_BIT(MB_IPC_WRITE_RESULT)), -1);
	r.outcome = MB_CTL_REFUSED;
	r.flags = 1u << 7;
	assert_int_equal(result_round_trip(&r, &back, MB_IPC_BIT(MB_IPC_WRITE_RESULT)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ipc_rejects_frame_longer_than_max, setup, teardown),
		cmocka_unit_test_setup_teardown(ipc_rejects_frame_shorter_than_its_header, setup, teardown),
		cmocka_unit_test_setup_teardown(ipc_rejects_wrong_version_before_anything_else, setup, teardown),
		cmocka_unit_test(ipc_rejects_type_not_allowed_on_the_channel),
		cmocka_unit_test_setup_teardown(ipc_waits_for_a_whole_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(ipc_truncated_and_trailing_payloads_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(ipc_row_round_trip_with_a_one_mebibyte_body, setup, teardown),
		cmocka_unit_test(ipc_row_larger_than_max_is_refused_by_the_sender),
		cmocka_unit_test_setup_teardown(ipc_row_with_impossible_counts_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(ipc_string_with_a_nul_inside_is_refused, setup, teardown),
		cmocka_unit_test(ipc_over_a_socketpair_with_many_frames),
		cmocka_unit_test(ipc_writer_queue_is_capped),
		cmocka_unit_test(ctl_draft_request_round_trip_and_limits),
		cmocka_unit_test(ctl_decoded_request_encodes_again),
		cmocka_unit_test(ctl_write_result_has_its_own_frame),
		cmocka_unit_test(ctl_label_request_round_trip_and_limits),
		cmocka_unit_test(ctl_write_result_carries_keywords),
		cmocka_unit_test_setup_teardown(ipc_fuzz_seed_stream_decodes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
