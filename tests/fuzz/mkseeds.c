/*
 * Writes the seed inputs of the two wire fuzzers, fuzz_ipc (worker -> syncd)
 * and fuzz_ctl (mcpd <-> syncd control socket), with the library's own
 * encoders, so the seeds always carry the current MB_IPC_VERSION and field
 * layout.  A seed from an older wire is rejected at its header and teaches
 * the fuzzer nothing past it; the test `fuzz/seeds_current` runs this with
 * --check and fails until the committed seeds are regenerated:
 *
 *	build/tests/mkseeds tests/fuzz/corpus		(write)
 *	build/tests/mkseeds --check tests/fuzz/corpus	(compare, for the test)
 *
 * Each seed is one well-formed frame (or a short stream of them) per frame
 * kind, plus the malformed ones a decoder must refuse (a wrong version, a
 * short payload, an unknown op).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/ctl.h"
#include "mailbox/ipc.h"
#include "mailbox/msg.h"

#define SEED_MAX	(64u << 10)	/* every seed is small; fuzz-smoke caps inputs at 64 KiB */

struct seed_set {
	const char	*dir;		/* corpus/<fuzzer> */
	bool		 check;		/* compare instead of write */
	int		 stale;		/* seeds that differ (check mode) */
};

/* Append a finished frame to b (the frames of one seed file). */
static void
frame_add(struct mb_buf *b, struct mb_ipc_out *o)
{
	struct mb_err err = { 0 };

	if (mb_ipc_out_finish(o, &err) == -1 || mb_buf_add(b, o->buf.data, o->buf.len) == -1) {
		fprintf(stderr, "mkseeds: cannot encode a frame: %s\n", err.msg);
		exit(2);
	}
	mb_ipc_out_release(o);
}

/* A frame built by an encoder that finishes it itself (the ctl ones). */
static void
frame_take(struct mb_buf *b, struct mb_ipc_out *o)
{
	if (mb_buf_add(b, o->buf.data, o->buf.len) == -1) {
		fprintf(stderr, "mkseeds: seed over %u bytes\n", SEED_MAX);
		exit(2);
	}
	mb_ipc_out_release(o);
}

/* Read path into *out (caller releases); -1 when it does not exist. */
static int
file_read(const char *path, struct mb_buf *out)
{
	FILE *f = fopen(path, "rb");
	char chunk[4096];
	size_t n;

	if (f == NULL)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (mb_buf_add(out, chunk, n) == -1)
			break;
	fclose(f);
	return 0;
}

/*
 * Every frame of a well-formed seed must get through the decoder the fuzzer
 * drives, or the seed only exercises the refusal paths.
 */
static void
seed_decodes(const char *name, const struct mb_buf *b)
{
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	int r, frames = 0, bad = 0;

	mb_ipc_conn_init(&c, -1, ~0u);
	if (mb_ipc_feed(&c, b->data, b->len, &err) == -1)
		bad++;
	while (!bad && (r = mb_ipc_next(&c, &f, &err)) == 1) {
		struct mb_ipc_row row;
		struct mb_ctl_request rq;
		struct mb_ctl_reply rp;
		struct mb_ctl_result res;
		char *str;

		frames++;
		switch (f.hdr.type) {
		case MB_IPC_ROW:
			bad += mb_ipc_get_row(&f.cur, &row, &err) == -1;
			mb_ipc_row_release(&row);
			break;
		case MB_IPC_CTL_REQUEST:
			bad += mb_ctl_get_request(&f.cur, &rq, &err) == -1;
			mb_ctl_request_release(&rq);
			break;
		case MB_IPC_CTL_REPLY:
			bad += mb_ctl_get_reply(&f.cur, &rp, &err) == -1;
			mb_ctl_reply_release(&rp);
			break;
		case MB_IPC_WRITE_RESULT:
			bad += mb_ctl_get_result(&f.cur, &res, &err) == -1;
			break;
		case MB_IPC_FAIL:
			(void)mb_ipc_get_u32(&f.cur);
			str = mb_ipc_get_strdup(&f.cur);
			free(str);
			bad += mb_ipc_end(&f.cur, &err) == -1;
			break;
		case MB_IPC_RANGE_DONE:
			(void)mb_ipc_get_u32(&f.cur);
			bad += mb_ipc_end(&f.cur, &err) == -1;
			break;
		default:
			bad += mb_ipc_end(&f.cur, &err) == -1;
			break;
		}
	}
	if (!bad && (r == -1 || frames == 0 || mb_ipc_pending_input(&c)))
		bad++;
	mb_ipc_conn_release(&c);
	if (bad) {
		fprintf(stderr, "mkseeds: seed %s does not decode: %s\n", name, err.msg);
		exit(2);
	}
}

/* Write, or in check mode compare, one seed; releases b. */
static void
seed_emit(struct seed_set *s, const char *name, struct mb_buf *b)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s/%s", s->dir, name) >= (int)sizeof(path)) {
		fprintf(stderr, "mkseeds: path too long\n");
		exit(2);
	}
	if (strcmp(name, "badver") != 0 && strcmp(name, "badversion") != 0 &&
	    strcmp(name, "short") != 0)
		seed_decodes(name, b);
	if (s->check) {
		struct mb_buf have = MB_BUF_INIT(SEED_MAX);

		if (file_read(path, &have) == -1 || have.len != b->len ||
		    memcmp(have.data, b->data, b->len) != 0) {
			fprintf(stderr, "mkseeds: %s is not what the current wire encodes\n", path);
			s->stale++;
		}
		mb_buf_release(&have);
	} else {
		FILE *f = fopen(path, "wb");

		if (f == NULL || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
			fprintf(stderr, "mkseeds: %s: %s\n", path, strerror(errno));
			exit(2);
		}
	}
	mb_buf_release(b);
}

/* A frame with no payload; version given so a wrong one can be written. */
static void
bare_frame(struct mb_buf *b, enum mb_ipc_type type, uint32_t id, uint32_t version)
{
	uint32_t h[4] = { type, MB_IPC_HDR_LEN, id, version };

	if (mb_buf_add(b, h, sizeof(h)) == -1)
		exit(2);
}

/* ---- worker -> syncd (fuzz_ipc) */

/* A message with every kind of field the row encoder writes. */
static void
row_frame(struct mb_buf *b, uint32_t id)
{
	struct mb_addr to = { .name = "Bob", .addr = "bob@example.org", .group = NULL };
	struct mb_addr cc = { .name = NULL, .addr = NULL, .group = "undisclosed" };
	char *parents[] = { "a@example.org" };
	char *refs[] = { "root@example.org", "a@example.org" };
	struct mb_attachment att = {
		.filename = "notes.txt", .mime_type = "text/plain", .size = 11,
		.sha256 = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
		.charset = "utf-8", .text = "hello world", .text_len = 11, .text_status = "ok",
	};
	struct mb_msg m = {
		.subject = "Hello", .from = { .name = "Alice", .addr = "alice@example.org" },
		.to = &to, .n_to = 1, .cc = &cc, .n_cc = 1,
		.has_date = true, .date = 1700000000,
		.message_id = "b@example.org", .in_reply_to = "a@example.org",
		.parents = parents, .n_parents = 1, .references = refs, .n_references = 2,
		.list_id = "list.example.org",
		.body = "hello world", .body_len = 11,
		.attachments = &att, .n_attachments = 1,
	};
	struct mb_index_row row = {
		.folder_id = 1, .uidvalidity = 7, .uid = 100, .flags = MB_FLAG_SEEN,
		.keywords = "$Label1 project-x", .internaldate = 1700000100, .size = 512,
		.modseq = 42, .msg = &m,
	};
	struct mb_ipc_out o;

	mb_ipc_out_begin(&o, MB_IPC_ROW, id);
	mb_ipc_put_row(&o, &row);
	frame_add(b, &o);
}

static void
ipc_seeds(struct seed_set *s)
{
	struct mb_buf b = MB_BUF_INIT(SEED_MAX);
	struct mb_ipc_out o;

	bare_frame(&b, MB_IPC_READY, 1, MB_IPC_VERSION);
	seed_emit(s, "ready", &b);

	bare_frame(&b, MB_IPC_READY, 1, MB_IPC_VERSION + 3);
	seed_emit(s, "badver", &b);

	mb_ipc_out_begin(&o, MB_IPC_RANGE_DONE, 1);
	mb_ipc_put_u32(&o, 100);
	frame_add(&b, &o);
	seed_emit(s, "done", &b);

	mb_ipc_out_begin(&o, MB_IPC_FAIL, 1);
	mb_ipc_put_u32(&o, MB_E_TEMP);
	mb_ipc_put_str(&o, "imap: BYE");
	frame_add(&b, &o);
	seed_emit(s, "fail", &b);

	row_frame(&b, 1);
	seed_emit(s, "row", &b);

	/* What a worker sends for one range: ready, two rows, done. */
	bare_frame(&b, MB_IPC_READY, 1, MB_IPC_VERSION);
	row_frame(&b, 5);
	row_frame(&b, 6);
	mb_ipc_out_begin(&o, MB_IPC_RANGE_DONE, 7);
	mb_ipc_put_u32(&o, 2);
	frame_add(&b, &o);
	seed_emit(s, "stream", &b);
}

/* ---- mcpd <-> syncd (fuzz_ctl) */

static void
request_frame(struct mb_buf *b, uint32_t id, const struct mb_ctl_request_view *rq)
{
	struct mb_ipc_out o;
	struct mb_err err = { 0 };

	if (mb_ctl_put_request(&o, id, rq, &err) == -1) {
		fprintf(stderr, "mkseeds: request: %s\n", err.msg);
		exit(2);
	}
	frame_take(b, &o);
}

static void
ctl_seeds(struct seed_set *s)
{
	struct mb_buf b = MB_BUF_INIT(SEED_MAX);
	struct mb_ipc_out o;
	struct mb_err err = { 0 };
	const char *to[] = { "Alice <alice@example.org>", "bob@example.org" };
	const char *cc[] = { "carol@example.org" };
	const char *reply_to[] = { "alice@example.org" };
	const char *add[] = { "project-x", "$Important" };
	const char *rm[] = { "old" };
	struct mb_ctl_request_view flag = { .op = MB_CTL_FLAG, .who = "local", .message_id = 42,
	    .add = MB_FLAG_FLAGGED };
	struct mb_ctl_request_view deleted = { .op = MB_CTL_FLAG, .who = "local", .message_id = 42,
	    .add = MB_FLAG_DELETED };
	struct mb_ctl_request_view unseen = { .op = MB_CTL_FLAG, .who = "local", .message_id = 42,
	    .remove = MB_FLAG_SEEN };
	struct mb_ctl_request_view move = { .op = MB_CTL_MOVE, .who = "user@example",
	    .message_id = 7, .dest = "Archive" };
	struct mb_ctl_request_view trash = { .op = MB_CTL_TRASH, .who = "local", .message_id = 9 };
	struct mb_ctl_request_view draft = { .op = MB_CTL_DRAFT, .who = "user@example",
	    .to = to, .n_to = 2, .cc = cc, .n_cc = 1, .subject = "Lunch", .body = "Friday?\n" };
	struct mb_ctl_request_view reply = { .op = MB_CTL_DRAFT, .who = "local", .message_id = 7,
	    .to = reply_to, .n_to = 1, .body = "Yes.\n" };
	struct mb_ctl_request_view label = { .op = MB_CTL_LABEL, .who = "local", .message_id = 1,
	    .labels_add = add, .n_labels_add = 2, .labels_remove = rm, .n_labels_remove = 1 };
	struct mb_ctl_reply rp = { .outcome = MB_CTL_OK, .detail = "flags set and verified",
	    .message_id = 42, .flags = MB_FLAG_SEEN | MB_FLAG_FLAGGED, .folder = "INBOX",
	    .log_id = 12, .keywords = NULL };
	struct mb_ctl_result res = { .outcome = MB_CTL_OK, .uidvalidity = 12, .uid = 7,
	    .used_move = true };

	const struct {
		const char				*name;
		uint32_t				 id;
		const struct mb_ctl_request_view	*rq;
	} one[] = {
		{ "flag", 1, &flag }, { "deleted", 4, &deleted }, { "move", 2, &move },
		{ "trash", 3, &trash }, { "draft", 5, &draft }, { "draft-reply", 6, &reply },
		{ "label", 3, &label },
	};

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		request_frame(&b, one[i].id, one[i].rq);
		seed_emit(s, one[i].name, &b);
	}
	/* Two requests on one connection, as a client may pipeline them. */
	request_frame(&b, 1, &flag);
	request_frame(&b, 2, &unseen);
	seed_emit(s, "two", &b);

	if (mb_ctl_put_reply(&o, 1, &rp, &err) == -1)
		exit(2);
	frame_take(&b, &o);
	seed_emit(s, "reply", &b);

	(void)snprintf(res.detail, sizeof(res.detail), "moved to 'Archive' as UID 7");
	if (mb_ctl_put_result(&o, &res, &err) == -1)
		exit(2);
	frame_take(&b, &o);
	seed_emit(s, "result", &b);

	bare_frame(&b, MB_IPC_CTL_REQUEST, 1, MB_IPC_VERSION + 3);
	seed_emit(s, "badversion", &b);

	/* An unknown op and a payload that stops short of its fields. */
	mb_ipc_out_begin(&o, MB_IPC_CTL_REQUEST, 99);
	mb_ipc_put_u32(&o, UINT32_MAX);
	mb_ipc_put_u64(&o, 0);
	frame_add(&b, &o);
	seed_emit(s, "short", &b);
}

int
main(int argc, char **argv)
{
	bool check = argc == 3 && strcmp(argv[1], "--check") == 0;
	const char *top = argv[argc - 1];
	char dir[4096];
	int stale = 0;

	if (argc != 2 && !check) {
		fprintf(stderr, "usage: mkseeds [--check] CORPUS_DIR (tests/fuzz/corpus)\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		struct seed_set s = { .dir = dir, .check = check };

		(void)snprintf(dir, sizeof(dir), "%s/%s", top, i == 0 ? "ipc" : "ctl");
		if (i == 0)
			ipc_seeds(&s);
		else
			ctl_seeds(&s);
		stale += s.stale;
	}
	if (stale > 0) {
		fprintf(stderr, "mkseeds: %d seed(s) stale; regenerate with: "
		    "build/tests/mkseeds tests/fuzz/corpus\n", stale);
		return 1;
	}
	if (check)
		printf("mkseeds: every ipc and ctl seed matches wire version %d\n", MB_IPC_VERSION);
	return 0;
}
