/*
 * The search engine (mailbox/search.h) without HTTP: ranking (subject over
 * body), ties newest first then by id on every page, the structured
 * filters and their errors, paging, snippets (the excerpt, FTS5's snippet()
 * for stemmed words, the body's start for filters alone, a filtered page's
 * read a hit at a time when its words have many matches), the ranking exact
 * over every match of a frequent word (against FTS5's own bm25()), a row's
 * length read only when the row could still reach the page, CJK
 * words, and the cursor hash.  Each test builds a small
 * index with mb_index_upsert (support_index.c) and reads it read-only, as
 * mcpd does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/read.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/index-private.h"
#include "../../libmailbox/core/rank-private.h"
#include "../../libmailbox/core/search-private.h"

#define DAY	86400
#define T0	1700000000	/* 2023-11-14T22:13:20Z */

struct fx {
	char		 dir[64];
	char		 path[96];
	struct mb_index	*rw;
	struct mb_index	*ro;
	int64_t		 inbox, archive;
};

static int
setup(void **state)
{
	struct fx *f = mb_xcalloc(1, sizeof(*f));
	struct mb_err err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_index_search.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/index.db", f->dir);
	if (mb_index_open(f->path, MB_INDEX_RW, &f->rw, &err) == -1 ||
	    mb_index_folder_ensure(f->rw, "INBOX", NULL, &f->inbox, &err) == -1 ||
	    mb_index_folder_ensure(f->rw, "Archive", NULL, &f->archive, &err) == -1)
		fail_msg("index: %s", err.msg);
	mb_test_folder_examined(f->rw, "INBOX");
	mb_test_folder_examined(f->rw, "Archive");
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	mb_index_close(&f->ro);
	mb_index_close(&f->rw);
	mb_test_rmtree(f->dir);
	free(f);
	return 0;
}

/* The reader's handle, opened once the test's mail is in. */
static struct mb_index *
reader(struct fx *f)
{
	struct mb_err err = { 0 };

	if (f->ro == NULL && mb_index_open(f->path, MB_INDEX_RO, &f->ro, &err) == -1)
		fail_msg("open read-only: %s", err.msg);
	return f->ro;
}

/* Compile text and narrow it by filt (may be NULL); fails the test on an error. */
static void
compile(struct mb_query *q, const char *text, const struct mb_search_filters *filt)
{
	struct mb_err err = { 0 };

	mb_query_init(q);
	if (mb_query_compile(text, strlen(text), q, &err) == -1 ||
	    (filt != NULL && mb_search_narrow(q, filt, &err) == -1))
		fail_msg("query \"%s\": %s", text, err.msg);
}

/* One page of text (narrowed by filt) at offset; fails the test on an error. */
static void
page_of(struct fx *f, const char *text, const struct mb_search_filters *filt, int64_t offset,
    size_t limit, struct mb_search_page *pg)
{
	struct mb_query q;
	struct mb_err err = { 0 };

	compile(&q, text, filt);
	if (mb_search_run(reader(f), &q, offset, limit, pg, &err) == -1)
		fail_msg("search \"%s\": %s", text, err.msg);
	mb_query_release(&q);
}

/* The ids of every page of text at limit, following next_offset. */
static size_t
all_ids(struct fx *f, const char *text, const struct mb_search_filters *filt, size_t limit,
    int64_t *ids, size_t max)
{
	struct mb_search_page pg;
	int64_t offset = 0;
	size_t n = 0;
	bool more;

	do {
		page_of(f, text, filt, offset, limit, &pg);
		assert_true(pg.n <= limit);
		for (size_t i = 0; i < pg.n; i++) {
			assert_true(n < max);
			ids[n++] = pg.hits[i].id;
		}
		more = pg.more;
		assert_true(!more || pg.n == limit);	/* only the last page is short */
		assert_int_equal(pg.next_offset, offset + (int64_t)pg.n);
		offset = pg.next_offset;
		mb_search_page_release(&pg);
	} while (more);
	return n;
}

static void
expect_ids(struct fx *f, const char *text, const struct mb_search_filters *filt,
    const int64_t *want, size_t n_want)
{
	int64_t ids[64];
	size_t n = all_ids(f, text, filt, MB_SEARCH_MAX_LIMIT, ids, MB_ARRAY_LEN(ids));

	if (n != n_want)
		fail_msg("\"%s\": %zu hits, want %zu", text, n, n_want);
	for (size_t i = 0; i < n; i++)
		if (ids[i] != want[i])
			fail_msg("\"%s\": position %zu is id %lld, want %lld", text, i,
			    (long long)ids[i], (long long)want[i]);
}

static void
put(struct fx *f, int64_t folder, uint32_t uid, const struct mb_test_msg *t)
{
	mb_test_put(f->rw, folder, uid, t);
}

/* ---- ranking */

static void
subject_outranks_body_and_hits_carry_the_row(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	const struct mb_search_hit *h;

	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "lunch", .date = T0 + 2 * DAY,
	    .body = "the budget is attached somewhere below" });
	put(f, f->inbox, 2, &(struct mb_test_msg){ .subject = "budget for 2024", .date = T0,
	    .body = "numbers", .from = "carol@example.org", .flags = MB_FLAG_SEEN });
	page_of(f, "budget", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 2);
	assert_false(pg.more);
	h = &pg.hits[0];
	assert_int_equal(h->id, 2);	/* the subject match, though older */
	assert_string_equal(h->folder, "INBOX");
	assert_string_equal(h->subject, "budget for 2024");
	assert_non_null(strstr(h->from, "carol@example.org"));
	assert_true(h->has_date);
	assert_int_equal(h->date, T0);
	assert_int_equal(h->flags, MB_FLAG_SEEN);
	assert_int_equal(h->attachment_count, 0);
	assert_true(h->thread_id > 0);
	assert_int_equal(pg.hits[1].id, 1);
	mb_search_page_release(&pg);
	assert_null(pg.hits);
	assert_int_equal(pg.n, 0);
}

/*
 * Equal scores come newest first, undated last, then by id, highest first,
 * on every page: the engine sorts the scores itself and reads dates only
 * for ties, so the order at each page boundary is checked.
 */
static void
ties_are_newest_first_then_highest_id_on_every_page(void **state)
{
	/* ids 1..9 in insert order; the same text scores the same */
	static const struct { const char *subject; int64_t date; } msgs[] = {
		{ "note", 1700000000 }, { "note", 1700000300 }, { "note", 0 },
		{ "zebra note", 1600000000 }, { "note", 1700000300 }, { "note", 1700000100 },
		{ "note", 0 }, { "note", 1700000300 }, { "note", 1700000200 },
	};
	static const int64_t want[] = { 4, 8, 5, 2, 9, 6, 1, 7, 3 };
	struct fx *f = *state;
	int64_t ids[32];
	size_t n;

	for (size_t i = 0; i < MB_ARRAY_LEN(msgs); i++)
		put(f, f->inbox, (uint32_t)i + 1, &(struct mb_test_msg){
		    .subject = msgs[i].subject, .body = "zebra crossing", .date = msgs[i].date });
	for (size_t limit = 1; limit <= 9; limit++) {
		n = all_ids(f, "zebra", NULL, limit, ids, MB_ARRAY_LEN(ids));
		assert_int_equal(n, MB_ARRAY_LEN(want));
		for (size_t i = 0; i < n; i++)
			if (ids[i] != want[i])
				fail_msg("limit %zu: position %zu is id %lld, want %lld", limit, i,
				    (long long)ids[i], (long long)want[i]);
	}
	/* with a filter the dates come from the same statement: the same order */
	n = all_ids(f, "zebra", &(struct mb_search_filters){ .folder = "INBOX" }, 2, ids,
	    MB_ARRAY_LEN(ids));
	assert_int_equal(n, MB_ARRAY_LEN(want));
	assert_memory_equal(ids, want, sizeof(want));
}

/*
 * A frequent word (600 messages, more than the 500 the engine once ranked):
 * every match is one of n, uid i dated T0 + i.  The best match is the
 * oldest: the word twice in a short subject and once in a short body.
 * Every seventh message has the word in its subject too, so many compete.
 */
#define KAYAKS	600
static void
put_kayaks(struct fx *f)
{
	struct mb_err err = { 0 };
	char subject[64];

	assert_int_equal(mb_index_begin(f->rw, &err), 0);
	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "kayak kayak",
	    .body = "kayak", .date = T0 + 1 });
	for (uint32_t i = 2; i <= KAYAKS; i++) {
		snprintf(subject, sizeof(subject), "%s trip report number %u",
		    i % 7 == 0 ? "kayak" : "paddle", i);
		put(f, f->inbox, i, &(struct mb_test_msg){ .subject = subject,
		    .body = i % 3 ? "a kayak trip along the coast with friends" :
		    "notes from the kayak club meeting, kayak storage and the boat shed",
		    .date = T0 + i });
	}
	assert_int_equal(mb_index_commit(f->rw, &err), 0);
}

/* The best match is on the first page, however many newer matches there are. */
static void
the_best_match_is_first_however_old(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	int64_t want[KAYAKS];

	put_kayaks(f);
	assert_int_equal(mb_test_bm25_order(f->rw, "kayak", want, KAYAKS), KAYAKS);
	assert_int_equal(want[0], 1);	/* the fixture is what it says */
	page_of(f, "kayak", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 20);
	assert_true(pg.more);
	for (size_t i = 0; i < pg.n; i++)
		if (pg.hits[i].id != want[i])
			fail_msg("position %zu is id %lld, want %lld", i,
			    (long long)pg.hits[i].id, (long long)want[i]);
	/* every match was ranked, so the total is exact */
	assert_int_equal(pg.total, KAYAKS);
	assert_true(pg.total_exact);
	mb_search_page_release(&pg);
	/* with a filter the engine joins messages: the same order */
	page_of(f, "kayak", &(struct mb_search_filters){ .folder = "INBOX" }, 0, 20, &pg);
	assert_int_equal(pg.n, 20);
	for (size_t i = 0; i < pg.n; i++)
		assert_int_equal(pg.hits[i].id, want[i]);
	mb_search_page_release(&pg);
}

/*
 * The ranked walk reads a row's length (a lookup of its own) only when the
 * row could still reach the page.  A row whose hits lie at token 400 of its
 * body holds 401 tokens at least, and at that length its score cannot reach
 * the page's; at length 0 it could, so the length was read for every one.
 * The page is still FTS5's own order.
 */
static void
a_match_deep_in_a_long_body_is_not_measured(void **state)
{
	struct fx *f = *state;
	struct mb_buf body = MB_BUF_INIT(8192);
	struct mb_search_page pg;
	struct mb_err err = { 0 };
	char subject[32];
	int64_t want[201];
	uint64_t sized;
	uint32_t uid = 1;

	assert_int_equal(mb_index_begin(f->rw, &err), 0);
	put(f, f->inbox, uid++, &(struct mb_test_msg){ .subject = "report",
	    .body = "otter otter otter and a few words", .date = T0 });
	for (unsigned i = 0; i < 400; i++)
		mb_buf_addf(&body, "filler%u ", i % 50);
	mb_buf_addf(&body, "otter otter otter");
	for (unsigned i = 0; i < 200; i++) {
		snprintf(subject, sizeof(subject), "notes %u", i);
		put(f, f->inbox, uid++, &(struct mb_test_msg){ .subject = subject,
		    .body = body.data, .date = T0 + DAY });
	}
	for (unsigned i = 0; i < 300; i++) {	/* so that the word is in under half */
		snprintf(subject, sizeof(subject), "other %u", i);
		put(f, f->inbox, uid++, &(struct mb_test_msg){ .subject = subject,
		    .body = "nothing to see", .date = T0 + DAY });
	}
	assert_int_equal(mb_index_commit(f->rw, &err), 0);
	mb_buf_release(&body);

	assert_int_equal(mb_test_bm25_order(f->rw, "otter", want, 201), 201);
	assert_int_equal(want[0], 1);	/* the fixture is what it says */
	page_of(f, "otter", NULL, 0, 1, &pg);	/* the statistics, computed once */
	mb_search_page_release(&pg);
	sized = idx_rank_sized;
	page_of(f, "otter", NULL, 0, 1, &pg);
	sized = idx_rank_sized - sized;
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.hits[0].id, want[0]);
	assert_int_equal(pg.total, 201);	/* every match counted all the same */
	mb_search_page_release(&pg);
	if (sized > 10)
		fail_msg("the length of %llu of 201 matches was read",
		    (unsigned long long)sized);
}

/*
 * Paging by next_offset through a frequent word gives every match exactly
 * once, in the promised order, at any page size.
 */
static void
pages_of_a_frequent_word_hold_every_match_once(void **state)
{
	static const size_t limits[] = { 1, 7, 20, MB_SEARCH_MAX_LIMIT };
	struct fx *f = *state;
	int64_t want[KAYAKS], got[KAYAKS];
	size_t n_want;

	put_kayaks(f);
	n_want = mb_test_bm25_order(f->rw, "kayak", want, KAYAKS);
	assert_int_equal(n_want, KAYAKS);
	for (size_t l = 0; l < MB_ARRAY_LEN(limits); l++) {
		size_t n = all_ids(f, "kayak", NULL, limits[l], got, KAYAKS);

		assert_int_equal(n, n_want);
		for (size_t i = 0; i < n; i++)
			if (got[i] != want[i])
				fail_msg("limit %zu: position %zu is id %lld, want %lld",
				    limits[l], i, (long long)got[i], (long long)want[i]);
	}
	/* a rarer word of the same mail: the same promise */
	n_want = mb_test_bm25_order(f->rw, "meeting", want, KAYAKS);
	assert_int_equal(all_ids(f, "meeting", NULL, 13, got, KAYAKS), n_want);
	assert_memory_equal(got, want, n_want * sizeof(want[0]));
}

/* ---- filters */

static void
structured_filters_narrow_the_query(void **state)
{
	struct fx *f = *state;
	struct mb_search_filters filt = { 0 };

	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "invoice march", .date = T0,
	    .body = "pay", .from = "billing@acme.example" });
	put(f, f->inbox, 2, &(struct mb_test_msg){ .subject = "invoice april",
	    .date = T0 + DAY, .body = "pay", .from = "bob@example.org", .flags = MB_FLAG_SEEN });
	put(f, f->archive, 1, &(struct mb_test_msg){ .subject = "invoice may",
	    .date = T0 + 2 * DAY, .body = "pay", .from = "billing@acme.example" });
	put(f, f->archive, 2, &(struct mb_test_msg){ .subject = "old invoice",
	    .body = "pay", .from = "billing@acme.example" });

	expect_ids(f, "invoice", NULL, (const int64_t[]){ 3, 2, 1, 4 }, 4);
	filt = (struct mb_search_filters){ .folder = "Archive" };
	expect_ids(f, "invoice", &filt, (const int64_t[]){ 3, 4 }, 2);
	filt = (struct mb_search_filters){ .from = "acme" };
	expect_ids(f, "invoice", &filt, (const int64_t[]){ 3, 1, 4 }, 3);
	/* the structured from finds what from: in the query text finds */
	expect_ids(f, "invoice from:acme", NULL, (const int64_t[]){ 3, 1, 4 }, 3);
	expect_ids(f, "", &filt, (const int64_t[]){ 3, 1, 4 }, 3);
	/* a '"' in it separates words; it cannot end the phrase early */
	filt = (struct mb_search_filters){ .from = "billing\"acme" };
	expect_ids(f, "invoice", &filt, (const int64_t[]){ 3, 1, 4 }, 3);
	/* since and until are whole days, both inclusive; undated mail never matches */
	filt = (struct mb_search_filters){ .since = "2023-11-15" };
	expect_ids(f, "invoice", &filt, (const int64_t[]){ 3, 2 }, 2);
	filt = (struct mb_search_filters){ .until = "2023-11-15" };
	expect_ids(f, "invoice", &filt, (const int64_t[]){ 2, 1 }, 2);
	filt = (struct mb_search_filters){ .since = "2023-11-15", .until = "2023-11-15" };
	expect_ids(f, "invoice", &filt, (const int64_t[]){ 2 }, 1);
	/* flags from the query text, and filters alone: newest first */
	expect_ids(f, "invoice is:unread", NULL, (const int64_t[]){ 3, 1, 4 }, 3);
	expect_ids(f, "is:read", NULL, (const int64_t[]){ 2 }, 1);
	expect_ids(f, "folder:INBOX", NULL, (const int64_t[]){ 2, 1 }, 2);
	filt = (struct mb_search_filters){ .since = "2023-11-14" };
	expect_ids(f, "", &filt, (const int64_t[]){ 3, 2, 1 }, 3);
	/* the same folder twice is one filter */
	filt = (struct mb_search_filters){ .folder = "INBOX" };
	expect_ids(f, "folder:INBOX invoice", &filt, (const int64_t[]){ 2, 1 }, 2);
}

static void
bad_filters_say_what_to_change(void **state)
{
	static const struct {
		const char *text;
		struct mb_search_filters f;
		const char *says;
	} cases[] = {
		{ "folder:INBOX x", { .folder = "Archive" }, "the folder argument and folder:" },
		{ "x", { .since = "2024-02-30" }, "since must be a date written YYYY-MM-DD" },
		{ "x", { .until = "yesterday" }, "until must be a date written YYYY-MM-DD" },
		{ "x", { .from = "!!! ..." }, "from must contain a name or an address" },
	};
	struct fx *f = *state;
	char long_from[1100];

	(void)f;
	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		struct mb_query q;
		struct mb_err err = { 0 };

		compile(&q, cases[i].text, NULL);
		assert_int_equal(mb_search_narrow(&q, &cases[i].f, &err), -1);
		assert_int_equal(err.code, MB_E_INVALID);
		if (strstr(err.msg, cases[i].says) == NULL)
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, cases[i].says);
		mb_query_release(&q);
	}
	memset(long_from, 'a', sizeof(long_from) - 1);
	long_from[sizeof(long_from) - 1] = '\0';
	{
		struct mb_query q;
		struct mb_err err = { 0 };

		compile(&q, "x", NULL);
		assert_int_equal(mb_search_narrow(&q, &(struct mb_search_filters){
		    .from = long_from }, &err), -1);
		assert_non_null(strstr(err.msg, "too long"));
		assert_string_equal(q.match, "\"x\"");	/* unchanged */
		mb_query_release(&q);
	}
}

static void
unknown_folder_and_bad_limits_are_errors(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };

	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "x", .body = "y" });
	compile(&q, "folder:Nowhere y", NULL);
	assert_int_equal(mb_search_run(reader(f), &q, 0, 20, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	mb_search_page_release(&pg);
	mb_query_release(&q);
	compile(&q, "y", NULL);
	err = (struct mb_err){ 0 };	/* mb_err_set keeps the first error */
	assert_int_equal(mb_search_run(reader(f), &q, 0, 0, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	err = (struct mb_err){ 0 };
	assert_int_equal(mb_search_run(reader(f), &q, 0, MB_SEARCH_MAX_LIMIT + 1, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	err = (struct mb_err){ 0 };
	assert_int_equal(mb_search_run(reader(f), &q, -1, 20, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	/* the handle is still good for the next search */
	err = (struct mb_err){ 0 };
	assert_int_equal(mb_search_run(reader(f), &q, 0, 20, &pg, &err), 0);
	assert_int_equal(pg.n, 1);
	mb_search_page_release(&pg);
	mb_query_release(&q);
}

/* ---- generations and folders LIST no longer shows */

/* Set folder name's UIDVALIDITY (a tick that met a re-created folder). */
static void
set_uidvalidity(struct mb_index *idx, const char *name, uint32_t v)
{
	struct mb_folder_state st;
	struct mb_err err = { 0 };

	assert_int_equal(mb_index_folder_get(idx, name, &st, &err), 0);
	st.uidvalidity = v;
	assert_int_equal(mb_index_folder_update(idx, &st, &err), 0);
	mb_folder_state_release(&st);
}

/* list_folders' count of name; -1 when it is not listed. */
static int64_t
listed_count(struct fx *f, const char *name)
{
	struct mb_read_folder *list;
	struct mb_err err = { 0 };
	int64_t count = -1;
	size_t n;

	assert_int_equal(mb_read_folders(reader(f), &list, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].name, name) == 0)
			count = list[i].messages;
	mb_read_folders_free(&list, n);
	return count;
}

static void
only_the_current_generation_of_listed_folders_is_served(void **state)
{
	struct fx *f = *state;
	struct mb_search_filters in_archive = { .folder = "Archive" };
	struct mb_read_message rm;
	struct mb_err err = { 0 };
	struct mb_query q;
	struct mb_search_page pg;
	char why[256], want[256];
	int64_t old1, old2, copy;
	unsigned absent, purged;

	mb_test_put(f->rw, f->inbox, 1, &(struct mb_test_msg){ .subject = "walrus one",
	    .body = "x", .message_id = "w1@x" });
	mb_test_put(f->rw, f->inbox, 2, &(struct mb_test_msg){ .subject = "walrus two",
	    .body = "x", .message_id = "w2@x" });
	mb_test_put(f->rw, f->archive, 1, &(struct mb_test_msg){ .subject = "walrus one",
	    .body = "x", .message_id = "w1@x" });
	old1 = mb_test_index_int(&(struct mb_test_index){ .idx = f->rw },
	    "SELECT id FROM messages WHERE message_id = 'w1@x' ORDER BY id LIMIT 1");
	old2 = mb_test_index_int(&(struct mb_test_index){ .idx = f->rw },
	    "SELECT id FROM messages WHERE message_id = 'w2@x'");
	copy = mb_test_index_int(&(struct mb_test_index){ .idx = f->rw },
	    "SELECT id FROM messages WHERE message_id = 'w1@x' ORDER BY id DESC LIMIT 1");
	expect_ids(f, "walrus", NULL, (int64_t[]){ copy, old2, old1 }, 3);

	/* INBOX re-created upstream: its rows are an older generation now. */
	set_uidvalidity(f->rw, "INBOX", 2);
	expect_ids(f, "walrus", NULL, (int64_t[]){ copy }, 1);
	expect_ids(f, "", &(struct mb_search_filters){ .folder = "INBOX" }, NULL, 0);
	assert_int_equal(listed_count(f, "INBOX"), 0);
	assert_int_equal(mb_read_message(reader(f), old1, 0, 100, &rm, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_int_equal(mb_read_gone(reader(f), old1, 0, why, sizeof(why), &err), 1);
	snprintf(want, sizeof(want), "message %lld is an old copy: this folder was re-created "
	    "on the server; the current copy is id %lld", (long long)old1, (long long)copy);
	assert_string_equal(why, want);
	assert_int_equal(mb_read_gone(reader(f), old2, 0, why, sizeof(why), &err), 1);
	snprintf(want, sizeof(want), "message %lld is no longer in the mailbox (folder 'INBOX' "
	    "was re-created on the server)", (long long)old2);
	assert_string_equal(why, want);
	assert_int_equal(mb_read_gone(reader(f), copy, 0, why, sizeof(why), &err), 0);
	assert_int_equal(mb_read_gone(reader(f), 999, 0, why, sizeof(why), &err), 0);

	/* Archive missing from LIST: hidden at once, served again when listed. */
	assert_int_equal(mb_index_folder_presence(f->rw, f->archive, false, true, &absent, &err), 0);
	assert_int_equal(absent, 1);
	expect_ids(f, "walrus", NULL, NULL, 0);
	assert_int_equal(listed_count(f, "Archive"), -1);
	compile(&q, "walrus", &in_archive);
	assert_int_equal(mb_search_run(reader(f), &q, 0, 20, &pg, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	mb_query_release(&q);
	err = (struct mb_err){ 0 };
	assert_int_equal(mb_index_folder_presence(f->rw, f->archive, false, true, &absent, &err), 0);
	assert_int_equal(absent, 2);
	assert_int_equal(mb_index_folder_presence(f->rw, f->archive, true, true, &absent, &err), 0);
	assert_int_equal(absent, 0);
	expect_ids(f, "walrus", NULL, (int64_t[]){ copy }, 1);
	assert_int_equal(listed_count(f, "Archive"), 1);

	/* The purges: older generations, then a whole folder. */
	assert_int_equal(mb_index_purge_generations(f->rw, f->inbox, 2, &purged, &err), 0);
	assert_int_equal(purged, 2);
	assert_int_equal(mb_read_gone(reader(f), old1, 0, why, sizeof(why), &err), 0);
	assert_int_equal(mb_index_purge_generations(f->rw, f->inbox, 2, &purged, &err), 0);
	assert_int_equal(purged, 0);
	assert_int_equal(mb_index_purge_folder(f->rw, f->archive, &purged, &err), 0);
	assert_int_equal(purged, 1);
	assert_int_equal(listed_count(f, "Archive"), -1);
	expect_ids(f, "walrus", NULL, NULL, 0);
	assert_int_equal(mb_test_index_int(&(struct mb_test_index){ .idx = f->rw },
	    "SELECT count(*) FROM messages_fts_docsize"), 0);
}

/* ---- paging */

static void
pages_join_up_and_the_last_says_no_more(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	int64_t whole[32], paged[32];
	size_t n_whole = 0, n_paged;

	for (uint32_t i = 1; i <= 23; i++)
		put(f, f->inbox, i, &(struct mb_test_msg){ .subject = i % 3 ? "ferry" : "ferry ferry",
		    .body = "harbour", .date = T0 + (int64_t)(i % 5) * DAY });
	page_of(f, "harbour", NULL, 0, MB_SEARCH_MAX_LIMIT, &pg);
	assert_false(pg.more);
	for (size_t i = 0; i < pg.n; i++)
		whole[n_whole++] = pg.hits[i].id;
	mb_search_page_release(&pg);
	assert_int_equal(n_whole, 23);
	n_paged = all_ids(f, "harbour", NULL, 5, paged, MB_ARRAY_LEN(paged));
	assert_int_equal(n_paged, 23);
	assert_memory_equal(whole, paged, sizeof(whole[0]) * 23);
	/* the same for filters alone */
	n_paged = all_ids(f, "folder:INBOX", NULL, 4, paged, MB_ARRAY_LEN(paged));
	assert_int_equal(n_paged, 23);
	/* past the end: an empty page, no more */
	page_of(f, "harbour", NULL, 23, 5, &pg);
	assert_int_equal(pg.n, 0);
	assert_false(pg.more);
	mb_search_page_release(&pg);
	page_of(f, "harbour", NULL, 20, 5, &pg);
	assert_int_equal(pg.n, 3);
	assert_false(pg.more);
	assert_int_equal(pg.next_offset, 23);
	mb_search_page_release(&pg);
	page_of(f, "harbour", NULL, 15, 5, &pg);
	assert_true(pg.more);
	assert_int_equal(pg.next_offset, 20);
	mb_search_page_release(&pg);
}

static void
the_cursor_hash_follows_what_selects_hits(void **state)
{
	struct mb_query a, b;
	uint64_t h;

	(void)state;
	compile(&a, "budget is:unread", NULL);
	compile(&b, "budget   is:unread", NULL);
	h = mb_search_hash(&a);
	assert_true(h == mb_search_hash(&b));	/* the same search, however typed */
	mb_query_release(&b);
	compile(&b, "budget", NULL);
	assert_false(h == mb_search_hash(&b));
	mb_query_release(&b);
	compile(&b, "budget is:unread", &(struct mb_search_filters){ .folder = "INBOX" });
	assert_false(h == mb_search_hash(&b));
	mb_query_release(&b);
	compile(&b, "budget is:unread", &(struct mb_search_filters){ .from = "bob" });
	assert_false(h == mb_search_hash(&b));
	mb_query_release(&b);
	compile(&b, "budget is:unread", &(struct mb_search_filters){ .until = "2024-01-01" });
	assert_false(h == mb_search_hash(&b));
	mb_query_release(&b);
	mb_query_release(&a);
}

/*
 * A hit's excerpt reads its body where it is stored: a page of newsletters
 * of hundreds of KB each cost 0.8 ms a hit while SQLite copied each
 * unpacked body once more to end it with a NUL (12 ms for a page of 16 at
 * 100,000 messages; 1.9 ms without the copy).  SQLite's largest allocation
 * during the search says whether a body was copied.
 */
static void
a_long_body_is_not_copied_for_its_excerpt(void **state)
{
	struct fx *f = *state;
	struct mb_buf body = MB_BUF_INIT(1 << 20);
	struct mb_search_page pg;
	sqlite3_int64 cur, largest;

	mb_buf_adds(&body, "A note on the giraffe house. ");
	for (unsigned i = 0; body.len < 900 * 1024; i++)
		mb_buf_addf(&body, "filler%u words ", i % 997);
	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "weekly digest",
	    .body = body.data, .date = T0 });
	mb_buf_release(&body);
	page_of(f, "giraffe", NULL, 0, 20, &pg);	/* statements prepared, statistics kept */
	mb_search_page_release(&pg);

	assert_int_equal(sqlite3_status64(SQLITE_STATUS_MALLOC_SIZE, &cur, &largest, 1),
	    SQLITE_OK);
	page_of(f, "giraffe", NULL, 0, 20, &pg);
	assert_int_equal(sqlite3_status64(SQLITE_STATUS_MALLOC_SIZE, &cur, &largest, 0),
	    SQLITE_OK);
	assert_int_equal(pg.n, 1);
	assert_non_null(strstr(pg.hits[0].snippet, "the **giraffe** house"));
	mb_search_page_release(&pg);
	if (largest > 256 * 1024)
		fail_msg("SQLite allocated %lld bytes at once for a page of one hit",
		    (long long)largest);
}

/*
 * A hit whose words are in its body only in another form (stemmed: the
 * query says meetings, the body meeting) has no literal excerpt, and its
 * snippet comes from the index's positions.  FTS5's snippet() scored every
 * window of the column against every hit, so a body of 20,000 hits took
 * seconds (https at 100,000 messages: 859 ms a page, the pages' rows being
 * lists of links).  The snippet now costs the hits once and the text up to
 * the window: the test bounds the bytes tokenized, and the search's CPU
 * time far above what it takes.
 */
static void
a_snippet_of_many_stemmed_hits_costs_them_once(void **state)
{
	struct fx *f = *state;
	struct mb_buf body = MB_BUF_INIT(1 << 20);
	struct mb_search_page pg;
	struct timespec t0, t1;
	uint64_t bytes;
	size_t len;
	double ms;

	mb_buf_adds(&body, "Notes: the planning meeting moved to Friday. ");
	for (unsigned i = 0; i < 20000; i++)
		mb_buf_addf(&body, "meeting%s", i % 10 == 9 ? ".\n" : " ");
	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "minutes",
	    .body = body.data, .date = T0 });
	len = body.len;
	mb_buf_release(&body);
	page_of(f, "meetings", NULL, 0, 20, &pg);	/* statements prepared, statistics kept */
	mb_search_page_release(&pg);

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	bytes = mb_index_snippet_bytes();
	page_of(f, "meetings", NULL, 0, 20, &pg);
	bytes = mb_index_snippet_bytes() - bytes;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (ms > 200)
		fail_msg("a page of one hit took %.0f ms of CPU", ms);
	if (bytes > 16384)	/* the first piece, 8 KB, holds the window */
		fail_msg("%llu bytes of a %zu-byte body tokenized", (unsigned long long)bytes, len);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.hits[0].snippet, "Notes: the planning **meeting** moved to Friday. "
	    "**meeting** **meeting** **meeting** **meeting** **meeting** **meeting** **meeting** "
	    "**meeting** **meeting**…");
	mb_search_page_release(&pg);
}

/*
 * A filtered page whose snippets come from the positions (the word is in
 * the subjects only) reads them a hit at a time when the word has many
 * more matches than the page can pay for: one statement over the page's
 * lowest to highest id steps over every match of the word between them,
 * those the filter drops too.  The count a filtered search has is of the
 * matches that pass, a few here, which once chose that statement: at
 * 1,000,000 messages `the after:2002-09-01` spent 15 ms of its 29 on it.
 */
static void
a_filtered_page_reads_its_snippets_a_hit_at_a_time(void **state)
{
	enum { N = 3000 };
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct mb_search_page pg;
	uint64_t steps;

	assert_int_equal(mb_index_begin(f->rw, &err), 0);
	for (uint32_t uid = 1; uid <= N; uid++)
		put(f, f->inbox, uid, &(struct mb_test_msg){
		    /* the best two flagged ones far apart: ids 100 and 2,900 */
		    .subject = uid == 100 || uid == 2900 ? "quarterly quarterly figures" :
		    "quarterly figures", .body = "see the attached sheet", .date = T0 + uid,
		    .flags = uid % 100 == 0 ? MB_FLAG_FLAGGED : 0u });
	assert_int_equal(mb_index_commit(f->rw, &err), 0);
	page_of(f, "quarterly is:flagged", NULL, 0, 2, &pg);	/* statistics kept */
	mb_search_page_release(&pg);

	steps = idx_snippet_steps;
	page_of(f, "quarterly is:flagged", NULL, 0, 2, &pg);
	steps = idx_snippet_steps - steps;
	assert_int_equal(pg.n, 2);
	assert_int_equal(pg.hits[0].id, 2900);	/* newest first among equals */
	assert_int_equal(pg.hits[1].id, 100);
	for (size_t i = 0; i < pg.n; i++)
		assert_string_equal(pg.hits[i].snippet, "**quarterly** **quarterly** figures");
	if (steps >= N)
		fail_msg("the snippets of 2 hits took %llu steps, past the word's %d matches",
		    (unsigned long long)steps, N);
	mb_search_page_release(&pg);
}

/*
 * A snippet from the positions (no query word literally in the body) marks
 * a phrase as one, marks a CJK word inside a run of bigrams, and ends at the
 * column's end with the window moved back to keep its length, as
 * snippet() did.
 */
static void
snippets_from_positions_mark_phrases_and_cjk_words(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;

	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "rooms",
	    .body = "Every room was booked, so we planned meeting rooms for May.", .date = T0 });
	put(f, f->inbox, 2, &(struct mb_test_msg){ .subject = "定例会議の議事録について",
	    .body = "添付をご確認ください。", .date = T0 + 1 });
	put(f, f->inbox, 3, &(struct mb_test_msg){ .subject = "one two three four five six "
	    "seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen walked",
	    .body = "nothing here", .date = T0 + 2 });

	page_of(f, "\"plans meetings\"", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.hits[0].snippet,
	    "Every room was booked, so we **planned meeting** rooms for May.");
	mb_search_page_release(&pg);

	page_of(f, "subject:会議", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.hits[0].snippet, "定例**会議**の議事録について");
	mb_search_page_release(&pg);

	page_of(f, "subject:walking", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.hits[0].snippet, "…two three four five six seven eight nine ten "
	    "eleven twelve thirteen fourteen fifteen sixteen **walked**");
	mb_search_page_release(&pg);
}

/* ---- snippets */

static void
snippets_mark_the_query_words(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	char body[600];

	/* a long body: the excerpt is around the word, cut with an ellipsis */
	memset(body, 0, sizeof(body));
	for (int i = 0; i < 40; i++)
		strcat(body, "filler ");
	strcat(body, "the Quarterly report is late, quarterly as ever");
	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "status", .body = body,
	    .date = T0 });
	/* a stemmed form: only FTS5's snippet() finds it */
	put(f, f->inbox, 2, &(struct mb_test_msg){ .subject = "plans",
	    .body = "We had a meeting about it yesterday.", .date = T0 + 1 });
	put(f, f->inbox, 3, &(struct mb_test_msg){ .subject = "hello there",
	    .body = "Just the start of a body that goes on.", .date = T0 + 2 });

	page_of(f, "quarterly", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_non_null(strstr(pg.hits[0].snippet, "**Quarterly** report"));
	assert_non_null(strstr(pg.hits[0].snippet, "**quarterly** as ever"));
	assert_memory_equal(pg.hits[0].snippet, "…", strlen("…"));
	assert_int_equal(pg.hits[0].snippet_len, strlen(pg.hits[0].snippet));
	mb_search_page_release(&pg);

	page_of(f, "meetings", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.hits[0].id, 2);
	assert_non_null(strstr(pg.hits[0].snippet, "**meeting**"));
	mb_search_page_release(&pg);

	/* a subject-only hit: snippet() of the subject */
	page_of(f, "subject:plans", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_string_equal(pg.hits[0].snippet, "**plans**");
	mb_search_page_release(&pg);

	/* filters alone: the start of the body, newest first */
	page_of(f, "folder:INBOX", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 3);
	assert_string_equal(pg.hits[0].snippet, "Just the start of a body that goes on.");
	assert_int_equal(strlen(pg.hits[2].snippet), 200);	/* the first 200 characters */
	mb_search_page_release(&pg);
}

/*
 * A page of filters alone shows each body's first 200 characters, and
 * unpacks each packed body once: the hit's own read of the body serves its
 * start too (a second statement unpacked the whole body again: for a page
 * of 100 KB newsletters about a third of its CPU).  Characters, not bytes: a
 * body of two-byte letters is cut after 200 of them, 400 bytes.
 */
static void
a_page_of_filters_alone_unpacks_each_body_once(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;
	struct mb_buf b = MB_BUF_INIT(8192);
	uint64_t before;
	char *body;

	for (int i = 0; i < 400; i++)
		mb_buf_adds(&b, i % 2 ? "ü" : "é");	/* 800 bytes: packed */
	mb_buf_adds(&b, " the end");
	body = mb_buf_detach(&b, NULL);
	for (uint32_t uid = 1; uid <= 5; uid++)
		put(f, f->inbox, uid, &(struct mb_test_msg){ .subject = "news", .body = body,
		    .date = T0 + uid });
	page_of(f, "folder:INBOX", NULL, 0, 20, &pg);	/* a first page: statements prepared */
	mb_search_page_release(&pg);
	before = idx_text_unpacked;
	page_of(f, "folder:INBOX", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 5);
	assert_int_equal(idx_text_unpacked - before, 5);
	for (size_t i = 0; i < pg.n; i++) {
		assert_int_equal(pg.hits[i].snippet_len, 400);
		assert_memory_equal(pg.hits[i].snippet, body, 400);
	}
	mb_search_page_release(&pg);
	free(body);
}

static void
cjk_words_are_found_whole_and_by_one_character(void **state)
{
	struct fx *f = *state;
	struct mb_search_page pg;

	put(f, f->inbox, 1, &(struct mb_test_msg){ .subject = "予定",
	    .body = "明日の会議は十時からです。", .date = T0 });
	put(f, f->inbox, 2, &(struct mb_test_msg){ .subject = "other",
	    .body = "会社の話", .date = T0 + 1 });
	page_of(f, "会議", NULL, 0, 20, &pg);
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.hits[0].id, 1);
	assert_non_null(strstr(pg.hits[0].snippet, "**会議**"));
	mb_search_page_release(&pg);
	/* one character: a prefix of both messages' bigrams */
	assert_int_equal(all_ids(f, "会", NULL, 20, (int64_t[4]){ 0 }, 4), 2);
	expect_ids(f, "予定", NULL, (const int64_t[]){ 1 }, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(subject_outranks_body_and_hits_carry_the_row,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(ties_are_newest_first_then_highest_id_on_every_page,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(the_best_match_is_first_however_old, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_match_deep_in_a_long_body_is_not_measured, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(pages_of_a_frequent_word_hold_every_match_once,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(structured_filters_narrow_the_query, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(bad_filters_say_what_to_change, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_folder_and_bad_limits_are_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(pages_join_up_and_the_last_says_no_more, setup,
		    teardown),
		cmocka_unit_test(the_cursor_hash_follows_what_selects_hits),
		cmocka_unit_test_setup_teardown(only_the_current_generation_of_listed_folders_is_served,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(snippets_mark_the_query_words, setup, teardown),
		cmocka_unit_test_setup_teardown(a_long_body_is_not_copied_for_its_excerpt, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_snippet_of_many_stemmed_hits_costs_them_once,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(a_filtered_page_reads_its_snippets_a_hit_at_a_time,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(snippets_from_positions_mark_phrases_and_cjk_words,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(cjk_words_are_found_whole_and_by_one_character,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(a_page_of_filters_alone_unpacks_each_body_once,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
