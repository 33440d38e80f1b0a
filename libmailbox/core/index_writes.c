/*
 * The index side of syncd's writes (include/mailbox/index_writes.h): the
 * checks before a write and the row move after one.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index_writes.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#include "index-private.h"

/* Step st for its one row: 1 with a row; 0 without and -1 on error, both done with st. */
static int
step_one(struct mb_index *idx, sqlite3_stmt *st, const char *what, struct mb_err *err)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, what, err);
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* step_one, where no row is MB_E_NOTFOUND. */
static int
step_found(struct mb_index *idx, sqlite3_stmt *st, const char *what, struct mb_err *err)
{
	int r = step_one(idx, st, what, err);

	if (r == 0)
		return mb_err_set(err, MB_E_NOTFOUND, "index: %s: not found", what);
	return r;
}

int
mb_index_write_target(struct mb_index *idx, int64_t id, struct mb_write_target *t_r,
    struct mb_err *err)
{
	static const char sql[] = "SELECT m.folder_id, f.name, m.uidvalidity, m.uid, "
	    "m.keywords, m.modseq, f.uidvalidity, NOT " IDX_LISTED("f") ", f.left_out "
	    "FROM messages m "
	    "JOIN folders f ON f.id = m.folder_id WHERE m.id = ?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	memset(t_r, 0, sizeof(*t_r));
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	if (step_found(idx, st, "message lookup", err) == -1)
		return -1;
	t_r->folder_id = sqlite3_column_int64(st, 0);
	t_r->folder = idx_col_text(st, 1, NULL);
	t_r->uidvalidity = (uint32_t)sqlite3_column_int64(st, 2);
	t_r->uid = (uint32_t)sqlite3_column_int64(st, 3);
	t_r->keywords = idx_col_text(st, 4, NULL);
	t_r->modseq = (uint64_t)sqlite3_column_int64(st, 5);
	t_r->folder_uidvalidity = (uint32_t)sqlite3_column_int64(st, 6);
	t_r->folder_absent = sqlite3_column_int(st, 7) != 0;
	t_r->folder_left_out = sqlite3_column_int(st, 8) != 0;
	idx_stmt_done(st);
	return 0;
}

void
mb_write_target_release(struct mb_write_target *t)
{
	free(t->folder);
	free(t->keywords);
	memset(t, 0, sizeof(*t));
}

int
mb_index_write_dest(struct mb_index *idx, enum mb_write_dest how, const char *name,
    int64_t *id_r, char **name_r, uint32_t *uidvalidity_r, struct mb_err *err)
{
	/* Only folders the server's LIST still shows. */
	static const char by_name[] = "SELECT id, name, uidvalidity FROM folders AS f "
	    "WHERE name = ?1 AND " IDX_LISTED("f");
	static const char by_trash_role[] = "SELECT id, name, uidvalidity FROM folders AS f "
	    "WHERE role = '\\Trash' AND " IDX_LISTED("f") " ORDER BY id LIMIT 1";
	/* A Drafts folder without the role is still where a mail client looks. */
	static const char drafts[] = "SELECT id, name, uidvalidity FROM folders AS f "
	    "WHERE (role = '\\Drafts' OR name = 'Drafts') AND " IDX_LISTED("f") " "
	    "ORDER BY coalesce(role = '\\Drafts', 0) DESC, id LIMIT 1";
	sqlite3_stmt *st;

	*name_r = NULL;
	switch (how) {
	case MB_WRITE_DEST_NAME:
		st = idx_stmt_sql(idx, by_name, err);
		if (st != NULL)
			idx_bind_text(st, 1, name);
		break;
	case MB_WRITE_DEST_TRASH:
		st = idx_stmt_sql(idx, by_trash_role, err);
		break;
	default:
		st = idx_stmt_sql(idx, drafts, err);
		break;
	}
	if (st == NULL)
		return -1;
	if (step_found(idx, st, "destination folder", err) == -1)
		return -1;
	*id_r = sqlite3_column_int64(st, 0);
	*name_r = idx_col_text(st, 1, NULL);
	*uidvalidity_r = (uint32_t)sqlite3_column_int64(st, 2);
	idx_stmt_done(st);
	return 0;
}

int
mb_index_write_original(struct mb_index *idx, int64_t id, char **message_id_r, char **refs_r,
    char **subject_r, struct mb_err *err)
{
	static const char sql[] = "SELECT message_id, refs, subject FROM messages WHERE id = "
	    "?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	*message_id_r = *refs_r = *subject_r = NULL;
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	if (step_found(idx, st, "original message", err) == -1)
		return -1;
	*message_id_r = idx_col_text(st, 0, NULL);
	*refs_r = idx_col_text(st, 1, NULL);
	*subject_r = idx_col_text(st, 2, NULL);
	idx_stmt_done(st);
	return 0;
}

int
mb_index_message_find(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
    uint32_t uid, int64_t *id_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, IDX_MSG_FIND, err);
	int r;

	*id_r = 0;
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, uidvalidity);
	sqlite3_bind_int64(st, 3, uid);
	if ((r = step_one(idx, st, "message by key", err)) != 1)
		return r;	/* 0: none, *id_r stays 0 */
	*id_r = sqlite3_column_int64(st, 0);
	idx_stmt_done(st);
	return 0;
}

int
mb_index_message_rekey(struct mb_index *idx, int64_t id, int64_t folder_id,
    uint32_t uidvalidity, uint32_t uid, struct mb_err *err)
{
	static const char sql[] = "UPDATE messages SET folder_id = ?2, uidvalidity = ?3, "
	    "uid = ?4, flags = flags & ~?5 WHERE id = ?1";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, folder_id);
	sqlite3_bind_int64(st, 3, uidvalidity);
	sqlite3_bind_int64(st, 4, uid);
	sqlite3_bind_int64(st, 5, MB_FLAG_DELETED);
	return idx_step_done(idx, st, "move row", err);
}
