/*
 * Rows the mailbox no longer holds (include/mailbox/index.h): a folder's
 * older UIDVALIDITY generations once the current one has converged, and a
 * folder the server stopped listing once it has stayed absent.  Every row
 * goes through DELETE FROM messages, the path expunges take, so the FTS
 * entry goes by trigger and the attachment rows by ON DELETE CASCADE; blobs
 * no row names any more are not this file's (docs/syncd.md, "When the
 * mailbox changes shape").  The contacts' summary rows of what goes are
 * dropped first (below, "Contacts").
 */
#include <stdbool.h>

#include <sqlite3.h>

#include "mailbox/index.h"

#include "index-private.h"

/*
 * Two range seeks on the (folder_id, uidvalidity, uid) index, below and
 * above the current UIDVALIDITY, so the check a converged folder makes every
 * tick reads no entry of the current generation ("uidvalidity != ?2", or an
 * OR of the two ranges, made SQLite walk all of the folder's entries).
 */
static const char purge_gen_sql[] =
	"DELETE FROM messages WHERE id IN ("
	"SELECT id FROM messages WHERE folder_id = ?1 AND uidvalidity < ?2 UNION ALL "
	"SELECT id FROM messages WHERE folder_id = ?1 AND uidvalidity > ?2)";
/*
 * Contacts.  contact_stats keeps each contact's first and last date per
 * folder generation, and a deleted row that held one makes the trigger
 * read the contact's remaining rows again (migration 0011).  Deleting a
 * whole generation row by row, oldest first, would do that for nearly every
 * row: a walk of a contact's rows per row, quadratic in its mail.  The
 * generation's summary rows go first instead, so the triggers find nothing
 * to update.  Those tables hold a row per contact and generation, a few
 * thousand, and are read whole only when something is purged
 * (purge_gen_any).
 */
static const char purge_gen_any_sql[] =
	"SELECT 1 FROM messages WHERE folder_id = ?1 AND uidvalidity < ?2 UNION ALL "
	"SELECT 1 FROM messages WHERE folder_id = ?1 AND uidvalidity > ?2 LIMIT 1";
static const char *const purge_gen_contacts_sql[] = {
	"DELETE FROM contact_stats WHERE folder_id = ?1 AND uidvalidity <> ?2",
	"DELETE FROM contact_names WHERE folder_id = ?1 AND uidvalidity <> ?2",
};
static const char *const purge_folder_contacts_sql[] = {
	"DELETE FROM contact_stats WHERE folder_id = ?1",
	"DELETE FROM contact_names WHERE folder_id = ?1",
};
static const char purge_folder_msgs_sql[] = "DELETE FROM messages WHERE folder_id = ?1";
/* The folder's queued ranges follow by ON DELETE CASCADE. */
static const char purge_folder_sql[] = "DELETE FROM folders WHERE id = ?1";

/* Run the two statements of sql with folder_id as ?1 and keep (when not -1) as ?2. */
static int
purge_contacts(struct mb_index *idx, const char *const sql[2], int64_t folder_id, int64_t keep,
    struct mb_err *err)
{
	for (size_t i = 0; i < 2; i++) {
		sqlite3_stmt *st = idx_stmt_sql(idx, sql[i], err);

		if (st == NULL)
			return -1;
		sqlite3_bind_int64(st, 1, folder_id);
		if (keep != -1)
			sqlite3_bind_int64(st, 2, keep);
		if (idx_step_done(idx, st, "purge contacts", err) == -1)
			return -1;
	}
	return 0;
}

/* Whether folder_id holds rows of a generation other than keep. */
static int
purge_gen_any(struct mb_index *idx, int64_t folder_id, int64_t keep, bool *any_r,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, purge_gen_any_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, keep);
	rc = sqlite3_step(st);
	*any_r = rc == SQLITE_ROW;
	idx_stmt_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : idx_sqlerr(idx, rc, "purge", err);
}

int
mb_index_purge_generations(struct mb_index *idx, int64_t folder_id, uint32_t keep_uidvalidity,
    unsigned *purged_r, struct mb_err *err)
{
	struct idx_unit u;
	sqlite3_stmt *st;
	bool any = false, ok = false;

	*purged_r = 0;
	if (purge_gen_any(idx, folder_id, keep_uidvalidity, &any, err) == -1)
		return -1;
	if (!any)
		return 0;
	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	if (purge_contacts(idx, purge_gen_contacts_sql, folder_id, keep_uidvalidity, err) == 0 &&
	    (st = idx_stmt_sql(idx, purge_gen_sql, err)) != NULL) {
		sqlite3_bind_int64(st, 1, folder_id);
		sqlite3_bind_int64(st, 2, keep_uidvalidity);
		if (idx_step_done(idx, st, "purge generations", err) == 0) {
			*purged_r = (unsigned)sqlite3_changes(idx->db);
			ok = true;
		}
	}
	if (!ok)
		*purged_r = 0;
	return idx_unit_end(idx, &u, ok, err);
}

int
mb_index_purge_folder(struct mb_index *idx, int64_t folder_id, unsigned *purged_r,
    struct mb_err *err)
{
	struct idx_unit u;
	sqlite3_stmt *st;
	bool ok = false;

	*purged_r = 0;
	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	if (purge_contacts(idx, purge_folder_contacts_sql, folder_id, -1, err) == 0 &&
	    (st = idx_stmt_sql(idx, purge_folder_msgs_sql, err)) != NULL) {
		sqlite3_bind_int64(st, 1, folder_id);
		if (idx_step_done(idx, st, "purge folder", err) == 0) {
			*purged_r = (unsigned)sqlite3_changes(idx->db);
			if ((st = idx_stmt_sql(idx, purge_folder_sql, err)) != NULL) {
				sqlite3_bind_int64(st, 1, folder_id);
				ok = idx_step_done(idx, st, "purge folder", err) == 0;
			}
		}
	}
	if (!ok)
		*purged_r = 0;
	return idx_unit_end(idx, &u, ok, err);
}
