/*
 * The search engine (include/mailbox/search.h): ranking exact over every
 * match, ties, paging, snippets and totals over the index.  A page of filters alone
 * is index_search_list.c's; the scope, the shared filter SQL and the count
 * are index_search_scope.c's (search-private.h).  Every statement is cached on
 * the handle (idx_stmt_sql) and every value reaches SQLite through a bind.
 * docs/mcpd.md, "Performance", has the measurements behind the choices.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/labels.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"
#include "search-private.h"

/*
 * Ranked search, exact over every match (docs/index.md, "Ranking"): the
 * order is the BM25 score with the column weights below, then the date
 * (newest first, undated last), then the id (highest first), and the page
 * is computed from every message the query matches, however many.
 *
 * One statement walks the matches (filters applied) and scores each with
 * mb_bm25_top(); the engine keeps only the rows that can still be on the
 * page (rank_collect): the best offset + limit so far and everything tied
 * with the last of them.  The score of that last row is the floor
 * (struct idx_rank_floor, bound as ?9), raised as rows arrive; a row that
 * cannot reach it even at the shortest length its hits allow is not scored
 * to the end (fts_rank.c), which spares the length lookup for most matches
 * of a common word.  Every
 * match is still counted, so the total is exact.  Where the block bounds
 * serve the query (index_search_blocks.c) most matches are never read; with
 * filters the total is then counted up to a cap.
 *
 * Until 2026-12 only the newest 500 matches were ranked: fast, but for a
 * word in more messages the best match was often not on the page (an exact
 * BM25 top 20 overlapped it by 0.28 at 100,000 messages).
 *
 * "date" is sort_date throughout (SEARCH_DATE): the Date header when it is
 * sane, else INTERNALDATE (migrations/0004_answers.sql, docs/normaliser.md).
 * Only ties need the date: the statement without filters reads FTS5 alone,
 * and dates are read afterwards for the tie groups that touch the page
 * (rank_break_ties), so messages is read only for the page's rows.
 */
/* The column weights: IDX_RANK_WEIGHTS (index-private.h). */
#define RANK_BM25		"mb_bm25_top(messages_fts, ?1, ?9, " IDX_RANK_WEIGHTS ")"
static const char search_sql_rank[] =
	"SELECT messages_fts.rowid, " RANK_BM25 ", " SEARCH_DATE " "
	"FROM messages_fts CROSS JOIN messages AS m ON m.id = messages_fts.rowid "
	"WHERE messages_fts MATCH ?1 AND " SEARCH_FILTERS "AND " SEARCH_DATES;
/*
 * The same reading the filters' columns from messages_search_filter
 * (migrations/0006): a row of messages holds its body, so reading it for
 * every match of a common word cost about 2 microseconds a match; the
 * narrow index packs a hundred rows a page.  For every query the index
 * covers (idx_search_covered).  The date is spelled over the index's own
 * columns (SEARCH_DATE_COVERED): naming sort_date, a generated column,
 * makes SQLite read the table row after all (migrations/0012).  The score
 * is asked in WHERE as well, before the join (struct idx_rank_memo): once
 * the count's cap has passed, a row that cannot reach the page costs no
 * seek into that index (`spam* after:2002-09-01` at 1,000,000 messages:
 * docs/benchmarks.md, "Filtered searches read whole").
 */
#define SEARCH_SQL_RANK_IX \
	"SELECT messages_fts.rowid, " RANK_BM25 ", " SEARCH_DATE_COVERED " " \
	"FROM messages_fts CROSS JOIN messages AS m INDEXED BY messages_search_filter " \
	"ON m.id = messages_fts.rowid " \
	"WHERE messages_fts MATCH ?1 AND " RANK_BM25 " IS NOT NULL AND " \
	SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
static const char search_sql_rank_ix[] = SEARCH_SQL_RANK_IX;
/*
 * The same over a run of the ids a narrow scope's rows lie in (?22 to ?23,
 * index_search_narrow.c), which FTS5 seeks to in each doclist: read once
 * for each run.
 */
static const char search_sql_rank_ix_span[] =
	SEARCH_SQL_RANK_IX "AND messages_fts.rowid BETWEEN ?22 AND ?23";
/*
 * id: or thread: beside words name a handful of rows: those are read
 * through their index and each is looked up in FTS5 (a seek in the words'
 * doclists), instead of walking every match of the words.
 */
static const char search_sql_rank_msgid[] =
	"SELECT m.id, " RANK_BM25 ", " SEARCH_DATE " "
	"FROM messages AS m INDEXED BY messages_message_id CROSS JOIN messages_fts "
	"ON messages_fts.rowid = m.id "
	"WHERE m.message_id = ?13 AND messages_fts MATCH ?1 AND " SEARCH_FILTERS
	"AND " SEARCH_DATES;
static const char search_sql_rank_thread[] =
	"SELECT m.id, " RANK_BM25 ", " SEARCH_DATE " "
	"FROM messages AS m INDEXED BY messages_thread CROSS JOIN messages_fts "
	"ON messages_fts.rowid = m.id "
	"WHERE m.thread_id = ?14 AND messages_fts MATCH ?1 AND " SEARCH_FILTERS
	"AND " SEARCH_DATES;
/* The same without filters: FTS5 alone (a join would read a messages row
 * for every match, which for a common word cost more than the scoring).
 * Only while every row is current (stale_sql): FTS5 knows no generations. */
static const char search_sql_rank_nf[] =
	"SELECT rowid, " RANK_BM25 " FROM messages_fts WHERE messages_fts MATCH ?1";
static const char date_sql[] = "SELECT " SEARCH_DATE " FROM messages AS m WHERE m.id = ?1";

/*
 * Whether the index holds a row that is not current (an older generation, a
 * folder LIST no longer shows), in two index seeks per folder: a folder's
 * rows are all current exactly when its lowest and its highest UIDVALIDITY
 * rows are.  While none is, a search without filters may read FTS5 alone.
 */
static const char stale_sql[] =
	"SELECT EXISTS (SELECT 1 FROM folders AS f JOIN messages AS m ON m.id IN ("
	"(SELECT id FROM messages WHERE folder_id = f.id ORDER BY uidvalidity LIMIT 1), "
	"(SELECT id FROM messages WHERE folder_id = f.id ORDER BY uidvalidity DESC LIMIT 1)) "
	"WHERE NOT " IDX_CURRENT("m", "f") ")";

static const char hit_sql[] =
	"SELECT m.id, f.name, m.date, m.from_text, m.recipients, m.subject, m.flags, "
	"m.attachment_count, m.thread_id, mb_text(m.body), m.keywords, m.message_id, "
	"m.from_name, m.from_addr, m.to_json, m.internaldate, "
	"m.sort_date IS NOT NULL AND m.sort_date IS m.date, m.sort_date FROM messages AS m "
	"JOIN folders AS f ON f.id = m.folder_id WHERE m.id = ?1";

#define EXCERPT_CHARS	160	/* about what snippet() gives for 16 tokens */

/*
 * Snippets for the returned rows only, in one FTS5 query (?2..?51: the ids;
 * ?52, ?53: the lowest and highest; ?54: the column, see snippet_column).
 * The ids are tested with "+rowid IN": a plain "rowid IN" is handed to FTS5
 * as one lookup per id, each of which reads the doclists again (for a prefix
 * term, merges them: 20 merges a page, 85 ms at 100,000 messages).  FTS5
 * walks the matches between the lowest and the highest id once instead, and
 * mb_snippet() (fts_hits.c: snippet()'s output at the column's first match,
 * without scoring every window against every match) runs for the listed
 * rows only.  ?55: the MATCH is a prefix's words (idx_prefix_read_words),
 * whose phrases mb_snippet_column() counts as the prefix's one.
 */
static const char snippet_sql[] =
	"SELECT rowid, mb_snippet(messages_fts, "
	"CASE WHEN ?54 >= 0 THEN ?54 ELSE mb_snippet_column(messages_fts, ?55) END, 16) "
	"FROM messages_fts "
	"WHERE messages_fts MATCH ?1 AND rowid >= ?52 AND rowid <= ?53 AND +rowid IN (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19"
	", ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35"
	", ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51)";

#define PREVIEW_CHARS	200	/* a page of filters alone shows each body's start */

/* ---- which ids: ranked, or filters alone */


/*
 * The order of "ORDER BY score, date DESC, id DESC" (SQLite puts NULL dates
 * last).  Unread dates compare equal: rank_break_ties() reads them wherever
 * two rows of one score meet on the page.
 */
static int
ranked_cmp(const void *pa, const void *pb)
{
	const struct idx_ranked *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	if (a->date_state != b->date_state)
		return a->date_state < b->date_state ? -1 : 1;
	if (a->date_state == RANK_DATE_SET && a->date != b->date)
		return a->date > b->date ? -1 : 1;
	if (a->id != b->id)
		return a->id > b->id ? -1 : 1;
	return 0;
}

void
idx_rank_trim(struct idx_rank_set *set)
{
	if (set->n > set->keep) {
		double last = idx_rank_select(set->rows, set->n, set->keep - 1);
		size_t n = set->keep;

		/* the rows after the keep-th are no better: keep its ties */
		for (size_t i = set->keep; i < set->n; i++)
			if (set->rows[i].score == last)
				set->rows[n++] = set->rows[i];
		set->n = n;
		set->floor.set = true;
		set->floor.score = last;
	}
	/* a long tie at the cut keeps many rows: cut again only when they double */
	set->trim_at = 2 * (set->n > set->keep ? set->n : set->keep);
}

/* search-private.h */
void
idx_rank_add(struct idx_rank_set *set, int64_t id, double score, bool with_date,
    int64_t date, bool date_null)
{
	struct idx_ranked *r;

	if (set->n == set->cap) {
		set->cap = set->cap ? 2 * set->cap : 64;
		set->rows = mb_xrealloc(set->rows, set->cap * sizeof(*set->rows));
	}
	r = &set->rows[set->n++];
	r->id = id;
	r->score = score;
	r->date = with_date ? date : 0;
	r->date_state = !with_date ? RANK_DATE_UNREAD : date_null ? RANK_DATE_NULL :
	    RANK_DATE_SET;
	if (set->n >= set->trim_at)
		idx_rank_trim(set);
}

int
idx_rank_collect(sqlite3_stmt *st, bool with_date, struct idx_rank_set *set)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		set->matches++;
		if (set->seen != NULL)
			idx_ids_add(set->seen, sqlite3_column_int64(st, 0));
		if (sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;	/* below the floor: mb_bm25_top() did not finish it */
		idx_rank_add(set, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1),
		    with_date, with_date ? sqlite3_column_int64(st, 2) : 0,
		    with_date && sqlite3_column_type(st, 2) == SQLITE_NULL);
	}
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * rows (n, sorted by ranked_cmp) may hold unread dates: put [lo, hi) in the
 * full order.  The range is widened to whole groups of equal scores, the
 * dates of the rows in such a group are read, and the range re-sorted.  A
 * page rarely has a tie, so this usually reads nothing.
 */
static int
rank_break_ties(struct mb_index *idx, struct idx_ranked *rows, size_t n, size_t lo, size_t hi,
    struct mb_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_ROW;

	if (lo >= hi)
		return 0;
	while (lo > 0 && rows[lo - 1].score == rows[lo].score)
		lo--;
	while (hi < n && rows[hi].score == rows[hi - 1].score)
		hi++;
	for (size_t i = lo; i < hi; i++) {
		bool tie = (i > lo && rows[i - 1].score == rows[i].score) ||
		    (i + 1 < hi && rows[i + 1].score == rows[i].score);

		if (!tie || rows[i].date_state != RANK_DATE_UNREAD)
			continue;
		if (st == NULL && (st = idx_stmt_sql(idx, date_sql, err)) == NULL)
			return -1;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, rows[i].id);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			rows[i].date_state = sqlite3_column_type(st, 0) == SQLITE_NULL ?
			    RANK_DATE_NULL : RANK_DATE_SET;
			rows[i].date = sqlite3_column_int64(st, 0);
		} else if (rc == SQLITE_DONE)	/* no row: the page skips it as deleted */
			rows[i].date_state = RANK_DATE_NULL;
		else
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		idx_sqlerr(idx, rc, "search: dates", err);
		idx_stmt_done(st);
		return -1;
	}
	idx_stmt_done(st);
	qsort(rows + lo, hi - lo, sizeof(*rows), ranked_cmp);
	return 0;
}

/* The ids of one page of a search. */
struct search_ids {
	int64_t	ids[MB_SEARCH_MAX_LIMIT];
	double	scores[MB_SEARCH_MAX_LIMIT];	/* ranked: each id's score; else 0 */
	size_t	n;
	int64_t	matches;	/* ranked: every match of the query, counted */
	bool	matches_exact;	/* ranked: false when matches is a lower bound (a cap) */
	int64_t	listed;		/* filters alone: every message that passes, counted; -1: not */
	bool	more;		/* a next page exists */
};

/*
 * For a prefix read over the runs of a narrow scope: its words
 * (idx_prefix_read_words) into *words_r (owned by the caller), and the
 * prefix's statistics into *score, which scores a row's hits of all of
 * them as the prefix's (struct idx_rank_prefix, as the block walk's prefix
 * is scored).  FTS5 merges a prefix's doclists whole when a read starts,
 * whatever its ids: `spam* in:Notes`, a folder of 40 messages, merged
 * 534,419 rows at 1,000,000 messages.  *words_r NULL when q is not one
 * prefix or its words would cost more: one span is read then, from the
 * scope's lowest id to its highest.
 */
static int
prefix_words(struct mb_index *idx, const struct mb_query *q, const struct idx_narrow_ids *scope,
    const struct idx_rank_known *known, char **words_r, struct idx_rank_prefix *score,
    struct mb_err *err)
{
	struct idx_rank_stats stats = { .known = known };
	bool kept = false, any = true;
	int64_t ids = 0;

	*words_r = NULL;
	if (idx_match_plain(q->match) || scope->n_runs == 0)
		return 0;
	for (size_t i = 0; i < scope->n_runs; i++)
		ids += scope->runs[i].hi - scope->runs[i].lo + 1;
	/* the prefix's rows: kept, or counted through its words (idx_rank_known_hits) */
	if (idx_prefix_stats_kept(idx, q->match, &stats, &kept, err) == -1 ||
	    idx_prefix_read_words(idx, q->match, (int64_t)scope->n_runs,
	    kept ? stats.n_hit[0] : known != NULL && known->n == 1 ? known->hits[0] : -1,
	    (double)ids / (double)scope->n, words_r, err) == -1)
		return -1;
	/*
	 * Statistics not kept: from the rows counted, else read once (FTS5
	 * merges the prefix); kept either way.  Only for the words: the read
	 * of the prefix itself makes them.
	 */
	if (*words_r != NULL && !kept &&
	    (idx_prefix_stats_counted(idx, q->match, &stats, err) == -1 || (!stats.set &&
	    idx_rank_query_stats(idx, q->match, &stats, &any, err) == -1))) {
		free(*words_r);
		*words_r = NULL;
		return -1;
	}
	if (*words_r != NULL && (!any || !stats.set || stats.n_phrase != 1)) {
		free(*words_r);		/* nothing matches */
		*words_r = NULL;
	}
	score->idf = stats.idf[0];
	score->avgdl = stats.avgdl;
	return 0;
}

/*
 * Read every match of q into set (the block walk did not serve it): with
 * the lengths a word's fronts prove (idx_rank_min_lengths), the bounds of a
 * filtered walk that gave up (set->whole_bound, freed here), and the ids
 * of a narrow scope (scope; bits NULL: none).  memo: the count of
 * what passes a covered read's filters.
 */
static int
rank_whole(struct mb_index *idx, const struct mb_query *q, int64_t folder_id, bool filtered,
    const struct idx_narrow_ids *scope, struct idx_rank_set *set, struct idx_rank_memo *memo,
    struct mb_err *err)
{
	/* a thread's ids read for a prefix (idx_narrow_thread_ids) take the span's statement */
	const char *sql = q->msgid ? search_sql_rank_msgid :
	    q->thread_id > 0 && scope->bits == NULL ? search_sql_rank_thread :
	    !filtered ? search_sql_rank_nf : !idx_search_covered(q) ? search_sql_rank :
	    scope->bits != NULL || scope->wide ? search_sql_rank_ix_span : search_sql_rank_ix;
	uint32_t *min_len = NULL;
	struct idx_rank_prefix score = { 0 };
	char *words = NULL;
	sqlite3_stmt *st;
	int rc = -1;

	/* a prefix over the runs: its words, where they cost less than its merge */
	if (sql == search_sql_rank_ix_span &&
	    prefix_words(idx, q, scope, set->floor.known, &words, &score, err) == -1)
		goto out;
	/* lengths the word's fronts prove, for the rows whose hits prove little */
	if (sql != search_sql_rank_msgid && sql != search_sql_rank_thread &&
	    idx_rank_min_lengths(idx, q, &min_len, &set->floor.n_min_len, err) == -1)
		goto out;
	if ((st = idx_stmt_sql(idx, sql, err)) == NULL)
		goto out;
	set->floor.block_min_len = min_len;
	set->floor.block_bound = set->whole_bound;
	set->floor.n_blocks = set->whole_blocks;
	set->floor.id_bits = scope->bits;
	set->floor.n_id_bits = scope->n;
	set->floor.memo = sql == search_sql_rank_ix || sql == search_sql_rank_ix_span ? memo : NULL;
	set->floor.prefix = words != NULL ? &score : NULL;
	idx_search_bind(st, q, folder_id);
	if (words != NULL)
		sqlite3_bind_text(st, 1, words, -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 9, &set->floor, IDX_RANK_FLOOR, NULL);
	rc = SQLITE_OK;		/* an empty scope has no run to read */
	if (sql != search_sql_rank_ix_span)
		rc = idx_rank_collect(st, filtered, set);
	else if (idx_match_plain(q->match) || words != NULL)
		/* the runs are apart: no row is read twice */
		for (size_t i = 0; i < scope->n_runs && rc == SQLITE_OK; i++) {
			sqlite3_reset(st);
			sqlite3_bind_int64(st, 22, scope->runs[i].lo);
			sqlite3_bind_int64(st, 23, scope->runs[i].hi);
			rc = idx_rank_collect(st, filtered, set);
		}
	else if (scope->n_runs > 0) {
		/* a prefix merged whole at each read: one span */
		sqlite3_bind_int64(st, 22, scope->runs[0].lo);
		sqlite3_bind_int64(st, 23, scope->runs[scope->n_runs - 1].hi);
		rc = idx_rank_collect(st, filtered, set);
	}
	set->floor.prefix = NULL;
	set->floor.memo = NULL;
	set->floor.block_min_len = NULL;
	set->floor.block_bound = NULL;
	set->floor.id_bits = NULL;
	/* the floor stays bound after the reset, unread: the next use clears it */
	idx_stmt_done(st);
	rc = rc == SQLITE_OK ? 0 : idx_sqlerr(idx, rc, "search: rank", err);
out:
	free(set->whole_bound);
	set->whole_bound = NULL;
	free(min_len);
	free(words);
	return rc;
}

/* How idx_narrow_ids_walked() and idx_narrow_filter_ids() read a scope's ids. */
typedef int scope_read_fn(struct mb_index *, const struct mb_query *, int64_t,
    struct idx_narrow_ids *, bool *, struct mb_err *);

/*
 * The scope's ids read another way (read), into *scope in place of what it
 * held (released) when they serve (*used_r); else *scope as it was.
 */
static int
scope_instead(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    scope_read_fn *read, struct idx_narrow_ids *scope, bool *used_r, struct mb_err *err)
{
	struct idx_narrow_ids d = { 0 };

	if (read(idx, q, folder_id, &d, used_r, err) == -1)
		return -1;
	if (*used_r) {
		idx_narrow_ids_release(scope);
		*scope = d;
	}
	return 0;
}

/*
 * A ranked page: the matches at [offset, offset + limit) in the order of
 * ranked_cmp over every match (rank_set keeps what can be on it).
 */
static int
search_ranked(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    bool filtered, int64_t offset, size_t limit, struct search_ids *pg, struct mb_err *err)
{
	/* idx_page_check() bounds offset; a page that deep keeps every row anyway */
	struct idx_rank_set set = { .keep = (uint64_t)offset < SIZE_MAX / 4 - limit ?
	    (size_t)offset + limit : SIZE_MAX / 4 };
	struct idx_narrow_ids scope = { 0 };
	bool blocks = false, exact = true, narrow = false;
	size_t lo, hi;
	int rc;
	/*
	 * A filtered read (search_sql_rank_ix) counts what passes up to the
	 * count's cap, or one past the page, as a list of filters alone is
	 * counted, and past it joins only the rows that can reach the page.
	 */
	struct idx_rank_memo memo = { .passing = &set.matches,
	    .join_until = set.keep + 1 > MB_SEARCH_COUNT_CAP ? (int64_t)set.keep + 1 :
	    MB_SEARCH_COUNT_CAP };
	struct idx_rank_known known;
	struct idx_rank_lengths lengths;

	set.trim_at = 2 * set.keep;
	/* the bounded words' rows from the builder's counts, for the statistics */
	if (idx_rank_known_hits(idx, q->match, &known, err) == -1)
		return -1;
	set.floor.known = &known;
	/* the rows' lengths the builder kept, a block at a time */
	idx_rank_lengths_init(&lengths, idx);
	set.floor.lengths = &lengths;
	/*
	 * a narrow folder or date range, few flagged, unread, labelled, large
	 * messages or few with attachments, or a thread beside a prefix: the
	 * ids it lets through, for the read of every match
	 */
	if (filtered && q->msgid == NULL && (q->thread_id > 0 ?
	    idx_narrow_thread_ids(idx, q, &scope, &narrow, err) :
	    idx_narrow_ids(idx, q, folder_id, &scope, &narrow, err)) == -1)
		goto fail;
	/*
	 * The block bounds, where they serve; not for a narrow scope, which
	 * the best blocks' rows mostly fail.
	 */
	if (!narrow && idx_rank_blocks(idx, q, folder_id, filtered, &scope, &set, &blocks,
	    &set.matches, &exact, err) == -1) {
		idx_narrow_ids_release(&scope);
		goto fail;
	}
	if (blocks) {
		idx_narrow_ids_release(&scope);
		goto ranked;
	}
	/* words most messages hold among the others: their hits kept by chunk */
	if (!filtered && !narrow && !set.gave_up) {
		if (idx_rank_common(idx, q, &set, &blocks, err) == -1) {
			idx_narrow_ids_release(&scope);
			goto fail;
		}
		if (blocks) {
			idx_narrow_ids_release(&scope);
			goto ranked;
		}
	}
	/*
	 * a walk that gave up: few rows of its best blocks passed, whatever
	 * the sample guessed (`linux before:2002-06-01` at 1,000,000 messages,
	 * a tenth of them in the range, joined all 123,594 matches); else a
	 * filter few messages pass with no index of its own, beside many
	 * matches: its ids, rather than a wide folder's runs
	 */
	if ((!narrow && set.gave_up &&
	    scope_instead(idx, q, folder_id, idx_narrow_ids_walked, &scope, &narrow, err) == -1) ||
	    (!narrow && filtered &&
	    scope_instead(idx, q, folder_id, idx_narrow_filter_ids, &scope, &narrow, err) == -1)) {
		idx_narrow_ids_release(&scope);
		goto fail;
	}
	rc = rank_whole(idx, q, folder_id, filtered, &scope, &set, &memo, err);
	idx_narrow_ids_release(&scope);
	if (rc == -1)
		goto fail;
	/* past the count's cap, rows that could not reach the page went uncounted */
	if (memo.dropped > 0) {
		set.matches = memo.join_until;
		exact = false;
	}
ranked:
	if (set.n > 0)	/* rows is NULL without a match */
		qsort(set.rows, set.n, sizeof(*set.rows), ranked_cmp);
	lo = (uint64_t)offset < set.n ? (size_t)offset : set.n;
	hi = set.n - lo > limit ? lo + limit : set.n;
	if (rank_break_ties(idx, set.rows, set.n, lo, hi, err) == -1)
		goto fail;
	for (size_t i = lo; i < hi; i++) {
		pg->scores[pg->n] = set.rows[i].score;
		pg->ids[pg->n++] = set.rows[i].id;
	}
	pg->more = set.matches > (int64_t)hi;
	pg->matches = set.matches;
	pg->matches_exact = exact;
	rc = 0;
	goto out;
fail:
	rc = -1;
out:
	idx_rank_lengths_release(&lengths);
	free(set.rows);
	return rc;
}

/* ---- the page's rows and snippets */

/*
 * mb_snippet()'s column for q.  FTS5's snippet() tokenized every column it
 * was given from its first byte, and with -1 (the best column) all of them,
 * only to score the columns that have no hit at zero; when every positive
 * term is restricted to one column (subject:, from:, to:, body:) the hits
 * can only be there, and naming it gives the same snippet for a fraction of
 * the work (0.1 instead of 0.5 ms a page for subject:money).  Otherwise -1
 * here, and snippet_sql asks mb_snippet_column (fts_hits.c) for the column
 * from the positions of the matches.  Never att_text: its 200,000
 * characters would be tokenized for every hit; a match there is shown by
 * index_attach_hits.c from a bounded window (docs/attachments.md).
 */
static int
snippet_column(const struct mb_query *q)
{
	static const char *const columns[] = { "subject", "from_text", "recipients", "body",
	    "att_names" };

	for (size_t i = 0; q->column != NULL && i < MB_ARRAY_LEN(columns); i++)
		if (strcmp(q->column, columns[i]) == 0)
			return (int)i;
	return -1;
}

/* A hit from a hit_sql row, with an empty snippet. */
static void
hit_fill(struct mb_search_hit *h, sqlite3_stmt *st, int64_t id)
{
	h->id = id;
	h->folder = idx_col_text(st, 1, NULL);
	h->has_date = sqlite3_column_type(st, 2) != SQLITE_NULL;
	h->date = sqlite3_column_int64(st, 2);
	h->from = idx_col_text(st, 3, NULL);
	h->to = idx_col_text(st, 4, NULL);
	h->subject = idx_col_text(st, 5, NULL);
	h->flags = (unsigned)sqlite3_column_int(st, 6);
	h->attachment_count = sqlite3_column_int64(st, 7);
	h->thread_id = sqlite3_column_int64(st, 8);
	h->labels = mb_labels_split((const char *)sqlite3_column_text(st, 10), &h->n_labels);
	h->message_id = idx_col_text(st, 11, NULL);
	h->from_name = idx_col_text(st, 12, NULL);
	h->from_addr = idx_col_text(st, 13, NULL);
	h->to_json = idx_col_text(st, 14, NULL);
	h->has_received = sqlite3_column_type(st, 15) != SQLITE_NULL;
	h->received = sqlite3_column_int64(st, 15);
	h->dated_by_header = sqlite3_column_int(st, 16) != 0;
	h->has_sort_date = sqlite3_column_type(st, 17) != SQLITE_NULL;
	h->sort_date = sqlite3_column_int64(st, 17);
	h->snippet = mb_xstrdup("");
	h->snippet_len = 0;
}

static void
hit_set_snippet(struct mb_search_hit *h, char *s, size_t len)
{
	free(h->snippet);
	h->snippet = s;
	h->snippet_len = len;
}

/*
 * The bytes of body's first chars characters, as SQLite's substr() counts
 * them (the page of filters alone showed substr(body, 1, 200) until
 * 2026-12-06, unpacking each body a second time for it): a byte of 0xc0 or
 * more starts a character with the continuation bytes after it, any other
 * byte is one, and a NUL ends the text.
 */
static size_t
body_start(const char *body, size_t len, int chars)
{
	const unsigned char *u = (const unsigned char *)body;
	size_t i = 0;

	for (; i < len && u[i] != 0 && chars > 0; chars--)
		if (u[i++] >= 0xc0)
			while (i < len && (u[i] & 0xc0) == 0x80)
				i++;
	return i;
}

/*
 * Matches a snippet statement steps over costing about one statement of
 * its own (0.1 us a match against 40 us; see search_hits).
 */
#define SNIPPET_ROWS_PER_ID	400

static_assert(IDX_PAGE_IDS_MAX >= MB_SEARCH_MAX_LIMIT, "a page's ids fit a statement");

void
idx_bind_page_ids(sqlite3_stmt *st, int lo_at, int first_at, const int64_t *ids, size_t n)
{
	int64_t lo = ids[0], hi = ids[0];

	for (size_t i = 0; i < IDX_PAGE_IDS_MAX; i++) {
		if (i >= n) {
			sqlite3_bind_null(st, first_at + (int)i);
			continue;
		}
		lo = ids[i] < lo ? ids[i] : lo;
		hi = ids[i] > hi ? ids[i] : hi;
		sqlite3_bind_int64(st, first_at + (int)i, ids[i]);
	}
	sqlite3_bind_int64(st, lo_at, lo);
	sqlite3_bind_int64(st, lo_at + 1, hi);
}

/*
 * A prefix query's words, for reading the page's hits back from FTS5
 * (their snippets, which attachment each matched) a seek a hit instead of
 * one read that merges the prefix's doclists whole: listed once a search,
 * when a read first wants them (page_words()).
 */
struct page_words {
	bool	 listed;
	char	*match;		/* owned; NULL: the prefix itself is read */
};

/*
 * q's words for reading the page's n hits (pw->match, or NULL when q is
 * not one prefix or the merge costs less: the prefix's rows from the
 * statistics its ranking kept, idx_prefix_read_words).
 */
static int
page_words(struct mb_index *idx, const struct mb_query *q, size_t n, struct page_words *pw,
    struct mb_err *err)
{
	struct idx_rank_stats stats = { 0 };
	bool kept = false;

	if (pw->listed)
		return 0;
	pw->listed = true;
	if (idx_match_plain(q->match))
		return 0;
	if (idx_prefix_stats_kept(idx, q->match, &stats, &kept, err) == -1)
		return -1;
	return kept ? idx_prefix_read_words(idx, q->match, (int64_t)n, stats.n_hit[0], 0.0,
	    &pw->match, err) : 0;
}

_Thread_local uint64_t idx_snippet_steps;

/*
 * FTS5's snippets of ids (n of them, at most 50) into page's hits, for
 * the MATCH expression words (a prefix's words) or q's own (NULL);
 * SQLITE_DONE or an error.
 */
static int
snippets_of(struct mb_index *idx, sqlite3_stmt *snip, const struct mb_query *q,
    const char *words, const int64_t *ids, size_t n, struct mb_search_page *page,
    struct mb_err *err)
{
	int rc;

	sqlite3_reset(snip);
	sqlite3_clear_bindings(snip);
	sqlite3_bind_text(snip, 1, words != NULL ? words : q->match, -1, SQLITE_STATIC);
	idx_bind_page_ids(snip, 52, 2, ids, n);
	sqlite3_bind_int(snip, 54, snippet_column(q));
	sqlite3_bind_int(snip, 55, words != NULL);
	while ((rc = sqlite3_step(snip)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(snip, 0);

		for (size_t i = 0; i < page->n; i++)
			if (page->hits[i].id == id) {
				size_t len;
				char *s = idx_col_text(snip, 1, &len);

				hit_set_snippet(&page->hits[i], s, len);
			}
	}
	idx_snippet_steps += (uint64_t)sqlite3_stmt_status(snip, SQLITE_STMTSTATUS_VM_STEP, 1);
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "search: snippets", err);
	return rc;
}

/*
 * The matches of q's words alone into *n_r: what a snippet statement over
 * a span of ids steps over.  A search with filters (filtered) counted only
 * the matches that pass, so its words' rows come from their statistics
 * kept by the ranking (idx_rank_rows_kept(): the sum of its phrases' rows,
 * more than an AND holds, which errs toward a statement a hit, about 40 us
 * each).  Else, or without kept statistics, matches.
 */
static int
words_matches(struct mb_index *idx, const struct mb_query *q, bool filtered, int64_t matches,
    int64_t *n_r, struct mb_err *err)
{
	int64_t rows = 0;
	bool kept = false;

	*n_r = matches;
	if (!filtered)
		return 0;
	if (idx_rank_rows_kept(idx, q->match, &rows, &kept, err) == -1)
		return -1;
	if (kept && rows > matches)
		*n_r = rows;
	return 0;
}

/*
 * The hits of the page, in order, into page (a message deleted since the
 * ids were read is skipped).  Snippets: the cheap excerpt when a query word
 * is literally in the body; mb_snippet() from the index's positions for the
 * rest, in one query for them all; a filter-only query shows the start of
 * the body.
 */
static int
search_hits(struct mb_index *idx, const struct mb_query *q, bool filtered,
    const struct search_ids *pg, struct page_words *pw, struct mb_search_page *page,
    struct mb_err *err)
{
	sqlite3_stmt *hit, *snip = NULL;
	int64_t need[MB_SEARCH_MAX_LIMIT];
	size_t n_need = 0;
	int rc = SQLITE_DONE;

	if ((hit = idx_stmt_sql(idx, hit_sql, err)) == NULL)
		return -1;
	if (q->match && (snip = idx_stmt_sql(idx, snippet_sql, err)) == NULL) {
		idx_stmt_done(hit);
		return -1;
	}
	page->hits = mb_xcalloc(pg->n ? pg->n : 1, sizeof(*page->hits));
	for (size_t i = 0; i < pg->n; i++) {
		struct mb_search_hit *h;

		sqlite3_reset(hit);
		sqlite3_bind_int64(hit, 1, pg->ids[i]);
		if (sqlite3_step(hit) != SQLITE_ROW)
			continue;	/* deleted between the two reads */
		h = &page->hits[page->n++];
		hit_fill(h, hit, pg->ids[i]);
		h->score = pg->scores[i];
		if (q->match) {
			struct mb_buf ex = MB_BUF_INIT(4096);
			/*
			 * As bytes, not text: mb_text() does not tell SQLite its
			 * result ends in a NUL, so sqlite3_column_text() copied
			 * every unpacked body once more (a 200 KB newsletter: 0.8
			 * ms a hit; mb_query_excerpt() takes the length).
			 */
			const char *body = sqlite3_column_blob(hit, 9);
			size_t len;

			if (body != NULL && mb_query_excerpt(q, body,
			    (size_t)sqlite3_column_bytes(hit, 9), EXCERPT_CHARS, &ex) == 0) {
				char *s = mb_buf_detach(&ex, &len);

				hit_set_snippet(h, s ? s : mb_xstrdup(""), len);
			} else
				need[n_need++] = pg->ids[i];
			mb_buf_release(&ex);
		} else if (sqlite3_column_type(hit, 9) != SQLITE_NULL) {
			/* the body this row's read unpacked: not unpacked again */
			const char *body = sqlite3_column_blob(hit, 9);
			size_t len = body_start(body, (size_t)sqlite3_column_bytes(hit, 9),
			    PREVIEW_CHARS);

			hit_set_snippet(h, mb_xstrndup(body != NULL ? body : "", len), len);
		}
	}
	if (q->match && n_need > 0) {
		/*
		 * FTS5 walks every match between the lowest and the highest id:
		 * for a frequent word whose page is spread over the whole index,
		 * most of its matches (10 ms of `the`'s 16 at 100,000 messages).
		 * Then, when the words have many more matches than 400 a snippet
		 * and a word (each statement seeks every word's doclist), one
		 * statement per id, unless a prefix would merge its doclists
		 * again for each; a prefix's words (page_words()) are sought at
		 * each id.  The words' matches, not the query's: those the
		 * filters drop are stepped over too (words_matches()).
		 */
		int64_t words = 0;
		bool each;

		if (words_matches(idx, q, filtered, pg->matches, &words, err) == -1) {
			idx_stmt_done(hit);
			idx_stmt_done(snip);
			return -1;
		}
		each = idx_match_plain(q->match) && words >
		    SNIPPET_ROWS_PER_ID * (int64_t)n_need * (int64_t)(q->n_terms ? q->n_terms : 1);
		if (page_words(idx, q, pg->n, pw, err) == -1) {
			idx_stmt_done(hit);
			idx_stmt_done(snip);
			return -1;
		}
		each = each || pw->match != NULL;
		for (size_t i = 0; rc == SQLITE_DONE && i < (each ? n_need : 1); i++)
			rc = snippets_of(idx, snip, q, pw->match, each ? need + i : need,
			    each ? 1 : n_need, page, err);
	}
	idx_stmt_done(hit);
	idx_stmt_done(snip);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* ---- one search */


/*
 * page->total.  A ranked search counted its matches as it ranked them, or
 * (filters through the block bounds) up to a cap, and says which.  A list of
 * filters alone that has no next page ends at this one; one whose read
 * counted every message that passes (two indexes of few met) has its
 * count.  Otherwise the
 * matches are counted (idx_search_count), up to MB_SEARCH_COUNT_CAP: a count
 * reads a messages row per match (for a word in 90% of 100,000 messages,
 * tens of milliseconds), so past the cap the total is a lower bound.
 */
static int
search_total(struct mb_index *idx, const struct mb_query *q, bool ranked, int64_t folder_id,
    int64_t offset, const struct search_ids *pg, struct mb_search_page *page,
    struct mb_err *err)
{
	page->total_exact = true;
	if (ranked) {
		page->total = pg->matches;
		page->total_exact = pg->matches_exact;
		return 0;
	}
	if (!pg->more && (pg->n > 0 || offset == 0)) {
		page->total = offset + (int64_t)pg->n;
		return 0;
	}
	if (pg->listed >= 0) {	/* the page's read counted them all */
		page->total = pg->listed;
		return 0;
	}
	return idx_search_count(idx, q, folder_id, MB_SEARCH_COUNT_CAP, &page->total,
	    &page->total_exact, err);
}

/* Whether a hit of page has attachments (whose matches are read back from FTS5). */
static bool
page_has_attachments(const struct mb_search_page *page)
{
	for (size_t i = 0; i < page->n; i++)
		if (page->hits[i].attachment_count > 0)
			return true;
	return false;
}

/* *stale_r: whether some row is not current (stale_sql). */
static int
any_stale(struct mb_index *idx, bool *stale_r, struct mb_err *err)
{
	int64_t v = 0;

	if (idx_one_int64(idx, stale_sql, NULL, "search: stale rows", &v, err) == -1)
		return -1;
	*stale_r = v != 0;
	return 0;
}

static int
search_in_txn(struct mb_index *idx, const struct mb_query *q, int64_t offset, size_t limit,
    struct mb_search_page *page, struct mb_err *err)
{
	struct search_ids pg = { .n = 0, .listed = -1 };
	struct page_words pw = { .listed = false };
	struct mb_query narrowed;	/* q with the own addresses' phrases: a shallow copy */
	const struct mb_query *rq = q;
	char *me_match = NULL;
	bool filtered;
	int64_t fid;
	int rc = -1;

	if (idx_search_scope(idx, q, &fid, err) == -1 ||
	    idx_search_me_match(idx, q, &me_match, err) == -1)
		return -1;
	if (me_match != NULL) {
		narrowed = *q;
		narrowed.match = me_match;
		rq = &narrowed;
	}
	/* rq selects and counts; q (the words as typed) marks the snippets */
	/* FTS5 alone knows no generations: only while every row is current */
	filtered = idx_search_filtered(q);
	if (q->match && !filtered && any_stale(idx, &filtered, err) == -1)
		goto out;
	if ((q->match ? search_ranked(idx, rq, fid, filtered, offset, limit, &pg, err) :
	    idx_search_list(idx, rq, fid, offset, limit, pg.ids, &pg.n, &pg.more, &pg.listed,
	    err)) == -1)
		goto out;
	if (search_hits(idx, q, filtered, &pg, &pw, page, err) == -1)
		goto out;
	if (q->match && page_has_attachments(page) && page_words(idx, q, pg.n, &pw, err) == -1)
		goto out;
	if (q->match && idx_attachment_hits(idx, q, pw.match, page->hits, page->n, err) == -1)
		goto out;
	page->more = pg.more;
	page->next_offset = offset + (int64_t)pg.n;
	rc = search_total(idx, rq, q->match != NULL, fid, offset, &pg, page, err);
out:
	free(pw.match);
	free(me_match);
	return rc;
}

/*
 * One search reads in one transaction: a single snapshot for all its
 * statements (ids, rows and snippets agree), and one WAL read lock instead of
 * one per statement step -- a page is some 25 statements.
 */
int
mb_search_run(struct mb_index *idx, const struct mb_query *q, int64_t offset, size_t limit,
    struct mb_search_page *page, struct mb_err *err)
{
	int rc;

	memset(page, 0, sizeof(*page));
	if (idx_page_check(offset, limit, MB_SEARCH_MAX_LIMIT, err) == -1)
		return -1;
	if (MB_NEVER(mb_query_empty(q)))
		return mb_err_set(err, MB_E_INVALID, "nothing to search for");
	if (idx_read_begin(idx, err) == -1)
		return -1;
	rc = search_in_txn(idx, q, offset, limit, page, err);
	idx_read_end(idx);
	return rc;
}

void
mb_search_page_release(struct mb_search_page *page)
{
	for (size_t i = 0; i < page->n; i++) {
		struct mb_search_hit *h = &page->hits[i];

		free(h->folder);
		free(h->from);
		free(h->to);
		free(h->message_id);
		free(h->from_name);
		free(h->from_addr);
		free(h->to_json);
		free(h->subject);
		free(h->snippet);
		mb_labels_free(h->labels, h->n_labels);
		free(h->att_name);
		free(h->att_snippet);
	}
	free(page->hits);
	memset(page, 0, sizeof(*page));
}
