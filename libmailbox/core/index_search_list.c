/*
 * A page of a query of filters alone, newest first (search-private.h,
 * idx_search_list): which statement reads it depends on what the filters
 * name -- one message or thread, the own addresses, a filter few messages
 * pass, a date range, or none of these.  index_search.c ranks words.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "search-private.h"

static const char search_sql_filter[] =
	"SELECT m.id FROM messages AS m WHERE " SEARCH_FILTERS "AND " SEARCH_DATES
	"ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * The same with a date bound: "?3 IS NULL OR m.sort_date >= ?3" hides the
 * range from the planner, which then walks messages_sort_date from the newest message
 * down (40,000 entries for after:2002-09-01 at 100,000 messages).  Here the
 * open end is bound to the extreme value (idx_search_list) and the index is
 * searched by range.  Same rows: with either bound set, a NULL date already
 * failed the test (and INT64_MAX is never a real date).
 */
static const char search_sql_filter_dated[] =
	"SELECT m.id FROM messages AS m WHERE " SEARCH_FILTERS
	"AND " SEARCH_DATE " >= ?3 AND " SEARCH_DATE " < ?4 "
	"ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * The same in one folder (in: or a role), with or without a date range:
 * "?2 IS NULL OR m.folder_id = ?2" hides the folder from the planner too,
 * which then walked every message newest first through messages_sort_date,
 * reading each row to test its folder: `in:Notes`, a folder of 40
 * messages, read all 1,000,000 rows (about 520 ms of CPU).  Said outright,
 * the folder's own entries of messages_folder_sort_date are walked newest
 * first, in the page's order (the date, then the id), the dates a range of
 * them.
 */
static const char search_sql_filter_folder[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_folder_sort_date "
	"WHERE m.folder_id = ?2 AND " SEARCH_FILTERS "AND " SEARCH_DATES
	"ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";
static const char search_sql_filter_folder_dated[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_folder_sort_date "
	"WHERE m.folder_id = ?2 AND " SEARCH_FILTERS
	"AND " SEARCH_DATE " >= ?3 AND " SEARCH_DATE " < ?4 "
	"ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * Filters alone that few messages pass (sparse_filters), covered by
 * messages_search_filter: the whole narrow index is read (a hundred rows a
 * page) and the page's rows picked by a top-N sort, instead of walking
 * messages newest first through messages_sort_date and reading each row, body
 * and all, to test it -- which for label:rare or is:draft read all 100,000
 * rows.  A filter most mail passes (in:inbox, -is:replied) is cheaper the
 * other way, where the walk stops after a page.  The date is spelled over
 * the index's own columns (SEARCH_DATE_COVERED): naming sort_date, a
 * generated column, makes SQLite read each table row after all.
 */
static const char search_sql_filter_ix[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_search_filter "
	"WHERE " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
	"ORDER BY " SEARCH_DATE_COVERED " DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * Through an index of few (search-private.h, SEARCH_FEW_EACH): its ids,
 * each looked up in messages_search_filter for the other filters and its
 * date, instead of reading the whole narrow index as search_sql_filter_ix
 * does (1,000,000 entries at 1,000,000 messages, for the 1% flagged).
 * is:flagged reads the flagged ids (but in a small folder, whose own
 * entries serve); the unread, labelled, attached, large, listed, answered
 * or draft ids serve filters few messages pass (sparse_filters) when a
 * sample of the messages finds that index holds few of them
 * (idx_narrow_few): where a client labels nearly every message, reading
 * the narrow index in order is cheaper than a seek for each.  Before
 * migrations 0019, 0020, 0024, 0025, 0026 and 0027 they do not prepare,
 * and the list is read as before.
 */
#define FILTER_FEW_SQL(few, index, test) \
	[few] = "SELECT m.id FROM " SEARCH_FEW_FROM(index) "WHERE " test " AND " \
	SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED \
	"ORDER BY " SEARCH_DATE_COVERED " DESC, m.id DESC LIMIT ?8 OFFSET ?9",
static const char *const search_sql_filter_few[] = { SEARCH_FEW_EACH(FILTER_FEW_SQL) };

/*
 * from:me or to:me without words: ?1 is the own addresses as phrases
 * (idx_search_me_match), so FTS5 names the few candidates and the exact
 * test reads only their rows, instead of testing every message.
 */
static const char search_sql_filter_me[] =
	"SELECT m.id FROM messages_fts CROSS JOIN messages AS m ON m.id = messages_fts.rowid "
	"WHERE messages_fts MATCH ?1 AND " SEARCH_FILTERS "AND " SEARCH_DATES
	"ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * id: and thread: alone name a handful of rows: said outright, the planner
 * reads them through messages_message_id or messages_thread instead of
 * walking every message newest first to test each.
 */
static const char search_sql_filter_msgid[] =
	"SELECT m.id FROM messages AS m WHERE m.message_id = ?13 AND " SEARCH_FILTERS
	"AND " SEARCH_DATES "ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";
static const char search_sql_filter_thread[] =
	"SELECT m.id FROM messages AS m WHERE m.thread_id = ?14 AND " SEARCH_FILTERS
	"AND " SEARCH_DATES "ORDER BY " SEARCH_DATE " DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * True when q has a filter that few messages may pass: a label, from:me, a
 * List-Id, a lower or an upper size bound, is:flagged/answered/draft or
 * has:attachment.  Which way a page of filters alone is read depends on
 * it (search_sql_filter_ix) and on a sample (few_pass).
 */
static bool
sparse_filters(const struct mb_query *q)
{
	return idx_search_labelled(q) || q->from_me == 1 ||
	    q->list != NULL || q->size_min >= 0 || q->size_max >= 0 ||
	    (q->flags_set & ~(unsigned)MB_FLAG_SEEN) ||
	    q->has_attachment == 1;
}

_Thread_local uint64_t idx_list_scans;
_Thread_local uint64_t idx_list_steps;

/*
 * Whether the first message at or after id ?30 passes the filters (?2-?18,
 * idx_search_bind), by its entry in messages_search_filter alone: a seek
 * into the table's rows, cold in a large index, cost the first search at
 * 1,000,000 messages 100 ms of page faults.
 */
static const char sample_pass_sql[] =
	"SELECT " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
	"FROM messages AS m INDEXED BY messages_search_filter WHERE m.id >= ?30 "
	"ORDER BY m.id LIMIT 1";
/*
 * With a folder, its own first message at or after ?30 (messages_folder_ids,
 * migrations/0021), since the walk reads the folder's entries alone:
 * sampled over every id, a folder of 30% of the messages held 19 of the
 * samples, and a filter on a twentieth of its mail passed at most one of
 * them, so `in:Lists larger:20000` at 1,000,000 messages read the narrow
 * index whole (66 ms) where its page lay in its newest 600 messages.
 */
static const char sample_folder_pass_sql[] =
	"SELECT " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
	"FROM messages AS m INDEXED BY messages_search_filter WHERE m.id = "
	"(SELECT id FROM messages INDEXED BY messages_folder_ids "
	"WHERE folder_id = ?2 AND id >= ?30 ORDER BY id LIMIT 1)";

/*
 * Messages sampled evenly over the ids to choose between the two reads of
 * such filters.  Reading the whole narrow index costs about 0.1 us an
 * entry; the walk newest first reads each message's row until the page is
 * full, about IDX_LIST_ROW_COST times that a row, so it serves when the
 * sample says the page is found in fewer rows than the index has entries
 * over IDX_LIST_ROW_COST.  A label on a quarter of the mail, or attachments
 * on a fifth, as in real mail, find a page of 20 in about a hundred rows;
 * a label on one message in ten thousand needs the whole index either way.
 */
#define LIST_SAMPLES	64

/*
 * A seek of an index of few's id into messages_search_filter costs about
 * this many entries of the narrow index read in order (idx_narrow_few).
 */
#define LIST_SEEK_COST	6

/*
 * When at most one of the LIST_SAMPLES passes, the filters may still pass
 * one message in 50 (each of two filters on much mail, few messages on
 * both: `list:spamassassin is:unread` at 1,000,000 messages, 2%), which
 * the walk serves in about a thousand rows, where the other read, an index
 * of few's tens of thousands of ids each sought or the narrow index whole,
 * costs many times that.  So up to LIST_SAMPLES_MORE more are taken (each
 * a seek, LIST_SEEK_COST), at most a LIST_SAMPLES_SHARE'th of what that
 * other read costs, and fewer than 2 * LIST_SAMPLES not at all.  Of those
 * the walk needs more than two to pass: 2 of 512 was a filter on one
 * message in 670 (`list:spamassassin larger:10000` at 1,000,000 messages),
 * whose walk gave up past its budget.
 */
#define LIST_SAMPLES_MORE	512
#define LIST_SAMPLES_SHARE	16

/*
 * How many of *n_r messages sampled evenly over the ids (the folder's, with
 * migrations/0021) pass q's filters, into *in_r; *n_r is lowered to the
 * number of ids when there are fewer.  -1 with err on a failure of
 * SQLite's.
 */
static int
sample_pass(struct mb_index *idx, const struct mb_query *q, int64_t folder_id, int64_t max_id,
    int *n_r, int *in_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	int64_t lo = -1, hi = -1;
	int rc = SQLITE_ROW;

	*in_r = 0;
	if ((q->folder || q->role) && idx_folder_span(idx, folder_id, &lo, &hi, err) == -1)
		return -1;
	if (lo < 0) {	/* no folder, or no messages_folder_ids: over every id */
		lo = 1;
		hi = max_id;
		st = idx_stmt_sql(idx, sample_pass_sql, err);
	} else
		st = idx_stmt_sql(idx, sample_folder_pass_sql, err);
	if (st == NULL)
		return -1;
	if (*n_r > hi - lo + 1)
		*n_r = (int)(hi - lo + 1);
	idx_search_bind(st, q, folder_id);
	for (int i = 0; i < *n_r && rc == SQLITE_ROW; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 30, lo + (hi - lo + 1) / *n_r * i);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			*in_r += sqlite3_column_int(st, 0);
		else if (rc == SQLITE_DONE)
			rc = SQLITE_ROW;	/* no message at or after it: none passes */
	}
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, "search: sample the filters", err);
}

/*
 * A walk newest first chosen by the sample over the ids reads rows in date
 * order, so mail whose dates the ids do not follow can make it read far
 * more rows than the sample said: `list:spamassassin larger:10000` at
 * 1,000,000 messages passes one message in 670, all dated in five weeks
 * of 2002 with 415,000 messages dated after them, and walked 415,000 rows
 * (400 ms of CPU) where the lists' index served in 130.  So such a walk
 * is given what the other read would cost, counted in SQLite's steps, and
 * past that the page is read the other way.  A walked row is
 * LIST_STEPS_PER_ROW steps (13 to 20 at 1,000,000 messages) and costs
 * about what a seek of an index of few's id does (0.8 us: the walk of
 * list:spamassassin 18,350 rows in 14 ms, its 81,000 ids sought in 65),
 * or IDX_LIST_ROW_COST entries of the narrow index read whole.
 */
#define LIST_STEPS_PER_ROW	20
/* SQLite's steps between two looks at a walk's budget (sqlite3_progress_handler). */
#define LIST_BUDGET_OPS		1000

/*
 * Whether few messages pass q's filters for a page at offset of limit rows
 * (*few_r): at most one of the messages sampled, or too few for the walk
 * to find the page in fewer rows than the narrow index has entries over
 * IDX_LIST_ROW_COST; and what the walk would cost, in entries of that
 * index (*walk_r; 0 for a small index, which is read whole), and the
 * budget of SQLite's steps past which a walk has cost what the other read
 * would (*budget_r).  few_ids is the guessed size of the index of few the
 * page would be read through instead (-1: none, the narrow index whole):
 * what that read costs pays for more samples when the first are too thin
 * to tell, and is the budget.  -1 with err on a failure of SQLite's.
 */
static int
few_pass(struct mb_index *idx, const struct mb_query *q, int64_t folder_id, int64_t offset,
    size_t limit, int64_t few_ids, bool *few_r, double *walk_r, uint64_t *budget_r,
    struct mb_err *err)
{
	int64_t max_id = 0;
	int n = LIST_SAMPLES, in = 0, more;
	double other;

	*few_r = true;
	*walk_r = 0;
	*budget_r = 0;
	if (idx_max_id(idx, "search: sample the filters", &max_id, err) == -1)
		return -1;
	if (max_id < LIST_SAMPLES * IDX_LIST_ROW_COST)
		return 0;	/* a small index: reading it whole costs little */
	if (sample_pass(idx, q, folder_id, max_id, &n, &in, err) == -1)
		return -1;
	other = few_ids >= 0 ? (double)few_ids * LIST_SEEK_COST : (double)max_id;
	/* a walked row costs what an id sought does, or IDX_LIST_ROW_COST entries */
	*budget_r = (uint64_t)(few_ids >= 0 ? few_ids : max_id / IDX_LIST_ROW_COST) *
	    LIST_STEPS_PER_ROW;
	if (*budget_r < LIST_BUDGET_OPS)
		*budget_r = LIST_BUDGET_OPS;
	more = other / (LIST_SAMPLES_SHARE * LIST_SEEK_COST) > LIST_SAMPLES_MORE ?
	    LIST_SAMPLES_MORE : (int)(other / (LIST_SAMPLES_SHARE * LIST_SEEK_COST));
	if (in <= 1 && more >= 2 * LIST_SAMPLES) {
		n = more;
		if (sample_pass(idx, q, folder_id, max_id, &n, &in, err) == -1)
			return -1;
	}
	/* the walk reads about (offset + limit + 1) * n / in rows (the folder's) */
	*walk_r = in == 0 ? (double)INT64_MAX :
	    ((double)offset + (double)limit + 1.0) * n / in * IDX_LIST_ROW_COST;
	*few_r = in <= (n > LIST_SAMPLES ? 2 : 1) || *walk_r > (double)max_id;
	return 0;
}

struct walk_budget {
	uint64_t	looks_left;	/* LIST_BUDGET_OPS steps each */
	bool		over;
};

static int
walk_over_budget(void *arg)
{
	struct walk_budget *b = arg;

	if (b->looks_left == 0) {
		b->over = true;
		return 1;	/* the step answers SQLITE_INTERRUPT */
	}
	b->looks_left--;
	return 0;
}

_Thread_local uint64_t idx_list_walks_given_up;

/*
 * The date a message sorts by, by its entry of messages_search_filter (?30
 * its id), when it passes q's filters (?2-?18, idx_search_bind): for the
 * ids two indexes of few meet at (idx_narrow_meet).
 */
static const char meet_pass_sql[] =
	"SELECT " SEARCH_DATE_COVERED " FROM messages AS m INDEXED BY messages_search_filter "
	"WHERE m.id = ?30 AND " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED;

/* A message that passes, for the page's order. */
struct dated {
	int64_t	id;
	int64_t	date;
	bool	undated;
};

/* The page's order: ORDER BY the date DESC (no date last, as SQLite puts NULL), id DESC. */
static int
newest_first(const void *pa, const void *pb)
{
	const struct dated *a = pa, *b = pb;

	if (a->undated != b->undated)
		return a->undated ? 1 : -1;
	if (!a->undated && a->date != b->date)
		return a->date > b->date ? -1 : 1;
	return (a->id < b->id) - (a->id > b->id);
}

/*
 * A page of filters alone through the ids two indexes of few meet at
 * (idx_narrow_meet, by idx_narrow_few()'s sample): each sought in messages_search_filter for every
 * filter and its date, the page sorted from those that pass, and their
 * number the total (*total_r), exact where the counts stop at
 * MB_SEARCH_COUNT_CAP.  *used_r false (nothing set) when the meeting is
 * not read.  -1 with err on a failure of SQLite's.
 */
static int
meet_page(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    const struct idx_narrow_sample *sample, int64_t offset, size_t limit, int64_t *ids,
    size_t *n_r, bool *more_r, int64_t *total_r, bool *used_r, struct mb_err *err)
{
	struct idx_ids meet;
	struct dated *d;
	sqlite3_stmt *st;
	size_t n = 0;
	int rc = SQLITE_DONE;

	if (idx_narrow_meet(idx, q, sample, &meet, used_r, err) == -1)
		return -1;
	if (!*used_r)
		return 0;
	if ((st = idx_stmt_sql(idx, meet_pass_sql, err)) == NULL) {
		free(meet.ids);
		return -1;
	}
	idx_search_bind(st, q, folder_id);
	d = mb_xcalloc(meet.n + 1, sizeof(*d));
	for (size_t i = 0; i < meet.n && rc == SQLITE_DONE; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 30, meet.ids[i]);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			d[n].id = meet.ids[i];
			d[n].undated = sqlite3_column_type(st, 0) == SQLITE_NULL;
			d[n].date = sqlite3_column_int64(st, 0);
			n++;
			rc = SQLITE_DONE;
		}
	}
	idx_list_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	idx_stmt_done(st);
	free(meet.ids);
	if (rc != SQLITE_DONE) {
		free(d);
		return idx_sqlerr(idx, rc, "search: the filters' meeting", err);
	}
	qsort(d, n, sizeof(*d), newest_first);
	*n_r = 0;
	for (int64_t i = offset; i < (int64_t)n && *n_r < limit; i++)
		ids[(*n_r)++] = d[i].id;
	*more_r = (int64_t)n > offset + (int64_t)*n_r;
	*total_r = (int64_t)n;
	free(d);
	return 0;
}

/*
 * Prepare (unless st is already) and bind sql for a page of limit rows at
 * offset; NULL with err on a failure of SQLite's.  The caller steps it
 * (list_read()), which finishes it.
 */
static sqlite3_stmt *
list_stmt(struct mb_index *idx, sqlite3_stmt *st, const char *sql, const struct mb_query *q,
    int64_t folder_id, int64_t offset, size_t limit, struct mb_err *err)
{
	if (st == NULL && (st = idx_stmt_sql(idx, sql, err)) == NULL)
		return NULL;
	idx_list_scans += sql == search_sql_filter_ix;
	idx_search_bind(st, q, folder_id);
	/* both ends bound: see search_sql_filter_dated */
	if (sql == search_sql_filter_dated || sql == search_sql_filter_folder_dated) {
		sqlite3_bind_int64(st, 3, q->since);
		sqlite3_bind_int64(st, 4, q->until);
	}
	sqlite3_bind_int64(st, 8, (int64_t)limit + 1);
	sqlite3_bind_int64(st, 9, offset);
	return st;
}

/*
 * Step st (list_stmt()) for a page of up to limit ids into ids, *n_r and
 * *more_r (a row past the page), and finish it.  With budget (SQLite's
 * steps; 0: none) a read that would take more gives up: *over_r true and
 * no ids.  -1 with err on a failure of SQLite's.
 */
static int
list_read(struct mb_index *idx, sqlite3_stmt *st, size_t limit, uint64_t budget,
    int64_t *ids, size_t *n_r, bool *more_r, bool *over_r, struct mb_err *err)
{
	sqlite3 *db = idx->db;
	struct walk_budget b = { .looks_left = budget / LIST_BUDGET_OPS, .over = false };
	int rc;

	*n_r = 0;
	*more_r = false;
	*over_r = false;
	if (budget > 0)
		sqlite3_progress_handler(db, LIST_BUDGET_OPS, walk_over_budget, &b);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n_r == limit) {
			*more_r = true;
			rc = SQLITE_DONE;
			break;
		}
		ids[(*n_r)++] = sqlite3_column_int64(st, 0);
	}
	if (budget > 0)
		sqlite3_progress_handler(db, 0, NULL, NULL);
	idx_list_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	if (rc == SQLITE_INTERRUPT && b.over) {
		idx_list_walks_given_up++;
		*over_r = true;
		*n_r = 0;
		*more_r = false;
		rc = SQLITE_DONE;
	} else if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "search: filter", err);
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
idx_search_list(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    int64_t offset, size_t limit, int64_t *ids, size_t *n_r, bool *more_r, int64_t *total_r,
    struct mb_err *err)
{
	bool dated = q->since != INT64_MIN || q->until != INT64_MAX;
	/* filters alone the narrow index covers: read through an index of few or sampled */
	bool few_index = !q->msgid && q->thread_id <= 0 && !q->match && idx_search_covered(q);
	enum idx_few few = IDX_FEW_NONE, other_few = IDX_FEW_NONE;
	struct idx_narrow_sample sample = { .taken = false };
	int64_t few_ids = 0;
	bool scan = few_index && sparse_filters(q);
	bool small = false, sampled = false, over = false, met = false;
	double walk = 0;
	uint64_t walk_budget = 0;
	const char *sql;
	sqlite3_stmt *st = NULL;

	*total_r = -1;
	/*
	 * A small folder's own entries serve whatever its filters: reading all
	 * of them costs less than any other read (`in:Notes has:attachment`,
	 * 40 messages at 1,000,000, read the narrow index whole: 38 ms)
	 */
	if (scan && (q->folder || q->role) && idx_folder_small(idx, folder_id, &small, err) == -1)
		return -1;
	if (small)
		scan = false;

	/*
	 * is:flagged through the flagged ids; other filters few messages pass
	 * through the unread, labelled, attached, large, listed, answered or
	 * draft ids when the sample finds those few
	 */
	if (scan && (q->flags_set & MB_FLAG_FLAGGED))
		few = IDX_FEW_FLAGGED;
	else if (scan && idx_narrow_few(idx, q, &few, &few_ids, &sample, err) == -1)
		return -1;
	/*
	 * filters that may be sparse: the narrow index whole only when the
	 * sample finds them so; and an index of few's ids are each sought and
	 * the page sorted from them all, so where the walk newest first finds
	 * the page in less (a mailing list of a twelfth of the mail,
	 * list:spamassassin at 1,000,000 messages: 81,000 ids sought, 89 ms of
	 * CPU, where the walk reads some 300 rows), walk
	 */
	if (scan && few != IDX_FEW_FLAGGED) {
		if (few_pass(idx, q, folder_id, offset, limit, few != IDX_FEW_NONE ? few_ids : -1,
		    &scan, &walk, &walk_budget, err) == -1)
			return -1;
		sampled = !scan;	/* a walk the sample chose, which a budget bounds */
	}
	if (few != IDX_FEW_NONE && few != IDX_FEW_FLAGGED && !scan &&
	    walk < (double)few_ids * LIST_SEEK_COST) {
		other_few = few;
		few = IDX_FEW_NONE;
	}
	/*
	 * few pass, through an index of few: where another part of the filters
	 * has one too and holds not much more, through the ids both hold
	 */
	if (scan && few != IDX_FEW_NONE && few != IDX_FEW_FLAGGED &&
	    meet_page(idx, q, folder_id, &sample, offset, limit, ids, n_r, more_r, total_r,
	    &met, err) == -1)
		return -1;
	if (met)
		return 0;
	if (few != IDX_FEW_NONE)	/* none before its migration: read as below */
		st = idx_few_stmt(idx, search_sql_filter_few[few]);
	/* is:flagged from before migration 0019: sampled as the other filters */
	if (st == NULL && few == IDX_FEW_FLAGGED &&
	    few_pass(idx, q, folder_id, offset, limit, -1, &scan, &walk, &walk_budget, err) == -1)
		return -1;
	sql = few != IDX_FEW_NONE && st != NULL ? search_sql_filter_few[few] :
	    q->msgid ? search_sql_filter_msgid :
	    q->thread_id > 0 ? search_sql_filter_thread :
	    q->match ? search_sql_filter_me :
	    scan ? search_sql_filter_ix :
	    q->folder || q->role ? (dated ? search_sql_filter_folder_dated :
	    search_sql_filter_folder) :
	    dated ? search_sql_filter_dated : search_sql_filter;
	/* a walk the sample chose: bounded by what the read it was chosen over would cost */
	if ((st = list_stmt(idx, st, sql, q, folder_id, offset, limit, err)) == NULL ||
	    list_read(idx, st, limit, sampled && few == IDX_FEW_NONE &&
	    sql != search_sql_filter_ix ? walk_budget : 0, ids, n_r, more_r, &over, err) == -1)
		return -1;
	if (!over)
		return 0;
	/* the walk gave up: the index of few it was chosen over (none before its migration), or the narrow index whole */
	st = other_few != IDX_FEW_NONE ? idx_few_stmt(idx, search_sql_filter_few[other_few]) :
	    NULL;
	sql = st != NULL ? search_sql_filter_few[other_few] : search_sql_filter_ix;
	if ((st = list_stmt(idx, st, sql, q, folder_id, offset, limit, err)) == NULL)
		return -1;
	return list_read(idx, st, limit, 0, ids, n_r, more_r, &over, err);
}
