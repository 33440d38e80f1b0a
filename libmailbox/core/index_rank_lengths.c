/*
 * The rows' lengths a search ranks with (rank-private.h, struct
 * idx_rank_lengths), read a block of 128 ids at a time from rank_lengths
 * (migrations/0022) instead of a row at a time from FTS5.
 *
 * BM25 divides a row's hits by its length, so every row a search scores is
 * measured.  FTS5's xColumnSize() steps a statement on messages_fts_docsize
 * for each row (a seek and a reset, about 0.6 us): half of the CPU of
 * `zzzzteana` (22,032 matches at 1,000,000 messages, nearly every one
 * scored).  syncd's builder reads those lengths for the block bounds and
 * keeps them; here one seek reads a block's 256 bytes when a row of it is
 * first measured, and its other rows are measured from memory.
 *
 * A block's row is there only while it holds the block's lengths: an
 * insert into the block or a change of a row's text deletes it (the
 * triggers of migration 0022) until the builder builds the chunk again,
 * and the rows of a block without one are measured by FTS5.  A deletion
 * leaves it, and a deleted row is never measured.  So a length from here
 * is the one FTS5 would give.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/err.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"

struct rank_block_lengths {
	uint16_t	len[RANK_BLOCK_IDS];	/* 0: ask FTS5 */
};

/* A block without lengths (its chunk not built, changed since, or a bad blob). */
static struct rank_block_lengths none;

static const char block_sql[] = "SELECT lengths FROM rank_lengths WHERE block = ?1";

bool idx_rank_lengths_used = true;
_Thread_local uint64_t idx_rank_lengths_served;

void
idx_rank_lengths_init(struct idx_rank_lengths *l, struct mb_index *idx)
{
	memset(l, 0, sizeof(*l));
	l->idx = idx;
	l->off = !idx_rank_lengths_used;
}

void
idx_rank_lengths_release(struct idx_rank_lengths *l)
{
	for (int64_t k = 0; k < l->n_block; k++)
		if (l->block[k] != &none)
			free(l->block[k]);
	free(l->block);
	memset(l, 0, sizeof(*l));
}

/*
 * Block k's lengths, read once (owned by l; &none without any).  An index
 * from before migration 0022 has no rank_lengths: l is turned off, and
 * every row is measured by FTS5.
 */
static const struct rank_block_lengths *
block_load(struct idx_rank_lengths *l, int64_t k)
{
	struct mb_err ignored = { 0 };
	struct rank_block_lengths *bl;
	sqlite3_stmt *st;
	const uint8_t *blob;

	if (k >= l->n_block) {
		int64_t n = k + 1 > 2 * l->n_block ? k + 1 : 2 * l->n_block;

		l->block = mb_xrealloc(l->block, (size_t)n * sizeof(*l->block));
		memset(l->block + l->n_block, 0, (size_t)(n - l->n_block) * sizeof(*l->block));
		l->n_block = n;
	}
	if (l->block[k] != NULL)
		return l->block[k];
	l->block[k] = &none;
	if ((st = idx_stmt_sql(l->idx, block_sql, &ignored)) == NULL) {
		l->off = true;
		return &none;
	}
	sqlite3_bind_int64(st, 1, k);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) == RANK_LENGTHS_BYTES &&
	    (blob = sqlite3_column_blob(st, 0)) != NULL) {
		bl = mb_xcalloc(1, sizeof(*bl));
		for (size_t i = 0; i < RANK_BLOCK_IDS; i++)
			bl->len[i] = (uint16_t)(blob[2 * i] | blob[2 * i + 1] << 8);
		l->block[k] = bl;
	}
	sqlite3_reset(st);	/* an error reads as no lengths: FTS5 measures */
	return l->block[k];
}

bool
idx_rank_lengths_get(struct idx_rank_lengths *l, int64_t id, int *n_tok)
{
	const struct rank_block_lengths *bl;

	if (l == NULL || l->off || id < 0)
		return false;
	bl = block_load(l, id / RANK_BLOCK_IDS);
	if (bl->len[id % RANK_BLOCK_IDS] == 0)
		return false;
	*n_tok = bl->len[id % RANK_BLOCK_IDS];
	idx_rank_lengths_served++;
	return true;
}
