/*
 * Messages in the index: upsert (one and batched), delete, the bucket counts
 * syncd's gap detection asks for, and the watermark.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/json.h"
#include "mailbox/util.h"

#include "index-private.h"

#define IDX_FIELD_MAX	(64u << 20)	/* one rendered header field; far above any real one */

/* s as a JSON string (RFC 8259), or null. */
static int
json_string(struct mb_buf *b, const char *s)
{
	return s == NULL ? mb_buf_adds(b, "null") : mb_json_quote(b, s, strlen(s));
}

/* [{"name":...,"addr":...},...], with "group" on the members of a group */
static int
render_addr_json(struct mb_buf *b, const struct mb_addr *v, size_t n)
{
	if (mb_buf_addc(b, '[') == -1)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if ((i > 0 && mb_buf_addc(b, ',') == -1) ||
		    mb_buf_adds(b, "{\"name\":") == -1 || json_string(b, v[i].name) == -1 ||
		    mb_buf_adds(b, ",\"addr\":") == -1 || json_string(b, v[i].addr) == -1 ||
		    (v[i].group != NULL && (mb_buf_adds(b, ",\"group\":") == -1 ||
		    json_string(b, v[i].group) == -1)) ||
		    mb_buf_addc(b, '}') == -1)
			return -1;
	}
	return mb_buf_addc(b, ']');
}

/* To then Cc, as one address list (what FTS indexes as recipients). */
static int
render_recipients(struct mb_buf *b, const struct mb_msg *m)
{
	size_t mark;

	if (mb_addr_list_format(b, m->to, m->n_to) == -1)
		return -1;
	mark = b->len;
	if (mark > 0 && mb_buf_adds(b, ", ") == -1)
		return -1;
	if (mb_addr_list_format(b, m->cc, m->n_cc) == -1)
		return -1;
	if (mark > 0 && b->len == mark + 2)
		mb_buf_truncate(b, mark);	/* no Cc */
	return 0;
}

static int
render_refs(struct mb_buf *b, char *const *refs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (refs[i] == NULL || *refs[i] == '\0')
			continue;
		if ((b->len > 0 && mb_buf_addc(b, ' ') == -1) || mb_buf_adds(b, refs[i]) == -1)
			return -1;
	}
	return 0;
}

/* The rendered forms of one message's header fields (owned by the struct). */
struct rendered {
	struct mb_buf	from, recipients, to_json, cc_json, refs;
};

static int
render(struct rendered *r, const struct mb_msg *m)
{
	mb_buf_init(&r->from, IDX_FIELD_MAX);
	mb_buf_init(&r->recipients, IDX_FIELD_MAX);
	mb_buf_init(&r->to_json, IDX_FIELD_MAX);
	mb_buf_init(&r->cc_json, IDX_FIELD_MAX);
	mb_buf_init(&r->refs, IDX_FIELD_MAX);
	if (mb_addr_format(&r->from, m->from.name, m->from.addr) == -1 ||
	    render_recipients(&r->recipients, m) == -1 ||
	    (m->n_to > 0 && render_addr_json(&r->to_json, m->to, m->n_to) == -1) ||
	    (m->n_cc > 0 && render_addr_json(&r->cc_json, m->cc, m->n_cc) == -1) ||
	    render_refs(&r->refs, m->references, m->n_references) == -1)
		return -1;
	return 0;
}

static void
rendered_release(struct rendered *r)
{
	mb_buf_release(&r->from);
	mb_buf_release(&r->recipients);
	mb_buf_release(&r->to_json);
	mb_buf_release(&r->cc_json);
	mb_buf_release(&r->refs);
}

/* A rendered field, or NULL when it came out empty. */
static const char *
nonempty(const struct mb_buf *b)
{
	return b->len > 0 ? b->data : NULL;
}

static const char *
nonempty_str(const char *s)
{
	return s != NULL && *s != '\0' ? s : NULL;
}

static int
stage_attachments(struct mb_index *idx, const struct mb_index_row *row, struct mb_err *err)
{
	const struct mb_msg *m = row->msg;
	sqlite3_stmt *st;

	/* The same key twice in one batch: the last one's attachments win. */
	st = idx_stmt(idx, IDX_STAGE_ATT_CLEAR_KEY, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, row->folder_id);
	sqlite3_bind_int64(st, 2, row->uidvalidity);
	sqlite3_bind_int64(st, 3, row->uid);
	if (idx_step_done(idx, st, "stage attachments", err) == -1)
		return -1;
	for (size_t i = 0; i < m->n_attachments; i++) {
		const struct mb_attachment *a = &m->attachments[i];

		st = idx_stmt(idx, IDX_STAGE_ATT_PUT, err);
		if (st == NULL)
			return -1;
		sqlite3_bind_int64(st, 1, row->folder_id);
		sqlite3_bind_int64(st, 2, row->uidvalidity);
		sqlite3_bind_int64(st, 3, row->uid);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)i);
		idx_bind_text(st, 5, a->filename);
		idx_bind_text(st, 6, a->mime_type ? a->mime_type : "application/octet-stream");
		sqlite3_bind_int64(st, 7, (sqlite3_int64)a->size);
		idx_bind_text(st, 8, a->content_id);
		sqlite3_bind_int(st, 9, a->is_inline);
		idx_bind_text(st, 10, nonempty_str(a->sha256));
		if (a->text != NULL)
			sqlite3_bind_text64(st, 11, a->text, a->text_len, SQLITE_STATIC, SQLITE_UTF8);
		idx_bind_text(st, 12, a->text_status);
		if (idx_step_done(idx, st, "stage attachment", err) == -1)
			return -1;
	}
	return 0;
}

/*
 * Stage one row: its thread id is assigned now (thread_refs is written at
 * once, so later rows of the batch see it), its fields go to temp.mb_stage.
 */
static int
stage_one(struct mb_index *idx, const struct mb_index_row *row, struct mb_err *err)
{
	const struct mb_msg *m = row->msg;
	struct rendered r;
	sqlite3_stmt *st;
	int64_t old_tid = 0, tid;
	int rc, ret = -1;

	if (m == NULL || row->folder_id <= 0 || row->uid == 0)
		return mb_err_set(err, MB_E_INVALID, "index: upsert: no message, folder or uid");

	/* Is this key already indexed?  Then this is the same message: keep its thread. */
	st = idx_stmt(idx, IDX_MSG_FIND, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, row->folder_id);
	sqlite3_bind_int64(st, 2, row->uidvalidity);
	sqlite3_bind_int64(st, 3, row->uid);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		old_tid = sqlite3_column_int64(st, 1);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "upsert lookup", err);

	if (idx_thread_assign(idx, m, old_tid, &tid, err) == -1)
		return -1;

	if (render(&r, m) == -1) {
		mb_err_set(err, MB_E_INVALID, "index: upsert uid %u: a header field is too long",
		    row->uid);
		goto out;
	}
	st = idx_stmt(idx, IDX_STAGE_PUT, err);
	if (st == NULL)
		goto out;
	sqlite3_bind_int64(st, 1, row->folder_id);
	sqlite3_bind_int64(st, 2, row->uidvalidity);
	sqlite3_bind_int64(st, 3, row->uid);
	idx_bind_text(st, 4, nonempty_str(m->message_id));
	idx_bind_text(st, 5, nonempty_str(m->in_reply_to));
	idx_bind_text(st, 6, nonempty(&r.refs));
	sqlite3_bind_int64(st, 7, tid);
	idx_bind_text(st, 8, m->subject);
	idx_bind_text(st, 9, nonempty_str(m->from.name));
	idx_bind_text(st, 10, nonempty_str(m->from.addr));
	idx_bind_text(st, 11, nonempty(&r.from));
	idx_bind_text(st, 12, nonempty(&r.recipients));
	idx_bind_text(st, 13, nonempty(&r.to_json));
	idx_bind_text(st, 14, nonempty(&r.cc_json));
	if (m->has_date)
		sqlite3_bind_int64(st, 15, m->date);
	if (row->internaldate != 0)
		sqlite3_bind_int64(st, 16, row->internaldate);
	sqlite3_bind_int64(st, 17, (sqlite3_int64)row->size);
	sqlite3_bind_int64(st, 18, row->flags);
	idx_bind_text(st, 19, nonempty_str(row->keywords));
	sqlite3_bind_int64(st, 20, (sqlite3_int64)row->modseq);
	idx_bind_text(st, 21, nonempty_str(m->list_id));
	sqlite3_bind_text64(st, 22, m->body ? m->body : "", m->body ? m->body_len : 0,
	    SQLITE_STATIC, SQLITE_UTF8);
	sqlite3_bind_int(st, 23, m->body_truncated);
	sqlite3_bind_int(st, 24, m->body_from_html);
	sqlite3_bind_int(st, 25, row->headers_only);
	sqlite3_bind_int64(st, 26, (sqlite3_int64)m->n_attachments);
	idx_bind_text(st, 27, m->parse_error);
	sqlite3_bind_int64(st, 28, (sqlite3_int64)time(NULL));
	if (idx_step_done(idx, st, "stage", err) == -1)
		goto out;
	ret = stage_attachments(idx, row, err);
out:
	rendered_release(&r);
	return ret;
}

static int
run(struct mb_index *idx, enum idx_stmt id, const char *what, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, id, err);

	return st == NULL ? -1 : idx_step_done(idx, st, what, err);
}

/*
 * Move the staged rows into messages with ONE statement.  Why not one upsert
 * per row: on this SQLite (3.40), a statement that writes FTS5 through a
 * trigger inside an open transaction opens a statement savepoint, and FTS5
 * flushes its in-memory terms on every savepoint, so a batch of 100 per-row
 * upserts wrote 100 tiny segments and spent most of its time merging them
 * (measured: 2.5x slower; docs/index.md).  One INSERT ... SELECT per batch
 * flushes once, and the triggers still do the indexing.
 */
static int
flush_stage(struct mb_index *idx, struct mb_err *err)
{
	if (run(idx, IDX_STAGE_ATT_COLS, "attachment text", err) == -1 ||
	    run(idx, IDX_STAGE_FLUSH, "upsert", err) == -1 ||
	    run(idx, IDX_STAGE_ATT_REPLACE, "replace attachments", err) == -1 ||
	    run(idx, IDX_STAGE_ATT_FLUSH, "insert attachments", err) == -1 ||
	    run(idx, IDX_STAGE_CLEAR, "clear stage", err) == -1 ||
	    run(idx, IDX_STAGE_ATT_CLEAR, "clear stage", err) == -1)
		return -1;
	return 0;
}

static int
clear_stage(struct mb_index *idx, struct mb_err *err)
{
	if (idx->mode != MB_INDEX_RW)
		return mb_err_set(err, MB_E_INVALID, "index: opened read-only");
	if (run(idx, IDX_STAGE_CLEAR, "clear stage", err) == -1 ||
	    run(idx, IDX_STAGE_ATT_CLEAR, "clear stage", err) == -1)
		return -1;
	return 0;
}

int
mb_index_upsert(struct mb_index *idx, const struct mb_index_row *row, int64_t *msg_id_r,
    struct mb_err *err)
{
	struct idx_unit u;
	sqlite3_stmt *st;
	int rc;

	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	rc = clear_stage(idx, err);
	if (rc == 0)
		rc = stage_one(idx, row, err);
	if (rc == 0)
		rc = flush_stage(idx, err);
	if (rc == 0 && msg_id_r != NULL) {
		st = idx_stmt(idx, IDX_MSG_FIND, err);
		if (st == NULL) {
			rc = -1;
		} else {
			sqlite3_bind_int64(st, 1, row->folder_id);
			sqlite3_bind_int64(st, 2, row->uidvalidity);
			sqlite3_bind_int64(st, 3, row->uid);
			int s = sqlite3_step(st);
			if (s == SQLITE_ROW)
				*msg_id_r = sqlite3_column_int64(st, 0);
			else
				rc = idx_sqlerr(idx, s, "upsert id", err);
			idx_stmt_done(st);
		}
	}
	return idx_unit_end(idx, &u, rc == 0, err) == 0 ? rc : -1;
}

int
mb_index_upsert_batch(struct mb_index *idx, const struct mb_index_row *rows, size_t n,
    struct mb_err *err)
{
	struct idx_unit u;
	int rc;

	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	rc = clear_stage(idx, err);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = stage_one(idx, &rows[i], err);
	if (rc == 0)
		rc = flush_stage(idx, err);
	return idx_unit_end(idx, &u, rc == 0, err);
}

int
mb_index_stage(struct mb_index *idx, const struct mb_index_row *rows, size_t n,
    struct mb_err *err)
{
	if (idx->mode != MB_INDEX_RW)
		return mb_err_set(err, MB_E_INVALID, "index: opened read-only");
	if (sqlite3_get_autocommit(idx->db))
		return mb_err_set(err, MB_E_INVALID, "index: stage: no transaction open");
	for (size_t i = 0; i < n; i++)
		if (stage_one(idx, &rows[i], err) == -1)
			return -1;
	return 0;
}

int
mb_index_flush(struct mb_index *idx, struct mb_err *err)
{
	if (idx->mode != MB_INDEX_RW)
		return mb_err_set(err, MB_E_INVALID, "index: opened read-only");
	if (sqlite3_get_autocommit(idx->db))
		return mb_err_set(err, MB_E_INVALID, "index: flush: no transaction open");
	return flush_stage(idx, err);
}

int
mb_index_delete(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint32_t uid,
    struct mb_err *err)
{
	sqlite3_stmt *st;

	/* Attachments go by ON DELETE CASCADE, the FTS entry by trigger. */
	st = idx_stmt(idx, IDX_MSG_DELETE, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, uid);
	return idx_step_done(idx, st, "delete", err);
}

/* Bind the key and the new flag state of IDX_MSG_FLAGS or IDX_MSG_FLAGS_CHANGED, and run it. */
static int
flags_update(struct mb_index *idx, enum idx_stmt id, int64_t folder_id, uint32_t uidvalidity,
    uint32_t uid, unsigned flags, const char *keywords, uint64_t modseq, struct mb_err *err)
{
	sqlite3_stmt *st;

	st = idx_stmt(idx, id, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, uid);
	sqlite3_bind_int64(st, 4, flags);
	idx_bind_text(st, 5, nonempty_str(keywords));
	sqlite3_bind_int64(st, 6, (sqlite3_int64)modseq);
	return idx_step_done(idx, st, "update flags", err);
}

int
mb_index_update_flags(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
    uint32_t uid, unsigned flags, const char *keywords, uint64_t modseq, struct mb_err *err)
{
	if (flags_update(idx, IDX_MSG_FLAGS, folder_id, uidvalidity, uid, flags, keywords, modseq,
	    err) == -1)
		return -1;
	if (sqlite3_changes(idx->db) == 0)
		return mb_err_set(err, MB_E_NOTFOUND, "index: uid %u (uidvalidity %u) not indexed",
		    uid, uidvalidity);
	return 0;
}

int
mb_index_update_flags_changed(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
    uint32_t uid, unsigned flags, const char *keywords, uint64_t modseq, bool *changed_r,
    struct mb_err *err)
{
	*changed_r = false;
	if (flags_update(idx, IDX_MSG_FLAGS_CHANGED, folder_id, uidvalidity, uid, flags, keywords,
	    modseq, err) == -1)
		return -1;
	*changed_r = sqlite3_changes(idx->db) > 0;
	return 0;
}

/* The key range of IDX_UID_COUNT and IDX_UID_LIST, bound. */
static sqlite3_stmt *
uid_range_stmt(struct mb_index *idx, enum idx_stmt id, int64_t folder_id, uint32_t uidvalidity,
    uint32_t first, uint32_t last, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, id, err);

	if (st == NULL)
		return NULL;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, first);
	sqlite3_bind_int64(st, 4, last);
	return st;
}

int
mb_index_uid_count(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint32_t first,
    uint32_t last, uint64_t *n_r, uint32_t *max_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	*n_r = 0;
	*max_r = 0;
	st = uid_range_stmt(idx, IDX_UID_COUNT, folder_id, uidvalidity, first, last, err);
	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*n_r = (uint64_t)sqlite3_column_int64(st, 0);
		*max_r = (uint32_t)sqlite3_column_int64(st, 1);
	}
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return idx_sqlerr(idx, rc, "uid count", err);
	return 0;
}

int
mb_index_uids(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity, uint32_t first,
    uint32_t last, uint32_t **uids_r, size_t *n_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	uint32_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	*uids_r = NULL;
	*n_r = 0;
	st = uid_range_stmt(idx, IDX_UID_LIST, folder_id, uidvalidity, first, last, err);
	if (st == NULL)
		return -1;
	for (rc = sqlite3_step(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = mb_xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = (uint32_t)sqlite3_column_int64(st, 0);
	}
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return idx_sqlerr(idx, rc, "uid list", err);
	}
	*uids_r = v != NULL ? v : mb_xcalloc(1, sizeof(*v));	/* never NULL on success */
	*n_r = n;
	return 0;
}

int
mb_index_bucket_counts(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
    uint32_t first_uid, uint32_t bucket, size_t n_buckets, uint32_t *counts_r,
    struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	if (bucket == 0)
		return mb_err_set(err, MB_E_INVALID, "index: bucket size 0");
	memset(counts_r, 0, n_buckets * sizeof(*counts_r));
	if (n_buckets == 0)
		return 0;
	st = idx_stmt(idx, IDX_BUCKETS, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, first_uid);
	sqlite3_bind_int64(st, 4, bucket);
	/* 64-bit: first_uid + bucket * n_buckets may pass 2^32. */
	sqlite3_bind_int64(st, 5, (sqlite3_int64)first_uid +
	    (sqlite3_int64)bucket * (sqlite3_int64)(n_buckets > UINT32_MAX ? UINT32_MAX : n_buckets));
	for (rc = sqlite3_step(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
		sqlite3_int64 b = sqlite3_column_int64(st, 0);

		if (MB_ALWAYS(b >= 0 && (uint64_t)b < n_buckets))
			counts_r[b] = (uint32_t)sqlite3_column_int64(st, 1);
	}
	idx_stmt_done(st);
	if (rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "bucket counts", err);
	return 0;
}

/*
 * Walk the indexed UIDs above old_watermark (ascending) beside the mailbox's:
 * the first mailbox UID with no row is the first gap.  Indexed UIDs the
 * mailbox no longer lists (expunged, not yet deleted) are stepped over.  The
 * walk stops at the gap, so its cost is the length of the complete prefix.
 */
int
mb_index_watermark(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
    uint32_t old_watermark, const uint32_t *mailbox_uids, size_t n, uint32_t *wm_r,
    struct mb_err *err)
{
	sqlite3_stmt *st;
	uint32_t wm = old_watermark;
	int64_t cur = -1;	/* current indexed uid; -1: before the first */
	bool more = true;
	int rc = SQLITE_DONE;

	st = idx_stmt(idx, IDX_WM_UIDS, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, old_watermark);
	for (size_t i = 0; i < n; i++) {
		uint32_t want = mailbox_uids[i];

		if (want <= old_watermark)
			continue;	/* counts as indexed */
		while (more && cur < want) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW)
				cur = sqlite3_column_int64(st, 0);
			else
				more = false;
		}
		if (!more && rc != SQLITE_DONE)
			break;
		if (cur != want) {
			wm = want - 1;	/* want > old_watermark >= 0: no underflow */
			goto done;
		}
		wm = want;
	}
done:
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "watermark", err);
	*wm_r = wm;
	return 0;
}
