/*
 * A phrase's bound in a block from its words' fronts met (fts_bounds.c,
 * rank_stair_meet): for blocks of random rows, each holding some of two or
 * three words and of their phrase (never more hits of the phrase than of
 * any word), the met steps must cover every row that holds the phrase
 * (at its length, at least its hits), so the bound is never below a row's
 * term; and the bound is never above the least of the words' own bests,
 * the bound before.  The last word's meet read without being kept
 * (rank_stair_meet_max, as the walk reads it) gives the same bound.
 * Fronts are built as syncd's builder builds them (rank_front_add, which
 * merges points past RANK_FRONT_MAX).  Words summed at one length
 * (rank_steps_sum_max) bound every row holding one of each group of them
 * the same way.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../libmailbox/core/rank-private.h"
#include "support_rand.h"

#define AVGDL	180.0

/* Deterministic: a failure can be run again. */
static uint64_t rng_state = 0x2545f4914f6cdd1du;

static uint32_t
rng(void)
{
	return mb_test_rand(&rng_state);
}

struct row {
	uint32_t	f[4];	/* each word's weighted hits (0: not in the row) */
	uint32_t	phrase;	/* the phrase's, at most the least of f[] */
	uint32_t	d;
};

/* BM25's term without IDF, as rank_front_max() computes it. */
static double
term(uint32_t f, uint32_t d)
{
	return f * 2.2 / (f + 1.2 * (0.25 + 0.75 * d / AVGDL));
}

/* The most f the steps of s allow a row of length d. */
static uint32_t
stair_at(const struct rank_stair *s, uint32_t d)
{
	uint32_t f = 0;

	for (int i = 0; i < s->n; i++)
		if (s->p[i].d <= d && s->p[i].f > f)
			f = s->p[i].f;
	return f;
}

static void
random_rows(struct row *rows, int n, int words)
{
	/* lengths from few distinct values to many: the fronts fill and merge */
	uint32_t spread = 1 + rng() % 3000;

	for (int i = 0; i < n; i++) {
		uint32_t least = UINT32_MAX;

		for (int w = 0; w < 3; w++) {
			rows[i].f[w] = w < words && rng() % 3 != 0 ? 1 + rng() % (rng() % 2 ? 4 : 40) : 0;
			least = rows[i].f[w] < least ? rows[i].f[w] : least;
		}
		for (int w = words; w < 3; w++)
			rows[i].f[w] = 0;
		if (words < 3)
			least = rows[i].f[0] < rows[i].f[1] ? rows[i].f[0] : rows[i].f[1];
		rows[i].phrase = least > 0 && rng() % 2 ? 1 + rng() % least : 0;
		rows[i].d = 3 + rng() % spread;
	}
}

static void
met_steps_bound_every_phrase_row(void **state)
{
	struct row rows[128];

	(void)state;
	for (int round = 0; round < 20000; round++) {
		int n = 1 + (int)(rng() % 128), words = 2 + (int)(rng() % 2);
		struct rank_front fr[3] = { 0 };
		struct rank_stair met = { 0 };
		double apart = 1e9, bound, direct = 0.0;

		random_rows(rows, n, words);
		for (int w = 0; w < words; w++) {
			for (int i = 0; i < n; i++)
				if (rows[i].f[w] > 0)
					rank_front_add(&fr[w], rows[i].f[w], rows[i].d);
			if (w == words - 1)	/* the last word, as the walk meets it */
				direct = rank_stair_meet_max(&met, &fr[w], AVGDL);
			rank_stair_meet(&met, &fr[w], w == 0);
			apart = rank_front_max(&fr[w], AVGDL) < apart ?
			    rank_front_max(&fr[w], AVGDL) : apart;
		}
		assert_true(met.n <= RANK_STAIR_MAX);
		for (int i = 1; i < met.n; i++) {	/* steps: longer, and more f */
			assert_true(met.p[i].d >= met.p[i - 1].d);
			assert_true(met.p[i].f > met.p[i - 1].f);
		}
		bound = rank_points_max(met.p, met.n, AVGDL);
		assert_true(bound <= apart);
		/* the same steps' best, unless a full stair rose */
		assert_true(direct <= bound);
		assert_true(met.n == RANK_STAIR_MAX || direct == bound);
		for (int i = 0; i < n; i++) {
			if (rows[i].phrase == 0)
				continue;
			if (stair_at(&met, rows[i].d) < rows[i].phrase)
				fail_msg("round %d: a row of length %u with %u of the phrase, "
				    "the steps allow %u", round, rows[i].d, rows[i].phrase,
				    stair_at(&met, rows[i].d));
			assert_true(term(rows[i].phrase, rows[i].d) <= direct * (1 + 1e-12));
		}
	}
}

/*
 * Met is tighter where the words are strong apart: one word often in short
 * rows, the other only in long ones; a phrase row is long, so it can hold
 * no more of the phrase than the short word's hits at that length.
 */
static void
words_strong_apart_meet_below_either(void **state)
{
	struct rank_front click = { 0 }, here = { 0 };
	struct rank_stair met = { 0 };

	(void)state;
	rank_front_add(&click, 3, 9);		/* click click click, a short row */
	rank_front_add(&click, 1, 108);		/* once in a long row */
	rank_front_add(&here, 13, 108);		/* here thirteen times, a long row */
	rank_stair_meet(&met, &click, true);
	rank_stair_meet(&met, &here, false);
	assert_int_equal(met.n, 1);
	assert_int_equal(met.p[0].f, 3);
	assert_int_equal(met.p[0].d, 108);
	assert_true(rank_points_max(met.p, met.n, AVGDL) < rank_front_max(&click, AVGDL));
	assert_true(rank_points_max(met.p, met.n, AVGDL) < rank_front_max(&here, AVGDL));
	met = (struct rank_stair){ 0 };
	rank_stair_meet(&met, &click, true);
	assert_true(rank_stair_meet_max(&met, &here, AVGDL) == term(3, 108));
	met = (struct rank_stair){ 0 };
	rank_stair_meet(&met, &click, true);
	rank_stair_meet(&met, &here, false);
	/* a word not in the block: the phrase is not either */
	rank_stair_meet(&met, &(struct rank_front){ 0 }, false);
	assert_int_equal(met.n, 0);
	assert_true(rank_points_max(met.p, met.n, AVGDL) == 0.0);
}

/*
 * Steps that alternate (a third word meeting two already met) can outnumber
 * what a stair keeps: then a step rises instead, which loosens the bound and
 * never loses a row.
 */
static void
a_full_stair_rises_and_still_bounds(void **state)
{
	struct rank_stair met = { 0 }, before;
	struct rank_front fr = { 0 };

	(void)state;
	for (uint32_t i = 0; i < RANK_STAIR_MAX; i++) {	/* 1, 3, 5, ... at 10, 20, 30, ... */
		met.p[i].f = 2 * i + 1;
		met.p[i].d = 10 * (i + 1);
	}
	met.n = RANK_STAIR_MAX;
	/* 2, 4, 6, ... at 15, 25, 35, ..., then more than met's: met's steps after it count */
	for (uint32_t i = 0; i < RANK_FRONT_MAX; i++)
		rank_front_add(&fr, i + 1 < RANK_FRONT_MAX ? 2 * i + 2 : 1000, 10 * (i + 1) + 5);
	assert_int_equal(fr.n, RANK_FRONT_MAX);
	before = met;
	rank_stair_meet(&met, &fr, false);
	assert_int_equal(met.n, RANK_STAIR_MAX);
	for (uint32_t d = 0; d < 500; d++) {
		uint32_t a = stair_at(&before, d), b = 0;

		for (int i = 0; i < fr.n; i++)
			if (fr.p[i].d <= d && fr.p[i].f > b)
				b = fr.p[i].f;
		if (stair_at(&met, d) < (a < b ? a : b))
			fail_msg("length %u: the steps allow %u, the row may hold %u", d,
			    stair_at(&met, d), a < b ? a : b);
	}
}

/* Groups of k phrases: each its own (an AND), all one (an OR). */
static const int each_own[4] = { 0, 1, 2, 3 }, all_one[4] = { 0, 0, 0, 0 };

/*
 * Phrases at one length (rank_steps_sum_max): for blocks of random rows
 * holding some of two to four words, every row holding all of them scores
 * at most the AND's bound, every row holding any at most the OR's, and
 * every row holding one of each group of a random grouping (an OR beside an
 * AND) at most that grouping's (each word it holds: its IDF times its term
 * at the row's length).  The AND's is at most the grouping's, that at most
 * the OR's, the OR's at most the sum of each word's best (the bound
 * before), which all equal for one word.  A word with no steps in the block
 * (n -1) counts its most at any length; a word no row holds (n 0) leaves
 * an AND no row, an OR the others'.
 */
static void
steps_sum_bounds_every_row_of_the_groups(void **state)
{
	struct row rows[128];

	(void)state;
	for (int round = 0; round < 20000; round++) {
		int n = 1 + (int)(rng() % 128), words = 2 + (int)(rng() % 3), cnt[4], mixed[4];
		struct rank_front fr[4] = { 0 };
		const struct rank_point *p[4];
		double idf[4], apart = 0.0, all_b, any_b, mixed_b;
		int open = words > 2 && rng() % 4 == 0 ? (int)(rng() % (unsigned)words) : -1;
		int n_mixed = 1 + (int)(rng() % (unsigned)words);

		random_rows(rows, n, 3);
		for (int i = 0; i < n; i++)	/* a fourth word: the first's hits, halved */
			rows[i].f[3] = rows[i].f[0] / 2;
		for (int w = 0; w < words; w++) {
			idf[w] = rng() % 5 == 0 ? 1e-6 : 0.1 + (double)(rng() % 1000) / 100.0;
			for (int i = 0; i < n; i++)
				if (rows[i].f[w] > 0)
					rank_front_add(&fr[w], rows[i].f[w], rows[i].d);
			p[w] = fr[w].p;
			cnt[w] = w == open ? -1 : fr[w].n;
			apart += idf[w] * (w == open ? 2.2 : rank_front_max(&fr[w], AVGDL));
			mixed[w] = w < n_mixed ? w : (int)(rng() % (unsigned)n_mixed);
		}
		all_b = rank_steps_sum_max(p, cnt, idf, each_own, words, AVGDL);
		any_b = rank_steps_sum_max(p, cnt, idf, all_one, words, AVGDL);
		mixed_b = rank_steps_sum_max(p, cnt, idf, mixed, words, AVGDL);
		assert_true(all_b <= mixed_b && mixed_b <= any_b);
		assert_true(any_b <= apart * (1 + 1e-12));
		for (int i = 0; i < n; i++) {
			double score = 0.0;
			unsigned held = 0;

			for (int w = 0; w < words; w++)
				if (rows[i].f[w] > 0) {
					score += idf[w] * (w == open ? 2.2 :
					    term(rows[i].f[w], rows[i].d));
					held |= 1u << mixed[w];
				}
			if (held == 0)
				continue;
			if (held == (1u << n_mixed) - 1 && score > mixed_b * (1 + 1e-12))
				fail_msg("round %d: a row of length %u scores %.17g, the bound of "
				    "%d groups %.17g", round, rows[i].d, score, n_mixed, mixed_b);
			if (score > any_b * (1 + 1e-12))
				fail_msg("round %d: an OR's row of length %u scores %.17g, "
				    "the bound %.17g", round, rows[i].d, score, any_b);
			for (int w = 0; w < words; w++)
				if (rows[i].f[w] == 0)
					score = -1.0;	/* not the AND's */
			if (score > all_b * (1 + 1e-12))
				fail_msg("round %d: an AND's row of length %u scores %.17g, "
				    "the bound %.17g", round, rows[i].d, score, all_b);
		}
		/* one word: its own best */
		assert_true(rank_steps_sum_max(p, cnt, idf, each_own, 1, AVGDL) ==
		    (open == 0 ? idf[0] * 2.2 : idf[0] * rank_front_max(&fr[0], AVGDL)));
	}
	/* a word no row of the block holds: no row holds them all */
	{
		struct rank_front a = { 0 };
		const struct rank_point *p[2] = { a.p, a.p };
		int cnt[2] = { 0, -1 };
		double idf[2] = { 1.0, 1.0 };

		rank_front_add(&a, 3, 10);
		assert_true(rank_steps_sum_max(p, cnt, idf, each_own, 2, AVGDL) == 0.0);
		/* an OR's row may hold the other alone */
		assert_true(rank_steps_sum_max(p, cnt, idf, all_one, 2, AVGDL) == 2.2);
		cnt[1] = 1;
		assert_true(rank_steps_sum_max(p, cnt, idf, all_one, 2, AVGDL) ==
		    rank_front_max(&a, AVGDL));
		cnt[1] = -1;
		cnt[0] = -1;	/* neither has steps: each its most */
		assert_true(rank_steps_sum_max(p, cnt, idf, each_own, 2, AVGDL) == 2 * 2.2);
	}
}

/*
 * Met at one length is lower where the words are strong apart: click three
 * times in a short row, here thirteen times in a long one; a row with both
 * is long, so its click counts at the long length.
 */
static void
and_of_words_strong_apart_is_below_their_bests(void **state)
{
	struct rank_front click = { 0 }, here = { 0 };
	const struct rank_point *p[2] = { click.p, here.p };
	int cnt[2];
	double idf[2] = { 2.0, 0.5 }, met;

	(void)state;
	rank_front_add(&click, 3, 9);
	rank_front_add(&click, 1, 108);
	rank_front_add(&here, 13, 108);
	cnt[0] = click.n;
	cnt[1] = here.n;
	met = rank_steps_sum_max(p, cnt, idf, each_own, 2, AVGDL);
	assert_true(fabs(met - (2.0 * term(3, 108) + 0.5 * term(13, 108))) < 1e-12);
	assert_true(met < 2.0 * rank_front_max(&click, AVGDL) + 0.5 * rank_front_max(&here, AVGDL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(met_steps_bound_every_phrase_row),
		cmocka_unit_test(words_strong_apart_meet_below_either),
		cmocka_unit_test(a_full_stair_rises_and_still_bounds),
		cmocka_unit_test(steps_sum_bounds_every_row_of_the_groups),
		cmocka_unit_test(and_of_words_strong_apart_is_below_their_bests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
