/*
 * The reader's views of the index (include/mailbox/read.h): a message, a
 * thread page, the folders with counts, the newest messages.  Statements
 * are cached on the handle (idx_stmt_sql); values reach SQLite by binds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/read.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#include "index-private.h"

static const char message_sql[] =
	"SELECT m.id, f.name, f.role, m.thread_id, m.message_id, m.in_reply_to, m.date, "
	"m.from_text, m.recipients, m.to_json, m.cc_json, m.subject, m.flags, m.list_id, "
	"mb_text(m.body), m.body_truncated, m.headers_only, m.size, m.from_name, m.from_addr, "
	"m.refs, m.internaldate, m.sort_date IS NOT NULL AND m.sort_date IS m.date, m.keywords "
	"FROM messages AS m JOIN folders AS f ON f.id = m.folder_id "
	"WHERE m.id = ?1 AND " IDX_CURRENT("m", "f");

static const char attachments_sql[] =
	"SELECT filename, mime_type, size, is_inline, id, extracted_text IS NOT NULL, "
	"extract_status FROM attachments WHERE message_id = ?1 "
	"ORDER BY ordinal";

static const char thread_of_sql[] =
	"SELECT m.thread_id, (SELECT count(*) FROM messages AS t JOIN folders AS tf "
	"ON tf.id = t.folder_id WHERE t.thread_id = m.thread_id AND " IDX_CURRENT("t", "tf") ") "
	"FROM messages AS m JOIN folders AS f ON f.id = m.folder_id "
	"WHERE m.id = ?1 AND " IDX_CURRENT("m", "f");

static const char thread_sql[] =
	"SELECT m.id, f.name, m.date, m.from_text, m.subject, substr(mb_text(m.body), 1, ?2) "
	"FROM messages AS m JOIN folders AS f ON f.id = m.folder_id "
	"WHERE m.thread_id = ?1 AND " IDX_CURRENT("m", "f") " "
	"ORDER BY m.sort_date IS NULL, m.sort_date, m.id LIMIT ?3 OFFSET ?4";

/*
 * Each listed folder with its current generation's messages and unread ones,
 * from the summaries the writer's triggers keep (count_days of migration
 * 0011, count_unread of 0028): a few rows a folder, where counting the
 * messages read every one of them (725 ms at 1,000,000 messages).
 */
static const char folders_sql[] =
	"SELECT f.name, f.role, f.last_sync, "
	"(SELECT coalesce(sum(c.n), 0) FROM count_days AS c "
	"WHERE c.folder_id = f.id AND c.uidvalidity = f.uidvalidity), "
	"(SELECT coalesce(sum(u.n), 0) FROM count_unread AS u "
	"WHERE u.folder_id = f.id AND u.uidvalidity = f.uidvalidity), "
	"coalesce(f.role_source = 'name', 0) "
	"FROM folders AS f WHERE " IDX_LISTED("f") " ORDER BY f.name";
/* The same counted from the messages, for an index from before migration 0028. */
static const char folders_counted_sql[] =
	"SELECT f.name, f.role, f.last_sync, count(m.id), coalesce(sum((m.flags & 1) = 0), 0), "
	"coalesce(f.role_source = 'name', 0) "
	"FROM folders AS f LEFT JOIN messages AS m ON m.folder_id = f.id AND "
	IDX_CURRENT("m", "f") " WHERE " IDX_LISTED("f") " GROUP BY f.id ORDER BY f.name";

_Thread_local uint64_t idx_read_folders_steps;

static const char recent_sql[] =
	"SELECT m.id, m.subject, m.sort_date FROM messages AS m JOIN folders AS f "
	"ON f.id = m.folder_id WHERE " IDX_CURRENT("m", "f") " "
	"ORDER BY m.sort_date DESC, m.id DESC LIMIT ?1 OFFSET ?2";

/* What became of a row that is not current (mb_read_gone). */
static const char gone_sql[] =
	"SELECT m.message_id, m.folder_id, f.name, m.uidvalidity = f.uidvalidity, "
	IDX_CURRENT("m", "f") ", f.left_out FROM messages AS m JOIN folders AS f "
	"ON f.id = m.folder_id WHERE m.id = ?1";
/* Its current copy: the same Message-ID, in the same folder first. */
static const char copy_sql[] =
	"SELECT m.id FROM messages AS m JOIN folders AS f ON f.id = m.folder_id "
	"WHERE m.message_id = ?1 AND " IDX_CURRENT("m", "f") " "
	"ORDER BY m.folder_id = ?2 DESC, m.id DESC LIMIT 1";

/* ---- a message */

static void
message_fill(struct mb_read_message *m, sqlite3_stmt *st, size_t offset, size_t cap)
{
	/* bytes, not text: text would copy an unpacked body once more (index_search.c) */
	const char *body = sqlite3_column_blob(st, 14);
	size_t blen = (size_t)sqlite3_column_bytes(st, 14);

	m->id = sqlite3_column_int64(st, 0);
	m->folder = idx_col_text(st, 1, NULL);
	m->folder_role = idx_col_text(st, 2, NULL);
	m->thread_id = sqlite3_column_int64(st, 3);
	m->message_id = idx_col_text(st, 4, NULL);
	m->in_reply_to = idx_col_text(st, 5, NULL);
	m->has_date = sqlite3_column_type(st, 6) != SQLITE_NULL;
	m->date = sqlite3_column_int64(st, 6);
	m->from = idx_col_text(st, 7, NULL);
	m->recipients = idx_col_text(st, 8, NULL);
	m->to_json = idx_col_text(st, 9, NULL);
	m->cc_json = idx_col_text(st, 10, NULL);
	m->subject = idx_col_text(st, 11, NULL);
	m->flags = (unsigned)sqlite3_column_int(st, 12);
	m->list_id = idx_col_text(st, 13, NULL);
	m->body_truncated = sqlite3_column_int(st, 15) != 0;
	m->headers_only = sqlite3_column_int(st, 16) != 0;
	m->size = (uint64_t)sqlite3_column_int64(st, 17);
	m->from_name = idx_col_text(st, 18, NULL);
	m->from_addr = idx_col_text(st, 19, NULL);
	m->refs = idx_col_text(st, 20, NULL);
	m->has_received = sqlite3_column_type(st, 21) != SQLITE_NULL;
	m->received = sqlite3_column_int64(st, 21);
	m->dated_by_header = sqlite3_column_int(st, 22) != 0;
	m->keywords = idx_col_text(st, 23, NULL);
	if (body == NULL) {
		body = "";
		blen = 0;
	}
	m->body_chars = mb_utf8_count(body, blen);
	idx_text_page(body, blen, offset, cap, &m->body, &m->body_len, &m->more, &m->next_offset);
}

static int
attachments_fill(struct mb_index *idx, struct mb_read_message *m, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, attachments_sql, err);
	size_t cap = 0;
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, m->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mb_read_attachment *a;

		if (m->n_atts == cap) {
			cap = cap ? 2 * cap : 4;
			m->atts = mb_xrealloc(m->atts, cap * sizeof(*m->atts));
		}
		a = &m->atts[m->n_atts++];
		a->name = idx_col_text(st, 0, NULL);
		a->type = idx_col_text(st, 1, NULL);
		a->size = sqlite3_column_int64(st, 2);
		a->is_inline = sqlite3_column_int(st, 3) != 0;
		a->id = sqlite3_column_int64(st, 4);
		a->has_text = sqlite3_column_int(st, 5) != 0;
		a->text_status = idx_col_text(st, 6, NULL);
	}
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "message: attachments", err);
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
mb_read_message(struct mb_index *idx, int64_t id, size_t offset, size_t page_chars,
    struct mb_read_message *m, struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((st = idx_stmt_sql(idx, message_sql, err)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		message_fill(m, st, offset, page_chars);
	else if (rc == SQLITE_DONE)
		mb_err_set(err, MB_E_NOTFOUND, "index: no message with id %lld", (long long)id);
	else
		idx_sqlerr(idx, rc, "message", err);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return -1;
	if (attachments_fill(idx, m, err) == -1) {
		mb_read_message_release(m);
		return -1;
	}
	return 0;
}

void
mb_read_message_release(struct mb_read_message *m)
{
	free(m->folder);
	free(m->folder_role);
	free(m->message_id);
	free(m->in_reply_to);
	free(m->from);
	free(m->from_name);
	free(m->from_addr);
	free(m->refs);
	free(m->recipients);
	free(m->to_json);
	free(m->cc_json);
	free(m->subject);
	free(m->list_id);
	free(m->keywords);
	free(m->body);
	for (size_t i = 0; i < m->n_atts; i++) {
		free(m->atts[i].name);
		free(m->atts[i].type);
		free(m->atts[i].text_status);
	}
	free(m->atts);
	memset(m, 0, sizeof(*m));
}

/* The id of the current copy of Message-ID mid into *id_r (0: none). */
static int
current_copy(struct mb_index *idx, const char *mid, int64_t folder_id, int64_t *id_r,
    struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	*id_r = 0;
	if (mid == NULL || *mid == '\0')
		return 0;
	if ((st = idx_stmt_sql(idx, copy_sql, err)) == NULL)
		return -1;
	idx_bind_text(st, 1, mid);
	sqlite3_bind_int64(st, 2, folder_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id_r = sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "current copy", err);
	idx_stmt_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

int
mb_read_gone(struct mb_index *idx, int64_t id, int64_t id_base, char *buf, size_t len,
    struct mb_err *err)
{
	sqlite3_stmt *st;
	char *mid = NULL, *folder = NULL;
	int64_t folder_id = 0, copy = 0;
	bool same_gen = false, current = false, left_out = false;
	const char *where;
	int rc;

	if ((st = idx_stmt_sql(idx, gone_sql, err)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		mid = idx_col_text(st, 0, NULL);
		folder_id = sqlite3_column_int64(st, 1);
		folder = idx_col_text(st, 2, NULL);
		same_gen = sqlite3_column_int(st, 3) != 0;
		current = sqlite3_column_int(st, 4) != 0;
		left_out = sqlite3_column_int(st, 5) != 0;
	} else if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "gone", err);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW || current) {
		free(mid);
		free(folder);
		return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
	}
	if (current_copy(idx, mid, folder_id, &copy, err) == -1) {
		free(mid);
		free(folder);
		return -1;
	}
	/* Same UIDVALIDITY but not current: the folder is no longer listed, or
	 * no longer synced (left out of SYNC_FOLDERS). */
	where = left_out ? "is no longer synced (left out of SYNC_FOLDERS)" :
	    "is no longer on the server";
	if (copy != 0 && same_gen)
		snprintf(buf, len, "message %lld is an old copy: its folder %s; the current copy "
		    "is id %lld", (long long)(id_base + id), left_out ? where : "is no longer on the "
		    "server (deleted or renamed)", (long long)(id_base + copy));
	else if (copy != 0)
		snprintf(buf, len, "message %lld is an old copy: this folder was re-created on the "
		    "server; the current copy is id %lld", (long long)(id_base + id),
		    (long long)(id_base + copy));
	else
		snprintf(buf, len, "message %lld is no longer in the mailbox (folder '%s' %s)",
		    (long long)(id_base + id), folder, same_gen ? where : "was re-created on the server");
	free(mid);
	free(folder);
	return 1;
}

/* ---- a thread */

int
mb_read_thread(struct mb_index *idx, int64_t id, int64_t offset, size_t limit,
    size_t preview_chars, struct mb_read_thread *t, struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	memset(t, 0, sizeof(*t));
	if ((st = idx_stmt_sql(idx, thread_of_sql, err)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		t->thread_id = sqlite3_column_int64(st, 0);
		t->total = sqlite3_column_int64(st, 1);
	} else if (rc == SQLITE_DONE)
		mb_err_set(err, MB_E_NOTFOUND, "index: no message with id %lld", (long long)id);
	else
		idx_sqlerr(idx, rc, "thread", err);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return -1;
	if ((st = idx_stmt_sql(idx, thread_sql, err)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, t->thread_id);
	sqlite3_bind_int64(st, 2, (int64_t)preview_chars);
	sqlite3_bind_int64(st, 3, (int64_t)limit);
	sqlite3_bind_int64(st, 4, offset);
	t->items = mb_xcalloc(limit ? limit : 1, sizeof(*t->items));
	while (t->n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mb_read_thread_item *it = &t->items[t->n++];

		it->id = sqlite3_column_int64(st, 0);
		it->folder = idx_col_text(st, 1, NULL);
		it->has_date = sqlite3_column_type(st, 2) != SQLITE_NULL;
		it->date = sqlite3_column_int64(st, 2);
		it->from = idx_col_text(st, 3, NULL);
		it->subject = idx_col_text(st, 4, NULL);
		it->preview = idx_col_text(st, 5, NULL);
	}
	if (t->n == limit && limit > 0)
		rc = SQLITE_DONE;	/* LIMIT ?3: nothing more to step */
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "thread", err);
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		mb_read_thread_release(t);
		return -1;
	}
	return 0;
}

void
mb_read_thread_release(struct mb_read_thread *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->items[i].folder);
		free(t->items[i].from);
		free(t->items[i].subject);
		free(t->items[i].preview);
	}
	free(t->items);
	memset(t, 0, sizeof(*t));
}

/* ---- the folders */

int
mb_read_folders(struct mb_index *idx, struct mb_read_folder **list_r, size_t *n_r,
    struct mb_err *err)
{
	struct mb_read_folder *list = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int rc, version;

	*list_r = NULL;
	*n_r = 0;
	if (mb_index_schema_version(idx, &version, err) == -1 ||
	    (st = idx_stmt_sql(idx, version >= IDX_SCHEMA_COUNT_UNREAD ? folders_sql :
	    folders_counted_sql, err)) == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mb_read_folder *f;

		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			list = mb_xrealloc(list, cap * sizeof(*list));
		}
		f = &list[n++];
		f->name = idx_col_text(st, 0, NULL);
		f->role = idx_col_text(st, 1, NULL);
		f->last_sync = sqlite3_column_int64(st, 2);
		f->messages = sqlite3_column_int64(st, 3);
		f->unread = sqlite3_column_int64(st, 4);
		f->role_by_name = f->role != NULL && sqlite3_column_int(st, 5) != 0;
	}
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "folders", err);
	idx_read_folders_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		mb_read_folders_free(&list, n);
		return -1;
	}
	*list_r = list;
	*n_r = n;
	return 0;
}

void
mb_read_folders_free(struct mb_read_folder **listp, size_t n)
{
	struct mb_read_folder *list = *listp;

	for (size_t i = 0; list != NULL && i < n; i++) {
		free(list[i].name);
		free(list[i].role);
	}
	free(list);
	*listp = NULL;
}

/* ---- the newest messages */

int
mb_read_recent(struct mb_index *idx, int64_t offset, size_t limit,
    struct mb_read_recent **list_r, size_t *n_r, bool *more_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, recent_sql, err);
	struct mb_read_recent *list;
	size_t n = 0;
	int rc;

	*list_r = NULL;
	*n_r = 0;
	*more_r = false;
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, (int64_t)limit + 1);	/* one more: is there a next page? */
	sqlite3_bind_int64(st, 2, offset);
	list = mb_xcalloc(limit ? limit : 1, sizeof(*list));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == limit) {
			*more_r = true;
			rc = SQLITE_DONE;
			break;
		}
		list[n].id = sqlite3_column_int64(st, 0);
		list[n].subject = idx_col_text(st, 1, NULL);
		list[n].has_date = sqlite3_column_type(st, 2) != SQLITE_NULL;
		list[n].date = sqlite3_column_int64(st, 2);
		n++;
	}
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "recent", err);
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		mb_read_recent_free(&list, n);
		*more_r = false;
		return -1;
	}
	*list_r = list;
	*n_r = n;
	return 0;
}

void
mb_read_recent_free(struct mb_read_recent **listp, size_t n)
{
	struct mb_read_recent *list = *listp;

	for (size_t i = 0; list != NULL && i < n; i++)
		free(list[i].subject);
	free(list);
	*listp = NULL;
}
