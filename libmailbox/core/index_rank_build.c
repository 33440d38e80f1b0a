/*
 * The ranking's block bounds, built by syncd (migrations/0014_rank_bounds.sql,
 * docs/index.md "Ranking"): which terms are frequent enough to bound, and
 * for each chunk of 2,048 ids that no insert will reach any more, each such
 * term's Pareto front of (weighted hits, length) per block of 128 ids.
 *
 * The fronts are read from FTS5 itself, one statement per term and run of
 * neighbouring chunks (MATCH the term AND rowid BETWEEN the run's ids:
 * RANK_SPAN_CHUNKS), through mb_rank_tf(), which counts a row's hits
 * exactly as mb_bm25 does: the bounds describe what the index holds,
 * whatever the tokenizer did when the row went in.
 * The same statement counts the term's rows in the chunk (rank_bounds.docs,
 * migrations/0018), which a search adds up for the term's IDF instead of
 * walking its doclist (index_rank_counts.c).
 * A term is matched as the index word itself (mb_fts_raw_term), not as
 * text the query tokenizer would stem again: porter's stem of a stem is
 * not always itself (please: pleas, pleas: plea), and a search of
 * `please` reads the doclist of `pleas`, whose fronts these are.  When the
 * terms are chosen again, each is bounded at once in every chunk built
 * before that lacks it (terms_fill()), so that no chunk leaves a term
 * unbounded for good.
 * A term most rows hold (RANK_HITS_SHARE_NUM / _DEN when chosen) also
 * gets, per chunk, each id's hits of it (rank_bounds.hits, migration
 * 0031), read by the same statement: a search of words all of which a
 * match must hold reads such a word's hits there (index_search_common.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"

/*
 * A term is frequent when at least one row in RANK_TERM_SHARE holds it
 * (and RANK_TERM_MIN_DOCS rows): below that a word's matches cost a few
 * milliseconds to rank whole, and every term bounded costs the builder a
 * statement per run of chunks.  A fortieth, not a tenth: at 1,000,000
 * messages a word in 3-4% of them (razor, perl) cost 40-57 ms read whole
 * and 17-21 through its bounds, for about 50 us a message more in the
 * builder and 63 bytes a message of bounds instead of 21
 * (docs/benchmarks.md).  The terms are chosen again when the index has
 * doubled since.
 */
#define RANK_TERM_SHARE		40
#define RANK_TERM_MIN_DOCS	256
#define RANK_TERMS_MAX		4096
/*
 * Neighbouring chunks bounded by one statement a term.  A statement's
 * start is most of its cost while a backfill leaves FTS5 many segments to
 * look the term up in, each one a seek (a backfill of 1,000,000 messages
 * spent 156 s bounding one chunk a statement, 56 s eight; at 100,000
 * sixteen gained nothing on eight: docs/benchmarks.md, "Bounds built for
 * neighbouring chunks together").
 */
#define RANK_SPAN_CHUNKS	8

static const char state_sql[] = "SELECT weights, terms_rows, gen FROM rank_state";
static const char state_put_sql[] =
	"INSERT OR REPLACE INTO rank_state (id, weights, terms_rows, gen) VALUES (1, ?1, ?2, ?3)";
/* each chunk, and whether its rows' lengths are kept (migration 0022: all or none) */
static const char chunks_sql[] =
	"SELECT c.chunk, c.blocks, EXISTS (SELECT 1 FROM rank_lengths AS l "
	"WHERE l.block = c.chunk * 16) FROM rank_chunks AS c";	/* RANK_CHUNK_BLOCKS */
static const char terms_sql[] = "SELECT term, docs FROM rank_terms";
/* the chunks built whole, with their generations: where new terms are filled in */
static const char built_sql[] =
	"SELECT chunk, gen FROM rank_chunks WHERE blocks = ?1 ORDER BY chunk";
/*
 * Of a run of chunks built whole, how many hold a current row of a term
 * (with its rows' hits when ?4 is 1: a term most rows hold, chosen since).
 */
static const char held_sql[] =
	"SELECT count(*) FROM rank_bounds AS b JOIN rank_chunks AS c "
	"ON c.chunk = b.chunk AND c.gen = b.gen WHERE b.term = ?1 AND b.chunk BETWEEN ?2 AND ?3 "
	"AND (?4 = 0 OR b.hits IS NOT NULL)";
static const char term_put_sql[] = "INSERT INTO rank_terms (term, docs) VALUES (?1, ?2)";
static const char chunk_put_sql[] =
	"INSERT OR REPLACE INTO rank_chunks (chunk, blocks, gen) VALUES (?1, ?2, ?3)";
static const char lengths_put_sql[] =
	"INSERT OR REPLACE INTO rank_lengths (block, lengths) VALUES (?1, ?2)";
static const char bounds_put_sql[] =
	"INSERT OR REPLACE INTO rank_bounds (term, chunk, gen, bounds, docs, hits) "
	"VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
/* One term's rows in one chunk, counted as the ranking counts them. */
static const char tf_sql[] =
	"SELECT rowid, mb_rank_tf(messages_fts, " IDX_RANK_WEIGHTS ") FROM messages_fts "
	"WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3";
/*
 * The rows' lengths in tokens, as FTS5 keeps them for bm25() (its docsize
 * table: one varint per column, in SQLite's varint form), read once a chunk.
 */
static const char lengths_sql[] =
	"SELECT id, sz FROM messages_fts_docsize WHERE id BETWEEN ?1 AND ?2";
/* FTS5's vocabulary: every term with the rows that hold it (a read of the whole index). */
static const char vocab_make_sql[] =
	"CREATE VIRTUAL TABLE IF NOT EXISTS temp.rank_vocab USING fts5vocab(main, messages_fts, row)";
static const char vocab_sql[] =
	"SELECT term, doc FROM temp.rank_vocab WHERE doc >= ?1 ORDER BY doc DESC LIMIT ?2";
/* Bounds built for other weights vouch for nothing: start again. */
static const char reset_chunks_sql[] = "DELETE FROM rank_chunks";
static const char reset_bounds_sql[] = "DELETE FROM rank_bounds";
static const char reset_terms_sql[] = "DELETE FROM rank_terms";

struct build {
	struct mb_index	*idx;
	char		**terms;	/* owned, n_terms of them */
	bool		 *common;	/* owned: terms[i] gets its rows' hits (rank_bounds.hits) */
	size_t		 n_terms;
	int64_t		 gen;		/* the last generation built */
	int64_t		 terms_rows;	/* max id when the terms were chosen */
};

/* Run one statement that returns no rows. */
static int
exec_sql(struct mb_index *idx, const char *sql, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);

	return st == NULL ? -1 : idx_step_done(idx, st, "rank bounds", err);
}

static int
state_put(struct build *b, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(b->idx, state_put_sql, err);

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, IDX_RANK_WEIGHTS, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, b->terms_rows);
	sqlite3_bind_int64(st, 3, b->gen);
	return idx_step_done(b->idx, st, "rank bounds: state", err);
}

/* The recorded state into b; bounds of other weights (or none) are reset. */
static int
state_get(struct build *b, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(b->idx, state_sql, err);
	bool same = false;
	int rc;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *w = (const char *)sqlite3_column_text(st, 0);

		same = w != NULL && strcmp(w, IDX_RANK_WEIGHTS) == 0;
		b->terms_rows = sqlite3_column_int64(st, 1);
		b->gen = sqlite3_column_int64(st, 2);
	}
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(b->idx, rc, "rank bounds: state", err);
	if (same)
		return 0;
	if (exec_sql(b->idx, reset_chunks_sql, err) == -1 ||
	    exec_sql(b->idx, reset_bounds_sql, err) == -1 ||
	    exec_sql(b->idx, reset_terms_sql, err) == -1)
		return -1;
	b->terms_rows = 0;
	return state_put(b, err);
}

/*
 * The chosen terms into b, each marked common when it held at least
 * RANK_HITS_SHARE_NUM / _DEN of the rows when chosen (rows: the ids then,
 * b->terms_rows).
 */
static int
terms_load(struct build *b, int64_t rows, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(b->idx, terms_sql, err);
	size_t cap = 0;
	int rc;

	if (st == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (b->n_terms == cap) {
			cap = cap ? 2 * cap : 256;
			b->terms = mb_xrealloc(b->terms, cap * sizeof(*b->terms));
			b->common = mb_xrealloc(b->common, cap * sizeof(*b->common));
		}
		/* in doubles: no product overflows */
		b->common[b->n_terms] = rows > 0 &&
		    (double)sqlite3_column_int64(st, 1) * RANK_HITS_SHARE_DEN >=
		    (double)rows * RANK_HITS_SHARE_NUM;
		b->terms[b->n_terms++] = idx_col_text(st, 0, NULL);
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(b->idx, rc, "rank bounds: terms", err);
}

/*
 * The sum of the varints of blob (FTS5's, which are SQLite's: seven bits a
 * byte, high first, the top bit set on every byte but the last); a value
 * past 32 bits, or a cut one, counts as 0, which only loosens a bound.
 */
static uint32_t
length_of(const uint8_t *p, int n)
{
	uint64_t sum = 0, v = 0;
	int len = 0;

	for (int i = 0; i < n; i++) {
		v = v << 7 | (p[i] & 0x7f);
		if (++len > 5)
			return 0;
		if ((p[i] & 0x80) == 0) {
			sum += v;
			v = 0;
			len = 0;
		}
	}
	return len == 0 && sum <= UINT32_MAX ? (uint32_t)sum : 0;
}

/* Each row's length in chunk c into len[id - first id] (0: no row). */
static int
rank_lengths(struct build *b, int64_t c, uint32_t len[RANK_CHUNK_IDS], struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(b->idx, lengths_sql, err);
	int64_t lo = c * RANK_CHUNK_IDS;
	int rc;

	memset(len, 0, RANK_CHUNK_IDS * sizeof(*len));
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, lo + RANK_CHUNK_IDS - 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id >= lo && id < lo + RANK_CHUNK_IDS)
			len[id - lo] = length_of(sqlite3_column_blob(st, 1),
			    sqlite3_column_bytes(st, 1));
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(b->idx, rc, "rank bounds: lengths", err);
}

/*
 * Chunk c's lengths (len, rank_lengths()') into rank_lengths, a row a
 * block: 16 bits each, little-endian, 0 for a length that does not fit (a
 * search asks FTS5 for that row).
 */
static int
lengths_put(struct build *b, int64_t c, const uint32_t *len, struct mb_err *err)
{
	sqlite3_stmt *put = idx_stmt_sql(b->idx, lengths_put_sql, err);
	uint8_t blob[RANK_LENGTHS_BYTES];

	if (put == NULL)
		return -1;
	for (size_t k = 0; k < RANK_CHUNK_BLOCKS; k++) {
		for (size_t i = 0; i < RANK_BLOCK_IDS; i++) {
			uint32_t v = len[k * RANK_BLOCK_IDS + i];

			v = v <= RANK_LENGTH_MAX ? v : 0;
			blob[2 * i] = (uint8_t)(v & 0xff);
			blob[2 * i + 1] = (uint8_t)(v >> 8);
		}
		sqlite3_reset(put);
		sqlite3_bind_int64(put, 1, c * RANK_CHUNK_BLOCKS + (int64_t)k);
		sqlite3_bind_blob(put, 2, blob, sizeof(blob), SQLITE_STATIC);
		if (idx_step_done(b->idx, put, "rank bounds: a block's lengths", err) == -1)
			return -1;
	}
	return 0;
}

/*
 * A chunk's hits (rank_bounds.hits) into out, emptied first: its bytes,
 * then each row whose byte is full with its hits (many: each id's).
 */
static int
hits_blob(struct mb_buf *out, const uint8_t *bytes, const uint32_t *many)
{
	mb_buf_reset(out);
	if (mb_buf_add(out, bytes, RANK_HITS_BYTES) == -1)
		return -1;
	for (unsigned i = 0; i < RANK_CHUNK_IDS; i++) {
		uint8_t e[RANK_HITS_MANY_BYTES];

		if (bytes[i] != RANK_HITS_MANY)
			continue;
		e[0] = (uint8_t)(i & 0xff);
		e[1] = (uint8_t)(i >> 8);
		for (int k = 0; k < 4; k++)
			e[2 + k] = (uint8_t)(many[i] >> (8 * k));
		if (mb_buf_add(out, e, sizeof(e)) == -1)
			return -1;
	}
	return 0;
}

/*
 * One term's fronts and rows in chunks first..first+n-1 into rank_bounds, a
 * row a chunk of generation gen[c], read by one statement; len: the chunks'
 * rank_lengths(), one after the other; fr: room for n chunks' fronts.
 * common: each row's hits too (rank_bounds.hits).
 */
static int
term_build(struct build *b, const char *term, bool common, int64_t first, size_t n,
    const int64_t *gen, const uint32_t *len, struct rank_front *fr, sqlite3_stmt *tf,
    sqlite3_stmt *put, struct mb_err *err)
{
	struct mb_buf quoted = MB_BUF_INIT(4096), blob = MB_BUF_INIT(1 << 20);
	struct mb_buf hits_out =
	    MB_BUF_INIT(RANK_HITS_BYTES + RANK_CHUNK_IDS * RANK_HITS_MANY_BYTES);
	int64_t lo = first * RANK_CHUNK_IDS, hi = lo + (int64_t)n * RANK_CHUNK_IDS;
	int64_t docs[RANK_SPAN_CHUNKS] = { 0 };
	uint8_t *hits = NULL;	/* a common term's: each id's, chunk after chunk */
	uint32_t *many = NULL;	/* its rows' hits past a byte, by id - lo */
	int rc;

	memset(fr, 0, n * RANK_CHUNK_BLOCKS * sizeof(*fr));
	if (mb_fts_raw_term(&quoted, term, strlen(term)) == -1) {
		mb_buf_release(&quoted);
		return mb_err_set(err, MB_E_INTERNAL, "rank bounds: a term too long");
	}
	if (common) {
		hits = mb_xcalloc(n, RANK_HITS_BYTES);
		many = mb_xcalloc(n * RANK_CHUNK_IDS, sizeof(*many));
	}
	sqlite3_reset(tf);
	sqlite3_bind_text(tf, 1, quoted.data, (int)quoted.len, SQLITE_STATIC);
	sqlite3_bind_int64(tf, 2, lo);
	sqlite3_bind_int64(tf, 3, hi - 1);
	while ((rc = sqlite3_step(tf)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(tf, 0), f = sqlite3_column_int64(tf, 1);

		if (id < lo || id >= hi || f < 0 || f > UINT32_MAX) {
			rc = SQLITE_CORRUPT;	/* never: the statement asks for these ids */
			break;
		}
		rank_front_add(&fr[(id - lo) / RANK_BLOCK_IDS], (uint32_t)f, len[id - lo]);
		docs[(id - lo) / RANK_CHUNK_IDS]++;
		if (hits != NULL) {
			hits[id - lo] = f < RANK_HITS_MANY ? (uint8_t)f : RANK_HITS_MANY;
			many[id - lo] = (uint32_t)f;
		}
	}
	sqlite3_reset(tf);
	mb_buf_release(&quoted);
	rc = rc == SQLITE_DONE ? 0 : idx_sqlerr(b->idx, rc, "rank bounds: a term's rows", err);
	for (size_t c = 0; rc == 0 && c < n; c++) {
		const struct rank_front *cf = &fr[c * RANK_CHUNK_BLOCKS];

		mb_buf_reset(&blob);
		for (unsigned i = 0; rc == 0 && i < RANK_CHUNK_BLOCKS; i++)
			if (cf[i].n > 0 && rank_front_put(&blob, i, &cf[i]) == -1)
				rc = mb_err_set(err, MB_E_INTERNAL, "rank bounds: a blob too long");
		if (rc == -1)
			break;
		sqlite3_reset(put);
		sqlite3_bind_text(put, 1, term, -1, SQLITE_STATIC);
		sqlite3_bind_int64(put, 2, first + (int64_t)c);
		sqlite3_bind_int64(put, 3, gen[c]);
		sqlite3_bind_blob(put, 4, blob.data, (int)blob.len, SQLITE_STATIC);
		sqlite3_bind_int64(put, 5, docs[c]);
		if (hits != NULL) {
			if (hits_blob(&hits_out, &hits[c * RANK_HITS_BYTES],
			    &many[c * RANK_CHUNK_IDS]) == -1) {
				rc = mb_err_set(err, MB_E_INTERNAL, "rank bounds: hits too long");
				break;
			}
			sqlite3_bind_blob(put, 6, hits_out.data, (int)hits_out.len, SQLITE_STATIC);
		} else
			sqlite3_bind_null(put, 6);
		rc = idx_step_done(b->idx, put, "rank bounds: a term's bounds", err);
	}
	mb_buf_release(&blob);
	mb_buf_release(&hits_out);
	free(hits);
	free(many);
	return rc;
}

/*
 * Chunks first..first+n-1 (n at most RANK_SPAN_CHUNKS) bounded for every
 * term, as one unit of work.
 */
static int
span_build(struct build *b, int64_t first, size_t n, struct mb_err *err)
{
	sqlite3_stmt *tf, *put, *chunk;
	uint32_t *len = mb_xcalloc(n * RANK_CHUNK_IDS, sizeof(*len));
	struct rank_front *fr = mb_xcalloc(n * RANK_CHUNK_BLOCKS, sizeof(*fr));
	int64_t gen[RANK_SPAN_CHUNKS];
	struct idx_unit u;
	int rc = 0;

	if (idx_unit_begin(b->idx, &u, err) == -1) {
		free(len);
		free(fr);
		return -1;
	}
	b->gen++;
	for (size_t c = 0; c < n; c++)
		gen[c] = b->gen;
	for (size_t c = 0; rc == 0 && c < n; c++)
		rc = rank_lengths(b, first + (int64_t)c, &len[c * RANK_CHUNK_IDS], err);
	if (rc == 0 && ((tf = idx_stmt_sql(b->idx, tf_sql, err)) == NULL ||
	    (put = idx_stmt_sql(b->idx, bounds_put_sql, err)) == NULL ||
	    (chunk = idx_stmt_sql(b->idx, chunk_put_sql, err)) == NULL))
		rc = -1;
	for (size_t i = 0; rc == 0 && i < b->n_terms; i++)
		rc = term_build(b, b->terms[i], b->common[i], first, n, gen, len, fr, tf, put,
		    err);
	for (size_t c = 0; rc == 0 && c < n; c++) {
		sqlite3_reset(chunk);
		sqlite3_bind_int64(chunk, 1, first + (int64_t)c);
		sqlite3_bind_int64(chunk, 2, RANK_CHUNK_BUILT);
		sqlite3_bind_int64(chunk, 3, b->gen);
		rc = idx_step_done(b->idx, chunk, "rank bounds: a chunk", err);
		if (rc == 0)
			rc = lengths_put(b, first + (int64_t)c, &len[c * RANK_CHUNK_IDS], err);
	}
	if (rc == 0)
		rc = state_put(b, err);
	if (idx_unit_end(b->idx, &u, rc == 0, err) == -1)
		rc = -1;
	free(len);
	free(fr);
	return rc;
}

/*
 * Every chosen term (b->terms) bounded in every chunk built whole that has
 * no current row of it, each chunk at its own generation so that its other
 * terms' rows stay current: a term new to a choice (a word that became
 * frequent as the index grew, or one an older build left out), in the
 * chunks built before.  One statement a term and run of neighbouring
 * chunks, as span_build() reads them; a run's rows of a term that it holds
 * already are written again the same.  In the caller's unit of work.
 */
static int
terms_fill(struct build *b, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(b->idx, built_sql, err), *tf = NULL, *put = NULL;
	sqlite3_stmt *held = NULL;
	int64_t *chunk = NULL, *gen = NULL;
	size_t n_chunks = 0, cap = 0;
	uint32_t *len;
	struct rank_front *fr;
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, RANK_CHUNK_BUILT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n_chunks == cap) {
			cap = cap ? 2 * cap : 256;
			chunk = mb_xrealloc(chunk, cap * sizeof(*chunk));
			gen = mb_xrealloc(gen, cap * sizeof(*gen));
		}
		chunk[n_chunks] = sqlite3_column_int64(st, 0);
		gen[n_chunks++] = sqlite3_column_int64(st, 1);
	}
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		free(chunk);
		free(gen);
		return idx_sqlerr(b->idx, rc, "rank bounds: built chunks", err);
	}
	len = mb_xcalloc(RANK_SPAN_CHUNKS * RANK_CHUNK_IDS, sizeof(*len));
	fr = mb_xcalloc(RANK_SPAN_CHUNKS * RANK_CHUNK_BLOCKS, sizeof(*fr));
	rc = n_chunks == 0 || b->n_terms == 0 ? 0 :
	    (tf = idx_stmt_sql(b->idx, tf_sql, err)) == NULL ||
	    (put = idx_stmt_sql(b->idx, bounds_put_sql, err)) == NULL ||
	    (held = idx_stmt_sql(b->idx, held_sql, err)) == NULL ? -1 : 0;
	for (size_t i = 0; rc == 0 && tf != NULL && i < n_chunks;) {
		size_t k = 1;	/* neighbours: chunk[i], chunk[i] + 1, ... */
		bool lengths = false;

		while (k < RANK_SPAN_CHUNKS && i + k < n_chunks &&
		    chunk[i + k] == chunk[i] + (int64_t)k)
			k++;
		for (size_t t = 0; rc == 0 && t < b->n_terms; t++) {
			sqlite3_reset(held);
			sqlite3_bind_text(held, 1, b->terms[t], -1, SQLITE_STATIC);
			sqlite3_bind_int64(held, 2, chunk[i]);
			sqlite3_bind_int64(held, 3, chunk[i + k - 1]);
			sqlite3_bind_int(held, 4, b->common[t]);
			if ((rc = sqlite3_step(held)) != SQLITE_ROW) {
				rc = idx_sqlerr(b->idx, rc, "rank bounds: a term's rows", err);
				break;
			}
			rc = 0;
			if (sqlite3_column_int64(held, 0) == (int64_t)k)
				continue;	/* current in every chunk of the run */
			for (size_t c = 0; !lengths && rc == 0 && c < k; c++)
				rc = rank_lengths(b, chunk[i + c], &len[c * RANK_CHUNK_IDS], err);
			lengths = true;
			if (rc == 0)
				rc = term_build(b, b->terms[t], b->common[t], chunk[i], k, &gen[i],
				    len, fr, tf, put, err);
		}
		i += k;
	}
	if (held != NULL)
		sqlite3_reset(held);
	free(chunk);
	free(gen);
	free(len);
	free(fr);
	return rc;
}

/*
 * Choose the frequent terms afresh (rank_terms), from FTS5's vocabulary,
 * and bound them in the chunks built before that lack them (terms_fill()).
 * In the caller's unit of work: a choice is kept with its bounds or not at
 * all.
 */
static int
terms_choose(struct build *b, int64_t max_id, struct mb_err *err)
{
	sqlite3_stmt *st, *put;
	int rc;

	if (exec_sql(b->idx, vocab_make_sql, err) == -1 ||
	    exec_sql(b->idx, reset_terms_sql, err) == -1)
		return -1;
	if ((st = idx_stmt_sql(b->idx, vocab_sql, err)) == NULL ||
	    (put = idx_stmt_sql(b->idx, term_put_sql, err)) == NULL) {
		idx_stmt_done(st);
		return -1;
	}
	sqlite3_bind_int64(st, 1, max_id / RANK_TERM_SHARE > RANK_TERM_MIN_DOCS ?
	    max_id / RANK_TERM_SHARE : RANK_TERM_MIN_DOCS);
	sqlite3_bind_int(st, 2, RANK_TERMS_MAX);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_reset(put);
		sqlite3_bind_value(put, 1, sqlite3_column_value(st, 0));
		sqlite3_bind_int64(put, 2, sqlite3_column_int64(st, 1));
		if ((rc = sqlite3_step(put)) != SQLITE_DONE)
			break;
	}
	idx_stmt_done(put);
	idx_stmt_done(st);
	if (rc != SQLITE_DONE)
		return idx_sqlerr(b->idx, rc, "rank bounds: choosing terms", err);
	rc = terms_load(b, max_id, err) == 0 && terms_fill(b, err) == 0 ? 0 : -1;
	for (size_t i = 0; i < b->n_terms; i++)
		free(b->terms[i]);
	free(b->terms);
	free(b->common);
	b->terms = NULL;	/* loaded again by whoever builds chunks */
	b->common = NULL;
	b->n_terms = 0;
	if (rc == -1)
		return -1;
	b->terms_rows = max_id;
	return state_put(b, err);
}

/*
 * The lengths of chunk c, built before migration 0022, into rank_lengths
 * without building it again: the rows' lengths now, which are what a
 * search would measure.
 */
static int
lengths_fill(struct build *b, int64_t c, struct mb_err *err)
{
	uint32_t *len = mb_xcalloc(RANK_CHUNK_IDS, sizeof(*len));
	struct idx_unit u;
	int rc = -1;

	if (idx_unit_begin(b->idx, &u, err) == -1) {
		free(len);
		return -1;
	}
	if (rank_lengths(b, c, len, err) == 0 && lengths_put(b, c, len, err) == 0)
		rc = 0;
	if (idx_unit_end(b->idx, &u, rc == 0, err) == -1)
		rc = -1;
	free(len);
	return rc;
}

/*
 * The complete chunks below max_id whose bounds or counts are not built
 * whole (a row inserted, changed or deleted since: RANK_CHUNK_BUILT), into
 * *unbuilt_r, and those built whole without their lengths (built before
 * migration 0022) into *unfilled_r (both owned by the caller, *n_r and
 * *n_unfilled_r of them, oldest first).
 */
static int
chunks_unbuilt(struct build *b, int64_t max_id, int64_t **unbuilt_r, size_t *n_r,
    int64_t **unfilled_r, size_t *n_unfilled_r, struct mb_err *err)
{
	int64_t n_complete = (max_id + 1) / RANK_CHUNK_IDS;
	bool *done = mb_xcalloc((size_t)n_complete + 1, sizeof(*done));
	bool *filled = mb_xcalloc((size_t)n_complete + 1, sizeof(*filled));
	sqlite3_stmt *st = idx_stmt_sql(b->idx, chunks_sql, err);
	int rc;

	*unbuilt_r = *unfilled_r = NULL;
	*n_r = *n_unfilled_r = 0;
	if (st == NULL) {
		free(done);
		free(filled);
		return -1;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t c = sqlite3_column_int64(st, 0);

		if (c >= 0 && c < n_complete) {
			done[c] = sqlite3_column_int64(st, 1) == RANK_CHUNK_BUILT;
			filled[c] = sqlite3_column_int(st, 2) != 0;
		}
	}
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		free(done);
		free(filled);
		return idx_sqlerr(b->idx, rc, "rank bounds: chunks", err);
	}
	*unbuilt_r = mb_xcalloc((size_t)n_complete + 1, sizeof(**unbuilt_r));
	*unfilled_r = mb_xcalloc((size_t)n_complete + 1, sizeof(**unfilled_r));
	for (int64_t c = 0; c < n_complete; c++)
		if (!done[c])
			(*unbuilt_r)[(*n_r)++] = c;
		else if (!filled[c])
			(*unfilled_r)[(*n_unfilled_r)++] = c;
	free(done);
	free(filled);
	return 0;
}

int
mb_index_rank_build(struct mb_index *idx, size_t min_chunks, size_t max_chunks,
    size_t *built_r, struct mb_err *err)
{
	struct build b = { .idx = idx };
	struct idx_unit u;
	int64_t max_id = 0, *unbuilt = NULL, *unfilled = NULL;
	size_t n_unbuilt = 0, n_unfilled = 0, fills;
	int rc = -1;

	*built_r = 0;
	if (idx_max_id(idx, "rank bounds", &max_id, err) == -1)
		return -1;
	if (max_id < RANK_CHUNK_IDS - 1)
		return 0;	/* not one chunk yet */
	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	rc = state_get(&b, err);
	if (rc == 0 && (b.terms_rows == 0 || max_id >= 2 * b.terms_rows))
		rc = terms_choose(&b, max_id, err);
	if (idx_unit_end(idx, &u, rc == 0, err) == -1 || rc == -1)
		goto out;
	rc = -1;
	if (chunks_unbuilt(&b, max_id, &unbuilt, &n_unbuilt, &unfilled, &n_unfilled, err) == -1 ||
	    (n_unbuilt > 0 && n_unbuilt >= min_chunks && terms_load(&b, b.terms_rows, err) == -1))
		goto out;
	for (size_t i = 0; n_unbuilt >= min_chunks && i < n_unbuilt && *built_r < max_chunks;) {
		size_t n = 1;	/* neighbours, one statement a term for all of them */

		while (n < RANK_SPAN_CHUNKS && i + n < n_unbuilt && *built_r + n < max_chunks &&
		    unbuilt[i + n] == unbuilt[i] + (int64_t)n)
			n++;
		if (span_build(&b, unbuilt[i], n, err) == -1)
			goto out;
		*built_r += n;
		i += n;
	}
	/* a chunk's lengths alone cost about a term's statement: many to a call */
	fills = max_chunks < SIZE_MAX / RANK_LENGTHS_FILLS ? max_chunks * RANK_LENGTHS_FILLS :
	    SIZE_MAX;
	for (size_t i = 0; i < n_unfilled && i < fills; i++) {
		if (lengths_fill(&b, unfilled[i], err) == -1)
			goto out;
		(*built_r)++;
	}
	rc = 0;
out:
	for (size_t i = 0; i < b.n_terms; i++)
		free(b.terms[i]);
	free(b.terms);
	free(b.common);
	free(unbuilt);
	free(unfilled);
	return rc;
}
