/*
 * The block bounds' shared parts (rank-private.h): a term's Pareto front
 * in a block, its encoding in rank_bounds.bounds, its value, and
 * mb_rank_tf(), the FTS5 function syncd's builder reads rows with.
 *
 * A bounds blob is a run of blocks, each: one byte, the block's number in
 * its chunk; a varint n; n points, each two varints f and d.  Varints are
 * LEB128 (seven bits a byte, low first), at most five bytes.
 */
#include <math.h>
#include <string.h>

#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"

void
rank_front_add(struct rank_front *fr, uint32_t f, uint32_t d)
{
	int n = 0, best = 0;

	for (int i = 0; i < fr->n; i++)
		if (fr->p[i].f >= f && fr->p[i].d <= d)
			return;		/* a point already covers it */
	for (int i = 0; i < fr->n; i++)
		if (!(f >= fr->p[i].f && d <= fr->p[i].d))
			fr->p[n++] = fr->p[i];	/* not covered by the new one */
	fr->n = n;
	if (fr->n == RANK_FRONT_MAX) {
		/*
		 * Full: replace two neighbours (in f's order, which on a front
		 * is d's) by one covering both, (the larger f, the smaller d),
		 * where their lengths are closest, which loosens least.
		 */
		for (int i = 1; i < fr->n; i++)
			for (int j = i; j > 0 && fr->p[j].f < fr->p[j - 1].f; j--) {
				uint32_t tf = fr->p[j].f, td = fr->p[j].d;

				fr->p[j] = fr->p[j - 1];
				fr->p[j - 1].f = tf;
				fr->p[j - 1].d = td;
			}
		for (int i = 1; i + 1 < fr->n; i++)
			if (fr->p[i + 1].d - fr->p[i].d < fr->p[best + 1].d - fr->p[best].d)
				best = i;
		fr->p[best].f = fr->p[best + 1].f;
		memmove(&fr->p[best + 1], &fr->p[best + 2],
		    (size_t)(fr->n - best - 2) * sizeof(fr->p[0]));
		fr->n--;
	}
	fr->p[fr->n].f = f;
	fr->p[fr->n].d = d;
	fr->n++;
}

/* BM25's term, IDF aside, of a row of f weighted hits and length d. */
static double
bm25_term(double f, double d, double avgdl)
{
	const double k1 = 1.2, b = 0.75;	/* as rank_score() in fts_rank.c */

	return (f * (k1 + 1.0)) / (f + k1 * (1 - b + b * d / avgdl));
}

/* Which of p[0..n-1] has the best term (-1: none), that term into *best_r (0: none). */
static int
points_best(const struct rank_point *p, int n, double avgdl, double *best_r)
{
	int at = -1;

	*best_r = 0.0;
	for (int i = 0; i < n; i++) {
		double t = bm25_term(p[i].f, p[i].d, avgdl);

		if (t > *best_r) {
			*best_r = t;
			at = i;
		}
	}
	return at;
}

double
rank_points_max(const struct rank_point *p, int n, double avgdl)
{
	double best;

	points_best(p, n, avgdl, &best);
	return best;
}

double
rank_front_max(const struct rank_front *fr, double avgdl)
{
	return rank_points_max(fr->p, fr->n, avgdl);
}

/* The most f of p[0..n-1] (in any order) of length d at most: what a row of length d can have (0: none). */
static uint32_t
points_at(const struct rank_point *p, int n, uint32_t d)
{
	uint32_t f = 0;

	for (int i = 0; i < n; i++)
		if (p[i].d <= d && p[i].f > f)
			f = p[i].f;
	return f;
}

static uint32_t
front_at(const struct rank_front *fr, uint32_t d)
{
	return points_at(fr->p, fr->n, d);
}

void
rank_front_sum(struct rank_front *sum, const struct rank_front *fr)
{
	struct rank_front out = { 0 };

	/* a row of length d has at most sum's f there plus fr's: at each point's d */
	for (int k = 0; k < 2; k++) {
		const struct rank_front *from = k == 0 ? sum : fr;

		for (int i = 0; i < from->n; i++) {
			uint32_t d = from->p[i].d;
			uint64_t f = (uint64_t)front_at(sum, d) + front_at(fr, d);

			rank_front_add(&out, f > UINT32_MAX ? UINT32_MAX : (uint32_t)f, d);
		}
	}
	*sum = out;
}

/* Sort p[0..n-1] by length, shortest first (insertion: a block's steps are few). */
static void
points_by_length(struct rank_point *p, int n)
{
	for (int i = 1; i < n; i++) {
		struct rank_point x = p[i];
		int j = i;

		for (; j > 0 && p[j - 1].d > x.d; j--)
			p[j] = p[j - 1];
		p[j] = x;
	}
}

/*
 * p[0..n-1] in place as steps: by length, each with more hits than every
 * shorter point (the others add nothing to points_at()).  How many are left.
 * Insertion: a front has at most a few dozen points, and steps already
 * sorted cost one pass.
 */
static int
points_steps(struct rank_point *p, int n)
{
	int k = 0;

	points_by_length(p, n);
	for (int i = 0; i < n; i++)
		if (k == 0 || p[i].f > p[k - 1].f)
			p[k++] = p[i];
	return k;
}

/*
 * Steps a[0..na-1] and b[0..nb-1] met into out (room for cap): at each
 * length where either steps, the smaller of the two there, kept when above
 * the step before.  Past cap the last step rises instead (looser, still a
 * bound).  How many.
 */
static int
steps_meet(const struct rank_point *a, int na, const struct rank_point *b, int nb,
    struct rank_point *out, int cap)
{
	int n = 0, i = 0, j = 0;
	uint32_t fa = 0, fb = 0;	/* a's and b's most at the length reached */

	while (i < na || j < nb) {
		uint32_t len = j >= nb || (i < na && a[i].d <= b[j].d) ? a[i].d : b[j].d;
		uint32_t low;

		for (; i < na && a[i].d <= len; i++)
			fa = a[i].f;
		for (; j < nb && b[j].d <= len; j++)
			fb = b[j].f;
		low = fa < fb ? fa : fb;
		if (low <= (n > 0 ? out[n - 1].f : 0))
			continue;	/* not above the step before: adds nothing */
		if (n == cap)
			out[n - 1].f = low;
		else
			out[n++] = (struct rank_point){ low, len };
	}
	return n;
}

void
rank_stair_meet(struct rank_stair *s, const struct rank_front *fr, bool first)
{
	struct rank_point st[RANK_FRONT_MAX], out[RANK_STAIR_MAX];
	int m;

	if (first || fr->n == 0) {	/* kept as they come: sorted when met */
		memcpy(s->p, fr->p, (size_t)fr->n * sizeof(fr->p[0]));
		s->n = fr->n;
		return;
	}
	if (s->n == 0)
		return;		/* no row holds the words met so far */
	memcpy(st, fr->p, (size_t)fr->n * sizeof(fr->p[0]));
	m = points_steps(st, fr->n);
	s->n = points_steps(s->p, s->n);
	s->n = steps_meet(s->p, s->n, st, m, out, RANK_STAIR_MAX);
	memcpy(s->p, out, (size_t)s->n * sizeof(out[0]));
}

double
rank_stair_meet_max(const struct rank_stair *s, const struct rank_front *fr, double avgdl)
{
	struct rank_point a[RANK_STAIR_MAX], b[RANK_FRONT_MAX], out[RANK_STAIR_MAX + RANK_FRONT_MAX];
	double best_s, best_fr, best;
	int at_s = points_best(s->p, s->n, avgdl, &best_s);
	int at_fr = points_best(fr->p, fr->n, avgdl, &best_fr);
	int na, nb;

	if (at_s < 0 || at_fr < 0)
		return 0.0;	/* no row holds both */
	/*
	 * The meet is below both; where the other holds at least as much at
	 * the length of one's best, it keeps that best: the usual case, which
	 * costs no sort and no walk of the steps.
	 */
	if (best_s <= best_fr && front_at(fr, s->p[at_s].d) >= s->p[at_s].f)
		return best_s;
	if (best_fr <= best_s && points_at(s->p, s->n, fr->p[at_fr].d) >= fr->p[at_fr].f)
		return best_fr;
	memcpy(a, s->p, (size_t)s->n * sizeof(a[0]));
	memcpy(b, fr->p, (size_t)fr->n * sizeof(b[0]));
	na = points_steps(a, s->n);
	nb = points_steps(b, fr->n);
	/* every step kept: at most one a point of either */
	points_best(out, steps_meet(a, na, b, nb, out, RANK_STAIR_MAX + RANK_FRONT_MAX), avgdl,
	    &best);
	return best;
}

double
rank_steps_sum_max(const struct rank_point *const *p, const int *n, const double *idf,
    const int *group, int k, double avgdl)
{
	struct rank_point s[RANK_STEPS_SUM_MAX][RANK_STAIR_MAX];
	uint32_t most[RANK_STEPS_SUM_MAX] = { 0 }, f[RANK_STEPS_SUM_MAX] = { 0 };
	int at[RANK_STEPS_SUM_MAX] = { 0 };
	unsigned groups = 0, somewhere = 0;	/* a bit a group: every one, and those held */
	double unbounded = 0.0, best = 0.0;

	for (int i = 0; i < k; i++) {
		groups |= 1u << group[i];
		if (n[i] < 0) {
			unbounded += idf[i] * RANK_K1_PLUS_1;
			continue;
		}
		memcpy(s[i], p[i], (size_t)n[i] * sizeof(s[i][0]));
		points_by_length(s[i], n[i]);
		for (int j = 0; j < n[i]; j++)
			most[i] = s[i][j].f > most[i] ? s[i][j].f : most[i];
	}
	for (int i = 0; i < k; i++)
		if (n[i] != 0)
			somewhere |= 1u << group[i];
	if (somewhere != groups)
		return 0.0;	/* no row of the block holds any phrase of some group */
	/*
	 * A row of length d holds of each phrase at most its most f at d or
	 * less, reached at the longest of the points giving those: one of
	 * the points' lengths, no longer than d, where each term is no lower;
	 * and at that length some phrase of each group has a point.  So the
	 * lengths are taken shortest first, each phrase's most f so far beside
	 * it; once even every phrase's most f at all cannot beat the best sum,
	 * no longer length can (a term falls with the length).
	 */
	for (;;) {
		uint32_t d = UINT32_MAX;
		double sum = unbounded, most_sum = unbounded;
		unsigned held = 0;

		for (int i = 0; i < k; i++)
			if (n[i] > 0 && at[i] < n[i] && s[i][at[i]].d < d)
				d = s[i][at[i]].d;
		if (d == UINT32_MAX)
			break;		/* every point taken */
		for (int i = 0; i < k; i++) {
			if (n[i] < 0) {
				held |= 1u << group[i];
				continue;
			}
			for (; at[i] < n[i] && s[i][at[i]].d <= d; at[i]++)
				f[i] = s[i][at[i]].f > f[i] ? s[i][at[i]].f : f[i];
			if (f[i] > 0)
				held |= 1u << group[i];
			most_sum += idf[i] * bm25_term(most[i], d, avgdl);
		}
		if (!(most_sum > best))
			break;
		if (held != groups)
			continue;	/* no row this short holds a phrase of every group */
		for (int i = 0; i < k; i++)
			if (n[i] > 0)
				sum += idf[i] * bm25_term(f[i], d, avgdl);
		best = sum > best ? sum : best;
	}
	/* no phrase with points: any length, each phrase at its most */
	return best > unbounded ? best : unbounded;
}

static int
put_varint(struct mb_buf *out, uint32_t v)
{
	char b[5];
	size_t n = 0;

	do {
		b[n] = (char)(v & 0x7f);
		v >>= 7;
		if (v != 0)
			b[n] = (char)(b[n] | 0x80);
		n++;
	} while (v != 0);
	return mb_buf_add(out, b, n);
}

static bool
get_varint(const uint8_t **p, const uint8_t *end, uint32_t *v_r)
{
	uint32_t v = 0;

	for (int shift = 0; shift < 35 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;

		v |= (uint32_t)(c & 0x7f) << shift;
		if ((c & 0x80) == 0) {
			*v_r = v;
			return true;
		}
	}
	return false;
}

int
rank_front_put(struct mb_buf *out, unsigned block, const struct rank_front *fr)
{
	if (mb_buf_addc(out, (char)block) == -1 || put_varint(out, (uint32_t)fr->n) == -1)
		return -1;
	for (int i = 0; i < fr->n; i++)
		if (put_varint(out, fr->p[i].f) == -1 || put_varint(out, fr->p[i].d) == -1)
			return -1;
	return 0;
}

bool
rank_front_next(const uint8_t **p, const uint8_t *end, unsigned *block_r,
    struct rank_front *fr)
{
	uint32_t n;

	if (*p >= end)
		return false;
	*block_r = *(*p)++;
	if (*block_r >= RANK_CHUNK_BLOCKS || !get_varint(p, end, &n) || n > RANK_FRONT_MAX)
		goto bad;
	fr->n = (int)n;
	for (int i = 0; i < fr->n; i++)
		if (!get_varint(p, end, &fr->p[i].f) || !get_varint(p, end, &fr->p[i].d))
			goto bad;
	return true;
bad:
	*p = end;
	return false;
}

/* mb_rank_tf(messages_fts, w0, w1, ...): column col's weight is val[col].  The
 * length is not asked here: a docsize lookup per term and row cost a third
 * of the builder's time, so it reads each row's length once (rank_lengths). */
static void
mb_rank_tf(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	double f = 0.0;
	int rc, n_inst = 0;

	rc = api->xInstCount(fts, &n_inst);
	for (int i = 0; rc == SQLITE_OK && i < n_inst; i++) {
		int phrase, col, off;

		rc = api->xInst(fts, i, &phrase, &col, &off);
		if (rc == SQLITE_OK)
			f += n_val > col ? sqlite3_value_double(val[col]) : 1.0;
	}
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_int64(ctx, (sqlite3_int64)ceil(f));
}

int
mb_fts_bounds_register(sqlite3 *db, struct mb_err *err)
{
	fts5_api *api = mb_fts5_api(db);
	int rc;

	if (api == NULL || api->iVersion < 2)
		return mb_err_set(err, MB_E_INTERNAL, "index: this SQLite has no FTS5");
	rc = api->xCreateFunction(api, "mb_rank_tf", NULL, mb_rank_tf, NULL);
	if (rc != SQLITE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "index: registering mb_rank_tf: %s",
		    sqlite3_errstr(rc));
	return 0;
}
