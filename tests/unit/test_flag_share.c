/*
 * How a tick shares SYNC_FLAG_BUDGET among the folders of a server without
 * CONDSTORE (syncd/reconcile.c sd_flag_share; docs/syncd.md "Flags and
 * expunges"), as the scheduler calls it: folder by folder, each given its
 * share of what the folders before it left.  What an operator would check:
 * small folders are compared whole every tick, a large one is not starved
 * by where it stands in the order, the budget is never exceeded and never
 * left unused while some folder still wants more.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "syncd.h"

#define MAX_FOLDERS	8

/* Run a tick's sharing over demand[0..n) in that order; shares into got[]. */
static uint64_t
tick(uint64_t budget, const uint64_t *demand, size_t n, uint64_t *got)
{
	uint64_t used = 0;

	for (size_t o = 0; o < n; o++) {
		got[o] = sd_flag_share(budget - used, demand + o, n - o);
		used += got[o];
	}
	return used;
}

struct share_case {
	const char	*what;
	uint64_t	 budget;
	size_t		 n;
	uint64_t	 demand[MAX_FOLDERS];
	uint64_t	 want[MAX_FOLDERS];
};

static const struct share_case cases[] = {
	{ "one folder within the budget is asked whole", 50000, 1, { 10000 }, { 10000 } },
	{ "one folder beyond it gets the whole budget", 50000, 1, { 100000 }, { 50000 } },
	{ "a big INBOX first does not take the small folders' part", 50000, 4,
	    { 90000, 1000, 1000, 1000 }, { 47000, 1000, 1000, 1000 } },
	{ "a big INBOX last gets what the small ones leave", 50000, 4,
	    { 1000, 1000, 1000, 90000 }, { 1000, 1000, 1000, 47000 } },
	{ "two large folders share equally", 50000, 3, { 80000, 500, 60000 },
	    { 24750, 500, 24750 } },
	{ "folders with CONDSTORE (no demand) leave it all", 12, 3, { 0, 27, 0 }, { 0, 12, 0 } },
	{ "a budget of 0 asks nothing", 0, 2, { 5, 5 }, { 0, 0 } },
	{ "the test's INBOX and Archive", 12, 2, { 27, 1 }, { 11, 1 } },
};

static void
share_is_max_min_fair(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct share_case *k = &cases[c];
		uint64_t got[MAX_FOLDERS] = { 0 }, want_total = 0, used;

		used = tick(k->budget, k->demand, k->n, got);
		for (size_t i = 0; i < k->n; i++) {
			if (got[i] != k->want[i])
				fail_msg("%s: folder %zu got %llu, want %llu", k->what, i,
				    (unsigned long long)got[i], (unsigned long long)k->want[i]);
			want_total += k->demand[i];
		}
		assert_true(used <= k->budget);
		/* Unused budget only when every folder had all it wanted. */
		if (used < k->budget)
			assert_int_equal(used, want_total);
	}
}

static void
odd_budget_is_spent_exactly(void **state)
{
	/* Shares rounded up for the first folders must not overrun the last. */
	uint64_t demand[] = { 1000, 1000, 1000 }, got[3];

	(void)state;
	assert_int_equal(tick(1000, demand, 3, got), 1000);
	assert_int_equal(got[0], 334);
	assert_int_equal(got[1], 333);
	assert_int_equal(got[2], 333);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(share_is_max_min_fair),
		cmocka_unit_test(odd_budget_is_spent_exactly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
