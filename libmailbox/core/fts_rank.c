/*
 * mb_bm25: FTS5's bm25() ranking, with each query's corpus statistics kept
 * between searches.
 *
 *	mb_bm25(messages_fts, MATCH, w0, w1, ...)
 *
 * scores a row exactly as bm25(messages_fts, w0, w1, ...) does -- the same
 * formula, the same operations in the same order, so the same doubles -- but
 * bm25() starts every statement by counting, for each phrase of the query,
 * the rows that contain it (the phrase's IDF), and it does so with a full
 * scan of the phrase's doclist over the whole index: for a common word, a
 * phrase or a prefix at 100,000 messages that was most of a search's CPU,
 * however few rows the search went on to score.  Those counts, the row count
 * and the average row length depend only on the query and on the index's
 * contents, so they are kept, keyed by MATCH (the expression the statement
 * matches, passed as the second argument), for as long as the full-text
 * index holds what it held when they were computed: for the process, by
 * database file, whichever connection counted them (fts_rank_cache.c).
 *
 * Most of syncd's commits do not touch the full-text index: flag syncs,
 * moves, labels, the block bounds, the folders' sync state.  So the kept
 * statistics are not dropped whenever the file changes (the pager's data
 * version, SQLITE_FCNTL_DATA_VERSION, which every commit moves), only when
 * the index's own records changed: FTS5's structure record (which segments
 * exist: every write to the index adds a segment, a merge replaces some)
 * and its averages record (the row count and the columns' token totals).
 * The data version only says when to look at them again.  Each search
 * after a flag-only commit ranked with the statistics kept, where it would
 * have recounted them: +37% of CPU over the benchmark's queries at 100,000
 * messages (docs/benchmarks.md, "Statistics kept across commits").
 *
 * Each connection's view of the index (struct rank_view, the functions'
 * user data, freed when the connection closes) is used by one thread at a
 * time, as the connection is; the kept statistics are shared under a mutex.
 *
 *	mb_bm25_top(messages_fts, MATCH, FLOOR, w0, w1, ...)
 *
 * is the same score for a caller that keeps only the best rows (exact
 * top-k, index_search.c): FLOOR is a struct idx_rank_floor passed with
 * sqlite3_bind_pointer(), which the caller raises as its page fills.  A row
 * whose score cannot reach the floor is answered NULL without reading its
 * length (a docsize lookup, the dearest part of scoring a row once the
 * positions are read): its bound is the score it would have at the length
 * its hits prove (a hit at token n of a column: the column holds n + 1
 * tokens at least), which is never below its real score, operation by
 * operation (rank_score).
 */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/err.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"

#define RANK_KEY_MAX	8192	/* longer MATCH texts are not kept */

#define RANK_WEIGHT_COLS	32	/* columns whose weights a row keeps once read */

/*
 * A row's column weights (column col's is val[col], n of them; 1.0 past
 * them), each read from the function's arguments the first time one of
 * the row's hits needs it: sqlite3_value_double() once a column a row
 * instead of once a hit, which was 5% of the CPU of a search of common
 * words at 1,000,000 messages (docs/benchmarks.md, "A row's common words
 * left unread").  Not kept from row to row: a statement may call the
 * function twice with other weights (test_query.c does), and both calls
 * share its auxiliary data.
 */
struct row_weights {
	sqlite3_value	**val;
	int		n;
	uint32_t	have;			/* bit col: w[col] is read */
	double		w[RANK_WEIGHT_COLS];
};

static inline void
row_weights_init(struct row_weights *rw, int n_val, sqlite3_value **val, int w)
{
	rw->val = val + w;
	rw->n = n_val - w;
	rw->have = 0;
}

static inline double
row_weight(struct row_weights *rw, int col)
{
	if (col >= rw->n)
		return 1.0;
	if (col >= RANK_WEIGHT_COLS)
		return sqlite3_value_double(rw->val[col]);
	if (!((rw->have >> col) & 1u)) {
		rw->w[col] = sqlite3_value_double(rw->val[col]);
		rw->have |= 1u << col;
	}
	return rw->w[col];
}

/* Per statement execution (FTS5 auxdata): the statistics and scratch arrays. */
struct rank_query {
	int	n_phrase;
	double	avgdl;
	double	*idf;		/* n_phrase */
	double	*n_hit;		/* n_phrase: the rows that hold each phrase */
	double	*freq;		/* n_phrase: the current row's weighted hit counts */
	int	n_col;
	int	*col_min;	/* n_col: the current row's columns are at least this long */
	int	*order;		/* n_phrase: the phrases by IDF, highest first (rank_order_idf) */
};

/* The connection's view, freed when the connection closes. */
static void
rank_view_free(void *p)
{
	rank_view_release(p);
	free(p);
}

_Atomic uint64_t idx_rank_computed;
_Thread_local uint64_t idx_rank_sized;
_Thread_local uint64_t idx_rank_hits_read;
_Thread_local uint64_t idx_rank_cut;
_Thread_local uint64_t idx_rank_joined;
_Thread_local uint64_t idx_rank_outside;
_Thread_local uint64_t idx_rank_known_used;

static int
count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *arg)
{
	(void)api;
	(void)fts;
	(*(sqlite3_int64 *)arg)++;
	return SQLITE_OK;
}

/*
 * The statistics bm25() computes at the start of a statement, computed the
 * same way: avgdl = tokens / rows; per phrase, IDF = ln((N - n + 0.5) /
 * (n + 0.5)) over the N rows, n of which hold the phrase, and 1e-6 where
 * that is not positive (a phrase in more than half the rows).  n is
 * counted by walking the phrase's doclist, unless known (may be NULL) has
 * it for a phrase of one token: the rows the bounds builder counted
 * (index_rank_counts.c), or a prefix's rows counted through its words,
 * the same number.  Only for known's own MATCH text (key).
 */
static int
rank_compute(const Fts5ExtensionApi *api, Fts5Context *fts, struct rank_query *q,
    const char *key, const struct idx_rank_known *known)
{
	sqlite3_int64 n_row = 0, n_token = 0;
	int rc;

	if (known != NULL && (known->match == NULL || key == NULL || strcmp(key, known->match) != 0))
		known = NULL;	/* counts of another query's phrases */
	atomic_fetch_add_explicit(&idx_rank_computed, 1, memory_order_relaxed);
	rc = api->xRowCount(fts, &n_row);
	if (rc == SQLITE_OK)
		rc = api->xColumnTotalSize(fts, -1, &n_token);
	if (rc == SQLITE_OK)
		q->avgdl = (double)n_token / (double)n_row;
	for (int i = 0; rc == SQLITE_OK && i < q->n_phrase; i++) {
		sqlite3_int64 n_hit = 0;

		if (known != NULL && i < known->n && known->hits[i] >= 0 &&
		    api->xPhraseSize(fts, i) == 1) {
			n_hit = known->hits[i];
			idx_rank_known_used++;
		} else
			rc = api->xQueryPhrase(fts, i, &n_hit, count_row);
		if (rc == SQLITE_OK) {
			double idf = log((n_row - n_hit + 0.5) / (n_hit + 0.5));

			q->idf[i] = idf <= 0.0 ? 1e-6 : idf;
			q->n_hit[i] = (double)n_hit;
		}
	}
	return rc;
}

/*
 * q->order: the phrases by IDF, highest first (the rarest read first: a
 * row's rare words say most of its score and hold fewest hits); an
 * insertion sort, a query has a few phrases.
 */
static void
rank_order_idf(struct rank_query *q)
{
	for (int i = 0; i < q->n_phrase; i++) {
		int j = i;

		for (; j > 0 && q->idf[q->order[j - 1]] < q->idf[i]; j--)
			q->order[j] = q->order[j - 1];
		q->order[j] = i;
	}
}

/*
 * This statement's rank_query: from the connection's cache when the same
 * MATCH was ranked on the same full-text index, else computed (and kept),
 * with the rows known holds (may be NULL).  NULL with *rc_r set on failure.
 */
static struct rank_query *
rank_query_get(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
    sqlite3_value *match, const struct idx_rank_known *known, int *rc_r)
{
	struct rank_view *v = api->xUserData(fts);
	struct rank_query *q = api->xGetAuxdata(fts, 0);
	const char *key = (const char *)sqlite3_value_text(match);
	bool cacheable, kept;
	int n, n_col, n_kept;

	*rc_r = SQLITE_OK;
	if (q != NULL)
		return q;
	n = api->xPhraseCount(fts);
	n_col = api->xColumnCount(fts);
	q = sqlite3_malloc64(sizeof(*q) + 3 * (size_t)n * sizeof(double) +
	    ((size_t)n_col + (size_t)n) * sizeof(int));
	if (q == NULL) {
		*rc_r = SQLITE_NOMEM;
		return NULL;
	}
	q->n_phrase = n;
	q->idf = (double *)(q + 1);
	q->n_hit = q->idf + n;	/* right after the IDFs: the kept entries copy both at once */
	q->freq = q->n_hit + n;
	q->n_col = n_col;
	q->col_min = (int *)(q->freq + n);
	q->order = q->col_min + n_col;
	cacheable = key != NULL && strlen(key) <= RANK_KEY_MAX &&
	    rank_view_current(v, sqlite3_context_db_handle(ctx));
	/* q->idf and q->n_hit are one array of 2n, as the kept entries are */
	kept = cacheable && rank_kept_get(v, key, n, n, &n_kept, &q->avgdl, q->idf);
	if (!kept && (*rc_r = rank_compute(api, fts, q, key, known)) != SQLITE_OK) {
		sqlite3_free(q);
		return NULL;
	}
	if (!kept && cacheable)
		rank_kept_put(v, key, n, q->avgdl, q->idf);
	rank_order_idf(q);
	if ((*rc_r = api->xSetAuxdata(fts, q, sqlite3_free)) != SQLITE_OK)
		return NULL;	/* xSetAuxdata freed q */
	return q;
}

/*
 * Phrase i's term of a row's score, as bm25() computes it: its IDF times
 * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl)), where f sums the column
 * weights of the phrase's hits in the row (q->freq[i]) and D is the row's
 * length in tokens.  One expression for the score and its bounds, so that
 * they round alike.
 */
#define RANK_K1	1.2	/* bm25()'s k1 and b */
#define RANK_B	0.75

static inline double
rank_term(const struct rank_query *q, int i, double dl)
{
	return q->idf[i] * ((q->freq[i] * (RANK_K1 + 1.0)) /
	    (q->freq[i] + RANK_K1 * (1 - RANK_B + RANK_B * dl / q->avgdl)));
}

/*
 * A row's score, as bm25() computes it: its phrases' terms summed in their
 * order, negated, so that better rows sort first.  Every operation is
 * monotone in D (IEEE arithmetic rounds monotonically), so D = 0 gives a
 * bound no row of these hits can beat, bit for bit.
 */
static double
rank_score(const struct rank_query *q, double dl)
{
	double score = 0.0;

	for (int i = 0; i < q->n_phrase; i++)
		score += rank_term(q, i, dl);
	return -1.0 * score;
}

/*
 * A bound on the row's score (negated, as rank_score's) when only the
 * first k phrases of q->order are read (their hits in q->freq): those
 * phrases scored at dl, a length the row has at least, and each phrase
 * not read at the most a term can give, its IDF times k1 + 1 (f * (k1 + 1)
 * / (f + K) is below k1 + 1 for every f).  Summed in another order than
 * rank_score's, so within a few units in the last place of a bound: the
 * caller leaves a margin (RANK_CUT_MARGIN).
 */
static double
rank_bound_read(const struct rank_query *q, int k, double dl)
{
	double score = 0.0;

	for (int j = 0; j < q->n_phrase; j++) {
		int i = q->order[j];

		score += j < k ? rank_term(q, i, dl) : q->idf[i] * (RANK_K1 + 1.0);
	}
	return -1.0 * score;
}

/*
 * The length a row has at least: min_tok, what its hits prove, or what
 * every match of its block has (floor->block_min_len, from a word's
 * fronts) when that is longer (docs/index.md, "Lengths from the fronts").
 */
static int
proven_length(const struct idx_rank_floor *floor, int64_t id, int min_tok)
{
	if (floor != NULL && floor->set && floor->block_min_len != NULL) {
		int64_t b = id / RANK_BLOCK_IDS;

		if (b >= 0 && b < floor->n_min_len && floor->block_min_len[b] > (uint32_t)min_tok &&
		    floor->block_min_len[b] <= INT_MAX)
			return (int)floor->block_min_len[b];
	}
	return min_tok;
}

/*
 * Add phrase i's hits in the row to *f, weighted as bm25() weighs them
 * (row_weight()), in position order; with col_min (n_col columns), raise
 * each column's to the length its hits prove: a hit at token off of a
 * column says the column has at least off + 1 tokens.  SQLite's result
 * code.
 */
static inline int
phrase_hits(const Fts5ExtensionApi *api, Fts5Context *fts, int i, struct row_weights *rw,
    double *f, int *col_min, int n_col)
{
	Fts5PhraseIter it;
	int rc, col, off;

	for (rc = api->xPhraseFirst(fts, i, &it, &col, &off); rc == SQLITE_OK && col >= 0;
	    api->xPhraseNext(fts, &it, &col, &off)) {
		*f += row_weight(rw, col);
		if (col_min != NULL && col < n_col && off >= col_min[col])
			col_min[col] = off + 1;
	}
	return rc;
}

/*
 * The end of a row's scoring, its hits read into q (rc: how that went):
 * NULL when a floor is set and the row's score at the length its hits
 * prove (min_tok) is strictly worse, without reading its length; else its
 * score at its length.  The score is monotone in the length, so that is a
 * bound the row cannot beat, and the length itself (a docsize lookup) is
 * the dearest part of scoring a row: the hits' own length rather than 0
 * spares it for a row whose hits lie deep in a long body (at 100,000
 * messages `spam*` reads 582 lengths of its 53,672 matches instead of
 * 3,399, `the` 408 instead of 2,249; docs/benchmarks.md, "Lengths the hits
 * prove").  A search read whole may also know a length every match of the
 * row's block has (floor->block_min_len, from a word's fronts): the longer
 * of the two is the bound (docs/index.md, "Lengths from the fronts").  The
 * length is taken from the block's kept lengths when the builder kept them
 * (floor->lengths, index_rank_lengths.c), else FTS5 reads it.
 */
static void
rank_finish(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
    const struct rank_query *q, const struct idx_rank_floor *floor, int min_tok, int rc)
{
	int n_tok = 0;

	min_tok = proven_length(floor, api->xRowid(fts), min_tok);
	if (rc == SQLITE_OK && floor != NULL && floor->set &&
	    rank_score(q, (double)min_tok) > floor->score) {
		sqlite3_result_null(ctx);	/* strictly worse than the floor: not a candidate */
		return;
	}
	if (rc == SQLITE_OK) {
		idx_rank_sized++;
		if (floor == NULL ||
		    !idx_rank_lengths_get(floor->lengths, api->xRowid(fts), &n_tok))
			rc = api->xColumnSize(fts, -1, &n_tok);
	}
	if (rc == SQLITE_OK) {
		double score = rank_score(q, (double)n_tok);

		if (floor != NULL && floor->set && score > floor->score) {
			sqlite3_result_null(ctx);	/* measured, still strictly worse */
			return;
		}
		if (floor != NULL && floor->memo != NULL) {
			floor->memo->has_score = true;
			floor->memo->score = score;
		}
		sqlite3_result_double(ctx, score);
	} else
		sqlite3_result_error_code(ctx, rc);
}

/* Whether sorted ids (n of them) hold id. */
static bool
ids_hold(const int64_t *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return true;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

#define RANK_PREFIX_COLS	16	/* columns a prefix row's hits prove lengths of */

/*
 * A row of a prefix's walk (struct idx_rank_prefix): the hits of every
 * phrase (the prefix's words; a phrase under NOT has none in a row that
 * matches) summed as the one phrase's, then scored as rank_row scores it.
 * The words' hits are summed word by word rather than in position order:
 * the same doubles while the column weights are whole numbers, as
 * IDX_RANK_WEIGHTS's are (sums of small integers are exact in any order).
 */
static void
rank_row_prefix(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
    int n_val, sqlite3_value **val, const struct idx_rank_floor *floor, int w)
{
	const struct idx_rank_prefix *p = floor->prefix;
	int col_min[RANK_PREFIX_COLS] = { 0 };
	int n_phrase = api->xPhraseCount(fts);
	int rc = SQLITE_OK, min_tok = 0;
	double idf = p->idf, f = 0.0;
	struct rank_query one = { .n_phrase = 1, .avgdl = p->avgdl, .idf = &idf, .freq = &f };
	struct row_weights rw;

	if (ids_hold(p->skip, p->n_skip, api->xRowid(fts))) {
		sqlite3_result_null(ctx);	/* ranked by an earlier statement */
		return;
	}
	row_weights_init(&rw, n_val, val, w);
	for (int i = 0; rc == SQLITE_OK && i < n_phrase; i++)
		rc = phrase_hits(api, fts, i, &rw, &f, col_min, RANK_PREFIX_COLS);
	for (int c = 0; c < RANK_PREFIX_COLS; c++)
		min_tok += col_min[c];
	rank_finish(api, fts, ctx, &one, floor, min_tok, rc);
}

/*
 * Row id's hits in m (struct idx_rank_many), which holds every row whose
 * byte is full (index_search_common.c checks each chunk's as it loads it).
 */
static double
kept_many(const struct idx_rank_many *m, int64_t id)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n && m->id[lo] == id ? (double)m->f[lo] : (double)RANK_HITS_MANY;
}

/*
 * A row of a statement of a query ranked in parts (struct idx_rank_parts):
 * each phrase's hits into its slot of the query's, the kept words' from
 * their bytes, the query's other words 0 (the row holds none of them),
 * scored with the query's statistics as rank_row scores it.
 */
static void
rank_row_parts(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
    int n_val, sqlite3_value **val, const struct idx_rank_floor *floor, int w)
{
	const struct idx_rank_parts *p = floor->parts;
	const struct idx_rank_stats *s = p->stats;
	int col_min[RANK_PREFIX_COLS] = { 0 };
	double idf[IDX_RANK_PHRASES], freq[IDX_RANK_PHRASES];
	struct rank_query q = { .n_phrase = s->n_phrase, .avgdl = s->avgdl, .idf = idf,
	    .freq = freq };
	int n_phrase = api->xPhraseCount(fts);
	int rc = SQLITE_OK, min_tok = 0;
	struct row_weights rw;

	if (ids_hold(p->skip, p->n_skip, api->xRowid(fts))) {
		sqlite3_result_null(ctx);	/* ranked by an earlier statement */
		return;
	}
	for (int i = 0; i < n_phrase && n_phrase == p->n_slot; i++)
		if (p->slot[i] < 0 || p->slot[i] >= s->n_phrase)
			n_phrase = -1;
	for (int k = 0; k < p->n_kept && n_phrase == p->n_slot; k++)
		if (p->kept_slot[k] < 0 || p->kept_slot[k] >= s->n_phrase)
			n_phrase = -1;
	if (n_phrase != p->n_slot || s->n_phrase > IDX_RANK_PHRASES) {
		sqlite3_result_error(ctx, "mb_bm25_top: a part's phrases are not its slots'", -1);
		return;
	}
	memcpy(idf, s->idf, (size_t)s->n_phrase * sizeof(*idf));
	memset(freq, 0, (size_t)s->n_phrase * sizeof(*freq));	/* the slots no phrase here fills */
	for (int k = 0; k < p->n_kept; k++) {
		int64_t id = api->xRowid(fts);
		uint8_t f = id >= 0 && id < p->n_kept_ids ? p->kept_hits[k][id] : 0;

		if (f == 0) {
			sqlite3_result_null(ctx);	/* lacks the phrase: no match */
			return;
		}
		/* whole numbers, the sum of the weights: the double rank_row would sum */
		freq[p->kept_slot[k]] = f != RANK_HITS_MANY ? f : kept_many(&p->kept_many[k], id);
	}
	row_weights_init(&rw, n_val, val, w);
	for (int i = 0; rc == SQLITE_OK && i < n_phrase; i++)
		rc = phrase_hits(api, fts, i, &rw, &freq[p->slot[i]], col_min, RANK_PREFIX_COLS);
	for (int c = 0; c < RANK_PREFIX_COLS; c++)
		min_tok += col_min[c];
	rank_finish(api, fts, ctx, &q, floor, min_tok, rc);
}

/* index-private.h */
int
idx_rank_kept_row(const struct idx_rank_parts *p, const struct idx_rank_floor *floor,
    int64_t id, double *score_r)
{
	const struct idx_rank_stats *s = p->stats;
	double idf[IDX_RANK_PHRASES], freq[IDX_RANK_PHRASES];
	struct rank_query q = { .n_phrase = s->n_phrase, .avgdl = s->avgdl, .idf = idf,
	    .freq = freq };
	int n_tok = 0;
	double score;

	if (p->n_slot != 0 || s->n_phrase > IDX_RANK_PHRASES)
		return -1;	/* another word to read: FTS5's to score */
	memcpy(idf, s->idf, (size_t)s->n_phrase * sizeof(*idf));
	memset(freq, 0, (size_t)s->n_phrase * sizeof(*freq));
	for (int k = 0; k < p->n_kept; k++) {
		uint8_t f = id >= 0 && id < p->n_kept_ids ? p->kept_hits[k][id] : 0;

		if (f == 0)
			return 0;	/* lacks the phrase: no match */
		freq[p->kept_slot[k]] = f != RANK_HITS_MANY ? f : kept_many(&p->kept_many[k], id);
	}
	/* as rank_finish() ends a row: a bound at the length known, then the length */
	if (floor->set && rank_score(&q, (double)proven_length(floor, id, 0)) > floor->score)
		return 0;
	idx_rank_sized++;
	if (!idx_rank_lengths_get(floor->lengths, id, &n_tok))
		return -1;
	score = rank_score(&q, (double)n_tok);
	if (floor->set && score > floor->score)
		return 0;
	*score_r = score;
	return 1;
}

#define RANK_CUT_MARGIN	1e-12	/* relative: a bound summed in another order (rank_bound_read) */

/*
 * Whether a row whose first k phrases of q->order are read cannot reach
 * the floor whatever hits the others have: its bound at the length those
 * hits prove (rank_bound_read) is below the floor by more than the
 * rounding of a sum.  Its other phrases' hits are then never read: for
 * `please send me the report` at 1,000,000 messages, most rows' `me` and
 * `the`, whose IDFs are small and whose hits are many.
 */
static bool
rank_cut(const Fts5ExtensionApi *api, Fts5Context *fts, const struct rank_query *q,
    const struct idx_rank_floor *floor, int k)
{
	int min_tok = 0;

	for (int c = 0; c < q->n_col; c++)
		min_tok += q->col_min[c];
	min_tok = proven_length(floor, api->xRowid(fts), min_tok);
	return rank_bound_read(q, k, (double)min_tok) > floor->score * (1.0 - RANK_CUT_MARGIN);
}

/*
 * Both functions: val[0] is the MATCH text, then (mb_bm25_top) the floor,
 * then the column weights from val[w]: column col's weight is val[w + col].
 */
static void
rank_row(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val, const struct idx_rank_floor *floor, int w)
{
	bool bounded = floor != NULL && floor->set;
	struct rank_query *q;
	struct row_weights rw;
	int rc, min_tok = 0, n_cut;

	if (floor != NULL && idx_rank_block_passed(floor, api->xRowid(fts) / RANK_BLOCK_IDS)) {
		sqlite3_result_null(ctx);	/* ranked, or cannot reach the page */
		return;
	}
	idx_rank_hits_read++;
	if (floor != NULL && floor->prefix != NULL) {
		rank_row_prefix(api, fts, ctx, n_val, val, floor, w);
		return;
	}
	if (floor != NULL && floor->parts != NULL) {
		rank_row_parts(api, fts, ctx, n_val, val, floor, w);
		return;
	}
	q = rank_query_get(api, fts, ctx, val[0], floor != NULL ? floor->known : NULL, &rc);
	if (q != NULL && bounded)
		memset(q->col_min, 0, (size_t)q->n_col * sizeof(*q->col_min));
	/*
	 * Each phrase's hits in the row, as bm25() counts them through xInst
	 * (so the same sums, bit for bit), but read one phrase at a time: xInst
	 * first builds an array of every phrase's hits.  This way rank_row
	 * takes 11% fewer instructions, a search 4% (callgrind, 100,000
	 * messages; docs/benchmarks.md).  The lengths they prove are only
	 * wanted against a floor.
	 */
	row_weights_init(&rw, n_val, val, w);
	n_cut = q != NULL && bounded ? q->n_phrase - 1 : 0;	/* after each phrase but the last */
	for (int k = 0; q != NULL && rc == SQLITE_OK && k < q->n_phrase; k++) {
		int i = q->order[k];
		double f = 0.0;		/* a local: kept in a register through the hits */

		rc = phrase_hits(api, fts, i, &rw, &f, bounded ? q->col_min : NULL, q->n_col);
		q->freq[i] = f;
		if (k < n_cut && rc == SQLITE_OK && rank_cut(api, fts, q, floor, k + 1)) {
			idx_rank_cut++;
			sqlite3_result_null(ctx);	/* cannot reach the floor whatever the rest */
			return;
		}
	}
	for (int c = 0; q != NULL && bounded && c < q->n_col; c++)
		min_tok += q->col_min[c];
	rank_finish(api, fts, ctx, q, floor, min_tok, rc);
}

static void
mb_bm25(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	if (n_val < 1) {
		sqlite3_result_error(ctx, "mb_bm25: the MATCH text is missing", -1);
		return;
	}
	rank_row(api, fts, ctx, n_val, val, NULL, 1);
}

static void
mb_bm25_top(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	const struct idx_rank_floor *floor;
	struct idx_rank_memo *memo;

	if (n_val < 2) {
		sqlite3_result_error(ctx, "mb_bm25_top: the MATCH text or the floor is missing",
		    -1);
		return;
	}
	floor = sqlite3_value_pointer(val[1], IDX_RANK_FLOOR);
	if (floor != NULL && floor->id_bits != NULL) {
		int64_t id = api->xRowid(fts);

		if (id < 0 || id >= floor->n_id_bits ||
		    !((floor->id_bits[id / 64] >> (id % 64)) & 1)) {
			idx_rank_outside++;
			sqlite3_result_null(ctx);	/* outside a narrow scope: fails its filter */
			return;
		}
	}
	memo = floor != NULL ? floor->memo : NULL;
	if (memo != NULL && memo->valid && memo->rowid == api->xRowid(fts)) {
		memo->valid = false;	/* this row's second call */
		if (memo->deferred)
			rank_row(api, fts, ctx, n_val, val, floor, 2);	/* joined unscored */
		else if (memo->has_score)
			sqlite3_result_double(ctx, memo->score);
		else
			sqlite3_result_null(ctx);
		return;
	}
	if (memo != NULL) {
		memo->valid = true;
		memo->rowid = api->xRowid(fts);
		memo->has_score = false;
		memo->deferred = memo->passing != NULL && *memo->passing < memo->join_until;
		if (memo->deferred) {
			idx_rank_joined++;
			sqlite3_result_int(ctx, 1);	/* join it, count it */
			return;
		}
	}
	rank_row(api, fts, ctx, n_val, val, floor, 2);
	if (memo != NULL && !memo->has_score)
		memo->dropped++;
	else if (memo != NULL)
		idx_rank_joined++;
}

/*
 * mb_bm25_stats(messages_fts, MATCH, STATS[, COUNTED]): fills STATS (val[1])
 * from the statistics this connection ranks MATCH with, once; answers
 * NULL.  The block walk (index_search_blocks.c) bounds its blocks with them.
 *
 * COUNTED 1: MATCH is one phrase of one token (a prefix) whose rows STATS's
 * known holds for MATCH (counted through its words, idx_prefix_rows()),
 * and the statement's own MATCH is another such phrase, which FTS5 starts
 * without merging the prefix's doclists.  The statistics of a query of one
 * phrase of one token are its rows, the index's rows and the index's
 * tokens, so they are MATCH's, kept as MATCH's.  Without a known count for
 * MATCH, an error: the statement's own phrase would be counted for MATCH.
 */
static void
mb_bm25_stats(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	struct idx_rank_stats *out;
	struct rank_query *q;
	int rc;

	if (n_val < 2) {
		sqlite3_result_error(ctx, "mb_bm25_stats: the MATCH text or the output is missing",
		    -1);
		return;
	}
	out = sqlite3_value_pointer(val[1], IDX_RANK_STATS);
	if (n_val > 2 && sqlite3_value_int(val[2]) == 1 && (out == NULL || out->known == NULL ||
	    out->known->n < 1 || out->known->hits[0] < 0 || out->known->match == NULL ||
	    sqlite3_value_text(val[0]) == NULL ||
	    strcmp((const char *)sqlite3_value_text(val[0]), out->known->match) != 0 ||
	    api->xPhraseCount(fts) != 1 || api->xPhraseSize(fts, 0) != 1)) {
		sqlite3_result_error(ctx, "mb_bm25_stats: counted statistics without the count "
		    "or for a MATCH of more than one token", -1);
		return;
	}
	if ((q = rank_query_get(api, fts, ctx, val[0], out != NULL ? out->known : NULL,
	    &rc)) == NULL) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	if (out != NULL && !out->set && q->n_phrase <= IDX_RANK_PHRASES) {
		out->n_phrase = q->n_phrase;
		out->avgdl = q->avgdl;
		for (int i = 0; i < q->n_phrase; i++) {
			out->size[i] = api->xPhraseSize(fts, i);
			out->idf[i] = q->idf[i];
			out->n_hit[i] = (int64_t)q->n_hit[i];
		}
		out->set = true;
	}
	sqlite3_result_null(ctx);
}

/*
 * mb_bm25_kept(MATCH, STATS): fills STATS (a struct idx_rank_stats bound
 * as IDX_RANK_STATS) from the statistics kept for MATCH on the index this
 * connection reads now (fts_rank_cache.c); answers whether there were.  A
 * plain function, not FTS5's: it runs no MATCH, so a prefix search learns
 * whether its statistics are kept without FTS5 merging the prefix's
 * doclists to start a statement (index_search_prefix.c).  STATS's phrase
 * sizes are not kept: they are left 0.
 */
static void
mb_bm25_kept(sqlite3_context *ctx, int n_val, sqlite3_value **val)
{
	struct rank_view *v = sqlite3_user_data(ctx);
	const char *key = (const char *)sqlite3_value_text(val[0]);
	struct idx_rank_stats *out = sqlite3_value_pointer(val[1], IDX_RANK_STATS);
	const struct idx_rank_known *known;
	double stats[2 * IDX_RANK_PHRASES], avgdl = 0.0;
	int n = 0;

	(void)n_val;
	/* a MATCH text always parses to the same phrases: any number of them */
	if (key == NULL || out == NULL || strlen(key) > RANK_KEY_MAX ||
	    !rank_view_current(v, sqlite3_context_db_handle(ctx)) ||
	    !rank_kept_get(v, key, 0, IDX_RANK_PHRASES, &n, &avgdl, stats)) {
		sqlite3_result_int(ctx, 0);
		return;
	}
	known = out->known;
	memset(out, 0, sizeof(*out));
	out->known = known;	/* the caller's, not an output */
	out->n_phrase = n;
	out->avgdl = avgdl;
	for (int i = 0; i < n; i++) {
		out->idf[i] = stats[i];
		out->n_hit[i] = (int64_t)stats[n + i];
	}
	out->set = true;
	sqlite3_result_int(ctx, 1);
}

/*
 * mb_total_kept(MATCH[, TOTAL]): the rows MATCH matches on the index this
 * connection reads now, as kept beside its statistics (fts_rank_cache.c),
 * or NULL when they are not; with TOTAL, keeps it first (where the
 * statistics are kept) and answers it.  A search of several phrases counts
 * its rows with FTS5 once for the index as it is, not for every page
 * (index_search_blocks.c).
 */
static void
mb_total_kept(sqlite3_context *ctx, int n_val, sqlite3_value **val)
{
	struct rank_view *v = sqlite3_user_data(ctx);
	const char *key = n_val > 0 ? (const char *)sqlite3_value_text(val[0]) : NULL;
	int64_t total = -1;

	if (key == NULL || strlen(key) > RANK_KEY_MAX ||
	    !rank_view_current(v, sqlite3_context_db_handle(ctx))) {
		sqlite3_result_null(ctx);
		return;
	}
	if (n_val > 1 && sqlite3_value_type(val[1]) == SQLITE_INTEGER &&
	    sqlite3_value_int64(val[1]) >= 0)
		rank_kept_total_put(v, key, sqlite3_value_int64(val[1]));
	if (rank_kept_total_get(v, key, &total))
		sqlite3_result_int64(ctx, total);
	else
		sqlite3_result_null(ctx);
}

int
mb_fts_rank_register(sqlite3 *db, struct mb_err *err)
{
	fts5_api *api = mb_fts5_api(db);
	struct rank_view *c;
	int rc;

	if (api == NULL || api->iVersion < 2)
		return mb_err_set(err, MB_E_INTERNAL, "index: this SQLite has no FTS5");
	c = mb_xcalloc(1, sizeof(*c));
	rc = api->xCreateFunction(api, "mb_bm25", c, mb_bm25, rank_view_free);
	if (rc != SQLITE_OK) {
		rank_view_free(c);
		return mb_err_set(err, MB_E_INTERNAL, "index: registering mb_bm25: %s",
		    sqlite3_errstr(rc));
	}
	/* the same view: the connection frees it once, with mb_bm25 */
	rc = api->xCreateFunction(api, "mb_bm25_top", c, mb_bm25_top, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "mb_bm25_stats", c, mb_bm25_stats, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function_v2(db, "mb_bm25_kept", 2, SQLITE_UTF8, c,
		    mb_bm25_kept, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function_v2(db, "mb_total_kept", -1, SQLITE_UTF8, c,
		    mb_total_kept, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "index: registering mb_bm25_top: %s",
		    sqlite3_errstr(rc));
	return 0;
}
