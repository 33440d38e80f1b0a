/*
 * The tools and resources: read-only queries over the index, answered as
 * MCP results.  Every statement is prepared with bound parameters; every
 * string from the index reaches the model fenced (fence.c) in the text
 * block, and as data in structuredContent.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mcpd.h"

#define SEARCH_MAX_LIMIT	50	/* = search_messages.json's limit maximum */
#define SNIPPET_TOKENS		16

/* ---- helpers */

/* A statement failed: MB_E_INTERNAL with SQLite's words (logged, not sent).  NULL. */
static json_t *
db_failure(sqlite3 *db, const char *what, struct mb_err *err)
{
	mb_err_set(err, MB_E_INTERNAL, "%s: %s", what, sqlite3_errmsg(db));
	return NULL;
}

static json_t *
col_text(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return json_null();
	return mcp_json_text((const char *)sqlite3_column_text(st, i),
	    (size_t)sqlite3_column_bytes(st, i));
}

static json_t *
col_date(sqlite3_stmt *st, int i)
{
	char d[32];

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return json_null();
	mcp_iso_date(sqlite3_column_int64(st, i), d);
	return json_string(d);
}

static uint64_t
fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *u = p;

	for (size_t i = 0; i < n; i++) {
		h ^= u[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t
query_hash(const struct mb_query *q)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (q->match)
		h = fnv1a(h, q->match, strlen(q->match) + 1);
	h = fnv1a(h, "|", 1);
	if (q->folder)
		h = fnv1a(h, q->folder, strlen(q->folder) + 1);
	h = fnv1a(h, &q->since, sizeof(q->since));
	h = fnv1a(h, &q->until, sizeof(q->until));
	h = fnv1a(h, &q->flags_set, sizeof(q->flags_set));
	h = fnv1a(h, &q->flags_clear, sizeof(q->flags_clear));
	h = fnv1a(h, &q->has_attachment, sizeof(q->has_attachment));
	return h;
}

/* ---- search_messages */

/*
 * Ranked search, in one pass over the matches.  BM25 scores every match it
 * is asked to, so a word in thousands of messages would cost milliseconds
 * however few rows are returned; the ranking is therefore bounded to the
 * newest matches.  The statement walks the matches newest first by rowid
 * (filters applied; FTS5 reads its doclists in that order, no sort), scores
 * each with bm25() and stops after the cap (?10); the scores are then sorted
 * here.  With fewer matches than the cap everything is ranked; past it the
 * answer says that only the newest matches were ranked.  Column statistics
 * for BM25 (IDF, average lengths) still come from the whole index.
 *
 * This replaced two statements -- a walk for the rowid of the cap-th newest
 * match, then FTS5's "ORDER BY rank" above that rowid -- which read the
 * doclists twice (for a prefix term, merged them twice) and made FTS5
 * prepare and run a sorting statement of its own on every search.
 *
 * The order is score, then date (newest first), then id (highest first).
 * Only ties need the date: the statement without filters reads FTS5 alone,
 * and dates are read afterwards for the tie groups that touch the page
 * (rank_break_ties), so messages is read only for the page's rows.
 */
#define SEARCH_TIE_WINDOW	64
#define SEARCH_RANK_CAP		500
/* Subject over sender over recipients over body (bm25 column weights). */
#define RANK_BM25		"mb_bm25(messages_fts, ?1, 10.0, 4.0, 2.0, 1.0)"
static const char search_sql_rank[] =
	"SELECT messages_fts.rowid, " RANK_BM25 ", m.date "
	"FROM messages_fts CROSS JOIN messages AS m ON m.id = messages_fts.rowid "
	"WHERE messages_fts MATCH ?1 "
	"AND (?2 IS NULL OR m.folder_id = ?2) "
	"AND (?3 IS NULL OR m.date >= ?3) AND (?4 IS NULL OR m.date < ?4) "
	"AND (m.flags & ?5) = ?5 AND (m.flags & ?6) = 0 "
	"AND (?7 IS NULL OR (m.attachment_count > 0) = ?7) "
	"ORDER BY messages_fts.rowid DESC LIMIT ?10";
/* The same without filters: FTS5 alone (a join would read a messages row
 * for every match, which for a common word cost more than the scoring). */
static const char search_sql_rank_nf[] =
	"SELECT rowid, " RANK_BM25 " FROM messages_fts WHERE messages_fts MATCH ?1 "
	"ORDER BY rowid DESC LIMIT ?10";
static const char date_sql[] = "SELECT date FROM messages WHERE id = ?1";

static const char search_sql_filter[] =
	"SELECT m.id FROM messages AS m "
	"WHERE (?2 IS NULL OR m.folder_id = ?2) "
	"AND (?3 IS NULL OR m.date >= ?3) AND (?4 IS NULL OR m.date < ?4) "
	"AND (m.flags & ?5) = ?5 AND (m.flags & ?6) = 0 "
	"AND (?7 IS NULL OR (m.attachment_count > 0) = ?7) "
	"ORDER BY m.date DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * The same with a date bound: "?3 IS NULL OR m.date >= ?3" hides the range
 * from the planner, which then walks messages_date from the newest message
 * down (40,000 entries for after:2002-09-01 at 100,000 messages).  Here the
 * open end is bound to the extreme value (search_filtered) and the index is
 * searched by range.  Same rows: with either bound set, a NULL date already
 * failed the test (and INT64_MAX is never a real date).
 */
static const char search_sql_filter_dated[] =
	"SELECT m.id FROM messages AS m "
	"WHERE (?2 IS NULL OR m.folder_id = ?2) AND m.date >= ?3 AND m.date < ?4 "
	"AND (m.flags & ?5) = ?5 AND (m.flags & ?6) = 0 "
	"AND (?7 IS NULL OR (m.attachment_count > 0) = ?7) "
	"ORDER BY m.date DESC, m.id DESC LIMIT ?8 OFFSET ?9";

/*
 * One search reads in one transaction: a single snapshot for all its
 * statements (ids, rows and snippets agree), and one WAL read lock instead of
 * one per statement step -- a page is some 25 statements.
 */
static const char begin_sql[] = "BEGIN";
static const char commit_sql[] = "COMMIT";

static const char hit_sql[] =
	"SELECT m.id, f.name, m.date, m.from_text, m.recipients, m.subject, m.flags, "
	"m.attachment_count, m.thread_id, m.body FROM messages AS m "
	"JOIN folders AS f ON f.id = m.folder_id WHERE m.id = ?1";

#define EXCERPT_CHARS	160	/* about what snippet() gives for 16 tokens */

/*
 * Snippets for the returned rows only, in one FTS5 query (?2..?51: the ids;
 * ?52, ?53: the lowest and highest; ?54: the column, see snippet_column).
 * The ids are tested with "+rowid IN": a plain "rowid IN" is handed to FTS5
 * as one lookup per id, each of which reads the doclists again (for a prefix
 * term, merges them: 20 merges a page, 85 ms at 100,000 messages).  FTS5
 * walks the matches between the lowest and the highest id once instead, and
 * snippet() runs for the listed rows only.
 */
static const char snippet_sql[] =
	"SELECT rowid, snippet(messages_fts, ?54, '**', '**', '…', 16) FROM messages_fts "
	"WHERE messages_fts MATCH ?1 AND rowid >= ?52 AND rowid <= ?53 AND +rowid IN (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19"
	", ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35"
	", ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51)";

static const char preview_sql[] =
	"SELECT substr(body, 1, 200) FROM messages WHERE id = ?1";

static const char folder_id_sql[] = "SELECT id FROM folders WHERE name = ?1";

/* Add the structured filters (checked arguments) to q; -1 + err (MB_E_INVALID) on a bad value. */
static int
structured_filters(json_t *args, struct mb_query *q, struct mb_err *err)
{
	const char *folder = mcp_arg_str(args, "folder"), *from = mcp_arg_str(args, "from");
	const char *since = mcp_arg_str(args, "since"), *until = mcp_arg_str(args, "until");
	int64_t t;

	if (folder && *folder) {
		if (q->folder && strcmp(q->folder, folder) != 0)
			return mb_err_set(err, MB_E_INVALID, "the folder argument and folder: in the "
			    "query differ; give one folder");
		if (!q->folder)
			q->folder = mb_xstrdup(folder);
	}
	if (since && *since) {
		if (mb_query_parse_date(since, strlen(since), &t) == -1)
			return mb_err_set(err, MB_E_INVALID, "since must be a date written YYYY-MM-DD, "
			    "got \"%.40s\"", since);
		if (t > q->since)
			q->since = t;
	}
	if (until && *until) {
		if (mb_query_parse_date(until, strlen(until), &t) == -1)
			return mb_err_set(err, MB_E_INVALID, "until must be a date written YYYY-MM-DD, "
			    "got \"%.40s\"", until);
		t += 86400;	/* until is inclusive: before the next day */
		if (t < q->until)
			q->until = t;
	}
	if (from && *from) {
		struct mb_buf b = MB_BUF_INIT(64 * 1024);
		struct mb_query fq;
		struct mb_err qerr = { 0 };

		/* compile "from:<value>" through the same safe path as the query text */
		mb_query_init(&fq);
		mb_buf_adds(&b, "from:\"");
		for (const char *p = from; *p; p++)
			mb_buf_addc(&b, *p == '"' ? ' ' : *p);
		mb_buf_adds(&b, "\"");
		if (mb_query_compile(b.data, b.len, &fq, &qerr) == -1 || fq.match == NULL) {
			mb_buf_release(&b);
			mb_query_release(&fq);
			return mb_err_set(err, MB_E_INVALID, "from must contain a name or an "
			    "address%s%s", qerr.code ? ": " : "", qerr.code ? qerr.msg : "");
		}
		mb_buf_reset(&b);
		if (q->match)
			mb_buf_addf(&b, "(%s) AND %s", q->match, fq.match);
		else
			mb_buf_adds(&b, fq.match);
		if (q->match && (q->column == NULL || fq.column == NULL ||
		    strcmp(q->column, fq.column) != 0))
			q->column = NULL;	/* the terms are in more than one column */
		else
			q->column = fq.column;
		free(q->match);
		q->match = mb_buf_detach(&b, NULL);
		q->n_terms += fq.n_terms;
		mb_query_release(&fq);
	}
	return 0;
}

/* Bind the query text and the filters (?1-?7) shared by the search statements. */
static void
bind_filters(sqlite3_stmt *st, const struct mb_query *q, int64_t folder_id)
{
	if (q->match)
		sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
	if (q->folder)
		sqlite3_bind_int64(st, 2, folder_id);
	if (q->since != INT64_MIN)
		sqlite3_bind_int64(st, 3, q->since);
	if (q->until != INT64_MAX)
		sqlite3_bind_int64(st, 4, q->until);
	sqlite3_bind_int64(st, 5, q->flags_set);
	sqlite3_bind_int64(st, 6, q->flags_clear);
	if (q->has_attachment >= 0)
		sqlite3_bind_int(st, 7, q->has_attachment);
}

/* One match of a ranked search. */
struct ranked {
	int64_t	id;
	double	score;		/* bm25(): lower is better */
	int64_t	date;
	int	date_state;	/* enum below: dates are read for ties only */
};
enum { RANK_DATE_UNREAD, RANK_DATE_SET, RANK_DATE_NULL };

/*
 * The order of "ORDER BY score, date DESC, id DESC" (SQLite puts NULL dates
 * last).  Unread dates compare equal: rank_break_ties() reads them wherever
 * two rows of one score meet on the page.
 */
static int
ranked_cmp(const void *pa, const void *pb)
{
	const struct ranked *a = pa, *b = pb;

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

/*
 * Step st (a bound search_sql_rank statement) to the end and collect its
 * rows; with_date: column 2 is the date.  *rows_r is the caller's to free(3),
 * also when this returns -1 (a database error).
 */
static int
rank_collect(sqlite3_stmt *st, bool with_date, struct ranked **rows_r, size_t *n_r)
{
	struct ranked *rows = NULL;
	size_t n = 0, cap = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct ranked *r;

		if (n == cap) {
			cap = cap ? 2 * cap : SEARCH_RANK_CAP;
			rows = mb_xrealloc(rows, cap * sizeof(*rows));
		}
		r = &rows[n++];
		r->id = sqlite3_column_int64(st, 0);
		r->score = sqlite3_column_double(st, 1);
		r->date = 0;
		r->date_state = RANK_DATE_UNREAD;
		if (with_date) {
			r->date_state = sqlite3_column_type(st, 2) == SQLITE_NULL ? RANK_DATE_NULL :
			    RANK_DATE_SET;
			r->date = sqlite3_column_int64(st, 2);
		}
	}
	*rows_r = rows;
	*n_r = n;
	return rc == SQLITE_DONE ? 0 : -1;
}

/*
 * rows (n, sorted by ranked_cmp) may hold unread dates: put [lo, hi) in the
 * full order.  The range is widened to whole groups of equal scores, the
 * dates of the rows in such a group are read, and the range re-sorted.  A
 * page rarely has a tie, so this usually reads nothing.  -1 on a database
 * error.
 */
static int
rank_break_ties(struct mcp_server *srv, struct ranked *rows, size_t n, size_t lo, size_t hi)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	if (lo >= hi)
		return 0;
	while (lo > 0 && rows[lo - 1].score == rows[lo].score)
		lo--;
	while (hi < n && rows[hi].score == rows[hi - 1].score)
		hi++;
	for (size_t i = lo; i < hi && rc == 0; i++) {
		bool tie = (i > lo && rows[i - 1].score == rows[i].score) ||
		    (i + 1 < hi && rows[i + 1].score == rows[i].score);

		if (!tie || rows[i].date_state != RANK_DATE_UNREAD)
			continue;
		if (st == NULL && (st = mcp_server_stmt(srv, date_sql)) == NULL)
			return -1;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, rows[i].id);
		switch (sqlite3_step(st)) {
		case SQLITE_ROW:
			rows[i].date_state = sqlite3_column_type(st, 0) == SQLITE_NULL ?
			    RANK_DATE_NULL : RANK_DATE_SET;
			rows[i].date = sqlite3_column_int64(st, 0);
			break;
		case SQLITE_DONE:	/* no row: the page skips it as deleted */
			rows[i].date_state = RANK_DATE_NULL;
			break;
		default:
			rc = -1;
		}
	}
	mcp_server_stmt_done(st);
	if (rc == 0)
		qsort(rows + lo, hi - lo, sizeof(*rows), ranked_cmp);
	return rc;
}

/* The ids of one page of a search, and what the answer says about them. */
struct search_page {
	int64_t	ids[SEARCH_MAX_LIMIT];
	size_t	n;
	bool	more;		/* a next page exists */
	bool	capped;		/* more matches than the cap: only the newest were ranked */
};

/*
 * A ranked page: the matches at [offset, offset + limit) of the ranked set.
 * The cap is at least the page end plus SEARCH_TIE_WINDOW rows, so paging
 * past it widens it and deep pages stay consistent.  -1 on a database error.
 */
static int
search_ranked(struct mcp_server *srv, const struct mb_query *q, int64_t folder_id,
    bool filtered, int64_t offset, long long limit, struct search_page *pg)
{
	int64_t window = offset + limit + 1 + SEARCH_TIE_WINDOW;
	int64_t cap = window > SEARCH_RANK_CAP ? window : SEARCH_RANK_CAP;
	struct ranked *rows = NULL;
	sqlite3_stmt *st;
	size_t n = 0, lo, hi;
	int rc;

	st = mcp_server_stmt(srv, filtered ? search_sql_rank : search_sql_rank_nf);
	if (st == NULL)
		return -1;
	bind_filters(st, q, folder_id);
	sqlite3_bind_int64(st, 10, cap);
	rc = rank_collect(st, filtered, &rows, &n);
	mcp_server_stmt_done(st);
	if (rc == 0) {
		if (n > 0)	/* rows is NULL without a match */
			qsort(rows, n, sizeof(*rows), ranked_cmp);
		lo = (uint64_t)offset < n ? (size_t)offset : n;
		hi = n - lo > (size_t)limit ? lo + (size_t)limit : n;
		rc = rank_break_ties(srv, rows, n, lo, hi);
	}
	if (rc == 0) {
		for (size_t i = lo; i < hi; i++)
			pg->ids[pg->n++] = rows[i].id;
		pg->more = n > hi;
		pg->capped = (int64_t)n == cap;
	}
	free(rows);
	return rc;
}

/* A page of a query of filters alone, newest first.  -1 on a database error. */
static int
search_filtered(struct mcp_server *srv, const struct mb_query *q, int64_t folder_id,
    int64_t offset, long long limit, struct search_page *pg)
{
	bool dated = q->since != INT64_MIN || q->until != INT64_MAX;
	sqlite3_stmt *st = mcp_server_stmt(srv, dated ? search_sql_filter_dated :
	    search_sql_filter);
	int rc;

	if (st == NULL)
		return -1;
	bind_filters(st, q, folder_id);
	if (dated) {	/* both ends bound: see search_sql_filter_dated */
		sqlite3_bind_int64(st, 3, q->since);
		sqlite3_bind_int64(st, 4, q->until);
	}
	sqlite3_bind_int64(st, 8, limit + 1);
	sqlite3_bind_int64(st, 9, offset);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if ((long long)pg->n == limit) {
			pg->more = true;
			rc = SQLITE_DONE;
			break;
		}
		pg->ids[pg->n++] = sqlite3_column_int64(st, 0);
	}
	mcp_server_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The folder's id: 1 found, 0 no such folder, -1 a database error. */
static int
folder_lookup(struct mcp_server *srv, const char *name, int64_t *id_r)
{
	sqlite3_stmt *st = mcp_server_stmt(srv, folder_id_sql);
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id_r = sqlite3_column_int64(st, 0);
	mcp_server_stmt_done(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* One hit's object from a hit_sql row, with an empty snippet. */
static json_t *
hit_object(sqlite3_stmt *hit, int64_t id)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}",
	    "id", (json_int_t)id, "folder", col_text(hit, 1), "date", col_date(hit, 2),
	    "from", col_text(hit, 3), "to", col_text(hit, 4), "subject", col_text(hit, 5),
	    "flags", mcp_flag_list((unsigned)sqlite3_column_int(hit, 6)),
	    "attachment_count", (json_int_t)sqlite3_column_int64(hit, 7),
	    "thread_id", (json_int_t)sqlite3_column_int64(hit, 8), "snippet", "");
}

/*
 * snippet()'s column argument for q.  -1 (the best column) tokenizes every
 * column of the row, the body too, only to score the columns that have no
 * hit at zero; when every positive term is restricted to one column
 * (subject:, from:, to:, body:) the hits can only be there, and naming it
 * gives the same snippet for a fraction of the work (0.1 instead of 0.5 ms a
 * page for subject:money).
 */
static int
snippet_column(const struct mb_query *q)
{
	static const char *const columns[] = { "subject", "from_text", "recipients", "body" };

	for (size_t i = 0; q->column != NULL && i < MB_ARRAY_LEN(columns); i++)
		if (strcmp(q->column, columns[i]) == 0)
			return (int)i;
	return -1;
}

/*
 * The hits of the page, in order, into results (a message deleted since the
 * ids were read is skipped).  Snippets: the cheap excerpt when a query word
 * is literally in the body; FTS5's snippet() for the rest, in one query for
 * them all; a filter-only query shows the start of the body.  -1 on a
 * database error.
 */
static int
search_hits(struct mcp_server *srv, const struct mb_query *q, const struct search_page *pg,
    json_t *results)
{
	sqlite3_stmt *hit, *snip;
	int64_t need[SEARCH_MAX_LIMIT];
	size_t n_need = 0;
	int rc = 0;

	if ((hit = mcp_server_stmt(srv, hit_sql)) == NULL ||
	    (snip = mcp_server_stmt(srv, q->match ? snippet_sql : preview_sql)) == NULL) {
		mcp_server_stmt_done(hit);
		return -1;
	}
	for (size_t i = 0; i < pg->n; i++) {
		json_t *h;

		sqlite3_reset(hit);
		sqlite3_bind_int64(hit, 1, pg->ids[i]);
		if (sqlite3_step(hit) != SQLITE_ROW)
			continue;	/* deleted between the two reads */
		h = hit_object(hit, pg->ids[i]);
		json_array_append_new(results, h);
		if (q->match) {
			struct mb_buf ex = MB_BUF_INIT(4096);
			const char *body = (const char *)sqlite3_column_text(hit, 9);

			if (body != NULL && mb_query_excerpt(q, body,
			    (size_t)sqlite3_column_bytes(hit, 9), EXCERPT_CHARS, &ex) == 0)
				json_object_set_new(h, "snippet", mcp_json_text(ex.data, ex.len));
			else
				need[n_need++] = pg->ids[i];
			mb_buf_release(&ex);
		} else {
			sqlite3_reset(snip);
			sqlite3_bind_int64(snip, 1, pg->ids[i]);
			if (sqlite3_step(snip) == SQLITE_ROW &&
			    sqlite3_column_type(snip, 0) != SQLITE_NULL)
				json_object_set_new(h, "snippet", col_text(snip, 0));
		}
	}
	if (q->match && n_need > 0) {
		int64_t lo = need[0], hi = need[0];

		sqlite3_bind_text(snip, 1, q->match, -1, SQLITE_STATIC);
		for (size_t i = 0; i < n_need; i++) {
			sqlite3_bind_int64(snip, (int)i + 2, need[i]);
			lo = need[i] < lo ? need[i] : lo;
			hi = need[i] > hi ? need[i] : hi;
		}
		sqlite3_bind_int64(snip, 52, lo);
		sqlite3_bind_int64(snip, 53, hi);
		sqlite3_bind_int(snip, 54, snippet_column(q));
		while ((rc = sqlite3_step(snip)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(snip, 0);
			size_t i;
			json_t *h;

			json_array_foreach(results, i, h)
				if (json_integer_value(json_object_get(h, "id")) == id)
					json_object_set_new(h, "snippet", col_text(snip, 1));
		}
		rc = rc == SQLITE_DONE ? 0 : -1;
	}
	mcp_server_stmt_done(hit);
	mcp_server_stmt_done(snip);
	return rc;
}

/* The text block of a search answer, from its structured results. */
static void
search_text(struct mcp_answer *a, json_t *results, int64_t offset)
{
	static const char *const keys[] = { "from", "to", "subject", "snippet" };
	static const char *const labels[] = { "From", "To", "Subject", "Snippet" };
	size_t n = json_array_size(results);

	if (n == 0)
		mb_buf_addf(&a->text, "%s",
		    offset > 0 ? "No more results: this was the last page.\n" :
		    "No messages matched. Try fewer or different words, a prefix (e.g. meet* for "
		    "meeting/meetings), fewer filters, or another folder (list_folders names "
		    "them).\n");
	else
		mb_buf_addf(&a->text, "Results %lld-%lld, best match first. %s\n\n",
		    (long long)offset + 1, (long long)offset + (long long)n, MCP_FENCE_NOTE);
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_array_get(results, i);
		json_t *d = json_object_get(h, "date");

		mb_buf_addf(&a->text, "%zu. id %" JSON_INTEGER_FORMAT " | %s | %s | ",
		    (size_t)offset + i + 1, json_integer_value(json_object_get(h, "id")),
		    json_string_value(json_object_get(h, "folder")),
		    json_is_string(d) ? json_string_value(d) : "no date");
		mcp_add_flags_text(&a->text, json_object_get(h, "flags"));
		mb_buf_addf(&a->text, " | attachments: %" JSON_INTEGER_FORMAT "\n",
		    json_integer_value(json_object_get(h, "attachment_count")));
		mcp_add_fenced_fields(a, h, keys, labels, MB_ARRAY_LEN(keys));
	}
}

/* The CallToolResult for a page (pg's ids may name deleted messages). */
static json_t *
search_answer(struct mcp_server *srv, struct mb_query *q, const struct search_page *pg,
    int64_t offset, uint64_t qhash)
{
	struct mcp_answer a;
	json_t *results = json_array();
	size_t n;

	if (search_hits(srv, q, pg, results) == -1) {
		json_decref(results);
		return NULL;
	}
	mcp_answer_init(&a);
	json_object_set_new(a.data, "results", results);
	search_text(&a, results, offset);
	n = json_array_size(results);
	if (n == 0 && offset == 0)
		json_object_set_new(a.data, "hint", json_string("no messages matched: try fewer "
		    "words, a prefix (meet*), or another folder"));
	if (pg->capped && n > 0) {
		json_object_set_new(a.data, "ranked_newest", json_integer(SEARCH_RANK_CAP));
		mb_buf_addf(&a.text, "\nThese words match more than %d messages: only the newest "
		    "%d matches were ranked. Add words or filters (after:, from:, folder:) to reach "
		    "older mail.\n", SEARCH_RANK_CAP, SEARCH_RANK_CAP);
	}
	if (pg->more) {
		/* the next page starts after these ids, even if one vanished */
		char *c = mcp_cursor_make(srv, 's', offset + (int64_t)pg->n, qhash);

		json_object_set_new(a.data, "next_cursor", json_string(c));
		mb_buf_addf(&a.text, "\nMore results: call search_messages again with the same "
		    "arguments and cursor \"%s\".\n", c);
		free(c);
	}
	return mcp_answer_result(&a);
}

/* Compile the (checked) arguments into q (and *offset_r, *limit_r, *qhash_r);
 * -1 + err (MB_E_INVALID) when they make no search (q is then released). */
static int
search_args(struct mcp_server *srv, json_t *args, struct mb_query *q, int64_t *offset_r,
    long long *limit_r, uint64_t *qhash_r, struct mb_err *err)
{
	const char *text = mcp_arg_str(args, "query"), *cursor = mcp_arg_str(args, "cursor");
	struct mb_err qerr = { 0 };
	uint64_t chash;

	mb_query_init(q);
	*offset_r = 0;
	*limit_r = mcp_arg_int(args, "limit");
	if (MB_NEVER(*limit_r < 1 || *limit_r > SEARCH_MAX_LIMIT))	/* the page arrays */
		return mb_err_set(err, MB_E_INTERNAL, "limit %lld: search_messages.json and "
		    "SEARCH_MAX_LIMIT disagree", *limit_r);
	if (text && mb_query_compile(text, strlen(text), q, &qerr) == -1)
		return mb_err_set(err, MB_E_INVALID, "%s", qerr.msg);
	if (structured_filters(args, q, err) == -1) {
		mb_query_release(q);
		return -1;
	}
	if (mb_query_empty(q)) {
		mb_query_release(q);
		return mb_err_set(err, MB_E_INVALID, "nothing to search for: give query some words "
		    "(e.g. \"invoice\", \"meeting notes\", \"budg*\") or a filter (folder:INBOX, "
		    "from:alice, after:2024-01-01, is:unread)");
	}
	*qhash_r = query_hash(q);
	if (cursor) {
		if (mcp_cursor_parse(srv, cursor, 's', offset_r, &chash) == -1) {
			mb_query_release(q);
			return mb_err_set(err, MB_E_INVALID, "invalid cursor: pass next_cursor exactly "
			    "as the previous search_messages answer gave it, or leave cursor out for "
			    "the first page");
		}
		if (chash != *qhash_r) {
			mb_query_release(q);
			return mb_err_set(err, MB_E_INVALID, "this cursor belongs to a different "
			    "search: repeat the same query and filters with it, or leave cursor out "
			    "to start over");
		}
	}
	return 0;
}

/* Step one of the transaction statements; -1 on failure. */
static int
txn_step(struct mcp_server *srv, const char *sql)
{
	sqlite3_stmt *st = mcp_server_stmt(srv, sql);
	int rc = st != NULL ? sqlite3_step(st) : SQLITE_ERROR;

	mcp_server_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

json_t *
mcp_tool_search_messages(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_query q;
	struct search_page pg = { .n = 0 };
	struct mb_index *idx;
	sqlite3 *db;
	long long limit;
	int64_t offset, folder_id = 0;
	uint64_t qhash = 0;
	bool filtered;
	json_t *r;
	int rc = 1;

	if (search_args(srv, args, &q, &offset, &limit, &qhash, err) == -1)
		return NULL;
	idx = mcp_server_index(srv, err);
	if (idx == NULL) {
		mb_query_release(&q);
		return mcp_index_unavailable(err);
	}
	db = mb_index_db(idx);
	/* a COMMIT that failed would leave the thread's connection in the transaction */
	if (!sqlite3_get_autocommit(db))
		(void)txn_step(srv, commit_sql);
	if (txn_step(srv, begin_sql) == -1) {
		mb_query_release(&q);
		return db_failure(db, "search: begin", err);
	}
	if (q.folder && (rc = folder_lookup(srv, q.folder, &folder_id)) != 1) {
		if (rc == 0)
			mb_err_set(err, MB_E_NOTFOUND, "there is no folder named \"%.100s\"; "
			    "list_folders shows the folder names", q.folder);
		r = rc == 0 ? NULL : db_failure(db, "search: folder", err);
		goto out;
	}
	filtered = q.folder || q.since != INT64_MIN || q.until != INT64_MAX || q.flags_set ||
	    q.flags_clear || q.has_attachment >= 0;
	rc = q.match ? search_ranked(srv, &q, folder_id, filtered, offset, limit, &pg) :
	    search_filtered(srv, &q, folder_id, offset, limit, &pg);
	if (rc == -1 || (r = search_answer(srv, &q, &pg, offset, qhash)) == NULL)
		r = db_failure(db, "search: step", err);
out:
	if (txn_step(srv, commit_sql) == -1)
		mb_log_error("search: commit: %s", sqlite3_errmsg(db));
	mb_query_release(&q);
	return r;
}

/* ---- get_message */

static const char message_sql[] =
	"SELECT m.id, f.name, f.role, m.thread_id, m.message_id, m.in_reply_to, m.date, "
	"m.from_text, m.recipients, m.to_json, m.cc_json, m.subject, m.flags, m.list_id, "
	"m.body, m.body_truncated, m.headers_only "
	"FROM messages AS m JOIN folders AS f ON f.id = m.folder_id WHERE m.id = ?1";

static const char attachments_sql[] =
	"SELECT filename, mime_type, size, is_inline FROM attachments WHERE message_id = ?1 "
	"ORDER BY ordinal";

/* Byte offset of character nchars in s (len bytes): include/mailbox/utf8.h. */
static size_t
char_offset(const char *s, size_t len, size_t nchars)
{
	return mb_utf8_offset(s, len, nchars);
}

static size_t
char_count(const char *s, size_t len)
{
	return mb_utf8_count(s, len);
}

/* "a, b" from a to_json/cc_json array of {name, addr}; NULL when empty. */
static json_t *
addr_list(sqlite3_stmt *st, int col)
{
	json_error_t e;
	json_t *arr, *v, *out;
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	size_t i;

	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	arr = json_loads((const char *)sqlite3_column_text(st, col), 0, &e);
	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		json_decref(arr);
		return json_null();
	}
	json_array_foreach(arr, i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *addr = json_string_value(json_object_get(v, "addr"));

		if (i)
			mb_buf_adds(&b, ", ");
		if (name && *name && addr)
			mb_buf_addf(&b, "%s <%s>", name, addr);
		else
			mb_buf_adds(&b, addr ? addr : name ? name : "");
	}
	json_decref(arr);
	out = mcp_json_text(b.data, b.len);
	mb_buf_release(&b);
	return out;
}

/* One message as structured data plus its text block; NULL when not found (*found_r). */
static json_t *
message_read(struct mcp_server *srv, int64_t id, long long offset, bool *found_r,
    struct mcp_answer *a, const char **failed_r)
{
	static const char *const keys[] = { "from", "to", "cc", "subject", "date",
	    "list_id" };
	static const char *const labels[] = { "From", "To", "Cc", "Subject", "Date",
	    "List-Id" };
	sqlite3_stmt *st = NULL, *at = NULL;
	json_t *m = NULL, *atts;
	const char *body;
	size_t blen, start, end, total;
	struct mb_buf inner = MB_BUF_INIT(8u << 20);
	int rc;

	*found_r = false;
	*failed_r = NULL;
	if ((st = mcp_server_stmt(srv, message_sql)) == NULL ||
	    (at = mcp_server_stmt(srv, attachments_sql)) == NULL) {
		*failed_r = "get_message: prepare";
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		if (rc != SQLITE_DONE)
			*failed_r = "get_message: step";
		goto out;
	}
	*found_r = true;
	body = (const char *)sqlite3_column_text(st, 14);
	blen = (size_t)sqlite3_column_bytes(st, 14);
	if (body == NULL)
		body = "";
	total = char_count(body, blen);
	start = char_offset(body, blen, (size_t)offset);
	end = start + char_offset(body + start, blen - start, MCP_BODY_CAP_CHARS);
	m = json_pack("{s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "id", (json_int_t)id, "folder", col_text(st, 1), "folder_role", col_text(st, 2),
	    "thread_id", (json_int_t)sqlite3_column_int64(st, 3),
	    "message_id", col_text(st, 4), "in_reply_to", col_text(st, 5),
	    "date", col_date(st, 6), "from", col_text(st, 7), "to", addr_list(st, 9),
	    "cc", addr_list(st, 10), "subject", col_text(st, 11),
	    "flags", mcp_flag_list((unsigned)sqlite3_column_int(st, 12)),
	    "list_id", col_text(st, 13));
	if (json_is_null(json_object_get(m, "to")))
		json_object_set_new(m, "to", col_text(st, 8));
	json_object_set_new(m, "body", mcp_json_text(body + start, end - start));
	json_object_set_new(m, "offset", json_integer(offset));
	json_object_set_new(m, "body_chars", json_integer((json_int_t)total));
	json_object_set_new(m, "next_offset", end < blen ?
	    json_integer(offset + (json_int_t)char_count(body + start, end - start)) :
	    json_null());
	json_object_set_new(m, "body_truncated_at_index", json_boolean(
	    sqlite3_column_int(st, 15) != 0));
	json_object_set_new(m, "headers_only", json_boolean(sqlite3_column_int(st, 16) != 0));
	atts = json_array();
	sqlite3_bind_int64(at, 1, id);
	while ((rc = sqlite3_step(at)) == SQLITE_ROW)
		json_array_append_new(atts, json_pack("{s:o, s:o, s:I, s:b}",
		    "name", col_text(at, 0), "type", col_text(at, 1),
		    "size", (json_int_t)sqlite3_column_int64(at, 2),
		    "inline", sqlite3_column_int(at, 3) != 0));
	json_object_set_new(m, "attachments", atts);
	if (rc != SQLITE_DONE) {
		*failed_r = "get_message: attachments";
		json_decref(m);
		m = NULL;
		goto out;
	}
	if (a != NULL) {
		size_t i;
		json_t *v;

		mb_buf_addf(&a->text, "Message id %lld in folder ", (long long)id);
		mb_buf_adds(&a->text, json_string_value(json_object_get(m, "folder")));
		mb_buf_addf(&a->text, ", thread %" JSON_INTEGER_FORMAT ", flags: ",
		    json_integer_value(json_object_get(m, "thread_id")));
		mcp_add_flags_text(&a->text, json_object_get(m, "flags"));
		mb_buf_addf(&a->text, ". %s\n", MCP_FENCE_NOTE);
		for (i = 0; i < MB_ARRAY_LEN(keys); i++) {
			v = json_object_get(m, keys[i]);
			if (json_is_string(v))
				mb_buf_addf(&inner, "%s: %s\n", labels[i], json_string_value(v));
		}
		json_array_foreach(atts, i, v) {
			json_t *nm = json_object_get(v, "name");

			mb_buf_addf(&inner, "Attachment: %s (%s, %" JSON_INTEGER_FORMAT " bytes)\n",
			    json_is_string(nm) ? json_string_value(nm) : "(no name)",
			    json_string_value(json_object_get(v, "type")),
			    json_integer_value(json_object_get(v, "size")));
		}
		mb_buf_addc(&inner, '\n');
		mb_buf_add(&inner, body + start, end - start);
		mcp_fence_add(&a->text, a->nonce, inner.data, inner.len);
		if (end < blen)
			mb_buf_addf(&a->text, "\nThe body continues (characters %" JSON_INTEGER_FORMAT
			    " of %zu shown): call get_message with id %lld and offset %"
			    JSON_INTEGER_FORMAT " for the rest.\n",
			    json_integer_value(json_object_get(m, "next_offset")), total,
			    (long long)id, json_integer_value(json_object_get(m, "next_offset")));
	}
out:
	mb_buf_release(&inner);
	mcp_server_stmt_done(st);
	mcp_server_stmt_done(at);
	return m;
}

json_t *
mcp_tool_get_message(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_index *idx;
	struct mcp_answer a;
	int64_t id = mcp_arg_int(args, "id");
	long long offset = mcp_arg_int(args, "offset");
	bool found;
	const char *failed;
	json_t *m;

	idx = mcp_server_index(srv, err);
	if (idx == NULL)
		return mcp_index_unavailable(err);
	mcp_answer_init(&a);
	m = message_read(srv, id, offset, &found, &a, &failed);
	if (m == NULL) {
		mcp_answer_release(&a);
		if (failed)
			return db_failure(mb_index_db(idx), failed, err);
		mb_err_set(err, MB_E_NOTFOUND, "no message with id %lld; ids come from "
		    "search_messages or get_thread", (long long)id);
		return NULL;
	}
	json_decref(a.data);
	a.data = m;
	return mcp_answer_result(&a);
}

/* ---- get_thread */

static const char thread_of_sql[] =
	"SELECT thread_id, (SELECT count(*) FROM messages AS t WHERE t.thread_id = m.thread_id) "
	"FROM messages AS m WHERE id = ?1";

static const char thread_sql[] =
	"SELECT m.id, f.name, m.date, m.from_text, m.subject, substr(m.body, 1, ?2) "
	"FROM messages AS m JOIN folders AS f ON f.id = m.folder_id "
	"WHERE m.thread_id = ?1 ORDER BY m.date IS NULL, m.date, m.id LIMIT ?3 OFFSET ?4";

json_t *
mcp_tool_get_thread(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	static const char *const keys[] = { "from", "subject", "preview" };
	static const char *const labels[] = { "From", "Subject", "Preview" };
	struct mb_index *idx;
	struct mcp_answer a;
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	int64_t id = mcp_arg_int(args, "id"), thread = 0, total = 0;
	long long offset = mcp_arg_int(args, "offset");
	json_t *list, *r;
	int rc;
	size_t n = 0, i;

	idx = mcp_server_index(srv, err);
	if (idx == NULL)
		return mcp_index_unavailable(err);
	db = mb_index_db(idx);
	if ((st = mcp_server_stmt(srv, thread_of_sql)) == NULL)
		return db_failure(db, "get_thread: prepare", err);
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		thread = sqlite3_column_int64(st, 0);
		total = sqlite3_column_int64(st, 1);
	}
	mcp_server_stmt_done(st);
	st = NULL;
	if (rc == SQLITE_DONE) {
		mb_err_set(err, MB_E_NOTFOUND, "no message with id %lld; ids come from "
		    "search_messages", (long long)id);
		return NULL;
	}
	if (rc != SQLITE_ROW)
		return db_failure(db, "get_thread: step", err);
	if ((st = mcp_server_stmt(srv, thread_sql)) == NULL)
		return db_failure(db, "get_thread: prepare", err);
	sqlite3_bind_int64(st, 1, thread);
	sqlite3_bind_int(st, 2, MCP_PREVIEW_CHARS);
	sqlite3_bind_int(st, 3, MCP_THREAD_PAGE);
	sqlite3_bind_int64(st, 4, offset);
	mcp_answer_init(&a);
	list = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_array_append_new(list, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}",
		    "id", (json_int_t)sqlite3_column_int64(st, 0), "folder", col_text(st, 1),
		    "date", col_date(st, 2), "from", col_text(st, 3), "subject", col_text(st, 4),
		    "preview", col_text(st, 5)));
		n++;
	}
	mcp_server_stmt_done(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		mcp_answer_release(&a);
		return db_failure(db, "get_thread: step", err);
	}
	json_object_set_new(a.data, "thread_id", json_integer(thread));
	json_object_set_new(a.data, "total", json_integer(total));
	json_object_set_new(a.data, "messages", list);
	json_object_set_new(a.data, "next_offset", offset + (long long)n < total ?
	    json_integer(offset + (json_int_t)n) : json_null());
	mb_buf_addf(&a.text, "Thread %lld: %lld message(s), oldest first; showing %lld-%lld. "
	    "%s\n\n", (long long)thread, (long long)total, offset + (n ? 1 : 0),
	    offset + (long long)n, MCP_FENCE_NOTE);
	for (i = 0; i < n; i++) {
		json_t *h = json_array_get(list, i);
		json_t *d = json_object_get(h, "date");

		mb_buf_addf(&a.text, "%lld. id %" JSON_INTEGER_FORMAT " | %s | %s\n",
		    offset + (long long)i + 1, json_integer_value(json_object_get(h, "id")),
		    json_string_value(json_object_get(h, "folder")),
		    json_is_string(d) ? json_string_value(d) : "no date");
		if (json_is_null(json_object_get(h, "preview")))
			json_object_set_new(h, "preview", json_string(""));
		mcp_add_fenced_fields(&a, h, keys, labels, MB_ARRAY_LEN(keys));
	}
	if (offset + (long long)n < total)
		mb_buf_addf(&a.text, "\nMore messages: call get_thread with id %lld and offset "
		    "%lld.\n", (long long)id, offset + (long long)n);
	r = mcp_answer_result(&a);
	return r;
}

/* ---- list_folders */

static const char folders_sql[] =
	"SELECT f.name, f.role, f.last_sync, count(m.id), coalesce(sum((m.flags & 1) = 0), 0) "
	"FROM folders AS f LEFT JOIN messages AS m ON m.folder_id = f.id "
	"GROUP BY f.id ORDER BY f.name";

json_t *
mcp_tool_list_folders(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	struct mb_index *idx;
	struct mcp_answer a;
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	json_t *list;
	size_t i;
	json_t *f;
	int rc;

	idx = mcp_server_index(srv, err);
	if (idx == NULL)
		return mcp_index_unavailable(err);
	db = mb_index_db(idx);
	if ((st = mcp_server_stmt(srv, folders_sql)) == NULL)
		return db_failure(db, "list_folders: prepare", err);
	mcp_answer_init(&a);
	list = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *ls = sqlite3_column_int64(st, 2) > 0 ? col_date(st, 2) : json_null();

		json_array_append_new(list, json_pack("{s:o, s:o, s:I, s:I, s:o}",
		    "name", col_text(st, 0), "role", col_text(st, 1),
		    "messages", (json_int_t)sqlite3_column_int64(st, 3),
		    "unread", (json_int_t)sqlite3_column_int64(st, 4), "last_sync", ls));
	}
	mcp_server_stmt_done(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		mcp_answer_release(&a);
		return db_failure(db, "list_folders: step", err);
	}
	json_object_set_new(a.data, "folders", list);
	mb_buf_addf(&a.text, "%zu folder(s):\n", json_array_size(list));
	json_array_foreach(list, i, f) {
		json_t *role = json_object_get(f, "role"), *ls = json_object_get(f, "last_sync");

		/* folder names come from the IMAP server: data, but short; quoted */
		mb_buf_addf(&a.text, "- \"%s\"%s%s: %" JSON_INTEGER_FORMAT " messages, %"
		    JSON_INTEGER_FORMAT " unread, last sync %s\n",
		    json_string_value(json_object_get(f, "name")),
		    json_is_string(role) ? " " : "", json_is_string(role) ?
		    json_string_value(role) : "",
		    json_integer_value(json_object_get(f, "messages")),
		    json_integer_value(json_object_get(f, "unread")),
		    json_is_string(ls) ? json_string_value(ls) : "never");
	}
	return mcp_answer_result(&a);
}

/* ---- resources */

static const char resources_sql[] =
	"SELECT id, subject, date FROM messages ORDER BY date DESC, id DESC LIMIT ?1 OFFSET ?2";

json_t *
mcp_resource_templates_list(void)
{
	return json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "resourceTemplates",
	    "uriTemplate", "mail://message/{id}", "name", "message", "title", "A mail message",
	    "description", "One message by id: headers and the normalised plain-text body. "
	    MCP_FENCE_NOTE, "mimeType", "text/plain");
}

json_t *
mcp_resources_list(struct mcp_server *srv, json_t *params, int *code_r, const char **message_r)
{
	struct mb_err err = { 0 };
	struct mb_index *idx;
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	json_t *cur = json_object_get(params, "cursor"), *list, *r;
	int64_t offset = 0;
	uint64_t h;
	int rc, n = 0;
	bool more = false;

	if (cur != NULL && !json_is_null(cur)) {
		if (!json_is_string(cur) ||
		    mcp_cursor_parse(srv, json_string_value(cur), 'r', &offset, &h) == -1 || h != 0) {
			*code_r = -32602;
			*message_r = "Invalid params: invalid cursor";
			return NULL;
		}
	}
	idx = mcp_server_index(srv, &err);
	if (idx == NULL) {
		mb_log_warnx("resources/list: %s", err.msg);
		*code_r = -32603;
		*message_r = "Internal error: the mail index is not available";
		return NULL;
	}
	db = mb_index_db(idx);
	if ((st = mcp_server_stmt(srv, resources_sql)) == NULL) {
		mb_log_error("resources/list: %s", sqlite3_errmsg(db));
		*code_r = -32603;
		*message_r = "Internal error";
		return NULL;
	}
	sqlite3_bind_int(st, 1, MCP_RESOURCE_PAGE + 1);
	sqlite3_bind_int64(st, 2, offset);
	list = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char uri[64];
		json_t *subj;

		if (n == MCP_RESOURCE_PAGE) {
			more = true;
			break;
		}
		snprintf(uri, sizeof(uri), "mail://message/%lld",
		    (long long)sqlite3_column_int64(st, 0));
		subj = col_text(st, 1);
		json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:s}", "uri", uri,
		    "name", uri, "title", json_is_string(subj) ? subj :
		    (json_decref(subj), json_string("(no subject)")), "mimeType", "text/plain"));
		n++;
	}
	mcp_server_stmt_done(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		json_decref(list);
		*code_r = -32603;
		*message_r = "Internal error";
		return NULL;
	}
	r = json_pack("{s:o}", "resources", list);
	if (more) {
		char *c = mcp_cursor_make(srv, 'r', offset + n, 0);

		json_object_set_new(r, "nextCursor", json_string(c));
		free(c);
	}
	return r;
}

json_t *
mcp_resources_read(struct mcp_server *srv, json_t *params, int *code_r, const char **message_r)
{
	static const char prefix[] = "mail://message/";
	const char *uri = json_string_value(json_object_get(params, "uri"));
	struct mb_err err = { 0 };
	struct mb_index *idx;
	struct mcp_answer a;
	const char *failed, *p;
	char *end;
	long long id;
	bool found;
	json_t *m, *r;

	if (uri == NULL) {
		*code_r = -32602;
		*message_r = "Invalid params: uri (a string) is required";
		return NULL;
	}
	p = uri + sizeof(prefix) - 1;
	if (strncmp(uri, prefix, sizeof(prefix) - 1) != 0 || *p < '1' || *p > '9') {
		*code_r = -32002;
		*message_r = "Resource not found";
		return NULL;
	}
	errno = 0;
	id = strtoll(p, &end, 10);
	if (*end != '\0' || errno != 0) {
		*code_r = -32002;
		*message_r = "Resource not found";
		return NULL;
	}
	idx = mcp_server_index(srv, &err);
	if (idx == NULL) {
		mb_log_warnx("resources/read: %s", err.msg);
		*code_r = -32603;
		*message_r = "Internal error: the mail index is not available";
		return NULL;
	}
	mcp_answer_init(&a);
	m = message_read(srv, id, 0, &found, &a, &failed);
	if (m == NULL) {
		mcp_answer_release(&a);
		if (failed)
			mb_log_error("%s: %s", failed, sqlite3_errmsg(mb_index_db(idx)));
		*code_r = failed ? -32603 : -32002;
		*message_r = failed ? "Internal error" : "Resource not found";
		return NULL;
	}
	json_decref(m);
	r = json_pack("{s:[{s:s, s:s, s:s%}]}", "contents", "uri", uri, "mimeType",
	    "text/plain", "text", a.text.data, a.text.len);
	mcp_answer_release(&a);
	return r;
}

/* ---- /healthz */

char *
mcp_healthz(struct mcp_server *srv, int *status_r)
{
	struct mb_err err = { 0 };
	struct mb_index *idx = mcp_server_index(srv, &err);
	json_t *j;
	char *s;
	int version = 0;

	if (idx == NULL || mb_index_schema_version(idx, &version, &err) == -1) {
		mb_log_warnx("healthz: %s", err.msg);
		*status_r = 503;
		j = json_pack("{s:s, s:b, s:i}", "status", "unavailable", "index_readable", 0,
		    "code_schema_version", mb_index_code_schema_version());
	} else {
		*status_r = 200;
		j = json_pack("{s:s, s:b, s:i, s:i}", "status", "ok", "index_readable", 1,
		    "schema_version", version, "code_schema_version",
		    mb_index_code_schema_version());
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}
