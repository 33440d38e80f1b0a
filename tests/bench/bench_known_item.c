/*
 * bench_known_item: how well a search finds the one message its user has in
 * mind (a known-item benchmark, the usual way to judge mail search without
 * human relevance judgements), for scripts/bench-known-item.
 *
 *   bench_known_item INDEX TARGETS SEED [TSV]
 *
 * Picks TARGETS current messages at random (SEED fixed, so every run picks
 * the same), builds for each the query a person recalling it might type --
 * one or two words of its subject, half the time a word of the sender's
 * name, half the time a rare body word (one of the rarest third of its first
 * 60 words) -- and records where the target
 * comes under six orders of the messages the query matches:
 *
 *   engine       mb_search_run(), what mcpd serves (exact weighted BM25)
 *   newest-500   the engine before 2026-12: weighted BM25 over the newest
 *                500 matches by rowid, the rest after them
 *   bm25         FTS5's bm25() with the engine's column weights, every match
 *   bm25-plain   FTS5's bm25() with every column weighted 1
 *   newest       newest first (notmuch's default order)
 *   prior        weighted BM25 plus a recency prior, ln(1 + age / 30 days)
 *                with the age from the newest message (undated: the oldest),
 *                the alternative docs/index.md "Ranking" weighs
 *
 * Ties are broken as the engine breaks them (date newest first, undated
 * last, then highest id).  The corpus of scripts/bench-mcpd is cloned to
 * size, so a text occurs many times: a hit on any message with the target's
 * subject and body counts as finding it, and the rank is counted in distinct
 * texts (first_copy).  Prints a Markdown table (MRR, success@1, @10, @20);
 * TSV, if given, gets one line per target.  The raw
 * statements are a benchmark's (mailbox/index_raw.h), not the engine's.
 */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#define BODY_WORDS	60	/* body words whose document frequency is looked up */
#define WINDOW		500	/* the old engine's ranking window */

enum { R_ENGINE, R_NEWEST500, R_BM25, R_PLAIN, R_NEWEST, R_PRIOR, R_COUNT };
static const char *const r_names[R_COUNT] = { "engine (exact weighted BM25)",
	"newest-500 window (before)", "exact BM25, weighted (bm25())",
	"exact BM25, unweighted", "newest first (notmuch)",
	"weighted BM25 + recency prior ln(1 + age / 30 days)" };

static const char all_sql[] = "SELECT id, subject, mb_text(body), sort_date FROM messages";
static const char one_sql[] =
	"SELECT subject, coalesce(from_name, ''), substr(mb_text(body), 1, 8000) FROM messages WHERE id = ?1";
static const char df_sql[] = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1";
static const char match_sql[] =
	"SELECT m.id, bm25(messages_fts, 10.0, 4.0, 2.0, 1.0, 4.0, 1.0), bm25(messages_fts), "
	"m.sort_date FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid "
	"WHERE messages_fts MATCH ?1";

static const char *const stop[] = { "the", "and", "for", "you", "your", "with", "this", "that",
	"from", "have", "are", "was", "will", "not", "but", "all", "can", "our", "new", "one",
	"out", "get", "has", "more", "about", "what", "which", "their", "there", "http", "www",
	"com", "html", "net", "org", "mailto", "they", "them", "been", "were", "would", "could",
	"should", "into", "than", "then", "just", "also", "any", "how", "who", "its", "his",
	"her", "she", "him", "fwd", "list", "mailing", "unsubscribe", "subscribe", "here",
	"click", "email", "mail", "message", "wrote", "said", "some", "only", "when", "where",
	"like", "such", "these", "those", "other", "very", "over", "there", "because" };

struct doc {
	int64_t		id;
	uint64_t	text;	/* hash of subject and body: copies of one text share it */
};

struct match {
	int64_t		id;
	double		w, u;	/* weighted and unweighted bm25() */
	double		p;	/* w with the recency prior added */
	int64_t		date;
	bool		dated;
};

static uint64_t rng;
static int64_t newest = INT64_MIN, oldest = INT64_MAX;	/* sort_date over the index */

/* splitmix64: a fixed sequence for a fixed seed */
static uint64_t
next_rand(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
fnv(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void
die_sql(sqlite3 *db, const char *what)
{
	fprintf(stderr, "bench_known_item: %s: %s\n", what, sqlite3_errmsg(db));
	exit(1);
}

static sqlite3_stmt *
prep(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die_sql(db, sql);
	return st;
}

static bool
stopword(const char *w)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(stop); i++)
		if (strcmp(stop[i], w) == 0)
			return true;
	return false;
}

/*
 * The distinct words of text (ASCII letters, lower-cased, min..20 long, no
 * stop words) into words (room for max, each 21 bytes); returns how many.
 * A word is what the index's tokenizer makes one token: a run of letters,
 * digits and non-ASCII characters. Only runs of ASCII letters alone are kept
 * ("gnome2" is one token, so "gnome" cannot find it).
 */
static size_t
words_of(const char *text, size_t min, char (*words)[21], size_t max)
{
	size_t n = 0;

	for (const char *p = text; *p != '\0' && n < max;) {
		char w[21];
		size_t len = 0;
		bool dup = false, letters = true;

		while (*p != '\0' && !isalnum((unsigned char)*p) && (unsigned char)*p < 0x80)
			p++;
		while (isalnum((unsigned char)*p) || (unsigned char)*p >= 0x80) {
			letters &= isalpha((unsigned char)*p) != 0;
			if (len < sizeof(w) - 1)
				w[len] = (char)tolower((unsigned char)*p);
			len++;
			p++;
		}
		if (!letters || len < min || len >= sizeof(w))
			continue;	/* digits or non-ASCII in it, too short, or too long */
		w[len] = '\0';
		for (size_t i = 0; i < n && !dup; i++)
			dup = strcmp(words[i], w) == 0;
		if (!dup && !stopword(w))
			memcpy(words[n++], w, len + 1);
	}
	return n;
}

/* How many messages hold word (FTS5, through the query compiler); -1 if none can. */
static int64_t
doc_freq(sqlite3_stmt *st, const char *word)
{
	struct mb_query q;
	struct mb_err err = { 0 };
	int64_t n = -1;

	mb_query_init(&q);
	if (mb_query_compile(word, strlen(word), &q, &err) == 0 && q.match != NULL) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, q.match, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
	}
	mb_query_release(&q);
	return n;
}

static int
by_df(const void *pa, const void *pb)
{
	const struct { int64_t df; size_t i; } *a = pa, *b = pb;

	return a->df != b->df ? (a->df < b->df ? -1 : 1) : (a->i < b->i ? -1 : a->i > b->i);
}

/* Column col of st's row as text; "" for NULL.  Valid until the next step. */
static const char *
col_text(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	return s ? s : "";
}

/* Append word to the query text in q (room for 256). */
static void
add_word(char *q, const char *word)
{
	size_t len = strlen(q);

	snprintf(q + len, 256 - len, "%s%s", len ? " " : "", word);
}

/*
 * The query a person recalling message id might type, into q (256 bytes);
 * false when its text gives fewer than two usable words.
 */
static bool
recall_query(sqlite3_stmt *one, sqlite3_stmt *df, int64_t id, char *q)
{
	char subj[16][21], name[8][21], body[BODY_WORDS][21];
	size_t ns, nn, nb, n = 0, pick;

	q[0] = '\0';
	sqlite3_reset(one);
	sqlite3_bind_int64(one, 1, id);
	if (sqlite3_step(one) != SQLITE_ROW)
		return false;
	ns = words_of(col_text(one, 0), 3, subj, 16);
	nn = words_of(col_text(one, 1), 3, name, 8);
	nb = words_of(col_text(one, 2), 4, body, BODY_WORDS);
	/* one or two subject words, in the order written */
	if (ns > 0) {
		size_t k = ns > 1 ? 1 + next_rand() % 2 : 1, first = next_rand() % (ns - k + 1);

		for (size_t i = 0; i < k; i++, n++)
			add_word(q, subj[first + i]);
	}
	/* half the time, a word of the sender's name */
	if (nn > 0 && next_rand() % 2 == 0) {
		add_word(q, name[next_rand() % nn]);
		n++;
	}
	/*
	 * Half the time (always when nothing else was found), a rare body word:
	 * one of the rarest third of its first BODY_WORDS distinct words, not
	 * the rarest, which is often a typo or a token only its copies hold
	 * and would make every order find the target.
	 */
	if (nb > 0 && (n < 2 || next_rand() % 2 == 0)) {
		struct freq { int64_t df; size_t i; } fr[BODY_WORDS];
		size_t nf = 0;

		for (size_t i = 0; i < nb; i++)
			if ((fr[nf].df = doc_freq(df, body[i])) > 0)
				fr[nf++].i = i;
		qsort(fr, nf, sizeof(*fr), by_df);
		if (nf > 0) {
			pick = fr[next_rand() % (nf / 3 + 1)].i;
			if (strstr(q, body[pick]) == NULL) {
				add_word(q, body[pick]);
				n++;
			}
		}
	}
	/* too few: another body word */
	for (size_t tries = 0; n < 2 && nb > 0 && tries < 8; tries++) {
		const char *w = body[next_rand() % nb];

		if (strstr(q, w) == NULL) {
			add_word(q, w);
			n++;
		}
	}
	return n >= 2;
}

static int
by_id(const void *a, const void *b)
{
	const struct doc *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The hash of id's text (docs sorted by id). */
static uint64_t
text_of(const struct doc *docs, size_t n, int64_t id)
{
	struct doc key = { .id = id }, *d = bsearch(&key, docs, n, sizeof(*docs), by_id);

	return d ? d->text : 0;
}

/* Date newest first, undated last, then highest id: the engine's tie order. */
static int
tie_cmp(const struct match *a, const struct match *b)
{
	if (a->dated != b->dated)
		return a->dated ? -1 : 1;
	if (a->date != b->date)
		return a->date > b->date ? -1 : 1;
	return a->id > b->id ? -1 : a->id < b->id;
}

static int
cmp_w(const void *pa, const void *pb)
{
	const struct match *a = pa, *b = pb;

	return a->w != b->w ? (a->w < b->w ? -1 : 1) : tie_cmp(a, b);
}

static int
cmp_u(const void *pa, const void *pb)
{
	const struct match *a = pa, *b = pb;

	return a->u != b->u ? (a->u < b->u ? -1 : 1) : tie_cmp(a, b);
}

static int
cmp_p(const void *pa, const void *pb)
{
	const struct match *a = pa, *b = pb;

	return a->p != b->p ? (a->p < b->p ? -1 : 1) : tie_cmp(a, b);
}

static int
cmp_newest(const void *pa, const void *pb)
{
	return tie_cmp(pa, pb);
}

static int
cmp_rowid_desc(const void *pa, const void *pb)
{
	const struct match *a = pa, *b = pb;

	return a->id > b->id ? -1 : a->id < b->id;
}

/*
 * How many hits of each order are looked at (KNOWN_ITEM_DEPTH; default
 * all): a target further down counts as not found under every order alike
 * (MRR at that depth: each such target loses less than 1 / its rank).  At
 * 1,000,000 messages a target can be 20,000 hits down the engine's answer,
 * which it pages 50 at a time at 50-100 ms a page.
 */
static size_t depth = SIZE_MAX;

/*
 * Where the first copy of text is in the first depth hits of m (n): 1 +
 * the number of distinct texts before it (the clone-aware rank: the corpus
 * holds each text about N / 6,000 times, and a person scrolling past
 * sixteen copies of one message passes one message); 0 when no copy is
 * there.
 */
static size_t
first_copy(const struct match *m, size_t n, const struct doc *docs, size_t nd, uint64_t text)
{
	uint64_t *seen = NULL;
	size_t n_seen = 0, r = 0;

	for (size_t i = 0; i < n && i < depth && r == 0; i++) {
		uint64_t t = text_of(docs, nd, m[i].id);
		bool dup = false;

		if (t == text) {
			r = n_seen + 1;
			break;
		}
		for (size_t j = 0; j < n_seen && !dup; j++)
			dup = seen[j] == t;
		if (!dup) {
			seen = mb_xrealloc(seen, (n_seen + 1) * sizeof(*seen));
			seen[n_seen++] = t;
		}
	}
	free(seen);
	return r;
}

/*
 * The engine's clone-aware rank of text (first_copy), paging as mcpd does
 * until a page holds a copy or depth hits are read; 0 when no copy is
 * there.  A rank counts distinct texts and each text has up to 170 copies
 * at 1,000,000, so a 117th text is about 20,000 hits down.
 */
static size_t
engine_rank(struct mb_index *idx, const struct mb_query *q, const struct doc *docs, size_t nd,
    uint64_t text)
{
	struct match *m = NULL;
	size_t n = 0, rank;
	bool more = true;

	for (int64_t off = 0; more; off += MB_SEARCH_MAX_LIMIT) {
		struct mb_search_page pg;
		struct mb_err err = { 0 };
		bool found = false;

		if (mb_search_run(idx, q, off, MB_SEARCH_MAX_LIMIT, &pg, &err) == -1) {
			fprintf(stderr, "bench_known_item: search: %s\n", err.msg);
			exit(1);
		}
		/* + 1: an empty first page must not ask for 0 bytes */
		m = mb_xrealloc(m, (n + pg.n + 1) * sizeof(*m));
		for (size_t i = 0; i < pg.n; i++) {
			m[n++].id = pg.hits[i].id;
			found |= text_of(docs, nd, pg.hits[i].id) == text;
		}
		more = pg.more && !found && n < depth;
		mb_search_page_release(&pg);
	}
	rank = first_copy(m, n, docs, nd, text);
	free(m);
	return rank;
}

/* Every match of q's text with both bm25() scores and its date, into *m_r. */
static size_t
matches_of(sqlite3_stmt *st, const char *match, struct match **m_r)
{
	struct match *m = NULL;
	size_t n = 0, cap = 0;

	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, match, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			m = mb_xrealloc(m, cap * sizeof(*m));
		}
		m[n].id = sqlite3_column_int64(st, 0);
		m[n].w = sqlite3_column_double(st, 1);
		m[n].u = sqlite3_column_double(st, 2);
		m[n].dated = sqlite3_column_type(st, 3) != SQLITE_NULL;
		m[n].date = sqlite3_column_int64(st, 3);
		n++;
	}
	*m_r = m;
	return n;
}

/* The ranks of text under the four orders computed here, into rank[]. */
static void
sql_ranks(struct match *m, size_t n, const struct doc *docs, size_t nd, uint64_t text,
    size_t rank[R_COUNT])
{
	size_t w = n < WINDOW ? n : WINDOW;

	if (n == 0)	/* nothing matched (m is NULL): every rank stays 0, not found */
		return;
	qsort(m, n, sizeof(*m), cmp_w);
	rank[R_BM25] = first_copy(m, n, docs, nd, text);
	qsort(m, n, sizeof(*m), cmp_u);
	rank[R_PLAIN] = first_copy(m, n, docs, nd, text);
	qsort(m, n, sizeof(*m), cmp_newest);
	rank[R_NEWEST] = first_copy(m, n, docs, nd, text);
	for (size_t i = 0; i < n; i++)	/* bm25() is negative: better is lower, so add */
		m[i].p = m[i].w + log1p((double)(newest - (m[i].dated ? m[i].date : oldest)) /
		    (30.0 * 86400.0));
	qsort(m, n, sizeof(*m), cmp_p);
	rank[R_PRIOR] = first_copy(m, n, docs, nd, text);
	/* the old window: the newest 500 by rowid ranked, the others after them */
	qsort(m, n, sizeof(*m), cmp_rowid_desc);
	qsort(m, w, sizeof(*m), cmp_w);
	qsort(m + w, n - w, sizeof(*m), cmp_w);
	rank[R_NEWEST500] = first_copy(m, n, docs, nd, text);
}

int
main(int argc, char **argv)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	struct doc *docs = NULL;
	size_t nd = 0, cap = 0, targets, done = 0, same = 0;
	double rr[R_COUNT] = { 0 };
	size_t at1[R_COUNT] = { 0 }, at10[R_COUNT] = { 0 }, at20[R_COUNT] = { 0 };
	sqlite3_stmt *all, *one, *df, *ms;
	FILE *tsv = NULL;
	sqlite3 *db;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: bench_known_item INDEX TARGETS SEED [TSV]\n");
		return 2;
	}
	targets = strtoul(argv[2], NULL, 10);
	rng = strtoull(argv[3], NULL, 10);
	if (getenv("KNOWN_ITEM_DEPTH") != NULL && strtoul(getenv("KNOWN_ITEM_DEPTH"), NULL, 10) > 0)
		depth = strtoul(getenv("KNOWN_ITEM_DEPTH"), NULL, 10);
	if (mb_index_open(argv[1], MB_INDEX_RO, &idx, &err) == -1) {
		fprintf(stderr, "bench_known_item: %s\n", err.msg);
		return 1;
	}
	if (argc == 5 && (tsv = fopen(argv[4], "w")) == NULL) {
		perror(argv[4]);
		return 1;
	}
	db = mb_index_db(idx);
	all = prep(db, all_sql);
	while (sqlite3_step(all) == SQLITE_ROW) {
		uint64_t h = 0xcbf29ce484222325ull;

		if (nd == cap) {
			cap = cap ? 2 * cap : 4096;
			docs = mb_xrealloc(docs, cap * sizeof(*docs));
		}
		h = fnv(h, sqlite3_column_text(all, 1), (size_t)sqlite3_column_bytes(all, 1));
		h = fnv(h, (const unsigned char *)"", 1);
		h = fnv(h, sqlite3_column_text(all, 2), (size_t)sqlite3_column_bytes(all, 2));
		if (sqlite3_column_type(all, 3) != SQLITE_NULL) {
			int64_t t = sqlite3_column_int64(all, 3);

			newest = t > newest ? t : newest;
			oldest = t < oldest ? t : oldest;
		}
		docs[nd].id = sqlite3_column_int64(all, 0);
		docs[nd++].text = h | 1;	/* never 0, which means "no such id" */
	}
	sqlite3_finalize(all);
	if (nd == 0) {
		fprintf(stderr, "bench_known_item: the index is empty\n");
		return 1;
	}
	qsort(docs, nd, sizeof(*docs), by_id);
	one = prep(db, one_sql);
	df = prep(db, df_sql);
	ms = prep(db, match_sql);
	if (tsv)
		fprintf(tsv, "target\tcopies\tmatches\tquery\tengine\tnewest500\tbm25\tbm25_plain\t"
		    "newest\tprior\n");
	for (size_t t = 0, tries = 0; t < targets && tries < 10 * targets; tries++) {
		const struct doc *d = &docs[next_rand() % nd];
		size_t rank[R_COUNT] = { 0 }, n, copies = 0;
		struct match *m;
		struct mb_query q;
		char text[256];

		if (!recall_query(one, df, d->id, text))
			continue;
		mb_query_init(&q);
		if (mb_query_compile(text, strlen(text), &q, &err) == -1 || q.match == NULL) {
			mb_query_release(&q);
			err = (struct mb_err){ 0 };
			continue;
		}
		n = matches_of(ms, q.match, &m);
		sql_ranks(m, n, docs, nd, d->text, rank);
		rank[R_ENGINE] = engine_rank(idx, &q, docs, nd, d->text);
		same += rank[R_ENGINE] == rank[R_BM25];
		for (size_t i = 0; i < nd; i++)
			copies += docs[i].text == d->text;
		for (int r = 0; r < R_COUNT; r++) {
			rr[r] += rank[r] ? 1.0 / (double)rank[r] : 0.0;
			at1[r] += rank[r] == 1;
			at10[r] += rank[r] >= 1 && rank[r] <= 10;
			at20[r] += rank[r] >= 1 && rank[r] <= 20;
		}
		if (tsv)
			fprintf(tsv, "%lld\t%zu\t%zu\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\n",
			    (long long)d->id, copies, n, text, rank[R_ENGINE], rank[R_NEWEST500],
			    rank[R_BM25], rank[R_PLAIN], rank[R_NEWEST], rank[R_PRIOR]);
		free(m);
		mb_query_release(&q);
		t++;
		done++;
	}
	printf("%zu targets from %zu messages (seed %s); a hit on any copy of the target's "
	    "subject and body counts, and ranks count distinct texts; the engine agrees with "
	    "bm25() on %zu of them.",
	    done, nd, argv[3], same);
	if (depth != SIZE_MAX)
		printf(" Each order's first %zu hits are looked at (KNOWN_ITEM_DEPTH): a target "
		    "further down counts as not found.", depth);
	printf("\n\n");
	printf("| order | MRR | success@1 | success@10 | success@20 |\n|---|---|---|---|---|\n");
	for (int r = 0; r < R_COUNT; r++)
		printf("| %s | %.3f | %.3f | %.3f | %.3f |\n", r_names[r], rr[r] / (double)done,
		    (double)at1[r] / (double)done, (double)at10[r] / (double)done,
		    (double)at20[r] / (double)done);
	sqlite3_finalize(one);
	sqlite3_finalize(df);
	sqlite3_finalize(ms);
	if (tsv)
		fclose(tsv);
	free(docs);
	mb_index_close(&idx);
	return done == targets ? 0 : 1;
}
