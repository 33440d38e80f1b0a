/*
 * Words most messages hold, read from the hits syncd keeps by chunk
 * (docs/index.md, "Words most messages hold"; migration 0031).
 *
 * A search of words all of which a match must hold, read whole (the block
 * walk did not take it: its matches are few), made FTS5 step through the
 * doclist of each word for every row of the others: for `the`, `is` or
 * `of` a seek to the page that holds the row, about 3.6 us a row and word
 * at 1,000,000 messages, most of what `when is the meeting` cost.  For a
 * word in at least two fifths of the rows syncd keeps each row's weighted
 * hits, a byte an id (rank_bounds.hits).  So here the rows of the other
 * words are read, one statement per run of chunks where every such word's
 * hits are current, and each row takes those words' hits from the bytes
 * (struct idx_rank_parts's kept slots): a row with none of one is no
 * match, left before its hits are read and not counted; the others are
 * scored with the whole query's statistics, their hits in its slots, which
 * is bm25()'s score for the row, summed in the same order.  The ids no
 * current hits vouch for (the newest, not built yet; a chunk changed since)
 * are read by the whole query.  A query of kept words alone (`the of and
 * to`) runs no statement for such chunks: each row holding every word is
 * scored from the bytes at the length the builder kept for it.  Pages,
 * scores and totals are bm25()'s, bit for bit.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"
#include "search-private.h"

_Thread_local uint64_t idx_common_reads;
_Thread_local uint64_t idx_common_bytes_rows;
bool idx_common_used = true;

/* A MATCH written again here, at most (a query's own is shorter: query.c). */
#define IDX_KEPT_MATCH_MAX	65536

static const char weights_sql[] = "SELECT weights FROM rank_state";
/* whether syncd keeps a term's hits (in some chunk: hits_load() checks each) */
static const char term_sql[] =
	"SELECT 1 FROM rank_bounds WHERE term = ?1 AND hits IS NOT NULL LIMIT 1";
static const char chunks_sql[] = "SELECT chunk, blocks, gen FROM rank_chunks";
static const char hits_sql[] =
	"SELECT chunk, gen, hits FROM rank_bounds WHERE term = ?1 AND hits IS NOT NULL";
/* The rows of MATCH ?1 with ids ?2 to ?3, each scored against the floor ?9. */
static const char range_sql[] =
	"SELECT rowid, mb_bm25_top(messages_fts, ?1, ?9, " IDX_RANK_WEIGHTS ") "
	"FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3";

struct common {
	struct mb_index	*idx;
	int		 n;				/* the query's phrases */
	char		*text[IDX_RANK_PHRASES];	/* owned: each phrase's text */
	char		*token[IDX_RANK_PHRASES];	/* owned: its one token */
	int		 slot[IDX_RANK_PHRASES];	/* the phrases FTS5 reads, in order */
	int		 n_slot;
	int		 kept_slot[IDX_RANK_PHRASES];	/* the phrases read from their hits */
	uint8_t		*kept_hits[IDX_RANK_PHRASES];	/* owned: each id's, n_chunks chunks */
	struct idx_rank_many kept_many[IDX_RANK_PHRASES];	/* owned: past a byte */
	int		 n_kept;
	struct idx_rank_stats stats;			/* the whole query's */
	int64_t		 n_chunks;
	int64_t		*chunk_gen;	/* owned: each chunk's build; -1 not built whole */
	int		*chunk_words;	/* owned: the kept phrases with current hits there */
};

static void
common_release(struct common *c)
{
	for (int i = 0; i < c->n; i++) {
		free(c->text[i]);
		free(c->token[i]);
	}
	for (int k = 0; k < c->n_kept; k++) {
		free(c->kept_hits[k]);
		free(c->kept_many[k].id);
		free(c->kept_many[k].f);
	}
	free(c->chunk_gen);
	free(c->chunk_words);
}

/*
 * Whether match is phrases joined by AND and nothing else (as query.c
 * writes `what is the status`: no OR, NOT, column or prefix), their texts
 * into c->text.
 */
static bool
and_of_phrases(struct common *c, const char *match)
{
	struct mb_buf again = MB_BUF_INIT(IDX_KEPT_MATCH_MAX);
	bool same;

	if (!idx_match_phrases(match, c->text, &c->n) || c->n < 2)
		return false;
	for (int i = 0; i < c->n; i++)
		if ((i > 0 && mb_buf_adds(&again, " AND ") == -1) ||
		    mb_query_quote(&again, c->text[i], strlen(c->text[i])) == -1) {
			mb_buf_release(&again);
			return false;
		}
	same = strcmp(again.data, match) == 0;	/* data is always NUL-terminated */
	mb_buf_release(&again);
	return same;
}

static int
one_token(void *ctx, int flags, const char *tok, int n, int start, int end)
{
	char **token = ctx;

	(void)start;
	(void)end;
	if (*token != NULL || (flags & FTS5_TOKEN_COLOCATED)) {
		free(*token);
		*token = mb_xstrdup("");	/* more than one: "" matches no term */
		return SQLITE_OK;
	}
	*token = mb_xstrndup(tok, (size_t)n);
	return SQLITE_OK;
}

/* Each phrase's token, as FTS5 tokenizes a query; false unless each is one. */
static bool
phrases_one_token(struct common *c)
{
	Fts5Tokenizer *t = NULL;
	fts5_tokenizer tk;
	bool ok = mb_fts_tokenizer(c->idx->db, &tk, &t) == 0;

	for (int i = 0; ok && i < c->n; i++)
		ok = tk.xTokenize(t, &c->token[i], FTS5_TOKENIZE_QUERY, c->text[i],
		    (int)strlen(c->text[i]), one_token) == SQLITE_OK &&
		    c->token[i] != NULL && c->token[i][0] != '\0';
	if (t != NULL)
		tk.xDelete(t);
	return ok;
}

/*
 * *ok_r: the index keeps bounds for these weights, with the rows' hits (a
 * schema from before migration 0031, or no bounds, has none to read).
 */
static int
hits_usable(struct common *c, bool *ok_r, struct mb_err *err)
{
	struct mb_err ignored = { 0 };
	sqlite3_stmt *st = idx_stmt_sql(c->idx, weights_sql, &ignored);
	int rc;

	*ok_r = false;
	if (st == NULL || idx_stmt_sql(c->idx, hits_sql, &ignored) == NULL) {
		idx_stmt_done(st);
		return 0;	/* an older schema */
	}
	rc = sqlite3_step(st);
	*ok_r = rc == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL &&
	    strcmp((const char *)sqlite3_column_text(st, 0), IDX_RANK_WEIGHTS) == 0;
	idx_stmt_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    idx_sqlerr(c->idx, rc, "search: rank bounds", err);
}

/*
 * Which phrases' hits syncd keeps (a word it bounds that held two fifths
 * of the rows when chosen) into c->kept_slot, the others into c->slot.
 */
static int
phrases_split(struct common *c, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(c->idx, term_sql, err);
	int rc = SQLITE_DONE;

	if (st == NULL)
		return -1;
	c->n_kept = c->n_slot = 0;
	for (int i = 0; rc == SQLITE_DONE && i < c->n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, c->token[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			c->kept_slot[c->n_kept++] = i;
		else if (rc == SQLITE_DONE)
			c->slot[c->n_slot++] = i;
		rc = rc == SQLITE_ROW ? SQLITE_DONE : rc;
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(c->idx, rc, "search: rank terms", err);
}

/* Which chunks are built whole, and by which build (c->chunk_gen). */
static int
chunks_load(struct common *c, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(c->idx, chunks_sql, err);
	int rc;

	c->chunk_gen = mb_xcalloc((size_t)c->n_chunks, sizeof(*c->chunk_gen));
	c->chunk_words = mb_xcalloc((size_t)c->n_chunks, sizeof(*c->chunk_words));
	for (int64_t k = 0; k < c->n_chunks; k++)
		c->chunk_gen[k] = -1;
	if (st == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t k = sqlite3_column_int64(st, 0);

		/* a block changed since (its bit clear) may hold a row the hits miss */
		if (k >= 0 && k < c->n_chunks &&
		    (sqlite3_column_int64(st, 1) & RANK_CHUNK_FULL) == RANK_CHUNK_FULL)
			c->chunk_gen[k] = sqlite3_column_int64(st, 2);
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(c->idx, rc, "search: rank chunks", err);
}

/*
 * Chunk ch's hits blob p (n bytes) into kept phrase k's: its bytes, and
 * the rows whose byte is full into c->kept_many[k] (ascending, as the
 * chunks come).  False, and nothing kept, when the blob is malformed: a
 * full byte without its row's count, or a count for a byte not full.
 */
static bool
hits_keep(struct common *c, int k, int64_t ch, const uint8_t *p, int n)
{
	struct idx_rank_many *m = &c->kept_many[k];
	size_t n_many = 0, n_full = 0, first = m->n;

	if (n < RANK_HITS_BYTES || (n - RANK_HITS_BYTES) % RANK_HITS_MANY_BYTES != 0)
		return false;
	for (int i = 0; i < RANK_HITS_BYTES; i++)
		n_full += p[i] == RANK_HITS_MANY;
	n_many = (size_t)(n - RANK_HITS_BYTES) / RANK_HITS_MANY_BYTES;
	if (n_many != n_full)
		return false;
	for (size_t j = 0; j < n_many; j++) {
		const uint8_t *e = p + RANK_HITS_BYTES + j * RANK_HITS_MANY_BYTES;
		unsigned off = (unsigned)e[0] | (unsigned)e[1] << 8;
		int64_t id = ch * RANK_CHUNK_IDS + off;

		if (off >= RANK_CHUNK_IDS || p[off] != RANK_HITS_MANY ||
		    (m->n > first && m->id[m->n - 1] >= id)) {
			m->n = first;	/* out of order, or not a full byte's */
			return false;
		}
		if (m->n == m->cap) {
			m->cap = m->cap ? 2 * m->cap : 64;
			m->id = mb_xrealloc(m->id, m->cap * sizeof(*m->id));
			m->f = mb_xrealloc(m->f, m->cap * sizeof(*m->f));
		}
		m->id[m->n] = id;
		m->f[m->n++] = (uint32_t)e[2] | (uint32_t)e[3] << 8 | (uint32_t)e[4] << 16 |
		    (uint32_t)e[5] << 24;
	}
	memcpy(&c->kept_hits[k][ch * RANK_HITS_BYTES], p, RANK_HITS_BYTES);
	return true;
}

/*
 * Each kept phrase's hits into c->kept_hits[k] and c->kept_many[k], chunk
 * by chunk where the chunk's current build wrote them (c->chunk_words
 * counts the phrases).
 */
static int
hits_load(struct common *c, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(c->idx, hits_sql, err);
	int rc = SQLITE_DONE;

	if (st == NULL)
		return -1;
	for (int k = 0; rc == SQLITE_DONE && k < c->n_kept; k++) {
		c->kept_hits[k] = mb_xcalloc((size_t)c->n_chunks, RANK_HITS_BYTES);
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, c->token[c->kept_slot[k]], -1, SQLITE_STATIC);
		/* in the order of the key (term, chunk): ascending chunks */
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t ch = sqlite3_column_int64(st, 0);

			if (ch < 0 || ch >= c->n_chunks || c->chunk_gen[ch] < 0 ||
			    c->chunk_gen[ch] != sqlite3_column_int64(st, 1))
				continue;	/* an older build's: vouches for nothing */
			if (hits_keep(c, k, ch, sqlite3_column_blob(st, 2),
			    sqlite3_column_bytes(st, 2)))
				c->chunk_words[ch]++;
		}
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(c->idx, rc, "search: the words' hits", err);
}

/* Whether chunk ch's kept hits stand for every kept phrase. */
static bool
chunk_kept(const struct common *c, int64_t ch)
{
	return c->chunk_gen[ch] >= 0 && c->chunk_words[ch] == c->n_kept;
}

/* The MATCH of the phrases FTS5 reads (c->slot's), into *out. */
static int
others_match(const struct common *c, struct mb_buf *out)
{
	for (int j = 0; j < c->n_slot; j++)
		if ((j > 0 && mb_buf_adds(out, " AND ") == -1) ||
		    mb_query_quote(out, c->text[c->slot[j]], strlen(c->text[c->slot[j]])) == -1)
			return -1;
	return 0;
}

/* Whether row id holds every kept phrase (its byte not 0). */
static bool
row_holds(const struct common *c, int64_t id)
{
	for (int k = 0; k < c->n_kept; k++)
		if (c->kept_hits[k][id] == 0)
			return false;
	return true;
}

/*
 * Read ids lo..hi of match into set (its floor bound), the matches counted
 * in *matches_r: with kept (the kept phrases not in match), a row is a
 * match when it holds every kept phrase; without, every row is.
 */
static int
range_read(struct common *c, const char *match, int64_t lo, int64_t hi, bool kept,
    struct idx_rank_set *set, int64_t *matches_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(c->idx, range_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	sqlite3_bind_pointer(st, 9, &set->floor, IDX_RANK_FLOOR, NULL);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (kept && !row_holds(c, id))
			continue;	/* lacks a kept phrase: no match */
		(*matches_r)++;
		if (sqlite3_column_type(st, 1) != SQLITE_NULL)
			idx_rank_add(set, id, sqlite3_column_double(st, 1), false, 0, false);
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(c->idx, rc, "search: rank", err);
}

/* search-private.h */
struct idx_kept {
	struct common		c;
	struct idx_rank_parts	parts;
	struct mb_buf		others;		/* the MATCH of the phrases FTS5 reads */
};

/* search-private.h */
void
idx_kept_free(struct idx_kept *k)
{
	if (k == NULL)
		return;
	mb_buf_release(&k->others);
	common_release(&k->c);
	free(k);
}

/* search-private.h */
int
idx_kept_make(struct mb_index *idx, const char *match, const struct idx_rank_known *known,
    const struct idx_rank_stats *stats, const struct idx_rank_lengths *lengths,
    struct idx_kept **k_r, struct mb_err *err)
{
	struct idx_kept *k = mb_xcalloc(1, sizeof(*k));
	struct common *c = &k->c;
	int64_t max_id = 0;
	bool ok = false, any = false;

	*k_r = NULL;
	c->idx = idx;
	c->stats.known = known;
	k->others = (struct mb_buf)MB_BUF_INIT(IDX_KEPT_MATCH_MAX);
	if (!idx_common_used || match == NULL || !and_of_phrases(c, match) ||
	    !phrases_one_token(c)) {
		idx_kept_free(k);
		return 0;
	}
	if (hits_usable(c, &ok, err) == -1 || (ok && phrases_split(c, err) == -1))
		goto fail;
	/* kept words alone are scored at the kept lengths: not without them */
	if (!ok || c->n_kept == 0 ||
	    (c->n_slot == 0 && (lengths == NULL || lengths->off))) {
		idx_kept_free(k);	/* no word's hits kept, or nothing else to read */
		return 0;
	}
	/* the whole query's statistics (kept on the connection): its IDFs */
	if (stats != NULL) {
		c->stats = *stats;	/* the caller's, for match: no statement again */
		any = true;
	} else if (idx_rank_query_stats(idx, match, &c->stats, &any, err) == -1)
		goto fail;
	ok = any && c->stats.set && c->stats.n_phrase == c->n;
	for (int i = 0; ok && i < c->n; i++)
		ok = c->stats.size[i] == 1;
	if (!ok) {
		idx_kept_free(k);	/* nothing matches, or phrases FTS5 counts otherwise */
		return 0;
	}
	if (idx_max_id(idx, "search: common words", &max_id, err) == -1)
		goto fail;
	c->n_chunks = max_id / RANK_CHUNK_IDS + 1;
	if (chunks_load(c, err) == -1 || hits_load(c, err) == -1)
		goto fail;
	ok = false;
	for (int64_t ch = 0; !ok && ch < c->n_chunks; ch++)
		ok = chunk_kept(c, ch);
	if (!ok || others_match(c, &k->others) == -1) {
		idx_kept_free(k);	/* no chunk has their hits: read as before */
		return 0;
	}
	k->parts = (struct idx_rank_parts){ .stats = &c->stats, .slot = c->slot,
	    .n_slot = c->n_slot, .kept_slot = c->kept_slot,
	    .kept_hits = (const uint8_t *const *)c->kept_hits, .kept_many = c->kept_many,
	    .n_kept = c->n_kept, .n_kept_ids = c->n_chunks * RANK_CHUNK_IDS };
	*k_r = k;
	return 0;
fail:
	idx_kept_free(k);
	return -1;
}

/* search-private.h */
int64_t
idx_kept_run(const struct idx_kept *k, int64_t lo, int64_t hi, bool *kept_r)
{
	int64_t ch = lo / RANK_CHUNK_IDS;

	*kept_r = ch < k->c.n_chunks && chunk_kept(&k->c, ch);
	for (ch++; ch * RANK_CHUNK_IDS <= hi; ch++)
		if ((ch < k->c.n_chunks && chunk_kept(&k->c, ch)) != *kept_r)
			return ch * RANK_CHUNK_IDS - 1;
	return hi;
}

/* search-private.h */
const char *
idx_kept_others(const struct idx_kept *k)
{
	return k->others.data;
}

/* search-private.h */
const struct idx_rank_parts *
idx_kept_parts(const struct idx_kept *k)
{
	return &k->parts;
}

/* search-private.h */
bool
idx_kept_alone(const struct idx_kept *k)
{
	return k->c.n_slot == 0;
}

/* search-private.h */
int
idx_kept_bytes(struct idx_kept *k, const char *match, int64_t lo, int64_t hi,
    struct idx_rank_set *set, struct mb_err *err)
{
	for (int64_t id = lo; id <= hi; id++) {
		int64_t again = 0;	/* the row, counted here already */
		double score = 0.0;
		int r;

		if (id % RANK_BLOCK_IDS == 0 || id == lo) {
			int64_t b = id / RANK_BLOCK_IDS;

			if (idx_rank_block_passed(&set->floor, b)) {
				id = (b + 1) * RANK_BLOCK_IDS - 1;	/* the block's rest */
				continue;
			}
		}
		if (!row_holds(&k->c, id))
			continue;
		set->matches++;
		r = idx_rank_kept_row(&k->parts, &set->floor, id, &score);
		if (r == 1) {
			idx_rank_add(set, id, score, false, 0, false);
			idx_common_bytes_rows++;
		} else if (r == -1 &&
		    range_read(&k->c, match, id, id, false, set, &again, err) == -1)
			return -1;
	}
	return 0;
}

int
idx_rank_common(struct mb_index *idx, const struct mb_query *q, struct idx_rank_set *set,
    bool *used_r, struct mb_err *err)
{
	const struct idx_rank_parts *caller_parts = set->floor.parts;
	struct idx_kept *k = NULL;
	uint32_t *min_len = NULL;
	int64_t matches = 0, max_id;
	int rc = -1;

	*used_r = false;
	if (q->match == NULL ||
	    idx_kept_make(idx, q->match, set->floor.known, NULL, set->floor.lengths, &k,
	    err) == -1)
		return q->match == NULL ? 0 : -1;
	if (k == NULL)
		return 0;
	/* lengths a word's fronts prove, as for a search read whole (index_search.c) */
	if (idx_rank_min_lengths(idx, q, &min_len, &set->floor.n_min_len, err) == -1)
		goto out;
	/* runs of chunks with the hits through the others (or none), the rest whole */
	max_id = k->c.n_chunks * RANK_CHUNK_IDS - 1;
	for (int64_t lo = 0; lo <= max_id;) {
		bool kept;
		int64_t hi = idx_kept_run(k, lo, max_id, &kept);

		set->floor.block_min_len = min_len;
		if (kept && idx_kept_alone(k))
			rc = idx_kept_bytes(k, q->match, lo, hi, set, err);
		else {
			set->floor.parts = kept ? &k->parts : caller_parts;
			rc = range_read(&k->c, kept ? k->others.data : q->match, lo, hi, kept,
			    set, &matches, err);
		}
		set->floor.parts = caller_parts;
		set->floor.block_min_len = NULL;
		if (rc == -1)
			goto out;
		lo = hi + 1;
	}
	idx_common_reads++;
	set->matches += matches;
	*used_r = true;
	rc = 0;
out:
	free(min_len);
	idx_kept_free(k);
	return rc;
}
