/*
 * The ranking's block bounds (migrations/0014, index_rank_build.c,
 * index_search_blocks.c): with bounds built, a search reads only some
 * blocks of ids, and its pages must still be exactly FTS5's own bm25()
 * order over every match (ties newest first, then by id), with exact
 * totals: for words, ANDs, ORs, NOT, phrases and columns, at several page
 * sizes and offsets, with filters too (dates, flags, a folder: the
 * oracle tests them in SQL of its own, and a total past the count's cap
 * may be a lower bound); after deletions, after a row's text changed in a
 * bounded block, after an id was reused there, and on an index never
 * bounded, and after the full-text index was merged into one segment
 * (index_fts_merge.c).  The fixture is 5,000 messages (two chunks bounded, a tail
 * that is not) of words of every frequency, the best match of each word
 * among the oldest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/msg.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/rank-private.h"
#include "../../libmailbox/core/search-private.h"

#define T0	1700000000
#define N_MSG	5000

/* Words by frequency: about 90%, 40%, 15%, 5% and 1% of messages. */
static const char *const words[] = { "alpha", "beta", "gamma", "delta", "epsilon" };
static const unsigned per_mille[] = { 900, 400, 150, 50, 10 };

static uint32_t
next_rand(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/*
 * Message uid i: each word by its frequency, 1-4 times, in the body or
 * the subject; filler words of varied length; every tenth a "mailing list"
 * footer; every 97th a copy of the one before (the same score: a tie,
 * broken by the date, or by the id when the dates are equal too).  Every
 * fifth is read, every 41st flagged: filters most and few messages pass.
 */
static void
put_msg(struct mb_test_index *f, uint32_t uid, uint32_t *seed, char *body, char *subject)
{
	size_t blen = 0, slen = 0;

	if (uid % 97 != 0) {
		body[0] = subject[0] = '\0';
		for (size_t w = 0; w < MB_ARRAY_LEN(words); w++) {
			unsigned reps = 1 + next_rand(seed) % 4;

			if (next_rand(seed) % 1000 >= per_mille[w])
				continue;
			for (unsigned r = 0; r < reps; r++) {
				if (next_rand(seed) % 8 == 0)
					slen += (size_t)snprintf(subject + slen, 200 - slen, "%s ",
					    slen < 150 ? words[w] : "");
				else
					blen += (size_t)snprintf(body + blen, 4000 - blen, "%s ",
					    words[w]);
			}
		}
		for (unsigned k = next_rand(seed) % 60; k > 0 && blen < 3500; k--)
			blen += (size_t)snprintf(body + blen, 4000 - blen, "filler%u ",
			    next_rand(seed) % 500);
		/* rarer words that share gamma's prefix (not bounded: below 256 rows) */
		if (uid % 53 == 0)
			blen += (size_t)snprintf(body + blen, 4000 - blen, "gammaburst %s",
			    uid % 3 == 0 ? "gammaburst gammaburst " : "");
		if (uid % 211 == 0)
			slen += (size_t)snprintf(subject + slen, 200 - slen, "gammaflare ");
		/* zeta bounded (a third of the rows), 150 rarer words after it */
		blen += (size_t)snprintf(body + blen, 4000 - blen, "%szeta%u ",
		    uid % 3 == 0 ? "zeta " : "", uid % 150);
		/* CJK bigrams sharing a character: 会議 bounded (500 rows), 会社 not */
		if (uid % 10 == 3)
			blen += (size_t)snprintf(body + blen, 4000 - blen, "会議 ");
		if (uid % 89 == 0)
			blen += (size_t)snprintf(body + blen, 4000 - blen, "会社 会社 ");
		if (uid % 10 == 0)
			snprintf(body + blen, 4000 - blen, "sent to the mailing list");
	}
	mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = subject,
	    .body = body, .date = uid % 13 == 0 ? 0 : T0 + (int64_t)(uid / 3) * 60,
	    .flags = (uid % 5 == 0 ? MB_FLAG_SEEN : 0u) | (uid % 41 == 0 ? MB_FLAG_FLAGGED : 0u) });
}

static void
put_all(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char *body = mb_xcalloc(1, 4000), *subject = mb_xcalloc(1, 200);
	uint32_t seed = 19;

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	/* the best matches are the oldest: short, the word in the subject */
	mb_test_put(f->idx, f->inbox, 1, &(struct mb_test_msg){
	    .subject = "gamma gamma gamma", .body = "gamma", .date = T0 });
	mb_test_put(f->idx, f->inbox, 2, &(struct mb_test_msg){
	    .subject = "delta delta beta", .body = "alpha delta", .date = T0 });
	/* gamm*'s best rows hold its rarer words: one with no gamma, one with it too */
	mb_test_put(f->idx, f->inbox, 3, &(struct mb_test_msg){
	    .subject = "gammaflare gammaflare gammaburst", .body = "gammaburst", .date = T0 });
	mb_test_put(f->idx, f->inbox, 4, &(struct mb_test_msg){
	    .subject = "gamma gammaburst", .body = "gamma gammaflare", .date = T0 });
	for (uint32_t uid = 5; uid <= N_MSG; uid++)
		put_msg(f, uid, &seed, body, subject);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	free(body);
	free(subject);
}

/* Pages of text from offset 0 to below upto: exactly want's (n_want), totals too. */
static void
expect_exact(struct mb_test_index *f, const char *text, const int64_t *want, size_t n_want, size_t limit,
    int64_t upto)
{
	for (int64_t offset = 0; offset < upto; offset += (int64_t)limit) {
		struct mb_search_page pg;
		struct mb_query q;
		struct mb_err err = { 0 };

		mb_query_init(&q);
		assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
		if (mb_search_run(mb_test_index_reader(f), &q, offset, limit, &pg, &err) == -1)
			fail_msg("search \"%s\": %s", text, err.msg);
		mb_query_release(&q);
		/* with filters, counted up to the cap (or one past the page): a lower bound */
		if (pg.total_exact ? pg.total != (int64_t)n_want :
		    pg.total > (int64_t)n_want || pg.total < MB_SEARCH_COUNT_CAP ||
		    pg.total < offset + (int64_t)limit + 1)
			fail_msg("\"%s\": total %lld (%s), want %zu", text, (long long)pg.total,
			    pg.total_exact ? "exact" : "at least", n_want);
		if (pg.more != (n_want > (size_t)offset + pg.n))
			fail_msg("\"%s\": more is %d at offset %lld", text, pg.more,
			    (long long)offset);
		for (size_t i = 0; i < pg.n; i++)
			if ((size_t)offset + i >= n_want || pg.hits[i].id != want[offset + i])
				fail_msg("\"%s\" (%zu a page): position %lld is id %lld, want %lld",
				    text, limit, (long long)offset + (long long)i,
				    (long long)pg.hits[i].id, (size_t)offset + i < n_want ?
				    (long long)want[offset + i] : -1LL);
		assert_int_equal(pg.n, n_want > (size_t)offset ?
		    (n_want - (size_t)offset < limit ? n_want - (size_t)offset : limit) : 0);
		mb_search_page_release(&pg);
	}
}

static const char *const queries[] = {
	"alpha", "beta", "gamma", "delta", "epsilon", "alpha beta", "gamma delta",
	"beta -gamma", "delta OR epsilon", "\"mailing list\"", "\"list mailing\"",
	"subject:gamma", "alpha mailing list", "nosuchword", "alpha nosuchword",
	/*
	 * prefixes: bounded and rarer words, one bounded word, several, CJK,
	 * many rarer words, rarer words only, too many bounded words, none
	 */
	"gamm*", "gam*", "alph*", "filler49*", "会", "zeta*", "gammab*", "filler1*", "fill*",
	"nosuch*",
	/*
	 * ORs: of bounded words, with rarer words (ranked first), of rarer
	 * words only, a word twice, with an AND, with a NOT
	 */
	"alpha OR gamma", "gamma OR gammaburst", "gammaburst OR beta OR epsilon",
	"epsilon OR gammaburst", "gamma OR gamma OR epsilon", "alpha OR beta gamma",
	"alpha OR gammaburst -beta", "\"mailing list\" OR gamma",
	/* NOTs: of a rarer word, beside an OR with rarer words, of much, of a phrase */
	"alpha -epsilon", "alpha beta -epsilon", "gamma OR gammaburst -epsilon",
	"beta -alpha", "alpha -\"mailing list\"", "alpha -epsilon -zeta7",
	/* ORs beside ANDs */
	"gamma alpha OR delta", "alpha OR beta gamma OR delta", "alpha OR beta gamma -epsilon",
	"beta zeta OR gamma alpha",
	"\"gamma delta\" OR epsilon OR \"sent to\"",
};

/*
 * With filters: most pass (the walk stops at the floor, the total is
 * counted to the cap), few pass (the page does not fill in the first
 * ranges: the walk gives up and every match is read whole), and shapes the
 * walk leaves to the full read.
 */
static const char *const filtered_queries[] = {
	"alpha after:2023-11-15", "alpha before:2023-11-15", "beta is:unread",
	"gamma is:flagged", "alpha is:flagged", "delta is:read", "epsilon is:unread",
	"\"mailing list\" after:2023-11-15", "alpha beta in:INBOX", "beta in:INBOX",
	"gamma -is:flagged before:2023-11-16",
	/*
	 * prefixes with filters: walked through their words when most messages
	 * pass (a_prefix_beside_filters_is_walked), else read whole, scored
	 * before the join past the count's cap
	 */
	"gamm* after:2023-11-15", "alph* after:2023-11-15", "alph* before:2023-11-15",
	"fill* is:unread", "alph* is:flagged",
	/* ORs with rarer words beside filters most and few messages pass */
	"gamma OR gammaburst after:2023-11-15", "gamma OR gammaburst is:flagged",
	"alpha OR epsilon before:2023-11-15",
	"alpha -epsilon after:2023-11-15", "gamma OR gammaburst -epsilon is:unread",
};

/*
 * The filters of text in SQL of the test's own, from what the query
 * language made of them (the dates, flags, folder and labels); owned by the caller
 * (sqlite3_free).
 */
static char *
where_of(const char *text)
{
	struct mb_query q;
	struct mb_err err = { 0 };
	char *w;

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	w = sqlite3_mprintf("(m.flags & %u) = %u AND (m.flags & %u) = 0", q.flags_set,
	    q.flags_set, q.flags_clear);
	if (q.since != INT64_MIN)
		w = sqlite3_mprintf("%z AND m.sort_date >= %lld", w, (long long)q.since);
	if (q.until != INT64_MAX)
		w = sqlite3_mprintf("%z AND m.sort_date < %lld", w, (long long)q.until);
	if (q.folder != NULL)
		w = sqlite3_mprintf("%z AND m.folder_id = (SELECT id FROM folders WHERE name = %Q)",
		    w, q.folder);
	if (q.labels != NULL)
		w = sqlite3_mprintf("%z AND mb_labels_test(m.keywords, %Q)", w, q.labels);
	if (q.thread_id > 0)
		w = sqlite3_mprintf("%z AND m.thread_id = %lld", w, (long long)q.thread_id);
	if (q.has_attachment >= 0)
		w = sqlite3_mprintf("%z AND (m.attachment_count > 0) = %d", w, q.has_attachment);
	if (q.size_min >= 0)
		w = sqlite3_mprintf("%z AND m.size >= %lld", w, (long long)q.size_min);
	if (q.size_max >= 0)
		w = sqlite3_mprintf("%z AND m.size < %lld", w, (long long)q.size_max);
	if (q.list != NULL)
		w = sqlite3_mprintf("%z AND instr(lower(m.list_id), %Q) > 0", w, q.list);
	mb_query_release(&q);
	return w;
}

/* Every query, at 1, 7 and 50 a page, the first pages: as the oracle says. */
static void
expect_all_exact(struct mb_test_index *f)
{
	static int64_t want[N_MSG + 100];

	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++) {
		size_t n = mb_test_bm25_order(f->idx, queries[i], want, MB_ARRAY_LEN(want));

		expect_exact(f, queries[i], want, n, 1, 5);
		expect_exact(f, queries[i], want, n, 7, 28);
		expect_exact(f, queries[i], want, n, 50, 150);
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(filtered_queries); i++) {
		char *where = where_of(filtered_queries[i]);
		size_t n = mb_test_bm25_order_where(f->idx, filtered_queries[i], where, want,
		    MB_ARRAY_LEN(want));

		sqlite3_free(where);
		expect_exact(f, filtered_queries[i], want, n, 1, 5);
		expect_exact(f, filtered_queries[i], want, n, 7, 28);
		expect_exact(f, filtered_queries[i], want, n, 50, 150);
	}
}

/*
 * A filter most matches pass is ranked through the bounds: the total is
 * then counted to the cap only (a full read would count them all).
 */
static void
expect_filtered_walk(struct mb_test_index *f)
{
	struct mb_search_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };
	const char *text = "alpha after:2023-11-15";
	uint64_t walks = idx_rank_walks;

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	assert_int_equal(mb_search_run(mb_test_index_reader(f), &q, 0, 20, &pg, &err), 0);
	assert_false(pg.total_exact);
	assert_int_equal(pg.total, MB_SEARCH_COUNT_CAP);
	assert_true(idx_rank_walks > walks);
	mb_search_page_release(&pg);
	mb_query_release(&q);
	/*
	 * Few pass: the page does not fill in the first ranges, the walk gives
	 * up, and every match is read whole (its total exact below the cap).
	 */
	text = "alpha before:2023-11-15";	/* the oldest rows only: 264 pass */
	walks = idx_rank_walks;
	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	assert_int_equal(mb_search_run(mb_test_index_reader(f), &q, 0, 20, &pg, &err), 0);
	assert_int_equal(idx_rank_walks, walks);
	assert_int_equal(pg.n, 20);
	assert_true(pg.total_exact);
	assert_int_equal(pg.total, 264);
	mb_search_page_release(&pg);
	mb_query_release(&q);
}

/*
 * A filtered search read whole joins and counts every match that passes up
 * to the count's cap, and past it only the rows that can reach the page:
 * its total is then the cap, a lower bound; below it, exact.
 */
static void
expect_filtered_read_whole(struct mb_test_index *f)
{
	static const struct {
		const char	*text;
		bool		 exact;
	} cases[] = {
		{ "alpha after:2023-11-15", false }, { "alph* after:2023-11-15", false },
		{ "alpha is:flagged", true }, { "alph* is:flagged", true },
		{ "alph* before:2023-11-15", true },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		struct mb_search_page pg;
		struct mb_query q;
		struct mb_err err = { 0 };
		char *where = where_of(cases[i].text);
		char *sql = sqlite3_mprintf("SELECT count(*) FROM messages_fts JOIN messages AS m "
		    "ON m.id = messages_fts.rowid WHERE messages_fts MATCH %Q AND %s",
		    cases[i].text[4] == '*' ? "alph*" : "alpha", where);
		int64_t passing = mb_test_index_int(f, sql);

		sqlite3_free(sql);
		sqlite3_free(where);
		mb_query_init(&q);
		assert_int_equal(mb_query_compile(cases[i].text, strlen(cases[i].text), &q, &err), 0);
		assert_int_equal(mb_search_run(mb_test_index_reader(f), &q, 0, 20, &pg, &err), 0);
		if (cases[i].exact) {
			assert_true(passing < MB_SEARCH_COUNT_CAP);
			assert_true(pg.total_exact);
			assert_int_equal(pg.total, passing);
		} else {
			assert_true(passing > MB_SEARCH_COUNT_CAP);
			assert_false(pg.total_exact);
			assert_int_equal(pg.total, MB_SEARCH_COUNT_CAP);
		}
		mb_search_page_release(&pg);
		mb_query_release(&q);
	}
}

/* Bounds built: two chunks (ids up to 4,095); the pages are exact. */
static void
pages_with_bounds_are_bm25s(void **state)
{
	struct mb_test_index *f = *state;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_test_rank_build(f), 0);	/* nothing left to bound */
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_chunks"), 2);
	/* alpha, beta, gamma, filler words: frequent; epsilon (1%) is not */
	assert_int_equal(mb_test_index_int(f,
	    "SELECT count(*) FROM rank_terms WHERE term IN ('alpha', 'beta', 'gamma')"), 3);
	assert_int_equal(mb_test_index_int(f,
	    "SELECT count(*) FROM rank_terms WHERE term = 'epsilon'"), 0);
	expect_all_exact(f);
	expect_filtered_walk(f);
	expect_filtered_read_whole(f);
}

/*
 * What the builder wrote, generations aside: every term's fronts and rows
 * by chunk, and every block's lengths, as text (owned by the caller).
 */
static char *
bounds_dump(struct mb_test_index *f)
{
	static const char sql[] =
	    "SELECT (SELECT group_concat(t, ',') FROM (SELECT b.term || ':' || b.chunk || ':' || "
	    "hex(b.bounds) || ':' || b.docs AS t FROM rank_bounds AS b ORDER BY b.term, b.chunk)) "
	    "|| ';' || (SELECT group_concat(l, ',') FROM (SELECT block || ':' || hex(lengths) "
	    "AS l FROM rank_lengths ORDER BY block)) || ';' || (SELECT group_concat(c, ',') FROM "
	    "(SELECT chunk || ':' || blocks AS c FROM rank_chunks ORDER BY chunk))";
	sqlite3_stmt *st = NULL;
	char *text;

	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx), sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_non_null(sqlite3_column_text(st, 0));
	text = mb_xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return text;
}

/* Every complete chunk made to wait for its bounds again. */
static void
bounds_unbuilt(struct mb_test_index *f)
{
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE rank_chunks SET blocks = 0",
	    NULL, NULL, NULL), SQLITE_OK);
}

/*
 * Neighbouring chunks bounded together (one statement a term for all of
 * them) get the very fronts, counts and lengths each gets bounded alone,
 * and none is bounded while fewer chunks wait than the caller asks.
 */
static void
neighbouring_chunks_are_bounded_as_each_alone(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	size_t built = 0;
	char *alone, *together;

	put_all(f);
	for (int c = 0; c < 2; c++) {	/* one chunk a call: each read alone */
		assert_int_equal(mb_index_rank_build(f->idx, 1, 1, &built, &err), 0);
		assert_int_equal(built, 1);
	}
	alone = bounds_dump(f);
	assert_non_null(strstr(alone, "alpha:1:"));
	bounds_unbuilt(f);
	assert_int_equal(mb_index_rank_build(f->idx, 3, 8, &built, &err), 0);
	assert_int_equal(built, 0);	/* two wait, three asked for */
	assert_int_equal(mb_test_index_int(f,
	    "SELECT count(*) FROM rank_chunks WHERE blocks = 0"), 2);
	assert_int_equal(mb_index_rank_build(f->idx, 2, 8, &built, &err), 0);
	assert_int_equal(built, 2);
	together = bounds_dump(f);
	assert_string_equal(together, alone);
	free(alone);
	free(together);
	expect_all_exact(f);
}

/* An index syncd never bounded (or of an older build) is ranked by reading every match. */
static void
pages_without_bounds_are_bm25s(void **state)
{
	struct mb_test_index *f = *state;

	put_all(f);
	expect_all_exact(f);
	expect_filtered_read_whole(f);
}

/*
 * Deleting rows after the bounds were built (the best matches among them)
 * leaves bounds that are too high, never too low: still exact.
 */
static void
deletions_after_bounds_keep_pages_exact(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid += uid < 100 ? 1 : 7)
		assert_int_equal(mb_index_delete(f->idx, f->inbox, 1, uid, &err), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	expect_all_exact(f);
}

/*
 * A row whose text changes in a bounded block (a re-extracted attachment,
 * a re-fetched message) can outscore its block's bound: its block is no
 * longer bounded (the trigger), and it is found first.  Rebuilt, the
 * chunk is bounded again, with the new text.
 */
static void
a_changed_row_is_found_in_a_bounded_block(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_search_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	mb_test_put(f->idx, f->inbox, 3000, &(struct mb_test_msg){
	    .subject = "beta beta beta beta", .body = "beta beta", .date = T0 });
	assert_int_not_equal(mb_test_index_int(f,
	    "SELECT blocks FROM rank_chunks WHERE chunk = 1") & RANK_CHUNK_FULL, RANK_CHUNK_FULL);
	expect_all_exact(f);
	mb_query_init(&q);
	assert_int_equal(mb_query_compile("beta", 4, &q, &err), 0);
	assert_int_equal(mb_search_run(mb_test_index_reader(f), &q, 0, 1, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.hits[0].id, mb_test_index_int(f,
	    "SELECT id FROM messages WHERE uid = 3000"));
	mb_search_page_release(&pg);
	mb_query_release(&q);
	assert_int_equal(mb_test_rank_build(f), 1);	/* chunk 1 again */
	expect_all_exact(f);
}

/*
 * Without AUTOINCREMENT an id is reused once the newest rows are gone: a
 * new message then lands in a bounded block, which stops being bounded.
 */
static void
a_reused_id_in_a_bounded_block_is_found(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	int64_t id;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 3901; uid <= N_MSG; uid++)
		assert_int_equal(mb_index_delete(f->idx, f->inbox, 1, uid, &err), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	mb_test_put(f->idx, f->inbox, 9000, &(struct mb_test_msg){
	    .subject = "alpha alpha gamma gamma gamma gamma", .body = "gamma alpha",
	    .date = T0 });
	id = mb_test_index_int(f, "SELECT id FROM messages WHERE uid = 9000");
	assert_true(id < 4096);	/* inside chunk 1, which was bounded */
	expect_all_exact(f);
}

/* The rows of word in ids [lo, hi], as FTS5 counts them. */
static int64_t
fts_rows(struct mb_test_index *f, const char *word, int64_t lo, int64_t hi)
{
	char *sql = sqlite3_mprintf("SELECT count(*) FROM messages_fts WHERE messages_fts "
	    "MATCH '\"%w\"' AND rowid BETWEEN %lld AND %lld", word, (long long)lo, (long long)hi);
	int64_t n = mb_test_index_int(f, sql);

	sqlite3_free(sql);
	return n;
}

/* One search of text, a page of limit: the first hit's id, -1 for none. */
static int64_t
first_of(struct mb_test_index *f, const char *text, size_t limit)
{
	struct mb_search_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };
	int64_t first;

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	if (mb_search_run(mb_test_index_reader(f), &q, 0, limit, &pg, &err) == -1)
		fail_msg("search \"%s\": %s", text, err.msg);
	first = pg.n > 0 ? pg.hits[0].id : -1;
	mb_search_page_release(&pg);
	mb_query_release(&q);
	return first;
}

/* The phrases whose row counts one search of text took from the builder's counts. */
static uint64_t
counts_used_by(struct mb_test_index *f, const char *text)
{
	uint64_t before = idx_rank_known_used;

	(void)first_of(f, text, 20);
	return idx_rank_known_used - before;
}

/*
 * The builder keeps each bounded word's rows per chunk (migrations/0018),
 * and a query's first ranking adds them up instead of FTS5 walking the
 * word's doclist (index_rank_counts.c): FTS5's own counts, the newest ids
 * (the tail no chunk holds) counted by FTS5.  A deletion leaves the
 * chunk's bounds but not its counts (the trigger clears RANK_CHUNK_COUNTED):
 * FTS5 counts that chunk until the builder builds it again.  Pages are
 * bm25()'s throughout.  A column's phrase, a phrase of two words, a word
 * not bounded and a prefix with no bounded word are counted by FTS5 (a
 * prefix with one: a_prefix_is_counted_through_its_words), and a query
 * whose statistics the connection keeps counts nothing.
 */
static void
bounded_words_are_counted_by_chunk(void **state)
{
	static const char *const fts_counted[] = { "subject:beta", "\"mailing list\"",
	    "epsilon", "gammab*" };
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	for (int64_t c = 0; c < 2; c++)
		for (size_t i = 0; i < 3; i++) {
			char *sql = sqlite3_mprintf("SELECT docs FROM rank_bounds WHERE term = %Q "
			    "AND chunk = %lld", words[i], (long long)c);

			assert_int_equal(mb_test_index_int(f, sql),
			    fts_rows(f, words[i], c * RANK_CHUNK_IDS, c * RANK_CHUNK_IDS + 2047));
			sqlite3_free(sql);
		}
	assert_true(fts_rows(f, "beta", 4096, INT64_MAX) > 0);	/* a tail to count */
	assert_int_equal(counts_used_by(f, "beta"), 1);
	assert_int_equal(counts_used_by(f, "beta"), 0);	/* kept: nothing counted */
	assert_int_equal(counts_used_by(f, "alpha gamma"), 2);
	assert_int_equal(counts_used_by(f, "alpha epsilon"), 1);
	for (size_t i = 0; i < MB_ARRAY_LEN(fts_counted); i++)
		if (counts_used_by(f, fts_counted[i]) != 0)
			fail_msg("\"%s\" took counts it has none of", fts_counted[i]);
	expect_all_exact(f);

	/* a deletion in chunk 0: its bounds stand, its counts do not */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= 40; uid++)
		assert_int_equal(mb_index_delete(f->idx, f->inbox, 1, uid, &err), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	assert_int_equal(mb_test_index_int(f, "SELECT blocks FROM rank_chunks WHERE chunk = 0"),
	    RANK_CHUNK_FULL);
	assert_int_equal(mb_test_index_int(f, "SELECT blocks FROM rank_chunks WHERE chunk = 1"),
	    RANK_CHUNK_BUILT);
	assert_int_equal(counts_used_by(f, "alpha"), 1);
	expect_all_exact(f);
	assert_int_equal(mb_test_rank_build(f), 1);	/* chunk 0 again, counted */
	assert_int_equal(mb_test_index_int(f, "SELECT blocks FROM rank_chunks WHERE chunk = 0"),
	    RANK_CHUNK_BUILT);
	assert_int_equal(mb_test_index_int(f,
	    "SELECT docs FROM rank_bounds WHERE term = 'alpha' AND chunk = 0"),
	    fts_rows(f, "alpha", 0, 2047));
	expect_all_exact(f);
}

/*
 * A search of text's first page: its counts taken (counts_used_by()) and
 * each hit's score bm25()'s, bit for bit: a prefix's IDF is its row count's.
 */
static uint64_t
counted_scores_exact(struct mb_test_index *f, const char *text)
{
	uint64_t before = idx_rank_known_used;
	struct mb_search_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	if (mb_search_run(mb_test_index_reader(f), &q, 0, 20, &pg, &err) == -1)
		fail_msg("search \"%s\": %s", text, err.msg);
	mb_query_release(&q);
	assert_true(pg.n > 0);
	for (size_t i = 0; i < pg.n; i++)
		if (pg.hits[i].score != mb_test_bm25_of(f->idx, text, pg.hits[i].id))
			fail_msg("\"%s\": id %lld scored %.17g, bm25() %.17g", text,
			    (long long)pg.hits[i].id, pg.hits[i].score,
			    mb_test_bm25_of(f->idx, text, pg.hits[i].id));
	mb_search_page_release(&pg);
	return idx_rank_known_used - before;
}

/*
 * A prefix's first search counts its rows through its words
 * (idx_prefix_rows()): its bounded words' rows (the builder's counts for
 * one word, FTS5's count of their OR for several) and the other words'
 * rows that hold no bounded one, instead of FTS5 merging every doclist of
 * the prefix, twice, to count it; a walk then starts its statistics on one
 * word's MATCH.  The same count: every score is bm25()'s, bit for bit, and
 * the pages and totals are bm25()'s.  Walked (gamm*: one bounded word and
 * rarer ones, zeta*: one and 150 rarer, filler49*: 11 bounded words,
 * alph*: one word only, and two beside a filter every message passes) and
 * read whole (with fewer matches than a walk takes); after a deletion the
 * chunk's counts stand
 * aside and FTS5 counts it.  A prefix with no bounded word is FTS5's to
 * count, and a second search counts nothing.  A count is taken only for the
 * MATCH it was made for.
 */
static void
a_prefix_is_counted_through_its_words(void **state)
{
	static const char *const prefixes[] = { "gamm*", "zeta*", "filler49*", "alph*",
	    "gam* -is:flagged", "zet* is:unread" };
	static int64_t want[N_MSG];
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	struct idx_rank_known other;
	struct idx_rank_stats stats = { .set = false };
	sqlite3_stmt *st;
	uint64_t walks;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	for (size_t i = 0; i < MB_ARRAY_LEN(prefixes); i++) {
		char *where = where_of(prefixes[i]);
		size_t n = mb_test_bm25_order_where(f->idx, prefixes[i], where, want,
		    MB_ARRAY_LEN(want));

		sqlite3_free(where);
		walks = idx_rank_prefix_walks;
		if (counted_scores_exact(f, prefixes[i]) != 1)
			fail_msg("\"%s\" was not counted through its words", prefixes[i]);
		assert_true(idx_rank_prefix_walks > walks);
		assert_int_equal(counted_scores_exact(f, prefixes[i]), 0);	/* kept */
		expect_exact(f, prefixes[i], want, n, 7, 28);
	}
	assert_int_equal(counted_scores_exact(f, "gammab*"), 0);	/* no bounded word */
	idx_rank_prefix_min_matches = INT64_MAX;	/* read whole */
	walks = idx_rank_prefix_walks;
	assert_int_equal(counted_scores_exact(f, "gammaf*"), 0);	/* no bounded word */
	assert_int_equal(counted_scores_exact(f, "alp*"), 1);
	assert_int_equal(idx_rank_prefix_walks, walks);
	idx_rank_prefix_min_matches = 0;
	/* rows deleted: chunk 0's counts are set aside, the statistics move */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= 40; uid++)
		assert_int_equal(mb_index_delete(f->idx, f->inbox, 1, uid, &err), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	for (size_t i = 0; i < 4; i++) {
		size_t n = mb_test_bm25_order(f->idx, prefixes[i], want, MB_ARRAY_LEN(want));

		assert_int_equal(counted_scores_exact(f, prefixes[i]), 1);
		expect_exact(f, prefixes[i], want, n, 7, 28);
	}
	/* a count is taken only for its own MATCH: delta's statement counts delta */
	other = (struct idx_rank_known){ .match = "\"gamm\"*", .n = 1, .hits = { 999 } };
	stats.known = &other;
	assert_int_equal(sqlite3_prepare_v2(mb_index_db(f->idx), "SELECT mb_bm25_stats("
	    "messages_fts, ?1, ?2) FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT 1", -1, &st,
	    NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, "\"delta\"", -1, SQLITE_STATIC);
	sqlite3_bind_pointer(st, 2, &stats, IDX_RANK_STATS, NULL);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	sqlite3_finalize(st);
	assert_true(stats.set);
	assert_int_equal(stats.n_hit[0], fts_rows(f, "delta", 0, INT64_MAX));
	/* counted statistics without a count would keep another phrase's: refused */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "SELECT mb_bm25_stats(messages_fts, "
	    "'\"gam\"*', NULL, 1) FROM messages_fts WHERE messages_fts MATCH 'gamma' LIMIT 1",
	    NULL, NULL, NULL), SQLITE_ERROR);
}

/* FTS5's segments: one row a segment in its %_idx table at least. */
static int64_t
segments(struct mb_test_index *f)
{
	return mb_test_index_int(f, "SELECT count(DISTINCT segid) FROM messages_fts_idx");
}

/*
 * The full-text index merged into one segment (index_fts_merge.c) a few
 * pages a step, with a message written between two steps as a daemon may:
 * FTS5 still holds every row (its integrity check), the merge is recorded,
 * and every page is the oracle's.
 */
static void
merged_into_one_segment_pages_stay_exact(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	unsigned steps = 0;
	bool due = false, done = false;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_true(segments(f) > 1);
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_true(due);
	while (!done) {
		if (mb_index_fts_merge_step(f->idx, 20, &done, &err) == -1)
			fail_msg("merge step %u: %s", steps, err.msg);
		if (++steps == 1)
			mb_test_put(f->idx, f->inbox, N_MSG + 1, &(struct mb_test_msg){
			    .subject = "alpha beta", .body = "gamma alpha", .date = T0 });
	}
	assert_true(steps > 2);
	assert_int_equal(segments(f), 1);
	mb_test_fts_consistent(f->idx);
	assert_int_equal(mb_test_index_int(f, "SELECT merged_max_id FROM fts_merge_state"),
	    mb_test_index_int(f, "SELECT max(id) FROM messages"));
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_false(due);
	expect_all_exact(f);
}

/*
 * A merge frees the pages of the segments it folded (about a tenth of a
 * backfilled file): a new index (auto_vacuum INCREMENTAL, index.c) gives
 * them back to the file system as the merge's last steps, so the file on
 * disk is the pages in use.  An index made before that (auto_vacuum NONE,
 * which only a VACUUM changes) merges as before and keeps them for the mail
 * to come.
 */
static void
a_merge_gives_the_freed_pages_back(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	struct stat sb;
	int64_t pages;

	assert_int_equal(mb_test_index_int(f, "SELECT auto_vacuum FROM pragma_auto_vacuum"), 2);
	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_true(segments(f) > 1);
	assert_int_equal(mb_index_fts_merge(f->idx, &err), 0);
	assert_int_equal(segments(f), 1);
	assert_int_equal(mb_test_index_int(f, "SELECT freelist_count FROM pragma_freelist_count"),
	    0);
	pages = mb_test_index_int(f, "SELECT page_count FROM pragma_page_count");
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "PRAGMA wal_checkpoint(TRUNCATE)",
	    NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_size, pages * 4096);
	mb_test_fts_consistent(f->idx);
	expect_all_exact(f);
}

static void
an_older_index_merges_and_keeps_its_free_pages(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	bool due = false;

	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "PRAGMA auto_vacuum = NONE; VACUUM",
	    NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(mb_test_index_int(f, "SELECT auto_vacuum FROM pragma_auto_vacuum"), 0);
	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_index_fts_merge(f->idx, &err), 0);
	assert_int_equal(segments(f), 1);
	assert_true(mb_test_index_int(f, "SELECT freelist_count FROM pragma_freelist_count") > 0);
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_false(due);
	mb_test_fts_consistent(f->idx);
	expect_all_exact(f);
}

/* A merge is due once the index has grown by a quarter since the last one. */
static void
a_merge_is_due_after_a_quarter_more(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	bool due = true;

	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_false(due);	/* nothing indexed */
	for (uint32_t uid = 1; uid <= 8; uid++)
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .body = "alpha" });
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_true(due);
	assert_int_equal(mb_index_fts_merge(f->idx, &err), 0);
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_false(due);
	mb_test_put(f->idx, f->inbox, 9, &(struct mb_test_msg){ .body = "beta" });
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_false(due);	/* 1 more of 8 */
	mb_test_put(f->idx, f->inbox, 10, &(struct mb_test_msg){ .body = "beta" });
	assert_int_equal(mb_index_fts_merge_due(f->idx, &due, &err), 0);
	assert_true(due);	/* 2 of 8 */
	/* mcpd's read-only handle may not merge */
	assert_int_equal(mb_index_fts_merge_due(mb_test_index_reader(f), &due, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
}

/* Whether a search of text went through a prefix's words (not FTS5's prefix read); its first id. */
static bool
prefix_walked(struct mb_test_index *f, const char *text, int64_t *first_r)
{
	uint64_t before = idx_rank_prefix_walks;

	*first_r = first_of(f, text, 10);
	return idx_rank_prefix_walks > before;
}

/*
 * A prefix with a bounded word is ranked through its words: the rows of
 * its rarer words first (gamm*'s best is one with no gamma at all), then
 * the bounded word's blocks; the pages are bm25()'s (pages_with_bounds_are_bm25s).
 * Left to the full read: no bounded word, more than IDX_PREFIX_WORDS words,
 * a prefix whose bounded words hold too few of its rows, and any prefix
 * before the bounds are built.
 */
static void
a_prefix_is_walked_through_its_words(void **state)
{
	struct mb_test_index *f = *state;
	int64_t first;

	put_all(f);
	assert_false(prefix_walked(f, "gamm*", &first));	/* no bounds yet */
	assert_int_equal(first, 3);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_true(prefix_walked(f, "gamm*", &first));
	assert_int_equal(first, 3);
	assert_true(prefix_walked(f, "gam*", &first));
	assert_true(prefix_walked(f, "alph*", &first));
	assert_true(prefix_walked(f, "filler49*", &first));	/* 11 bounded words */
	assert_true(prefix_walked(f, "会", &first));	/* 会*: its bigrams, a character of 3 bytes */
	assert_true(prefix_walked(f, "zeta*", &first));	/* 151 words, 10 phrases for the rarer */
	assert_false(prefix_walked(f, "gammab*", &first));	/* gammaburst only: not bounded */
	assert_true(first > 0);
	assert_false(prefix_walked(f, "filler1*", &first));	/* 111 words */
	assert_true(first > 0);
	idx_rank_prefix_min_matches = INT64_MAX;	/* fewer matches than that: read whole */
	assert_false(prefix_walked(f, "gamm*", &first));
	assert_int_equal(first, 3);
	idx_rank_prefix_min_matches = 0;
	/*
	 * Walked only when one bounded word holds most of the prefix's rows:
	 * zeta is in a third of zeta*'s (every row has a rarer zetaN), alpha in
	 * all of alph*'s.  The page is bm25()'s either way.
	 */
	idx_rank_prefix_min_share = 80;
	assert_false(prefix_walked(f, "zeta*", &first));
	assert_true(prefix_walked(f, "alph*", &first));
	idx_rank_prefix_min_share = 30;
	assert_true(prefix_walked(f, "zeta*", &first));
	idx_rank_prefix_min_share = 0;
}

/*
 * A bounded word's rows are counted when syncd chooses the words: as the
 * index grows they are scaled by how far the ids have grown, so that a
 * prefix is not read whole only because its word's count is old.
 */
static void
a_prefix_share_scales_with_the_index(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	char *body = mb_xcalloc(1, 4000), *subject = mb_xcalloc(1, 200);
	uint32_t seed = 23;
	int64_t first;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	idx_rank_prefix_min_share = 30;	/* zeta: a third of zeta*'s rows */
	assert_true(prefix_walked(f, "zeta*", &first));
	/* as many rows again, zeta in a third of them, and the words not chosen again */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = N_MSG + 1; uid <= 2 * N_MSG; uid++)
		put_msg(f, uid, &seed, body, subject);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	assert_true(prefix_walked(f, "zeta*", &first));
	idx_rank_prefix_min_share = 40;
	assert_false(prefix_walked(f, "zeta*", &first));
	idx_rank_prefix_min_share = 0;
	free(body);
	free(subject);
}

/*
 * How much a counter of this thread's (idx_rank_sized: lengths read,
 * idx_rank_hits_read: rows whose hits were read) grows over the first pages
 * of a search of text, each checked against want.
 */
static uint64_t
counted(struct mb_test_index *f, const uint64_t *counter, const char *text, const int64_t *want,
    size_t n)
{
	uint64_t before = *counter;

	expect_exact(f, text, want, n, 7, 28);
	return *counter - before;
}

/*
 * A search read whole takes a length every match of a block has from the
 * fronts of a word every match holds: a match whose score at that length
 * cannot reach the floor is not measured.  Hits in a column prove little
 * (subject:gamma's, a few tokens), the fronts more: here a tenth fewer
 * lengths at least, at 1,000,000 messages of the corpus 93% fewer for
 * from:yahoo.com.  Same pages either way; not with an OR, whose matches
 * need not hold the word, nor with a NOT, whose negated word no match holds.
 */
static void
a_read_whole_takes_lengths_from_the_fronts(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const texts[] = { "subject:gamma", "subject:alpha", "alpha beta" };
	static const char *const neither[] = { "subject:gamma OR beta", "subject:gamma -zeta7" };
	int64_t want[N_MSG];
	size_t n;
	uint64_t without, with;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	idx_rank_words_walked = false;	/* alpha beta read whole */
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		n = mb_test_bm25_order(f->idx, texts[i], want, MB_ARRAY_LEN(want));
		assert_true(n > 100);
		idx_rank_min_len_used = false;
		without = counted(f, &idx_rank_sized, texts[i], want, n);
		idx_rank_min_len_used = true;
		with = counted(f, &idx_rank_sized, texts[i], want, n);
		if (!(with * 10 < without * 9))
			fail_msg("%s: %llu lengths read with the fronts, %llu without", texts[i],
			    (unsigned long long)with, (unsigned long long)without);
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(neither); i++) {
		n = mb_test_bm25_order(f->idx, neither[i], want, MB_ARRAY_LEN(want));
		idx_rank_min_len_used = false;
		without = counted(f, &idx_rank_sized, neither[i], want, n);
		idx_rank_min_len_used = true;
		assert_int_equal(counted(f, &idx_rank_sized, neither[i], want, n), without);
	}
	idx_rank_words_walked = true;
}

/*
 * A filtered walk whose page does not fill in its first ranges gives up,
 * and every match is read whole with the blocks' bounds it computed: once
 * that read's page is full, a row of a block bounded below its floor is
 * answered before its length is read.  So at 1,000,000 messages of the
 * corpus, where the best blocks of "linux after:2002-09-01" are clones of
 * texts the date filter fails.  Here: the first chunk holds omega's best
 * rows, one a block, each a little better or worse than its neighbours
 * (a range each), dated before the filter's day; the second chunk holds
 * the rows that pass, more than the count's cap, the stronger in every
 * other block; the newest ids no omega.  Same pages as bm25() with the
 * filter in SQL; fewer rows' hits read than without the bounds.
 */
static void
put_few_best_failing(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char body[1024], subject[128];

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		uint32_t block = uid / 128;
		int64_t date = T0 + 3 * 86400;
		size_t len = 0;

		subject[0] = body[0] = '\0';
		if (uid < 2048 && uid % 128 == 64) {	/* the best, failing the filter */
			for (uint32_t k = 0; k < 2 + block % 5; k++)
				len += (size_t)snprintf(subject + len, sizeof(subject) - len, "omega ");
			snprintf(body, sizeof(body), "omega");
			date = T0;
		} else if (uid >= 2048 && uid < 4096) {	/* passing, of two strengths */
			len = (size_t)snprintf(body, sizeof(body), "%s",
			    block % 2 == 0 ? "omega omega " : "omega ");
			for (uint32_t k = 0; k < (block % 2 == 0 ? 20u : 60u); k++)
				len += (size_t)snprintf(body + len, sizeof(body) - len, "pad%u ", k);
		} else
			snprintf(body, sizeof(body), "pad%u", uid % 50);
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = subject,
		    .body = body, .date = date });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

static void
a_walk_that_gives_up_lends_its_bounds_to_the_whole_read(void **state)
{
	struct mb_test_index *f = *state;
	const char *text = "omega after:2023-11-16";
	char *where = where_of(text);
	int64_t want[N_MSG];
	uint64_t walks, without, with;
	size_t n;

	put_few_best_failing(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	n = mb_test_bm25_order_where(f->idx, text, where, want, MB_ARRAY_LEN(want));
	sqlite3_free(where);
	assert_true(n > MB_SEARCH_COUNT_CAP);
	idx_rank_min_matches = 0;
	walks = idx_rank_walks;
	idx_rank_whole_bounds_used = false;
	without = counted(f, &idx_rank_hits_read, text, want, n);
	idx_rank_whole_bounds_used = true;
	with = counted(f, &idx_rank_hits_read, text, want, n);
	assert_int_equal(idx_rank_walks, walks);	/* every page's walk gave up */
	if (!(with * 10 < without * 8))
		fail_msg("the hits of %llu rows read with the bounds, %llu without",
		    (unsigned long long)with, (unsigned long long)without);
	expect_exact(f, text, want, n, 1, 5);
	expect_exact(f, text, want, n, 50, 150);
	idx_rank_min_matches = 3000;
}

/*
 * A narrow date range (index_search_narrow.c): the ids it lets through are
 * read from the date index first, and the read of every match answers a
 * row outside them before its hits are read or its filters joined.  Here every message holds
 * omega, of varied strength, and each day of fifty holds a fiftieth of
 * them, spread over the ids (as the corpus cloned to size is): so a day's
 * rows are among the walk's best blocks only by chance.  The same pages
 * and exact totals as bm25() with the filter in SQL, joining to the
 * filters' index only the range's rows, where without its ids every match
 * was joined (or, walked, scored); a day with no message finds nothing; a
 * wide range is walked as before.
 */
static void
put_days(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char body[1024];
	int64_t small = 0;

	/*
	 * every fortieth message in a small folder, for a_small_folder_reads_only_its_ids;
	 * another fortieth flagged, another unread (the rest read) and another
	 * labelled, for a_few_flagged_unread_or_labelled_read_only_their_ids
	 */
	assert_int_equal(mb_index_folder_ensure(f->idx, "Small", NULL, &small, &err), 0);
	mb_test_folder_examined(f->idx, "Small");
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		size_t len = 0;

		for (uint32_t k = 0; k < 1 + uid * 7 % 5; k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "omega ");
		for (uint32_t k = 0; k < uid % 40; k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "pad%u ", k);
		mb_test_put(f->idx, uid % 40 == 3 ? small : f->inbox, uid, &(struct mb_test_msg){
		    .subject = "", .body = body, .date = T0 + (int64_t)(uid % 50) * 86400,
		    .flags = uid % 40 == 17 ? 0 : uid % 40 == 11 ?
		    MB_FLAG_SEEN | MB_FLAG_FLAGGED : MB_FLAG_SEEN,
		    .keywords = uid % 40 == 23 ? "Project-X" : NULL });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

/*
 * Over put_days(): each of texts (n of them, the last matching nothing) is
 * read through its scope's ids, joining at most the scope's matching rows
 * for each of four pages, a quarter at most of what it joined without
 * them; its pages and totals are bm25()'s.  wide, a scope of most
 * messages, is walked.
 */
static void
expect_narrow(struct mb_test_index *f, const char *const *texts, size_t n_texts, const char *wide)
{
	int64_t want[N_MSG];
	uint64_t walks;
	char *where;
	size_t n;

	idx_rank_min_matches = 0;
	for (size_t i = 0; i < n_texts; i++) {
		uint64_t without, with;

		where = where_of(texts[i]);
		n = mb_test_bm25_order_where(f->idx, texts[i], where, want, MB_ARRAY_LEN(want));
		sqlite3_free(where);
		assert_true(i == n_texts - 1 ? n == 0 : n > 28);
		idx_narrow_ids_used = false;
		without = counted(f, &idx_rank_joined, texts[i], want, n);
		idx_narrow_ids_used = true;
		with = counted(f, &idx_rank_joined, texts[i], want, n);
		if (with > 4 * n || (n > 0 && with * 4 > without))
			fail_msg("\"%s\": %llu rows joined with the scope's ids, %llu without, "
			    "%zu in the scope", texts[i], (unsigned long long)with,
			    (unsigned long long)without, n);
		expect_exact(f, texts[i], want, n, 1, 5);
		expect_exact(f, texts[i], want, n, 50, 150);
	}
	walks = idx_rank_walks;
	where = where_of(wide);
	n = mb_test_bm25_order_where(f->idx, wide, where, want, MB_ARRAY_LEN(want));
	sqlite3_free(where);
	expect_exact(f, wide, want, n, 7, 28);
	assert_true(idx_rank_walks > walks);
	idx_rank_min_matches = 3000;
}

static void
a_narrow_date_range_reads_only_its_ids(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const texts[] = {
		"omega after:2023-11-20 before:2023-11-21", "omega before:2023-11-15",
		"omega pad3 after:2023-11-20 before:2023-11-22",
		"omega after:2024-03-01",	/* no message that day */
	};

	put_days(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_narrow(f, texts, MB_ARRAY_LEN(texts), "omega after:2023-11-18");
}

/*
 * A small folder, alone or with dates (index_search_narrow.c): its ids are
 * read from the folder's index first, as a narrow date range's are.  A
 * fortieth of the messages, spread over the ids: the same pages and exact
 * totals as bm25() with the filters in SQL, joining only the folder's
 * matching rows; a large folder is walked as before.
 */
static void
a_small_folder_reads_only_its_ids(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const texts[] = {
		"omega in:Small", "omega pad1 in:Small", "omega in:Small after:2023-11-20",
		"omega in:Small after:2023-11-20 before:2023-11-21",	/* none: uid % 40 == 3 */
	};

	put_days(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_narrow(f, texts, MB_ARRAY_LEN(texts), "omega in:INBOX");
}

/*
 * The flagged messages, the unread ones or the labelled ones, when few
 * (index_search_narrow.c, migrations 0019 and 0020): their ids are read
 * from the flag's or the labels' partial index, as a small folder's are
 * from the folder's.  A fortieth of the messages each, spread over the
 * ids: the same pages and exact totals as bm25() with the filters in SQL,
 * joining only the scope's matching rows; with a folder or dates as well,
 * the rows of the part the sample finds narrowest (a folder as small:
 * either); a flag that has no index (is:read) is walked as before.
 */
static void
a_few_flagged_unread_or_labelled_read_only_their_ids(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const texts[] = {
		"omega is:flagged", "omega pad1 is:unread", "omega label:project-x",
		"omega pad39 is:unread",	/* none: no message holds pad39 */
	};
	/* a scope of two parts, and its narrowest part, whose ids are read */
	static const char *const mixed[][2] = {
		{ "omega is:flagged after:2023-11-20", "omega is:flagged" },
		{ "omega is:unread in:INBOX before:2023-11-30", "omega is:unread" },
		{ "omega is:flagged in:Small", "omega is:flagged" },	/* none: uid % 40 == 3 */
		{ "omega label:project-x after:2023-11-20", "omega label:project-x" },
	};

	put_days(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_narrow(f, texts, MB_ARRAY_LEN(texts), "omega is:read");
	idx_rank_min_matches = 0;
	for (size_t i = 0; i < MB_ARRAY_LEN(mixed); i++) {
		int64_t want[N_MSG], part[N_MSG];
		char *where = where_of(mixed[i][0]), *part_where = where_of(mixed[i][1]);
		size_t n = mb_test_bm25_order_where(f->idx, mixed[i][0], where, want, N_MSG);
		size_t n_part = mb_test_bm25_order_where(f->idx, mixed[i][1], part_where, part,
		    N_MSG);
		uint64_t without, with;

		sqlite3_free(where);
		sqlite3_free(part_where);
		assert_true(n < n_part);
		idx_narrow_ids_used = false;
		without = counted(f, &idx_rank_joined, mixed[i][0], want, n);
		idx_narrow_ids_used = true;
		with = counted(f, &idx_rank_joined, mixed[i][0], want, n);
		if (with > 4 * n_part || with * 4 > without)
			fail_msg("\"%s\": %llu rows joined with the ids of \"%s\", %llu without",
			    mixed[i][0], (unsigned long long)with, mixed[i][1],
			    (unsigned long long)without);
	}
	idx_rank_min_matches = 3000;
}

/*
 * Over put_days() with update run after it (the few messages filter
 * passes): filter beside omega, omega pad1, pad30 (in fewer than a quarter
 * of the messages) and omega pad38 (none: pad38 is in none of the few),
 * each through the filter's own index (an index of few), with no scan of
 * the filters' index, joining only its own rows; the three with omega as
 * expect_narrow() takes them, wide a filter most messages pass, walked.
 */
static void
expect_own_ids(struct mb_test_index *f, const char *update, const char *filter,
    const char *wide)
{
	static const char *const beside[] = { "omega", "omega pad1", "omega pad38", "pad30" };
	char texts[MB_ARRAY_LEN(beside)][64];
	const char *walked[MB_ARRAY_LEN(beside) - 1];

	for (size_t i = 0; i < MB_ARRAY_LEN(beside); i++) {
		snprintf(texts[i], sizeof(texts[i]), "%s %s", beside[i], filter);
		if (i < MB_ARRAY_LEN(walked))
			walked[i] = texts[i];
	}
	put_days(f);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), update, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_narrow(f, walked, MB_ARRAY_LEN(walked), wide);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		int64_t want[N_MSG];
		char *where = where_of(texts[i]);
		size_t n = mb_test_bm25_order_where(f->idx, texts[i], where, want, N_MSG);
		uint64_t few = idx_few_reads, scans = idx_filter_scans, joined = idx_rank_joined;

		sqlite3_free(where);
		expect_exact(f, texts[i], want, n, 7, 28);
		if (idx_few_reads == few || idx_filter_scans > scans ||
		    idx_rank_joined - joined > 4 * (n + 1))
			fail_msg("\"%s\": %llu reads of an index of few, %llu scans of the "
			    "filters, %llu rows joined for %zu that pass", texts[i],
			    (unsigned long long)(idx_few_reads - few),
			    (unsigned long long)(idx_filter_scans - scans),
			    (unsigned long long)(idx_rank_joined - joined), n);
	}
}

/*
 * Few messages with attachments (migration 0024): a search with
 * has:attachment reads their ids from the attachments' partial index, as
 * one with is:flagged reads the flagged ids, and not by a scan of every
 * entry of the filters' index, which beside words in fewer than a quarter
 * of the messages it did not make at all: `money has:attachment` at
 * 1,000,000 messages joined all 110,402 matches of money for 495 that
 * pass.  A fortieth of the messages here: the same pages and exact totals
 * as bm25() with the filter in SQL, joining only the scope's matching
 * rows (pad30's 1,125 matches, read whole, were every one joined);
 * -has:attachment, most of the messages, is walked as before.
 */
static void
few_attachments_read_only_their_ids(void **state)
{
	expect_own_ids(*state, "UPDATE messages SET attachment_count = 1 WHERE uid % 40 = 31",
	    "has:attachment", "omega -has:attachment");
}

/*
 * Few large messages (migration 0025): a search with larger:N reads the
 * ids of the messages of more than N bytes from the sizes' index, as
 * has:attachment reads the attachments' (`linux larger:100K` at 1,000,000
 * messages joined all 159,418 matches of linux for the 330 that pass).
 * A fortieth of the messages here, the rest of 100 bytes: the same pages
 * and exact totals as bm25() with the size in SQL, joining only the
 * scope's matching rows; larger:50, every message, is walked as before.
 */
static void
few_large_messages_read_only_their_ids(void **state)
{
	expect_own_ids(*state, "UPDATE messages SET size = 50000 WHERE uid % 40 = 31",
	    "larger:40K", "omega larger:50");
}

/*
 * A mailing list few messages are from (migrations 0026): a search with
 * list:X reads the ids of the lists whose List-Id holds X from the lists'
 * index, as has:attachment reads the attachments' (`linux list:social` at
 * 100,000 messages joined every match of linux for the 930 that pass).
 * Two lists here hold "rare", one spelled in capitals, a fortieth of the
 * messages between them, the rest of a list most messages are from or of
 * none: the same pages and exact totals as bm25() with the List-Id in
 * SQL, joining only the scope's matching rows; list:example, most of the
 * messages, is walked as before.
 */
static void
few_list_messages_read_only_their_ids(void **state)
{
	expect_own_ids(*state, "UPDATE messages SET list_id = CASE WHEN uid % 80 = 31 THEN "
	    "'Rare.Lists.example.org' WHEN uid % 80 = 71 THEN 'rare-two.example.net' WHEN "
	    "uid % 10 <> 3 THEN 'common.example.org' END", "list:rare", "omega list:example");
}

/*
 * Two filters with an index of few, each on too much of the mail for its
 * ids alone to make a narrow scope (a list on one message in 8, large
 * messages on one in 8 of the others), that few messages pass together
 * (one in 26 of the list's): the ids both indexes hold make the scope
 * (idx_narrow_meet), where every match was joined to test the two filters
 * (`the list:spamassassin larger:10000` at 1,000,000 messages: 115 ms of
 * CPU, 50 with the scope).  The same pages and exact totals as bm25()
 * with the filters in SQL, in a quarter of the joins, a third filter
 * (is:unread) tested by the join.
 */
static void
two_wide_filters_that_meet_make_the_scope(void **state)
{
	static const char *const texts[] = { "alpha list:rare larger:40K",
	    "beta larger:40K list:rare is:unread" };
	struct mb_test_index *f = *state;

	put_all(f);
	/* hashed, so that the sample's even spacing of ids sees the shares */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE messages SET list_id = "
	    "CASE WHEN (uid * 7919) % 97 < 12 THEN 'Rare.Lists.example.org' END; "
	    "UPDATE messages SET size = CASE WHEN list_id IS NOT NULL AND (uid * 31) % 53 < 2 "
	    "OR list_id IS NULL AND (uid * 104729) % 89 < 11 THEN 50000 ELSE 100 END",
	    NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(mb_test_rank_build(f), 2);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		static int64_t want[N_MSG];
		char *where = where_of(texts[i]);
		size_t n = mb_test_bm25_order_where(f->idx, texts[i], where, want, N_MSG);
		uint64_t meets = idx_meets, with, without;

		sqlite3_free(where);
		with = counted(f, &idx_rank_joined, texts[i], want, n);
		if (idx_meets == meets)
			fail_msg("\"%s\": not read where its filters' indexes meet", texts[i]);
		idx_narrow_ids_used = false;
		without = counted(f, &idx_rank_joined, texts[i], want, n);
		idx_narrow_ids_used = true;
		if (with * 4 > without)
			fail_msg("\"%s\": %llu rows joined where the indexes meet, %llu without",
			    texts[i], (unsigned long long)with, (unsigned long long)without);
	}
}

/*
 * Few answered messages, or few drafts (migration 0027): a search with
 * is:answered or is:draft reads their ids from the flag's partial index,
 * as one with is:flagged does (`linux is:answered` at 1,000,000 messages,
 * none answered, joined all 158,306 matches of linux, 93 ms of CPU).  A
 * fortieth of the messages here: the same pages and exact totals as
 * bm25() with the flag in SQL, joining only the scope's matching rows;
 * -is:answered and -is:draft, most of the messages, are walked as before.
 */
static void
few_answered_messages_read_only_their_ids(void **state)
{
	expect_own_ids(*state, "UPDATE messages SET flags = flags | 2 WHERE uid % 40 = 31",
	    "is:answered", "omega -is:answered");
}

static void
few_drafts_read_only_their_ids(void **state)
{
	expect_own_ids(*state, "UPDATE messages SET flags = flags | 16 WHERE uid % 40 = 31",
	    "is:draft", "omega -is:draft");
}

/*
 * The walk's best rows fail the filter, and the messages that pass are
 * few but are a third of those the sample of 64 reads (every max_id /
 * 64-th id, past the best rows' blocks: the sample finds them wide, but
 * not wider than a read of a walk that gave up would take).  The first chunk holds omega's best
 * rows, one a block, each a little better or worse than its neighbours
 * (a range each), dated T0; the second chunk the rest of omega's rows,
 * two omegas each, 3 days after T0, but for the sampled ids, one omega
 * each, 30 days before it; the newest ids, whose chunk has no bounds yet
 * (read first), no omega, the sampled ones 30 days before T0 too.
 */
static void
put_sampled_scope(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char subject[256];

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		bool sampled = uid >= 2048 && uid % (N_MSG / 64) == 1 && uid / (N_MSG / 64) % 3 == 0;
		int64_t date = sampled ? T0 - 30 * 86400 : T0 + 3 * 86400;
		const char *body = sampled ? "omega pad1 pad2 pad3 pad4 pad5" :
		    "omega omega pad1 pad2 pad3";
		size_t len = 0;

		subject[0] = '\0';
		if (uid < 2048 && uid % 128 == 64) {
			for (uint32_t k = 0; k < 2 + uid / 128 % 5; k++)
				len += (size_t)snprintf(subject + len, sizeof(subject) - len, "omega ");
			body = "omega";
			date = T0;
		} else if (uid >= 4096)
			body = "pad1 pad2";
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = subject,
		    .body = body, .date = date });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

/*
 * Over put_sampled_scope() (and what the caller changed): text's pages and
 * exact totals are bm25()'s with its filters in SQL, every page's walk
 * given up, and its scope's ids read after: one in share at most of the
 * rows joined without them.
 */
static void
expect_walk_gave_up(struct mb_test_index *f, const char *text, uint64_t share)
{
	char *where = where_of(text);
	int64_t want[N_MSG];
	uint64_t walks, without, with;
	size_t n;

	assert_int_equal(mb_test_rank_build(f), 2);
	n = mb_test_bm25_order_where(f->idx, text, where, want, N_MSG);
	sqlite3_free(where);
	assert_true(n > 7);
	idx_rank_min_matches = 0;
	walks = idx_rank_walks;
	idx_narrow_ids_used = false;
	without = counted(f, &idx_rank_joined, text, want, n);
	idx_narrow_ids_used = true;
	with = counted(f, &idx_rank_joined, text, want, n);
	assert_int_equal(idx_rank_walks, walks);	/* every page's walk gave up */
	if (with * share > without)
		fail_msg("\"%s\": %llu rows joined with the scope's ids, %llu without, %zu in "
		    "the scope", text, (unsigned long long)with, (unsigned long long)without, n);
	expect_exact(f, text, want, n, 1, 5);
	idx_rank_min_matches = 3000;
}

/*
 * A walk that gave up reads its scope's ids (idx_narrow_ids_walked): the
 * sample of 64 messages guesses the scope's share, and where it finds the
 * scope wide the block walk serves; but when few rows of its best blocks
 * pass, the walk gives up after a few ranges and every match was read,
 * each joined to test the scope until the page filled (`linux
 * before:2002-06-01` at 1,000,000 messages, a tenth of them before that
 * day: all 123,594 matches of linux joined).  Here the sample finds 38 of
 * its 64 in the range, which holds those 38 messages alone (26 with
 * omega): the same pages and exact totals as bm25() with the dates in SQL,
 * every page's walk given up after its first ranges (whose rows it joins,
 * about 900), and past them only the scope's matching rows joined: a
 * quarter at most of what was joined without the scope's ids.
 */
static void
a_walk_that_gave_up_reads_its_scope_ids(void **state)
{
	put_sampled_scope(*state);
	expect_walk_gave_up(*state, "omega before:2023-11-01", 4);
}

/*
 * And a scope wider than an eighth of the messages, which that read had
 * stopped at: a mailing list of a fifth of the mail, none of it among
 * omega's best rows (`linux list:fork` at 1,000,000 messages, a list of
 * 19% beside a word in 16%, 4,700 passing, joined every match: 143 ms of
 * CPU).  Reading the scope's ids costs about an eighth of a join each, so
 * they are read up to eight for each of the words' rows (and a quarter of
 * the messages), when the sample does not put more in the scope (11 of
 * its 64 here, the rest of the list between them): the same pages and
 * exact totals, a third at most of the joins (the walk's first ranges
 * join some 900 rows a page, and each of the scope's matches is joined
 * for its filters).
 */
static void
a_walk_that_gave_up_reads_a_wide_scope_ids(void **state)
{
	struct mb_test_index *f = *state;

	put_sampled_scope(f);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE messages SET list_id = "
	    "'wide.example.org' WHERE uid >= 2048 AND uid % 3 = 1 AND (uid % 78 <> 1 OR "
	    "uid < 2900)", NULL, NULL, NULL), SQLITE_OK);
	expect_walk_gave_up(f, "omega list:wide", 3);
}

/* count_messages' groupings the tests of a scope's runs compare. */
static const enum mb_count_group count_groups[] = {
	MB_COUNT_MONTH, MB_COUNT_FOLDER, MB_COUNT_SENDER,
};

/*
 * count_messages of text by each of count_groups (every group) into pages;
 * the steps SQLite took counting them (idx_count_steps).
 */
static uint64_t
count_pages(struct mb_test_index *f, const char *text, struct mb_count_page *pages)
{
	uint64_t before = idx_count_steps;

	for (size_t g = 0; g < MB_ARRAY_LEN(count_groups); g++) {
		struct mb_query q;
		struct mb_err err = { 0 };

		mb_query_init(&q);
		assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
		if (mb_overview_count(mb_test_index_reader(f), &q, count_groups[g], 0,
		    MB_OVERVIEW_MAX_LIMIT, &pages[g], &err) == -1)
			fail_msg("count \"%s\": %s", text, err.msg);
		mb_query_release(&q);
	}
	return idx_count_steps - before;
}

/*
 * got and want (count_pages()) the same groups, their total n; the steps
 * counting got at least outside fewer than want's (a step at least for each
 * match outside the scope's runs, in each grouping).  Releases both.
 */
static void
expect_counts(const char *text, struct mb_count_page *got, uint64_t got_steps,
    struct mb_count_page *want, uint64_t want_steps, size_t n, uint64_t outside)
{
	for (size_t g = 0; g < MB_ARRAY_LEN(count_groups); g++) {
		if (got[g].total != (int64_t)n || want[g].total != (int64_t)n ||
		    got[g].n != want[g].n || got[g].ungrouped != want[g].ungrouped)
			fail_msg("count \"%s\" by %s: %lld in %zu groups, want %zu in %zu", text,
			    mb_count_group_name(count_groups[g]), (long long)got[g].total,
			    got[g].n, n, want[g].n);
		for (size_t k = 0; k < want[g].n; k++)
			if (strcmp(got[g].rows[k].key, want[g].rows[k].key) != 0 ||
			    got[g].rows[k].count != want[g].rows[k].count)
				fail_msg("count \"%s\" by %s: group %zu is %s %lld, want %s %lld",
				    text, mb_count_group_name(count_groups[g]), k,
				    got[g].rows[k].key, (long long)got[g].rows[k].count,
				    want[g].rows[k].key, (long long)want[g].rows[k].count);
		mb_count_page_release(&got[g]);
		mb_count_page_release(&want[g]);
	}
	if (got_steps + MB_ARRAY_LEN(count_groups) * outside > want_steps)
		fail_msg("count \"%s\": %llu steps over the scope's runs, %llu over every id", text,
		    (unsigned long long)got_steps, (unsigned long long)want_steps);
}

/*
 * A scope in runs of ids (index_search_narrow.c): a backfill indexes
 * folder by folder, so a folder's ids are a run from its backfill and a
 * scattering among the mail that came after.  The read of every match
 * seeks to each run in turn and skips the long gaps between them: here
 * Small is ids 1001-1200 and every 25th id from 4403, Notes three ids
 * far apart.  The same pages and exact totals as bm25() with the folder
 * in SQL; the rows read outside the scope are at most the second run's
 * others (one span from 1001 to 4978 would read some 3,750 for each
 * page), none for Notes.  FTS5 merges a prefix's words' doclists whole at
 * each read, so a prefix is read as its words over the runs (omeg*: one
 * word, omega) when listing and seeking them costs less than that merge,
 * else in one span (pad*: 40 words for 4,875 rows): pages bm25()'s either
 * way.
 */
static void
put_runs(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char body[1024];
	int64_t small = 0, notes = 0;

	assert_int_equal(mb_index_folder_ensure(f->idx, "Small", NULL, &small, &err), 0);
	assert_int_equal(mb_index_folder_ensure(f->idx, "Notes", NULL, &notes, &err), 0);
	mb_test_folder_examined(f->idx, "Small");
	mb_test_folder_examined(f->idx, "Notes");
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		bool in_small = (uid > 1000 && uid <= 1200) || (uid > 4400 && uid % 25 == 3);
		bool in_notes = uid == 100 || uid == 2400 || uid == 4700;
		size_t len = 0;

		for (uint32_t k = 0; k < 1 + uid * 7 % 5; k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "omega ");
		for (uint32_t k = 0; k < uid % 40; k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "pad%u ", k);
		/* a thread of every hundredth message, for a_thread_beside_a_prefix_is_read_once */
		mb_test_put(f->idx, in_small ? small : in_notes ? notes : f->inbox, uid,
		    &(struct mb_test_msg){ .subject = "", .body = body,
		    .date = T0 + (int64_t)(uid % 50) * 86400,
		    .message_id = uid == 7 ? "root@runs" : NULL,
		    .in_reply_to = uid % 100 == 7 && uid > 7 ? "root@runs" : NULL });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

static void
a_scope_in_runs_reads_only_its_runs(void **state)
{
	struct mb_test_index *f = *state;
	static const struct {
		const char	*text;
		uint64_t	 most_outside;	/* read outside the scope, for four pages */
	} cases[] = {
		{ "omega in:Small", 4 * (4978 - 4403 + 1 - 24) },
		{ "omega pad1 in:Small", 4 * (4978 - 4403 + 1 - 24) },
		{ "omega in:Notes", 0 },
		{ "omeg* in:Small", 4 * (4978 - 4403 + 1 - 24) },	/* omega over the runs */
		{ "omeg* in:Notes", 0 },
		{ "pad* in:Small", UINT64_MAX },	/* one span: below */
	};
	int64_t want[N_MSG];

	put_runs(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	idx_rank_min_matches = 0;
	/* omeg*'s first search, over Notes's runs: counted through its words, bm25()'s scores */
	assert_int_equal(counted_scores_exact(f, "omeg* in:Notes"), 1);
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		char *where = where_of(cases[i].text);
		size_t n = mb_test_bm25_order_where(f->idx, cases[i].text, where, want,
		    MB_ARRAY_LEN(want));
		uint64_t joined = idx_rank_joined, outside;

		sqlite3_free(where);
		assert_true(n >= 3);
		outside = counted(f, &idx_rank_outside, cases[i].text, want, n);
		if (outside > cases[i].most_outside)
			fail_msg("\"%s\": %llu rows read outside the scope, want %llu at most",
			    cases[i].text, (unsigned long long)outside,
			    (unsigned long long)cases[i].most_outside);
		/* 40 words over two runs would cost more than the merge: one span */
		if (cases[i].most_outside == UINT64_MAX && outside < 4 * 3000)
			fail_msg("\"%s\": %llu rows read outside the scope, one span reads more",
			    cases[i].text, (unsigned long long)outside);
		if (idx_rank_joined - joined > 4 * n)	/* read through the scope's ids */
			fail_msg("\"%s\": %llu rows joined for %zu in the scope", cases[i].text,
			    (unsigned long long)(idx_rank_joined - joined), n);
		expect_exact(f, cases[i].text, want, n, 50, 150);
	}
	/* count_messages over the runs too: Small's ids outside its runs hold 4,224 matches */
	{
		const char *text = "omega in:Small";
		struct mb_count_page got[MB_ARRAY_LEN(count_groups)], base[MB_ARRAY_LEN(count_groups)];
		char *where = where_of(text);
		size_t n = mb_test_bm25_order_where(f->idx, text, where, want, MB_ARRAY_LEN(want));
		uint64_t base_steps, got_steps;

		sqlite3_free(where);
		idx_narrow_ids_used = false;
		base_steps = count_pages(f, text, base);
		idx_narrow_ids_used = true;
		got_steps = count_pages(f, text, got);
		expect_counts(text, got, got_steps, base, base_steps, n, N_MSG - 200 - 576);
	}
	idx_rank_min_matches = 3000;
}

/*
 * text's first pages against bm25() with its filters in SQL (four of 7,
 * then 1 and 50 a page, more than 28 matches): the rows whose hits were
 * read over the four pages of 7, and the steps counting their totals into
 * *steps_r when not NULL.
 */
static uint64_t
exact_filtered(struct mb_test_index *f, const char *text, uint64_t *steps_r)
{
	static int64_t want[N_MSG];
	char *where = where_of(text);
	size_t n = mb_test_bm25_order_where(f->idx, text, where, want, MB_ARRAY_LEN(want));
	uint64_t steps = idx_total_steps, hits;

	sqlite3_free(where);
	if (n <= 28)
		fail_msg("\"%s\": %zu matches", text, n);
	hits = counted(f, &idx_rank_hits_read, text, want, n);
	if (steps_r != NULL)
		*steps_r = idx_total_steps - steps;
	expect_exact(f, text, want, n, 1, 5);
	expect_exact(f, text, want, n, 50, 150);
	return hits;
}

/*
 * A wide folder in long stretches of ids (index_search_folder.c, migration
 * 0021): a backfill indexes folder by folder, so a big folder's ids are a
 * long run.  Lists is ids 2201-3800 (a third of the messages, one run),
 * Old ids 301-1000 and 4301-4600 (two runs: none of it in the chunk of
 * 2,048 ids between), INBOX the rest.  The folder's runs are found by a
 * seek a chunk; the walk reads no block outside them and the total is
 * counted over them, and the read of every match (two words, a prefix)
 * reads only them: the same pages and totals as bm25() with the folder in
 * SQL, and far fewer rows' hits read and steps counting the total than on
 * the same index before the migration.  INBOX, spread over most of the
 * ids, has its runs read not at all.
 */
static void
put_wide(struct mb_test_index *f, int64_t *lists_r, int64_t *old_r)
{
	struct mb_err err = { 0 };
	char body[1024];

	assert_int_equal(mb_index_folder_ensure(f->idx, "Lists", NULL, lists_r, &err), 0);
	assert_int_equal(mb_index_folder_ensure(f->idx, "Old", NULL, old_r, &err), 0);
	mb_test_folder_examined(f->idx, "Lists");
	mb_test_folder_examined(f->idx, "Old");
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		bool in_lists = uid > 2200 && uid <= 3800;
		bool in_old = (uid > 300 && uid <= 1000) || (uid > 4300 && uid <= 4600);
		size_t len = 0;

		for (uint32_t k = 0; k < 1 + uid * 7 % 5; k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "omega ");
		for (uint32_t k = 0; k < uid % 40; k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "pad%u ", k);
		mb_test_put(f->idx, in_lists ? *lists_r : in_old ? *old_r : f->inbox, uid,
		    &(struct mb_test_msg){ .subject = "", .body = body,
		    .date = T0 + (int64_t)(uid % 50) * 86400 });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

/* The runs idx_folder_runs() finds for folder: exactly want's (n_want of them). */
static void
expect_folder_runs(struct mb_test_index *f, int64_t folder, const struct idx_id_run *want,
    size_t n_want)
{
	struct idx_narrow_ids d;
	struct mb_err err = { 0 };
	bool used = false;

	assert_int_equal(idx_folder_runs(mb_test_index_reader(f), folder, N_MSG, &d, &used,
	    &err), 0);
	assert_true(used && d.wide && d.bits == NULL);
	assert_int_equal(d.n_runs, n_want);
	for (size_t i = 0; i < n_want; i++)
		if (d.runs[i].lo != want[i].lo || d.runs[i].hi != want[i].hi)
			fail_msg("folder %lld: run %zu is %lld-%lld, want %lld-%lld",
			    (long long)folder, i, (long long)d.runs[i].lo, (long long)d.runs[i].hi,
			    (long long)want[i].lo, (long long)want[i].hi);
	idx_narrow_ids_release(&d);
}

static void
a_wide_folder_reads_only_its_runs(void **state)
{
	struct mb_test_index *f = *state;
	/*
	 * The walked ones: the matches their total steps over outside the runs
	 * before it reaches its cap (1,000: Lists's ids 2201-3200; all of
	 * Old's 1,000 and every other match, 4,000).  The others are read
	 * whole, their total counted as they are read.
	 */
	static const struct {
		const char	*text;
		uint64_t	 outside;
	} cases[] = {
		{ "omega in:Lists", 2200 }, { "omega in:Old", 4000 },	/* walked */
		{ "omega pad1 in:Lists", 0 },				/* two words */
		{ "omeg* in:Lists", 0 }, { "pad* in:Lists", 0 },	/* prefixes */
	};
	static const struct idx_id_run lists_runs[] = { { 2201, 3800 } };
	static const struct idx_id_run old_runs[] = { { 301, 1000 }, { 4301, 4600 } };
	uint64_t hits[2][MB_ARRAY_LEN(cases)], steps[2][MB_ARRAY_LEN(cases)];
	/* count_messages of them over the runs, against every id */
	static const struct {
		const char	*text;
		uint64_t	 outside;	/* matches outside the runs */
	} counts[] = {
		{ "omega in:Lists", N_MSG - 1600 }, { "omega in:Old", N_MSG - 1000 },
		{ "pad3 in:Old", 0 },
	};
	struct mb_count_page pages[2][MB_ARRAY_LEN(counts)][MB_ARRAY_LEN(count_groups)];
	uint64_t count_steps[2][MB_ARRAY_LEN(counts)];
	int64_t want[N_MSG], lists = 0, old = 0;

	put_wide(f, &lists, &old);
	assert_int_equal(mb_test_rank_build(f), 2);
	idx_rank_min_matches = 0;
	/* before migration 0021: no runs */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DROP INDEX messages_folder_ids",
	    NULL, NULL, NULL), SQLITE_OK);
	for (int with = 0; with < 2; with++) {
		uint64_t runs_read = idx_folder_runs_read;

		if (with)
			assert_int_equal(sqlite3_exec(mb_index_db(f->idx),
			    "CREATE INDEX messages_folder_ids ON messages(folder_id)", NULL, NULL,
			    NULL), SQLITE_OK);
		for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++)
			hits[with][i] = exact_filtered(f, cases[i].text, &steps[with][i]);
		/* each search reads the runs, four pages and five and three more of each */
		assert_int_equal(idx_folder_runs_read - runs_read,
		    with ? MB_ARRAY_LEN(cases) * (4 + 5 + 3) : 0);
		for (size_t i = 0; i < MB_ARRAY_LEN(counts); i++)
			count_steps[with][i] = count_pages(f, counts[i].text, pages[with][i]);
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(counts); i++) {
		char *where = where_of(counts[i].text);
		size_t n = mb_test_bm25_order_where(f->idx, counts[i].text, where, want,
		    MB_ARRAY_LEN(want));

		sqlite3_free(where);
		expect_counts(counts[i].text, pages[1][i], count_steps[1][i], pages[0][i],
		    count_steps[0][i], n, counts[i].outside);
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		/* walked: half the rows read at most; read whole: three quarters */
		bool read_less = cases[i].outside > 0 ? hits[1][i] * 2 <= hits[0][i] :
		    hits[1][i] * 4 <= hits[0][i] * 3;
		/* a step at least for each match outside the runs, on each of the four pages */
		bool counted_less = steps[1][i] + 4 * cases[i].outside <= steps[0][i];

		if (!read_less || !counted_less)
			fail_msg("\"%s\": %llu rows' hits read and %llu steps counting the total "
			    "over the folder's runs, %llu and %llu without", cases[i].text,
			    (unsigned long long)hits[1][i], (unsigned long long)steps[1][i],
			    (unsigned long long)hits[0][i], (unsigned long long)steps[0][i]);
	}
	expect_folder_runs(f, lists, lists_runs, MB_ARRAY_LEN(lists_runs));
	expect_folder_runs(f, old, old_runs, MB_ARRAY_LEN(old_runs));
	/* INBOX: the sample finds it near most of the ids, and its runs are not read */
	{
		const char *text = "omega in:INBOX";
		char *where = where_of(text);
		size_t n = mb_test_bm25_order_where(f->idx, text, where, want, MB_ARRAY_LEN(want));
		uint64_t runs_read = idx_folder_runs_read;

		sqlite3_free(where);
		expect_exact(f, text, want, n, 7, 28);
		assert_int_equal(idx_folder_runs_read, runs_read);
	}
	idx_rank_min_matches = 3000;
}

/*
 * A prefix beside filters (a folder, dates, flags) was read whole: FTS5
 * merged its words' doclists and every match was joined to test the
 * filters (at 1,000,000 messages `list* in:Corpus`, 68% of the mail, 156
 * ms of CPU against 45 for `list*`).  When a sample finds the filters
 * common it is walked through its words as it is alone: the rarer words'
 * rows joined only while they can reach the page, the bounded words'
 * blocks walked (a wide folder's runs only), the total counted through
 * its words.  Here Lists is ids 1667-3333 and id 3 (gamm*'s best row, of
 * its rarer words only), dates and \Flagged as put_msg() gives them (one
 * in 41 flagged): pages and totals are bm25()'s with the filters in SQL,
 * and in Lists at most three quarters of the rows' hits are read that are
 * read without its runs (before migration 0021); beside the rare flag the
 * prefix is read whole.
 */
static void
a_prefix_beside_filters_is_walked(void **state)
{
	static const struct {
		const char	*text;
		bool		 walked;
	} cases[] = {
		{ "gamm* in:Lists", true }, { "zeta* in:Lists", true },
		{ "gamm* -is:flagged", true }, { "zeta* after:2023-11-15 is:unread", true },
		{ "filler49* after:2023-11-15", true }, { "zeta* is:flagged", false },
	};
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	int64_t lists = 0;
	uint64_t hits[2][MB_ARRAY_LEN(cases)];
	char move[256];

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_index_folder_ensure(f->idx, "Lists", NULL, &lists, &err), 0);
	mb_test_folder_examined(f->idx, "Lists");
	snprintf(move, sizeof(move), "UPDATE messages SET folder_id = %lld WHERE id = 3 OR "
	    "id BETWEEN 1667 AND 3333", (long long)lists);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), move, NULL, NULL, NULL), SQLITE_OK);
	/* first without the runs (before migration 0021): the join alone finds the folder */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DROP INDEX messages_folder_ids",
	    NULL, NULL, NULL), SQLITE_OK);
	for (int runs = 0; runs < 2; runs++) {
		for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
			uint64_t walks = idx_rank_prefix_walks;

			hits[runs][i] = exact_filtered(f, cases[i].text, NULL);
			if ((idx_rank_prefix_walks > walks) != cases[i].walked)
				fail_msg("\"%s\": %llu walks", cases[i].text,
				    (unsigned long long)(idx_rank_prefix_walks - walks));
		}
		assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "CREATE INDEX IF NOT EXISTS "
		    "messages_folder_ids ON messages(folder_id)", NULL, NULL, NULL), SQLITE_OK);
	}
	/* over Lists's runs (two: id 3 and 1667-3333) the rows outside them are not read */
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++)
		if (strstr(cases[i].text, "in:Lists") != NULL && hits[1][i] * 4 > hits[0][i] * 3)
			fail_msg("\"%s\": %llu rows' hits read over the folder's runs, %llu without",
			    cases[i].text, (unsigned long long)hits[1][i],
			    (unsigned long long)hits[0][i]);
}

/*
 * A range of the walk takes its block's unread neighbours while their
 * bound can reach the floor as it is, and early in a walk the floor can be
 * weak: here the newest ids (read first: no bounds) hold kappa in long
 * bodies and one shorter body a block, every bounded block one shorter
 * body too, and blocks 3, 10, 17, 24 and 31 ten short bodies of kappa
 * kappa kappa each.  After the newest ids the
 * floor is the twentieth of their weak rows, which every bounded block's
 * bound reaches, so a range around block 3 took every block there is
 * (at 1,000,000 messages: a folder's 2,300).  A range takes at most
 * idx_rank_range_reach neighbours a side (a chunk's blocks; 2 here, for an
 * index of 40 blocks): after blocks 1-5 and 8-12 the page holds twenty
 * strong rows and the walk stops at blocks 17 and 24, reading less than
 * half the rows (without the reach all of them); the page is bm25()'s
 * either way.
 */
static void
put_floors(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char body[2048];

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		uint32_t block = uid / 128, at = uid % 128;
		bool strong = block % 7 == 3 && block < 32 && at >= 2 && at <= 20 && at % 2 == 0;
		size_t len = 0;

		if (strong)
			len = (size_t)snprintf(body, sizeof(body), "kappa kappa kappa lorem");
		else if (uid % 2 == 0)
			len = (size_t)snprintf(body, sizeof(body), "kappa ");
		/* a weak row: a long body; one a block shorter (a medium row) */
		for (uint32_t k = 0; !strong && k < (at == 64 ? 10u : 200u); k++)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "lorem ");
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = "",
		    .body = body, .date = T0 + (int64_t)uid * 60 });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

static void
a_range_takes_few_neighbours_on_a_weak_floor(void **state)
{
	struct mb_test_index *f = *state;
	int64_t want[N_MSG];
	uint64_t hits[2];
	size_t n;

	put_floors(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	n = mb_test_bm25_order(f->idx, "kappa", want, MB_ARRAY_LEN(want));
	assert_true(n > N_MSG / 3);
	idx_rank_min_matches = 0;
	for (int capped = 0; capped < 2; capped++) {
		uint64_t walks = idx_rank_walks;

		idx_rank_range_reach = capped ? 2 : N_MSG;
		hits[capped] = counted(f, &idx_rank_hits_read, "kappa", want, n);
		assert_true(idx_rank_walks > walks);
		expect_exact(f, "kappa", want, n, 1, 5);
		expect_exact(f, "kappa", want, n, 50, 150);
	}
	idx_rank_range_reach = RANK_CHUNK_BLOCKS;
	idx_rank_min_matches = 3000;
	if (hits[1] * 2 > hits[0])
		fail_msg("kappa: %llu rows' hits read with ranges of 5 blocks at most, %llu without",
		    (unsigned long long)hits[1], (unsigned long long)hits[0]);
}

/*
 * Once the page is full the walk reads up to idx_rank_floor_reads ranges
 * before it chooses between more ranges and one statement over the blocks
 * left (index_search_blocks.c), and no more ranges than would cost what
 * that statement costs.  On the index of
 * a_range_takes_few_neighbours_on_a_weak_floor: chosen at once, kappa's
 * runs left are many against its rows and the statement finishes the walk;
 * after 64 ranges (more than this index's 40 blocks hold), ranges do.  With
 * ranges of one block and a wait that never ends, the ranges' cost ends it:
 * the statement finishes the walk again.  The pages are bm25()'s every
 * way, deep ones too.
 */
static uint64_t
rest_reads(struct mb_test_index *f, const int64_t *want, size_t n, int64_t wait, int64_t reach)
{
	uint64_t before = idx_rank_rest_reads;

	idx_rank_floor_reads = wait;
	idx_rank_range_reach = reach;
	expect_exact(f, "kappa", want, n, 1, 5);
	expect_exact(f, "kappa", want, n, 20, 60);
	expect_exact(f, "kappa", want, n, 50, 1000);
	idx_rank_floor_reads = 64;
	idx_rank_range_reach = RANK_CHUNK_BLOCKS;
	return idx_rank_rest_reads - before;
}

static void
a_walk_finishes_in_ranges_or_one_statement(void **state)
{
	struct mb_test_index *f = *state;
	int64_t want[N_MSG];
	uint64_t at_once, after_64, one_block;
	size_t n;

	put_floors(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	n = mb_test_bm25_order(f->idx, "kappa", want, MB_ARRAY_LEN(want));
	idx_rank_min_matches = 0;
	at_once = rest_reads(f, want, n, 0, RANK_CHUNK_BLOCKS);
	after_64 = rest_reads(f, want, n, 64, RANK_CHUNK_BLOCKS);
	one_block = rest_reads(f, want, n, INT64_MAX, 1);
	idx_rank_min_matches = 3000;
	if (at_once == 0 || after_64 != 0 || one_block == 0)
		fail_msg("kappa: walks finished by one statement: %llu chosen at once, %llu after "
		    "64 ranges, %llu with ranges of one block and no wait's end",
		    (unsigned long long)at_once, (unsigned long long)after_64,
		    (unsigned long long)one_block);
}

/*
 * thread:N beside words looks each message of the thread up in FTS5; for a
 * prefix FTS5 merges its words' doclists at each lookup (`thread:N list*`
 * with 272 messages: 1.9 s at 100,000 messages).  With a prefix the
 * thread's ids are read first and the prefix's matches once over their
 * span, the other threads' rows answered before their hits are read; a
 * word keeps a seek a message.  Pages and totals are bm25()'s either way.
 */
static void
a_thread_beside_a_prefix_is_read_once(void **state)
{
	struct mb_test_index *f = *state;
	char prefixed[64], word[64];
	const char *const texts[] = { prefixed, word };
	int64_t want[N_MSG], thread;

	put_runs(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	thread = mb_test_index_int(f, "SELECT thread_id FROM messages WHERE message_id = 'root@runs'");
	assert_true(thread > 0);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM messages WHERE thread_id = "
	    "(SELECT thread_id FROM messages WHERE message_id = 'root@runs')"), N_MSG / 100);
	snprintf(prefixed, sizeof(prefixed), "thread:%lld omeg*", (long long)thread);
	snprintf(word, sizeof(word), "thread:%lld omega", (long long)thread);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		char *where = where_of(texts[i]);
		size_t n = mb_test_bm25_order_where(f->idx, texts[i], where, want,
		    MB_ARRAY_LEN(want));
		uint64_t outside;

		sqlite3_free(where);
		assert_int_equal(n, N_MSG / 100);
		outside = counted(f, &idx_rank_outside, texts[i], want, n);
		if (i == 0 ? outside == 0 : outside != 0)
			fail_msg("\"%s\": %llu rows answered outside the thread", texts[i],
			    (unsigned long long)outside);
		expect_exact(f, texts[i], want, n, 50, 150);
	}
}

/*
 * A filter with no index of its own that few messages pass (is:read where
 * few messages are read; until 2026-12-06 smaller:N, which reads
 * messages_size now) beside words in most of them: until 1,000 matches
 * have passed, every match is joined to test it, so with 20 read messages
 * of 5,000 every match of omega was joined.  The ids that pass are read by
 * a scan of the filters' index first, and the rest answered before their
 * hits: few joins, the same pages and totals as bm25() with the filter in
 * SQL, none at all where nothing passes.  Not for a filter most messages
 * pass, nor beside words in fewer than a quarter of them, nor for
 * is:answered, is:draft, has:attachment, larger: or smaller:, which have
 * indexes of their own now (few_answered_messages_read_only_their_ids).  (A
 * single word here is walked through its bounds, which join only the rows
 * that can reach the page: queries the walk does not take are asked.)
 */
static void
a_filter_few_pass_is_read_through_its_ids(void **state)
{
	struct mb_test_index *f = *state;
	static const struct {
		const char	*text;
		bool		 scanned;
	} cases[] = {
		{ "omeg* is:read", true },
		{ "omega -pad15 is:read", true },	/* a NOT of most rows (60%): not walked */
		{ "omeg* is:read -is:answered", true },	/* none */
		{ "omeg* is:answered", false },	/* the same messages, through its own index */
		{ "omeg* is:draft", false },	/* none, likewise */
		{ "omeg* has:attachment", false },
		{ "omeg* larger:1K", false },
		{ "omeg* larger:60", false },	/* most */
		{ "omeg* smaller:60", false },	/* the read ones again, through messages_size */
		{ "omeg* smaller:20", false },	/* none, likewise */
		{ "pad39* is:read", false },	/* 125 matches */
	};
	int64_t want[N_MSG];

	put_runs(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE messages SET flags = flags & ~1; "
	    "UPDATE messages SET flags = flags | 3, size = 50 WHERE id % 250 = 17", NULL, NULL, NULL),
	    SQLITE_OK);
	idx_rank_min_matches = 0;
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		char *where = where_of(cases[i].text);
		size_t n = mb_test_bm25_order_where(f->idx, cases[i].text, where, want,
		    MB_ARRAY_LEN(want));
		uint64_t scans = idx_filter_scans, joined = idx_rank_joined;

		sqlite3_free(where);
		expect_exact(f, cases[i].text, want, n, 7, 28);
		if ((idx_filter_scans > scans) != cases[i].scanned)
			fail_msg("\"%s\": %llu scans of the filters", cases[i].text,
			    (unsigned long long)(idx_filter_scans - scans));
		if (cases[i].scanned && idx_rank_joined - joined > 4 * (n + 1))
			fail_msg("\"%s\": %llu rows joined for %zu that pass", cases[i].text,
			    (unsigned long long)(idx_rank_joined - joined), n);
	}
	idx_rank_min_matches = 3000;
}

/*
 * An index from before migrations/0019 has no flag's index (nor one
 * before 0020 the labels'): a search with is:flagged joins every match as
 * before, with the same pages, and does not fail.
 */
static void
a_flag_without_its_index_joins_every_match(void **state)
{
	struct mb_test_index *f = *state;
	const char *text = "omega is:flagged";
	int64_t want[N_MSG];
	uint64_t without, with;
	char *where = where_of(text);
	size_t n;

	put_days(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	n = mb_test_bm25_order_where(f->idx, text, where, want, MB_ARRAY_LEN(want));
	sqlite3_free(where);
	assert_true(n > 28);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DROP INDEX messages_flagged",
	    NULL, NULL, NULL), SQLITE_OK);
	idx_rank_min_matches = 0;
	idx_narrow_ids_used = false;
	without = counted(f, &idx_rank_joined, text, want, n);
	idx_narrow_ids_used = true;
	with = counted(f, &idx_rank_joined, text, want, n);
	idx_rank_min_matches = 3000;
	assert_int_equal(with, without);
}

/*
 * A word or phrase with few matches is read whole: the walk would read a
 * range for nearly every block that holds its bounded word, since the page
 * fills late and the floor stays low ("couple shots" at 100,000 messages:
 * 17 matches, 780 ranges, 170 times the instructions of the whole read).
 * A phrase also needs a 32nd of the ids.  Its page is bm25()'s either way;
 * with enough matches it is walked.
 */
static bool
walked(struct mb_test_index *f, const char *text, const int64_t *want, size_t n)
{
	uint64_t walks = idx_rank_walks;

	expect_exact(f, text, want, n, 7, 28);
	return idx_rank_walks > walks;
}

static void
few_matches_are_read_whole(void **state)
{
	struct mb_test_index *f = *state;
	int64_t want[N_MSG];
	size_t n;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	n = mb_test_bm25_order(f->idx, "alpha", want, MB_ARRAY_LEN(want));
	assert_true(n > N_MSG / 32);
	idx_rank_min_matches = (int64_t)n + 1;
	assert_false(walked(f, "alpha", want, n));
	idx_rank_min_matches = (int64_t)n;
	assert_true(walked(f, "alpha", want, n));

	n = mb_test_bm25_order(f->idx, "\"gamma delta\"", want, MB_ARRAY_LEN(want));
	assert_true(n > 28 && n < N_MSG / 32);	/* more than the pages, fewer than a 32nd */
	idx_rank_min_matches = 1;
	assert_false(walked(f, "\"gamma delta\"", want, n));
	idx_rank_min_matches = 0;
	assert_true(walked(f, "\"gamma delta\"", want, n));

	/*
	 * Several words: walked when, were they independent, a 50th of the
	 * messages would hold them all (alpha beta: 90% and 40%, 1,800 of
	 * 5,000), read whole when fewer would (gamma mailing: 15% and 10%, 75);
	 * a phrase of several words among them likewise (alpha "mailing
	 * list": 450; phrases_are_walked_among_other_phrases)
	 */
	idx_rank_min_matches = 1;
	n = mb_test_bm25_order(f->idx, "alpha beta", want, MB_ARRAY_LEN(want));
	assert_true(walked(f, "alpha beta", want, n));
	n = mb_test_bm25_order(f->idx, "gamma mailing", want, MB_ARRAY_LEN(want));
	assert_true(n > 28);
	assert_false(walked(f, "gamma mailing", want, n));
	n = mb_test_bm25_order(f->idx, "alpha \"mailing list\"", want, MB_ARRAY_LEN(want));
	assert_true(walked(f, "alpha \"mailing list\"", want, n));
	n = mb_test_bm25_order(f->idx, "gamma \"mailing list\"", want, MB_ARRAY_LEN(want));
	assert_true(n > 28);
	assert_false(walked(f, "gamma \"mailing list\"", want, n));
	/*
	 * Words alone, bounded at one length, from their own share
	 * (idx_rank_and_share): gamma mailing (75 of 5,000) from a 100th; a
	 * phrase among them still from a 25th
	 */
	idx_rank_and_share = 100;
	n = mb_test_bm25_order(f->idx, "gamma mailing", want, MB_ARRAY_LEN(want));
	assert_true(walked(f, "gamma mailing", want, n));
	n = mb_test_bm25_order(f->idx, "gamma \"mailing list\"", want, MB_ARRAY_LEN(want));
	assert_false(walked(f, "gamma \"mailing list\"", want, n));
	idx_rank_one_length = false;	/* bounded each at its best: from a 25th */
	n = mb_test_bm25_order(f->idx, "gamma mailing", want, MB_ARRAY_LEN(want));
	assert_false(walked(f, "gamma mailing", want, n));
	idx_rank_one_length = true;
	idx_rank_and_share = 50;
	idx_rank_min_matches = 0;
	n = mb_test_bm25_order(f->idx, "gamma mailing", want, MB_ARRAY_LEN(want));
	assert_true(walked(f, "gamma mailing", want, n));
}

/*
 * Each of walked (n_walked texts, each matching more than 100 rows) read
 * whole with *walk_switch false and walked with it true, the pages
 * bm25()'s both ways and a quarter fewer rows' hits read walked; each of
 * whole (n_whole, more than a page of matches) read whole with it true.
 */
static void
expect_walked_or_whole(struct mb_test_index *f, const char *const *walked_texts, size_t n_walked,
    const char *const *whole_texts, size_t n_whole, bool *walk_switch)
{
	static int64_t want[N_MSG];
	uint64_t whole, walk;
	size_t n;

	for (size_t i = 0; i < n_walked; i++) {
		const char *text = walked_texts[i];

		n = mb_test_bm25_order(f->idx, text, want, MB_ARRAY_LEN(want));
		assert_true(n > 100);
		*walk_switch = false;
		assert_false(walked(f, text, want, n));
		whole = counted(f, &idx_rank_hits_read, text, want, n);
		*walk_switch = true;
		assert_true(walked(f, text, want, n));
		walk = counted(f, &idx_rank_hits_read, text, want, n);
		if (!(walk * 4 < whole * 3))
			fail_msg("%s: %llu rows' hits read walked, %llu whole", text,
			    (unsigned long long)walk, (unsigned long long)whole);
	}
	for (size_t i = 0; i < n_whole; i++) {
		n = mb_test_bm25_order(f->idx, whole_texts[i], want, MB_ARRAY_LEN(want));
		assert_true(n > 28);
		assert_false(walked(f, whole_texts[i], want, n));
	}
}

/* text read whole with *walk_switch false and walked with it true, its pages bm25()'s both ways. */
static void
expect_walked_with(struct mb_test_index *f, const char *text, bool *walk_switch)
{
	static int64_t want[N_MSG];
	size_t n = mb_test_bm25_order(f->idx, text, want, MB_ARRAY_LEN(want));

	*walk_switch = false;
	if (walked(f, text, want, n))
		fail_msg("%s: walked with the switch off", text);
	*walk_switch = true;
	if (!walked(f, text, want, n))
		fail_msg("%s: read whole", text);
}

/*
 * An OR of words is walked through its words' bounds (index_search_or.c):
 * of bounded words alone, and with words syncd does not bound, whose rows
 * are ranked first (gammaburst's best rows, uids 3 and 4, hold no gamma
 * and gamma too), reading fewer rows' hits than the full read, the pages
 * bm25()'s; beside an AND when every word is bounded.  Read whole: an OR
 * of no bounded word, one whose rarer words hold more than
 * idx_rank_or_rare_share of its rows, and one beside an AND with a word
 * without bounds.  (An OR with a phrase: phrases_are_walked_among_other_phrases.)
 */
static void
an_or_of_words_is_walked_through_its_bounds(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const walked_texts[] = { "alpha OR gamma", "gamma OR gammaburst",
	    "gammaburst OR beta OR epsilon" };
	static const char *const whole_texts[] = { "epsilon OR gammaburst",
	    "alpha OR gammaburst delta" };
	int64_t want[N_MSG];
	size_t n;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_walked_or_whole(f, walked_texts, MB_ARRAY_LEN(walked_texts), whole_texts,
	    MB_ARRAY_LEN(whole_texts), &idx_rank_or_walked);
	/* beside an AND, its words bounded: a block lacking alpha and beta, or gamma, holds none */
	expect_walked_with(f, "alpha OR beta gamma", &idx_rank_or_walked);
	/* gammaburst's rows are about a ninth of the OR's */
	idx_rank_or_rare_share = 5;
	n = mb_test_bm25_order(f->idx, "gamma OR gammaburst", want, MB_ARRAY_LEN(want));
	assert_false(walked(f, "gamma OR gammaburst", want, n));
	idx_rank_or_rare_share = 25;
}

/*
 * A phrase of several words is walked beside other phrases and words, an
 * OR's or an AND's, its block bound met from its words' fronts: "mailing
 * list" (every tenth message, all the rows of mailing and of list) OR
 * epsilon reads fewer rows' hits than the full read (a tenth here); OR
 * gamma, OR "alpha beta" and beside alpha are walked too; beside a word
 * without bounds its rows are ranked first (OR gammaburst); the pages and
 * totals bm25()'s.  Read whole when the phrase holds less of its rarest
 * bounded word's rows than idx_rank_phrase_tight ("gamma delta", a small
 * part of its words' rows): such a phrase's bound stays high and the walk
 * would read most blocks.
 */
static void
phrases_are_walked_among_other_phrases(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const walked_texts[] = { "\"mailing list\" OR epsilon" };
	static const char *const also_walked[] = { "\"mailing list\" OR gamma",
	    "\"mailing list\" OR \"alpha beta\"", "alpha \"mailing list\"",
	    "\"mailing list\" OR gammaburst" };
	static const char *const loose[] = { "\"gamma delta\" OR alpha" };
	int64_t want[N_MSG];
	size_t n;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_walked_or_whole(f, walked_texts, MB_ARRAY_LEN(walked_texts), loose,
	    MB_ARRAY_LEN(loose), &idx_rank_phrases_walked);
	for (size_t i = 0; i < MB_ARRAY_LEN(also_walked); i++)
		expect_walked_with(f, also_walked[i], &idx_rank_phrases_walked);
	/* the loose phrase walks when the rule allows it, the pages the same */
	idx_rank_phrase_tight = 0;
	n = mb_test_bm25_order(f->idx, loose[0], want, MB_ARRAY_LEN(want));
	assert_true(walked(f, loose[0], want, n));
	/* "mailing list" holds every row of its words: tight at 100%, not above */
	idx_rank_phrase_tight = 100;
	n = mb_test_bm25_order(f->idx, walked_texts[0], want, MB_ARRAY_LEN(want));
	assert_true(walked(f, walked_texts[0], want, n));
	idx_rank_phrase_tight = 101;
	assert_false(walked(f, walked_texts[0], want, n));
	idx_rank_phrase_tight = 30;
}

/*
 * A NOT (-word, -"a phrase") is walked through the bounds of the words
 * before it: the negated words add nothing to a match's score, and each
 * range's MATCH leaves their rows out (alpha -epsilon; an OR with rarer
 * words, whose statements keep the NOT; a phrase, "mailing list" in every
 * tenth message, whose positions FTS5 reads in each range), reading fewer
 * rows' hits than the full read; several words too; the pages bm25()'s.
 * Read whole: a NOT of more rows than half of those before it (beta -alpha).
 */
static void
a_not_is_walked_through_the_words_before_it(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const walked_texts[] = { "alpha -epsilon",
	    "gamma OR gammaburst -epsilon", "gamma -epsilon -zeta7", "alpha -\"mailing list\"" };
	static const char *const whole_texts[] = { "beta -alpha" };
	static const char *const also_walked[] = { "alpha beta -epsilon -zeta7",
	    "alpha OR gamma -\"mailing list\"", "alpha beta -\"mailing list\" -epsilon" };
	int64_t want[N_MSG];
	size_t n;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_walked_or_whole(f, walked_texts, MB_ARRAY_LEN(walked_texts), whole_texts,
	    MB_ARRAY_LEN(whole_texts), &idx_rank_not_walked);
	for (size_t i = 0; i < MB_ARRAY_LEN(also_walked); i++) {
		n = mb_test_bm25_order(f->idx, also_walked[i], want, MB_ARRAY_LEN(want));
		assert_true(walked(f, also_walked[i], want, n));
	}
}

/*
 * The total of several phrases, FTS5's count of every match (which the
 * walk does not read), is kept beside the query's statistics: the next
 * pages take it, a change to the full-text index counts it again, and
 * every total is exact.
 */
static void
a_total_of_several_phrases_is_kept(void **state)
{
	struct mb_test_index *f = *state;
	static const char *const texts[] = { "alpha OR gamma", "alpha beta", "alpha -epsilon" };
	int64_t want[N_MSG + 10];
	size_t before_n[MB_ARRAY_LEN(texts)];
	struct mb_err err = { 0 };
	uint64_t before;
	size_t n;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		n = before_n[i] = mb_test_bm25_order(f->idx, texts[i], want, MB_ARRAY_LEN(want));
		before = idx_rank_totals_counted;
		assert_true(walked(f, texts[i], want, n));	/* four pages */
		assert_int_equal(idx_rank_totals_counted - before, 1);
	}
	/* a new message matching each: counted again, one more */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	mb_test_put(f->idx, f->inbox, N_MSG + 1, &(struct mb_test_msg){
	    .subject = "alpha gamma", .body = "alpha beta", .date = T0 });
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		n = mb_test_bm25_order(f->idx, texts[i], want, MB_ARRAY_LEN(want));
		assert_int_equal(n, before_n[i] + 1);
		before = idx_rank_totals_counted;
		assert_true(walked(f, texts[i], want, n));
		assert_int_equal(idx_rank_totals_counted - before, 1);
	}
}

/*
 * Click and here: the best rows of the phrase "click here" are short, all
 * in the first block; after them, every block holds short rows of click
 * alone (three times) and long rows of here (thirteen times) with the
 * phrase once.  Each word alone bounds those blocks above the page's
 * floor (click's short rows, here's many hits); met, a long row holds at
 * most three of the phrase and a short row none, below the floor, so the
 * walk reads the first block and the newest ids (not bounded) only, with
 * one neighbour a side: a range's reach beyond that is what the floor
 * allows when it is read, and the newest ids, read first, leave it weak.
 * Same pages either way, and a third of the rows' hits read at most.
 */
static void
put_click_here(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char body[1024];

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		size_t n = 0;

		if (uid <= 40)
			n += (size_t)snprintf(body, sizeof(body), "click here click here f1 f2 f3");
		else if (uid % 2 == 0)
			n += (size_t)snprintf(body, sizeof(body), "click click click q%u q%u",
			    uid % 7, uid % 11);
		else {
			for (int i = 0; i < 13; i++)
				n += (size_t)snprintf(body + n, sizeof(body) - n, "here ");
			n += (size_t)snprintf(body + n, sizeof(body) - n, "click here");
			for (int i = 0; i < 90; i++)
				n += (size_t)snprintf(body + n, sizeof(body) - n, " w%u",
				    (uid + (uint32_t)i) % 400);
		}
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = "note",
		    .body = body, .date = T0 + (int64_t)uid * 60 });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

/*
 * The rows' hits read over the first pages of text (each page checked
 * against bm25()'s order) with *toggle false, then true; how many rows
 * match.
 */
static size_t
read_off_and_on(struct mb_test_index *f, const char *text, bool *toggle, uint64_t *off_r,
    uint64_t *on_r)
{
	static int64_t want[N_MSG];
	size_t n = mb_test_bm25_order(f->idx, text, want, MB_ARRAY_LEN(want));

	*toggle = false;
	*off_r = counted(f, &idx_rank_hits_read, text, want, n);
	*toggle = true;
	*on_r = counted(f, &idx_rank_hits_read, text, want, n);
	return n;
}

/* The click/here mail, its bounds built, walked a block a range (one neighbour a side). */
static void
put_click_here_bounded(struct mb_test_index *f)
{
	put_click_here(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	idx_rank_range_reach = 1;
}

/*
 * text searched with *toggle true reads fewer than a times'th of the rows'
 * hits it reads with it false, the pages bm25()'s both ways; how many rows
 * match.
 */
static size_t
expect_fewer_read(struct mb_test_index *f, const char *text, bool *toggle, uint64_t times)
{
	uint64_t off, on;
	size_t n = read_off_and_on(f, text, toggle, &off, &on);

	if (!(on * times < off))
		fail_msg("%s: %llu rows' hits read with the switch on, %llu off", text,
		    (unsigned long long)on, (unsigned long long)off);
	return n;
}

static void
a_phrase_is_bounded_by_its_words_met(void **state)
{
	struct mb_test_index *f = *state;
	uint64_t apart, met;

	put_click_here_bounded(f);
	assert_int_equal(expect_fewer_read(f, "\"click here\"", &idx_rank_phrase_met, 3),
	    40 + (N_MSG - 40) / 2);
	/* one word, and several words: bounded as before */
	for (int i = 0; i < 2; i++) {
		read_off_and_on(f, i == 0 ? "click" : "click here", &idx_rank_phrase_met, &apart,
		    &met);
		assert_int_equal(met, apart);
	}
	idx_rank_range_reach = RANK_CHUNK_BLOCKS;
}

/*
 * The same mail searched for the two words, not the phrase: a row holding
 * both has one length, so in every block after the first a long row's
 * click is at most the short rows' three clicks at that length, not at
 * theirs.  Each word's best on its own (click's short rows, here's many
 * hits in long ones) bounds those blocks above the floor of the first
 * block's short rows; summed at one length (rank_steps_sum_max), below
 * it.  An OR of the two likewise: a short row holds no here, a long one
 * little click.  Same pages either way, half the rows' hits read at most.
 */
static void
an_and_or_an_or_is_bounded_at_one_length(void **state)
{
	struct mb_test_index *f = *state;

	put_click_here_bounded(f);
	/* through FTS5: both words' hits are kept, and would be read from there */
	idx_common_used = false;
	assert_int_equal(expect_fewer_read(f, "click here", &idx_rank_one_length, 2),
	    40 + (N_MSG - 40) / 2);
	idx_common_used = true;
	expect_fewer_read(f, "click OR here", &idx_rank_one_length, 2);
	idx_rank_range_reach = RANK_CHUNK_BLOCKS;
}

/*
 * A row's rarest words are read first, and once they leave it below the
 * floor whatever its commoner words hold, those are not read: alpha (in
 * nine rows of ten, many hits each) in most rows of `alpha beta gamma`.
 * Read whole and walked, ANDs, ORs, NOTs, phrases: the pages are bm25()'s,
 * and rows are left early in each (fts_rank.c, rank_cut()); but not in an
 * OR of words walked, whose statements read one word each (rank_row_parts).
 */
static void
a_row_is_left_before_its_common_words(void **state)
{
	struct mb_test_index *f = *state;
	static const struct {
		const char	*text;
		bool		walked_left;	/* walked, some row is left early too */
	} texts[] = {
		{ "alpha beta gamma", true }, { "alpha delta", true }, { "alpha beta delta", true },
		{ "alpha beta -epsilon", true }, { "\"mailing list\" alpha", true },
		{ "gamma alpha OR delta", true }, { "subject:gamma alpha", true },
		{ "alpha OR delta", false },
	};
	static int64_t want[N_MSG];

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	for (int walked = 0; walked < 2; walked++) {
		idx_rank_words_walked = idx_rank_or_walked = walked;
		idx_rank_not_walked = idx_rank_phrases_walked = walked;
		for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
			const char *text = texts[i].text;
			size_t n = mb_test_bm25_order(f->idx, text, want, MB_ARRAY_LEN(want));
			uint64_t left;

			if (n <= 20)
				fail_msg("%s: %zu matches", text, n);
			left = counted(f, &idx_rank_cut, text, want, n);
			if (left == 0 && (!walked || texts[i].walked_left))
				fail_msg("%s (%s): no row left early", text,
				    walked ? "walked" : "read whole");
		}
	}
	idx_rank_words_walked = idx_rank_or_walked = true;
	idx_rank_not_walked = idx_rank_phrases_walked = true;
}

/*
 * Mail where `please` is frequent: porter stems it to `pleas`, and `pleas`
 * to `plea`, so the index word is not what its own text stems to.
 */
static void
put_please(struct mb_test_index *f)
{
	struct mb_err err = { 0 };
	char body[900];
	uint32_t seed = 7;

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		size_t len = 0;

		/*
		 * in a third of the bounded ids once in a long body, none of the
		 * newest; among the first ids many times in short ones
		 */
		bool strong = uid < 400 && uid % 7 == 0;

		for (unsigned k = strong ? 3 : 20 + next_rand(&seed) % 40; k > 0; k--)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "filler%u ",
			    next_rand(&seed) % 300);
		for (unsigned k = strong ? 8 : uid % 3 == 0 && uid < 2 * RANK_CHUNK_IDS; k > 0; k--)
			len += (size_t)snprintf(body + len, sizeof(body) - len, "please ");
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = "note",
		    .body = body, .date = T0 + (int64_t)uid * 60 });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

/*
 * Whether the first four pages of a search of text (counted()) walked its
 * blocks and read the hits of fewer rows than two of its n matches a page
 * (read whole, each page reads them all).
 */
static bool
walked_fewer(struct mb_test_index *f, const char *text, const int64_t *want, size_t n)
{
	uint64_t walks = idx_rank_walks, hits = counted(f, &idx_rank_hits_read, text, want, n);

	return idx_rank_walks > walks && hits < 2 * n;
}

/*
 * A frequent word whose stem porter stems again is bounded as the index
 * holds it (the builder matches the word itself: mb_fts_raw_term), so
 * `please` is walked; and a choice of terms bounds each in the chunks
 * built before that lack it (as migration 0030 has an older index choose
 * again), each at its chunk's generation.  Pages are bm25()'s.
 */
static void
a_word_stemmed_twice_is_bounded(void **state)
{
	struct mb_test_index *f = *state;
	static int64_t want[N_MSG + 300];
	struct mb_err err = { 0 };
	size_t n;

	put_please(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_terms "
	    "WHERE term = 'pleas'"), 1);
	n = mb_test_bm25_order(f->idx, "please", want, MB_ARRAY_LEN(want));
	assert_true(n > 1000);
	assert_true(walked_fewer(f, "please", want, n));

	/* the second chunk built again: its generation is not the first's */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE rank_chunks SET blocks = 0 "
	    "WHERE chunk = 1", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(mb_test_rank_build(f), 1);
	/* an older choice, without it: read whole; chosen again: bounded in both chunks */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DELETE FROM rank_terms WHERE "
	    "term = 'pleas'; DELETE FROM rank_bounds WHERE term = 'pleas'; "
	    "UPDATE rank_state SET terms_rows = 0", NULL, NULL, NULL), SQLITE_OK);
	assert_false(walked_fewer(f, "please", want, n));
	assert_int_equal(mb_test_rank_build(f), 0);	/* no chunk built again */
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_bounds AS b "
	    "JOIN rank_chunks AS c ON c.chunk = b.chunk AND c.gen = b.gen "
	    "WHERE b.term = 'pleas' AND b.docs > 0"), 2);
	assert_true(walked_fewer(f, "please", want, n));
	/* a term chosen before but missing in one chunk (built before it was chosen) */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DELETE FROM rank_bounds WHERE "
	    "term = 'pleas' AND chunk = 0; UPDATE rank_state SET terms_rows = 0", NULL, NULL,
	    NULL), SQLITE_OK);
	assert_int_equal(mb_test_rank_build(f), 0);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_bounds AS b "
	    "JOIN rank_chunks AS c ON c.chunk = b.chunk AND c.gen = b.gen "
	    "WHERE b.term = 'pleas' AND b.docs > 0"), 2);

	/* newer mail, not bounded yet: its rows counted by FTS5 for the total and the IDF */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = N_MSG + 1; uid <= N_MSG + 300; uid++)
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = "note",
		    .body = uid % 2 ? "please filler7" : "filler7 filler8", .date = T0 });
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	n = mb_test_bm25_order(f->idx, "please", want, MB_ARRAY_LEN(want));
	counted(f, &idx_rank_hits_read, "please", want, n);
	n = mb_test_bm25_order(f->idx, "please OR filler7", want, MB_ARRAY_LEN(want));
	counted(f, &idx_rank_hits_read, "please OR filler7", want, n);
}

/* Pages of text at 1, 7 and 50 a page are bm25()'s, read from kept hits (read: > 0). */
static void
read_from_hits(struct mb_test_index *f, const char *text, bool read)
{
	static int64_t want[N_MSG + 10];
	size_t n = mb_test_bm25_order(f->idx, text, want, MB_ARRAY_LEN(want));
	uint64_t before = idx_common_reads;

	if (n <= 50)
		fail_msg("%s: %zu matches", text, n);
	expect_exact(f, text, want, n, 1, 3);
	expect_exact(f, text, want, n, 7, 28);
	expect_exact(f, text, want, n, 50, 150);
	(void)counted_scores_exact(f, text);
	if ((idx_common_reads > before) != read)
		fail_msg("%s: %s its kept hits", text, read ? "not read through" : "read through");
}

/*
 * Words every match holds, some in most rows (alpha, in nine rows of ten),
 * read whole or walked: syncd keeps each row's hits of a word in two
 * fifths of the rows by chunk (rank_bounds.hits; not beta's, just below),
 * and such a search reads them there instead of stepping through their
 * doclists in FTS5; the newest ids and a chunk changed since are read
 * whole.  Pages, totals and scores are
 * bm25()'s; a row with more hits than a byte holds takes its count from
 * the blob's tail.  Without a kept word, or with idx_common_used off, read
 * as before; a malformed blob, or one of an older build, is not trusted.
 */
static void
words_most_messages_hold_are_read_from_their_hits(void **state)
{
	static const char *const texts[] = { "alpha gamma", "delta alpha beta",
	    "alpha beta gamma", "alpha delta", "alpha filler7", "alpha zeta" };
	struct mb_test_index *f = *state;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_bounds "
	    "WHERE term = 'alpha' AND length(hits) >= 2048"), 2);
	assert_int_equal(mb_test_index_int(f, "SELECT count(hits) FROM rank_bounds "
	    "WHERE term = 'gamma'"), 0);
	idx_rank_words_walked = false;	/* else the block walk takes most of them */
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++)
		read_from_hits(f, texts[i], true);
	read_from_hits(f, "beta gamma", false);	/* no word's hits kept */
	idx_common_used = false;
	read_from_hits(f, "alpha gamma", false);
	idx_common_used = true;
	/* walked, each range reads them too */
	idx_rank_words_walked = true;
	for (int i = 0; i < 2; i++) {
		uint64_t walks = idx_rank_walks;

		read_from_hits(f, i == 0 ? "alpha gamma" : "beta alpha", true);
		assert_true(idx_rank_walks > walks);
	}
	idx_rank_words_walked = false;

	/*
	 * a row of chunk 1 changed: alpha 30 times in its subject, 300 hits,
	 * and gamma 10 times, the first page's (whose scores are checked)
	 */
	mb_test_put(f->idx, f->inbox, 3000, &(struct mb_test_msg){ .subject =
	    "alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha "
	    "alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha "
	    "alpha alpha alpha alpha gamma gamma gamma gamma gamma gamma gamma gamma gamma "
	    "gamma", .body = "gamma", .date = T0 });
	read_from_hits(f, "alpha gamma", true);		/* chunk 1 read whole */
	assert_int_equal(mb_test_rank_build(f), 1);
	assert_int_equal(mb_test_index_int(f, "SELECT length(hits) FROM rank_bounds "
	    "WHERE term = 'alpha' AND chunk = 1"), 2048 + 6);
	read_from_hits(f, "alpha gamma", true);
	read_from_hits(f, "alpha beta gamma", true);

	/* a blob cut short, or another build's: that chunk read whole, the same pages */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE rank_bounds SET hits = "
	    "substr(hits, 1, 2048) WHERE term = 'alpha' AND chunk = 1", NULL, NULL, NULL),
	    SQLITE_OK);
	read_from_hits(f, "alpha gamma", true);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE rank_bounds SET gen = gen - 1 "
	    "WHERE term = 'alpha'", NULL, NULL, NULL), SQLITE_OK);
	read_from_hits(f, "alpha gamma", false);	/* no chunk has alpha's hits */

	/* an index from before migration 0031: the next choice of terms keeps the hits */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "UPDATE rank_bounds SET gen = gen + 1 "
	    "WHERE term = 'alpha'; UPDATE rank_bounds SET hits = NULL; "
	    "UPDATE rank_state SET terms_rows = 0", NULL, NULL, NULL), SQLITE_OK);
	read_from_hits(f, "alpha gamma", false);
	assert_int_equal(mb_test_rank_build(f), 0);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_bounds AS b "
	    "JOIN rank_chunks AS c ON c.chunk = b.chunk AND c.gen = b.gen "
	    "WHERE b.term = 'alpha' AND length(b.hits) >= 2048"), 2);
	read_from_hits(f, "alpha gamma", true);
	idx_rank_words_walked = true;
}

/*
 * Rows for words in most of them alone: omega (four in five), sigma (three
 * in four) and kappa (two in three), 1 to 4 times, an eighth of them in the
 * subject, among fillers; row 1500 holds omega 30 times in its subject (300
 * hits, more than a byte holds).
 */
static void
put_kept_words(struct mb_test_index *f)
{
	static const char *const words_kept[] = { "omega", "sigma", "kappa" };
	static const unsigned in_mille[] = { 800, 750, 660 };
	char *body = mb_xcalloc(1, 4000), *subject = mb_xcalloc(1, 200);
	struct mb_err err = { 0 };
	uint32_t seed = 7;

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++) {
		size_t blen = 0, slen = 0;

		body[0] = subject[0] = '\0';
		for (size_t w = 0; w < MB_ARRAY_LEN(words_kept); w++) {
			if (next_rand(&seed) % 1000 >= in_mille[w])
				continue;
			for (unsigned r = 1 + next_rand(&seed) % 4; r > 0; r--)
				if (next_rand(&seed) % 8 == 0)
					slen += (size_t)snprintf(subject + slen, 200 - slen, "%s ",
					    words_kept[w]);
				else
					blen += (size_t)snprintf(body + blen, 4000 - blen, "%s ",
					    words_kept[w]);
		}
		for (unsigned k = next_rand(&seed) % 60; k > 0; k--)
			blen += (size_t)snprintf(body + blen, 4000 - blen, "filler%u ",
			    next_rand(&seed) % 500);
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = uid == 1500 ?
		    "omega omega omega omega omega omega omega omega omega omega omega omega "
		    "omega omega omega omega omega omega omega omega omega omega omega omega "
		    "omega omega omega omega omega omega sigma kappa" : subject,
		    .body = body, .date = T0 });
	}
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	free(body);
	free(subject);
}

/*
 * A query of words whose hits syncd keeps, and nothing else (`the of and
 * to`), read whole or walked: no statement is run for the chunks that
 * have their hits; each row holding every word is scored from the bytes at
 * its kept length, which is bm25()'s score.  A row whose length is not
 * kept is scored by FTS5, and the newest ids are read whole.  Pages,
 * totals and scores are bm25()'s.
 */
static void
words_most_messages_hold_alone_are_scored_from_their_hits(void **state)
{
	static const char *const texts[] = { "omega sigma", "kappa omega",
	    "omega sigma kappa" };
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	uint64_t rows;

	put_kept_words(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_bounds WHERE term IN "
	    "('omega', 'sigma', 'kappa') AND length(hits) >= 2048"), 6);
	idx_rank_words_walked = false;	/* else the block walk takes them */
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		rows = idx_common_bytes_rows;
		read_from_hits(f, texts[i], true);
		assert_true(idx_common_bytes_rows > rows);
	}
	idx_common_used = false;
	read_from_hits(f, "omega sigma", false);
	idx_common_used = true;
	/* walked: each range whose chunks have the hits from the bytes too */
	idx_rank_words_walked = true;
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++) {
		uint64_t walks = idx_rank_walks;

		rows = idx_common_bytes_rows;
		read_from_hits(f, texts[i], true);
		assert_true(idx_rank_walks > walks);
		assert_true(idx_common_bytes_rows > rows);
	}
	idx_rank_words_walked = false;

	/* a block's lengths not kept: its rows scored by FTS5, the same pages */
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DELETE FROM rank_lengths "
	    "WHERE block = 1500 / 128", NULL, NULL, NULL), SQLITE_OK);
	read_from_hits(f, "omega sigma kappa", true);

	/* newer mail, not built yet: read whole */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = N_MSG + 1; uid <= N_MSG + 300; uid++)
		mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = "sigma",
		    .body = uid % 2 ? "omega kappa" : "omega", .date = T0 });
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	read_from_hits(f, "omega sigma", true);
	read_from_hits(f, "omega sigma kappa", true);
	idx_rank_words_walked = true;
}

int
main(void)
{
	/* the fixture's words and prefixes match hundreds of rows: walk them all the same */
	idx_rank_prefix_min_matches = 0;
	idx_rank_prefix_min_share = 0;
	idx_rank_min_matches = 0;
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(pages_with_bounds_are_bm25s),
		MB_TEST_INDEX(pages_without_bounds_are_bm25s),
		MB_TEST_INDEX(neighbouring_chunks_are_bounded_as_each_alone),
		MB_TEST_INDEX(a_prefix_is_walked_through_its_words),
		MB_TEST_INDEX(a_prefix_share_scales_with_the_index),
		MB_TEST_INDEX(few_matches_are_read_whole),
		MB_TEST_INDEX(an_or_of_words_is_walked_through_its_bounds),
		MB_TEST_INDEX(phrases_are_walked_among_other_phrases),
		MB_TEST_INDEX(a_not_is_walked_through_the_words_before_it),
		MB_TEST_INDEX(a_total_of_several_phrases_is_kept),
		MB_TEST_INDEX(a_read_whole_takes_lengths_from_the_fronts),
		MB_TEST_INDEX(a_row_is_left_before_its_common_words),
		MB_TEST_INDEX(a_word_stemmed_twice_is_bounded),
		MB_TEST_INDEX(words_most_messages_hold_are_read_from_their_hits),
		MB_TEST_INDEX(words_most_messages_hold_alone_are_scored_from_their_hits),
		MB_TEST_INDEX(a_phrase_is_bounded_by_its_words_met),
		MB_TEST_INDEX(an_and_or_an_or_is_bounded_at_one_length),
		MB_TEST_INDEX(a_walk_that_gives_up_lends_its_bounds_to_the_whole_read),
		MB_TEST_INDEX(a_narrow_date_range_reads_only_its_ids),
		MB_TEST_INDEX(a_small_folder_reads_only_its_ids),
		MB_TEST_INDEX(a_few_flagged_unread_or_labelled_read_only_their_ids),
		MB_TEST_INDEX(few_answered_messages_read_only_their_ids),
		MB_TEST_INDEX(few_drafts_read_only_their_ids),
		MB_TEST_INDEX(few_attachments_read_only_their_ids),
		MB_TEST_INDEX(few_large_messages_read_only_their_ids),
		MB_TEST_INDEX(few_list_messages_read_only_their_ids),
		MB_TEST_INDEX(two_wide_filters_that_meet_make_the_scope),
		MB_TEST_INDEX(a_walk_that_gave_up_reads_its_scope_ids),
		MB_TEST_INDEX(a_walk_that_gave_up_reads_a_wide_scope_ids),
		MB_TEST_INDEX(a_flag_without_its_index_joins_every_match),
		MB_TEST_INDEX(a_scope_in_runs_reads_only_its_runs),
		MB_TEST_INDEX(a_wide_folder_reads_only_its_runs),
		MB_TEST_INDEX(a_range_takes_few_neighbours_on_a_weak_floor),
		MB_TEST_INDEX(a_walk_finishes_in_ranges_or_one_statement),
		MB_TEST_INDEX(a_thread_beside_a_prefix_is_read_once),
		MB_TEST_INDEX(a_filter_few_pass_is_read_through_its_ids),
		MB_TEST_INDEX(bounded_words_are_counted_by_chunk),
		MB_TEST_INDEX(a_prefix_beside_filters_is_walked),
		MB_TEST_INDEX(a_prefix_is_counted_through_its_words),
		MB_TEST_INDEX(deletions_after_bounds_keep_pages_exact),
		MB_TEST_INDEX(a_changed_row_is_found_in_a_bounded_block),
		MB_TEST_INDEX(a_reused_id_in_a_bounded_block_is_found),
		MB_TEST_INDEX(merged_into_one_segment_pages_stay_exact),
		MB_TEST_INDEX(a_merge_is_due_after_a_quarter_more),
		MB_TEST_INDEX(a_merge_gives_the_freed_pages_back),
		MB_TEST_INDEX(an_older_index_merges_and_keeps_its_free_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
