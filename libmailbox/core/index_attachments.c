/*
 * Attachments in the index (include/mailbox/attachments.h): the reads of
 * get_attachment, the rows that still wait for extraction, their outcome,
 * and the blob check of the garbage collection.  Which attachment a search
 * hit came from is index_attach_hits.c's.  The rows themselves are written with their message
 * (index_messages.c); docs/attachments.md has the design.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/attachments.h"
#include "mailbox/buf.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#include "index-private.h"

static const char read_sql[] =
	"SELECT id, message_id, ordinal, filename, mime_type, size, is_inline, sha256,"
	" extract_status, extracted_text FROM attachments WHERE id = ?1";

static const char backlog_sql[] =
	"SELECT id, sha256, mime_type, filename FROM attachments"
	" WHERE extract_status IS NULL AND sha256 IS NOT NULL AND id > ?1 ORDER BY id LIMIT ?2";
static const char backlog_count_sql[] =
	"SELECT count(*) FROM attachments WHERE extract_status IS NULL AND sha256 IS NOT NULL";

static const char set_sql[] =
	"UPDATE attachments SET extracted_text = ?2, extract_status = ?3 WHERE id = ?1";
/* The join IDX_STAGE_ATT_COLS makes for new rows, packed as it packs it; the
 * message's FTS columns follow by trigger. */
static const char refresh_sql[] =
	"UPDATE messages SET att_text = mb_text_pack((SELECT group_concat(extracted_text,"
	" char(10) || char(10)) FROM (SELECT extracted_text FROM attachments AS a"
	" WHERE a.message_id = messages.id AND extracted_text IS NOT NULL ORDER BY ordinal)))"
	" WHERE id = (SELECT message_id FROM attachments WHERE id = ?1)";

static const char used_sql[] = "SELECT 1 FROM attachments WHERE sha256 = ?1 LIMIT 1";

/* ---- get_attachment */

int
mb_attachment_read(struct mb_index *idx, int64_t id, size_t offset, size_t page_chars,
    struct mb_attachment_page *a, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, read_sql, err);
	const char *text;
	size_t tl;
	int rc;

	memset(a, 0, sizeof(*a));
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		idx_stmt_done(st);
		if (rc == SQLITE_DONE)
			return mb_err_set(err, MB_E_NOTFOUND, "index: no attachment with id %lld",
			    (long long)id);
		return idx_sqlerr(idx, rc, "attachment", err);
	}
	a->id = sqlite3_column_int64(st, 0);
	a->message_id = sqlite3_column_int64(st, 1);
	a->ordinal = sqlite3_column_int(st, 2);
	a->name = idx_col_text(st, 3, NULL);
	a->type = idx_col_text(st, 4, NULL);
	a->size = sqlite3_column_int64(st, 5);
	a->is_inline = sqlite3_column_int(st, 6) != 0;
	a->sha256 = idx_col_text(st, 7, NULL);
	a->status = idx_col_text(st, 8, NULL);
	a->has_text = sqlite3_column_type(st, 9) != SQLITE_NULL;
	text = (const char *)sqlite3_column_text(st, 9);
	tl = (size_t)sqlite3_column_bytes(st, 9);
	if (text == NULL) {
		text = "";
		tl = 0;
	}
	a->text_chars = mb_utf8_count(text, tl);
	idx_text_page(text, tl, offset, page_chars, &a->text, &a->text_len, &a->more,
	    &a->next_offset);
	idx_stmt_done(st);
	return 0;
}

void
idx_text_page(const char *text, size_t len, size_t offset, size_t cap, char **page_r,
    size_t *page_len_r, bool *more_r, int64_t *next_r)
{
	size_t start = mb_utf8_offset(text, len, offset);
	size_t end = start + mb_utf8_offset(text + start, len - start, cap);

	*page_r = mb_xmalloc(end - start + 1);
	memcpy(*page_r, text + start, end - start);
	(*page_r)[end - start] = '\0';
	*page_len_r = end - start;
	*more_r = end < len;
	*next_r = *more_r ? (int64_t)(offset + mb_utf8_count(text + start, end - start)) : 0;
}

void
mb_attachment_page_release(struct mb_attachment_page *a)
{
	free(a->name);
	free(a->type);
	free(a->sha256);
	free(a->status);
	free(a->text);
	memset(a, 0, sizeof(*a));
}

/* ---- re-extraction */

int
mb_attachment_backlog(struct mb_index *idx, int64_t after_id, size_t max,
    struct mb_attachment_backlog **v, size_t *n_r, int64_t *left_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	size_t n = 0;
	int rc;

	*v = mb_xcalloc(max ? max : 1, sizeof(**v));
	*n_r = 0;
	if ((st = idx_stmt_sql(idx, backlog_sql, err)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, after_id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
	while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *sha = (const char *)sqlite3_column_text(st, 1);

		if (sha == NULL || strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64)
			continue;	/* not a name this code wrote: never a path */
		(*v)[n].id = sqlite3_column_int64(st, 0);
		memcpy((*v)[n].sha256, sha, 65);
		(*v)[n].type = idx_col_text(st, 2, NULL);
		(*v)[n].name = idx_col_text(st, 3, NULL);
		n++;
	}
	if (n < max && rc != SQLITE_DONE) {
		idx_stmt_done(st);
		*n_r = n;
		return idx_sqlerr(idx, rc, "attachments to extract", err);
	}
	idx_stmt_done(st);
	*n_r = n;
	if (left_r != NULL) {
		if ((st = idx_stmt_sql(idx, backlog_count_sql, err)) == NULL)
			return -1;
		rc = sqlite3_step(st);
		*left_r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
		idx_stmt_done(st);
		if (rc != SQLITE_ROW)
			return idx_sqlerr(idx, rc, "attachments to extract", err);
	}
	return 0;
}

void
mb_attachment_backlog_free(struct mb_attachment_backlog **v, size_t n)
{
	if (*v == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		free((*v)[i].type);
		free((*v)[i].name);
	}
	free(*v);
	*v = NULL;
}

int
mb_attachment_set_text(struct mb_index *idx, int64_t id, const char *text, size_t len,
    const char *status, struct mb_err *err)
{
	struct idx_unit u;
	sqlite3_stmt *st;
	int rc = -1;

	if (idx->mode != MB_INDEX_RW)
		return mb_err_set(err, MB_E_INVALID, "index: opened read-only");
	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	if ((st = idx_stmt_sql(idx, set_sql, err)) != NULL) {
		sqlite3_bind_int64(st, 1, id);
		if (text != NULL)
			sqlite3_bind_text64(st, 2, text, len, SQLITE_STATIC, SQLITE_UTF8);
		idx_bind_text(st, 3, status);
		rc = idx_step_done(idx, st, "attachment text", err);
	}
	if (rc == 0 && text != NULL) {
		rc = -1;
		if ((st = idx_stmt_sql(idx, refresh_sql, err)) != NULL) {
			sqlite3_bind_int64(st, 1, id);
			rc = idx_step_done(idx, st, "attachment text", err);
		}
	}
	return idx_unit_end(idx, &u, rc == 0, err) == 0 ? rc : -1;
}

/* ---- blob garbage collection */

int
mb_attachment_blob_used(struct mb_index *idx, const char *sha256, bool *used_r,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, used_sql, err);
	int rc;

	*used_r = true;	/* on error, keep the blob */
	if (st == NULL)
		return -1;
	idx_bind_text(st, 1, sha256);
	rc = sqlite3_step(st);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "blob check", err);
	*used_r = rc == SQLITE_ROW;
	return 0;
}
