/*
 * The cut of a ranked search's rows (idx_rank_trim, index_search.c) by
 * selection (idx_rank_select, rank_select.c): it must keep exactly the rows
 * a sort and cut keeps (the keep best, and every row tied with the last of
 * them), raise the floor to that row's score, and leave the next cut where
 * it was; on random rows with many ties and on the orders that make a
 * selection slow (sorted, reversed, all equal, organ pipes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../libmailbox/core/search-private.h"
#include "support_rand.h"

/* Deterministic: a failure can be run again. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t
rng(void)
{
	return mb_test_rand(&rng_state);
}

static int
by_score(const void *pa, const void *pb)
{
	const struct idx_ranked *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int
by_id(const void *pa, const void *pb)
{
	int64_t a = ((const struct idx_ranked *)pa)->id, b = ((const struct idx_ranked *)pb)->id;

	return a < b ? -1 : a > b;
}

/*
 * What the cut keeps, by sorting: the first keep of rows in score order
 * and the rows tied with the last of them, into out (n of them); the
 * keep-th score in *last.
 */
static size_t
sort_and_cut(const struct idx_ranked *rows, size_t n, size_t keep, struct idx_ranked *out,
    double *last)
{
	size_t m = keep;

	memcpy(out, rows, n * sizeof(*rows));
	qsort(out, n, sizeof(*out), by_score);
	if (n <= keep) {
		*last = 0;
		return n;
	}
	*last = out[keep - 1].score;
	while (m < n && out[m].score == *last)
		m++;
	return m;
}

/* Cut a set of these rows and compare it with sort_and_cut(). */
static void
check_cut(const struct idx_ranked *rows, size_t n, size_t keep, const char *what)
{
	struct idx_ranked *want = calloc(n + 1, sizeof(*want));
	struct idx_rank_set set = { 0 };
	double last;
	size_t m = sort_and_cut(rows, n, keep, want, &last);

	set.rows = calloc(n + 1, sizeof(*set.rows));
	memcpy(set.rows, rows, n * sizeof(*rows));
	set.n = set.cap = n;
	set.keep = keep;
	idx_rank_trim(&set);
	if (set.n != m)
		fail_msg("%s: %zu rows, keep %zu: kept %zu, a sort keeps %zu", what, n, keep, set.n,
		    m);
	qsort(set.rows, set.n, sizeof(*set.rows), by_id);
	qsort(want, m, sizeof(*want), by_id);
	for (size_t i = 0; i < m; i++)
		if (set.rows[i].id != want[i].id || set.rows[i].score != want[i].score)
			fail_msg("%s: %zu rows, keep %zu: kept id %lld, a sort keeps %lld", what, n,
			    keep, (long long)set.rows[i].id, (long long)want[i].id);
	assert_int_equal(set.floor.set, n > keep);
	if (n > keep)
		assert_true(set.floor.score == last);
	assert_int_equal(set.trim_at, 2 * (m > keep ? m : keep));
	free(set.rows);
	free(want);
}

static void
a_cut_keeps_what_a_sort_keeps(void **state)
{
	(void)state;
	for (int round = 0; round < 20000; round++) {
		size_t n = 1 + rng() % 600, keep = 1 + rng() % (n + 5);
		/* few distinct scores: long ties, as copies of one message give */
		uint32_t values = round % 3 == 0 ? 1 + rng() % 4 : 1 + rng() % 100000;
		struct idx_ranked *rows = calloc(n, sizeof(*rows));

		for (size_t i = 0; i < n; i++) {
			rows[i].id = (int64_t)i + 1;
			rows[i].score = -(double)(rng() % values) / 7.0;
		}
		check_cut(rows, n, keep, "random");
		free(rows);
	}
}

static void
a_cut_of_slow_orders(void **state)
{
	const size_t n = 5000;
	struct idx_ranked *rows = calloc(n, sizeof(*rows));
	const char *names[] = { "sorted", "reversed", "equal", "organ pipe", "two values" };

	(void)state;
	for (int shape = 0; shape < 5; shape++) {
		for (size_t i = 0; i < n; i++) {
			double v = shape == 0 ? (double)i : shape == 1 ? (double)(n - i) :
			    shape == 2 ? 1.0 : shape == 3 ? (double)(i < n / 2 ? i : n - i) :
			    (double)(i % 2);

			rows[i].id = (int64_t)i + 1;
			rows[i].score = -v;
		}
		for (size_t keep = 1; keep <= n; keep = keep * 3 + 1)
			check_cut(rows, n, keep, names[shape]);
	}
	free(rows);
}

static void
select_places_the_kth_between_better_and_worse(void **state)
{
	(void)state;
	for (int round = 0; round < 5000; round++) {
		size_t n = 1 + rng() % 300, k = rng() % n;
		struct idx_ranked *rows = calloc(n, sizeof(*rows)), *sorted = calloc(n, sizeof(*rows));
		double s;

		for (size_t i = 0; i < n; i++) {
			rows[i].id = (int64_t)i;
			rows[i].score = (double)(rng() % (round % 2 ? 5 : 1000));
		}
		memcpy(sorted, rows, n * sizeof(*rows));
		qsort(sorted, n, sizeof(*sorted), by_score);
		s = idx_rank_select(rows, n, k);
		assert_true(s == sorted[k].score);
		assert_true(rows[k].score == s);
		for (size_t i = 0; i < n; i++)
			if (i < k ? rows[i].score > s : rows[i].score < s)
				fail_msg("round %d: row %zu of %zu scores %g, on the wrong side of %g",
				    round, i, n, rows[i].score, s);
		free(rows);
		free(sorted);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_cut_keeps_what_a_sort_keeps),
		cmocka_unit_test(a_cut_of_slow_orders),
		cmocka_unit_test(select_places_the_kth_between_better_and_worse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
