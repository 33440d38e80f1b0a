/*
 * The rows' lengths kept by block (migrations/0022, index_rank_build.c,
 * index_rank_lengths.c): the builder keeps each row's length in tokens, a
 * block of 128 ids to a row, and a search scores with them instead of
 * asking FTS5 for each row.  Each length kept is FTS5's; every page and
 * score is bm25()'s, bit for bit, with them and without; a row inserted or
 * changed since its chunk was built is measured by FTS5 (its block's
 * lengths are dropped by the triggers); a chunk built before the migration
 * is given its lengths by the builder without being built again; a row
 * too long for 16 bits is measured by FTS5; an index without the table
 * ranks as before.  The fixture is 5,000 messages (two chunks of 2,048 ids bounded,
 * a tail that is not) of lengths from 3 to about 250 tokens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/rank-private.h"

#define T0	1700000000
#define N_MSG	5000

/*
 * Message uid: "omni" in every one; kappa in half (bounded: walked), in
 * the subject in a third of those; lambda in one in 20 (250 rows, too few
 * to be bounded: read whole), with kappa; each 1-3 times; filler words to
 * a length that varies with uid.
 */
static void
put_one(struct mb_test_index *f, uint32_t uid, const char *extra)
{
	char body[4096], subject[128];
	size_t blen, slen = 0;

	subject[0] = '\0';
	blen = (size_t)snprintf(body, sizeof(body), "omni ");
	for (unsigned r = 0; r < 1 + uid % 3; r++) {
		if (uid % 6 == 0)
			slen += (size_t)snprintf(subject + slen, sizeof(subject) - slen, "kappa ");
		else if (uid % 2 == 0)
			blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "kappa ");
		if (uid % 20 == 0)
			blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "lambda ");
	}
	for (unsigned k = (uid * 37) % 250; k > 0; k--)
		blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "pad%u ", k % 40);
	if (extra != NULL)
		snprintf(body + blen, sizeof(body) - blen, "%s", extra);
	mb_test_put(f->idx, f->inbox, uid, &(struct mb_test_msg){ .subject = subject,
	    .body = body, .date = T0 + (int64_t)uid * 60 });
}

static void
put_all(struct mb_test_index *f)
{
	struct mb_err err = { 0 };

	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	for (uint32_t uid = 1; uid <= N_MSG; uid++)
		put_one(f, uid, NULL);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
}

/*
 * Pages of 20 of text up to offset 100: the ids bm25() orders them in,
 * each score bm25()'s bit for bit.  How many lengths the search took from
 * the chunks.
 */
static uint64_t
expect_bm25(struct mb_test_index *f, const char *text)
{
	static int64_t want[N_MSG + 10];
	uint64_t before = idx_rank_lengths_served;
	size_t n = mb_test_bm25_order(f->idx, text, want, MB_ARRAY_LEN(want));
	struct mb_query q;
	struct mb_err err = { 0 };

	assert_true(n > 100);
	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	for (int64_t offset = 0; offset < 100; offset += 20) {
		struct mb_search_page pg;

		if (mb_search_run(mb_test_index_reader(f), &q, offset, 20, &pg, &err) == -1)
			fail_msg("search \"%s\": %s", text, err.msg);
		assert_int_equal(pg.n, 20);
		for (size_t i = 0; i < pg.n; i++) {
			double score = mb_test_bm25_of(f->idx, text, pg.hits[i].id);

			if (pg.hits[i].id != want[offset + (int64_t)i])
				fail_msg("\"%s\": position %lld is id %lld, bm25() says %lld", text,
				    (long long)offset + (long long)i, (long long)pg.hits[i].id,
				    (long long)want[offset + (int64_t)i]);
			if (pg.hits[i].score != score)
				fail_msg("\"%s\": id %lld scored %.17g, bm25() %.17g", text,
				    (long long)pg.hits[i].id, pg.hits[i].score, score);
		}
		mb_search_page_release(&pg);
	}
	mb_query_release(&q);
	return idx_rank_lengths_served - before;
}

/* walked (kappa), read whole (lambda, a column, several words, an OR) */
static const char *const texts[] = { "kappa", "lambda", "subject:kappa", "kappa lambda",
	"lambda OR subject:kappa" };

/*
 * Each row of chunk c: its length kept in its block's row, FTS5's
 * (mb_column_tokens, -1: every column); each block of the chunk has one.
 */
static void
expect_lengths_kept(struct mb_test_index *f, int64_t c)
{
	sqlite3 *db = mb_index_db(f->idx);
	sqlite3_stmt *kept, *fts;
	int rows = 0;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT lengths FROM rank_lengths WHERE block = ?1",
	    -1, &kept, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT rowid, mb_column_tokens(messages_fts, -1) "
	    "FROM messages_fts WHERE messages_fts MATCH 'omni' AND rowid BETWEEN ?1 AND ?2", -1,
	    &fts, NULL), SQLITE_OK);
	for (int64_t k = c * RANK_CHUNK_BLOCKS; k < (c + 1) * RANK_CHUNK_BLOCKS; k++) {
		const uint8_t *blob;

		sqlite3_reset(kept);
		sqlite3_bind_int64(kept, 1, k);
		assert_int_equal(sqlite3_step(kept), SQLITE_ROW);
		assert_int_equal(sqlite3_column_bytes(kept, 0), RANK_LENGTHS_BYTES);
		blob = sqlite3_column_blob(kept, 0);
		sqlite3_reset(fts);
		sqlite3_bind_int64(fts, 1, k * RANK_BLOCK_IDS);
		sqlite3_bind_int64(fts, 2, k * RANK_BLOCK_IDS + RANK_BLOCK_IDS - 1);
		while (sqlite3_step(fts) == SQLITE_ROW) {
			int64_t at = sqlite3_column_int64(fts, 0) - k * RANK_BLOCK_IDS;

			assert_int_equal(blob[2 * at] | blob[2 * at + 1] << 8,
			    sqlite3_column_int(fts, 1));
			rows++;
		}
	}
	assert_true(rows > 2000);
	sqlite3_finalize(fts);
	sqlite3_finalize(kept);
}

/*
 * Built, each block keeps its rows' lengths (FTS5's), and every search
 * takes lengths from them, giving bm25()'s pages and scores; without them
 * (the switch off) the same, FTS5 measuring every row.
 */
static void
lengths_are_kept_by_block_and_score_as_bm25(void **state)
{
	struct mb_test_index *f = *state;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	expect_lengths_kept(f, 0);
	expect_lengths_kept(f, 1);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++)
		if (expect_bm25(f, texts[i]) == 0)
			fail_msg("\"%s\": no length taken from the chunks", texts[i]);
	idx_rank_lengths_used = false;
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++)
		assert_int_equal(expect_bm25(f, texts[i]), 0);
	idx_rank_lengths_used = true;
}

/*
 * A row whose text changes after its chunk was built (a re-fetched
 * message, a re-extracted attachment) has another length than the one
 * kept; so has a row given a reused id.  Their blocks' bits are cleared
 * (the triggers), FTS5 measures their rows, and the pages are bm25()'s:
 * the best lambda row made long drops, a long one made short rises, and
 * a new short one with lambda in a reused id comes first.  Built again,
 * the chunk keeps the new lengths.
 */
static void
a_row_changed_since_is_measured_by_fts5(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	char pad[2048];
	size_t len = 0;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	for (unsigned k = 0; k < 200; k++)
		len += (size_t)snprintf(pad + len, sizeof(pad) - len, "long%u ", k);
	/* uid 1000 (lambda, about 250 tokens) made longer; uid 2980 (about 150) short */
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	put_one(f, 1000, pad);
	mb_test_put(f->idx, f->inbox, 2980, &(struct mb_test_msg){ .subject = "",
	    .body = "omni kappa lambda lambda", .date = T0 });
	/* the newest rows deleted, a short lambda row takes an id in chunk 1 */
	for (uint32_t uid = 4001; uid <= N_MSG; uid++)
		assert_int_equal(mb_index_delete(f->idx, f->inbox, 1, uid, &err), 0);
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	mb_test_put(f->idx, f->inbox, 9000, &(struct mb_test_msg){ .subject = "lambda kappa",
	    .body = "omni lambda", .date = T0 });
	assert_true(mb_test_index_int(f, "SELECT id FROM messages WHERE uid = 9000") < 4096);
	/* the three blocks' lengths dropped, the others' kept */
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_lengths"), 32 - 3);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++)
		(void)expect_bm25(f, texts[i]);
	/* chunk 0 again; chunk 1 is no longer complete (ids up to 4,001): FTS5's */
	assert_int_equal(mb_test_rank_build(f), 1);
	expect_lengths_kept(f, 0);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++)
		(void)expect_bm25(f, texts[i]);
}

/*
 * A chunk built before migration 0022 has no lengths: its rows are
 * measured by FTS5, and the builder gives it its lengths on its next call
 * without building it again (its bounds' generation stays).
 */
static void
a_chunk_built_before_gets_its_lengths(void **state)
{
	struct mb_test_index *f = *state;
	int64_t gen;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DELETE FROM rank_lengths",
	    NULL, NULL, NULL), SQLITE_OK);
	gen = mb_test_index_int(f, "SELECT sum(gen) FROM rank_chunks");
	assert_int_equal(expect_bm25(f, "lambda"), 0);	/* no chunk has any */
	assert_int_equal(mb_test_rank_build(f), 2);	/* filled, not built */
	assert_int_equal(mb_test_index_int(f, "SELECT sum(gen) FROM rank_chunks"), gen);
	assert_int_equal(mb_test_index_int(f, "SELECT count(*) FROM rank_lengths"), 32);
	expect_lengths_kept(f, 0);
	expect_lengths_kept(f, 1);
	assert_true(expect_bm25(f, "lambda") > 0);
	assert_int_equal(mb_test_rank_build(f), 0);
}

/*
 * A row longer than 16 bits hold (65,535 tokens: a long attachment's text
 * beside the body) keeps 0, and FTS5 measures it: the best lambda row, all
 * lambda, scores as bm25() does.  Its length cut to 16 bits would score it
 * otherwise.
 */
static void
a_length_past_16_bits_is_measured_by_fts5(void **state)
{
	struct mb_test_index *f = *state;
	struct mb_err err = { 0 };
	struct mb_buf body = MB_BUF_INIT(1 << 20);
	int64_t id;
	char *sql;

	put_all(f);
	for (unsigned k = 0; k < 70000; k++)
		assert_int_equal(mb_buf_add(&body, "lambda ", 7), 0);
	assert_int_equal(mb_buf_addc(&body, '\0'), 0);
	assert_int_equal(mb_index_begin(f->idx, &err), 0);
	mb_test_put(f->idx, f->inbox, 40, &(struct mb_test_msg){ .subject = "",
	    .body = body.data, .date = T0 });
	assert_int_equal(mb_index_commit(f->idx, &err), 0);
	mb_buf_release(&body);
	assert_int_equal(mb_test_rank_build(f), 2);
	id = mb_test_index_int(f, "SELECT id FROM messages WHERE uid = 40");
	sql = sqlite3_mprintf("SELECT hex(substr(lengths, %lld, 2)) = '0000' FROM rank_lengths "
	    "WHERE block = %lld", (long long)(2 * (id % RANK_BLOCK_IDS) + 1),
	    (long long)(id / RANK_BLOCK_IDS));
	assert_int_equal(mb_test_index_int(f, sql), 1);
	sqlite3_free(sql);
	assert_true(expect_bm25(f, "lambda") > 0);
}

/* An index without rank_lengths (from before 0022, read by a newer mcpd): as before. */
static void
an_index_without_lengths_ranks_as_before(void **state)
{
	struct mb_test_index *f = *state;

	put_all(f);
	assert_int_equal(mb_test_rank_build(f), 2);
	assert_int_equal(sqlite3_exec(mb_index_db(f->idx), "DROP TRIGGER rank_lengths_insert; "
	    "DROP TRIGGER rank_lengths_update; DROP TABLE rank_lengths", NULL, NULL, NULL),
	    SQLITE_OK);
	for (size_t i = 0; i < MB_ARRAY_LEN(texts); i++)
		assert_int_equal(expect_bm25(f, texts[i]), 0);
}

int
main(void)
{
	/* the fixture's words match hundreds of rows: walk them all the same */
	idx_rank_min_matches = 0;
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(lengths_are_kept_by_block_and_score_as_bm25),
		MB_TEST_INDEX(a_row_changed_since_is_measured_by_fts5),
		MB_TEST_INDEX(a_chunk_built_before_gets_its_lengths),
		MB_TEST_INDEX(a_length_past_16_bits_is_measured_by_fts5),
		MB_TEST_INDEX(an_index_without_lengths_ranks_as_before),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
