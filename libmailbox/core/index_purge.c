/*
 * Rows the mailbox no longer holds (include/mailbox/index.h): a folder's
 * older UIDVALIDITY generations once the current one has converged, and a
 * folder the server stopped listing once it has stayed absent.  Every row
 * goes through DELETE FROM messages, the path expunges take, so the FTS
 * entry goes by trigger and the attachment rows by ON DELETE CASCADE; blobs
 * no row names any more are not this file's (docs/syncd.md, "When the
 * mailbox changes shape").
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
static const char purge_folder_msgs_sql[] = "DELETE FROM messages WHERE folder_id = ?1";
/* The folder's queued ranges follow by ON DELETE CASCADE. */
static const char purge_folder_sql[] = "DELETE FROM folders WHERE id = ?1";

int
mb_index_purge_generations(struct mb_index *idx, int64_t folder_id, uint32_t keep_uidvalidity,
    unsigned *purged_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, purge_gen_sql, err);

	*purged_r = 0;
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, keep_uidvalidity);
	if (idx_step_done(idx, st, "purge generations", err) == -1)
		return -1;
	*purged_r = (unsigned)sqlite3_changes(idx->db);
	return 0;
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
	if ((st = idx_stmt_sql(idx, purge_folder_msgs_sql, err)) != NULL) {
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
