/*
 * write_log (include/mailbox/index_audit.h).  The one place that knows the
 * table's columns: syncd writes it, mcpd and syncd --status read it.
 */
#include <stdlib.h>

#include <sqlite3.h>

#include "mailbox/index_audit.h"
#include "mailbox/util.h"

#include "index-private.h"

int
mb_index_audit_begin(struct mb_index *idx, const struct mb_audit_request *rq, int64_t *id_r,
    struct mb_err *err)
{
	static const char sql[] = "INSERT INTO write_log (at, tool, requested_by, peer_uid, "
	    "message_id, arguments, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending')";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, rq->at);
	idx_bind_text(st, 2, rq->tool);
	idx_bind_text(st, 3, rq->requested_by);
	sqlite3_bind_int64(st, 4, rq->peer_uid);
	if (rq->message_id != 0)
		sqlite3_bind_int64(st, 5, rq->message_id);
	idx_bind_text(st, 6, rq->arguments);
	if (idx_step_done(idx, st, "write_log insert", err) == -1)
		return -1;
	*id_r = sqlite3_last_insert_rowid(idx->db);
	return 0;
}

int
mb_index_audit_update(struct mb_index *idx, int64_t id, const struct mb_audit_update *u,
    struct mb_err *err)
{
	/* An unbound parameter is NULL: coalesce keeps the row's value. */
	static const char sql[] = "UPDATE write_log SET folder = coalesce(?2, folder), "
	    "uidvalidity = coalesce(?3, uidvalidity), uid = coalesce(?4, uid), outcome = "
	    "coalesce(?5, outcome), detail = coalesce(?6, detail), message_id = coalesce(?7, "
	    "message_id) WHERE id = ?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	idx_bind_text(st, 2, u->folder);
	if (u->uidvalidity != 0)
		sqlite3_bind_int64(st, 3, u->uidvalidity);
	if (u->uid != 0)
		sqlite3_bind_int64(st, 4, u->uid);
	idx_bind_text(st, 5, u->outcome);
	idx_bind_text(st, 6, u->detail);
	if (u->message_id != 0)
		sqlite3_bind_int64(st, 7, u->message_id);
	return idx_step_done(idx, st, "write_log update", err);
}

static int64_t
col_int_or_none(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

int
mb_index_audit_recent(struct mb_index *idx, size_t limit, struct mb_audit_entry **list_r,
    size_t *n_r, struct mb_err *err)
{
	static const char sql[] = "SELECT id, at, tool, requested_by, peer_uid, message_id, "
	    "folder, uidvalidity, uid, arguments, outcome, detail FROM write_log ORDER BY id "
	    "DESC LIMIT ?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	struct mb_audit_entry *list;
	size_t n = 0;
	int rc = SQLITE_DONE;

	*list_r = NULL;
	*n_r = 0;
	if (st == NULL)
		return -1;
	list = mb_xcalloc(limit > 0 ? limit : 1, sizeof(*list));
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	while (n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mb_audit_entry *e = &list[n++];

		e->id = sqlite3_column_int64(st, 0);
		e->at = sqlite3_column_int64(st, 1);
		e->tool = idx_col_text(st, 2, NULL);
		e->requested_by = idx_col_text(st, 3, NULL);
		e->peer_uid = col_int_or_none(st, 4);
		e->message_id = col_int_or_none(st, 5);
		e->folder = idx_col_text(st, 6, NULL);
		e->uidvalidity = col_int_or_none(st, 7);
		e->uid = col_int_or_none(st, 8);
		e->arguments = idx_col_text(st, 9, NULL);
		e->outcome = idx_col_text(st, 10, NULL);
		e->detail = idx_col_text(st, 11, NULL);
	}
	if (n < limit && rc != SQLITE_DONE) {
		idx_sqlerr(idx, rc, "write_log", err);
		idx_stmt_done(st);
		mb_audit_list_free(&list, n);
		return -1;
	}
	idx_stmt_done(st);
	*list_r = list;
	*n_r = n;
	return 0;
}

void
mb_audit_list_free(struct mb_audit_entry **listp, size_t n)
{
	struct mb_audit_entry *list = *listp;

	for (size_t i = 0; list != NULL && i < n; i++) {
		free(list[i].tool);
		free(list[i].requested_by);
		free(list[i].folder);
		free(list[i].arguments);
		free(list[i].outcome);
		free(list[i].detail);
	}
	free(list);
	*listp = NULL;
}
