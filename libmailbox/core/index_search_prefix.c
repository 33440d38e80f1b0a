/*
 * A prefix (`spam*`) ranked without FTS5's prefix read (docs/index.md,
 * "Prefixes").
 *
 * FTS5 answers a prefix by merging the doclists of every word that starts
 * with it into one, positions and all, when a statement starts: at 100,000
 * messages that merge is half of `spam*`'s CPU, and it would be paid again
 * for every range of ids a ranked walk reads.  So the prefix is read as
 * its words instead, in two parts.
 *
 *   - The words syncd bounds (rank_terms, the frequent ones): their rows
 *     are walked through the block bounds (index_search_blocks.c), the OR
 *     of those words a range at a time, a block's bound summed over them.
 *   - The other words, found in the index's vocabulary
 *     (messages_fts_terms, migrations/0017) by seeks around the bounded
 *     ones (cover): the rows that hold any of them are ranked first, in
 *     full, by two statements (those rows with a bounded word too, whose
 *     hits are then all the statement's phrases', then the rest of them).
 *     The first's ids are kept, and the second and the walk skip them.
 *
 * A row's hits of all the words are its hits of the prefix (a token is at
 * one position, and no word of this tokenizer's is at the position of
 * another that could share the prefix: only digit runs are colocated, and
 * a prefix with a letter is not theirs).  So each row gets the score
 * bm25() gives it for the prefix, with the prefix's statistics (its IDF
 * over the rows that hold any of its words), and the page is the same.
 *
 * Each word is matched as a raw term (MB_FTS_RAW_TERM): as the index
 * holds it, since porter's stem of a stem is not always itself.
 *
 * The prefix's rows, for its IDF, are counted through the same words on
 * a first search (idx_prefix_rows): the bounded words' rows and the other
 * words' rows without a bounded one, rowids only, where FTS5 would merge
 * every doclist of the prefix twice to count them.
 *
 * The walk does not serve (the caller reads every match): a prefix of
 * digits only, a phrase ending in a prefix, no bounded word or more than
 * IDX_PREFIX_BOUNDED, none holding idx_rank_prefix_min_share of the
 * prefix's rows, more than IDX_PREFIX_PHRASES phrases of the other
 * words or IDX_PREFIX_SEEKS seeks to find them, filters, or an index from
 * before migration 0017.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "search-private.h"

/* The first word of the index at or after ?1 (one seek into the vocabulary). */
static const char word_sql[] = "SELECT term FROM messages_fts_terms WHERE term >= ?1 LIMIT 1";
/*
 * The bounded words in [?1, ?2): those that start with a prefix, each with
 * the rows that held it when syncd chose the words, and the highest id then.
 */
static const char bounded_sql[] =
	"SELECT t.term, t.docs, s.terms_rows FROM rank_terms AS t, rank_state AS s "
	"WHERE t.term >= ?1 AND t.term < ?2 ORDER BY t.term";
static const char kept_sql[] = "SELECT mb_bm25_kept(?1, ?2)";
static const char rank_sql[] =
	"SELECT rowid, mb_bm25_top(messages_fts, ?1, ?9, " IDX_RANK_WEIGHTS ") "
	"FROM messages_fts WHERE messages_fts MATCH ?1";
/* The same with the query's filters, over ids ?22 to ?23 (a wide folder's run, or all). */
static const char rank_sql_filtered[] = SEARCH_RANK_RANGE_FILTERED;

char *
idx_prefix_text(const char *match)
{
	size_t n = strlen(match);
	char *t, *o;
	const char *p;

	if (n < 3 || match[0] != '"' || match[n - 2] != '"' || match[n - 1] != '*')
		return NULL;
	t = o = mb_xmalloc(n);
	for (p = match + 1; p < match + n - 2; p++) {
		if (*p == '"' && p[1] != '"')
			break;	/* a quote ends the phrase before the end */
		if (*p == '"')
			p++;
		*o++ = *p;
	}
	*o = '\0';
	if (p != match + n - 2) {
		free(t);
		return NULL;
	}
	return t;
}

/* Free the words prefix_bounded() listed, the walk's too (n of them). */
static void
words_free(char **words, int n)
{
	for (int i = 0; i < n; i++)
		free(words[i]);
	free(words);
}

void
idx_prefix_release(struct idx_prefix *p)
{
	words_free(p->bounded, p->n_bounded);
	free(p->bounded_match);
	free(p->rare_any);
	free(p->rare_both);
	free(p->every);
	memset(p, 0, sizeof(*p));
}

/*
 * Append the first len bytes of word to a MATCH expression of ORed phrases,
 * as a raw term (MB_FTS_RAW_TERM: the bytes themselves, not what the
 * tokenizer would make of them), a prefix when star; b has no cap, so
 * appends cannot fail.
 */
static void
or_raw(struct mb_buf *b, const char *word, size_t len, bool star)
{
	if (b->len > 0)
		(void)mb_buf_adds(b, " OR ");
	(void)mb_fts_raw_term(b, word, len);
	if (star)
		(void)mb_buf_addc(b, '*');
}

/* "(a) op (b)" (owned by the caller). */
static char *
match_join(const char *a, const char *op, const char *b)
{
	struct mb_buf out;

	mb_buf_init(&out, SIZE_MAX);
	(void)mb_buf_addf(&out, "(%s) %s (%s)", a, op, b);
	return mb_buf_detach(&out, NULL);
}

/* The bytes of the UTF-8 character whose first byte is c (1 for a byte that starts none). */
static size_t
char_len(unsigned char c)
{
	return c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

/* Listing a prefix's phrases by seeks into the index's vocabulary. */
struct lister {
	sqlite3_stmt	*word;		/* word_sql */
	char *const	*bounded;	/* the bounded words that start with the prefix */
	int		 n_bounded;
	struct mb_buf	*rare;		/* the phrases of the other words, ORed */
	int		 n_phrases, n_seeks;
	int		 rc;		/* SQLITE_OK, or a failed seek's result code */
};

/*
 * The first word of the index at or after key (key_len bytes, NULs and
 * all) into *word_r (owned by the caller; NULL past the last word); false
 * on a failure or past IDX_PREFIX_SEEKS.
 */
static bool
seek(struct lister *l, const char *key, size_t key_len, char **word_r)
{
	int rc;

	*word_r = NULL;
	if (++l->n_seeks > IDX_PREFIX_SEEKS)
		return false;
	sqlite3_reset(l->word);
	sqlite3_bind_text(l->word, 1, key, (int)key_len, SQLITE_TRANSIENT);
	rc = sqlite3_step(l->word);
	if (rc == SQLITE_ROW && sqlite3_column_text(l->word, 0) != NULL)
		*word_r = mb_xstrdup((const char *)sqlite3_column_text(l->word, 0));
	sqlite3_reset(l->word);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		l->rc = rc;
	return rc == SQLITE_ROW || rc == SQLITE_DONE;
}

/* Whether a bounded word starts with the len bytes at pre; *exact_r: one is them. */
static bool
bounded_under(const struct lister *l, const char *pre, size_t len, bool *exact_r)
{
	bool any = false;

	*exact_r = false;
	for (int i = 0; i < l->n_bounded; i++) {
		if (strncmp(l->bounded[i], pre, len) != 0 || strlen(l->bounded[i]) < len)
			continue;
		any = true;
		*exact_r = *exact_r || strlen(l->bounded[i]) == len;
	}
	return any;
}

/* Whether word starts with the len bytes at pre and is longer. */
static bool
longer_under(const char *word, const char *pre, size_t len)
{
	return word != NULL && strlen(word) > len && memcmp(word, pre, len) == 0;
}

static bool
add_phrase(struct lister *l, const char *pre, size_t len, bool star)
{
	or_raw(l->rare, pre, len, star);
	return ++l->n_phrases <= IDX_PREFIX_PHRASES;
}

/*
 * The fewest phrases that match exactly the index's words that start with
 * the len bytes at pre (one at least does) and are not bounded, into
 * l->rare; false when cut short (a failure, or a cap).  Where no bounded
 * word starts with pre, one prefix phrase pre* (FTS5 merges its few rows'
 * doclists); else pre itself when it is a word and not bounded, and each
 * group of words sharing the next character, in turn, each found by one
 * seek past the last group.  So `spam*` with spam and spamassassin bounded
 * is spamb*, spamc*, ..., spamag*, spamass (a word), spamassassind*, ...:
 * about 20 phrases for 43 words, listed without reading every word, where a
 * phrase a word cost each row of the statement about twice as much.
 */
static bool
cover(struct lister *l, const char *pre, size_t len)
{
	bool exact, ok = true;
	char *w, *key;
	size_t key_len;

	if (!bounded_under(l, pre, len, &exact))
		return add_phrase(l, pre, len, true);
	if (!seek(l, pre, len, &w))
		return false;
	key = mb_xmalloc(len + 6);
	memcpy(key, pre, len);
	key[len] = '\0';	/* pre and a NUL: the least text after pre */
	key_len = len + 1;
	if (w != NULL && strlen(w) == len && memcmp(w, pre, len) == 0) {
		free(w);
		w = NULL;
		ok = (exact || add_phrase(l, pre, len, false)) && seek(l, key, key_len, &w);
	}
	while (ok && longer_under(w, pre, len)) {
		size_t left = strlen(w + len), n = char_len((unsigned char)w[len]);

		n = n < left ? n : left;	/* a character cut short: its bytes */
		ok = cover(l, w, len + n);
		/* past every word that starts with the group's character (UTF-8 has no 0xff) */
		memcpy(key + len, w + len, n);
		key[len + n] = '\xff';
		key_len = len + n + 1;
		free(w);
		w = NULL;
		ok = ok && seek(l, key, key_len, &w);
	}
	free(w);
	free(key);
	return ok;
}

/*
 * The bounded words (rank_terms) that start with prefix, sorted, into
 * *words_r (owned by the caller, *n_r of them, even on failure); *ok_r
 * false when there are more than IDX_PREFIX_BOUNDED, or when none of them
 * holds about need rows now (its rows when chosen, scaled by how far the
 * ids have grown since to max_id; 0: not scaled).  *most_r (may be NULL):
 * the most rows one of them holds so (of the first IDX_PREFIX_BOUNDED + 1
 * when there are more), 0 for none; *most_at_r (may be NULL): which one
 * (-1 for none).
 */
static int
prefix_bounded(struct mb_index *idx, const char *prefix, int64_t need, int64_t max_id,
    char ***words_r, int *n_r, bool *ok_r, double *most_r, int *most_at_r,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, bounded_sql, err);
	size_t len = strlen(prefix);
	char *end = mb_xmalloc(len + 1);
	double most = 0.0;
	int rc, most_at = -1;

	*words_r = NULL;
	*n_r = 0;
	*ok_r = false;
	if (most_at_r != NULL)
		*most_at_r = -1;
	if (st == NULL) {
		free(end);
		return -1;
	}
	memcpy(end, prefix, len);
	end[len] = '\xff';	/* past every word that starts with prefix */
	sqlite3_bind_text(st, 1, prefix, (int)len, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, end, (int)len + 1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n_r <= IDX_PREFIX_BOUNDED) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		int64_t then = sqlite3_column_int64(st, 2);
		double now = (double)sqlite3_column_int64(st, 1) *
		    (then > 0 && max_id > then ? (double)max_id / (double)then : 1.0);

		*words_r = mb_xrealloc(*words_r, (size_t)(*n_r + 1) * sizeof(**words_r));
		(*words_r)[(*n_r)++] = mb_xstrdup(t != NULL ? t : "");
		if (now > most || most_at < 0) {
			most = now;
			most_at = *n_r - 1;
		}
	}
	idx_stmt_done(st);
	free(end);
	if (most_r != NULL)
		*most_r = most;
	if (most_at_r != NULL)
		*most_at_r = most_at;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "search: a prefix's bounded words", err);
	*ok_r = *n_r <= IDX_PREFIX_BOUNDED && most >= (double)need;
	return 0;
}

/*
 * The prefix phrase text as the index holds its words' starts (the query
 * tokenizer's prefix token; owned by the caller), or NULL when there is no
 * tokenizer or it is digits only: those could be a colocated digit run's
 * prefix too, whose rows' hits are not the words' (the file's comment).
 */
static char *
prefix_token(struct mb_index *idx, const char *text)
{
	fts5_tokenizer tk;
	Fts5Tokenizer *t = NULL;
	char *prefix;
	bool letter = false;

	if (mb_fts_tokenizer(idx->db, &tk, &t) != 0)
		return NULL;
	prefix = mb_fts_single_token(&tk, t, text, FTS5_TOKENIZE_QUERY | FTS5_TOKENIZE_PREFIX);
	tk.xDelete(t);
	for (const char *c = prefix; c != NULL && *c != '\0'; c++)
		letter = letter || *c < '0' || *c > '9';
	if (!letter) {
		free(prefix);
		return NULL;
	}
	return prefix;
}

int
idx_prefix_words(struct mb_index *idx, const char *text, int64_t need, int64_t max_id,
    struct idx_prefix *p, bool *ok_r, struct mb_err *err)
{
	struct mb_err ignored = { 0 };
	struct mb_buf bounded_or, rare;
	/* an index from before migration 0017 has no vocabulary: read every match */
	struct lister l = { .word = idx_stmt_sql(idx, word_sql, &ignored), .rare = &rare,
	    .rc = SQLITE_OK };
	char *prefix;
	int rc;

	memset(p, 0, sizeof(*p));
	*ok_r = false;
	if (l.word == NULL || (prefix = prefix_token(idx, text)) == NULL) {
		idx_stmt_done(l.word);
		return 0;	/* no vocabulary, or digits only: not served */
	}
	mb_buf_init(&bounded_or, SIZE_MAX);
	mb_buf_init(&rare, SIZE_MAX);
	rc = prefix_bounded(idx, prefix, need, max_id, &p->bounded, &p->n_bounded, ok_r, NULL,
	    &p->most, err);
	/* no bounded word: nothing to walk */
	if (*ok_r && p->n_bounded > 0) {
		l.bounded = p->bounded;
		l.n_bounded = p->n_bounded;
		*ok_r = cover(&l, prefix, strlen(prefix));
		idx_stmt_done(l.word);
		if (l.rc != SQLITE_OK)
			rc = idx_sqlerr(idx, l.rc, "search: a prefix's words", err);
	} else
		*ok_r = false;
	if (*ok_r && rc == 0) {
		for (int i = 0; i < p->n_bounded; i++)
			or_raw(&bounded_or, p->bounded[i], strlen(p->bounded[i]), false);
		p->bounded_match = mb_buf_detach(&bounded_or, NULL);
		if (rare.len > 0) {
			p->rare_both = match_join(rare.data, "AND", p->bounded_match);
			p->every = match_join(rare.data, "OR", p->bounded_match);
			p->rare_any = mb_buf_detach(&rare, NULL);
		} else
			p->every = mb_xstrdup(p->bounded_match);
	} else {
		*ok_r = false;
		idx_prefix_release(p);
	}
	mb_buf_release(&bounded_or);
	mb_buf_release(&rare);
	free(prefix);
	return rc;
}

/* The rows of ?1 (a MATCH of raw words), rowids only: no hits read. */
static const char count_sql[] = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1";

/* The rows of match into *rows_r; SQLite's result code. */
static int
count_rows(struct mb_index *idx, const char *match, int64_t *rows_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, count_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*rows_r += sqlite3_column_int64(st, 0);
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, "search: a prefix's rows", err);
}

/*
 * The rows holding any of p's bounded words, added to *rows_r: the most
 * frequent one's (when syncd chose them: p->most) from the builder's counts
 * by chunk (where they are current), then the others' rows without it,
 * counted by FTS5, which steps through their doclists and seeks in its.  `spam*` at 1,000,000 messages
 * steps through `spam`'s 98,089 rows instead of those and `spamassassin`'s
 * 479,659: its first search 111 → 97 ms of CPU (docs/benchmarks.md, "A
 * prefix's rows counted from its most frequent word").  Without current
 * counts FTS5 counts the words ORed.  0, or -1 with err.
 */
static int
bounded_rows(struct mb_index *idx, const struct idx_prefix *p, int64_t *rows_r,
    struct mb_err *err)
{
	int64_t most = -1;
	int at = p->most, rc;
	char *others, *rest;
	struct mb_buf or;

	if (at >= 0 && idx_rank_token_rows(idx, p->bounded[at], &most, err) == -1)
		return -1;
	if (most < 0)	/* counts not current: FTS5 counts them all */
		return count_rows(idx, p->bounded_match, rows_r, err);
	*rows_r += most;
	if (p->n_bounded == 1)
		return 0;
	mb_buf_init(&or, SIZE_MAX);
	for (int i = 0; i < p->n_bounded; i++)
		if (i != at)
			or_raw(&or, p->bounded[i], strlen(p->bounded[i]), false);
	others = mb_buf_detach(&or, NULL);
	mb_buf_init(&or, SIZE_MAX);
	or_raw(&or, p->bounded[at], strlen(p->bounded[at]), false);
	rest = match_join(others, "NOT", or.data);
	mb_buf_release(&or);
	rc = count_rows(idx, rest, rows_r, err);
	free(others);
	free(rest);
	return rc;
}

int
idx_prefix_rows(struct mb_index *idx, const char *match, int64_t *rows_r, struct mb_err *err)
{
	struct idx_prefix p;
	char *text = idx_prefix_text(match), *rare_only = NULL;
	int64_t rows = 0;
	bool ok = false;
	int rc;

	*rows_r = -1;
	if (text == NULL)
		return 0;	/* not one prefix */
	rc = idx_prefix_words(idx, text, 0, 0, &p, &ok, err);
	free(text);
	if (rc == -1 || !ok)
		return rc;	/* no bounded word, or too many words: FTS5 counts */
	rc = bounded_rows(idx, &p, &rows, err);
	/* the rows of the other words without a bounded one: the rest */
	if (rc == 0 && p.rare_any != NULL) {
		rare_only = match_join(p.rare_any, "NOT", p.bounded_match);
		rc = count_rows(idx, rare_only, &rows, err);
	}
	if (rc == 0)
		*rows_r = rows;
	free(rare_only);
	idx_prefix_release(&p);
	return rc;
}

/*
 * The statistics of the prefix ?1 from its rows counted through its words
 * (?2's known), started on the MATCH of one of its words (?3) instead of
 * the prefix, which FTS5 would merge (fts_rank.c, mb_bm25_stats).
 */
static const char counted_stats_sql[] =
	"SELECT mb_bm25_stats(messages_fts, ?1, ?2, 1) FROM messages_fts "
	"WHERE messages_fts MATCH ?3 LIMIT 1";

/* The statistics of match counted (idx_prefix_stats_counted), started on word's MATCH. */
static int
stats_counted_on(struct mb_index *idx, const char *match, const char *word,
    struct idx_rank_stats *stats, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, counted_stats_sql, err);
	struct mb_buf phrase;
	int rc;

	if (st == NULL)
		return -1;
	mb_buf_init(&phrase, SIZE_MAX);
	or_raw(&phrase, word, strlen(word), false);
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 2, stats, IDX_RANK_STATS, NULL);
	sqlite3_bind_text(st, 3, phrase.data, (int)phrase.len, SQLITE_STATIC);
	rc = sqlite3_step(st);	/* no row when the word has none now: left unset */
	idx_stmt_done(st);
	mb_buf_release(&phrase);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    idx_sqlerr(idx, rc, "search: a prefix's counted statistics", err);
}

int
idx_prefix_stats_counted(struct mb_index *idx, const char *match, struct idx_rank_stats *stats,
    struct mb_err *err)
{
	char *text, *prefix, **bounded = NULL;
	int n_bounded = 0, rc = 0;
	bool ok = false;

	if (stats->known == NULL || stats->known->n < 1 || stats->known->hits[0] < 0 ||
	    stats->known->match == NULL || strcmp(stats->known->match, match) != 0 ||
	    (text = idx_prefix_text(match)) == NULL)
		return 0;	/* not counted, or counted for another MATCH: left unset */
	prefix = prefix_token(idx, text);
	free(text);
	/* its bounded words: the first has rows, a cheap MATCH to start on */
	if (prefix != NULL)
		rc = prefix_bounded(idx, prefix, 0, 0, &bounded, &n_bounded, &ok, NULL, NULL, err);
	if (rc == 0 && n_bounded > 0)
		rc = stats_counted_on(idx, match, bounded[0], stats, err);
	words_free(bounded, n_bounded);
	free(prefix);
	return rc;
}

/*
 * What listing and reading a prefix's words cost, in rows of FTS5's merge
 * of the prefix's doclists (about 0.1 us a row at 1,000,000 messages): a
 * word listed is a seek into the vocabulary (about 20 us), a word sought at
 * a run of ids or at one id a seek into its doclist (about 4 us), and a
 * row stepped through an OR of the words costs about a 32nd of a merged
 * row a word more than a row of the merged list (docs/benchmarks.md, "A
 * prefix read through its words over a few ids").
 */
#define WORD_LIST_ROWS	200
#define WORD_SEEK_ROWS	40
#define WORD_STEP_SHARE	32

/*
 * The most rows any word syncd bounds (rank_terms) that starts with prefix
 * held when the words were chosen, into *rows_r (0: none): a prefix has
 * at least about that many rows, known without FTS5's merge.
 */
static int
prefix_rows_least(struct mb_index *idx, const char *prefix, int64_t *rows_r,
    struct mb_err *err)
{
	char **words = NULL;
	int n_words = 0, rc;
	double most = 0.0;
	bool ok = false;

	rc = prefix_bounded(idx, prefix, 0, 0, &words, &n_words, &ok, &most, NULL, err);
	words_free(words, n_words);
	*rows_r = (int64_t)most;
	return rc;
}

int
idx_prefix_rows_least(struct mb_index *idx, const char *match, int64_t *rows_r,
    struct mb_err *err)
{
	char *text = idx_prefix_text(match), *prefix = text != NULL ? prefix_token(idx, text) : NULL;
	int rc = 0;

	*rows_r = 0;
	if (prefix != NULL)
		rc = prefix_rows_least(idx, prefix, rows_r, err);
	free(prefix);
	free(text);
	return rc;
}

int
idx_prefix_read_words(struct mb_index *idx, const char *match, int64_t n_reads, int64_t rows,
    double share, char **words_r, struct mb_err *err)
{
	struct mb_err ignored = { 0 };
	struct lister l = { .rc = SQLITE_OK };
	struct mb_buf words;
	char *text, *prefix = NULL, *key, *w = NULL;
	size_t len, key_len;
	bool ok;
	int64_t most;
	int n = 0;

	*words_r = NULL;
	if ((text = idx_prefix_text(match)) == NULL)
		return 0;	/* not one prefix */
	/* an index from before migration 0017 has no vocabulary: merged */
	if ((l.word = idx_stmt_sql(idx, word_sql, &ignored)) != NULL)
		prefix = prefix_token(idx, text);
	free(text);
	/* rows unknown: at least those of its most frequent word syncd bounds */
	if (prefix != NULL && rows < 0 && prefix_rows_least(idx, prefix, &rows, err) == -1) {
		free(prefix);
		idx_stmt_done(l.word);
		return -1;
	}
	most = rows / (WORD_LIST_ROWS + WORD_SEEK_ROWS * (n_reads > 0 ? n_reads : 1) +
	    (int64_t)((double)rows * share) / WORD_STEP_SHARE);
	if (most > IDX_PREFIX_WORDS)
		most = IDX_PREFIX_WORDS;
	if (prefix == NULL || most < 1) {
		free(prefix);
		idx_stmt_done(l.word);
		return 0;	/* digits only, or the merge costs less */
	}
	len = strlen(prefix);
	mb_buf_init(&words, SIZE_MAX);
	key = mb_xstrdup(prefix);
	key_len = len;
	/* each word after the last: the word and a NUL, the least text after it */
	while ((ok = seek(&l, key, key_len, &w)) && w != NULL && strncmp(w, prefix, len) == 0 &&
	    ++n <= most) {
		or_raw(&words, w, strlen(w), false);
		free(key);
		key_len = strlen(w) + 1;
		key = mb_xmalloc(key_len);
		memcpy(key, w, key_len);	/* its NUL too */
		free(w);
		w = NULL;
	}
	free(w);
	free(key);
	free(prefix);
	idx_stmt_done(l.word);
	if (l.rc != SQLITE_OK) {
		mb_buf_release(&words);
		return idx_sqlerr(idx, l.rc, "search: a prefix's words", err);
	}
	if (ok && n > 0 && n <= most)
		*words_r = mb_buf_detach(&words, NULL);
	mb_buf_release(&words);
	return 0;
}

int
idx_rank_stats_kept(struct mb_index *idx, const char *match, struct idx_rank_stats *stats,
    bool *kept_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, kept_sql, err);
	int rc;

	*kept_r = false;
	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 2, stats, IDX_RANK_STATS, NULL);
	rc = sqlite3_step(st);
	*kept_r = rc == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, "search: kept statistics", err);
}

int
idx_rank_rows_kept(struct mb_index *idx, const char *match, int64_t *rows_r, bool *kept_r,
    struct mb_err *err)
{
	struct idx_rank_stats stats = { 0 };

	*rows_r = 0;
	if (idx_rank_stats_kept(idx, match, &stats, kept_r, err) == -1)
		return -1;
	for (int i = 0; *kept_r && i < stats.n_phrase; i++)
		*rows_r += stats.n_hit[i];
	return 0;
}

int
idx_prefix_stats_kept(struct mb_index *idx, const char *match, struct idx_rank_stats *stats,
    bool *kept_r, struct mb_err *err)
{
	if (idx_rank_stats_kept(idx, match, stats, kept_r, err) == -1)
		return -1;
	*kept_r = *kept_r && stats->n_phrase == 1;
	return 0;
}

static int
ids_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	return (a > b) - (a < b);
}

/* search-private.h */
void
idx_ids_sort(struct idx_ids *ids)
{
	bool sorted = true;

	for (size_t i = 1; sorted && i < ids->n; i++)
		sorted = ids->ids[i - 1] < ids->ids[i];
	if (!sorted)	/* FTS5 gives ids ascending: this is only in case */
		qsort(ids->ids, ids->n, sizeof(*ids->ids), ids_cmp);
}

/* search-private.h */
void
idx_ids_add(struct idx_ids *ids, int64_t id)
{
	if (ids->n == ids->cap) {
		ids->cap = ids->cap ? 2 * ids->cap : 256;
		ids->ids = mb_xrealloc(ids->ids, ids->cap * sizeof(*ids->ids));
	}
	ids->ids[ids->n++] = id;
}

/* search-private.h */
int
idx_rank_statement(struct mb_index *idx, const char *match, const struct idx_rank_filters *filters,
    struct idx_rank_set *set, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, filters != NULL ? rank_sql_filtered : rank_sql, err);
	struct idx_id_run every = { 0, INT64_MAX };
	const struct idx_id_run *runs = &every;
	size_t n_runs = 1;
	int rc = SQLITE_OK;

	if (st == NULL)
		return -1;
	if (filters != NULL) {
		idx_search_bind(st, filters->q, filters->folder_id);
		if (filters->n_runs > 0) {
			runs = filters->runs;
			n_runs = filters->n_runs;
		}
	}
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 9, &set->floor, IDX_RANK_FLOOR, NULL);
	for (size_t i = 0; i < n_runs && rc == SQLITE_OK; i++) {
		struct idx_rank_memo memo = { 0 };	/* a statement's own */

		sqlite3_reset(st);
		if (filters != NULL) {
			sqlite3_bind_int64(st, 22, runs[i].lo);
			sqlite3_bind_int64(st, 23, runs[i].hi);
		}
		set->floor.memo = filters != NULL ? &memo : NULL;
		rc = idx_rank_collect(st, filters != NULL, set);
		set->floor.memo = NULL;
	}
	idx_stmt_done(st);
	if (rc == SQLITE_OK && set->n > set->keep)
		idx_rank_trim(set);
	return rc == SQLITE_OK ? 0 : idx_sqlerr(idx, rc, "search: a part of the words", err);
}

int
idx_prefix_rank_rare(struct mb_index *idx, const struct idx_prefix *p,
    const struct idx_rank_filters *filters, struct idx_rank_set *set,
    struct idx_rank_prefix *score, struct idx_ids *both, struct mb_err *err)
{
	int rc;

	if (p->rare_any == NULL)
		return 0;	/* every word is bounded */
	/* the rows with a bounded word too: their ids are the walk's to skip */
	set->seen = both;
	rc = idx_rank_statement(idx, p->rare_both, filters, set, err);
	set->seen = NULL;
	if (rc == -1)
		return -1;
	idx_ids_sort(both);
	score->skip = both->ids;
	score->n_skip = both->n;
	/*
	 * Then every row of the rarer words, skipping those: the rest hold no
	 * bounded word.  Asked as (rarer) NOT (bounded), FTS5 stepped through
	 * the bounded words' doclists for every row: at 1,000,000 messages
	 * spam*'s 11,444 such rows took 16 ms that way (docs/benchmarks.md,
	 * "The rarer words' rows without NOT").
	 */
	return idx_rank_statement(idx, p->rare_any, filters, set, err);
}
