/*
 * The ids a ranked search's scope lets through, when few do: a narrow
 * date range, a small folder, both, the flagged messages, the unread ones,
 * the labelled ones, those with attachments, the large ones, those of a
 * mailing list, the answered ones or the drafts (docs/index.md, "Ranking",
 * "A narrow scope"), and a thread
 * beside a prefix (idx_narrow_thread_ids).  Read from the index
 * on the date (messages_sort_date), on the folder and date
 * (messages_folder_sort_date), of the flag (messages_flagged,
 * messages_unread: migrations/0019), of the labels (messages_labelled:
 * migrations/0020), of the attachments (messages_attached: migrations/0024),
 * of the sizes (messages_size: migrations/0025), of the lists
 * (messages_list: migrations/0026), of the other two flags
 * (messages_answered, messages_draft: migrations/0027) or of the thread
 * (messages_thread)
 * into a bitmap, so that the read of every match answers
 * a row outside the scope before its hits are read or its filters joined.
 *
 * Without it a ranked search with such a filter joins every match it
 * scores to messages_search_filter to test it, about half a microsecond
 * each: `linux before:2002-02-01` at 1,000,000 messages read and joined
 * its 158,306 matches for 660 that pass (87 ms of CPU; 12.5 with the
 * bitmap).  The scope's own rows come off those indexes at about 0.07 us
 * each, so the bitmap is made when the scope holds few of the messages: a
 * sample of the messages says how many first, and the read stops at a cap.
 * Nor is it made for words with fewer matches than an eighth of the
 * scope's guessed ids: joining those costs less than the bitmap (counted
 * up to there, a read of that many rows at most).
 *
 * The read of every match then seeks to the runs of ids the scope's rows
 * lie in (rowid BETWEEN), one after the other, skipping the long gaps
 * between them.  In a real mailbox ids grow with arrival and a backfill
 * indexes folder by folder: a folder's ids are a long run from its
 * backfill and a scattering among the mail that came later, and a recent
 * date range a run at the end.  Until 2026-12-04 one span from the
 * scope's lowest id to its highest was read, which for such a folder is
 * most of the index.
 *
 * A scope of several parts (a folder and is:flagged, say) is read through
 * the part the sample finds narrowest: its bitmap lets through more than
 * the scope, and the join still tests every filter.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "search-private.h"

/*
 * The folder, date, flags, whether any label, whether an attachment, the
 * size and whether the List-Id holds ?2 (list:X's text, as
 * SEARCH_FILTERS_ROW tests it) of the first message at or after an id (ids
 * can have gaps), from the narrow index of the filters' columns (a hundred
 * rows a page) rather than the table's row, which holds the body too.
 */
static const char sample_sql[] =
	"SELECT m.folder_id, " SEARCH_DATE_COVERED ", m.flags, " SEARCH_LABELLED_AS("m")
	", " SEARCH_ATTACHED_AS("m") ", m.size, instr(lower(m.list_id), ?2) > 0 "
	"FROM messages AS m INDEXED BY messages_search_filter WHERE m.id >= ?1 "
	"ORDER BY m.id LIMIT 1";
/* Whether the words match at least ?2 rows: a read of that many at most. */
static const char matches_sql[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT ?2)";
/*
 * The scope's ids (?1 the folder, ?2 to ?3 the dates, ?4 the cap), by an
 * index alone.  An open end of a range is bound to the extreme value: with
 * either bound set a NULL date fails the test, as in SEARCH_DATES, and an
 * extreme value is never a real date.  A folder without dates takes its
 * undated rows too.
 */
static const char dates_sql[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_sort_date "
	"WHERE m.sort_date >= ?2 AND m.sort_date < ?3 LIMIT ?4";
static const char folder_dates_sql[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_folder_sort_date "
	"WHERE m.folder_id = ?1 AND m.sort_date >= ?2 AND m.sort_date < ?3 LIMIT ?4";
static const char folder_sql[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_folder_sort_date "
	"WHERE m.folder_id = ?1 LIMIT ?4";
static const char thread_sql[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_thread WHERE m.thread_id = ?1 LIMIT ?4";
/*
 * Whether the first message at or after an id (?30) passes every filter
 * messages_search_filter holds (bound by idx_search_bind), and the ids of
 * those that pass, by a scan of that index (?31 the cap): for a filter
 * with no index of its own (idx_narrow_filter_ids()).
 */
static const char filter_sample_sql[] =
	"SELECT " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
	"FROM messages AS m INDEXED BY messages_search_filter WHERE m.id >= ?30 "
	"ORDER BY m.id LIMIT 1";
static const char filter_ids_sql[] =
	"SELECT m.id FROM messages AS m INDEXED BY messages_search_filter WHERE "
	SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED "LIMIT ?31";
/*
 * The ids of an index of few (search-private.h, SEARCH_FEW_EACH), by the
 * index alone (covering: each entry holds its rowid).
 */
static_assert(MB_FLAG_FLAGGED == 4 && MB_FLAG_SEEN == 1 && MB_FLAG_ANSWERED == 2 &&
    MB_FLAG_DRAFT == 16, "SEARCH_FLAGGED_AS and the others spell the bits");
#define FEW_IDS_SQL(few, index, test) \
	[few] = "SELECT g.id FROM messages AS g INDEXED BY " index " WHERE " test " LIMIT ?4",
static const char *const few_ids_sql[] = { SEARCH_FEW_EACH(FEW_IDS_SQL) };

/*
 * Messages sampled, evenly over the ids, to guess the scope's share; the
 * bitmap is made when at most one in IDX_NARROW_SHARE of them is in it,
 * and its read stops past one in IDX_NARROW_CAP of the messages (a guess
 * that was far too low).  At 1,000,000 messages: 26,235 ids
 * (before:2002-02-01) read in 1.9 ms, against the 75 ms they spare.
 */
#define IDX_NARROW_SAMPLES	64
#define IDX_NARROW_SHARE	16
#define IDX_NARROW_CAP		8
/*
 * After a walk that gave up, the alternative to the scope's ids is a join
 * of every match: they are read up to IDX_NARROW_PER_JOIN for each of the
 * words' rows, and at most one in IDX_NARROW_WALKED_CAP of the messages
 * (`linux list:fork` at 1,000,000 messages, a list of 19% beside a word in
 * 16%, had joined all 160,000 matches of linux: 143 ms of CPU).  Not past
 * a quarter: a date range of 40% (`linux after:2002-09-01`) read 400,000
 * ids where the join of every match stops testing most of them once 1,000
 * have passed (docs/benchmarks.md, "A wide scope read after a walk that
 * gave up").
 */
#define IDX_NARROW_WALKED_CAP	4
/*
 * A list or count through a flag's or the labels' index seeks each of its
 * ids in messages_search_filter, about six times the cost of an entry of
 * the scan in id order it spares: it pays when at most one message in 8
 * is in that index.
 */
#define IDX_NARROW_COUNT_SHARE	8
/* A join costs about as much as reading this many of the scope's ids. */
#define IDX_NARROW_PER_JOIN	8
/*
 * Each run read restarts FTS5's read (the expression parsed again, a seek
 * in each doclist), some microseconds, so only a gap of more than
 * IDX_NARROW_GAP ids none of which is in the scope is skipped, and of
 * those the IDX_NARROW_RUNS - 1 longest.
 */
#define IDX_NARROW_GAP		2048
#define IDX_NARROW_RUNS		64
/*
 * A wide folder's runs are read (idx_folder_runs) when the sample puts the
 * folder's messages and their neighbours in at most one in
 * IDX_FOLDER_SHARE of the samples: the walk and the count then skip the
 * rest.  A folder spread over most of the ids would cost a seek a chunk
 * (about 2 ms at 1,000,000 messages) and skip little.
 */
#define IDX_FOLDER_SHARE	2

/*
 * A scan of messages_search_filter costs about 0.1 us an entry; a match
 * joined to test a filter about 0.6 us, and scored about 0.5: the scan for
 * a filter few messages pass (idx_narrow_filter_ids) is made only for
 * words in at least one message in IDX_FILTER_SCAN_WORDS.
 */
#define IDX_FILTER_SCAN_WORDS	4

bool idx_narrow_ids_used = true;
_Thread_local uint64_t idx_filter_scans;
_Thread_local uint64_t idx_few_reads;

/* What a search's scope tests: its folder (0: none), its dates and its flags. */
struct scope {
	int64_t		folder_id;
	bool		dated;
	int64_t		since, until;
	unsigned	flags_set, flags_clear;	/* as struct mb_query's */
	bool		labelled;		/* a label that must be there */
	bool		attached;		/* has:attachment */
	int64_t		larger;			/* larger:N's bytes; 0 or less: none */
	int64_t		smaller;		/* smaller:N's bytes (size < N); 0 or less: none */
	const char	*list;			/* list:X's text (the query's); NULL: none */
	int64_t		thread_id;		/* 0: none; only idx_narrow_thread_ids sets it */
};

/* Where a scope's ids can be read from: a part of the scope each. */
enum source {
	SOURCE_FOLDER_DATES,	/* the folder, the dates or both */
	SOURCE_FLAGGED,		/* is:flagged */
	SOURCE_UNREAD,		/* is:unread */
	SOURCE_LABELLED,	/* label:X (every labelled message) */
	SOURCE_ATTACHED,	/* has:attachment */
	SOURCE_LARGE,		/* larger:N */
	SOURCE_SMALL,		/* smaller:N (and size:..N) */
	SOURCE_LISTED,		/* list:X */
	SOURCE_ANSWERED,	/* is:answered */
	SOURCE_DRAFT,		/* is:draft */
	SOURCE_THREAD,		/* thread:N, for a prefix: never sampled */
	N_SOURCES
};
/* The index of few each source reads (none: the folder and dates, the thread). */
static const enum idx_few few_of[N_SOURCES] = { [SOURCE_FLAGGED] = IDX_FEW_FLAGGED,
    [SOURCE_UNREAD] = IDX_FEW_UNREAD, [SOURCE_LABELLED] = IDX_FEW_LABELLED,
    [SOURCE_ATTACHED] = IDX_FEW_ATTACHED, [SOURCE_LARGE] = IDX_FEW_LARGE,
    [SOURCE_SMALL] = IDX_FEW_SMALL,
    [SOURCE_LISTED] = IDX_FEW_LISTED, [SOURCE_ANSWERED] = IDX_FEW_ANSWERED,
    [SOURCE_DRAFT] = IDX_FEW_DRAFT };

/* Two filters' indexes of few met (at the end of this file: idx_narrow_meet). */
static bool	meet_pick(const struct scope *s, const int *in_each, enum source *a_r,
		    enum source *b_r);
static int	meet_read(struct mb_index *idx, const struct scope *s, const int *in_each,
		    enum source a, enum source b, int64_t max_id, struct idx_ids *meet, bool *used_r,
		    struct mb_err *err);

void
idx_narrow_ids_release(struct idx_narrow_ids *d)
{
	free(d->bits);
	free(d->runs);
	memset(d, 0, sizeof(*d));
}

/* qsort: the longer gap first, then the earlier. */
static int
gap_longer(const void *a, const void *b)
{
	const struct idx_id_gap *x = a, *y = b;
	int64_t lx = x->before - x->after, ly = y->before - y->after;

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return (x->after > y->after) - (x->after < y->after);
}

/* qsort: the earlier gap first. */
static int
gap_earlier(const void *a, const void *b)
{
	const struct idx_id_gap *x = a, *y = b;

	return (x->after > y->after) - (x->after < y->after);
}

void
idx_narrow_runs_set(struct idx_narrow_ids *d, int64_t lo, int64_t hi, struct idx_id_gap *gaps,
    size_t n_gaps)
{
	if (n_gaps > IDX_NARROW_RUNS - 1) {
		qsort(gaps, n_gaps, sizeof(*gaps), gap_longer);
		n_gaps = IDX_NARROW_RUNS - 1;
		qsort(gaps, n_gaps, sizeof(*gaps), gap_earlier);
	}
	d->runs = mb_xcalloc(n_gaps + 1, sizeof(*d->runs));
	d->runs[0].lo = lo;
	for (size_t i = 0; i < n_gaps; i++) {
		d->runs[i].hi = gaps[i].after;
		d->runs[i + 1].lo = gaps[i].before;
	}
	d->runs[n_gaps].hi = hi;
	d->n_runs = n_gaps + 1;
}

/*
 * d's runs from its bits, split at the longest gaps (above, IDX_NARROW_GAP).
 * None when no bit is set.
 */
static void
scope_runs(struct idx_narrow_ids *d)
{
	struct idx_id_gap *gaps = NULL;
	size_t n_gaps = 0, cap = 0;
	int64_t lo = -1, prev = -1;

	for (int64_t w = 0; w < (d->n + 63) / 64; w++)
		for (uint64_t bits = d->bits[w]; bits != 0; bits &= bits - 1) {
			int64_t id = w * 64 + __builtin_ctzll(bits);

			if (lo < 0)
				lo = id;
			else if (id - prev > IDX_NARROW_GAP) {
				if (n_gaps == cap) {
					cap = cap ? 2 * cap : 64;
					gaps = mb_xrealloc(gaps, cap * sizeof(*gaps));
				}
				gaps[n_gaps++] = (struct idx_id_gap){ prev, id };
			}
			prev = id;
		}
	if (lo >= 0)	/* else nothing in the scope: no run to read */
		idx_narrow_runs_set(d, lo, prev, gaps, n_gaps);
	free(gaps);
}

/* d's bitmap for ids 0 to max_id, empty (release it with idx_narrow_ids_release). */
static void
bits_new(struct idx_narrow_ids *d, int64_t max_id)
{
	d->n = max_id + 1;
	d->bits = mb_xcalloc((size_t)(d->n + 63) / 64, sizeof(*d->bits));
}

/* Set id's bit in d; false for an id past its bitmap (a row newer than its max_id). */
static bool
bit_set(struct idx_narrow_ids *d, int64_t id)
{
	if (id < 0 || id >= d->n)
		return false;
	d->bits[id / 64] |= UINT64_C(1) << (id % 64);
	return true;
}

/* Whether id's bit is set in d. */
static bool
bit_test(const struct idx_narrow_ids *d, int64_t id)
{
	return id >= 0 && id < d->n && ((d->bits[id / 64] >> (id % 64)) & 1);
}

/* d: the bitmap of ids (every id below max_id + 1) and its runs. */
static void
scope_of_ids(struct idx_narrow_ids *d, const struct idx_ids *ids, int64_t max_id)
{
	bits_new(d, max_id);
	for (size_t i = 0; i < ids->n; i++)
		(void)bit_set(d, ids->ids[i]);
	scope_runs(d);
}

/* Whether the scope has the part a source reads. */
static bool
has_source(const struct scope *s, enum source src)
{
	switch (src) {
	case SOURCE_FOLDER_DATES:
		return s->folder_id > 0 || s->dated;
	case SOURCE_FLAGGED:
		return (s->flags_set & MB_FLAG_FLAGGED) != 0;
	case SOURCE_UNREAD:
		return (s->flags_clear & MB_FLAG_SEEN) != 0;
	case SOURCE_LABELLED:
		return s->labelled;
	case SOURCE_ATTACHED:
		return s->attached;
	case SOURCE_LARGE:
		return s->larger > 0;
	case SOURCE_SMALL:
		return s->smaller > 0;
	case SOURCE_LISTED:
		return s->list != NULL;
	case SOURCE_ANSWERED:
		return (s->flags_set & MB_FLAG_ANSWERED) != 0;
	case SOURCE_DRAFT:
		return (s->flags_set & MB_FLAG_DRAFT) != 0;
	case SOURCE_THREAD:
		return s->thread_id > 0;
	default:
		return false;
	}
}

/* Whether the scope has any part a source reads. */
static bool
has_any_source(const struct scope *s)
{
	for (int src = 0; src < N_SOURCES; src++)
		if (has_source(s, (enum source)src))
			return true;
	return false;
}

/*
 * Whether the sampled row in st (sample_sql's: folder, date, flags, labelled,
 * attached, size, listed) is in a source's part of the scope.
 */
static bool
in_source(const struct scope *s, enum source src, sqlite3_stmt *st)
{
	int64_t date;

	if (src == SOURCE_FLAGGED)
		return (sqlite3_column_int64(st, 2) & MB_FLAG_FLAGGED) != 0;
	if (src == SOURCE_UNREAD)
		return (sqlite3_column_int64(st, 2) & MB_FLAG_SEEN) == 0;
	if (src == SOURCE_ANSWERED)
		return (sqlite3_column_int64(st, 2) & MB_FLAG_ANSWERED) != 0;
	if (src == SOURCE_DRAFT)
		return (sqlite3_column_int64(st, 2) & MB_FLAG_DRAFT) != 0;
	if (src == SOURCE_LABELLED)
		return sqlite3_column_int(st, 3) != 0;
	if (src == SOURCE_ATTACHED)
		return sqlite3_column_int(st, 4) != 0;
	if (src == SOURCE_LARGE)
		return sqlite3_column_type(st, 5) != SQLITE_NULL &&
		    sqlite3_column_int64(st, 5) >= s->larger;
	if (src == SOURCE_SMALL)
		return sqlite3_column_type(st, 5) != SQLITE_NULL &&
		    sqlite3_column_int64(st, 5) < s->smaller;
	if (src == SOURCE_LISTED)
		return sqlite3_column_int(st, 6) != 0;	/* NULL, no List-Id: 0 */
	if (src == SOURCE_THREAD)
		return false;	/* the sample reads no thread, and no sampled scope has one */
	if (s->folder_id > 0 && sqlite3_column_int64(st, 0) != s->folder_id)
		return false;
	if (!s->dated)
		return true;
	if (sqlite3_column_type(st, 1) == SQLITE_NULL)
		return false;
	date = sqlite3_column_int64(st, 1);
	return date >= s->since && date < s->until;
}

/*
 * How many of IDX_NARROW_SAMPLES messages spread over ids 1..max_id are in
 * each source's part of the scope, into in (N_SOURCES of them); and, when
 * in_folder is not NULL, whether each is in the scope's folder.
 */
static int
sample_in_scope(struct mb_index *idx, const struct scope *s, int64_t max_id, int *in,
    bool *in_folder, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, sample_sql, err);
	int rc = SQLITE_DONE;

	memset(in, 0, N_SOURCES * sizeof(*in));
	if (in_folder != NULL)
		memset(in_folder, 0, IDX_NARROW_SAMPLES * sizeof(*in_folder));
	if (st == NULL)
		return -1;
	for (int i = 0; i < IDX_NARROW_SAMPLES && (rc == SQLITE_DONE || rc == SQLITE_ROW); i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, 1 + max_id / IDX_NARROW_SAMPLES * i);
		idx_bind_text(st, 2, s->list);
		rc = sqlite3_step(st);
		for (int src = 0; rc == SQLITE_ROW && src < N_SOURCES; src++)
			if (has_source(s, (enum source)src) && in_source(s, (enum source)src, st))
				in[src]++;
		if (in_folder != NULL && rc == SQLITE_ROW)
			in_folder[i] = sqlite3_column_int64(st, 0) == s->folder_id;
	}
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "search: sample the scope", err);
	return 0;
}

/*
 * Whether q's words match at least n rows.  A prefix is taken to: FTS5
 * merges its words' doclists before the first row, whatever the limit.
 */
static int
matches_at_least(struct mb_index *idx, const struct mb_query *q, int64_t n, bool *yes_r,
    struct mb_err *err)
{
	sqlite3_stmt *st;
	int rc;

	*yes_r = true;
	if (!idx_match_plain(q->match))
		return 0;
	if ((st = idx_stmt_sql(idx, matches_sql, err)) == NULL)
		return -1;
	sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*yes_r = sqlite3_column_int64(st, 0) >= n;
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, "search: count the matches", err);
}

/*
 * The statement that reads a source's ids, prepared (release it with
 * idx_stmt_done), or NULL: for a flag, the labels, the attachments, the
 * sizes or the lists, an index from before migrations/0019, 0020, 0024,
 * 0025, 0026 or 0027 has no such index to read, and a search then goes
 * without a bitmap.
 */
static sqlite3_stmt *
source_stmt(struct mb_index *idx, const struct scope *s, enum source src, struct mb_err *err)
{
	if (src == SOURCE_THREAD)
		return idx_stmt_sql(idx, thread_sql, err);
	if (src != SOURCE_FOLDER_DATES)
		return idx_few_stmt(idx, few_ids_sql[few_of[src]]);
	return idx_stmt_sql(idx, s->folder_id <= 0 ? dates_sql : s->dated ? folder_dates_sql :
	    folder_sql, err);
}

/*
 * The ids st (bound, asking one past cap) gives into d, and their runs;
 * *used_r false (d empty) past cap of them.  Finishes st.
 */
static int
read_ids(struct mb_index *idx, sqlite3_stmt *st, int64_t max_id, int64_t cap,
    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	int64_t n = 0;
	int rc;

	*used_r = false;
	bits_new(d, max_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		n += bit_set(d, sqlite3_column_int64(st, 0));	/* none newer than max_id here */
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		idx_narrow_ids_release(d);
		return idx_sqlerr(idx, rc, "search: the scope's ids", err);
	}
	if (n > cap) {
		idx_narrow_ids_release(d);
		return 0;
	}
	scope_runs(d);
	*used_r = true;
	return 0;
}

static void	bind_source(sqlite3_stmt *st, const struct scope *s, enum source src,
		    int64_t cap);

/*
 * Read a source's ids into d, and its runs; *used_r false (d empty) past
 * cap of them.
 */
static int
read_scope(struct mb_index *idx, const struct scope *s, enum source src, int64_t max_id,
    int64_t cap, struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	sqlite3_stmt *st = source_stmt(idx, s, src, err);

	*used_r = false;
	if (st == NULL)		/* an index of few an older schema lacks, or an error */
		return few_of[src] == IDX_FEW_NONE ? -1 : 0;
	bind_source(st, s, src, cap);
	return read_ids(idx, st, max_id, cap, d, used_r, err);
}

/* Bind a source's statement (source_stmt()) for its part of s, asking one past cap. */
static void
bind_source(sqlite3_stmt *st, const struct scope *s, enum source src, int64_t cap)
{
	if (src == SOURCE_FOLDER_DATES && s->folder_id > 0)
		sqlite3_bind_int64(st, 1, s->folder_id);
	if (src == SOURCE_THREAD)
		sqlite3_bind_int64(st, 1, s->thread_id);
	if (src == SOURCE_LARGE)
		sqlite3_bind_int64(st, 11, s->larger);
	if (src == SOURCE_SMALL)
		sqlite3_bind_int64(st, 12, s->smaller);
	if (src == SOURCE_LISTED)
		idx_bind_text(st, 15, s->list);
	if (src == SOURCE_FOLDER_DATES && s->dated) {
		sqlite3_bind_int64(st, 2, s->since);
		sqlite3_bind_int64(st, 3, s->until);
	}
	sqlite3_bind_int64(st, 4, cap + 1);
}

/*
 * How many of the samples are in the folder or next to one that is
 * (in_folder, IDX_NARROW_SAMPLES of them): the share of the ids its runs
 * would hold at least, since where a run starts or ends between two
 * samples the sample cannot tell.
 */
static int
samples_near(const bool *in_folder)
{
	int n = 0;

	for (int i = 0; i < IDX_NARROW_SAMPLES; i++)
		n += in_folder[i] || (i > 0 && in_folder[i - 1]) ||
		    (i + 1 < IDX_NARROW_SAMPLES && in_folder[i + 1]);
	return n;
}

/*
 * The source of the scope's part that holds the fewest of the samples in
 * (*in_r of them; the first in enum order on a tie), or N_SOURCES when
 * the scope has no part a source reads.
 */
static enum source
narrowest(const struct scope *s, const int *in, int *in_r)
{
	enum source best = N_SOURCES;

	for (int src = 0; src < N_SOURCES; src++)
		if (has_source(s, (enum source)src) && (best == N_SOURCES || in[src] < in[best]))
			best = (enum source)src;
	*in_r = best == N_SOURCES ? 0 : in[best];
	return best;
}

/*
 * How many of the scope's ids to read at most after a walk that gave up
 * (IDX_NARROW_WALKED_CAP): *cap_r (one in IDX_NARROW_CAP of the messages)
 * raised for words with many rows, from the statistics the walk kept.
 */
static int
walked_cap(struct mb_index *idx, const struct mb_query *q, int64_t max_id, int64_t *cap_r,
    struct mb_err *err)
{
	int64_t rows = 0, most = max_id / IDX_NARROW_WALKED_CAP;
	bool kept = false;

	if (idx_rank_rows_kept(idx, q->match, &rows, &kept, err) == -1)
		return -1;
	if (kept && rows > *cap_r / IDX_NARROW_PER_JOIN)
		*cap_r = rows >= most / IDX_NARROW_PER_JOIN ? most : rows * IDX_NARROW_PER_JOIN;
	return 0;
}

/*
 * idx_narrow_ids(), or with walked idx_narrow_ids_walked(): the scope's
 * ids whatever share of the sample is in it (up to walked_cap(), unless
 * the sample puts more in it: the read would stop there), and never a
 * folder's runs.
 */
static int
narrow_ids(struct mb_index *idx, const struct mb_query *q, int64_t folder_id, bool walked,
    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	struct scope s = { .folder_id = q->folder || q->role ? folder_id : 0,
	    .dated = q->since != INT64_MIN || q->until != INT64_MAX,
	    .since = q->since, .until = q->until,
	    .flags_set = q->flags_set, .flags_clear = q->flags_clear,
	    .labelled = idx_search_labelled(q), .attached = q->has_attachment == 1,
	    .larger = q->size_min, .smaller = q->size_max, .list = q->list };
	int64_t max_id = 0, cap;
	int in_each[N_SOURCES], in = 0;
	bool in_folder[IDX_NARROW_SAMPLES];
	enum source src, ma, mb;
	struct idx_ids meet = { 0 };
	bool many = false, wide = false, met = false;

	memset(d, 0, sizeof(*d));
	*used_r = false;
	if (!idx_narrow_ids_used || q->match == NULL || !has_any_source(&s) ||
	    (s.dated && s.since >= s.until))
		return 0;
	if (idx_max_id(idx, "search: the scope", &max_id, err) == -1)
		return -1;
	if (max_id < IDX_NARROW_SAMPLES)
		return 0;	/* a few messages: their matches cost less than the bitmap */
	if (sample_in_scope(idx, &s, max_id, in_each, in_folder, err) == -1)
		return -1;
	src = narrowest(&s, in_each, &in);
	cap = max_id / IDX_NARROW_CAP;
	if (walked && walked_cap(idx, q, max_id, &cap, err) == -1)
		return -1;
	if (walked && in * (max_id / IDX_NARROW_SAMPLES) > cap)
		return 0;	/* more than the read would take: it would stop at cap */
	if (!walked && in * IDX_NARROW_SHARE > IDX_NARROW_SAMPLES) {
		/*
		 * two parts with an index of few, each wide, may meet at few
		 * ids (idx_narrow_meet): those, where the words have more
		 * matches than reading the two indexes costs in joins
		 * (`the list:spamassassin larger:10000` at 1,000,000 messages:
		 * 115 ms of CPU, 50 with the 1,487 ids both hold)
		 */
		if (meet_pick(&s, in_each, &ma, &mb)) {
			if (matches_at_least(idx, q, (int64_t)(in_each[ma] + in_each[mb]) *
			    (max_id / IDX_NARROW_SAMPLES) / IDX_NARROW_PER_JOIN, &many, err) == -1 ||
			    (many && meet_read(idx, &s, in_each, ma, mb, max_id, &meet, &met, err) == -1))
				return -1;
			if (met) {
				scope_of_ids(d, &meet, max_id);
				free(meet.ids);
				*used_r = true;
				return 0;
			}
		}
		/* a wide scope: many matches pass; a folder in few stretches, its runs */
		if (s.folder_id > 0 &&
		    samples_near(in_folder) * IDX_FOLDER_SHARE <= IDX_NARROW_SAMPLES)
			return idx_folder_runs(idx, s.folder_id, max_id, d, &wide, err);
		return 0;
	}
	if (matches_at_least(idx, q, (in > 0 ? in : 1) * (max_id / IDX_NARROW_SAMPLES) /
	    IDX_NARROW_PER_JOIN, &many, err) == -1)
		return -1;
	if (!many)
		return 0;	/* few matches: joining them is cheaper */
	return read_scope(idx, &s, src, max_id, cap, d, used_r, err);
}

int
idx_narrow_ids(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	return narrow_ids(idx, q, folder_id, false, d, used_r, err);
}

int
idx_narrow_ids_walked(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	return narrow_ids(idx, q, folder_id, true, d, used_r, err);
}

/*
 * How many of IDX_NARROW_SAMPLES messages spread over ids 1..max_id pass
 * q's filters (folder_id as idx_search_scope() found it), into *in_r.
 */
static int
sample_filters(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    int64_t max_id, int *in_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, filter_sample_sql, err);
	int rc = SQLITE_DONE;

	*in_r = 0;
	if (st == NULL)
		return -1;
	idx_search_bind(st, q, folder_id);
	for (int i = 0; i < IDX_NARROW_SAMPLES && (rc == SQLITE_DONE || rc == SQLITE_ROW); i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 30, 1 + max_id / IDX_NARROW_SAMPLES * i);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && sqlite3_column_int(st, 0) != 0)
			(*in_r)++;
	}
	idx_stmt_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    idx_sqlerr(idx, rc, "search: sample the filters", err);
}

/*
 * Whether q's words match at least n rows.  With the statistics kept, no
 * more rows match than hold one of the phrases; a query whose phrases hold
 * fewer is answered at once, before a count that would read n rows of the
 * doclists (10 ms for `money` at 1,000,000 messages).  Else, when count,
 * counted by a read of n rows at most, a prefix taken from the rows of its
 * most frequent word syncd bounds (FTS5 would merge it to count); when
 * not, *yes_r is true (perhaps).
 */
static int
words_at_least(struct mb_index *idx, const struct mb_query *q, int64_t n, bool count,
    bool *yes_r, struct mb_err *err)
{
	int64_t rows = 0;
	bool kept = false;

	*yes_r = true;
	if (idx_rank_rows_kept(idx, q->match, &rows, &kept, err) == -1)
		return -1;
	/* a prefix or several phrases: the rows kept are all there is to go by */
	if (kept && (rows < n || !idx_match_plain(q->match))) {
		*yes_r = rows >= n;
		return 0;
	}
	if (!count)
		return 0;
	if (idx_match_plain(q->match))
		return matches_at_least(idx, q, n, yes_r, err);
	if (idx_prefix_rows_least(idx, q->match, &rows, err) == -1)
		return -1;
	*yes_r = rows >= n;
	return 0;
}

int
idx_narrow_filters_common(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    int64_t max_id, bool *common_r, struct mb_err *err)
{
	int in = 0;

	*common_r = false;
	if (sample_filters(idx, q, folder_id, max_id, &in, err) == -1)
		return -1;
	*common_r = in * IDX_NARROW_COUNT_SHARE > IDX_NARROW_SAMPLES;
	return 0;
}

int
idx_narrow_filter_ids(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    struct idx_narrow_ids *d, bool *used_r, struct mb_err *err)
{
	sqlite3_stmt *st;
	int64_t max_id = 0;
	int in = 0;
	bool many = false;

	memset(d, 0, sizeof(*d));
	*used_r = false;
	if (!idx_narrow_ids_used || q->match == NULL || !idx_search_filtered(q) ||
	    !idx_search_covered(q) || q->msgid != NULL || q->thread_id > 0)
		return 0;
	if (idx_max_id(idx, "search: the filters", &max_id, err) == -1)
		return -1;
	if (max_id < IDX_NARROW_SAMPLES)
		return 0;	/* a few messages: their matches cost less than the scan */
	/* the kept statistics first, the sample, then a count if need be */
	if (words_at_least(idx, q, max_id / IDX_FILTER_SCAN_WORDS, false, &many, err) == -1)
		return -1;
	if (!many)
		return 0;	/* fewer matches: joining them costs less than the scan */
	if (sample_filters(idx, q, folder_id, max_id, &in, err) == -1)
		return -1;
	if (in * IDX_NARROW_SHARE > IDX_NARROW_SAMPLES)
		return 0;	/* many pass: the page fills soon */
	if (words_at_least(idx, q, max_id / IDX_FILTER_SCAN_WORDS, true, &many, err) == -1)
		return -1;
	if (!many)
		return 0;
	if ((st = idx_stmt_sql(idx, filter_ids_sql, err)) == NULL)
		return -1;
	idx_search_bind(st, q, folder_id);
	sqlite3_bind_int64(st, 31, max_id / IDX_NARROW_CAP + 1);
	idx_filter_scans++;
	return read_ids(idx, st, max_id, max_id / IDX_NARROW_CAP, d, used_r, err);
}

int
idx_narrow_thread_ids(struct mb_index *idx, const struct mb_query *q, struct idx_narrow_ids *d,
    bool *used_r, struct mb_err *err)
{
	struct scope s = { .thread_id = q->thread_id };
	int64_t max_id = 0;

	memset(d, 0, sizeof(*d));
	*used_r = false;
	if (!idx_narrow_ids_used || q->match == NULL || q->thread_id <= 0 ||
	    idx_match_plain(q->match))
		return 0;	/* a word: a seek a message of the thread costs less */
	if (idx_max_id(idx, "search: the thread", &max_id, err) == -1)
		return -1;
	return read_scope(idx, &s, SOURCE_THREAD, max_id, max_id, d, used_r, err);
}

/* The parts of q's scope an index of few can read: its flags, labels, attachments, sizes and list. */
static struct scope
filters_scope(const struct mb_query *q)
{
	return (struct scope){ .flags_set = q->flags_set, .flags_clear = q->flags_clear,
	    .labelled = idx_search_labelled(q), .attached = q->has_attachment == 1,
	    .larger = q->size_min, .smaller = q->size_max, .list = q->list };
}

static_assert(N_SOURCES <= IDX_NARROW_PARTS, "struct idx_narrow_sample holds every part");

int
idx_narrow_few(struct mb_index *idx, const struct mb_query *q, enum idx_few *few_r,
    int64_t *ids_r, struct idx_narrow_sample *sample, struct mb_err *err)
{
	struct scope s = filters_scope(q);
	int in_each[N_SOURCES], in = 0;
	int64_t max_id = 0;
	enum source src;

	*few_r = IDX_FEW_NONE;
	if (ids_r != NULL)
		*ids_r = 0;
	if (sample != NULL)
		sample->taken = false;
	if (!has_any_source(&s))
		return 0;	/* none of is:flagged/unread/answered/draft, label:X, has:, larger:, smaller:, list: */
	if (idx_max_id(idx, "search: the scope", &max_id, err) == -1 ||
	    sample_in_scope(idx, &s, max_id, in_each, NULL, err) == -1)
		return -1;
	if (sample != NULL) {
		sample->taken = true;
		sample->max_id = max_id;
		memcpy(sample->in_each, in_each, sizeof(in_each));
	}
	src = narrowest(&s, in_each, &in);
	if (in * IDX_NARROW_COUNT_SHARE <= IDX_NARROW_SAMPLES)
		*few_r = few_of[src];
	if (ids_r != NULL)
		*ids_r = in * (max_id / IDX_NARROW_SAMPLES);
	return 0;
}

sqlite3_stmt *
idx_few_stmt(struct mb_index *idx, const char *sql)
{
	struct mb_err ignored = { 0 };
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, &ignored);

	if (st != NULL)
		idx_few_reads++;
	return st;
}

/*
 * A list of filters alone that two indexes of few each hold much of and
 * few messages pass together (`list:spamassassin larger:10000` at
 * 1,000,000 messages: 80,208 listed, 85,007 large, 1,500 both) was read
 * through the narrower of them, each of its ids sought in
 * messages_search_filter, and its total counted so again: 112-160 ms of
 * CPU.  A seek costs about IDX_MEET_WIDER entries of an index read in
 * order, so the other index's ids are read into a bitmap too when they
 * number at most that many times the narrower's (by the sample; the read
 * stops past it), and only the ids both hold are sought.  The two sizes'
 * bounds share one index, read once for both (larger:'s).
 */
#define IDX_MEET_WIDER	10

_Thread_local uint64_t idx_meets;

/* Whether s has src's part and an index of few for it (the sizes' read once, as larger:'s). */
static bool
meet_part(const struct scope *s, enum source src)
{
	return has_source(s, src) && few_of[src] != IDX_FEW_NONE &&
	    !(src == SOURCE_SMALL && has_source(s, SOURCE_LARGE));
}

/* How many of s's parts have an index of few (meet_part). */
static int
meet_parts(const struct scope *s)
{
	int n = 0;

	for (int src = 0; src < N_SOURCES; src++)
		n += meet_part(s, (enum source)src);
	return n;
}

/* Append st's ids (a source's statement, bound) to ids; SQLite's result code.  Finishes st. */
static int
ids_read(sqlite3_stmt *st, struct idx_ids *ids)
{
	int rc;

	(void)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);	/* this read's own */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		idx_ids_add(ids, sqlite3_column_int64(st, 0));
	idx_list_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	idx_stmt_done(st);
	return rc;
}

/* Free ids' array and empty it. */
static void
ids_drop(struct idx_ids *ids)
{
	free(ids->ids);
	memset(ids, 0, sizeof(*ids));
}

/* Keep of ids those whose bit is set in d. */
static void
ids_keep_in(struct idx_ids *ids, const struct idx_narrow_ids *d)
{
	size_t n = 0;

	for (size_t i = 0; i < ids->n; i++)
		if (bit_test(d, ids->ids[i]))
			ids->ids[n++] = ids->ids[i];
	ids->n = n;
}

/*
 * The two parts of s with an index of few that hold the fewest of the
 * samples (in_each), *a_r the fewer; false when s has fewer than two.
 */
static bool
meet_pick(const struct scope *s, const int *in_each, enum source *a_r, enum source *b_r)
{
	enum source a = N_SOURCES, b = N_SOURCES;

	for (int src = 0; src < N_SOURCES; src++) {
		if (!meet_part(s, (enum source)src))
			continue;
		if (a == N_SOURCES || in_each[src] < in_each[a]) {
			b = a;
			a = (enum source)src;
		} else if (b == N_SOURCES || in_each[src] < in_each[b])
			b = (enum source)src;
	}
	*a_r = a;
	*b_r = b;
	return b != N_SOURCES;
}

/*
 * idx_narrow_meet() after the sample (in_each, of ids 1..max_id): a's ids,
 * b's into a bitmap when they cost less than seeking all of a's (by the
 * sample first, then by a's own count), and a's kept where b's bit is set.
 */
static int
meet_read(struct mb_index *idx, const struct scope *s, const int *in_each, enum source a,
    enum source b, int64_t max_id, struct idx_ids *meet, bool *used_r, struct mb_err *err)
{
	struct idx_narrow_ids other = { 0 };
	sqlite3_stmt *st;
	bool read = false;
	int64_t cap;
	int rc;

	memset(meet, 0, sizeof(*meet));
	*used_r = false;
	/* a in none of the samples: its ids are few, their seeks cheap */
	if (in_each[a] == 0 || in_each[b] > in_each[a] * IDX_MEET_WIDER)
		return 0;
	if ((st = source_stmt(idx, s, a, err)) == NULL)
		return 0;	/* no index of few before its migration: read as before */
	bind_source(st, s, a, max_id);
	if ((rc = ids_read(st, meet)) != SQLITE_DONE) {
		ids_drop(meet);
		return idx_sqlerr(idx, rc, "search: the filters' ids", err);
	}
	cap = (int64_t)meet->n * IDX_MEET_WIDER;
	if (in_each[b] * (max_id / IDX_NARROW_SAMPLES) > cap ||
	    (st = source_stmt(idx, s, b, err)) == NULL) {
		ids_drop(meet);
		return 0;	/* each of a's sought in one statement costs less */
	}
	bind_source(st, s, b, cap);
	(void)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	if (read_ids(idx, st, max_id, cap, &other, &read, err) == -1) {
		ids_drop(meet);
		return -1;
	}
	idx_list_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	if (!read) {	/* more than a's count allows: as above */
		ids_drop(meet);
		return 0;
	}
	ids_keep_in(meet, &other);
	idx_narrow_ids_release(&other);
	idx_meets++;
	*used_r = true;
	return 0;
}

int
idx_narrow_meet(struct mb_index *idx, const struct mb_query *q,
    const struct idx_narrow_sample *sample, struct idx_ids *meet, bool *used_r,
    struct mb_err *err)
{
	struct scope s = filters_scope(q);
	int in_each[N_SOURCES];
	enum source a, b;
	int64_t max_id = 0;

	memset(meet, 0, sizeof(*meet));
	*used_r = false;
	if (!idx_narrow_ids_used || meet_parts(&s) < 2)
		return 0;	/* one part with an index of few: no sample spent */
	if (sample != NULL && sample->taken) {	/* the same query's: its counts */
		max_id = sample->max_id;
		memcpy(in_each, sample->in_each, sizeof(in_each));
	} else if (idx_max_id(idx, "search: the scope", &max_id, err) == -1 ||
	    sample_in_scope(idx, &s, max_id, in_each, NULL, err) == -1)
		return -1;
	if (!meet_pick(&s, in_each, &a, &b))
		return 0;
	return meet_read(idx, &s, in_each, a, b, max_id, meet, used_r, err);
}
