/*
 * The block walk's bookkeeping (rank_order.c): the order blocks are read in
 * must be a comparison sort's (bound ascending, the higher block first
 * among equal bounds, -0.0 equal to 0.0), and the runs of blocks that can
 * still reach the page, kept as blocks are read and the floor rises, must
 * be what a scan of every block finds, at every step.  The pages themselves
 * are checked against bm25() in test_rank_bounds.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../libmailbox/core/rank-private.h"
#include "support_rand.h"

/* Deterministic: a failure can be run again. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t
rng(void)
{
	return mb_test_rand(&rng_state);
}

/*
 * Bounds as the walk has them: negated scores, many equal (copies of a
 * message, a front point shared by blocks), 0.0 and -0.0 for blocks
 * without a match, and a spread of magnitudes.
 */
static void
random_bounds(double *bound, int64_t n)
{
	static const double values[] = { -0.0, 0.0, -1e-300, -0.5, -3.6154, -3.6154, -3.7928,
	    -12.25, -1e10 };

	for (int64_t i = 0; i < n; i++)
		bound[i] = rng() % 3 == 0 ? values[rng() % (sizeof(values) / sizeof(values[0]))] :
		    -(double)(rng() % 100000) / 997.0;
}

static const double *ref_bound;

static int
ref_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	if (ref_bound[a] != ref_bound[b])
		return ref_bound[a] < ref_bound[b] ? -1 : 1;
	return a > b ? -1 : a < b;
}

static void
order_is_a_comparison_sort(void **state)
{
	static const int64_t sizes[] = { 0, 1, 2, 7, 128, 1000, 7813 };

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int64_t n = sizes[s];
		double *bound = calloc((size_t)n + 1, sizeof(*bound));
		int64_t *got = calloc((size_t)n + 1, sizeof(*got));
		int64_t *want = calloc((size_t)n + 1, sizeof(*want));

		for (int round = 0; round < 5; round++) {
			random_bounds(bound, n);
			for (int64_t i = 0; i < n; i++)
				want[i] = i;
			ref_bound = bound;
			qsort(want, (size_t)n, sizeof(*want), ref_cmp);
			rank_order_sort(bound, n, got);
			for (int64_t i = 0; i < n; i++)
				assert_int_equal(got[i], want[i]);
		}
		free(bound);
		free(got);
		free(want);
	}
}

/* The runs as a scan of every block finds them. */
static void
scan(const double *bound, const bool *read, int64_t n, double floor, int64_t *runs_r,
    int64_t *count_r, int64_t *first_r, int64_t *last_r)
{
	bool in = false;

	*runs_r = *count_r = 0;
	*first_r = *last_r = -1;
	for (int64_t b = 0; b < n; b++) {
		bool can = !read[b] && bound[b] < 0.0 && bound[b] <= floor;

		if (can && !in)
			(*runs_r)++;
		if (can) {
			(*count_r)++;
			*first_r = *first_r < 0 ? b : *first_r;
			*last_r = b;
		}
		in = can;
	}
}

static void
check(struct rank_runs *r, const double *bound, const bool *read, int64_t n, double floor)
{
	int64_t runs, count, first, last, got_first, got_last;

	scan(bound, read, n, floor, &runs, &count, &first, &last);
	rank_runs_ends(r, &got_first, &got_last);
	assert_int_equal(r->runs, runs);
	assert_int_equal(r->count, count);
	assert_int_equal(got_first, first);
	assert_int_equal(got_last, last);
}

static void
runs_follow_reads_and_the_floor(void **state)
{
	static const int64_t sizes[] = { 1, 3, 40, 782, 7813 };

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int64_t n = sizes[s];
		double *bound = calloc((size_t)n, sizeof(*bound));
		int64_t *order = calloc((size_t)n, sizeof(*order));
		bool *read = calloc((size_t)n, sizeof(*read));

		for (int round = 0; round < 4; round++) {
			struct rank_runs r;
			int64_t k = 0;
			double floor;

			random_bounds(bound, n);
			rank_order_sort(bound, n, order);
			for (int64_t b = 0; b < n; b++)
				read[b] = false;
			/* the walk's first reads, best first, before the page was full */
			for (; k < n / 10; k++)
				read[order[k]] = true;
			floor = bound[order[n - 1 - (int64_t)(rng() % (uint32_t)n) / 2]];
			rank_runs_start(&r, bound, order, n, read, floor);
			check(&r, bound, read, n, floor);
			while (k < n && r.count > 0) {
				int64_t lo = order[k++], hi = lo;

				if (read[lo])
					continue;
				/* a range: the block and some neighbours that can reach the floor */
				while (lo > 0 && !read[lo - 1] && rng() % 2)
					lo--;
				while (hi + 1 < n && !read[hi + 1] && rng() % 2)
					hi++;
				for (int64_t i = lo; i <= hi; i++) {
					read[i] = true;
					rank_runs_remove(&r, i);
				}
				if (rng() % 3 == 0) {	/* the floor rises: a lower negated score */
					floor -= (double)(rng() % 1000) / 997.0;
					rank_runs_floor(&r, bound, order, floor);
				}
				check(&r, bound, read, n, floor);
			}
			rank_runs_release(&r);
		}
		free(bound);
		free(order);
		free(read);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(order_is_a_comparison_sort),
		cmocka_unit_test(runs_follow_reads_and_the_floor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
