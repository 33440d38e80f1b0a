/*
 * The rows that hold a query's words, added up from the counts the bounds
 * builder keeps per chunk (migrations/0018_rank_counts.sql, docs/index.md
 * "Counts kept by chunk"), for the query's statistics.
 *
 * mb_bm25 (fts_rank.c) needs, for each phrase of a query, the rows that
 * hold it (its IDF).  The first time a connection ranks a query on the
 * index as it is, FTS5 counts them by walking the phrase's whole doclist:
 * for a word syncd bounds, which is in a fortieth of the rows or more, that
 * walk was most of the search (`the` at 1,000,000 messages: 247 of 440
 * million instructions).  The builder reads every row of each bounded word
 * in each chunk anyway, and keeps how many there were.  Here they are added
 * up, and FTS5 counts only the ids that no chunk's counts vouch for: the
 * newest ids, which no complete chunk holds yet, and the chunks with a row
 * inserted, changed or deleted since their build (not RANK_CHUNK_BUILT).
 *
 * Served: a phrase of one token that syncd bounds (rank_terms), in a MATCH
 * without a column filter (a chunk's count is of the word in any column)
 * and without a prefix.  Every other phrase is left to mb_bm25.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"
#include "search-private.h"

static const char term_sql[] = "SELECT 1 FROM rank_terms WHERE term = ?1";
/* A term's counts that are current: its chunk built whole since, by this build. */
static const char counts_sql[] =
	"SELECT b.chunk, b.docs FROM rank_bounds AS b JOIN rank_chunks AS c ON c.chunk = b.chunk "
	"WHERE b.term = ?1 AND b.gen = c.gen AND c.blocks = ?2 AND b.docs IS NOT NULL "
	"ORDER BY b.chunk";
static const char gap_sql[] =
	"SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3";

/*
 * Ranges of ids without current counts that FTS5 may be asked to count for
 * one word.  Each is a seek into the word's doclist and a walk of the range;
 * past this many (an index just migrated, whose chunks are all being built
 * again) the walk of the whole doclist costs about as much.
 */
#define COUNT_GAPS_MAX	16

struct gap {
	int64_t	lo, hi;
};

/* The rows of match (one quoted word) with ids in [lo, hi] added to *n; SQLite's result code. */
static int
gap_count(sqlite3_stmt *st, const char *match, int64_t lo, int64_t hi, int64_t *n)
{
	int rc;

	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*n += sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/*
 * The rows that hold token (a word of rank_terms) into *docs_r: its
 * chunks' current counts, and FTS5's count of the ids between them; -1
 * when more than COUNT_GAPS_MAX ranges are left to FTS5.  st: counts_sql.
 */
static int
token_rows(struct mb_index *idx, sqlite3_stmt *st, const char *token, int64_t *docs_r,
    struct mb_err *err)
{
	struct mb_buf quoted = MB_BUF_INIT(4096);
	struct gap gaps[COUNT_GAPS_MAX + 1];
	int64_t next = INT64_MIN, docs = 0;
	size_t n_gaps = 0;
	sqlite3_stmt *gap;
	int rc;

	*docs_r = -1;
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, RANK_CHUNK_BUILT);
	while (n_gaps <= COUNT_GAPS_MAX && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t c = sqlite3_column_int64(st, 0);

		if (c < 0 || c > INT64_MAX / RANK_CHUNK_IDS - 1 || c * RANK_CHUNK_IDS < next)
			continue;	/* never: chunks are ids / RANK_CHUNK_IDS, in order */
		if (c * RANK_CHUNK_IDS > next)
			gaps[n_gaps++] = (struct gap){ next, c * RANK_CHUNK_IDS - 1 };
		docs += sqlite3_column_int64(st, 1);
		next = (c + 1) * RANK_CHUNK_IDS;
	}
	sqlite3_reset(st);
	if (n_gaps > COUNT_GAPS_MAX)
		return 0;
	if (rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "search: rank counts", err);
	gaps[n_gaps++] = (struct gap){ next, INT64_MAX };	/* the newest ids */
	if ((gap = idx_stmt_sql(idx, gap_sql, err)) == NULL)
		return -1;
	/* the word itself: porter's stem of a stem is not always itself (pleas: plea) */
	rc = mb_fts_raw_term(&quoted, token, strlen(token)) == 0 ? SQLITE_OK : SQLITE_TOOBIG;
	for (size_t i = 0; rc == SQLITE_OK && i < n_gaps; i++)
		rc = gap_count(gap, quoted.data, gaps[i].lo, gaps[i].hi, &docs);
	idx_stmt_done(gap);
	mb_buf_release(&quoted);
	if (rc == SQLITE_TOOBIG)
		return 0;	/* a word too long to quote: left to mb_bm25 */
	if (rc != SQLITE_OK)
		return idx_sqlerr(idx, rc, "search: rank counts", err);
	*docs_r = docs;
	return 0;
}

int
idx_rank_token_rows(struct mb_index *idx, const char *token, int64_t *docs_r, struct mb_err *err)
{
	struct mb_err ignored = { 0 };
	sqlite3_stmt *counts = idx_stmt_sql(idx, counts_sql, &ignored);
	int rc;

	*docs_r = -1;
	if (counts == NULL)
		return 0;	/* an index without counts (before migration 0018) */
	rc = token_rows(idx, counts, token, docs_r, err);
	idx_stmt_done(counts);
	return rc;
}

int
idx_rank_known_hits(struct mb_index *idx, const char *match, struct idx_rank_known *known,
    struct mb_err *err)
{
	struct mb_err ignored = { 0 };
	struct idx_rank_stats kept_stats = { .set = false };
	char *texts[IDX_RANK_PHRASES];
	int n_texts = 0, rc = 0;
	bool kept = false;
	sqlite3_stmt *term = NULL, *counts = NULL;
	Fts5Tokenizer *t = NULL;
	fts5_tokenizer tk;

	known->match = match;
	known->n = 0;
	if (match == NULL || strchr(match, '{') != NULL)
		return 0;	/* a column's count is not the word's */
	if (idx_prefix_stats_kept(idx, match, &kept_stats, &kept, err) == -1)
		return -1;
	if (kept)
		return 0;	/* nothing to count */
	if (!idx_match_phrases(match, texts, &n_texts)) {
		/* one prefix: its rows counted through its words (index_search_prefix.c) */
		rc = idx_prefix_rows(idx, match, &known->hits[0], err);
		known->n = rc == 0 && known->hits[0] >= 0 ? 1 : 0;
		goto out;
	}
	/*
	 * No statement: an index without counts (before migration 0018, read
	 * by a newer mcpd), none known.
	 */
	if ((term = idx_stmt_sql(idx, term_sql, &ignored)) == NULL ||
	    (counts = idx_stmt_sql(idx, counts_sql, &ignored)) == NULL ||
	    mb_fts_tokenizer(idx->db, &tk, &t) != 0)
		goto out;
	for (int i = 0; rc == 0 && i < n_texts; i++) {
		char *tok = mb_fts_single_token(&tk, t, texts[i], FTS5_TOKENIZE_QUERY);
		int step = SQLITE_DONE;

		known->hits[i] = -1;
		if (tok != NULL) {
			sqlite3_reset(term);
			sqlite3_bind_text(term, 1, tok, -1, SQLITE_STATIC);
			step = sqlite3_step(term);
			sqlite3_reset(term);
		}
		if (step == SQLITE_ROW)
			rc = token_rows(idx, counts, tok, &known->hits[i], err);
		else if (step != SQLITE_DONE)
			rc = idx_sqlerr(idx, step, "search: rank terms", err);
		free(tok);
		known->n = i + 1;
	}
out:
	if (t != NULL)
		tk.xDelete(t);
	idx_stmt_done(term);
	idx_stmt_done(counts);
	for (int i = 0; i < n_texts; i++)
		free(texts[i]);
	if (rc == -1)
		known->n = 0;
	return rc;
}
