/*
 * Merging the full-text index into one segment (migrations/0015_fts_merge.sql,
 * docs/index.md "Segments").
 *
 * FTS5 stores its index as segments, one more per group commit, which its
 * automerge folds together a few at a time: a backfilled index keeps about a
 * dozen.  Every search opens each segment's doclist for each of its terms,
 * and a ranked walk through the block bounds does so again for each range of
 * ids it reads, so the segments cost search CPU: at 100,000 messages, eleven
 * of them cost about a sixth more than one (docs/benchmarks.md).  FTS5's 'merge'
 * command with a negative page count is its 'optimize' done a step at a
 * time: each step merges about that many leaf pages, in the caller's
 * transaction or its own, so a daemon can merge between other work.
 *
 * When: after the writer has caught up (syncd), once the index has grown by
 * a quarter since the last merge.  A merge rewrites the whole index (about
 * 15 us a message at 100,000), so a quarter makes it cost about 60 us for
 * each message added, spent while idle.
 *
 * The pages of the segments it folded are free afterwards, about a tenth
 * of a backfilled file.  An index made with auto_vacuum INCREMENTAL (every
 * new one: open_rw() in index.c) gives them back to the file system in the
 * merge's last steps, a bounded number a step; an older one keeps them for
 * the mail to come (a VACUUM converts it: docs/index.md "Segments").
 */
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "mailbox/index.h"

#include "index-private.h"

/* Grown by this share of the last merge's size: merge again. */
#define FTS_MERGE_GROWTH	4

static const char merged_sql[] =
	"SELECT coalesce((SELECT merged_max_id FROM fts_merge_state WHERE id = 1), 0)";
static const char merged_put_sql[] =
	"INSERT OR REPLACE INTO fts_merge_state (id, merged_max_id) VALUES (1, ?1)";
/* ?1 negative: every segment is merged into one, about -?1 leaf pages a step */
static const char merge_sql[] = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?1)";
/* Free pages to give back: none unless the file was made to (auto_vacuum 2). */
static const char free_pages_sql[] =
	"SELECT CASE (SELECT auto_vacuum FROM pragma_auto_vacuum) WHEN 2 "
	"THEN (SELECT freelist_count FROM pragma_freelist_count) ELSE 0 END";
/* A step's worth: moving a page costs about what merging one does. */
static const char give_back_sql[] = "PRAGMA incremental_vacuum(1000)";

int
mb_index_fts_merge_due(struct mb_index *idx, bool *due_r, struct mb_err *err)
{
	int64_t max_id = 0, merged = 0;

	*due_r = false;
	if (idx->mode != MB_INDEX_RW)
		return mb_err_set(err, MB_E_INVALID, "index: opened read-only");
	if (idx_max_id(idx, "full-text merge", &max_id, err) == -1 ||
	    idx_one_int64(idx, merged_sql, NULL, "full-text merge", &merged, err) == -1)
		return -1;
	*due_r = max_id > merged && max_id - merged >= merged / FTS_MERGE_GROWTH;
	return 0;
}

int
mb_index_fts_merge_step(struct mb_index *idx, int pages, bool *done_r, struct mb_err *err)
{
	struct idx_unit u;
	sqlite3_stmt *st;
	int64_t before, max_id = 0, free_pages = 0;
	int rc = -1;

	*done_r = false;
	if (idx->mode != MB_INDEX_RW)
		return mb_err_set(err, MB_E_INVALID, "index: opened read-only");
	if (pages <= 0)
		return mb_err_set(err, MB_E_INVALID, "index: full-text merge: no pages");
	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	if ((st = idx_stmt_sql(idx, merge_sql, err)) == NULL)
		goto out;
	sqlite3_bind_int(st, 1, -pages);
	/*
	 * FTS5 says whether a merge found work by the changes it counts: two
	 * or more when it wrote, fewer when every segment was one already.
	 */
	before = sqlite3_total_changes64(idx->db);
	if (idx_step_done(idx, st, "full-text merge", err) == -1)
		goto out;
	*done_r = sqlite3_total_changes64(idx->db) - before < 2;
	if (*done_r) {
		/* merged: then the freed pages go back, a step at a time */
		if (idx_one_int64(idx, free_pages_sql, NULL, "full-text merge", &free_pages,
		    err) == -1)
			goto out;
		if (free_pages > 0) {
			if ((st = idx_stmt_sql(idx, give_back_sql, err)) == NULL ||
			    idx_step_done(idx, st, "full-text merge: giving freed pages back",
			    err) == -1)
				goto out;
			*done_r = false;
		}
	}
	if (*done_r) {
		if (idx_max_id(idx, "full-text merge", &max_id, err) == -1 ||
		    (st = idx_stmt_sql(idx, merged_put_sql, err)) == NULL)
			goto out;
		sqlite3_bind_int64(st, 1, max_id);
		if (idx_step_done(idx, st, "full-text merge state", err) == -1)
			goto out;
	}
	rc = 0;
out:
	return idx_unit_end(idx, &u, rc == 0, err) == 0 ? rc : -1;
}

int
mb_index_fts_merge(struct mb_index *idx, struct mb_err *err)
{
	bool done = false;

	while (!done)
		if (mb_index_fts_merge_step(idx, MB_INDEX_FTS_MERGE_PAGES, &done, err) == -1)
			return -1;
	return 0;
}
