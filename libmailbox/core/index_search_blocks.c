/*
 * Exact ranking through the block bounds (migrations/0014_rank_bounds.sql,
 * docs/index.md "Ranking"): the same page as reading every match, reading
 * only the blocks of ids that can hold one of its rows.
 *
 * For each block of 128 ids, an upper bound of the score any row of it can
 * have: the sum over the query's phrases of IDF times the largest BM25 term
 * the phrase can reach there.  A phrase's term is bounded by any of its
 * words' fronts (a phrase is never more frequent in a row than its words);
 * a word syncd bounded in that block contributes its front's value, or 0
 * when the block lacks it; anything else (a word not bounded, a block not
 * bounded or no longer, the newest ids) the most a term can give,
 * IDF x (k1 + 1).  Blocks are read best bound first, each with the words'
 * MATCH and a rowid range (which FTS5 seeks in its doclists), neighbours
 * that can also reach the floor read in the same range, and the walk stops
 * at the first block whose bound is strictly worse than the page's floor:
 * no row of it, or of any block after it, can be on the page.  The rows
 * read are scored by mb_bm25_top() exactly as the full walk scores them.
 *
 * Filters only take rows away, so a block's bound still holds with them:
 * the ranges then join messages_search_filter and test the filters there
 * (range_sql_filtered), and the walk reads blocks until the floor of the
 * rows that pass.  What a filtered walk cannot know without reading every
 * match is how many pass: that is counted up to a cap, as for a list of
 * filters alone (idx_search_count), and beyond it the total is a lower
 * bound.  A seek into that index costs about 0.6 us a match, so for a
 * common word the exact count cost more than everything else
 * (docs/benchmarks.md).  When few rows pass and the page does not fill in
 * the first ranges, the walk gives up and the caller reads every match,
 * with the blocks' bounds: once its page is full, a row of a block bounded
 * below its floor is answered before its hits are read.
 *
 * A prefix is walked through its words (prefix_walk, index_search_prefix.c):
 * FTS5 would merge a prefix's doclists again for every range.  An OR's
 * words without bounds have their rows ranked before the walk
 * (index_search_or.c); a NOT's words are in no match and add nothing to a
 * bound, the ranges' MATCH leaving their rows out.
 *
 * What this does not serve (the caller reads every match): the filters the
 * index does not cover (to:me, id:) and thread:, which name a few rows read
 * through their own index, and an index without bounds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"
#include "search-private.h"

/* The query's statistics, from the statement's first match (fts_rank.c). */
static const char stats_sql[] =
	"SELECT mb_bm25_stats(messages_fts, ?1, ?2) FROM messages_fts "
	"WHERE messages_fts MATCH ?1 LIMIT 1";
static const char weights_sql[] = "SELECT weights, terms_rows FROM rank_state";
static const char chunks_sql[] = "SELECT chunk, blocks, gen FROM rank_chunks";
static const char term_sql[] = "SELECT docs FROM rank_terms WHERE term = ?1";
static const char bounds_sql[] = "SELECT chunk, gen, bounds FROM rank_bounds WHERE term = ?1";
static const char range_sql[] =
	"SELECT rowid, mb_bm25_top(messages_fts, ?1, ?9, " IDX_RANK_WEIGHTS ") "
	"FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?22 AND ?23";
/* The same with the query's filters (search-private.h says how they are tested). */
static const char range_sql_filtered[] = SEARCH_RANK_RANGE_FILTERED;
/* The total of a query of several phrases (one phrase's is its row count). */
static const char count_sql[] = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1";
/* That total as kept beside the query's statistics, or NULL; with ?2, kept first (fts_rank.c). */
static const char total_kept_sql[] = "SELECT mb_total_kept(?1)";
static const char total_keep_sql[] = "SELECT mb_total_kept(?1, ?2)";

/*
 * Rounding makes the scores' arithmetic monotone only up to an ulp or so
 * per operation: a bound is widened by this much so that it is never below
 * a row's real score.
 */
#define RANK_SLACK	1e-9
/*
 * When the matches that the blocks left to read would make a single
 * statement step over for nothing are fewer than their runs x this, one
 * statement over all of them replaces the ranges, and mb_bm25_top()
 * answers the rows of blocks that cannot reach the page at once
 * (idx_rank_floor).  Only for one word: a phrase's rows are tested by
 * their positions, however they are answered.
 * A range statement costs about as much as stepping over this many such
 * rows: 40, 150 and 600 were tried at 100,000 messages (docs/benchmarks.md).
 */
#define RANK_RANGE_ROWS	200
/*
 * The same with filters: a statement stepping over a match joins
 * messages_search_filter for it.  Since the score is asked before the join
 * (range_sql_filtered) a row answered at once costs no seek; 200 was tried
 * again then, at 100,000 and 1,000,000 messages, and was no better.
 */
#define RANK_RANGE_ROWS_FILTERED	20
/*
 * The floor goes on rising long after the page is full, so the runs of
 * blocks counted against it early are more than the walk will read: in the
 * corpus cloned to size the best blocks hold copies of one text, and the
 * blocks whose bounds reach the early floor fall below it only once those
 * copies are read.  So the choice between ranges and one statement waits
 * for this many ranges read after the page is full, or until the ranges
 * read since then have cost what the statement would (blocks_walk).  At
 * 1,000,000 messages, chosen after 8, `linux` counted 706 runs, took the
 * statement and spent 16 ms of CPU, where ranges read its page in 5 ms
 * (332 of them); 8, 16, 32, 64, 128 and no choice at all were measured at
 * 100,000 and 1,000,000 messages, on pages 1, 11 and 101
 * (docs/benchmarks.md, "The choice of one statement made later; a deep
 * page's rows cut by selection").
 */
int64_t idx_rank_floor_reads = 64;
_Thread_local uint64_t idx_rank_rest_reads;
/*
 * A filtered walk gives up after this many ranges without a full page; and
 * the choice above is never made before this many ranges after it is full,
 * over which the floor rises fast.
 */
#define RANK_FIRST_READS	8
/*
 * A range takes at most this many unread neighbours on each side of its
 * block.  They are taken while their bound can reach the page's floor as
 * it is, and early in a walk that floor can be weak: in a folder of 30% of
 * 1,000,000 messages in one run, after the folder's first block it was the
 * twentieth of that block's rows, below nearly every block's bound, and
 * `the in:Lists` read the whole folder, 2,300 blocks, as one range (54 ms
 * of CPU, 12 with a reach of a chunk; docs/benchmarks.md, "A wide folder
 * read over its runs").  The tests lower it to show the same on a small
 * index.
 */
int64_t idx_rank_range_reach = RANK_CHUNK_BLOCKS;

/* One phrase of the query: its tokens as the query tokenizer makes them. */
struct phrase {
	char	**tokens;	/* owned, n of them */
	int	 n;
	bool	 colocated;	/* a token with alternatives: never bounded */
};

/* The most phrases bounded at one length (more: each at its best). */
#define IDX_RANK_ONE_LENGTH_MAX	RANK_STEPS_SUM_MAX

/*
 * One phrase's steps in each block, kept for the bound at one length of a
 * few phrases (blocks_bound): n[b] of them at p[at[b]], with the meaning of
 * a front's; n[b] -1 when nothing bounds the phrase in block b.  Packed one
 * block after another (about five points a block, where a block's room for
 * a met phrase's would be 32).  steps_init() allocates, steps_release()
 * frees.
 */
struct phrase_steps {
	int8_t			*n;	/* owned: per block */
	uint32_t		*at;	/* owned: per block */
	struct rank_point	*p;	/* owned: size of them, used filled */
	size_t			 used, size;
};

static void
steps_init(struct phrase_steps *s, int64_t n_blocks)
{
	s->n = mb_xmalloc((size_t)n_blocks * sizeof(*s->n));
	memset(s->n, -1, (size_t)n_blocks * sizeof(*s->n));
	s->at = mb_xmalloc((size_t)n_blocks * sizeof(*s->at));
	s->size = (size_t)n_blocks * 4 + RANK_STAIR_MAX;
	s->p = mb_xmalloc(s->size * sizeof(*s->p));
	s->used = 0;
}

static void
steps_release(struct phrase_steps *s)
{
	free(s->n);
	free(s->at);
	free(s->p);
}

/* Keep n points at p as block b's steps of s. */
static void
steps_keep(struct phrase_steps *s, int64_t b, const struct rank_point *p, int n)
{
	if (s->used + (size_t)n > s->size) {
		s->size = 2 * s->size + (size_t)n;
		s->p = mb_xrealloc(s->p, s->size * sizeof(*s->p));
	}
	memcpy(&s->p[s->used], p, (size_t)n * sizeof(*p));
	s->at[b] = (uint32_t)s->used;
	s->n[b] = (int8_t)n;
	s->used += (size_t)n;
}

struct walk {
	struct mb_index		*idx;
	bool			 filtered;	/* the ranges test the query's filters */
	/* owned (NULL: none): words of an AND whose hits are kept, not read by FTS5 */
	struct idx_kept		*kept;
	bool			 gave_up;	/* filtered: the page did not fill, read whole instead */
	int64_t			 folder_id;	/* its in: or role's folder, for the binds */
	struct idx_rank_stats	 stats;
	struct phrase		 ph[IDX_RANK_PHRASES];
	int			 n_ph;
	int			 n_tokens;	/* of every phrase: each range seeks each */
	int			 n_pos;		/* the phrases before NOT (a match holds none after) */
	bool			 negated;	/* the MATCH has a NOT */
	/* of each phrase before NOT, its group: a match holds one of each group (phrase_groups) */
	int			 group[IDX_RANK_PHRASES];
	int			 n_groups;
	/* an OR's words without bounds: ranked before the walk, which skips their rows */
	bool			 rare[IDX_RANK_PHRASES];
	int			 n_rare;
	/* of each phrase, the rows of its rarest bounded token when syncd chose it (-1: none) */
	int64_t			 docs[IDX_RANK_PHRASES];
	int64_t			 terms_rows;	/* the rows then (rank_state) */
	int64_t			 n_blocks;
	uint32_t		*chunk_blocks;	/* owned: per chunk, the bounded blocks' bits */
	int64_t			*chunk_gen;	/* owned: per chunk, its build */
	double			*term;		/* owned: one phrase's term per block, IDF aside */
	double			*bound;		/* owned: per block, the best score it can hold */
	const char		*range_match;	/* the ranges' MATCH (NULL: the query's) */
	const struct idx_narrow_ids *wide;	/* a wide folder's runs (NULL: none) */
	/*
	 * The phrases' steps per block (blocks_bound), summed
	 * at one length when the walk comes to a block (block_met): sum_due
	 * NULL when not kept.
	 */
	struct phrase_steps	*sum_steps;	/* owned: n_pos of them */
	bool			*sum_due;	/* owned: per block, not lowered yet */
	double			*sum_met;	/* owned: per block, its sum (1.0: not yet) */
};

static void
walk_release(struct walk *w)
{
	idx_kept_free(w->kept);
	for (int i = 0; i < w->n_ph; i++) {
		for (int j = 0; j < w->ph[i].n; j++)
			free(w->ph[i].tokens[j]);
		free(w->ph[i].tokens);
	}
	free(w->chunk_blocks);
	free(w->chunk_gen);
	free(w->term);
	free(w->bound);
	for (int i = 0; w->sum_steps != NULL && i < w->n_pos; i++)
		steps_release(&w->sum_steps[i]);
	free(w->sum_steps);
	free(w->sum_due);
	free(w->sum_met);
}

/* search-private.h */
bool
idx_match_phrases(const char *match, char **texts, int *n_r)
{
	int n = 0;

	if (n_r != NULL)
		*n_r = 0;
	for (const char *p = match; *p != '\0'; p++) {
		char *t, *o;

		if (*p != '"')
			continue;
		if (n == IDX_RANK_PHRASES)
			return false;
		t = o = texts != NULL ? mb_xmalloc(strlen(p)) : NULL;
		for (p++; *p != '\0' && !(p[0] == '"' && p[1] != '"'); p++) {
			if (p[0] == '"')
				p++;	/* a doubled quote is one */
			if (o != NULL)
				*o++ = *p;
		}
		if (o != NULL) {
			*o = '\0';
			texts[n] = t;
			*n_r = n + 1;
		}
		n++;
		if (*p == '\0' || p[1] == '*')
			return false;	/* unbalanced (never, from query.c), or a prefix */
	}
	return true;
}

/*
 * w->n_pos, the phrases of match before its NOT (query.c writes the
 * negated terms last, as " NOT (...)": a match holds none of them), and
 * w->group[i] of each: the terms joined by AND counted from 0, an OR's
 * terms (in parentheses) sharing one, so (free OR money) AND cash puts
 * free and money in group 0 and cash in 1; w->n_groups; and w->negated.
 * False when a quote is unbalanced or there are more than IDX_RANK_PHRASES.
 */
static bool
phrase_groups(struct walk *w, const char *match)
{
	int g = 0;

	w->n_pos = 0;
	w->negated = false;
	for (const char *p = match; *p != '\0'; p++) {
		if (*p == '"') {
			if ((p = idx_match_phrase_end(p)) == NULL || w->n_pos == IDX_RANK_PHRASES)
				return false;
			w->group[w->n_pos++] = g;
		} else if (strncmp(p, " NOT ", 5) == 0) {
			w->negated = true;
			break;
		}
		else if (strncmp(p, " AND ", 5) == 0)
			g++;
	}
	w->n_groups = g + 1;
	return true;
}

/* search-private.h */
const char *
idx_match_phrase_end(const char *p)
{
	for (p++; *p != '\0' && !(p[0] == '"' && p[1] != '"'); p++)
		if (p[0] == '"')
			p++;	/* a doubled quote is one */
	return *p == '"' ? p : NULL;
}

bool
idx_match_plain(const char *match)
{
	return idx_match_phrases(match, NULL, NULL);
}

static int
phrase_token(void *ctx, int flags, const char *tok, int n, int start, int end)
{
	struct phrase *ph = ctx;

	(void)start;
	(void)end;
	if (flags & FTS5_TOKEN_COLOCATED) {
		ph->colocated = true;
		return SQLITE_OK;
	}
	ph->tokens = mb_xrealloc(ph->tokens, (size_t)(ph->n + 1) * sizeof(*ph->tokens));
	ph->tokens[ph->n++] = mb_xstrndup(tok, (size_t)n);
	return SQLITE_OK;
}

/*
 * w's phrases from match, tokenized as FTS5 tokenizes a query; false when
 * there is a prefix or too many.
 */
static bool
phrases_tokenize(struct walk *w, const char *match)
{
	char *texts[IDX_RANK_PHRASES];
	int n_texts = 0;
	bool ok;
	Fts5Tokenizer *t = NULL;
	fts5_tokenizer tk;

	ok = idx_match_phrases(match, texts, &n_texts) && mb_fts_tokenizer(w->idx->db, &tk, &t) == 0;
	for (int i = 0; ok && i < n_texts; i++) {
		w->n_ph++;
		ok = tk.xTokenize(t, &w->ph[i], FTS5_TOKENIZE_QUERY, texts[i],
		    (int)strlen(texts[i]), phrase_token) == SQLITE_OK;
		w->n_tokens += w->ph[i].n;
	}
	if (t != NULL)
		tk.xDelete(t);
	for (int i = 0; i < n_texts; i++)
		free(texts[i]);
	return ok;
}

/* Whether w's phrases are the ones FTS5 ranks: as many, each of as many tokens. */
static bool
phrases_are_ranked(const struct walk *w)
{
	if (!w->stats.set || w->n_ph != w->stats.n_phrase)
		return false;
	for (int i = 0; i < w->n_ph; i++)
		if (w->ph[i].n != w->stats.size[i])
			return false;
	return true;
}

/*
 * The rows token held when syncd chose it into *docs_r, -1 when syncd does
 * not bound it (st: term_sql); an SQLite result code, SQLITE_DONE on success.
 */
static int
token_docs(sqlite3_stmt *st, const char *token, int64_t *docs_r)
{
	int rc;

	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*docs_r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

/*
 * w->rare[i]: phrase i of w has no token syncd bounds (rank_terms), and
 * w->n_rare their number; w->docs[i]: the rows of its rarest bounded
 * token when syncd chose them (phrases_tight()).  A phrase without one
 * bounds every block at its most, IDF x (k1 + 1), which leaves nearly
 * every block able to reach the page: a walk needs every phrase of an AND
 * bounded (reading every match in one statement is then cheaper than
 * asking block by block), and of an OR ranks the rows of those without
 * bounds first (index_search_or.c).
 */
static int
phrases_rare(struct walk *w, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(w->idx, term_sql, err);
	int rc = SQLITE_DONE;

	if (st == NULL)
		return -1;
	w->n_rare = 0;
	for (int i = 0; rc == SQLITE_DONE && i < w->n_pos; i++) {
		w->docs[i] = -1;
		for (int j = 0; rc == SQLITE_DONE && !w->ph[i].colocated && j < w->ph[i].n; j++) {
			int64_t docs;

			rc = token_docs(st, w->ph[i].tokens[j], &docs);
			if (docs >= 0 && (w->docs[i] < 0 || docs < w->docs[i]))
				w->docs[i] = docs;
		}
		w->rare[i] = w->docs[i] < 0;
		w->n_rare += w->rare[i];
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(w->idx, rc, "search: rank terms", err);
}

/* *ok_r: the index has bounds for these weights (none before migration 0014). */
static int
bounds_usable(struct walk *w, bool *ok_r, struct mb_err *err)
{
	struct mb_err ignored = { 0 };
	sqlite3_stmt *st = idx_stmt_sql(w->idx, weights_sql, &ignored);
	int rc;

	*ok_r = false;
	if (st == NULL)
		return 0;	/* an older schema: no table */
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ok_r = sqlite3_column_text(st, 0) != NULL &&
		    strcmp((const char *)sqlite3_column_text(st, 0), IDX_RANK_WEIGHTS) == 0;
		w->terms_rows = sqlite3_column_int64(st, 1);
	}
	idx_stmt_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    idx_sqlerr(w->idx, rc, "search: rank bounds", err);
}

int
idx_rank_query_stats(struct mb_index *idx, const char *match, struct idx_rank_stats *stats,
    bool *any_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, stats_sql, err);
	int rc;

	*any_r = false;
	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 2, stats, IDX_RANK_STATS, NULL);
	rc = sqlite3_step(st);
	*any_r = rc == SQLITE_ROW;
	idx_stmt_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    idx_sqlerr(idx, rc, "search: statistics", err);
}

/* The statistics of q into w->stats; *any_r false when nothing matches. */
static int
query_stats(struct walk *w, const struct mb_query *q, bool *any_r, struct mb_err *err)
{
	return idx_rank_query_stats(w->idx, q->match, &w->stats, any_r, err);
}

/* Which blocks of which chunks are bounded, and by which build. */
static int
chunks_load(struct walk *w, struct mb_err *err)
{
	int64_t n_chunks = w->n_blocks / RANK_CHUNK_BLOCKS + 1;
	sqlite3_stmt *st = idx_stmt_sql(w->idx, chunks_sql, err);
	int rc;

	w->chunk_blocks = mb_xcalloc((size_t)n_chunks, sizeof(*w->chunk_blocks));
	w->chunk_gen = mb_xcalloc((size_t)n_chunks, sizeof(*w->chunk_gen));
	if (st == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t c = sqlite3_column_int64(st, 0);

		if (c >= 0 && c < n_chunks) {
			w->chunk_blocks[c] = (uint32_t)sqlite3_column_int64(st, 1) &
			    RANK_CHUNK_FULL;
			w->chunk_gen[c] = sqlite3_column_int64(st, 2);
		}
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(w->idx, rc, "search: rank chunks", err);
}

/*
 * Call each(w, b, fr, arg) for every block b that token's bounds vouch for
 * (its chunk's current build bounded it), fr the token's front there:
 * empty when the block lacks the token.
 */
static int
token_fronts(struct walk *w, const char *token,
    void (*each)(struct walk *, int64_t, const struct rank_front *, void *), void *arg,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(w->idx, bounds_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, token, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t c = sqlite3_column_int64(st, 0);
		const uint8_t *p = sqlite3_column_blob(st, 2);
		const uint8_t *end = p + sqlite3_column_bytes(st, 2);
		struct rank_front fr[RANK_CHUNK_BLOCKS], one;
		unsigned block;
		uint32_t bits;

		if (c < 0 || c >= w->n_blocks / RANK_CHUNK_BLOCKS + 1 ||
		    w->chunk_gen[c] != sqlite3_column_int64(st, 1))
			continue;	/* of an older build of the chunk: vouches for nothing */
		memset(fr, 0, sizeof(fr));	/* a block the token is not in: empty */
		bits = w->chunk_blocks[c];
		while (p != NULL && rank_front_next(&p, end, &block, &one))
			fr[block] = one;
		if (p != end)
			bits = 0;	/* a malformed blob: trust none of it */
		for (unsigned i = 0; i < RANK_CHUNK_BLOCKS; i++) {
			int64_t b = c * RANK_CHUNK_BLOCKS + i;

			if ((bits & (1u << i)) && b < w->n_blocks)
				each(w, b, &fr[i], arg);
		}
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(w->idx, rc, "search: rank bounds", err);
}

/*
 * Lower block b's w->term (a phrase's term, IDF aside) to what one token's
 * front allows; with arg (struct phrase_steps, a word's), keep the front.
 */
static void
term_lower(struct walk *w, int64_t b, const struct rank_front *fr, void *arg)
{
	double t = rank_front_max(fr, w->stats.avgdl);	/* 0 for an empty front */

	if (arg != NULL)
		steps_keep(arg, b, fr->p, fr->n);
	if (t < w->term[b])
		w->term[b] = t;
}

/* Per block, the fronts of a phrase's words met, and how many of the words vouch for it. */
struct phrase_meet {
	struct rank_stair	*met;
	int			*vouched;	/* -1: the block's term is set */
	bool			 last;		/* the phrase's last word: set the terms */
	struct phrase_steps	*keep;		/* NULL, or where the met steps are kept */
};

static void
phrase_add(struct walk *w, int64_t b, const struct rank_front *fr, void *arg)
{
	struct phrase_meet *pm = arg;

	if (!pm->last)
		rank_stair_meet(&pm->met[b], fr, pm->vouched[b]++ == 0);
	else {
		w->term[b] = pm->vouched[b] == 0 ? rank_front_max(fr, w->stats.avgdl) :
		    rank_stair_meet_max(&pm->met[b], fr, w->stats.avgdl);
		if (pm->keep != NULL) {
			rank_stair_meet(&pm->met[b], fr, pm->vouched[b] == 0);
			steps_keep(pm->keep, b, pm->met[b].p, pm->met[b].n);
		}
		pm->vouched[b] = -1;
	}
}

bool idx_rank_phrase_met = true;

/*
 * w->term for phrase i, IDF aside.  One word: its front's best.  Several:
 * their fronts met (rank_stair_meet: a row holds no more of the phrase
 * than of any of its words at its length), which is tighter than the
 * least of their bests when one word is common in long rows and the other
 * in short ones: "click here" at 1,000,000 messages took twice the CPU
 * for that (docs/benchmarks.md, "A phrase bounded by its words met").  A
 * block none of the words vouches for gets the most a term can give.
 */
static int
phrase_terms(struct walk *w, int i, struct phrase_steps *keep, struct mb_err *err)
{
	struct phrase_meet pm;
	int rc = 0;

	for (int64_t b = 0; b < w->n_blocks; b++)
		w->term[b] = RANK_K1_PLUS_1;
	if (w->ph[i].colocated)
		return 0;
	if (w->ph[i].n == 1 || !idx_rank_phrase_met) {
		/* a phrase's last word's front bounds it too: kept, it is looser */
		for (int j = 0; j < w->ph[i].n; j++)
			if (token_fronts(w, w->ph[i].tokens[j], term_lower, keep, err) == -1)
				return -1;
		return 0;
	}
	/* not cleared: a block's first front sets it (rank_stair_meet) */
	pm.met = mb_xmalloc((size_t)w->n_blocks * sizeof(*pm.met));
	pm.vouched = mb_xcalloc((size_t)w->n_blocks, sizeof(*pm.vouched));
	pm.keep = keep;
	for (int j = 0; rc == 0 && j < w->ph[i].n; j++) {
		pm.last = j == w->ph[i].n - 1;
		rc = token_fronts(w, w->ph[i].tokens[j], phrase_add, &pm, err);
	}
	/* blocks the last word's bounds did not vouch for: the others' steps */
	for (int64_t b = 0; rc == 0 && b < w->n_blocks; b++)
		if (pm.vouched[b] > 0) {
			w->term[b] = rank_points_max(pm.met[b].p, pm.met[b].n, w->stats.avgdl);
			if (keep != NULL)
				steps_keep(keep, b, pm.met[b].p, pm.met[b].n);
		}
	free(pm.met);
	free(pm.vouched);
	return rc;
}

/*
 * Whether up to IDX_RANK_ONE_LENGTH_MAX phrases (an AND, an OR, an OR
 * beside an AND) have their blocks bounded at one length
 * (rank_steps_sum_max), each block as the walk comes to it (their steps
 * kept for the walk: about 45 bytes a block a phrase).  The tests and the
 * benchmarks turn it off to compare.
 */
bool idx_rank_one_length = true;

/*
 * Whether w's blocks are bounded with its phrases at one length: a few
 * phrases, every one bounded (an AND, an OR, an OR beside an AND: a row
 * holds one of each group, phrase_groups()).
 */
static bool
sums_at_one_length(const struct walk *w)
{
	return idx_rank_one_length && w->n_pos > 1 && w->n_pos <= IDX_RANK_ONE_LENGTH_MAX &&
	    w->n_rare == 0;
}

/*
 * Block b's bound as w->bound holds them (negated, IDF and slack in), with
 * its phrases' steps summed at one length if that is still due (a row
 * holding a phrase of each group): the walk asks it of a
 * neighbour it may read along, whose place in its order stays as it was.
 */
static double
block_bound_now(struct walk *w, int64_t b)
{
	const struct rank_point *p[IDX_RANK_ONE_LENGTH_MAX];
	int n[IDX_RANK_ONE_LENGTH_MAX];
	double met;

	if (w->sum_due == NULL || !w->sum_due[b])
		return w->bound[b];
	if (w->sum_met[b] > 0.0) {	/* not met yet: once a block, however often asked */
		for (int i = 0; i < w->n_pos; i++) {
			n[i] = w->sum_steps[i].n[b];
			p[i] = n[i] >= 0 ? &w->sum_steps[i].p[w->sum_steps[i].at[b]] : NULL;
		}
		w->sum_met[b] = -1.0 * (rank_steps_sum_max(p, n, w->stats.idf, w->group,
		    w->n_pos, w->stats.avgdl) * (1.0 + RANK_SLACK));
	}
	met = w->sum_met[b];
	return met > w->bound[b] ? met : w->bound[b];
}

/*
 * Lower block b's bound to its phrases' steps summed at one length (once:
 * sum_due); whether it was lowered.
 */
static bool
block_met(struct walk *w, int64_t b)
{
	double met = block_bound_now(w, b);

	w->sum_due[b] = false;
	if (!(met > w->bound[b]))
		return false;
	w->bound[b] = met;
	return true;
}

/* w->bound: for each block, the best (lowest) score a row of it can have. */
static int
blocks_bound(struct walk *w, struct mb_err *err)
{
	/* several groups: per block, those some phrase of which it holds (a bit each) */
	uint64_t *held = w->n_groups > 1 ? mb_xcalloc((size_t)w->n_blocks, sizeof(*held)) : NULL;
	uint64_t every = w->n_groups >= 64 ? UINT64_MAX : (UINT64_C(1) << w->n_groups) - 1;
	/* a few phrases, no rarer word: their steps kept, to sum */
	bool meet = sums_at_one_length(w);
	int rc = -1;

	w->term = mb_xcalloc((size_t)w->n_blocks, sizeof(*w->term));
	w->bound = mb_xcalloc((size_t)w->n_blocks, sizeof(*w->bound));
	for (int i = 0; i < w->n_pos; i++) {
		if (w->rare[i])
			continue;	/* ranked before the walk, which reads none of its rows */
		if (meet && w->sum_steps == NULL)
			w->sum_steps = mb_xcalloc((size_t)w->n_pos, sizeof(*w->sum_steps));
		if (meet)
			steps_init(&w->sum_steps[i], w->n_blocks);
		if (phrase_terms(w, i, meet ? &w->sum_steps[i] : NULL, err) == -1)
			goto out;
		for (int64_t b = 0; b < w->n_blocks; b++) {
			w->bound[b] += w->stats.idf[i] * w->term[b];
			if (held != NULL && w->term[b] > 0.0)
				held[b] |= UINT64_C(1) << w->group[i];
		}
	}
	/* a block that lacks every phrase of a group holds no match */
	for (int64_t b = 0; held != NULL && b < w->n_blocks; b++)
		if (held[b] != every)
			w->bound[b] = 0.0;
	if (meet) {	/* every block that holds a match */
		w->sum_due = mb_xmalloc((size_t)w->n_blocks * sizeof(*w->sum_due));
		w->sum_met = mb_xmalloc((size_t)w->n_blocks * sizeof(*w->sum_met));
		for (int64_t b = 0; b < w->n_blocks; b++) {
			w->sum_due[b] = w->bound[b] > 0.0;
			w->sum_met[b] = 1.0;
		}
	}
	rc = 0;
out:
	free(held);
	if (rc == -1)
		return -1;
	for (int64_t b = 0; b < w->n_blocks; b++)
		w->bound[b] = -1.0 * (w->bound[b] * (1.0 + RANK_SLACK));
	return 0;
}

/* Per block, the bounded words' fronts summed, and how many of the words vouch for it. */
struct prefix_sum {
	struct rank_front	*sum;
	int			*vouched;
};

static void
prefix_add(struct walk *w, int64_t b, const struct rank_front *fr, void *arg)
{
	struct prefix_sum *ps = arg;

	(void)w;
	ps->vouched[b]++;
	rank_front_sum(&ps->sum[b], fr);
}

/*
 * w->bound for a prefix's walk over its bounded words (the rows holding
 * another word are ranked before it, and skipped by it): in each block,
 * the front of the words' hits summed (rank_front_sum: a row of length d
 * holds at most each word's most at d), its best BM25 term times the
 * prefix's IDF.  A block a word's bounds do not vouch for gets the most a
 * term can give; one none of the words is in, 0 (no row to read).
 */
static int
prefix_blocks_bound(struct walk *w, const struct idx_prefix *p, struct mb_err *err)
{
	struct prefix_sum ps = { mb_xcalloc((size_t)w->n_blocks, sizeof(*ps.sum)),
	    mb_xcalloc((size_t)w->n_blocks, sizeof(*ps.vouched)) };
	int rc = 0;

	for (int i = 0; rc == 0 && i < p->n_bounded; i++)
		rc = token_fronts(w, p->bounded[i], prefix_add, &ps, err);
	if (rc == 0) {
		w->bound = mb_xcalloc((size_t)w->n_blocks, sizeof(*w->bound));
		for (int64_t b = 0; b < w->n_blocks; b++) {
			double term = ps.vouched[b] < p->n_bounded ? RANK_K1_PLUS_1 :
			    rank_front_max(&ps.sum[b], w->stats.avgdl);

			w->bound[b] = -1.0 * (w->stats.idf[0] * term * (1.0 + RANK_SLACK));
		}
	}
	free(ps.sum);
	free(ps.vouched);
	return rc;
}

/*
 * Rank the rows of ids [lo, hi] of an AND whose kept words' hits are read
 * from syncd's bytes (w->kept) into set: each run of chunks that have them
 * by the MATCH of the other words (with none, from the bytes alone), each
 * other run by the query's.
 */
static int
range_rank_kept(struct walk *w, const struct mb_query *q, int64_t lo, int64_t hi,
    struct idx_rank_set *set, struct mb_err *err)
{
	const struct idx_rank_parts *parts = set->floor.parts;
	int rc = SQLITE_OK;

	while (rc == SQLITE_OK && lo <= hi) {
		bool kept;
		int64_t end = idx_kept_run(w->kept, lo, hi, &kept);
		sqlite3_stmt *st;

		if (kept && idx_kept_alone(w->kept)) {
			if (idx_kept_bytes(w->kept, q->match, lo, end, set, err) == -1)
				return -1;
			lo = end + 1;
			continue;
		}
		if ((st = idx_stmt_sql(w->idx, range_sql, err)) == NULL)
			return -1;
		sqlite3_bind_text(st, 1, kept ? idx_kept_others(w->kept) : q->match, -1,
		    SQLITE_STATIC);
		sqlite3_bind_pointer(st, 9, &set->floor, IDX_RANK_FLOOR, NULL);
		sqlite3_bind_int64(st, 22, lo);
		sqlite3_bind_int64(st, 23, end);
		set->floor.parts = kept ? idx_kept_parts(w->kept) : parts;
		rc = idx_rank_collect(st, false, set);
		set->floor.parts = parts;
		idx_stmt_done(st);
		lo = end + 1;
	}
	return rc;
}

/* Rank the rows of ids [lo, hi] into set; the floor is raised after. */
static int
range_rank(struct walk *w, const struct mb_query *q, int64_t lo, int64_t hi,
    struct idx_rank_set *set, struct mb_err *err)
{
	const char *sql = !w->filtered ? range_sql : range_sql_filtered;
	sqlite3_stmt *st;
	struct idx_rank_memo memo = { 0 };
	int rc;

	if (w->kept != NULL && !w->filtered && w->range_match == NULL) {
		if ((rc = range_rank_kept(w, q, lo, hi, set, err)) == -1)
			return -1;
		if (rc != SQLITE_OK)
			return idx_sqlerr(w->idx, rc, "search: rank a range", err);
		if (set->n > set->keep)
			idx_rank_trim(set);	/* the floor, as soon as the page is full */
		return 0;
	}
	if ((st = idx_stmt_sql(w->idx, sql, err)) == NULL)
		return -1;
	set->floor.memo = w->filtered ? &memo : NULL;
	if (w->filtered)
		idx_search_bind(st, q, w->folder_id);	/* ?1 too: a prefix's words below */
	sqlite3_bind_text(st, 1, w->range_match != NULL ? w->range_match : q->match, -1,
	    SQLITE_STATIC);
	sqlite3_bind_pointer(st, 9, &set->floor, IDX_RANK_FLOOR, NULL);
	sqlite3_bind_int64(st, 22, lo);
	sqlite3_bind_int64(st, 23, hi);
	rc = idx_rank_collect(st, w->filtered, set);
	idx_stmt_done(st);
	set->floor.memo = NULL;
	if (rc != SQLITE_OK)
		return idx_sqlerr(w->idx, rc, "search: rank a range", err);
	if (set->n > set->keep)
		idx_rank_trim(set);	/* the floor, as soon as the page is full */
	return 0;
}

/*
 * One statement over blocks first..last that mb_bm25_top() answers at once
 * for a row of a block read already (read) or bounded below the floor
 * (struct idx_rank_floor).
 */
static int
range_rank_rest(struct walk *w, const struct mb_query *q, int64_t first, int64_t last,
    const bool *read, struct idx_rank_set *set, struct mb_err *err)
{
	int rc;

	idx_rank_rest_reads++;
	set->floor.block_bound = w->bound;
	set->floor.block_read = read;
	set->floor.n_blocks = w->n_blocks;
	rc = range_rank(w, q, first * RANK_BLOCK_IDS, last * RANK_BLOCK_IDS + RANK_BLOCK_IDS - 1,
	    set, err);
	set->floor.block_bound = NULL;
	set->floor.block_read = NULL;
	return rc;
}

/*
 * The matches of the query in n blocks, as guessed from its phrases' row
 * counts spread evenly (the fewest of them: an AND holds no more; for an
 * OR this guesses low, which only costs time).
 */
static double
matches_in(const struct walk *w, int64_t n_blocks)
{
	double n = (double)w->stats.n_hit[0];

	for (int i = 1; i < w->n_pos; i++)
		n = (double)w->stats.n_hit[i] < n ? (double)w->stats.n_hit[i] : n;
	return n * (double)n_blocks / (double)w->n_blocks;
}

/*
 * Move order[k], whose bound has been lowered, to its place among
 * order[k + 1..n - 1] (sorted by bound, best first, so every block of
 * order stays so), after those with the same bound.
 */
static void
order_requeue(int64_t *order, int64_t k, int64_t n, const double *bound)
{
	int64_t b = order[k], lo = k + 1, hi = n;

	while (lo < hi) {	/* the first after k with a worse bound */
		int64_t mid = lo + (hi - lo) / 2;

		if (bound[order[mid]] > bound[b])
			hi = mid;
		else
			lo = mid + 1;
	}
	memmove(&order[k], &order[k + 1], (size_t)(lo - k - 1) * sizeof(*order));
	order[lo - 1] = b;
}

/*
 * Read the blocks best bound first until the next cannot reach the floor.
 * A block read takes its unread neighbours along while they can reach the
 * floor too (or, before there is one, have the same bound: the newest ids,
 * which have none): one range statement instead of several.  Blocks whose
 * bound is 0 hold no match (every phrase a match holds adds to its score).
 */
static int
blocks_walk(struct walk *w, const struct mb_query *q, struct idx_rank_set *set,
    struct mb_err *err)
{
	int64_t *order = mb_xcalloc((size_t)w->n_blocks, sizeof(*order));
	bool *read = mb_xcalloc((size_t)w->n_blocks, sizeof(*read));
	struct rank_runs can = { 0 };	/* set up once the page is full (can.in) */
	int reads_floored = 0;	/* ranges read since the page was full */
	int reads_short = 0;	/* ranges read before it was */
	/* the floor rises fast over the first ranges: no choice before these */
	int64_t first_choice = idx_rank_floor_reads < RANK_FIRST_READS ? idx_rank_floor_reads :
	    RANK_FIRST_READS;
	int rc = 0;

	rank_order_sort(w->bound, w->n_blocks, order);
	for (int64_t k = 0; rc == 0 && k < w->n_blocks; k++) {
		int64_t b = order[k], lo = b, hi = b;
		double reach;

		if (read[b])
			continue;
		/* a block summed at one length when it comes first: lowered, it waits its turn */
		if (w->sum_due != NULL && w->sum_due[b] && block_met(w, b)) {
			order_requeue(order, k--, w->n_blocks, w->bound);
			continue;
		}
		if (!(w->bound[b] < 0.0) || (set->floor.set && w->bound[b] > set->floor.score))
			break;	/* sorted: no later block can reach the page either */
		/*
		 * A filter few matches pass may never fill the page, and would
		 * leave the walk reading every block a range at a time: after a
		 * few ranges without a full page the walk gives up, and the
		 * caller reads every match, which tests the filters only until
		 * 1,000 have passed (search_sql_rank_ix), through the scope's
		 * ids when it has a date range, a folder, a flag, labels,
		 * attachments or a size few enough to read
		 * (idx_narrow_ids_walked).  Reading them here, each joined and
		 * counted, cost three times that: xent
		 * after:2002-09-01 at 1,000,000 messages, 90 ms against 26.
		 */
		if (w->filtered && !set->floor.set && ++reads_short > RANK_FIRST_READS) {
			w->gave_up = true;
			break;
		}
		if (set->floor.set && (w->n_tokens == 1 || w->filtered || w->range_match != NULL) &&
		    ++reads_floored > first_choice) {
			int64_t first, last;
			double per_range = w->filtered ? RANK_RANGE_ROWS_FILTERED :
			    RANK_RANGE_ROWS * w->n_tokens;
			double idle;

			if (can.in == NULL)
				rank_runs_start(&can, w->bound, order, w->n_blocks, read,
				    set->floor.score);
			else
				rank_runs_floor(&can, w->bound, order, set->floor.score);
			rank_runs_ends(&can, &first, &last);
			/*
			 * One statement when the rows it would step over for nothing
			 * cost less than the runs' ranges, once the floor has had
			 * idx_rank_floor_reads ranges to rise, or sooner when the
			 * ranges read since the page was full have cost what the
			 * statement would: waiting never costs more than it.
			 */
			idle = matches_in(w, last - first + 1 - can.count);
			if (idle < (double)can.runs * per_range &&
			    (reads_floored > idx_rank_floor_reads ||
			    (double)reads_floored * per_range >= idle)) {
				rc = range_rank_rest(w, q, first, last, read, set, err);
				break;
			}
		}
		reach = set->floor.set ? set->floor.score : w->bound[b];
		while (lo > 0 && b - lo < idx_rank_range_reach && !read[lo - 1] &&
		    w->bound[lo - 1] < 0.0 && block_bound_now(w, lo - 1) <= reach)
			lo--;
		while (hi + 1 < w->n_blocks && hi - b < idx_rank_range_reach && !read[hi + 1] &&
		    w->bound[hi + 1] < 0.0 && block_bound_now(w, hi + 1) <= reach)
			hi++;
		for (int64_t i = lo; i <= hi; i++) {
			read[i] = true;
			rank_runs_remove(&can, i);
		}
		rc = range_rank(w, q, lo * RANK_BLOCK_IDS, hi * RANK_BLOCK_IDS +
		    RANK_BLOCK_IDS - 1, set, err);
	}
	rank_runs_release(&can);
	free(order);
	free(read);
	return rc;
}

/*
 * The filtered walk's total: the matches that pass, counted up to the
 * list's cap or one past the page, whichever is more (so that whether a
 * next page exists is known).
 */
static int
filtered_total(struct walk *w, const struct mb_query *q, const struct idx_rank_set *set,
    int64_t *matches_r, bool *exact_r, struct mb_err *err)
{
	int64_t cap = (int64_t)set->keep + 1 > MB_SEARCH_COUNT_CAP ? (int64_t)set->keep + 1 :
	    MB_SEARCH_COUNT_CAP;

	if (w->wide != NULL)	/* a wide folder: over its runs, from its first id */
		return idx_search_count_runs(w->idx, q, w->folder_id, w->wide->runs,
		    w->wide->n_runs, cap, matches_r, exact_r, err);
	return idx_search_count(w->idx, q, w->folder_id, cap, matches_r, exact_r, err);
}

/*
 * A wide folder's runs (w->wide): a block with no id in them holds no
 * message of the folder, so no row of it passes; its bound is 0, which
 * the walk never reads.
 */
static void
blocks_outside_runs(struct walk *w)
{
	const struct idx_narrow_ids *d = w->wide;
	int64_t b = 0;

	for (size_t i = 0; i < d->n_runs; i++) {
		for (; b < w->n_blocks && (b + 1) * RANK_BLOCK_IDS - 1 < d->runs[i].lo; b++)
			w->bound[b] = 0.0;
		b = d->runs[i].hi / RANK_BLOCK_IDS + 1;
	}
	for (; b < w->n_blocks; b++)
		w->bound[b] = 0.0;
}

_Thread_local uint64_t idx_rank_prefix_walks;
/*
 * Below this many matches a prefix is read whole: the walk's fixed costs
 * (its words, their bounds, two statements for the rarer words) are more
 * than FTS5's read.  spam* at 10,000 messages (5,736 matches): 3.1 ms of
 * CPU walked, 2.4 read whole; at 100,000 (53,672): 8.0 walked, 12.9 read
 * whole (docs/benchmarks.md, "Prefixes through their words").
 */
int64_t idx_rank_prefix_min_matches = 16384;
/*
 * A prefix is walked only when one of its bounded words holds at least
 * this share (in percent) of its rows.  The rows of its other words are
 * read whole before the walk, so the more of them there are the less the
 * walk saves.  At 1,000,000 messages, of 32 prefixes: at 82% or more the
 * walk was faster but for two (spam* 90%: 71 ms against 96 read whole,
 * list* 87%: 59 against 161, emai* 99%: 15 against 58; spa* 83%: 125
 * against 101); below 80% it lost by up to 3.5 times (tra* 18%: 185
 * against 53, fre* 66%: 131 against 74, us* 76%: 210 against 172) and won
 * twice by 15% at most (mai* 63%: 248 against 293); the same at 100,000
 * (docs/benchmarks.md, "Prefixes walked only when one word holds them"
 * and "The rarer words' rows without NOT").
 * 0 walks every prefix (tests).
 */
int64_t idx_rank_prefix_min_share = 80;

int64_t idx_rank_min_matches = 3000;
bool idx_rank_whole_bounds_used = true;
_Thread_local uint64_t idx_rank_walks;

/*
 * Several words are walked when, were they independent, a 25th of the
 * messages at least would hold them all.  Their bounds add up loosely
 * (each word at its best in another row), so the walk reads many blocks,
 * and reading every match costs less while the matches are few: at
 * 1,000,000 messages of the corpus, the walk won from about 77,000
 * matches (`for version`: 28 ms of CPU read whole, 19 walked; `http
 * taint`, 354,755: 82 and 32) and lost below 60,000 (`free money`,
 * 58,274: 20 and 28; `linux kernel` 9 and 16), the same at 100,000.  The
 * guess from the words' rows is low for words that come together, which
 * only leaves such a search read whole (docs/benchmarks.md, "Several
 * words walked through their bounds").
 */
#define IDX_RANK_WORDS_SHARE	25
/*
 * Words only (no phrase among them), bounded at one length
 * (idx_rank_one_length), are walked from a 50th: at 1,000,000 messages of the
 * corpus every pair of 30 measured whose guess was at least 15,000 (the
 * 25th's 40,000 took `and returns`, 42,089) won walked but three
 * (`get money`, 42,152: +27%; `please click`, `email free`: +8, +10),
 * from 5% (`free money`, 26,863) to 74% (`free offer`, 32,973: 31.8 ms of
 * CPU read whole, 8.2 walked), and below 15,000 six of ten lost, by up
 * to 129% (`version linux`, 14,060); at 100,000 the least matches
 * walked, 3,000, is more than a 50th and decides, where a 25th had been
 * 4,000 (`face the`, 3,327: 2.94 ms whole, 1.15 walked; docs/benchmarks.md,
 * "Several words walked from a 50th of the ids").
 */
int64_t idx_rank_and_share = 50;
bool idx_rank_words_walked = true;
bool idx_rank_or_walked = true;
bool idx_rank_not_walked = true;
bool idx_rank_phrases_walked = true;

/*
 * Whether w's phrases are ones the walk takes several of: words, or
 * phrases among them (tight ones: phrases_tight()), a match holding all of
 * them (an AND) or one of each group (an OR, alone or beside an AND:
 * phrase_groups).
 */
static bool
several_phrases(const struct walk *w)
{
	for (int i = 0; i < w->n_pos; i++)
		if (w->ph[i].n != 1 && !idx_rank_phrases_walked)
			return false;
	return w->n_groups == w->n_pos || idx_rank_or_walked;
}

/*
 * The rows w's phrases before any NOT match among max_id ids: one
 * phrase's, or several words', were they independent (one of each group:
 * all of them for an AND, any one for an OR).
 */
static double
rows_guess(const struct walk *w, int64_t max_id)
{
	double ids = (double)(max_id > 0 ? max_id : 1), n = ids;

	if (w->n_pos == 1)
		return (double)w->stats.n_hit[0];
	for (int g = 0; g < w->n_groups; g++) {
		double none = 1.0;

		for (int i = 0; i < w->n_pos; i++)
			if (w->group[i] == g)
				none *= 1.0 - (double)w->stats.n_hit[i] / ids;
		n *= 1.0 - none;
	}
	return n;
}

/*
 * Whether w's word or phrase has too few matches to walk (the index's ids
 * reach max_id).  The walk pays a statement for each range of blocks, and
 * when the matches are few the page fills late or never, the floor stays
 * low and nearly every block holding the bounded word is a range: "couple
 * shots" (17 matches at 100,000 messages) walked 780 blocks for 428 M
 * instructions, read whole 2.5 M.  Below 3,000 matches the whole read was
 * cheaper for 10 of the 12 words and phrases measured at 10,000 and
 * 100,000 messages (the walk by 2 and 13% for the other two).  A phrase is
 * bounded by its words' fronts, loosely when they are frequent, and at
 * 1,000,000 messages the whole read won up to about 20,000 matches
 * ("linux kernel", 9,447: 11 ms against 39), the walk from about 35,000:
 * so a phrase also needs a 32nd of the ids (docs/benchmarks.md, "Few
 * matches read whole").  idx_rank_min_matches 0 walks everything (tests).
 */
/* The share of the ids (its inverse) several phrases' guessed matches must reach to walk. */
static int64_t
words_share(const struct walk *w)
{
	for (int i = 0; i < w->n_pos; i++)
		if (w->ph[i].n != 1)
			return IDX_RANK_WORDS_SHARE;
	return sums_at_one_length(w) && w->n_groups == w->n_pos && idx_rank_and_share > 0 ?
	    idx_rank_and_share : IDX_RANK_WORDS_SHARE;
}

static bool
few_matches(const struct walk *w, int64_t max_id)
{
	int64_t min = idx_rank_min_matches;

	if (min > 0 && w->ph[0].n > 1 && max_id / 32 > min)
		min = max_id / 32;
	if (min > 0 && w->n_groups > 1 && max_id / words_share(w) > min)
		min = max_id / words_share(w);
	return rows_guess(w, max_id) < (double)min;
}

/*
 * A phrase among other phrases or words is walked while its rows are at
 * least this share (in percent) of its rarest bounded word's rows
 * (idx_rank_phrase_tight; tests change it).  Its block bound is met from
 * its words' fronts, which cannot tell the phrase's rows from their
 * other rows: where the phrase is a small part of its word's rows the
 * bound stays high, the walk reads most blocks, and each range costs more
 * than one statement over every match.  At 100,000 messages, ORs with a
 * phrase: `"red hat" OR linux` (the phrase 85% of hat's rows) 3.35 ms of
 * CPU read whole, 1.72 walked; `"email address" OR address` (39%) 4.73 and
 * 1.94; `"your email" OR address` (12%) 6.31 and 7.76; `"the list" OR
 * list` (8%) 15.8 and 17.1 (docs/benchmarks.md, "Phrases walked among
 * other phrases").
 */
int64_t idx_rank_phrase_tight = 30;

/*
 * Whether every phrase of several (w->n_pos > 1) that the walk bounds is
 * tight enough to walk (idx_rank_phrase_tight), its word's rows scaled
 * from when syncd counted them to the index's max_id ids; a word is one.
 */
static bool
phrases_tight(const struct walk *w, int64_t max_id)
{
	double grown = w->terms_rows > 0 && max_id > w->terms_rows ?
	    (double)max_id / (double)w->terms_rows : 1.0;

	for (int i = 0; w->n_pos > 1 && i < w->n_pos; i++)
		if (w->ph[i].n > 1 && !w->rare[i] &&
		    (double)w->stats.n_hit[i] * 100.0 <
		    (double)w->docs[i] * grown * (double)idx_rank_phrase_tight)
			return false;
	return true;
}

/*
 * A NOT (-word, -"a phrase", whose positions each range's MATCH reads: still
 * less than scoring every match, docs/benchmarks.md "A NOT of a phrase
 * walked") is walked while the rows of its phrases are at most this
 * share (in percent) of the rows the phrases before it match: where it
 * takes away more, the best rows are often among those it takes, the page
 * fills late, and the walk reads most blocks (`"click here"
 * -unsubscribe`, 85%, at 100,000 messages: 5.3 ms of CPU read whole, 12.4
 * walked; `spam -razor`, 42%: 3.3 and 1.6; docs/benchmarks.md, "A NOT
 * walked through the bounds of the words before it").
 */
#define IDX_RANK_NOT_SHARE	50

/* Whether w's NOT (if any) takes away few enough of the rows before it to walk. */
static bool
not_few(const struct walk *w, int64_t max_id)
{
	double neg = 0.0;

	for (int i = w->n_pos; i < w->n_ph; i++)
		neg += (double)w->stats.n_hit[i];
	return neg * 100.0 <= rows_guess(w, max_id) * IDX_RANK_NOT_SHARE;
}

/*
 * Rank a prefix through its words (index_search_prefix.c): the rows that
 * hold a word syncd does not bound first, in full, then the blocks of the
 * bounded words' rows best bound first, skipping those rows.  With the
 * prefix's statistics as kept, else from its rows counted through its words
 * (idx_rank_known_hits(), idx_prefix_rows()) or, when they could not be,
 * computed by FTS5's read of the prefix, once (and kept, so that a full
 * read after finds them); the words are listed only when there are enough
 * matches to walk.
 */
static int
prefix_walk(struct walk *w, const struct mb_query *q, const char *text, struct idx_rank_set *set,
    bool *used_r, int64_t *matches_r, bool *exact_r, struct mb_err *err)
{
	const struct idx_rank_known *known = w->stats.known;
	bool counted = known != NULL && known->n == 1 && known->hits[0] >= 0;
	struct idx_prefix words = { 0 };
	struct idx_rank_prefix score = { 0 };
	struct idx_rank_filters filters = { 0 };
	struct idx_ids rare = { 0 };
	int64_t max_id = 0, rows;
	bool kept = false, any = true, served = false, common = true;
	int rc = -1;

	if (idx_prefix_stats_kept(w->idx, q->match, &w->stats, &kept, err) == -1)
		return -1;
	if (!kept && !counted && query_stats(w, q, &any, err) == -1)
		return -1;
	rows = !kept && counted ? known->hits[0] :
	    w->stats.set && w->stats.n_phrase == 1 ? w->stats.n_hit[0] : -1;
	if (!any || rows == 0) {
		*used_r = true;	/* nothing matches */
		return 0;
	}
	if (rows < 0 || rows < idx_rank_prefix_min_matches)
		return 0;	/* few matches: FTS5's read of the prefix is cheaper */
	/*
	 * Beside filters few messages pass, the page fills late or never: the
	 * rarer words' rows would all be joined, and the total read every match
	 * through the words (`list* larger:100000` at 1,000,000 messages, 495
	 * passing: 793 ms of CPU against 197 read whole)
	 */
	if (idx_max_id(w->idx, "search: rank blocks", &max_id, err) == -1)
		return -1;
	if (w->filtered &&
	    idx_narrow_filters_common(w->idx, q, w->folder_id, max_id, &common, err) == -1)
		return -1;
	if (w->filtered && !common)
		return 0;
	if (idx_prefix_words(w->idx, text, rows * idx_rank_prefix_min_share / 100,
	    max_id, &words, &served, err) == -1)
		return -1;
	if (!served)
		return 0;	/* its rarer words' rows would cost more than the walk saves */
	/* counted: the statistics without FTS5's merge; else (no row of its word) merged */
	if (!w->stats.set &&
	    idx_prefix_stats_counted(w->idx, q->match, &w->stats, err) == -1)
		goto out;
	if (!w->stats.set && query_stats(w, q, &any, err) == -1)
		goto out;
	if (!w->stats.set || w->stats.n_phrase != 1) {
		rc = 0;		/* read whole */
		goto out;
	}
	w->n_blocks = max_id / RANK_BLOCK_IDS + 1;
	if (chunks_load(w, err) == -1 || prefix_blocks_bound(w, &words, err) == -1)
		goto out;
	score.idf = w->stats.idf[0];
	score.avgdl = w->stats.avgdl;
	set->floor.prefix = &score;
	if (w->wide != NULL)
		blocks_outside_runs(w);
	if (w->filtered) {
		filters.q = q;
		filters.folder_id = w->folder_id;
		filters.runs = w->wide != NULL ? w->wide->runs : NULL;
		filters.n_runs = w->wide != NULL ? w->wide->n_runs : 0;
	}
	if (idx_prefix_rank_rare(w->idx, &words, w->filtered ? &filters : NULL, set, &score,
	    &rare, err) == -1)
		goto out;
	w->range_match = words.bounded_match;
	w->n_tokens = words.n_bounded;
	if (blocks_walk(w, q, set, err) == -1)
		goto out;
	if (w->gave_up) {	/* the caller reads every match, into an empty set */
		set->n = 0;
		set->matches = 0;
		set->floor.set = false;
		set->gave_up = true;
		rc = 0;
		goto out;
	}
	idx_rank_prefix_walks++;
	if (w->filtered) {	/* counted through its words: FTS5 would merge them first */
		struct mb_query by_words = *q;

		by_words.match = words.every;
		if (filtered_total(w, &by_words, set, matches_r, exact_r, err) == -1)
			goto out;
	} else
		*matches_r = w->stats.n_hit[0];
	*used_r = true;
	rc = 0;
out:
	set->floor.prefix = NULL;
	free(rare.ids);
	idx_prefix_release(&words);
	return rc;
}

/*
 * An OR's words without bounds are read whole before the walk, so the walk
 * saves only on the others' rows: it is taken while the rarer words' rows
 * are at most this share (in percent) of the OR's, as guessed from their
 * rows (docs/benchmarks.md, "An OR of words walked through its bounds").
 */
int64_t idx_rank_or_rare_share = 25;

/*
 * Whether an OR with words without bounds is walked (*ok_r stays true
 * unless a failure set err, when false is answered too): their rows few
 * enough beside the OR's, and beside filters many messages pass (where
 * few do, the page fills late or never, and the rarer words' rows would
 * all be joined, as for a prefix's).
 */
static bool
or_rare_few(struct walk *w, const struct mb_query *q, int64_t max_id, bool *ok_r,
    struct mb_err *err)
{
	double rare = 0.0;
	bool common = true;

	*ok_r = true;
	for (int i = 0; i < w->n_ph; i++)
		rare += w->rare[i] ? (double)w->stats.n_hit[i] : 0.0;
	if (rare * 100.0 > rows_guess(w, max_id) * (double)idx_rank_or_rare_share)
		return false;
	if (w->filtered &&
	    idx_narrow_filters_common(w->idx, q, w->folder_id, max_id, &common, err) == -1) {
		*ok_r = false;
		return false;
	}
	return common;
}

/*
 * Rank the rows of w's rarer words (an OR's words without bounds) into
 * set (idx_or_rank_rare), and set the walk up to read the bounded words'
 * ranges skipping them, each row scored with the query's statistics
 * (walk_parts, which set->floor points at until the caller clears it).
 * parts, walk_parts and both are the caller's, released after the walk.
 */
static int
or_rare_first(struct walk *w, const struct mb_query *q, struct idx_rank_set *set,
    struct idx_or_parts *parts, struct idx_rank_parts *walk_parts, struct idx_ids *both,
    struct mb_err *err)
{
	struct idx_rank_filters filters = { .q = q, .folder_id = w->folder_id,
	    .runs = w->wide != NULL ? w->wide->runs : NULL,
	    .n_runs = w->wide != NULL ? w->wide->n_runs : 0 };

	if (idx_or_parts_make(q->match, w->rare, w->n_pos, w->n_ph, parts) == -1)
		return mb_err_set(err, MB_E_INTERNAL, "search: an OR's words are not its phrases");
	if (idx_or_rank_rare(w->idx, parts, &w->stats, w->filtered ? &filters : NULL, set, both,
	    err) == -1)
		return -1;
	*walk_parts = (struct idx_rank_parts){ .stats = &w->stats, .slot = parts->bounded_slot,
	    .n_slot = parts->n_bounded, .skip = both->ids, .n_skip = both->n };
	set->floor.parts = walk_parts;
	w->range_match = parts->bounded;
	w->n_tokens = 0;
	for (int i = 0; i < parts->n_bounded; i++)
		w->n_tokens += w->ph[parts->bounded_slot[i]].n;
	return 0;
}

_Thread_local uint64_t idx_rank_totals_counted;

/*
 * The rows match (several phrases) matches, into *total_r: as kept beside
 * its statistics once a search counted them for the index as it is (a next
 * page, the same search again), else FTS5's count, then kept.  The count
 * steps through every match: `you your` at 1,000,000 messages, 394,520 of
 * them, spent 30 ms of its 46 there (docs/benchmarks.md, "A total kept
 * beside the statistics").
 */
static int
match_total(struct mb_index *idx, const char *match, int64_t *total_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, total_kept_sql, err);
	bool kept;
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	kept = rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER;
	if (kept)
		*total_r = sqlite3_column_int64(st, 0);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return idx_sqlerr(idx, rc, "search: a kept total", err);
	if (kept)
		return 0;
	idx_rank_totals_counted++;
	if (idx_one_int64(idx, count_sql, match, "search: rank blocks", total_r, err) == -1 ||
	    (st = idx_stmt_sql(idx, total_keep_sql, err)) == NULL)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, *total_r);
	rc = sqlite3_step(st);
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, "search: keep a total", err);
}

int
idx_rank_blocks(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    bool filtered, const struct idx_narrow_ids *wide, struct idx_rank_set *set, bool *used_r,
    int64_t *matches_r, bool *exact_r, struct mb_err *err)
{
	struct walk w = { .idx = idx, .filtered = filtered, .folder_id = folder_id,
	    .wide = filtered && wide != NULL && wide->wide ? wide : NULL };
	struct idx_or_parts parts = { 0 };
	struct idx_rank_parts walk_parts = { 0 };
	struct idx_ids both = { 0 };
	int64_t max_id = 0;
	char *prefix;
	bool ok = false, any = false;
	int rc = -1;

	*used_r = false;
	*matches_r = 0;
	*exact_r = true;
	w.stats.known = set->floor.known;
	if (q->match == NULL)
		return 0;	/* no words: nothing to rank */
	/* filters the index does not hold, or that name a few rows of their own */
	if (filtered && (!idx_search_covered(q) || q->msgid != NULL || q->thread_id > 0))
		return 0;
	if (bounds_usable(&w, &ok, err) == -1)
		return -1;
	if (!ok)
		return 0;
	/* one prefix: through its words */
	if ((prefix = idx_prefix_text(q->match)) != NULL) {
		rc = prefix_walk(&w, q, prefix, set, used_r, matches_r, exact_r, err);
		free(prefix);
		goto out;
	}
	/*
	 * A prefix, or no word bounded: the caller reads every match.  So with
	 * a column ({from_text} : ...): the bounds count a word's hits in every
	 * column, and from:yahoo.com through them cost twice its whole read.
	 */
	if (strchr(q->match, '{') != NULL || !phrases_tokenize(&w, q->match)) {
		rc = 0;
		goto out;
	}
	/*
	 * The phrases after a NOT (-word) are in no match: they add nothing to
	 * a score or a bound, and each range's MATCH leaves their rows out.
	 */
	if (!phrase_groups(&w, q->match) || w.n_pos < 1 || w.n_pos > w.n_ph ||
	    (w.n_pos < w.n_ph && !idx_rank_not_walked)) {
		rc = 0;
		goto out;
	}
	/*
	 * Several phrases: words, or tight phrases among them, a match
	 * holding all of them or one of each OR's, and only when many
	 * messages hold them (few_matches)
	 */
	if (w.n_pos > 1 && (!idx_rank_words_walked || !several_phrases(&w))) {
		rc = 0;
		goto out;
	}
	if (phrases_rare(&w, err) == -1)
		goto out;
	/* an AND (an OR beside one too) needs every word bounded, an OR alone one */
	if (w.n_rare == w.n_pos || (w.n_groups > 1 && w.n_rare > 0)) {
		rc = 0;
		goto out;
	}
	if (query_stats(&w, q, &any, err) == -1)
		goto out;
	if (!any) {		/* nothing matches: nothing to rank or count */
		*used_r = true;
		rc = 0;
		goto out;
	}
	if (idx_max_id(idx, "search: rank blocks", &max_id, err) == -1)
		goto out;
	if (few_matches(&w, max_id) || !not_few(&w, max_id)) {
		rc = 0;		/* reading them is cheaper */
		goto out;
	}
	if (!phrases_are_ranked(&w) || !phrases_tight(&w, max_id)) {
		rc = 0;		/* a loose phrase: reading every match is cheaper */
		goto out;
	}
	if (w.n_rare > 0 && !or_rare_few(&w, q, max_id, &any, err)) {
		rc = any ? 0 : -1;	/* read whole, or a failure */
		goto out;
	}
	/*
	 * An AND of words, some of them in most rows: their hits read from
	 * syncd's bytes, not stepped through by FTS5, in each range whose
	 * chunks have them (index_search_common.c)
	 */
	if (!filtered && !w.negated && w.n_pos > 1 && w.n_pos == w.n_ph &&
	    w.n_groups == w.n_pos && idx_kept_make(idx, q->match, w.stats.known, &w.stats,
	    set->floor.lengths, &w.kept, err) == -1)
		goto out;
	w.n_blocks = max_id / RANK_BLOCK_IDS + 1;
	if (chunks_load(&w, err) == -1 || blocks_bound(&w, err) == -1)
		goto out;
	if (w.wide != NULL)
		blocks_outside_runs(&w);
	if (w.n_rare > 0 && or_rare_first(&w, q, set, &parts, &walk_parts, &both, err) == -1)
		goto out;
	if (blocks_walk(&w, q, set, err) == -1)
		goto out;
	if (w.gave_up) {	/* the caller reads every match, into an empty set */
		set->n = 0;
		set->matches = 0;
		set->floor.set = false;
		set->gave_up = true;
		/*
		 * with the blocks' bounds: its rows of a block below the floor
		 * cost no scoring (not an OR's without its rarer words)
		 */
		if (idx_rank_whole_bounds_used && w.n_rare == 0) {
			set->whole_bound = w.bound;
			set->whole_blocks = w.n_blocks;
			w.bound = NULL;
		}
		rc = 0;
		goto out;
	}
	idx_rank_walks++;
	if (w.kept != NULL)
		idx_common_reads++;
	/* a phrase's rows are its statistics' */
	if (filtered) {
		if (filtered_total(&w, q, set, matches_r, exact_r, err) == -1)
			goto out;
	} else if (w.stats.n_phrase == 1)
		*matches_r = w.stats.n_hit[0];
	else if (match_total(idx, q->match, matches_r, err) == -1)
		goto out;
	*used_r = true;
	rc = 0;
out:
	set->floor.parts = NULL;
	free(both.ids);
	idx_or_parts_release(&parts);
	walk_release(&w);
	return rc;
}

/*
 * ---- Lengths for a search read whole
 *
 * A search the walk does not take (a column's, several words', a few
 * matches', filters the walk gives up on) scores every match, and reads a
 * match's length (a docsize lookup, the dearest part of scoring it) unless
 * its score at the length its hits prove is already worse than the floor.
 * Hits in a short column prove little: every match of from:yahoo.com at
 * 1,000,000 messages had its length read, 32,676 lookups.  A bounded
 * word's fronts prove more: every row of a block holding the word is at
 * least as long as the shortest point of the word's front there.  When
 * every match holds the word (no OR, no NOT), that is a length every match
 * of the block has (docs/index.md, "Lengths from the fronts").
 */
bool idx_rank_min_len_used = true;

/* Block b's shortest front point into arr[b] (a block lacking the token keeps 0). */
static void
min_len_of(struct walk *w, int64_t b, const struct rank_front *fr, void *arg)
{
	uint32_t *arr = arg, least = UINT32_MAX;

	(void)w;
	for (int i = 0; i < fr->n; i++)
		least = fr->p[i].d < least ? fr->p[i].d : least;
	arr[b] = fr->n > 0 ? least : 0;
}

/* The bounded token of w's phrases in the fewest rows, and its rows; NULL: none. */
static int
rarest_bounded(struct walk *w, const char **token_r, int64_t *docs_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(w->idx, term_sql, err);
	int rc = SQLITE_DONE;

	*token_r = NULL;
	*docs_r = 0;
	if (st == NULL)
		return -1;
	for (int i = 0; rc == SQLITE_DONE && i < w->n_ph; i++)
		for (int j = 0; rc == SQLITE_DONE && !w->ph[i].colocated && j < w->ph[i].n; j++) {
			int64_t docs;

			rc = token_docs(st, w->ph[i].tokens[j], &docs);
			if (docs >= 0 && (*token_r == NULL || docs < *docs_r)) {
				*token_r = w->ph[i].tokens[j];
				*docs_r = docs;
			}
		}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(w->idx, rc, "search: rank terms", err);
}

int
idx_rank_min_lengths(struct mb_index *idx, const struct mb_query *q, uint32_t **len_r,
    int64_t *n_r, struct mb_err *err)
{
	struct walk w = { .idx = idx };
	const char *token = NULL;
	int64_t docs = 0, max_id = 0;
	uint32_t *len = NULL;
	bool ok = false;
	int rc = -1;

	*len_r = NULL;
	*n_r = 0;
	/* only when every match holds every phrase: no OR, no NOT */
	if (!idx_rank_min_len_used || q->match == NULL || !phrase_groups(&w, q->match) ||
	    w.negated || w.n_groups != w.n_pos)
		return 0;
	if (bounds_usable(&w, &ok, err) == -1)
		return -1;
	if (!ok || !phrases_tokenize(&w, q->match)) {
		rc = 0;
		goto out;
	}
	if (rarest_bounded(&w, &token, &docs, err) == -1)
		goto out;
	/* a word in fewer rows has fewer lengths to spare than its fronts cost */
	if (token == NULL || docs < idx_rank_min_matches) {
		rc = 0;
		goto out;
	}
	if (idx_max_id(idx, "search: rank blocks", &max_id, err) == -1)
		goto out;
	w.n_blocks = max_id / RANK_BLOCK_IDS + 1;
	len = mb_xcalloc((size_t)w.n_blocks, sizeof(*len));
	if (chunks_load(&w, err) == -1 || token_fronts(&w, token, min_len_of, len, err) == -1)
		goto out;
	*len_r = len;
	*n_r = w.n_blocks;
	len = NULL;
	rc = 0;
out:
	free(len);
	walk_release(&w);
	return rc;
}
