/*
 * The cut of the rows a ranked search keeps (idx_rank_trim(),
 * index_search.c): the keep-th best score found by selection, not by
 * sorting every row kept.  The walk cuts after every range it reads, and on
 * a deep page (offset 2,000: about 2,000 rows kept) a qsort() of all of
 * them each time was 43% of `spam*`'s CPU once the walk read many ranges
 * (docs/benchmarks.md, "The choice of one statement made later; a
 * deep page's rows cut by selection").  The page is sorted once, at the
 * end.
 */
#include <stddef.h>
#include <stdint.h>

#include "search-private.h"

static void
swap_rows(struct idx_ranked *a, struct idx_ranked *b)
{
	struct idx_ranked t = *a;

	*a = *b;
	*b = t;
}

double
idx_rank_select(struct idx_ranked *rows, size_t n, size_t k)
{
	size_t lo = 0, hi = n;	/* rows[k] lies in [lo, hi) */
	/*
	 * The pivot is drawn by xorshift from a fixed seed (the same rows are
	 * cut the same way): sorted, reversed or median-of-three-killing
	 * orders cost no more than any other; only an order built against this
	 * seed could make the selection quadratic, and the rows come in the
	 * order of their ids.
	 */
	uint64_t draw = 0x9e3779b97f4a7c15u;

	while (hi - lo > 1) {
		double pivot;
		size_t lt = lo, i = lo, gt = hi;

		draw ^= draw << 13;
		draw ^= draw >> 7;
		draw ^= draw << 17;
		pivot = rows[lo + (size_t)(draw % (hi - lo))].score;
		/*
		 * Three ways (better, equal, worse), so that a run of equal
		 * scores (copies of one message) ends the selection instead of
		 * costing a pass each.
		 */
		while (i < gt) {
			if (rows[i].score < pivot)
				swap_rows(&rows[lt++], &rows[i++]);
			else if (rows[i].score > pivot)
				swap_rows(&rows[i], &rows[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			break;	/* rows[k] has the pivot's score */
	}
	return rows[k].score;
}
