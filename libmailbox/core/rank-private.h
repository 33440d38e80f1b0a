/*
 * Block bounds of the ranking (migrations/0014_rank_bounds.sql, docs/index.md
 * "Ranking"): what syncd's builder (index_rank_build.c) and the search's
 * block walk (index_search_blocks.c) share, in fts_bounds.c.  Not a public
 * header.
 */
#ifndef MAILBOX_RANK_PRIVATE_H
#define MAILBOX_RANK_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/err.h"

struct mb_index;
struct rank_block_lengths;

/* The triggers of migration 0014 spell these numbers out: change both or neither. */
#define RANK_BLOCK_IDS		128	/* ids in a block */
#define RANK_CHUNK_BLOCKS	16	/* blocks in a chunk: one bit each in rank_chunks.blocks */
#define RANK_CHUNK_IDS		(RANK_BLOCK_IDS * RANK_CHUNK_BLOCKS)
#define RANK_CHUNK_FULL		((1 << RANK_CHUNK_BLOCKS) - 1)
/*
 * rank_chunks.blocks's bit beside the blocks' (migration 0018 spells it
 * out): the chunk's rank_bounds.docs counts are exact, no row of it deleted
 * since they were made.  A chunk is built when it is not FULL | COUNTED.
 */
#define RANK_CHUNK_COUNTED	(1 << RANK_CHUNK_BLOCKS)
#define RANK_CHUNK_BUILT	(RANK_CHUNK_FULL | RANK_CHUNK_COUNTED)
#define RANK_FRONT_MAX		16	/* points a front keeps before merging two */
/*
 * rank_lengths.lengths (migration 0022): a block's ids' lengths in tokens,
 * 16 bits little-endian, 0 where there is no row or the length is above
 * RANK_LENGTH_MAX.  The builder fills RANK_LENGTHS_FILLS chunks built
 * before 0022 for each chunk it may build in a call.
 */
#define RANK_LENGTHS_BYTES	(2 * RANK_BLOCK_IDS)
#define RANK_LENGTH_MAX		0xffff
#define RANK_LENGTHS_FILLS	16

#define RANK_K1_PLUS_1	2.2	/* the most a BM25 term gives, IDF aside (k1 = 1.2) */

/*
 * rank_bounds.hits (migration 0031): of a term in at least
 * RANK_HITS_SHARE_NUM / RANK_HITS_SHARE_DEN of the rows when it was
 * chosen, each id's weighted hits of it in the chunk, a byte an id (the
 * chunk's id i at byte i, 0 for a row without it), and after the
 * RANK_HITS_BYTES bytes, for each id whose byte is RANK_HITS_MANY, in
 * order, its offset in the chunk (2 bytes) and its hits (4 bytes), both
 * little-endian; NULL for other terms.  A search of words all of which a
 * match must hold reads such a word's hits there instead of stepping
 * through its doclist for every row of the others (index_search_common.c).
 * The weights are whole numbers, so the hits are their exact sum.
 */
#define RANK_HITS_BYTES		RANK_CHUNK_IDS
#define RANK_HITS_MANY		255
#define RANK_HITS_MANY_BYTES	6
#define RANK_HITS_SHARE_NUM	2
#define RANK_HITS_SHARE_DEN	5

/* A point of a front: f weighted hits at length d. */
struct rank_point {
	uint32_t	f, d;
};

/*
 * The Pareto front of one term's rows in one block: points (f, d) such that
 * every row of the block holding the term has f at most and d at least
 * those of some point, f its weighted hits (rounded up) and d its length in
 * tokens.  BM25's term grows with f and shrinks with d, so the largest
 * value over the points bounds every row, at any IDF and average length.
 */
struct rank_front {
	int			n;
	struct rank_point	p[RANK_FRONT_MAX];
};

/* Add a row of f weighted hits and length d to fr (merging two points when full). */
void	rank_front_add(struct rank_front *fr, uint32_t f, uint32_t d);

/* BM25's term for one phrase without its IDF, f*(k1+1)/(f + k1*(1-b+b*d/avgdl)),
 * at its largest over fr's points; 0 for an empty front. */
double	rank_front_max(const struct rank_front *fr, double avgdl);
/* The same over p[0..n-1] (a front's points, or a phrase's met: struct rank_stair). */
double	rank_points_max(const struct rank_point *p, int n, double avgdl);

/*
 * Add fr to sum, a front of the sum of several terms' hits (a prefix's
 * words: index_search_blocks.c): a row of length d holds at most, of each
 * term, the most f of the term's points of length d or less, so the sum of
 * those at each point's d bounds every row holding any of the terms.
 */
void	rank_front_sum(struct rank_front *sum, const struct rank_front *fr);

/*
 * A phrase's words' fronts met in one block: a row of length d holds no
 * more hits of the phrase than of any of its words (every hit of a phrase
 * is a hit of each word, in the same row and column), so at most the least
 * of the words' fronts' most f at length d or less.  Points with the
 * meaning of a front's, in no order (rank_stair_meet() sorts them into
 * steps when it meets another word's).
 */
#define RANK_STAIR_MAX	(2 * RANK_FRONT_MAX)
struct rank_stair {
	int			n;
	struct rank_point	p[RANK_STAIR_MAX];
};

/* Meet s with fr (first: s becomes fr's points). */
void	rank_stair_meet(struct rank_stair *s, const struct rank_front *fr, bool first);

/*
 * rank_points_max() of s met with fr, s unchanged: for a phrase's last word,
 * whose steps no other word meets after it.
 */
double	rank_stair_meet_max(const struct rank_stair *s, const struct rank_front *fr,
	    double avgdl);

/*
 * Several phrases' steps in one block, for a row that holds at least one
 * phrase of each group (group[i], from 0: each phrase its own group for an
 * AND, all one group for an OR, an OR's words one group beside an AND's):
 * such a row has one length d, and of each phrase i at most the most f of
 * p[i]'s points of length d or less, so the best of sum(idf[i] * term)
 * over the points' lengths where each group has a point bounds it.  Each
 * phrase at its own best length (the sum of their bests) is looser
 * wherever one is strong in short rows and another only in long ones.
 * n[i] < 0: phrase i has no steps here (any f at any length: the most a
 * term can give); n[i] == 0: no row holds it (0 is answered when that
 * leaves a group none).  k is at most RANK_STEPS_SUM_MAX, each n[i] at most
 * RANK_STAIR_MAX.
 */
#define RANK_STEPS_SUM_MAX	4
double	rank_steps_sum_max(const struct rank_point *const *p, const int *n, const double *idf,
	    const int *group, int k, double avgdl);

/* Append block (0..RANK_CHUNK_BLOCKS-1) and its front to a chunk's bounds blob. */
int	rank_front_put(struct mb_buf *out, unsigned block, const struct rank_front *fr);

/*
 * The next block of a bounds blob at *p (before end) into *block_r and
 * *fr, advancing *p; false at the end or on a malformed blob (then *p is
 * end: what follows is not trusted).
 */
bool	rank_front_next(const uint8_t **p, const uint8_t *end, unsigned *block_r,
	    struct rank_front *fr);

/*
 * The block walk's order (rank_order.c): order[0..n-1] the blocks 0..n-1
 * by bound[] ascending (the walk's bounds are negated scores: best first),
 * the higher block first among equal bounds.  The caller owns order.
 */
void	rank_order_sort(const double *bound, int64_t n, int64_t *order);

/*
 * The blocks that can still reach the page's floor (unread, a bound below
 * 0 and at or below the floor, negated as above), kept as the walk reads
 * blocks and raises its floor: how many there are, in how many runs of
 * neighbours, and the first and the last (rank_runs_ends).
 */
struct rank_runs {
	bool	*in;		/* owned: per block, in the runs */
	int64_t	 n;		/* blocks */
	int64_t	 cut;		/* order[0..cut-1]: the blocks whose bound reaches the floor */
	int64_t	 runs, count;
	int64_t	 first, last;	/* no block of the runs is outside them */
};

/* Set r up from order (rank_order_sort), the blocks read so far and floor. */
void	rank_runs_start(struct rank_runs *r, const double *bound, const int64_t *order,
	    int64_t n, const bool *read, double floor);
/* Block b is read: out of the runs (nothing when it was not in them). */
void	rank_runs_remove(struct rank_runs *r, int64_t b);
/* The floor rose to floor: the blocks whose bound no longer reaches it go. */
void	rank_runs_floor(struct rank_runs *r, const double *bound, const int64_t *order,
	    double floor);
/* The first and the last block of the runs; -1 and -1 when there is none. */
void	rank_runs_ends(struct rank_runs *r, int64_t *first_r, int64_t *last_r);
void	rank_runs_release(struct rank_runs *r);

/*
 * Register mb_rank_tf(messages_fts, w0, w1, ...): a row's weighted hits of
 * the query, rounded up, counted as mb_bm25 counts them (fts_bounds.c).
 */
int	mb_fts_bounds_register(sqlite3 *db, struct mb_err *err);

/*
 * The ranking's statistics kept for the process (fts_rank_cache.c).  A
 * connection's view: which database file's entries it may share, and the
 * full-text index it reads now (its records, read again whenever the data
 * version moved).  Owned by the connection's ranking functions.
 */
struct rank_view {
	bool		 checked;	/* version and fts_key are set */
	unsigned	 version;
	unsigned char	*fts_key;	/* owned */
	size_t		 fts_key_len;
	char		*file;		/* owned; NULL until the first use */
};
/* v up to date for db's connection, now; false when the records cannot be read: keep nothing. */
bool	rank_view_current(struct rank_view *v, sqlite3 *db);
void	rank_view_release(struct rank_view *v);
/*
 * The statistics kept for v's index and the MATCH key (of n_phrase
 * phrases; 0: any number up to max_phrase) into *n_r, *avgdl_r and stats
 * (2 x max_phrase doubles: the IDFs, then the row counts); false when none.
 */
bool	rank_kept_get(const struct rank_view *v, const char *key, int n_phrase, int max_phrase,
	    int *n_r, double *avgdl_r, double *stats);
/* Keep statistics for v's index and key (stats: n_phrase IDFs, then n_phrase row counts). */
void	rank_kept_put(const struct rank_view *v, const char *key, int n_phrase, double avgdl,
	    const double *stats);
/*
 * The rows the MATCH key matches on v's index, kept beside its statistics,
 * into *total_r; false when not counted since they were kept.  _put keeps
 * it, only where the statistics are kept (it is dropped with them).
 */
bool	rank_kept_total_get(const struct rank_view *v, const char *key, int64_t *total_r);
void	rank_kept_total_put(const struct rank_view *v, const char *key, int64_t total);

/*
 * How many times any connection of this process has computed a query's
 * statistics (fts_rank.c) rather than reused them: for the tests, which
 * check when the kept statistics are dropped.
 */
extern _Atomic uint64_t	idx_rank_computed;

/*
 * How many rows the ranked walk has read the length of (a docsize lookup,
 * fts_rank.c) on this thread: for the tests, which check that a row whose
 * hits prove it cannot reach the page is not measured.  Per thread, so
 * that mcpd's searching threads share no counter on the walk's path.
 */
extern _Thread_local uint64_t	idx_rank_sized;

/*
 * How many rows mb_bm25 and mb_bm25_top read the hits of on this thread:
 * for the tests, which check that a row of a block bounded below the floor
 * is answered before they are read.
 */
extern _Thread_local uint64_t	idx_rank_hits_read;

/*
 * Of those, how many mb_bm25_top() answered NULL before it read all their
 * phrases' hits (the rarest first: rank_cut, fts_rank.c), on this thread:
 * for the tests, which check that a frequent word's hits are not read in a
 * row whose rarer words leave it below the floor.
 */
extern _Thread_local uint64_t	idx_rank_cut;

/*
 * How many rows a filtered statement that asks mb_bm25_top() before its
 * join (struct idx_rank_memo) let through to the join, a seek into
 * messages_search_filter each, on this thread: for the tests, which check
 * that a row outside a narrow scope (a date range, a folder) is not joined.
 */
extern _Thread_local uint64_t	idx_rank_joined;
/*
 * How many rows mb_bm25_top() answered NULL for being outside a narrow
 * scope's ids, on this thread: for the tests, which check that the read
 * of every match skips the long gaps between the scope's runs of ids.
 */
extern _Thread_local uint64_t	idx_rank_outside;

/*
 * How many phrases' row counts this thread took from the bounds builder's
 * counts (struct idx_rank_known) instead of FTS5's walk of their doclists:
 * for the tests, which check when the counts serve.
 */
extern _Thread_local uint64_t	idx_rank_known_used;

/*
 * How many prefix searches this thread ranked through their words
 * (index_search_blocks.c): for the tests, which check that a prefix is
 * walked, not read whole.
 */
extern _Thread_local uint64_t	idx_rank_prefix_walks;

/*
 * The fewest matches (the prefix's row count) for which a prefix is walked
 * through its words (index_search_blocks.c); the tests lower it to walk
 * the prefixes of a small index.
 */
extern int64_t	idx_rank_prefix_min_matches;
/*
 * The share of a prefix's rows (in percent) its most frequent bounded word
 * must hold for the prefix to be walked (index_search_blocks.c); the tests
 * set it to 0 to walk prefixes of their own, or raise it.
 */
extern int64_t	idx_rank_prefix_min_share;
/*
 * Whether a search of several words may be walked (index_search_blocks.c,
 * IDX_RANK_WORDS_SHARE), and the share of the ids (1 / idx_rank_and_share)
 * the guessed matches of words bounded at one length must reach for it;
 * the tests clear the one to read such a search whole and set the other,
 * the benchmarks set it to choose it.
 */
extern bool	idx_rank_words_walked;
extern int64_t	idx_rank_and_share;
extern bool	idx_rank_or_walked;
extern bool	idx_rank_not_walked;
/*
 * Whether a search of several phrases may walk its phrases of several
 * words, and the share of their word's rows they need (phrases_tight() in
 * index_search_blocks.c); the tests and bench_query change them.
 */
extern bool	idx_rank_phrases_walked;
extern int64_t	idx_rank_phrase_tight;
/* Totals of several phrases counted by FTS5, not found kept (index_search_blocks.c): for the tests. */
extern _Thread_local uint64_t	idx_rank_totals_counted;
extern int64_t	idx_rank_or_rare_share;

/*
 * The fewest matches (the statistics' rows) for which a word or a phrase is
 * ranked through the block bounds, and how many searches this thread ranked
 * so (index_search_blocks.c): the tests lower the one to walk a small
 * index, and read the other to see which way a search went.
 */
extern int64_t	idx_rank_min_matches;
/*
 * The most unread neighbours a range of the walk takes on each side of its
 * block (index_search_blocks.c); the tests lower it to show, on a small
 * index, what it saves on a large one.
 */
extern int64_t	idx_rank_range_reach;
/*
 * How many ranges the walk reads after the page is full before it chooses
 * between more ranges and one statement over the blocks left
 * (index_search_blocks.c), and how many walks this thread finished by that
 * statement: the tests set the one to 0 or to no end to take the statement
 * or not on a small index, and read the other to see which way a walk went.
 */
extern int64_t	idx_rank_floor_reads;
extern _Thread_local uint64_t	idx_rank_rest_reads;
/*
 * Whether a search read whole takes lengths from a word's fronts
 * (idx_rank_min_lengths); the tests turn it off to compare.
 */
extern bool	idx_rank_min_len_used;
/*
 * Whether a phrase of several words is bounded by its words' fronts met
 * (rank_stair_meet) rather than by the least of their bests; the tests
 * turn it off to compare.
 */
extern bool	idx_rank_phrase_met;
/*
 * Whether a few phrases (an AND, an OR, an OR beside an AND) are bounded
 * at one length (rank_steps_sum_max) rather than each at its best; the
 * tests and the benchmarks turn it off to compare.
 */
extern bool	idx_rank_one_length;
/*
 * Whether a filtered walk that gives up hands its blocks' bounds to the
 * read of every match (idx_rank_blocks); the tests turn it off to compare.
 */
extern bool	idx_rank_whole_bounds_used;
extern _Thread_local uint64_t	idx_rank_walks;

/*
 * The rows' lengths of the blocks a search has asked for, read from
 * rank_lengths (index_rank_lengths.c; docs/index.md, "Lengths kept by
 * block").  One a search, on its connection: idx_rank_lengths_init()
 * before, idx_rank_lengths_release() after.
 */
struct idx_rank_lengths {
	struct mb_index		 *idx;		/* borrowed */
	struct rank_block_lengths **block;	/* owned: per block, NULL until asked */
	int64_t			  n_block;
	bool			  off;		/* no such table: ask FTS5 for all */
};

void	idx_rank_lengths_init(struct idx_rank_lengths *l, struct mb_index *idx);
void	idx_rank_lengths_release(struct idx_rank_lengths *l);
/*
 * Row id's length in tokens into *n_tok, from its block's lengths when they
 * are kept (no insert or text change in the block since); false when they
 * are not, and the caller asks FTS5.
 */
bool	idx_rank_lengths_get(struct idx_rank_lengths *l, int64_t id, int *n_tok);
/*
 * Whether a search takes lengths from rank_lengths (the tests clear it to
 * compare), and how many it took on this thread.
 */
extern bool			idx_rank_lengths_used;
extern _Thread_local uint64_t	idx_rank_lengths_served;

#endif
