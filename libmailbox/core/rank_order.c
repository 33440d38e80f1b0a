/*
 * The block walk's bookkeeping (index_search_blocks.c): the blocks in the
 * order they are read, and the runs of blocks that can still reach the
 * page.  Both used to cost a search time in proportion to every block of
 * the index, again and again: qsort() of all of them (about 100,000
 * indirect comparisons at 1,000,000 messages, 7,813 blocks), and a scan of
 * all of them after every range read once the page was full.  At 1,000,000
 * messages the two were 10-24% of the CPU of `spamassassin`, `the`,
 * `"mailing list"` and `linux after:...` (docs/benchmarks.md, "The block
 * walk's bookkeeping").  Here the order is a radix sort (a few passes over
 * the blocks, no comparisons) and the runs are kept up to date as blocks
 * leave them, each block leaving once.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/util.h"

#include "rank-private.h"

#define RADIX_BITS	8
#define RADIX_BUCKETS	(1u << RADIX_BITS)

/*
 * A key whose unsigned order is the order of the doubles: flip every bit
 * of a negative one (a larger magnitude is a smaller number), set the sign
 * bit of a positive one.  -0.0 is taken as 0.0, as the comparison of
 * doubles takes it.  No bound is NaN.
 */
static uint64_t
bound_key(double x)
{
	uint64_t u;

	if (x == 0.0)
		x = 0.0;
	memcpy(&u, &x, sizeof(u));
	return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

void
rank_order_sort(const double *bound, int64_t n, int64_t *order)
{
	uint64_t *key, *key_tmp;
	int64_t *tmp;
	size_t count[RADIX_BUCKETS];

	if (n <= 0)
		return;
	key = mb_xcalloc((size_t)n, sizeof(*key));
	key_tmp = mb_xcalloc((size_t)n, sizeof(*key_tmp));
	tmp = mb_xcalloc((size_t)n, sizeof(*tmp));
	/* newest first: the passes are stable, so equal keys keep this order */
	for (int64_t i = 0; i < n; i++) {
		order[i] = n - 1 - i;
		key[i] = bound_key(bound[n - 1 - i]);
	}
	for (unsigned shift = 0; shift < 64; shift += RADIX_BITS) {
		size_t sum = 0;

		memset(count, 0, sizeof(count));
		for (int64_t i = 0; i < n; i++)
			count[(key[i] >> shift) & (RADIX_BUCKETS - 1)]++;
		if (count[(key[0] >> shift) & (RADIX_BUCKETS - 1)] == (size_t)n)
			continue;	/* every key has this digit: nothing moves */
		for (unsigned d = 0; d < RADIX_BUCKETS; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (int64_t i = 0; i < n; i++) {
			size_t at = count[(key[i] >> shift) & (RADIX_BUCKETS - 1)]++;

			key_tmp[at] = key[i];
			tmp[at] = order[i];
		}
		memcpy(key, key_tmp, (size_t)n * sizeof(*key));
		memcpy(order, tmp, (size_t)n * sizeof(*order));
	}
	free(key);
	free(key_tmp);
	free(tmp);
}

/* Whether block b is in the runs: set up and not taken out since. */
static bool
runs_has(const struct rank_runs *r, int64_t b)
{
	return b >= 0 && b < r->n && r->in[b];
}

void
rank_runs_start(struct rank_runs *r, const double *bound, const int64_t *order, int64_t n,
    const bool *read, double floor)
{
	memset(r, 0, sizeof(*r));
	r->n = n;
	r->in = mb_xcalloc(n > 0 ? (size_t)n : 1, sizeof(*r->in));
	/* the prefix of order that can reach floor: the blocks that hold a match */
	while (r->cut < n && bound[order[r->cut]] < 0.0 && bound[order[r->cut]] <= floor)
		r->cut++;
	for (int64_t i = 0; i < r->cut; i++)
		if (!read[order[i]])
			r->in[order[i]] = true;
	for (int64_t b = 0; b < n; b++) {
		if (r->in[b] && !runs_has(r, b - 1))
			r->runs++;
		r->count += r->in[b];
	}
	r->first = 0;
	r->last = n - 1;
}

void
rank_runs_remove(struct rank_runs *r, int64_t b)
{
	bool left, right;

	if (!runs_has(r, b))
		return;
	r->in[b] = false;
	r->count--;
	left = runs_has(r, b - 1);
	right = runs_has(r, b + 1);
	if (left && right)
		r->runs++;	/* one run cut in two */
	else if (!left && !right)
		r->runs--;	/* a run of this block alone */
}

void
rank_runs_floor(struct rank_runs *r, const double *bound, const int64_t *order, double floor)
{
	/* a higher floor (a lower negated score) leaves out the worst of the prefix */
	while (r->cut > 0 && bound[order[r->cut - 1]] > floor)
		rank_runs_remove(r, order[--r->cut]);
}

void
rank_runs_ends(struct rank_runs *r, int64_t *first_r, int64_t *last_r)
{
	/* blocks only leave the runs, so the ends only move inwards */
	while (r->first < r->n && !r->in[r->first])
		r->first++;
	while (r->last >= 0 && !r->in[r->last])
		r->last--;
	*first_r = r->count > 0 ? r->first : -1;
	*last_r = r->count > 0 ? r->last : -1;
}

void
rank_runs_release(struct rank_runs *r)
{
	free(r->in);
	r->in = NULL;
}
