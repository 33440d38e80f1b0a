/*
 * Inside the search engine: the SQL every search statement shares (the
 * date, the filters) and what index_search_scope.c gives index_search.c.
 * Not a public header.
 */
#ifndef MAILBOX_SEARCH_PRIVATE_H
#define MAILBOX_SEARCH_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "mailbox/err.h"

#include "index-private.h"	/* struct idx_rank_floor */

struct mb_index;
struct mb_query;

/*
 * The date a search filters and orders by: one expression for every
 * statement here and in the overviews.  sort_date is the Date header when
 * it is sane, else INTERNALDATE (migrations/0004_answers.sql).
 */
#define SEARCH_DATE	"m.sort_date"
/*
 * The same date spelled over the real columns it is computed from, for the
 * statements that must read an index alone (the counts: messages_search_filter,
 * migrations/0012): SQLite 3.40 takes a statement that names a generated
 * column as reading every column of the table, so no index is covering for
 * it.  Keep it the CASE of migrations/0004_answers.sql word for word.
 */
#define SEARCH_DATE_COVERED \
	"(CASE WHEN m.date IS NOT NULL AND (m.internaldate IS NULL OR " \
	"m.date <= m.internaldate + 86400) THEN m.date ELSE m.internaldate END)"
/*
 * Only rows of the current generation of a folder LIST still shows
 * (IDX_CURRENT, index-private.h), tested by the folder's primary key: one
 * lookup in a table of a few dozen rows, and it keeps messages_search_filter
 * covering (it holds folder_id and uidvalidity).
 */
#define SEARCH_CURRENT \
	"EXISTS (SELECT 1 FROM folders AS f WHERE f.id = m.folder_id AND " \
	IDX_CURRENT("m", "f") ") "
/*
 * The filters beside the folder and the dates (?2 folder, ?5..?7 flags and
 * attachments, ?11..?18 the filters of struct mb_query), as one fragment
 * for every statement; SEARCH_FILTERS_COVERED is the part that reads only
 * columns of messages_search_filter (migrations/0006), for the statements
 * that read that index instead of the rows (idx_search_covered()).  Each is "?N IS NULL OR ...": an unset filter costs
 * a test of a bound value.  from:me and to:me read account_addresses (a
 * handful of rows, lower-cased); to:me finds the address as a whole JSON
 * string in to_json or cc_json, so "bob@x" never matches "jimbob@x".
 */
#define SEARCH_FILTERS_COVERED	SEARCH_CURRENT "AND " SEARCH_FILTERS_ROW
/*
 * The covered filters without SEARCH_CURRENT, for a statement that joins
 * the folder and tests IDX_CURRENT itself (the counts): a second lookup of
 * the folder per row would cost a count one more seek per message.
 */
#define SEARCH_FILTERS_ROW \
	"(?2 IS NULL OR m.folder_id = ?2) " \
	"AND (m.flags & ?5) = ?5 AND (m.flags & ?6) = 0 " \
	"AND (?7 IS NULL OR (m.attachment_count > 0) = ?7) " \
	"AND (?11 IS NULL OR m.size >= ?11) AND (?12 IS NULL OR m.size < ?12) " \
	"AND (?14 IS NULL OR m.thread_id = ?14) " \
	"AND (?15 IS NULL OR instr(lower(m.list_id), ?15) > 0) " \
	"AND (?16 IS NULL OR mb_labels_test(m.keywords, ?16)) " \
	"AND (?17 IS NULL OR (lower(m.from_addr) IN (SELECT address FROM account_addresses)) " \
	"= ?17) "
#define SEARCH_FILTERS SEARCH_FILTERS_COVERED \
	"AND (?13 IS NULL OR m.message_id = ?13) " \
	"AND (?18 IS NULL OR EXISTS (SELECT 1 FROM account_addresses AS a WHERE " \
	"instr(lower(coalesce(m.to_json, '') || coalesce(m.cc_json, '')), " \
	"'\"addr\":\"' || a.address || '\"') > 0) = ?18) "
/*
 * The WHERE of migrations/0019's partial indexes, word for word, over
 * table alias t: messages_flagged (\Flagged set, MB_FLAG_FLAGGED 4) and
 * messages_unread (\Seen clear, MB_FLAG_SEEN 1).  SQLite uses a partial
 * index only for a statement whose WHERE implies the index's.  Before that
 * migration a statement naming them does not prepare; its caller then
 * reads the messages another way.
 */
#define SEARCH_FLAGGED_AS(t)	"(" t ".flags & 4) <> 0"
#define SEARCH_UNREAD_AS(t)	"(" t ".flags & 1) = 0"
/*
 * And migrations/0027's messages_answered (\Answered set, MB_FLAG_ANSWERED
 * 2) and messages_draft (\Draft set, MB_FLAG_DRAFT 16).
 */
#define SEARCH_ANSWERED_AS(t)	"(" t ".flags & 2) <> 0"
#define SEARCH_DRAFT_AS(t)	"(" t ".flags & 16) <> 0"
/* Likewise migrations/0020's messages_labelled: a message with any keyword. */
#define SEARCH_LABELLED_AS(t)	t ".keywords IS NOT NULL"
/* And migrations/0024's messages_attached: a message with an attachment (has:attachment). */
#define SEARCH_ATTACHED_AS(t)	t ".attachment_count > 0"
/*
 * And migrations/0025's messages_size, over the range larger:N names (?11,
 * bound by idx_search_bind; NULL passes nothing, so read only for larger:).
 */
#define SEARCH_LARGE_AS(t)	t ".size >= ?11"
/* The same index below the bound smaller:N names (?12: size < N; NULL passes nothing). */
#define SEARCH_SMALL_AS(t)	t ".size < ?12"
/*
 * And migrations/0026's messages_list, over the lists whose List-Id holds
 * list:X's lower-cased text (?15, bound by idx_search_bind; NULL passes
 * nothing), as SEARCH_FILTERS_ROW tests it.  A substring cannot be sought,
 * so the index's distinct values are read first, a seek each (the least
 * List-Id after the one before: a mailbox has tens or hundreds of lists,
 * and a list's thousands of entries are stepped over at once), and the
 * entries of those that hold the text then read.
 */
#define SEARCH_LIST_VALUES \
	"WITH RECURSIVE lists(v) AS (SELECT (SELECT min(l.list_id) FROM messages AS l " \
	"INDEXED BY messages_list WHERE l.list_id IS NOT NULL) UNION ALL " \
	"SELECT (SELECT min(l.list_id) FROM messages AS l INDEXED BY messages_list " \
	"WHERE l.list_id > lists.v) FROM lists WHERE lists.v IS NOT NULL) " \
	"SELECT v FROM lists WHERE instr(lower(v), ?15) > 0"
#define SEARCH_LISTED_AS(t)	t ".list_id IN (" SEARCH_LIST_VALUES ")"
/*
 * Those indexes "of few" (the sizes' a whole index read over a range, once
 * for larger: and once for smaller:,
 * the lists' over the values that hold the text), each as X(enum idx_few,
 * its name, its WHERE over alias g): the one place that pairs a name with
 * its WHERE, for every statement that reads them.
 */
#define SEARCH_FEW_EACH(X) \
	X(IDX_FEW_FLAGGED, "messages_flagged", SEARCH_FLAGGED_AS("g")) \
	X(IDX_FEW_UNREAD, "messages_unread", SEARCH_UNREAD_AS("g")) \
	X(IDX_FEW_LABELLED, "messages_labelled", SEARCH_LABELLED_AS("g")) \
	X(IDX_FEW_ATTACHED, "messages_attached", SEARCH_ATTACHED_AS("g")) \
	X(IDX_FEW_LARGE, "messages_size", SEARCH_LARGE_AS("g")) \
	X(IDX_FEW_SMALL, "messages_size", SEARCH_SMALL_AS("g")) \
	X(IDX_FEW_LISTED, "messages_list", SEARCH_LISTED_AS("g")) \
	X(IDX_FEW_ANSWERED, "messages_answered", SEARCH_ANSWERED_AS("g")) \
	X(IDX_FEW_DRAFT, "messages_draft", SEARCH_DRAFT_AS("g"))
/* A FROM of one of them: its ids as g, each looked up in messages_search_filter as m. */
#define SEARCH_FEW_FROM(index) \
	"messages AS g INDEXED BY " index " CROSS JOIN messages AS m INDEXED BY " \
	"messages_search_filter ON m.id = g.id "
/* The dates: a NULL date fails either bound (see search_sql_filter_dated). */
#define SEARCH_DATES_AS(date) \
	"(?3 IS NULL OR " date " >= ?3) AND (?4 IS NULL OR " date " < ?4) "
#define SEARCH_DATES		SEARCH_DATES_AS(SEARCH_DATE)
#define SEARCH_DATES_COVERED	SEARCH_DATES_AS(SEARCH_DATE_COVERED)
/*
 * The rows of MATCH ?1 with ids ?22 to ?23, each with its score
 * (mb_bm25_top() with the floor ?9) and its date, the query's filters
 * (SEARCH_FILTERS_COVERED, bound by idx_search_bind) tested in
 * messages_search_filter, the date spelled over its columns so that the
 * index alone is read (search_sql_rank_ix).  The score is asked in WHERE
 * too: a term of messages_fts alone is tested before the join, so a row
 * that cannot reach the page (most of them, once it is full) costs no seek
 * into that index, about 0.6 us a match; the second call takes the first's
 * answer (struct idx_rank_memo).  At 1,000,000 messages that cut `linux
 * after:2002-09-01` by a third (docs/benchmarks.md, "Filtered ranges
 * scored before the join").  The block walk's ranges and a prefix's rarer
 * words read through it.
 */
#define SEARCH_RANK_RANGE_FILTERED \
	"SELECT messages_fts.rowid, mb_bm25_top(messages_fts, ?1, ?9, " IDX_RANK_WEIGHTS "), " \
	SEARCH_DATE_COVERED " FROM messages_fts CROSS JOIN messages AS m " \
	"INDEXED BY messages_search_filter ON m.id = messages_fts.rowid " \
	"WHERE messages_fts MATCH ?1 AND messages_fts.rowid BETWEEN ?22 AND ?23 AND " \
	"mb_bm25_top(messages_fts, ?1, ?9, " IDX_RANK_WEIGHTS ") IS NOT NULL AND " \
	SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
/* Bind the query text and the filters (?1-?7, ?11-?18) of SEARCH_FILTERS and SEARCH_DATES. */
void	idx_search_bind(sqlite3_stmt *st, const struct mb_query *q, int64_t folder_id);

/* True when q has a filter beside its text (the ranked statement must join messages). */
bool	idx_search_filtered(const struct mb_query *q);

/*
 * True when every column q's filters test is in messages_search_filter
 * (migrations/0006): all but to:me (to_json, cc_json) and id: (message_id),
 * so that SEARCH_FILTERS_COVERED tests all of them.
 */
bool	idx_search_covered(const struct mb_query *q);

/*
 * What q's scope needs of the index before a search, into *folder_id_r
 * (0: every folder): the folder it names or the folder of its role, and for
 * from:me / to:me that the account's addresses are known.  MB_E_NOTFOUND,
 * in words a model can act on, when one is missing.
 */
int	idx_search_scope(struct mb_index *idx, const struct mb_query *q, int64_t *folder_id_r,
	    struct mb_err *err);

/*
 * For from:me or to:me: q's MATCH expression (if any) with the account's
 * addresses ANDed to it as phrases of the from_text (from:me) or
 * recipients (to:me) column, each quoted by mb_query_quote(), into
 * *match_r (owned, free(3); NULL when q needs none).  FTS5 then narrows
 * the matches by an intersection of doclists, and the exact SQL test of
 * SEARCH_FILTERS (the whole address, any case) runs on what is left: a
 * phrase alone would also take "too@x" in "me.too@x".
 */
int	idx_search_me_match(struct mb_index *idx, const struct mb_query *q, char **match_r,
	    struct mb_err *err);

/*
 * Ids [offset, offset + limit) of a query of filters alone, newest first,
 * into ids (room for limit) and *n_r (0 on entry); *more_r true when a next
 * page exists; *total_r every message that passes when the read counted
 * them all (two indexes of few met: idx_narrow_meet), else -1.  q->match,
 * if set, is not the user's words but the own addresses' phrases
 * (idx_search_me_match).  Returns 0, or -1 with err.
 */
int	idx_search_list(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    int64_t offset, size_t limit, int64_t *ids, size_t *n_r, bool *more_r,
	    int64_t *total_r, struct mb_err *err);

/* Ids lo to hi, both included. */
struct idx_id_run {
	int64_t		 lo, hi;
};
/*
 * The current messages q matches, counted up to cap (at least 1), into
 * *n_r; *exact_r false when the count stopped at the cap.
 */
int	idx_search_count(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    int64_t cap, int64_t *n_r, bool *exact_r, struct mb_err *err);
/*
 * The same for words and filters the index covers (idx_search_covered),
 * over runs only (n_runs of them, in order, apart), which must hold every
 * message that passes (a wide folder's: idx_folder_runs): a count in id
 * order otherwise steps over every match before the folder's first id.
 */
int	idx_search_count_runs(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    const struct idx_id_run *runs, size_t n_runs, int64_t cap, int64_t *n_r,
	    bool *exact_r, struct mb_err *err);
/*
 * How many steps of SQLite's machine this thread's counts of a search's
 * total have taken (idx_search_count, idx_search_count_runs): for the
 * tests, which check that a wide folder's total steps over no match
 * outside its runs.
 */
extern _Thread_local uint64_t	idx_total_steps;
/*
 * The virtual machine steps of the statements that read a page's snippets
 * from the positions (index_search.c), for the tests: one statement over
 * the page's ids steps over every match of the words between them.
 */
extern _Thread_local uint64_t	idx_snippet_steps;
/*
 * The same for count_messages' counts (index_overview.c): the tests check
 * that words in a folder are counted over its runs of ids.
 */
extern _Thread_local uint64_t	idx_count_steps;
/* Date keys ("2024-03") count_messages made, for the tests: once a day and grouping. */
extern _Thread_local uint64_t	idx_count_date_keys;

/* One match of a ranked search. */
struct idx_ranked {
	int64_t	id;
	double	score;		/* bm25(): lower is better */
	int64_t	date;
	int	date_state;	/* enum below: dates are read for ties only */
};
enum { RANK_DATE_UNREAD, RANK_DATE_SET, RANK_DATE_NULL };

/*
 * The rows of a ranked statement that can still be on the page: the best
 * keep rows so far and every row tied with the last of them (ties are
 * ordered by date and id later, so a tie group is kept whole).  Rows are
 * appended until there are twice as many as needed, then cut back around
 * the keep-th score, found by selection (rank_select.c), and the floor
 * raised to it (index_search.c); the page sorts them once, at the end.
 */
/* A growing list of ids (mb_xrealloc'd; the owner frees ids). */
struct idx_ids {
	int64_t	*ids;
	size_t	 n, cap;
};

struct idx_rank_set {
	struct idx_ranked	*rows;		/* owned */
	size_t			 n, cap;
	size_t			 keep;		/* offset + limit */
	size_t			 trim_at;	/* n that triggers the next cut */
	int64_t			 matches;	/* every row the statement gave, scored or not */
	struct idx_rank_floor	 floor;		/* bound to the statement */
	struct idx_ids		*seen;		/* non-NULL: every row given is appended */
	/*
	 * Owned (NULL unless set): the block bounds of a filtered walk that gave
	 * up (idx_rank_blocks), whole_blocks of them, for the caller's read of
	 * every match to answer the rows of a block below its floor at once.
	 */
	double			*whole_bound;
	int64_t			 whole_blocks;
	/* a filtered walk gave up (idx_rank_blocks): few rows of its best blocks passed */
	bool			 gave_up;
};

/*
 * Drop set's rows strictly worse than the keep-th best, and raise the floor
 * to its score; the rows kept are left in no order (the page sorts them).
 */
void	idx_rank_trim(struct idx_rank_set *set);
/*
 * Move rows[0..n) about so that rows[k] holds the (k+1)-th best score, no
 * row before it a worse one and none after it a better one, and return
 * that score (rank_select.c; k < n).
 */
double	idx_rank_select(struct idx_ranked *rows, size_t n, size_t k);

/*
 * Step st (a bound ranked statement, its floor set's) to the end into set;
 * with_date: column 2 is the date.  Returns the step's result code; the
 * rows are set's either way.
 */
int	idx_rank_collect(sqlite3_stmt *st, bool with_date, struct idx_rank_set *set);
/*
 * Add a row of id with score to set (with_date: its date, date_null when
 * it has none), cutting set at its trim_at (idx_rank_trim).  Counts no
 * match: the caller does.
 */
void	idx_rank_add(struct idx_rank_set *set, int64_t id, double score, bool with_date,
	    int64_t date, bool date_null);

/*
 * The closing quote of the quoted phrase whose opening quote is at p, in
 * a MATCH as query.c writes it (a doubled quote inside is one); NULL when
 * it is not closed.
 */
const char	*idx_match_phrase_end(const char *p);
/* Whether a MATCH expression (as query.c writes it) has no prefix ("..."*). */
bool	idx_match_plain(const char *match);

/*
 * A page's rows read back from FTS5 (their snippets, which attachment each
 * matched) in one statement: every match between the page's lowest and
 * highest id, the ids tested with "+rowid IN" (a plain "rowid IN" is handed
 * to FTS5 as a lookup an id, which for a prefix merges its doclists each
 * time).  Binds ids (n of them, 1 to IDX_PAGE_IDS_MAX) to parameters
 * first_at onwards, NULL to the rest of the IDX_PAGE_IDS_MAX, and their
 * lowest and highest to lo_at and lo_at + 1.
 */
#define IDX_PAGE_IDS_MAX	50	/* the ids such a statement lists */
void	idx_bind_page_ids(sqlite3_stmt *st, int lo_at, int first_at, const int64_t *ids,
	    size_t n);

/*
 * The phrases of a MATCH expression as query.c writes it: every "..."
 * string (a quote inside doubled) is one phrase, in the order FTS5 numbers
 * them; operators, parentheses and {column} : are not phrases.  Their text
 * into texts (IDX_RANK_PHRASES of room; owned, the caller frees *n_r of
 * them, even on false; NULL: only check), false when one is a prefix
 * ("..."*) or there are too many (index_search_blocks.c).
 */
bool	idx_match_phrases(const char *match, char **texts, int *n_r);

/*
 * For match's phrases that are one word syncd bounds, the rows that hold
 * it, added up from the bounds builder's counts (index_rank_counts.c), into
 * *known for mb_bm25's statistics; for a match that is one prefix, its rows
 * counted through its words (idx_prefix_rows()).  None when match has a
 * column filter, when a prefix's words are not listed, or when this
 * connection keeps match's statistics already.  -1 with err on a failure
 * of SQLite's (known then holds none).
 */
int	idx_rank_known_hits(struct mb_index *idx, const char *match,
	    struct idx_rank_known *known, struct mb_err *err);
/*
 * The rows that hold token (a word of rank_terms) into *docs_r: its
 * chunks' current counts and FTS5's count of the ids between them; -1
 * when too many ranges would be left to FTS5, or the index keeps no
 * counts.  -1 with err on a failure of SQLite's.
 */
int	idx_rank_token_rows(struct mb_index *idx, const char *token, int64_t *docs_r,
	    struct mb_err *err);

/* Ids after and before, in a scope, and none of it between them: a gap. */
struct idx_id_gap {
	int64_t		 after, before;
};
/*
 * The ids a ranked search's scope (its folder, its dates, its flags)
 * lets through, when the scope holds few of the messages
 * (index_search_narrow.c): bit i of bits (owned, n bits) is set when id i
 * is in it.  Every such id is in one of runs (owned, n_runs of them, in
 * order, apart; none when the scope is empty), the stretches of ids the
 * read of every match seeks to one after the other.  wide: a folder that
 * holds many of the messages in a few long stretches of ids
 * (index_search_folder.c): bits is NULL, and the runs hold every id of the
 * folder (ids 0 to n - 1) and others besides, which the join tests.
 */
struct idx_narrow_ids {
	uint64_t		*bits;
	int64_t			 n;
	struct idx_id_run	*runs;
	size_t			 n_runs;
	bool			 wide;
};
/*
 * d's runs: lo to hi split at the gaps (n_gaps of them, in order; sorted
 * here), the IDX_NARROW_RUNS - 1 longest at most (a read restarts at each).
 */
void	idx_narrow_runs_set(struct idx_narrow_ids *d, int64_t lo, int64_t hi,
	    struct idx_id_gap *gaps, size_t n_gaps);
/*
 * The runs of ids that hold every message of folder_id into *d (bits NULL,
 * wide true; release it after either way), found by a seek a chunk of
 * RANK_CHUNK_IDS ids into messages_folder_ids (migrations/0021), the ids
 * up to max_id only.  *used_r false (d empty) for an index from before
 * that migration, or a folder in no run.  -1 with err on a failure of
 * SQLite's.
 */
int	idx_folder_runs(struct mb_index *idx, int64_t folder_id, int64_t max_id,
	    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err);
/* How many times this thread has read a folder's runs (the tests check when). */
extern _Thread_local uint64_t	idx_folder_runs_read;
/*
 * The folder's first and last id into *lo_r and *hi_r, from
 * messages_folder_ids (migrations/0021): both -1 for a folder without
 * messages, or an index from before that migration.  -1 with err on a
 * failure of SQLite's.
 */
int	idx_folder_span(struct mb_index *idx, int64_t folder_id, int64_t *lo_r, int64_t *hi_r,
	    struct mb_err *err);
/*
 * What a list's walk pays a row against what a read of a whole narrow index
 * pays an entry (index_search_list.c says how it was measured).
 */
#define IDX_LIST_ROW_COST	20
/*
 * Whether folder_id holds so few messages (every generation: the entries
 * of messages_folder_sort_date) that walking all of them costs less than
 * reading a whole narrow index: fewer than the largest id over
 * IDX_LIST_ROW_COST, counted from the summary rows of migration 0011
 * (count_days).  -1 with err on a failure of SQLite's.
 */
int	idx_folder_small(struct mb_index *idx, int64_t folder_id, bool *small_r,
	    struct mb_err *err);
/*
 * The ids of q's scope (folder_id as idx_search_scope() found it, and q's
 * dates) into *d (release it after either way) when q has words and a
 * folder, a date range, is:flagged, is:unread, a label, has:attachment,
 * larger:N or list:X whose messages a sample of the messages says are few (the part
 * it finds fewest of, when several), and the read of them confirms it
 * (*used_r).  Else, when the folder holds
 * many of the sampled messages in a few stretches of them, the folder's
 * runs (idx_folder_runs: d->wide, *used_r false); else d stays empty.  -1
 * with err on a failure of SQLite's.
 */
int	idx_narrow_ids(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err);
/*
 * The same after a filtered walk gave up (struct idx_rank_set's gave_up):
 * the scope's ids whatever share of the sample was in it, when there are
 * at most eight for each of the words' rows (the joins they spare), and at
 * least an eighth as many as messages and at most a quarter (none when the
 * sample puts more in it), and no wide folder's runs.  The sample guesses the scope's share, and a scope of a
 * tenth of the messages, walked, may pass too few rows of the best blocks
 * to fill a page; every match was then joined to test it.
 */
int	idx_narrow_ids_walked(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err);
void	idx_narrow_ids_release(struct idx_narrow_ids *d);
/*
 * The ids of q's thread (thread:N) into *d, as idx_narrow_ids, when q's
 * words hold a prefix: the search otherwise looks each message of the
 * thread up in FTS5, and FTS5 merges a prefix's doclists at each lookup
 * (`thread:N list*` with 272 messages: 1.9 s at 100,000 messages), where
 * one read of the prefix's matches over the thread's runs merges them
 * once, or reads them through the prefix's words (idx_prefix_read_words).
 * -1 with err on a failure of SQLite's.
 */
int	idx_narrow_thread_ids(struct mb_index *idx, const struct mb_query *q,
	    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err);
/*
 * The ids that pass q's filters (folder_id as idx_search_scope() found
 * it) into *d, as idx_narrow_ids, read by a scan of messages_search_filter
 * (about 0.1 us an entry), when q has words in at least a quarter of the
 * messages and filters that index holds (no id:, thread: or to:) which a
 * sample of the messages says few pass: a filter with no index of its own
 * (is:answered, larger:, list:, from:me, and what idx_narrow_ids did not
 * serve: has:attachment where a sample found many with one).  Else d stays
 * empty.  Each match then
 * costs a test of its bit instead of a join into that index, which stops
 * only once 1,000 have passed (`the is:answered` at 1,000,000 messages,
 * none answered: every one of its 900,000 matches joined).  -1 with err on
 * a failure of SQLite's.
 */
int	idx_narrow_filter_ids(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err);
/* How many such scans this thread has made (the tests check when they are). */
extern _Thread_local uint64_t	idx_filter_scans;
/*
 * Whether more than one in IDX_NARROW_COUNT_SHARE of a sample of the
 * messages up to max_id (the highest id, as idx_narrow_filter_ids samples
 * them) passes q's filters, into *common_r.  -1 with err on a failure of
 * SQLite's.
 */
int	idx_narrow_filters_common(struct mb_index *idx, const struct mb_query *q,
	    int64_t folder_id, int64_t max_id, bool *common_r, struct mb_err *err);
/*
 * For filters alone: which of the indexes of migrations 0019, 0020, 0024,
 * 0025, 0026 and 0027 holds few of the messages and a part of q's scope
 * (is:flagged, is:unread, a label, has:attachment, larger:, smaller:,
 * list:, is:answered, is:draft), by the
 * same sample, into *few_r (IDX_FEW_NONE: no such part, or not few), and
 * when ids_r is not NULL how many ids the sample guesses it holds.  Their
 * ids are then read, each looked up for the other filters.  -1 with err on
 * a failure of SQLite's.
 */
enum idx_few { IDX_FEW_NONE, IDX_FEW_FLAGGED, IDX_FEW_UNREAD, IDX_FEW_LABELLED,
	IDX_FEW_ATTACHED, IDX_FEW_LARGE, IDX_FEW_SMALL, IDX_FEW_LISTED, IDX_FEW_ANSWERED,
	IDX_FEW_DRAFT };
/*
 * The sample idx_narrow_few() took (when sample is not NULL), for
 * idx_narrow_meet() to weigh the same query's parts without sampling the
 * same messages again: the largest id then, and how many samples each part
 * of the scope held (taken false: none taken).
 */
#define IDX_NARROW_PARTS	16
struct idx_narrow_sample {
	bool	taken;
	int64_t	max_id;
	int	in_each[IDX_NARROW_PARTS];
};
int	idx_narrow_few(struct mb_index *idx, const struct mb_query *q, enum idx_few *few_r,
	    int64_t *ids_r, struct idx_narrow_sample *sample, struct mb_err *err);
/*
 * For a list or a count of filters alone (idx_search_list, index_overview.c)
 * two of which have such an index: when the wider part's ids number at
 * most IDX_MEET_WIDER times the narrower's (by the sample, then by the
 * narrower's count), the ids both hold (the wider's read into a bitmap,
 * the narrower's tested against it), in the narrower index's order, into
 * meet (the caller frees meet->ids), *used_r true; else *used_r false and
 * meet empty; with sample taken (idx_narrow_few()'s for q), by that
 * sample.  A ranked search's narrow scope takes them too (idx_narrow_ids).
 * -1 with err on a failure of SQLite's.
 */
int	idx_narrow_meet(struct mb_index *idx, const struct mb_query *q,
	    const struct idx_narrow_sample *sample, struct idx_ids *meet, bool *used_r,
	    struct mb_err *err);
/*
 * How many lists and counts this thread read through such a meeting (the
 * tests check that they do).
 */
extern _Thread_local uint64_t	idx_meets;
/*
 * sql, a statement that reads one of those indexes, prepared (release it
 * with idx_stmt_done); NULL without an error for an index from before
 * migrations 0019, 0020, 0024, 0025, 0026 or 0027, whose caller then reads the
 * messages the old way.  Counts idx_few_reads.
 */
sqlite3_stmt	*idx_few_stmt(struct mb_index *idx, const char *sql);
/* How many statements this thread has read those indexes with (the tests check that they do). */
extern _Thread_local uint64_t	idx_few_reads;
/*
 * How many pages of filters alone this thread has read by the whole of
 * messages_search_filter (index_search_list.c): the tests check that a
 * filter on much of the mail is walked newest first instead.
 */
extern _Thread_local uint64_t	idx_list_scans;
/*
 * How many steps of SQLite's machine this thread's pages of filters alone
 * have taken (idx_search_list), and its reads of the ids two indexes of
 * few meet at (idx_narrow_meet, for a count or a ranked scope too): the
 * tests check that a small folder's page reads that folder's messages,
 * not every message.
 */
extern _Thread_local uint64_t	idx_list_steps;
/*
 * Walks newest first that gave up past their budget (index_search_list.c,
 * LIST_STEPS_PER_ROW), the page then read another way; for tests.
 */
extern _Thread_local uint64_t	idx_list_walks_given_up;
/* Whether q tests a label that must be there (label:X), which messages_labelled holds. */
bool	idx_search_labelled(const struct mb_query *q);
/* Whether idx_narrow_ids makes the bitmap at all: the tests turn it off to compare. */
extern bool	idx_narrow_ids_used;

/*
 * Rank q into set when it is words all of which a match must hold, some
 * of them in most rows with their hits kept by syncd (index_search_common.c,
 * migration 0031): those words' hits are read from there, not stepped
 * through in FTS5.  *used_r false when q is not such a search, or no
 * chunk has those hits: set is untouched and the caller reads every match.
 * Else set->matches counts every match (exact).  Only for a search without
 * filters.
 */
int	idx_rank_common(struct mb_index *idx, const struct mb_query *q,
	    struct idx_rank_set *set, bool *used_r, struct mb_err *err);
/* Searches whose kept words' hits were read (idx_rank_common(), or a walk's). */
extern _Thread_local uint64_t	idx_common_reads;
/* Rows of a query of kept words alone scored from the bytes, no statement run. */
extern _Thread_local uint64_t	idx_common_bytes_rows;
/*
 * The words of match (an AND of one-word phrases and nothing else) whose
 * hits syncd keeps (index_search_common.c) into *k_r (idx_kept_free()),
 * NULL when match is not such a query, has no such word, or no other
 * while lengths (the search's, to score kept words alone) are NULL or off,
 * or no chunk has their hits; known: as struct idx_rank_stats's; stats:
 * match's statistics when the caller has them (NULL: read here).  A range of ids
 * whose chunks all have them is read by the MATCH of the other words
 * (idx_kept_others()) with set->floor.parts at idx_kept_parts(): a row
 * without a kept word is answered NULL, every other scored as bm25() scores
 * it for match.
 */
struct idx_kept;
int	idx_kept_make(struct mb_index *idx, const char *match,
	    const struct idx_rank_known *known, const struct idx_rank_stats *stats,
	    const struct idx_rank_lengths *lengths, struct idx_kept **k_r,
	    struct mb_err *err);
void	idx_kept_free(struct idx_kept *k);
/*
 * The last id of the run from lo (to hi at most) whose chunks all have the
 * kept words' hits, or all lack them (*kept_r says which).
 */
int64_t	idx_kept_run(const struct idx_kept *k, int64_t lo, int64_t hi, bool *kept_r);
const char	*idx_kept_others(const struct idx_kept *k);
/*
 * Whether k's words are all kept: a range whose chunks have their hits is
 * then read by idx_kept_bytes(), not by a statement.
 */
bool	idx_kept_alone(const struct idx_kept *k);
/*
 * Ids lo..hi of match, all in chunks with the kept words' hits, into set
 * (set->matches counts the rows that hold each word): a block the walk
 * ranked or bounds below the floor is passed whole, uncounted (the walk
 * reads its total elsewhere); every other row is scored from the bytes at
 * the length the builder kept for it (idx_rank_kept_row()), or by FTS5
 * through match for that row alone when no length is kept for it.
 */
int	idx_kept_bytes(struct idx_kept *k, const char *match, int64_t lo, int64_t hi,
	    struct idx_rank_set *set, struct mb_err *err);
const struct idx_rank_parts	*idx_kept_parts(const struct idx_kept *k);
/* Whether idx_rank_common() serves at all: the tests turn it off to compare. */
extern bool	idx_common_used;

/*
 * Rank q into set through the block bounds (index_search_blocks.c): only
 * the blocks of ids whose bound can reach set's floor are read (a prefix
 * through its words: index_search_prefix.c).  filtered: q has filters, or
 * some row is not current (folder_id as idx_search_scope() found it); the
 * blocks' rows are then tested against them; wide (NULL: none), a wide
 * folder's runs (idx_folder_runs), outside which no block is read and no
 * match counted.  *used_r false when the bounds
 * cannot serve q (no bounds, a prefix the walk does not take, too many
 * phrases, a filter messages_search_filter does not cover): set is
 * untouched and the caller reads every match.  Likewise when a filtered
 * walk gives up (the page did not fill in its first ranges), except that
 * set is emptied and given the walk's bounds (whole_bound).  Else
 * *matches_r is the number of matches: exact without filters (*exact_r
 * true); with filters counted up to a cap (MB_SEARCH_COUNT_CAP, or past
 * set's keep), beyond which it is a lower bound (*exact_r false).
 */
int	idx_rank_blocks(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
	    bool filtered, const struct idx_narrow_ids *wide, struct idx_rank_set *set,
	    bool *used_r, int64_t *matches_r, bool *exact_r, struct mb_err *err);

/*
 * For a search of q read whole: per block of RANK_BLOCK_IDS ids, a length
 * every row of it that matches q has at least (struct idx_rank_floor's
 * block_min_len), into *len_r (owned by the caller), *n_r blocks; NULL
 * when the bounds cannot tell (no bounds, a prefix, an OR or a NOT, no
 * bounded word, or one in fewer than idx_rank_min_matches rows).
 */
int	idx_rank_min_lengths(struct mb_index *idx, const struct mb_query *q, uint32_t **len_r,
	    int64_t *n_r, struct mb_err *err);

/*
 * A prefix query's words for the block walk (index_search_prefix.c): the
 * words syncd bounds, and MATCH expressions for the rows that hold another.
 */
#define IDX_PREFIX_BOUNDED	64	/* more bounded words: the caller reads every match */
#define IDX_PREFIX_PHRASES	64	/* more phrases for the other words: the same */
#define IDX_PREFIX_SEEKS	256	/* more seeks to find them: the same */
struct idx_prefix {
	char	**bounded;	/* owned: n_bounded words, each bounded in rank_terms */
	int	 n_bounded;
	int	 most;		/* of bounded, the one with the most rows when chosen */
	char	*bounded_match;	/* owned: the bounded words ORed */
	char	*rare_any;	/* owned: rows with another word (the other words ORed); NULL: none */
	char	*rare_both;	/* owned: rows with another word and a bounded one */
	char	*every;		/* owned: every word ORed, the prefix's rows without FTS5's merge */
};
/*
 * The text of match (as query.c writes it) when it is one prefix phrase,
 * "..."*, and nothing else, doubled quotes undone (owned by the caller);
 * NULL otherwise.
 */
char	*idx_prefix_text(const char *match);
/*
 * The words of the prefix phrase text (idx_prefix_text()) into *p when the
 * walk serves it (*ok_r true; release p after): one of its bounded words
 * must hold about need rows (the ids reach max_id).  Else *ok_r false and
 * p empty.  -1 with err on a failure of SQLite's.
 */
int	idx_prefix_words(struct mb_index *idx, const char *text, int64_t need, int64_t max_id,
	    struct idx_prefix *p, bool *ok_r, struct mb_err *err);
void	idx_prefix_release(struct idx_prefix *p);
/*
 * When match (as query.c writes it) is one prefix phrase whose words the
 * walk can list (idx_prefix_words()), the rows that hold any of them into
 * *rows_r, which are the prefix's: the bounded words' (from the builder's
 * counts for one word, else FTS5's count of their OR) and those of the
 * other words that hold no bounded one, each counted by rowid without
 * FTS5's merge of the prefix's doclists.  Else *rows_r is -1.  -1 with
 * err on a failure of SQLite's.
 */
int	idx_prefix_rows(struct mb_index *idx, const char *match, int64_t *rows_r,
	    struct mb_err *err);
/*
 * The statistics of match, one prefix phrase, into *stats (set when they
 * were made) from its rows stats->known counted (idx_prefix_rows()), as
 * mb_bm25 would rank it, and kept on the connection; without a MATCH of the
 * prefix, whose doclists FTS5 merges to start any statement of it, but of
 * one of its bounded words.  Left unset without a count for match, or when
 * that word has no row now.  -1 with err on a failure of SQLite's.
 */
int	idx_prefix_stats_counted(struct mb_index *idx, const char *match,
	    struct idx_rank_stats *stats, struct mb_err *err);
/*
 * When match (as query.c writes it) is one prefix phrase, "..."*, that has
 * rows matches (-1: not known; then at least those of its most frequent
 * word that syncd bounds): every word of the index that starts with it,
 * each a raw term (MB_FTS_RAW_TERM), ORed into *words_r (owned by the
 * caller), for a read of n_reads runs of ids (or single ids) that hold
 * about share of the ids, which would otherwise make FTS5 merge the
 * prefix's doclists whole, as it does at the start of every read whatever
 * its ids.  A word's doclist FTS5 seeks to the ids instead.  NULL (read
 * the prefix itself) when listing, seeking and stepping the words would
 * cost more than that merge, beyond IDX_PREFIX_WORDS words, for a prefix
 * of digits only, or on an index without a vocabulary (before migration
 * 0017).  A row's hits of all the words are its hits of the prefix
 * (struct idx_rank_prefix).  -1 with err on a failure of SQLite's.
 */
#define IDX_PREFIX_WORDS	128
int	idx_prefix_read_words(struct mb_index *idx, const char *match, int64_t n_reads,
	    int64_t rows, double share, char **words_r, struct mb_err *err);
/*
 * When match is one prefix phrase (idx_prefix_text()): the most rows any
 * word syncd bounds that starts with it held when the words were chosen,
 * into *rows_r (0: none, or not one prefix), a number of rows the prefix
 * has at least, known without FTS5's merge.  -1 with err on a failure of
 * SQLite's.
 */
int	idx_prefix_rows_least(struct mb_index *idx, const char *match, int64_t *rows_r,
	    struct mb_err *err);
/*
 * The statistics kept for match (any number of phrases) into *stats
 * (*kept_r), as mb_bm25_stats() would fill them but without running the
 * MATCH (the phrase sizes left 0); *kept_r false when none are kept for
 * the index as it is.
 */
int	idx_rank_stats_kept(struct mb_index *idx, const char *match,
	    struct idx_rank_stats *stats, bool *kept_r, struct mb_err *err);
/*
 * The rows that hold any of match's phrases at most, from the statistics
 * kept for it (the sum of each phrase's rows: no more rows match match,
 * and no more hold its words), into *rows_r (*kept_r; 0 when none are
 * kept).  -1 with err on a failure of SQLite's.
 */
int	idx_rank_rows_kept(struct mb_index *idx, const char *match, int64_t *rows_r,
	    bool *kept_r, struct mb_err *err);
/*
 * The statistics this connection keeps for match into *stats (*kept_r), as
 * mb_bm25_stats() would fill them but without running the MATCH (the phrase
 * sizes left 0); *kept_r false when none are kept for the index as it is.
 */
int	idx_prefix_stats_kept(struct mb_index *idx, const char *match,
	    struct idx_rank_stats *stats, bool *kept_r, struct mb_err *err);
/*
 * The statistics of match into *stats, as mb_bm25 ranks with them (and
 * keeps them on the connection): FTS5 reads match once, a prefix's
 * doclists merged.  *any_r false when nothing matches.  -1 with err on a
 * failure of SQLite's.
 */
int	idx_rank_query_stats(struct mb_index *idx, const char *match,
	    struct idx_rank_stats *stats, bool *any_r, struct mb_err *err);
/*
 * A query's filters for idx_rank_statement(): q's, bound with folder_id
 * as idx_search_bind() binds them, and the runs of ids (a wide folder's,
 * n_runs of them in order; none: every id) that hold every row passing.
 */
struct idx_rank_filters {
	const struct mb_query		*q;
	int64_t				 folder_id;
	const struct idx_id_run		*runs;
	size_t				 n_runs;
};
/*
 * Rank every row holding one of p's words that are not bounded into set
 * (set->floor.prefix is score, which scores them): first those holding a
 * bounded word too, their ids sorted into both (the caller frees
 * both->ids) and set as score's skip, then the others, skipping those.
 * The walk over the bounded words skips them too.  With filters (not
 * NULL), only the rows that pass and can reach the page are ranked, and
 * noted in both: a row that fails them fails the walk's too, and one
 * below the floor stays below it there, scored by its bounded words alone.
 */
int	idx_prefix_rank_rare(struct mb_index *idx, const struct idx_prefix *p,
	    const struct idx_rank_filters *filters,
	    struct idx_rank_set *set, struct idx_rank_prefix *score, struct idx_ids *both,
	    struct mb_err *err);
/*
 * Rank every row of match (a MATCH the query's own, or one of its parts:
 * set->floor says how rows are scored) into set, with filters when not
 * NULL (over each of their runs).  -1 with err on a failure of SQLite's.
 */
int	idx_rank_statement(struct mb_index *idx, const char *match,
	    const struct idx_rank_filters *filters, struct idx_rank_set *set,
	    struct mb_err *err);
/* Sort ids ascending (FTS5 gives them so: only in case). */
void	idx_ids_sort(struct idx_ids *ids);
/* Append id to ids, growing its array (the caller frees ids->ids). */
void	idx_ids_add(struct idx_ids *ids, int64_t id);
/*
 * An OR of words in parts (index_search_or.c): the MATCH of its words
 * syncd bounds, "(b1 OR b2)" (owned), and when some are not, those alone,
 * "(r1 OR r2)", and both kinds in a row, "(r1 OR r2) AND (b1 OR b2)"
 * (owned, NULL when every word is bounded), each with the query's NOT
 * ("... NOT (n1)") when it has one; for each, the query's phrase slot of
 * each of its phrases, in order.
 */
struct idx_or_parts {
	char	*bounded, *rare, *both;
	int	 bounded_slot[IDX_RANK_PHRASES], n_bounded;
	int	 rare_slot[IDX_RANK_PHRASES], n_rare;
	int	 both_slot[IDX_RANK_PHRASES], n_both;
};
/*
 * The parts of match (an OR of n_pos one-word phrases, then perhaps a NOT
 * of the rest, n_ph in all, as query.c writes it), rare[i] saying whether
 * phrase i has no bounds, into *o (released by idx_or_parts_release());
 * each part keeps the NOT.  -1 when match's phrases are not n_ph.
 */
int	idx_or_parts_make(const char *match, const bool *rare, int n_pos, int n_ph,
	    struct idx_or_parts *o);
void	idx_or_parts_release(struct idx_or_parts *o);
/*
 * Rank every row holding one of o's words without bounds into set, scored
 * with the query's stats (struct idx_rank_parts): first those holding a
 * bounded word too, their ids sorted into both (the caller frees
 * both->ids), for the walk over the bounded words to skip, then the
 * others, skipping those.  With filters (not NULL) as
 * idx_prefix_rank_rare() says.  -1 with err on a failure of SQLite's.
 */
int	idx_or_rank_rare(struct mb_index *idx, const struct idx_or_parts *o,
	    const struct idx_rank_stats *stats, const struct idx_rank_filters *filters,
	    struct idx_rank_set *set, struct idx_ids *both, struct mb_err *err);
#endif
