/*
 * The search engine's scope and count (libmailbox/core/search-private.h):
 * the bound values every search statement shares, the folder, role and own
 * addresses a query names, checked before it runs, and the bounded count
 * behind a page's total.  index_search.c runs the search itself.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/account.h"
#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/search.h"

#include "index-private.h"
#include "search-private.h"

/*
 * The total of a list that the page does not know (search_total() in
 * index_search.c; a ranked search counts as it ranks), and only up to ?19:
 * beyond it the answer is a lower bound.  With text only for from:me and
 * to:me alone, whose own addresses are phrases (idx_search_me_match).
 * Counted over current rows (IDX_CURRENT), like every count the index gives.
 */
static const char count_sql_match[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages_fts "
	"CROSS JOIN messages AS m ON m.id = messages_fts.rowid "
	"JOIN folders AS f ON f.id = m.folder_id "
	"WHERE messages_fts MATCH ?1 AND " IDX_CURRENT("m", "f")
	" AND " SEARCH_FILTERS "AND " SEARCH_DATES "LIMIT ?19)";
/*
 * The same through messages_search_filter (search_sql_rank_ix says why),
 * the date spelled over the index's columns: naming sort_date, a generated
 * column, would make SQLite read every row's table record after all.
 */
static const char count_sql_match_ix[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages_fts "
	"CROSS JOIN messages AS m INDEXED BY messages_search_filter ON m.id = messages_fts.rowid "
	"JOIN folders AS f ON f.id = m.folder_id "
	"WHERE messages_fts MATCH ?1 AND " IDX_CURRENT("m", "f")
	" AND " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED "LIMIT ?19)";
/* The same over a run of ids (?22 to ?23), which FTS5 seeks to in each doclist. */
static const char count_sql_match_ix_span[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages_fts "
	"CROSS JOIN messages AS m INDEXED BY messages_search_filter ON m.id = messages_fts.rowid "
	"JOIN folders AS f ON f.id = m.folder_id "
	"WHERE messages_fts MATCH ?1 AND messages_fts.rowid BETWEEN ?22 AND ?23 AND "
	IDX_CURRENT("m", "f") " AND " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
	"LIMIT ?19)";
static const char count_sql_filter_ix[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages AS m INDEXED BY messages_search_filter "
	"JOIN folders AS f ON f.id = m.folder_id "
	"WHERE " IDX_CURRENT("m", "f") " AND " SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED
	"LIMIT ?19)";
/*
 * The same through the flagged, the unread, the answered, the draft, the
 * labelled, the attached, the large or the listed ids (migrations 0019,
 * 0020, 0024, 0025, 0026 and 0027),
 * when few messages are in that index (idx_narrow_few): a seek into
 * messages_search_filter for each, where the scan above reads every entry
 * until the cap has passed (at 1,000,000 messages, 1% flagged:
 * 100,000).  Before those migrations they do not prepare, and the count is
 * read as above.
 */
#define COUNT_SQL_FEW(few, index, test) \
	[few] = "SELECT count(*) FROM (SELECT 1 FROM " SEARCH_FEW_FROM(index) \
	"JOIN folders AS f ON f.id = m.folder_id " \
	"WHERE " test " AND " IDX_CURRENT("m", "f") " AND " SEARCH_FILTERS_COVERED \
	"AND " SEARCH_DATES_COVERED "LIMIT ?19)",
static const char *const count_sql_few[] = { SEARCH_FEW_EACH(COUNT_SQL_FEW) };
/*
 * Filters alone in one folder (in: or a role): the folder's entries of
 * messages_folder_sort_date, each looked up in messages_search_filter for
 * the other filters, where the scan above reads every entry until the cap
 * has passed: `in:Notes`, 40 messages at 1,000,000, read all 1,000,000,
 * and a folder whose ids start at 400,001 that many first.
 */
#define COUNT_SQL_FOLDER(dates) \
	"SELECT count(*) FROM (SELECT 1 FROM messages AS g INDEXED BY messages_folder_sort_date " \
	"CROSS JOIN messages AS m INDEXED BY messages_search_filter ON m.id = g.id " \
	"JOIN folders AS f ON f.id = m.folder_id " \
	"WHERE g.folder_id = ?2 " dates "AND " IDX_CURRENT("m", "f") " AND " \
	SEARCH_FILTERS_COVERED "AND " SEARCH_DATES_COVERED "LIMIT ?19)"
static const char count_sql_folder_ix[] = COUNT_SQL_FOLDER("");
/*
 * With dates, the folder's entries in the range only (both ends bound, as
 * in folder_dates_sql of index_search_narrow.c): they are in date order,
 * and `in:Lists after:2002-09-01` stepped over the 200,000 entries dated
 * before it (99 ms).  Naming g's sort_date reads each entry's table row
 * (a generated column), about a page of rows for a page's count.
 */
static const char count_sql_folder_dated_ix[] =
	COUNT_SQL_FOLDER("AND g.sort_date >= ?3 AND g.sort_date < ?4 ");
static const char count_sql_filter[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages AS m "
	"JOIN folders AS f ON f.id = m.folder_id "
	"WHERE " IDX_CURRENT("m", "f") " AND " SEARCH_FILTERS "AND " SEARCH_DATES "LIMIT ?19)";
/*
 * thread:N without words: the thread's own entries of messages_thread, as
 * its page reads them (index_search_list.c).  The covered count read every
 * entry of messages_search_filter until the cap had passed (`thread:1`,
 * 4,302 messages of 1,000,000: 3.3 million steps, 30-51 ms of CPU).
 */
static const char count_sql_filter_thread[] =
	"SELECT count(*) FROM (SELECT 1 FROM messages AS m INDEXED BY messages_thread "
	"JOIN folders AS f ON f.id = m.folder_id WHERE m.thread_id = ?14 AND "
	IDX_CURRENT("m", "f") " AND " SEARCH_FILTERS "AND " SEARCH_DATES "LIMIT ?19)";

/* The one folder of a special-use role (in:sent): the first, should there be two. */
static const char role_sql[] =
	"SELECT id FROM folders AS f WHERE role = ?1 COLLATE NOCASE AND " IDX_LISTED("f") " "
	"ORDER BY id LIMIT 1";
static const char me_sql[] = "SELECT count(*) FROM account_addresses";

void
idx_search_bind(sqlite3_stmt *st, const struct mb_query *q, int64_t folder_id)
{
	if (q->match)
		sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
	if (q->folder || q->role)
		sqlite3_bind_int64(st, 2, folder_id);
	if (q->since != INT64_MIN)
		sqlite3_bind_int64(st, 3, q->since);
	if (q->until != INT64_MAX)
		sqlite3_bind_int64(st, 4, q->until);
	sqlite3_bind_int64(st, 5, q->flags_set);
	sqlite3_bind_int64(st, 6, q->flags_clear);
	if (q->has_attachment >= 0)
		sqlite3_bind_int(st, 7, q->has_attachment);
	if (q->size_min >= 0)
		sqlite3_bind_int64(st, 11, q->size_min);
	if (q->size_max >= 0)
		sqlite3_bind_int64(st, 12, q->size_max);
	idx_bind_text(st, 13, q->msgid);
	if (q->thread_id > 0)
		sqlite3_bind_int64(st, 14, q->thread_id);
	idx_bind_text(st, 15, q->list);
	idx_bind_text(st, 16, q->labels);
	if (q->from_me >= 0)
		sqlite3_bind_int(st, 17, q->from_me);
	if (q->to_me >= 0)
		sqlite3_bind_int(st, 18, q->to_me);
}

bool
idx_search_filtered(const struct mb_query *q)
{
	return q->folder || q->role || q->since != INT64_MIN || q->until != INT64_MAX ||
	    q->flags_set || q->flags_clear || q->has_attachment >= 0 || q->size_min >= 0 ||
	    q->size_max >= 0 || q->msgid || q->thread_id > 0 || q->list || q->labels ||
	    q->from_me >= 0 || q->to_me >= 0;
}

/*
 * The folder's id into *id_r; MB_E_NOTFOUND when there is none, or when the
 * server's LIST no longer shows it (its rows are kept a few ticks, unserved).
 */
static int
folder_id(struct mb_index *idx, const char *name, int64_t *id_r, struct mb_err *err)
{
	struct mb_folder_state fs;
	unsigned absent;

	if (mb_index_folder_get(idx, name, &fs, err) == -1)
		return -1;
	*id_r = fs.id;
	absent = fs.absent_ticks;
	mb_folder_state_release(&fs);
	if (absent > 0)
		return mb_err_set(err, MB_E_NOTFOUND, "index: folder '%s' is no longer listed",
		    name);
	return 0;
}

/* The folder of a special-use role into *id_r; MB_E_NOTFOUND when none has it. */
static int
role_folder(struct mb_index *idx, const char *role, int64_t *id_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, role_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	idx_bind_text(st, 1, role);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id_r = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		mb_err_set(err, MB_E_NOTFOUND, "no folder has the special-use role %s on this "
		    "server; list_folders names the folders, and folder:NAME searches one by name",
		    role);
	else
		idx_sqlerr(idx, rc, "search: role", err);
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/* from:me and to:me need the account's addresses: MB_E_NOTFOUND when none are recorded. */
static int
me_known(struct mb_index *idx, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, me_sql, err);
	int rc;
	int64_t n = 0;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	else
		idx_sqlerr(idx, rc, "search: account addresses", err);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return -1;
	if (n == 0)
		return mb_err_set(err, MB_E_NOTFOUND, "from:me and to:me need the account's own "
		    "addresses, and none are known: syncd records IMAP_USER (when it is an "
		    "address), DRAFT_FROM and MY_ADDRESSES; search from:ADDRESS meanwhile");
	return 0;
}

bool
idx_search_covered(const struct mb_query *q)
{
	return q->to_me < 0 && q->msgid == NULL;
}

bool
idx_search_labelled(const struct mb_query *q)
{
	return q->labels != NULL && strchr(q->labels, '+') != NULL;
}

int
idx_search_scope(struct mb_index *idx, const struct mb_query *q, int64_t *folder_id_r,
    struct mb_err *err)
{
	*folder_id_r = 0;
	if (q->folder && folder_id(idx, q->folder, folder_id_r, err) == -1)
		return -1;
	if (q->role && role_folder(idx, q->role, folder_id_r, err) == -1)
		return -1;
	if ((q->from_me >= 0 || q->to_me >= 0) && me_known(idx, err) == -1)
		return -1;
	return 0;
}

int
idx_search_count(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    int64_t cap, int64_t *n_r, bool *exact_r, struct mb_err *err)
{
	bool ix = idx_search_covered(q);
	bool dated = q->since != INT64_MIN || q->until != INT64_MAX;
	enum idx_few few = IDX_FEW_NONE;
	sqlite3_stmt *st = NULL;
	const char *sql;
	int rc;

	/* filters alone with a flag or label few messages have: through those ids */
	if (!q->match && ix && q->thread_id <= 0 && idx_narrow_few(idx, q, &few, NULL, NULL, err) == -1)
		return -1;
	if (few != IDX_FEW_NONE)
		st = idx_few_stmt(idx, count_sql_few[few]);

	sql = !q->match ? (q->thread_id > 0 ? count_sql_filter_thread : !ix ? count_sql_filter :
	    !q->folder && !q->role ? count_sql_filter_ix : dated ? count_sql_folder_dated_ix :
	    count_sql_folder_ix) : ix ? count_sql_match_ix : count_sql_match;
	if (st == NULL)	/* no index of few to read, or none before its migration */
		st = idx_stmt_sql(idx, sql, err);
	else
		sql = NULL;
	if (st == NULL)
		return -1;
	idx_search_bind(st, q, folder_id);
	if (sql == count_sql_folder_dated_ix) {	/* both ends bound */
		sqlite3_bind_int64(st, 3, q->since);
		sqlite3_bind_int64(st, 4, q->until);
	}
	sqlite3_bind_int64(st, 19, cap);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*n_r = sqlite3_column_int64(st, 0);
		*exact_r = *n_r < cap;
	} else
		idx_sqlerr(idx, rc, "search: total", err);
	idx_total_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	idx_stmt_done(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

_Thread_local uint64_t idx_total_steps;

int
idx_search_count_runs(struct mb_index *idx, const struct mb_query *q, int64_t folder_id,
    const struct idx_id_run *runs, size_t n_runs, int64_t cap, int64_t *n_r, bool *exact_r,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, count_sql_match_ix_span, err);
	int rc = SQLITE_ROW;

	*n_r = 0;
	if (st == NULL)
		return -1;
	idx_search_bind(st, q, folder_id);
	for (size_t i = 0; i < n_runs && *n_r < cap && rc == SQLITE_ROW; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 19, cap - *n_r);
		sqlite3_bind_int64(st, 22, runs[i].lo);
		sqlite3_bind_int64(st, 23, runs[i].hi);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			*n_r += sqlite3_column_int64(st, 0);
	}
	idx_total_steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
	idx_stmt_done(st);
	*exact_r = *n_r < cap;
	return rc == SQLITE_ROW ? 0 : idx_sqlerr(idx, rc, "search: total", err);
}

/* "[ AND ]({column} : "a@x" OR {column} : "b@y")": one phrase per own address. */
static int
me_phrases(struct mb_buf *b, const char *column, char **addrs)
{
	if (mb_buf_addf(b, "%s(", b->len > 0 ? " AND " : "") == -1)
		return -1;
	for (size_t i = 0; addrs[i] != NULL; i++)
		if (mb_buf_addf(b, "%s{%s} : ", i ? " OR " : "", column) == -1 ||
		    mb_query_quote(b, addrs[i], strlen(addrs[i])) == -1)
			return -1;
	return mb_buf_addc(b, ')');
}

int
idx_search_me_match(struct mb_index *idx, const struct mb_query *q, char **match_r,
    struct mb_err *err)
{
	struct mb_buf b = MB_BUF_INIT(64 * 1024);
	char **addrs = NULL;
	int rc = -1;

	*match_r = NULL;
	if (q->from_me != 1 && q->to_me != 1)
		return 0;
	if (mb_account_addresses(idx, &addrs, err) == -1)
		return -1;
	if (addrs[0] == NULL) {
		rc = 0;	/* idx_search_scope() has refused the query already */
		goto out;
	}
	if ((q->match != NULL && mb_buf_addf(&b, "(%s)", q->match) == -1) ||
	    (q->from_me == 1 && me_phrases(&b, "from_text", addrs) == -1) ||
	    (q->to_me == 1 && me_phrases(&b, "recipients", addrs) == -1)) {
		mb_err_set(err, MB_E_INTERNAL, "search: own addresses: out of buffer space");
		goto out;
	}
	*match_r = mb_buf_detach(&b, NULL);
	rc = 0;
out:
	mb_buf_release(&b);
	mb_account_addresses_free(&addrs);
	return rc;
}
