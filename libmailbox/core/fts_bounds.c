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

double
rank_front_max(const struct rank_front *fr, double avgdl)
{
	const double k1 = 1.2, b = 0.75;	/* as rank_score() in fts_rank.c */
	double best = 0.0;

	for (int i = 0; i < fr->n; i++) {
		double f = fr->p[i].f;
		double t = (f * (k1 + 1.0)) / (f + k1 * (1 - b + b * fr->p[i].d / avgdl));

		best = t > best ? t : best;
	}
	return best;
}

/* The most f of fr's points of length d at most: what a row of length d can have (0: none). */
static uint32_t
front_at(const struct rank_front *fr, uint32_t d)
{
	uint32_t f = 0;

	for (int i = 0; i < fr->n; i++)
		if (fr->p[i].d <= d && fr->p[i].f > f)
			f = fr->p[i].f;
	return f;
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
