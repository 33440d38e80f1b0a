/*
 * The search query compiler: what each input compiles to, that no hostile
 * input can make FTS5 or SQLite fail, and that searches over a small real
 * index (mb_index_upsert on a file under mkdtemp) find what a user expects.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "support_index.h"

#include "../../libmailbox/core/rank-private.h"

/* ---- compiling */

static const struct {
	const char	*in;
	const char	*match;		/* NULL: no text terms */
} compile_cases[] = {
	{ "budget", "\"budget\"" },
	{ "budget review", "\"budget\" AND \"review\"" },
	{ "\"budget review\"", "\"budget review\"" },
	{ "meet*", "\"meet\"*" },
	{ "subject:invoice", "{subject} : \"invoice\"" },
	{ "FROM:alice", "{from_text} : \"alice\"" },
	{ "to:bob cc:carol", "{recipients} : \"bob\" AND {recipients} : \"carol\"" },
	{ "from:\"Alice Andersen\"", "{from_text} : \"Alice Andersen\"" },
	{ "budget -draft", "\"budget\" NOT (\"draft\")" },
	{ "a OR b c", "(\"a\" OR \"b\") AND \"c\"" },
	{ "OR budget", "\"budget\"" },
	{ "budget OR", "\"budget\"" },
	{ "say \"hi", "\"say\" AND \"hi\"" },
	{ "ab\"cd", "\"ab\"\"cd\"" },
	{ "NEAR(a b)", "\"NEAR(a\" AND \"b)\"" },
	{ "a AND b NOT c", "\"a\" AND \"AND\" AND \"b\" AND \"NOT\" AND \"c\"" },
	{ "^start \"col:x\"", "\"^start\" AND \"col:x\"" },
	{ "会", "\"会\"*" },
	{ "会議", "\"会議\"" },
	/* ・ is punctuation to the tokenizer, not a CJK character: no prefix */
	{ "\xe3\x83\xbb", "\"\xe3\x83\xbb\"" },
	{ "!!! ??? ---", NULL },
	{ "", NULL },
	{ "is:unread", NULL },
	{ "https://example.com/path", "\"https://example.com/path\"" },
	/* control characters are spaces: no phrase is taken for a raw index word (mb_cjk) */
	{ "\"\x01spambay\"", "\" spambay\"" },
};

static void
compiles_to_quoted_fts5(void **state)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(compile_cases); i++) {
		struct mb_query q;
		struct mb_err err = { 0 };

		mb_query_init(&q);
		if (mb_query_compile(compile_cases[i].in, strlen(compile_cases[i].in), &q, &err) == -1)
			fail_msg("'%s': %s", compile_cases[i].in, err.msg);
		if (compile_cases[i].match == NULL)
			assert_null(q.match);
		else if (q.match == NULL || strcmp(q.match, compile_cases[i].match) != 0)
			fail_msg("'%s' compiled to '%s', want '%s'", compile_cases[i].in,
			    q.match ? q.match : "(null)", compile_cases[i].match);
		mb_query_release(&q);
	}
}

/*
 * Nor does any other caller of mb_query_quote() (own addresses, the bounds'
 * words) make one: a control character first is spaced off.
 */
static void
quoting_never_makes_a_raw_word(void **state)
{
	struct mb_buf b;

	(void)state;
	mb_buf_init(&b, 64);
	assert_int_equal(mb_query_quote(&b, "\x01x\"y", 4), 0);
	assert_string_equal(b.data, "\" \x01x\"\"y\"");
	mb_buf_reset(&b);
	assert_int_equal(mb_query_quote(&b, "x\x01", 2), 0);
	assert_string_equal(b.data, "\"x\x01\"");
	mb_buf_release(&b);
}

/* The one column all positive terms are in (mcpd's snippet() looks there only). */
static void
column_only_queries_name_their_column(void **state)
{
	static const struct { const char *in, *column; } cases[] = {
		{ "subject:money", "subject" }, { "subject:a subject:b* -c", "subject" },
		{ "to:alice cc:bob", "recipients" }, { "from:x OR from:y", "from_text" },
		{ "body:\"a b\"", "body" }, { "money", NULL }, { "subject:a from:b", NULL },
		{ "subject:a b", NULL }, { "subject:a -from:b", "subject" }, { "is:unread", NULL },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		struct mb_query q;
		struct mb_err err = { 0 };

		mb_query_init(&q);
		assert_int_equal(mb_query_compile(cases[i].in, strlen(cases[i].in), &q, &err), 0);
		if (cases[i].column == NULL ? q.column != NULL :
		    q.column == NULL || strcmp(q.column, cases[i].column) != 0)
			fail_msg("'%s': column %s, want %s", cases[i].in,
			    q.column ? q.column : "(none)", cases[i].column ? cases[i].column : "(none)");
		mb_query_release(&q);
	}
}

static void
filters_become_sql_bounds(void **state)
{
	struct mb_query q;
	struct mb_err err = { 0 };
	const char *in = "report folder:\"Sent Items\" after:2024-01-31 before:2024-03-01 "
	    "has:attachment is:unread -is:flagged";

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(in, strlen(in), &q, &err), 0);
	assert_string_equal(q.match, "\"report\"");
	assert_string_equal(q.folder, "Sent Items");
	assert_int_equal(q.since, 1706659200);	/* 2024-01-31T00:00:00Z */
	assert_int_equal(q.until, 1709251200);	/* 2024-03-01T00:00:00Z */
	assert_int_equal(q.has_attachment, 1);
	assert_int_equal(q.flags_clear, MB_FLAG_SEEN | MB_FLAG_FLAGGED);
	assert_int_equal(q.flags_set, 0);
	assert_false(mb_query_empty(&q));
	mb_query_release(&q);
}

static const struct {
	const char	*in;
	const char	*says;	/* a substring of the error a model reads */
} error_cases[] = {
	{ "after:someday", "YYYY-MM-DD" },
	{ "^start col:x", "unknown prefix 'col:'" },
	{ "before:2024-02-30", "YYYY-MM-DD" },
	{ "after:", "needs a value" },
	{ "is:important", "is:unread" },
	{ "has:pdf", "has:attachment" },
	{ "-budget", "only of excluded" },
	{ "folder:A folder:B", "two different folders" },
	{ "is:read is:unread", "contradictory" },
	{ "-folder:INBOX x", "cannot be negated" },
};

static void
bad_filters_say_what_to_change(void **state)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(error_cases); i++) {
		struct mb_query q;
		struct mb_err err = { 0 };

		mb_query_init(&q);
		if (mb_query_compile(error_cases[i].in, strlen(error_cases[i].in), &q, &err) != -1)
			fail_msg("'%s' compiled", error_cases[i].in);
		assert_int_equal(err.code, MB_E_INVALID);
		if (strstr(err.msg, error_cases[i].says) == NULL)
			fail_msg("'%s': error '%s' lacks '%s'", error_cases[i].in, err.msg,
			    error_cases[i].says);
		assert_null(q.match);
		assert_true(mb_query_empty(&q));
	}
}

static void
too_long_and_too_many_terms_are_refused(void **state)
{
	char big[MB_QUERY_MAX_LEN + 2];
	struct mb_buf many = MB_BUF_INIT(4096);
	struct mb_query q;
	struct mb_err err = { 0 };

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mb_query_init(&q);
	assert_int_equal(mb_query_compile(big, strlen(big), &q, &err), -1);
	assert_non_null(strstr(err.msg, "too long"));
	for (int i = 0; i < MB_QUERY_MAX_TERMS + 1; i++)
		mb_buf_addf(&many, "w%d ", i);
	mb_err_clear(&err);
	mb_query_init(&q);
	assert_int_equal(mb_query_compile(many.data, many.len, &q, &err), -1);
	assert_non_null(strstr(err.msg, "too many"));
	mb_buf_release(&many);
}

static void
dates_are_real_calendar_days(void **state)
{
	int64_t t;

	assert_int_equal(mb_query_parse_date("2024-02-29", 10, &t), 0);
	assert_int_equal(t, 1709164800);
	assert_int_equal(mb_query_parse_date("2023-02-29", 10, &t), -1);
	assert_int_equal(mb_query_parse_date("2024-13-01", 10, &t), -1);
	assert_int_equal(mb_query_parse_date("2024-1-01", 9, &t), -1);
	assert_int_equal(mb_query_parse_date("1969-12-31", 10, &t), -1);
	assert_int_equal(mb_query_parse_date("2024-04-31", 10, &t), -1);
	assert_int_equal(mb_query_parse_date("2024-04-3x", 10, &t), -1);
}

/* ---- excerpts: the cheap snippet */

static char *
excerpt(const char *query, const char *text, size_t max_chars, int *rc_r)
{
	struct mb_query q;
	struct mb_err err = { 0 };
	struct mb_buf out = MB_BUF_INIT(1u << 16);

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(query, strlen(query), &q, &err), 0);
	*rc_r = mb_query_excerpt(&q, text, strlen(text), max_chars, &out);
	mb_query_release(&q);
	return mb_buf_detach(&out, NULL);
}

static void
excerpts_mark_query_words(void **state)
{
	static const struct {
		const char	*query, *text, *want;
		size_t		 max;
	} cases[] = {
		{ "budget", "The budget for lunch is small; meeting at noon.",
		    "The **budget** for lunch is small; meeting at noon.", 160 },
		{ "BUDGET lunch", "The budget for lunch.", "The **budget** for **lunch**.", 160 },
		{ "meet*", "Three meetings: Monday.", "Three **meetings**: Monday.", 160 },
		{ "meeting", "Our meetings run long.", "Our **meetings** run long.", 160 },
		{ "get", "The budget; get it.", "The budget; **get** it.", 160 },
		{ "\"tor lo\"", "ka tor lo mi", "ka **tor** **lo** mi", 160 },
		{ "会議", "会議は月曜日です", "**会議**は月曜日です", 160 },
		{ "月曜", "会議は月曜日です", "会議は**月曜**日です", 160 },
		{ "subject:zebra", "a zebra", "a **zebra**", 160 },
		{ "needle", "one two three four five six seven eight nine ten eleven twelve "
		    "thirteen needle fourteen fifteen sixteen seventeen eighteen",
		    "\xe2\x80\xa6" "thirteen **needle** fourteen fifteen sixteen\xe2\x80\xa6", 40 },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		int rc;
		char *got = excerpt(cases[i].query, cases[i].text, cases[i].max, &rc);

		if (rc != 0 || strcmp(got, cases[i].want) != 0)
			fail_msg("excerpt '%s' in '%s': rc %d '%s', want '%s'", cases[i].query,
			    cases[i].text, rc, got, cases[i].want);
		free(got);
	}
}

static void
excerpt_falls_back_when_no_word_is_literal(void **state)
{
	int rc;
	char *got;

	/* stemming (meetings -> meeting) and folding (cafe -> café) are FTS5's job */
	got = excerpt("meetings", "One meeting only.", 160, &rc);
	assert_int_equal(rc, -1);
	free(got);
	got = excerpt("cafe", "Au café.", 160, &rc);
	assert_int_equal(rc, -1);
	free(got);
	got = excerpt("-zebra budget", "A zebra here.", 160, &rc);
	assert_int_equal(rc, -1);	/* excluded words are never highlighted */
	free(got);
}

/* ---- a real index */

struct fx {
	char		 dir[64];
	char		 path[96];
	struct mb_index	*idx;
	int64_t		 inbox, sent;
};

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void
put(struct fx *f, int64_t folder, uint32_t uid, const char *subject, const char *from,
    const char *body, int64_t date, unsigned flags)
{
	struct mb_test_msg t = { .subject = subject, .from = from, .body = body, .date = date,
	    .internaldate = date, .flags = flags };

	mb_test_put(f->idx, folder, uid, &t);
}

static int
setup(void **state)
{
	struct fx *f = mb_xcalloc(1, sizeof(*f));
	struct mb_err err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_query.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/index.db", f->dir);
	if (mb_index_open(f->path, MB_INDEX_RW, &f->idx, &err) == -1 ||
	    mb_index_folder_ensure(f->idx, "INBOX", NULL, &f->inbox, &err) == -1 ||
	    mb_index_folder_ensure(f->idx, "Sent", "\\Sent", &f->sent, &err) == -1) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	put(f, f->inbox, 1, "Quarterly budget", "alice@example.com",
	    "Numbers for the next quarter are attached.", 1709280000, MB_FLAG_SEEN);
	put(f, f->inbox, 2, "Lunch", "bob@example.org",
	    "The budget for lunch is small; meeting at noon.", 1709366400, 0);
	put(f, f->inbox, 3, "Meetings this week", "carol@example.net",
	    "Three meetings: Monday, Tuesday, Friday.", 1709452800, MB_FLAG_FLAGGED);
	put(f, f->sent, 1, "会議の予定", "tanaka@example.jp", "会議は月曜日です", 1709539200,
	    MB_FLAG_SEEN);
	put(f, f->sent, 2, "Café crème", "francois@example.fr", "Rendez-vous au café.",
	    1709625600, MB_FLAG_SEEN);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	mb_index_close(&f->idx);
	nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/*
 * Run a compiled query the way mcpd does (ranked, subject weighted) and
 * return the subjects, comma separated, in rank order.  rc_r gets the
 * SQLite result, so hostile inputs can assert that nothing failed.
 */
static char *
search(struct fx *f, const char *text, int *rc_r)
{
	static const char sql[] =
	    "SELECT m.subject FROM messages_fts CROSS JOIN messages AS m "
	    "ON m.id = messages_fts.rowid WHERE messages_fts MATCH ?1 "
	    "AND messages_fts.rank MATCH 'bm25(10.0, 4.0, 2.0, 1.0)' "
	    "AND (?2 IS NULL OR m.date >= ?2) AND (m.flags & ?3) = ?3 AND (m.flags & ?4) = 0 "
	    "ORDER BY messages_fts.rank, m.date DESC LIMIT 20";
	struct mb_query q;
	struct mb_err err = { 0 };
	struct mb_buf out = MB_BUF_INIT(1u << 20);
	sqlite3_stmt *st;
	int rc;

	mb_query_init(&q);
	*rc_r = SQLITE_DONE;
	if (mb_query_compile(text, strlen(text), &q, &err) == -1 || q.match == NULL) {
		mb_query_release(&q);
		return mb_buf_detach(&out, NULL);
	}
	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx), sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, q.match, -1, SQLITE_STATIC);
	if (q.since != INT64_MIN)
		sqlite3_bind_int64(st, 2, q.since);
	sqlite3_bind_int64(st, 3, q.flags_set);
	sqlite3_bind_int64(st, 4, q.flags_clear);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		mb_buf_addf(&out, "%s%s", out.len ? "," : "", sqlite3_column_text(st, 0));
	*rc_r = rc;
	if (rc != SQLITE_DONE)
		fprintf(stderr, "'%s' -> '%s': %s\n", text, q.match,
		    sqlite3_errmsg(mb_index_db(f->idx)));
	sqlite3_finalize(st);
	mb_query_release(&q);
	return mb_buf_detach(&out, NULL);
}

static void
expect(struct fx *f, const char *text, const char *want)
{
	int rc;
	char *got = search(f, text, &rc);

	assert_int_equal(rc, SQLITE_DONE);
	if (strcmp(got, want) != 0)
		fail_msg("search '%s' found '%s', want '%s'", text, got, want);
	free(got);
}

static void
searches_find_what_a_user_expects(void **state)
{
	struct fx *f = *state;

	/* the subject hit ranks over the body hit */
	expect(f, "budget", "Quarterly budget,Lunch");
	expect(f, "\"budget for lunch\"", "Lunch");
	expect(f, "budget -lunch", "Quarterly budget");
	expect(f, "meet*", "Meetings this week,Lunch");
	expect(f, "meeting", "Meetings this week,Lunch");	/* porter stems */
	expect(f, "from:carol", "Meetings this week");
	expect(f, "subject:budget", "Quarterly budget");
	/* the rarer word weighs more (IDF); the subject hit still beats the body hit */
	expect(f, "budget OR friday", "Meetings this week,Quarterly budget,Lunch");
	expect(f, "meetings is:flagged", "Meetings this week");
	expect(f, "budget is:unread", "Lunch");
	expect(f, "budget after:2024-03-02", "Lunch");
	expect(f, "cafe", "Café crème");	/* diacritics folded */
	expect(f, "会", "会議の予定");		/* one CJK character: a prefix */
	expect(f, "会議", "会議の予定");
	expect(f, "月曜日", "会議の予定");
	expect(f, "zebrafish", "");
}

/*
 * One character of any script the tokenizer splits into bigrams finds the
 * text: the compiler and the tokenizer share one table of CJK ranges.
 */
static void
one_cjk_character_finds_every_cjk_script(void **state)
{
	struct fx *f = *state;

	put(f, f->inbox, 10, "halfwidth", "k@example.jp", "ｶﾀｶﾅ", 1709700000, 0);
	put(f, f->inbox, 11, "bopomofo", "z@example.tw", "ㄅㄆㄇ", 1709800000, 0);
	put(f, f->inbox, 12, "jamo", "h@example.kr", "ㄱㄴㄷ", 1709900000, 0);
	expect(f, "ｶ", "halfwidth");
	expect(f, "ﾀ", "halfwidth");
	expect(f, "ㄆ", "bopomofo");
	expect(f, "ㄴ", "jamo");
	expect(f, "ｶﾀ", "halfwidth");
}

/*
 * Every row's mb_bm25() and bm25() for text on conn, compared bit for bit;
 * returns how many rows matched.
 */
static int
same_scores(sqlite3 *conn, const char *text)
{
	static const char sql[] =
	    "SELECT rowid, bm25(messages_fts, 10.0, 4.0, 2.0, 1.0), "
	    "mb_bm25(messages_fts, ?1, 10.0, 4.0, 2.0, 1.0), "
	    "bm25(messages_fts, 3.0), mb_bm25(messages_fts, ?1, 3.0) "
	    "FROM messages_fts WHERE messages_fts MATCH ?1";
	struct mb_query q;
	struct mb_err err = { 0 };
	sqlite3_stmt *st;
	int n = 0, rc;

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	assert_int_equal(sqlite3_prepare_v2(conn, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, q.match, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		double a = sqlite3_column_double(st, 1), b = sqlite3_column_double(st, 2);
		double c = sqlite3_column_double(st, 3), d = sqlite3_column_double(st, 4);

		if (memcmp(&a, &b, sizeof(a)) != 0 || memcmp(&c, &d, sizeof(c)) != 0)
			fail_msg("'%s' row %lld: bm25 %.17g %.17g, mb_bm25 %.17g %.17g", text,
			    (long long)sqlite3_column_int64(st, 0), a, c, b, d);
		n++;
	}
	assert_int_equal(rc, SQLITE_DONE);
	sqlite3_finalize(st);
	mb_query_release(&q);
	return n;
}

/*
 * mcpd ranks with mb_bm25(), which keeps each query's IDFs on the connection:
 * it must score exactly as bm25() does, the first time and from its cache,
 * and a write by another connection must not leave it on stale statistics.
 */
static void
mb_bm25_scores_as_bm25(void **state)
{
	static const char *const queries[] = { "budget", "meet*", "\"budget for lunch\"",
	    "budget OR friday", "subject:budget", "from:carol", "会議", "budget -lunch" };
	struct fx *f = *state;
	struct mb_index *ro = NULL;
	struct mb_err err = { 0 };

	if (mb_index_open(f->path, MB_INDEX_RO, &ro, &err) == -1)
		fail_msg("open ro: %s", err.msg);
	for (int round = 0; round < 2; round++)	/* computed, then cached */
		for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
			assert_true(same_scores(mb_index_db(ro), queries[i]) > 0);
	/* the writer adds rows: the row count and the IDFs change */
	put(f, f->inbox, 10, "Budget review", "dave@example.com", "The budget, again.",
	    1709712000, 0);
	put(f, f->inbox, 11, "Friday", "erin@example.com", "See you friday at the meeting.",
	    1709798400, 0);
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
		assert_true(same_scores(mb_index_db(ro), queries[i]) > 0);
	assert_int_equal(same_scores(mb_index_db(ro), "budget"), 3);
	mb_index_close(&ro);
}

/*
 * The statistics mb_bm25() keeps outlive commits that leave the full-text
 * index as it was (a flag sync: mcpd's next searches rank without counting
 * again) and are dropped by every change to it: a new message, an
 * expunge, a changed text.  After each, mb_bm25() still scores as bm25().
 */
static void
kept_statistics_outlive_flag_syncs_only(void **state)
{
	static const char *const queries[] = { "budget", "meet*", "\"budget for lunch\"",
	    "budget OR friday", "from:carol" };
	struct fx *f = *state;
	struct mb_index *ro = NULL;
	struct mb_err err = { 0 };
	uint64_t before;

	if (mb_index_open(f->path, MB_INDEX_RO, &ro, &err) == -1)
		fail_msg("open ro: %s", err.msg);
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
		assert_true(same_scores(mb_index_db(ro), queries[i]) > 0);
	/* a flag sync commits, and the text is the same: nothing is counted again */
	if (mb_index_update_flags(f->idx, f->inbox, 1, 1, MB_FLAG_SEEN | MB_FLAG_FLAGGED, NULL,
	    7, &err) == -1)
		fail_msg("flags: %s", err.msg);
	before = idx_rank_computed;
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
		assert_true(same_scores(mb_index_db(ro), queries[i]) > 0);
	if (idx_rank_computed != before)
		fail_msg("a flag sync made %llu queries' statistics be counted again",
		    (unsigned long long)(idx_rank_computed - before));
	/* a new message: counted again, and right */
	assert_int_equal(same_scores(mb_index_db(ro), "budget"), 2);
	put(f, f->inbox, 20, "Budget again", "dave@example.com", "The budget.", 1709712000, 0);
	before = idx_rank_computed;
	assert_int_equal(same_scores(mb_index_db(ro), "budget"), 3);
	assert_true(idx_rank_computed > before);
	/* an expunge */
	if (mb_index_delete(f->idx, f->inbox, 1, 20, &err) == -1)
		fail_msg("delete: %s", err.msg);
	assert_int_equal(same_scores(mb_index_db(ro), "budget"), 2);
	/* a changed text (as when an attachment's text is extracted again) */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE messages SET subject = "
	    "'Budget meetings this week' WHERE subject = 'Meetings this week'", NULL,
	    NULL, NULL), SQLITE_OK);
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++)
		same_scores(mb_index_db(ro), queries[i]);
	assert_int_equal(same_scores(mb_index_db(ro), "budget"), 3);
	mb_index_close(&ro);
}

/*
 * The statistics are kept for the process (fts_rank_cache.c): a second
 * read-only connection to the file ranks with those the first counted, and
 * after new mail with those either counts first for the new index.  A copy
 * of the file (the same records, the same MATCH) and the writer's own
 * connection (which may see a transaction of its own) count their own.
 * Every score is bm25()'s.
 */
static void
kept_statistics_are_shared_by_file(void **state)
{
	struct fx *f = *state;
	struct mb_index *ro1 = NULL, *ro2 = NULL, *copy = NULL;
	struct mb_err err = { 0 };
	char copy_path[128], *sql;
	uint64_t before;

	if (mb_index_open(f->path, MB_INDEX_RO, &ro1, &err) == -1 ||
	    mb_index_open(f->path, MB_INDEX_RO, &ro2, &err) == -1)
		fail_msg("open ro: %s", err.msg);
	assert_int_equal(same_scores(mb_index_db(ro1), "budget"), 2);
	before = idx_rank_computed;
	assert_int_equal(same_scores(mb_index_db(ro2), "budget"), 2);
	assert_int_equal(idx_rank_computed, before);
	assert_int_equal(same_scores(mb_index_db(f->idx), "budget"), 2);
	assert_true(idx_rank_computed > before);
	/* new mail: counted again, once */
	put(f, f->inbox, 20, "Budget again", "dave@example.com", "The budget.", 1709712000, 0);
	before = idx_rank_computed;
	assert_int_equal(same_scores(mb_index_db(ro2), "budget"), 3);
	assert_true(idx_rank_computed > before);
	before = idx_rank_computed;
	assert_int_equal(same_scores(mb_index_db(ro1), "budget"), 3);
	assert_int_equal(idx_rank_computed, before);
	/* another file holding the same: its own counts */
	snprintf(copy_path, sizeof(copy_path), "%s/copy.db", f->dir);
	sql = sqlite3_mprintf("VACUUM INTO %Q", copy_path);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_free(sql);
	if (mb_index_open(copy_path, MB_INDEX_RO, &copy, &err) == -1)
		fail_msg("open copy: %s", err.msg);
	before = idx_rank_computed;
	assert_int_equal(same_scores(mb_index_db(copy), "budget"), 3);
	assert_true(idx_rank_computed > before);
	mb_index_close(&copy);
	mb_index_close(&ro2);
	mb_index_close(&ro1);
}

/* Inputs that would be FTS5 syntax errors (or worse) if passed through. */
static const char *const hostile[] = {
	"\"", "\"\"", "\"\"\"", "\"a", "a\"", "a\"b\"c\"", "NEAR", "NEAR(", "NEAR(a b, 3)",
	"AND", "OR", "NOT", "a AND", "NOT a", "a OR OR b", "(", ")", "(a", "a)", "((a) OR b",
	"^", "^a", "*", "**", "a**", "*a", ":", "a:", ":a", "subject:", "subject:\"",
	"{subject}: a", "{", "}", "col:a", "rowid:1", "-", "--", "- a", "-\"", "-(", "+a", "a+b",
	"'", "';DROP TABLE messages;--", "\\", "a\\\"b", "%", "_", "\x01\x02", "a\tb\nc\rd",
	"\xff\xfe", "\xc3", "\xe4\xbc", "caf\xe9", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	"\xef\xbb\xbf" "a", "a\xe2\x80\x8b" "b", "OR OR OR", "\"NEAR\"", "a NEAR b", "* OR *",
	"subject:* from:^", "folder:\"", "is:", "has:", "before:\"2024-01-01\"", "会*", "*会",
};

static void
hostile_inputs_never_break_fts5(void **state)
{
	struct fx *f = *state;
	char big[MB_QUERY_MAX_LEN];

	for (size_t i = 0; i < MB_ARRAY_LEN(hostile); i++) {
		int rc;
		char *got = search(f, hostile[i], &rc);

		if (rc != SQLITE_DONE)
			fail_msg("hostile input #%zu ('%s') failed in SQLite: %d", i, hostile[i], rc);
		free(got);
	}
	/* NUL in the middle (the length, not the NUL, ends the input) */
	{
		static const char nul[] = "bud\0get lunch";
		struct mb_query q;
		struct mb_err err = { 0 };

		mb_query_init(&q);
		assert_int_equal(mb_query_compile(nul, sizeof(nul) - 1, &q, &err), 0);
		assert_string_equal(q.match, "\"bud\" AND \"get\" AND \"lunch\"");
		mb_query_release(&q);
	}
	/* the longest allowed input of quote characters and stars */
	for (size_t i = 0; i < sizeof(big) - 1; i++)
		big[i] = "\"*:(^ab) "[i % 9];
	big[sizeof(big) - 1] = '\0';
	{
		int rc;
		char *got = search(f, big, &rc);

		assert_int_equal(rc, SQLITE_DONE);
		free(got);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(compiles_to_quoted_fts5),
		cmocka_unit_test(quoting_never_makes_a_raw_word),
		cmocka_unit_test(column_only_queries_name_their_column),
		cmocka_unit_test(filters_become_sql_bounds),
		cmocka_unit_test(bad_filters_say_what_to_change),
		cmocka_unit_test(too_long_and_too_many_terms_are_refused),
		cmocka_unit_test(dates_are_real_calendar_days),
		cmocka_unit_test(excerpts_mark_query_words),
		cmocka_unit_test(excerpt_falls_back_when_no_word_is_literal),
		cmocka_unit_test_setup_teardown(searches_find_what_a_user_expects, setup, teardown),
		cmocka_unit_test_setup_teardown(hostile_inputs_never_break_fts5, setup, teardown),
		cmocka_unit_test_setup_teardown(one_cjk_character_finds_every_cjk_script, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(mb_bm25_scores_as_bm25, setup, teardown),
		cmocka_unit_test_setup_teardown(kept_statistics_outlive_flag_syncs_only, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(kept_statistics_are_shared_by_file, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
