/*
 * A wide folder's runs of ids (search-private.h, idx_folder_runs): the
 * stretches of ids that hold every message of a folder that holds many of
 * the messages, found without reading its ids.  Also a folder's first and
 * last id and its size, which a list of filters uses to choose its read
 * (index_search_list.c).
 *
 * A backfill indexes folder by folder, so a big folder's ids are one long
 * run from its backfill and a scattering among the mail that came after.
 * A search of a frequent word in it (`the in:Lists`, a folder of 30% of
 * 1,000,000 messages in one run) was read through the block walk, whose
 * best blocks lay mostly outside the folder: their rows failed the
 * folder's test, the walk gave up after eight ranges without a full page,
 * and every match was read (147 ms of CPU, against 7 for `the` alone).
 * Reading the folder's 300,000 ids into a bitmap, as a narrow scope's are,
 * cost 19 ms (docs/benchmarks.md, "Measured, not kept: a wide folder's
 * blocks left out of the walk").
 *
 * messages_folder_ids (migrations/0021) holds (folder_id, id) in order, so
 * one seek finds the folder's first message at or after any id: a seek
 * for each chunk of RANK_CHUNK_IDS ids that holds one of its messages,
 * one for each gap of whole chunks that holds none, and one more at the
 * end of each run for its last id (148 chunks and about 0.9 ms for that
 * folder).  The runs then hold every message of the folder and others
 * besides (the chunks' other ids): the walk gives the blocks outside them
 * no bound, and the count of what passes and the read of every match read
 * only them; the join still tests the folder for every row it reads.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"
#include "search-private.h"

/* The folder's (?1) first id at or after ?2, and its last at or before ?2. */
static const char first_sql[] =
	"SELECT id FROM messages INDEXED BY messages_folder_ids "
	"WHERE folder_id = ?1 AND id >= ?2 ORDER BY id LIMIT 1";
static const char last_sql[] =
	"SELECT id FROM messages INDEXED BY messages_folder_ids "
	"WHERE folder_id = ?1 AND id <= ?2 ORDER BY id DESC LIMIT 1";

_Thread_local uint64_t idx_folder_runs_read;

/*
 * The folder's id nearest to at in st's direction into *id_r (-1: none).
 * Resets st; SQLite's code otherwise.
 */
static int
seek(sqlite3_stmt *st, int64_t folder_id, int64_t at, int64_t *id_r)
{
	int rc;

	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, folder_id);
	sqlite3_bind_int64(st, 2, at);
	rc = sqlite3_step(st);
	*id_r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A statement of messages_folder_ids, or NULL (an index from before 0021). */
static sqlite3_stmt *
folder_stmt(struct mb_index *idx, const char *sql)
{
	struct mb_err ignored = { 0 };

	return idx_stmt_sql(idx, sql, &ignored);
}

int
idx_folder_runs(struct mb_index *idx, int64_t folder_id, int64_t max_id,
    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	sqlite3_stmt *first = folder_stmt(idx, first_sql), *last = NULL;
	struct idx_id_gap *gaps = NULL;
	size_t n_gaps = 0, cap = 0;
	int64_t lo = -1, chunk = -1, id = -1, end = -1;
	int rc = SQLITE_OK;

	memset(d, 0, sizeof(*d));
	*used_r = false;
	if (first == NULL || (last = folder_stmt(idx, last_sql)) == NULL)
		goto out;	/* no messages_folder_ids: the search goes without */
	/* a seek a chunk that holds one of the folder's ids, and one a gap of chunks */
	for (int64_t at = 0; at <= max_id; at = (chunk + 1) * RANK_CHUNK_IDS) {
		if ((rc = seek(first, folder_id, at, &id)) != SQLITE_OK || id < 0 || id > max_id)
			break;
		if (lo < 0)
			lo = id;
		else if (id / RANK_CHUNK_IDS > chunk + 1) {
			/* whole chunks without the folder: the last id before them ends a run */
			if ((rc = seek(last, folder_id, (chunk + 1) * RANK_CHUNK_IDS - 1, &end)) !=
			    SQLITE_OK)
				break;
			if (n_gaps == cap) {
				cap = cap ? 2 * cap : 64;
				gaps = mb_xrealloc(gaps, cap * sizeof(*gaps));
			}
			gaps[n_gaps++] = (struct idx_id_gap){ end, id };
		}
		chunk = id / RANK_CHUNK_IDS;
	}
	if (rc == SQLITE_OK && lo >= 0)
		rc = seek(last, folder_id, max_id, &end);
	if (rc != SQLITE_OK) {
		idx_stmt_done(first);
		idx_stmt_done(last);
		free(gaps);
		return idx_sqlerr(idx, rc, "search: the folder's runs", err);
	}
	if (lo >= 0 && end >= lo) {
		d->n = max_id + 1;
		d->wide = true;
		idx_narrow_runs_set(d, lo, end, gaps, n_gaps);
		idx_folder_runs_read++;
		*used_r = true;
	}
out:
	if (first != NULL)
		idx_stmt_done(first);
	if (last != NULL)
		idx_stmt_done(last);
	free(gaps);
	return 0;
}

int
idx_folder_span(struct mb_index *idx, int64_t folder_id, int64_t *lo_r, int64_t *hi_r,
    struct mb_err *err)
{
	sqlite3_stmt *first = folder_stmt(idx, first_sql), *last = NULL;
	int rc = SQLITE_OK;

	*lo_r = *hi_r = -1;
	if (first == NULL || (last = folder_stmt(idx, last_sql)) == NULL)
		goto out;	/* no messages_folder_ids */
	if ((rc = seek(first, folder_id, 0, lo_r)) == SQLITE_OK)
		rc = seek(last, folder_id, INT64_MAX, hi_r);
out:
	if (first != NULL)
		idx_stmt_done(first);
	if (last != NULL)
		idx_stmt_done(last);
	if (rc != SQLITE_OK) {
		*lo_r = *hi_r = -1;
		return idx_sqlerr(idx, rc, "search: the folder's ids", err);
	}
	return 0;
}

/* The folder's (?1) messages, every generation, from its summary rows by day. */
static const char size_sql[] =
	"SELECT coalesce(sum(n), 0) FROM count_days WHERE folder_id = ?1";

int
idx_folder_small(struct mb_index *idx, int64_t folder_id, bool *small_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	int64_t max_id = 0, n = 0;
	int rc;

	*small_r = false;
	if (idx_max_id(idx, "search: the folder's size", &max_id, err) == -1 ||
	    (st = idx_stmt_sql(idx, size_sql, err)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, folder_id);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return idx_sqlerr(idx, rc, "search: the folder's size", err);
	*small_r = n * IDX_LIST_ROW_COST <= max_id;
	return 0;
}
