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
#include <stdlib.h>

#include "search-private.h"

static void
swap_rows(struct idx_ranked *a, struct idx_ranked *b)
{
	struct idx_ranked t = *a;

	*a = *b;
	*b = t;
}

/* The median of three scores: a pivot that sorted or reversed rows cannot fool. */
static double
median3(double a, double b, double c)
{
	if (a < b)
		return b < c ? b : (a < c ? c : a);
	return a < c ? a : (b < c ? c : b);
}

static int
score_cmp(const void *pa, const void *pb)
{
	double a = ((const struct idx_ranked *)pa)->score, b = ((const struct idx_ranked *)pb)->score;

	return a < b ? -1 : a > b;
}

double
idx_rank_select(struct idx_ranked *rows, size_t n, size_t k)
{
	size_t lo = 0, hi = n;	/* rows[k] lies in [lo, hi) */
	int passes = 16;	/* then sort what is left: no input makes this quadratic */

	for (size_t m = n; m > 1; m /= 2)
		passes += 2;
	while (hi - lo > 1) {
		double pivot = median3(rows[lo].score, rows[lo + (hi - lo) / 2].score,
		    rows[hi - 1].score);
		size_t lt = lo, i = lo, gt = hi;

		if (passes-- == 0) {
			qsort(rows + lo, hi - lo, sizeof(*rows), score_cmp);
			break;
		}
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
