/*
 * count_messages and awaiting_reply over the index (mailbox/overview.h).
 * Counting a query reads the covering index messages_search_filter (migration
 * 0012), counting everything the summaries count_days, count_senders and
 * count_labels (0011), awaiting_reply the summary rows of thread_stats
 * (0011): none reads the table's pages, which hold the bodies.  Every statement tests IDX_CURRENT,
 * so a row of an older UIDVALIDITY generation or a hidden folder is never
 * counted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/msg.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "search-private.h"

/* ---- count_messages */

static const char *const group_names[] = {
	[MB_COUNT_FOLDER] = "folder", [MB_COUNT_YEAR] = "year", [MB_COUNT_MONTH] = "month",
	[MB_COUNT_DAY] = "day", [MB_COUNT_SENDER] = "sender",
	[MB_COUNT_SENDER_DOMAIN] = "sender_domain", [MB_COUNT_LABEL] = "label",
};

int
mb_count_group_parse(const char *name, enum mb_count_group *g_r, struct mb_err *err)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(group_names); i++)
		if (name != NULL && strcmp(name, group_names[i]) == 0) {
			*g_r = (enum mb_count_group)i;
			return 0;
		}
	return mb_err_set(err, MB_E_INVALID, "group_by must be one of folder, year, month, day, "
	    "sender, sender_domain, label");
}

const char *
mb_count_group_name(enum mb_count_group g)
{
	return (size_t)g < MB_ARRAY_LEN(group_names) ? group_names[g] : "?";
}

/*
 * One statement per grouping, with and without text terms, over the current
 * rows the query matches: the text terms are a rowid set from FTS5, the
 * filters the search's own (SEARCH_FILTERS, SEARCH_DATES).  Folders and labels are
 * grouped by SQL (few keys; labels are split in C, count_labels); dates and
 * senders are read row by row and grouped here (days_add, count_sender), which costs a
 * quarter of a GROUP BY on strftime() or lower(): the index scan is the
 * same, but no temporary b-tree is built and no SQL function runs per row.
 *
 * Each comes twice.  The covered one (idx_search_covered(q): no id:, no
 * to:me) names only columns of messages_search_filter (migrations/0012) and
 * the date as SEARCH_DATE_COVERED, never the generated sort_date, so SQLite reads
 * that index alone; naming sort_date, to_json, cc_json or message_id would
 * make it read every table row with its bodies (five to eight times the CPU at
 * 100,000 messages, docs/benchmarks.md).  The other tests every filter.
 */
#define COUNT_FROM(indexed, filters, dates) \
	" FROM messages AS m " indexed "JOIN folders AS f ON f.id = m.folder_id WHERE " \
	IDX_CURRENT("m", "f") " AND " filters "AND " dates
/*
 * Named, because with words the planner would rather fetch each match's
 * table row by rowid than seek the same id in the index.
 */
#define COUNT_FROM_COVERED \
	COUNT_FROM("INDEXED BY messages_search_filter ", SEARCH_FILTERS_ROW, \
	    SEARCH_DATES_COVERED)
#define COUNT_FROM_ALL		COUNT_FROM("", SEARCH_FILTERS, SEARCH_DATES)
/*
 * Covered with words: FTS5's matches first, in id order, each looked up
 * once in messages_search_filter.  As `m.id IN (subquery)` SQLite built a
 * b-tree of every match before the first lookup (158,306 ids for `linux`
 * at 1,000,000 messages; docs/benchmarks.md, "Counts of words read their
 * matches once").  CROSS JOIN keeps that order, and folders after them.
 */
#define COUNT_FROM_WORDS(range) \
	" FROM messages_fts CROSS JOIN messages AS m INDEXED BY messages_search_filter " \
	"ON m.id = messages_fts.rowid CROSS JOIN folders AS f ON f.id = m.folder_id " \
	"WHERE messages_fts MATCH ?1 " range "AND " IDX_CURRENT("m", "f") " AND " \
	SEARCH_FILTERS_ROW "AND " SEARCH_DATES_COVERED
#define GROUP_SQL(key, from) \
	"SELECT " key ", count(*)" from " GROUP BY 1"
#define GROUP_SQL_MATCH(key, from) \
	"SELECT " key ", count(*)" from " AND " IDX_QUERY_MATCH("m") " GROUP BY 1"
#define ROW_SQL(col, from) \
	"SELECT " col ", 1" from
#define ROW_SQL_MATCH(col, from) \
	"SELECT " col ", 1" from " AND " IDX_QUERY_MATCH("m")
/* [covered][words]: without and with text terms. */
#define COUNT_SQL(what, key, date) { \
	{ what(key, COUNT_FROM_ALL), what##_MATCH(key, COUNT_FROM_ALL) }, \
	{ what(date, COUNT_FROM_COVERED), what(date, COUNT_FROM_WORDS("")) } }

static const char *const count_sql[][2][2] = {
	[MB_COUNT_FOLDER] = COUNT_SQL(GROUP_SQL, "f.name", "f.name"),
	[MB_COUNT_YEAR] = COUNT_SQL(ROW_SQL, SEARCH_DATE, SEARCH_DATE_COVERED),
	[MB_COUNT_MONTH] = COUNT_SQL(ROW_SQL, SEARCH_DATE, SEARCH_DATE_COVERED),
	[MB_COUNT_DAY] = COUNT_SQL(ROW_SQL, SEARCH_DATE, SEARCH_DATE_COVERED),
	[MB_COUNT_SENDER] = COUNT_SQL(ROW_SQL, "m.from_addr", "m.from_addr"),
	[MB_COUNT_SENDER_DOMAIN] = COUNT_SQL(ROW_SQL, "m.from_addr", "m.from_addr"),
	[MB_COUNT_LABEL] = COUNT_SQL(GROUP_SQL, "m.keywords", "m.keywords"),
};

/*
 * Words in a folder or a date range, covered, over one run of ids (?22 to
 * ?23) that the scope's messages lie in (idx_narrow_ids: a narrow scope's,
 * read from its ids, or a wide folder's, found by seeks): FTS5 seeks its
 * doclists to the run, and the count runs once a run.  Over every id it
 * joined every match to test the folder: `linux in:Lists` at 1,000,000
 * messages, a folder of 30% in one run, joined all 158,306 matches of
 * linux.  [grouping].
 */
#define COUNT_SPAN_SQL(what, key) \
	what(key, COUNT_FROM_WORDS("AND messages_fts.rowid BETWEEN ?22 AND ?23 "))

static const char *const count_span_sql[] = {
	[MB_COUNT_FOLDER] = COUNT_SPAN_SQL(GROUP_SQL, "f.name"),
	[MB_COUNT_YEAR] = COUNT_SPAN_SQL(ROW_SQL, SEARCH_DATE_COVERED),
	[MB_COUNT_MONTH] = COUNT_SPAN_SQL(ROW_SQL, SEARCH_DATE_COVERED),
	[MB_COUNT_DAY] = COUNT_SPAN_SQL(ROW_SQL, SEARCH_DATE_COVERED),
	[MB_COUNT_SENDER] = COUNT_SPAN_SQL(ROW_SQL, "m.from_addr"),
	[MB_COUNT_SENDER_DOMAIN] = COUNT_SPAN_SQL(ROW_SQL, "m.from_addr"),
	[MB_COUNT_LABEL] = COUNT_SPAN_SQL(GROUP_SQL, "m.keywords"),
};

/*
 * Filters alone with is:flagged, is:unread, is:answered, is:draft, a
 * label, has:attachment, larger:N or list:X that few messages have
 * (idx_narrow_few, migrations 0019, 0020, 0024, 0025, 0026 and 0027): the
 * ids of that flag, of the labelled
 * messages, of those with attachments, of those that large or of those
 * lists, each looked up in messages_search_filter, where the covered
 * statement reads every entry of it (1,000,000 at 1,000,000 messages).  An
 * index from before those migrations does not prepare them, and the count
 * goes the covered way.  [few][grouping].
 */
#define COUNT_FROM_FEW(index, test) \
	" FROM " SEARCH_FEW_FROM(index) "JOIN folders AS f ON f.id = m.folder_id WHERE " \
	test " AND " IDX_CURRENT("m", "f") " AND " SEARCH_FILTERS_ROW "AND " SEARCH_DATES_COVERED
#define COUNT_FEW_SQL(few, index, test) [few] = { \
	[MB_COUNT_FOLDER] = GROUP_SQL("f.name", COUNT_FROM_FEW(index, test)), \
	[MB_COUNT_YEAR] = ROW_SQL(SEARCH_DATE_COVERED, COUNT_FROM_FEW(index, test)), \
	[MB_COUNT_MONTH] = ROW_SQL(SEARCH_DATE_COVERED, COUNT_FROM_FEW(index, test)), \
	[MB_COUNT_DAY] = ROW_SQL(SEARCH_DATE_COVERED, COUNT_FROM_FEW(index, test)), \
	[MB_COUNT_SENDER] = ROW_SQL("m.from_addr", COUNT_FROM_FEW(index, test)), \
	[MB_COUNT_SENDER_DOMAIN] = ROW_SQL("m.from_addr", COUNT_FROM_FEW(index, test)), \
	[MB_COUNT_LABEL] = GROUP_SQL("m.keywords", COUNT_FROM_FEW(index, test)) },

static const char *const count_few_sql[][MB_ARRAY_LEN(group_names)] = {
	SEARCH_FEW_EACH(COUNT_FEW_SQL)
};

/* One message (?30) of the ids two of those indexes meet at (count_meet()), a row if it passes. */
#define COUNT_FROM_ID \
	" FROM messages AS m INDEXED BY messages_search_filter JOIN folders AS f ON " \
	"f.id = m.folder_id WHERE m.id = ?30 AND " IDX_CURRENT("m", "f") " AND " \
	SEARCH_FILTERS_ROW "AND " SEARCH_DATES_COVERED
static const char *const count_id_sql[] = {
	[MB_COUNT_FOLDER] = ROW_SQL("f.name", COUNT_FROM_ID),
	[MB_COUNT_YEAR] = ROW_SQL(SEARCH_DATE_COVERED, COUNT_FROM_ID),
	[MB_COUNT_MONTH] = ROW_SQL(SEARCH_DATE_COVERED, COUNT_FROM_ID),
	[MB_COUNT_DAY] = ROW_SQL(SEARCH_DATE_COVERED, COUNT_FROM_ID),
	[MB_COUNT_SENDER] = ROW_SQL("m.from_addr", COUNT_FROM_ID),
	[MB_COUNT_SENDER_DOMAIN] = ROW_SQL("m.from_addr", COUNT_FROM_ID),
	[MB_COUNT_LABEL] = ROW_SQL("m.keywords", COUNT_FROM_ID),
};

/*
 * Without a query (no words, no filter but a folder) the counts come from
 * the summary rows of migration 0011 instead: per folder generation and
 * day, sender or keywords text, a few thousand rows at most, grouped here
 * exactly as the per-message rows are (a day as its first second; '' and
 * the undated day are no key).  Their folders are tested with IDX_CURRENT
 * like messages, and with the folder of in: or a role (?2, as
 * SEARCH_FILTERS_ROW tests it) when there is one: `in:Lists` by month at
 * 1,000,000 messages read every entry of messages_search_filter (115 ms of
 * CPU) for what a folder's summary rows hold.
 */
#define SUMMARY_SQL_WHERE(key, table, where, group) \
	"SELECT " key ", sum(c.n) FROM " table " AS c JOIN folders AS f ON f.id = c.folder_id " \
	"WHERE " IDX_CURRENT("c", "f") " AND (?2 IS NULL OR c.folder_id = ?2) " where \
	"GROUP BY " group
#define SUMMARY_SQL(key, table, group)	SUMMARY_SQL_WHERE(key, table, "", group)
/*
 * The days' rows also take a date range of whole UTC days (?3, ?4: the
 * query language's dates are; summary_serves() checks): a day's messages
 * are all in it or all out, and an undated message fails either bound.
 */
#define SUMMARY_DAYS_WHERE(table, key, group) \
	SUMMARY_SQL_WHERE(key, table, "AND (?3 IS NULL OR (c.day <> -2147483648 AND " \
	    "c.day >= ?3 / 86400)) AND (?4 IS NULL OR (c.day <> -2147483648 AND " \
	    "c.day < ?4 / 86400)) ", group)
#define SUMMARY_DAYS(table) \
	SUMMARY_DAYS_WHERE(table, "nullif(c.day, -2147483648) * 86400", "c.day")
#define SUMMARY_SENDERS	SUMMARY_SQL("nullif(c.sender, '')", "count_senders", "c.sender")

static const char *const summary_sql[] = {
	[MB_COUNT_FOLDER] = SUMMARY_DAYS_WHERE("count_days", "f.name", "f.id"),
	[MB_COUNT_YEAR] = SUMMARY_DAYS("count_days"),
	[MB_COUNT_MONTH] = SUMMARY_DAYS("count_days"),
	[MB_COUNT_DAY] = SUMMARY_DAYS("count_days"),
	[MB_COUNT_SENDER] = SUMMARY_SENDERS,
	[MB_COUNT_SENDER_DOMAIN] = SUMMARY_SENDERS,
	[MB_COUNT_LABEL] = SUMMARY_SQL("nullif(c.keywords, '')", "count_labels", "c.keywords"),
};

/*
 * The unread messages (is:unread alone, perhaps in a folder, with whole
 * days) by folder or date: the rows of count_unread (migration 0028), per
 * folder generation and day as count_days's, where the per-message count
 * read every unread message (178–266 ms of CPU at 1,000,000 messages, a
 * quarter of them unread); by sender or label (no dates) those of
 * count_unread_senders and count_unread_labels (migration 0029), as
 * count_senders's and count_labels's (170–180 ms).  [grouping].
 */
#define SUMMARY_UNREAD_SENDERS \
	SUMMARY_SQL("nullif(c.sender, '')", "count_unread_senders", "c.sender")

static const char *const summary_unread_sql[] = {
	[MB_COUNT_FOLDER] = SUMMARY_DAYS_WHERE("count_unread", "f.name", "f.id"),
	[MB_COUNT_YEAR] = SUMMARY_DAYS("count_unread"),
	[MB_COUNT_MONTH] = SUMMARY_DAYS("count_unread"),
	[MB_COUNT_DAY] = SUMMARY_DAYS("count_unread"),
	[MB_COUNT_SENDER] = SUMMARY_UNREAD_SENDERS,
	[MB_COUNT_SENDER_DOMAIN] = SUMMARY_UNREAD_SENDERS,
	[MB_COUNT_LABEL] = SUMMARY_SQL("nullif(c.keywords, '')", "count_unread_labels",
	    "c.keywords"),
};

/*
 * The groups found so far (every group: the page is cut after sorting),
 * with an open-addressing table of their indexes by key (slot[i] - 1; 0
 * empty), kept under half full.
 */
struct groups {
	struct mb_count_row *v;
	size_t		 n, cap;
	size_t		*slot;
	size_t		 n_slot;	/* a power of two */
};

static uint64_t
key_hash(const char *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The slot of key: where its group's index is, or the empty slot it would take. */
static size_t *
groups_slot(struct groups *gs, const char *key, size_t len)
{
	size_t i = (size_t)key_hash(key, len) & (gs->n_slot - 1);

	for (;; i = (i + 1) & (gs->n_slot - 1)) {
		size_t *sl = &gs->slot[i];
		const char *k;

		if (*sl == 0)
			return sl;
		k = gs->v[*sl - 1].key;
		if (strncmp(k, key, len) == 0 && k[len] == '\0')
			return sl;
	}
}

static void
groups_grow(struct groups *gs)
{
	free(gs->slot);
	gs->n_slot = gs->n_slot ? 2 * gs->n_slot : 256;
	gs->slot = mb_xcalloc(gs->n_slot, sizeof(*gs->slot));
	for (size_t i = 0; i < gs->n; i++)
		*groups_slot(gs, gs->v[i].key, strlen(gs->v[i].key)) = i + 1;
}

/* Add count to the group of key (len bytes), making it when it is new. */
static void
groups_add(struct groups *gs, const char *key, size_t len, int64_t count)
{
	size_t *sl;

	if (2 * (gs->n + 1) > gs->n_slot)
		groups_grow(gs);
	sl = groups_slot(gs, key, len);
	if (*sl != 0) {
		gs->v[*sl - 1].count += count;
		return;
	}
	if (gs->n == gs->cap) {
		gs->cap = gs->cap ? 2 * gs->cap : 64;
		gs->v = mb_xrealloc(gs->v, gs->cap * sizeof(*gs->v));
	}
	gs->v[gs->n].key = mb_xstrndup(key, len);
	gs->v[gs->n++].count = count;
	*sl = gs->n;
}

_Thread_local uint64_t idx_count_date_keys;

/*
 * The messages of each day (days since the epoch, UTC) a date grouping
 * found, an open-addressing table kept under half full (n_slot a power of
 * two; an empty slot's count is 0).  The matches of words come in id
 * order, their days mixed, and a key made a row (gmtime_r, snprintf and
 * the key's hash) cost more than the row's lookup; the keys are made once
 * a day at the end (days_to_groups).
 */
struct days {
	int64_t	*day, *n;
	size_t	 used, n_slot;
};

static size_t
days_slot(const struct days *d, int64_t day)
{
	size_t i = (size_t)((uint64_t)day * 0x9e3779b97f4a7c15ull >> 20) & (d->n_slot - 1);

	while (d->n[i] != 0 && d->day[i] != day)
		i = (i + 1) & (d->n_slot - 1);
	return i;
}

/* Add count (> 0) to day's messages. */
static void
days_add(struct days *d, int64_t day, int64_t count)
{
	size_t i;

	if (2 * (d->used + 1) > d->n_slot) {
		struct days old = *d;

		d->n_slot = old.n_slot ? 2 * old.n_slot : 1024;
		d->day = mb_xcalloc(d->n_slot, sizeof(*d->day));
		d->n = mb_xcalloc(d->n_slot, sizeof(*d->n));
		for (size_t j = 0; j < old.n_slot; j++)
			if (old.n[j] != 0) {
				i = days_slot(d, old.day[j]);
				d->day[i] = old.day[j];
				d->n[i] = old.n[j];
			}
		free(old.day);
		free(old.n);
	}
	i = days_slot(d, day);
	if (d->n[i] == 0) {
		d->day[i] = day;
		d->used++;
	}
	d->n[i] += count;
}

/* The key of a day for g into buf (year, month or day); its length, 0 if none. */
static size_t
date_key(enum mb_count_group g, int64_t day, char buf[16])
{
	struct tm tm;
	time_t tt = (time_t)(day * 86400);
	int n;

	if (gmtime_r(&tt, &tm) == NULL)
		return 0;
	idx_count_date_keys++;
	if (g == MB_COUNT_YEAR)
		n = snprintf(buf, 16, "%04d", tm.tm_year + 1900);
	else if (g == MB_COUNT_MONTH)
		n = snprintf(buf, 16, "%04d-%02d", tm.tm_year + 1900, tm.tm_mon + 1);
	else
		n = snprintf(buf, 16, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		    tm.tm_mday);
	return n > 0 && n < 16 ? (size_t)n : 0;
}

/* Each day of d into its group of gs by g (a day without a key: ungrouped); frees d. */
static void
days_to_groups(struct days *d, enum mb_count_group g, struct groups *gs, int64_t *ungrouped)
{
	char buf[16];
	size_t len;

	for (size_t i = 0; i < d->n_slot; i++)
		if (d->n[i] != 0) {
			if ((len = date_key(g, d->day[i], buf)) > 0)
				groups_add(gs, buf, len, d->n[i]);
			else
				*ungrouped += d->n[i];
		}
	free(d->day);
	free(d->n);
	memset(d, 0, sizeof(*d));
}

/*
 * One row of a sender grouping (column 0 of st, count messages) into gs;
 * lower is the caller's scratch buffer for the lower-cased address.  False
 * when the row has no key.
 */
static bool
count_sender(struct groups *gs, enum mb_count_group g, sqlite3_stmt *st, int64_t count,
    struct mb_buf *lower)
{
	const char *a, *at;
	size_t len;

	if (sqlite3_column_type(st, 0) == SQLITE_NULL)
		return false;
	a = (const char *)sqlite3_column_text(st, 0);
	len = (size_t)sqlite3_column_bytes(st, 0);
	if (g == MB_COUNT_SENDER_DOMAIN && (at = memchr(a, '@', len)) != NULL) {
		len -= (size_t)(at + 1 - a);
		a = at + 1;
	}
	if (len == 0)
		return false;
	mb_buf_reset(lower);
	for (size_t i = 0; i < len; i++)
		mb_buf_addc(lower, a[i] >= 'A' && a[i] <= 'Z' ? (char)(a[i] - 'A' + 'a') : a[i]);
	groups_add(gs, lower->data, lower->len, count);
	return true;
}

/*
 * A row's keywords (space-separated) into gs, each once per row.
 */
static void
count_labels(struct groups *gs, const char *kw, int64_t count, int64_t *ungrouped)
{
	const char *p = kw, *w;
	bool any = false;

	while (*p) {
		while (*p == ' ')
			p++;
		for (w = p; *p && *p != ' '; p++)
			;
		if (p > w) {
			groups_add(gs, w, (size_t)(p - w), count);
			any = true;
		}
	}
	if (!any)
		*ungrouped += count;
}

static int
by_count(const void *pa, const void *pb)
{
	const struct mb_count_row *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->key, b->key);
}

static int
by_key_desc(const void *pa, const void *pb)
{
	const struct mb_count_row *a = pa, *b = pb;

	return strcmp(b->key, a->key);
}

/*
 * The statement of count_few_sql for q by g, prepared, into *st_r when q is
 * filters alone with a flag or label few messages have and the index has
 * that index (else NULL); or, when another of its filters has such an
 * index too, the ids the two meet at into meet (*met_r true; the caller
 * frees meet->ids, count_meet() counts them).  -1 with err on a failure of
 * SQLite's.
 */
static int
few_stmt(struct mb_index *idx, const struct mb_query *q, enum mb_count_group g,
    sqlite3_stmt **st_r, struct idx_ids *meet, bool *met_r, struct mb_err *err)
{
	enum idx_few few = IDX_FEW_NONE;
	struct idx_narrow_sample sample;

	*st_r = NULL;
	*met_r = false;
	if (q->match != NULL || !idx_search_covered(q))
		return 0;
	if (idx_narrow_few(idx, q, &few, NULL, &sample, err) == -1)
		return -1;
	if (few != IDX_FEW_NONE && idx_narrow_meet(idx, q, &sample, meet, met_r, err) == -1)
		return -1;
	/* none before its migration: the caller's covered statement */
	if (few != IDX_FEW_NONE && !*met_r)
		*st_r = idx_few_stmt(idx, count_few_sql[few][g]);
	return 0;
}

_Thread_local uint64_t idx_count_steps;

/* Whether g groups by a date, whose rows' days days_add() counts first. */
static bool
by_date(enum mb_count_group g)
{
	return g == MB_COUNT_YEAR || g == MB_COUNT_MONTH || g == MB_COUNT_DAY;
}

/* What reading groups keeps between statements: the days counted first, a sender's buffer. */
struct group_read {
	struct mb_buf	lower;
	struct days	days;
};

/*
 * Every group st (bound) gives into gs (a date's into r's days), with the
 * totals into page; finishes st.  read_end() makes the days groups.
 */
static int
read_rows(struct mb_index *idx, sqlite3_stmt *st, enum mb_count_group g, struct groups *gs,
    struct mb_count_page *page, struct group_read *r, struct mb_err *err)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t count = sqlite3_column_int64(st, 1), t;
		const char *key;

		page->total += count;
		if (by_date(g)) {
			if (sqlite3_column_type(st, 0) == SQLITE_NULL || count <= 0) {
				page->ungrouped += count;
				continue;
			}
			t = sqlite3_column_int64(st, 0);
			days_add(&r->days, t >= 0 ? t / 86400 : (t - 86399) / 86400, count);
		} else if (g == MB_COUNT_SENDER || g == MB_COUNT_SENDER_DOMAIN) {
			if (!count_sender(gs, g, st, count, &r->lower))
				page->ungrouped += count;
		} else if ((key = (const char *)sqlite3_column_text(st, 0)) == NULL)
			page->ungrouped += count;
		else if (g == MB_COUNT_LABEL)
			count_labels(gs, key, count, &page->ungrouped);
		else
			groups_add(gs, key, (size_t)sqlite3_column_bytes(st, 0), count);
	}
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "count", err);
	idx_count_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The days read_rows() counted into gs, and r released. */
static void
read_end(enum mb_count_group g, struct groups *gs, struct mb_count_page *page,
    struct group_read *r)
{
	days_to_groups(&r->days, g, gs, &page->ungrouped);
	mb_buf_release(&r->lower);
}

/*
 * Every group st (bound) gives into gs, with the totals into page, once,
 * or with ids (n of them) once an id, bound as ?30; finishes st.
 */
static int
read_groups_of(struct mb_index *idx, sqlite3_stmt *st, enum mb_count_group g, struct groups *gs,
    struct mb_count_page *page, const int64_t *ids, size_t n, struct mb_err *err)
{
	struct group_read r = { .lower = MB_BUF_INIT(64 * 1024) };
	int rc = ids == NULL ? read_rows(idx, st, g, gs, page, &r, err) : 0;

	for (size_t i = 0; ids != NULL && i < n && rc == 0; i++) {
		sqlite3_bind_int64(st, 30, ids[i]);
		rc = read_rows(idx, st, g, gs, page, &r, err);
	}
	if (ids != NULL && n == 0)
		idx_stmt_done(st);	/* no id: never stepped */
	read_end(g, gs, page, &r);
	return rc;
}

/* Every group st (bound) gives into gs, with the totals into page; finishes st. */
static int
read_groups(struct mb_index *idx, sqlite3_stmt *st, enum mb_count_group g, struct groups *gs,
    struct mb_count_page *page, struct mb_err *err)
{
	return read_groups_of(idx, st, g, gs, page, NULL, 0, err);
}

/*
 * The groups of the ids two indexes of few meet at (idx_narrow_meet: filters
 * alone, two of them with such an index), each looked up in
 * messages_search_filter by count_id_sql, where the statement through one
 * of those indexes looks up every id it holds: `list:spamassassin
 * larger:10000` by month at 1,000,000 messages, 80,208 listed ids for 1,487
 * that pass.
 */
static int
count_meet(struct mb_index *idx, const struct mb_query *q, int64_t fid, enum mb_count_group g,
    const struct idx_ids *meet, struct groups *gs, struct mb_count_page *page,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, count_id_sql[g], err);

	if (st == NULL)
		return -1;
	idx_search_bind(st, q, fid);
	return read_groups_of(idx, st, g, gs, page, meet->ids, meet->n, err);
}

/*
 * The groups of q's words in its scope's runs of ids (scope: idx_narrow_ids),
 * a statement a run; the groups add up, a key seen in two runs once.
 */
static int
count_runs(struct mb_index *idx, const struct mb_query *q, int64_t fid, enum mb_count_group g,
    const struct idx_narrow_ids *scope, struct groups *gs, struct mb_count_page *page,
    struct mb_err *err)
{
	for (size_t i = 0; i < scope->n_runs; i++) {
		sqlite3_stmt *st = idx_stmt_sql(idx, count_span_sql[g], err);

		if (st == NULL)
			return -1;
		idx_search_bind(st, q, fid);
		sqlite3_bind_int64(st, 22, scope->runs[i].lo);
		sqlite3_bind_int64(st, 23, scope->runs[i].hi);
		if (read_groups(idx, st, g, gs, page, err) == -1)
			return -1;
	}
	return 0;
}

/* Whether g groups by folder or date, which the days' rows can. */
static bool
by_day(enum mb_count_group g)
{
	return g == MB_COUNT_FOLDER || by_date(g);
}

/*
 * Whether the summary rows answer q by g, with unread the flags a summary
 * counts (MB_FLAG_SEEN clear for count_unread, 0 for the others): no
 * words, no filter but a folder (in: or a role), those flags and, grouped
 * by folder or date, a range of whole UTC days.
 */
static bool
summary_serves(const struct mb_query *q, enum mb_count_group g, unsigned unread)
{
	struct mb_query rest = *q;	/* shallow: only read */

	rest.folder = NULL;
	rest.role = NULL;
	if (by_day(g) && (q->since == INT64_MIN || q->since % 86400 == 0) &&
	    (q->until == INT64_MAX || q->until % 86400 == 0)) {
		rest.since = INT64_MIN;
		rest.until = INT64_MAX;
	}
	if (q->flags_clear != unread)
		return false;
	rest.flags_clear = 0;
	return q->match == NULL && !idx_search_filtered(&rest);
}

/*
 * Whether the unread summaries answer q by g: is:unread, as
 * summary_serves() says, by folder or date on an index with migration 0028
 * (count_unread), by sender or label with 0029.
 */
static int
unread_summary_serves(struct mb_index *idx, const struct mb_query *q, enum mb_count_group g,
    bool *serves_r, struct mb_err *err)
{
	int version;

	*serves_r = false;
	if (!summary_serves(q, g, MB_FLAG_SEEN))
		return 0;
	if (mb_index_schema_version(idx, &version, err) == -1)
		return -1;
	*serves_r = version >= (by_day(g) ? IDX_SCHEMA_COUNT_UNREAD :
	    IDX_SCHEMA_COUNT_UNREAD_PEOPLE);
	return 0;
}

/* Every group of q by g into gs, with the totals into page. */
static int
count_groups(struct mb_index *idx, const struct mb_query *q, enum mb_count_group g,
    struct groups *gs, struct mb_count_page *page, struct mb_err *err)
{
	struct idx_narrow_ids scope = { 0 };
	struct idx_ids meet = { 0 };
	int64_t fid = 0;
	sqlite3_stmt *st;
	bool narrow = false, unread, met = false;
	int rc;

	if (idx_search_scope(idx, q, &fid, err) == -1)
		return -1;
	/* words in a narrow scope, or a wide folder in few stretches: over its runs */
	if (q->match != NULL && idx_search_covered(q) && q->msgid == NULL && q->thread_id <= 0 &&
	    idx_narrow_ids(idx, q, fid, &scope, &narrow, err) == -1)
		return -1;
	if (scope.runs != NULL || narrow) {	/* a narrow scope of nothing has no run */
		rc = count_runs(idx, q, fid, g, &scope, gs, page, err);
		idx_narrow_ids_release(&scope);
		return rc;
	}
	if (unread_summary_serves(idx, q, g, &unread, err) == -1)
		return -1;
	if (unread || summary_serves(q, g, 0)) {
		st = idx_stmt_sql(idx, unread ? summary_unread_sql[g] : summary_sql[g], err);
		if (st != NULL && (q->folder || q->role))
			sqlite3_bind_int64(st, 2, fid);
		if (st != NULL && q->since != INT64_MIN)
			sqlite3_bind_int64(st, 3, q->since);
		if (st != NULL && q->until != INT64_MAX)
			sqlite3_bind_int64(st, 4, q->until);
	} else {
		if (few_stmt(idx, q, g, &st, &meet, &met, err) == -1)
			return -1;
		if (met) {
			rc = count_meet(idx, q, fid, g, &meet, gs, page, err);
			free(meet.ids);
			return rc;
		}
		if (st == NULL)
			st = idx_stmt_sql(idx, count_sql[g][idx_search_covered(q)][q->match != NULL],
			    err);
		if (st != NULL)
			idx_search_bind(st, q, fid);
	}
	if (st == NULL)
		return -1;
	return read_groups(idx, st, g, gs, page, err);
}

int
mb_overview_count(struct mb_index *idx, const struct mb_query *q, enum mb_count_group g,
    int64_t offset, size_t limit, struct mb_count_page *page, struct mb_err *err)
{
	struct groups gs = { 0 };
	size_t lo, hi;
	int rc;

	memset(page, 0, sizeof(*page));
	if (idx_page_check(offset, limit, MB_OVERVIEW_MAX_LIMIT, err) == -1)
		return -1;
	if ((size_t)g >= MB_ARRAY_LEN(count_sql))
		return mb_err_set(err, MB_E_INVALID, "no such grouping");
	if (idx_read_begin(idx, err) == -1)
		return -1;
	rc = count_groups(idx, q, g, &gs, page, err);
	idx_read_end(idx);
	if (gs.n > 1)
		qsort(gs.v, gs.n, sizeof(*gs.v), g == MB_COUNT_YEAR || g == MB_COUNT_MONTH ||
		    g == MB_COUNT_DAY ? by_key_desc : by_count);
	lo = (uint64_t)offset < gs.n ? (size_t)offset : gs.n;
	hi = gs.n - lo > limit ? lo + limit : gs.n;
	page->groups = (int64_t)gs.n;
	page->rows = mb_xcalloc(hi - lo ? hi - lo : 1, sizeof(*page->rows));
	for (size_t i = 0; i < gs.n; i++)
		if (i >= lo && i < hi)
			page->rows[page->n++] = gs.v[i];
		else
			free(gs.v[i].key);
	free(gs.v);
	free(gs.slot);
	page->more = hi < (size_t)page->groups;
	page->next_offset = (int64_t)hi;
	return rc;
}

void
mb_count_page_release(struct mb_count_page *page)
{
	for (size_t i = 0; i < page->n; i++)
		free(page->rows[i].key);
	free(page->rows);
	memset(page, 0, sizeof(*page));
}

/* ---- awaiting_reply */

/*
 * From thread_stats (migration 0011): per thread and folder generation, its
 * last dated message and whose turn that message makes it (dir: 1 waiting
 * on others, 2 waiting on me), which the triggers decide as the message is
 * written.  A row speaks for its thread when its folder is current
 * (IDX_CURRENT, tested here, so hiding a folder or a new UIDVALIDITY needs
 * no rewrite), is not drafts, trash or junk, and no such row of the thread
 * is later (ties: the greater message id).  One turn is walked newest
 * first on thread_stats_turn, which stops at the page; both are the merge
 * of the two walks.  Only the page's threads are counted and described.
 */
#define AWAIT_FOLDER(t) \
	"EXISTS (SELECT 1 FROM folders AS f WHERE f.id = " t ".folder_id AND " \
	IDX_CURRENT(t, "f") " AND coalesce(f.role, '') NOT IN ('\\Drafts', '\\Trash', " \
	"'\\Junk'))"
#define AWAIT_ARM(dir) \
	"SELECT t.thread_id AS tid, t.dir AS dir, t.last_msg AS id, t.last_date AS date " \
	"FROM thread_stats AS t WHERE t.dir = " dir " AND t.last_date < ?1 AND " \
	AWAIT_FOLDER("t") " AND NOT EXISTS (SELECT 1 FROM thread_stats AS o " \
	"WHERE o.thread_id = t.thread_id AND (o.last_date > t.last_date OR " \
	"(o.last_date = t.last_date AND o.last_msg > t.last_msg)) AND " AWAIT_FOLDER("o") ")"
#define AWAIT_PAGE \
	" ORDER BY date DESC, tid DESC LIMIT ?3 OFFSET ?4) " \
	"SELECT w.tid, w.dir, w.id, w.date, (SELECT sum(o.n) FROM thread_stats AS o " \
	"WHERE o.thread_id = w.tid AND " AWAIT_FOLDER("o") "), fo.name, m.from_text, " \
	"m.recipients, m.subject FROM w JOIN messages AS m ON m.id = w.id " \
	"JOIN folders AS fo ON fo.id = m.folder_id ORDER BY w.date DESC, w.tid DESC"
static const char await_one_sql[] = "WITH w AS (" AWAIT_ARM("?2") AWAIT_PAGE;
static const char await_both_sql[] =
	"WITH w AS (" AWAIT_ARM("1") " UNION ALL " AWAIT_ARM("2") AWAIT_PAGE;
static const char own_count_sql[] = "SELECT count(*) FROM account_addresses";

/* Whether the index knows any address of the account. */
static int
own_addresses(struct mb_index *idx, bool *any_r, struct mb_err *err)
{
	int64_t n = 0;

	if (idx_one_int64(idx, own_count_sql, NULL, "awaiting: own addresses", &n, err) == -1)
		return -1;
	*any_r = n > 0;
	return 0;
}

static int
await_rows(struct mb_index *idx, unsigned dirs, int64_t before, int64_t offset, size_t limit,
    struct mb_await_page *page, struct mb_err *err)
{
	sqlite3_stmt *st;
	bool any = false;
	int rc;

	if (own_addresses(idx, &any, err) == -1)
		return -1;
	if (!any)
		return mb_err_set(err, MB_E_CONFIG, "the index knows none of the account's own "
		    "addresses: syncd records them from IMAP_USER (when it is an address), "
		    "DRAFT_FROM and MY_ADDRESSES");
	st = idx_stmt_sql(idx, dirs == (MB_AWAIT_OTHERS | MB_AWAIT_ME) ? await_both_sql :
	    await_one_sql, err);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, before);
	if (dirs != (MB_AWAIT_OTHERS | MB_AWAIT_ME))
		sqlite3_bind_int(st, 2, (int)dirs);
	sqlite3_bind_int64(st, 3, (int64_t)limit + 1);
	sqlite3_bind_int64(st, 4, offset);
	page->list = mb_xcalloc(limit, sizeof(*page->list));
	while ((rc = idx_page_step(st, page->n, limit, &page->more)) == SQLITE_ROW) {
		struct mb_await_thread *t = &page->list[page->n++];

		t->thread_id = sqlite3_column_int64(st, 0);
		t->dir = (enum mb_await_dir)sqlite3_column_int(st, 1);
		t->id = sqlite3_column_int64(st, 2);
		t->date = sqlite3_column_int64(st, 3);
		t->messages = sqlite3_column_int64(st, 4);
		t->folder = idx_col_text(st, 5, NULL);
		t->from = idx_col_text(st, 6, NULL);
		t->to = idx_col_text(st, 7, NULL);
		t->subject = idx_col_text(st, 8, NULL);
	}
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "awaiting", err);
	idx_stmt_done(st);
	page->next_offset = offset + (int64_t)page->n;
	return rc == SQLITE_DONE ? 0 : -1;
}

int
mb_overview_awaiting(struct mb_index *idx, unsigned dirs, int64_t before, int64_t offset,
    size_t limit, struct mb_await_page *page, struct mb_err *err)
{
	int rc;

	memset(page, 0, sizeof(*page));
	if (idx_page_check(offset, limit, MB_OVERVIEW_MAX_LIMIT, err) == -1)
		return -1;
	if (dirs == 0 || (dirs & ~(unsigned)(MB_AWAIT_OTHERS | MB_AWAIT_ME)) != 0)
		return mb_err_set(err, MB_E_INVALID, "no such direction");
	if (idx_read_begin(idx, err) == -1)
		return -1;
	rc = await_rows(idx, dirs, before, offset, limit, page, err);
	idx_read_end(idx);
	return rc;
}

void
mb_await_page_release(struct mb_await_page *page)
{
	for (size_t i = 0; i < page->n; i++) {
		free(page->list[i].folder);
		free(page->list[i].from);
		free(page->list[i].to);
		free(page->list[i].subject);
	}
	free(page->list);
	memset(page, 0, sizeof(*page));
}
