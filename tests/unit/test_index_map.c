/*
 * A reader's mapping of the index (libmailbox/core/index_map.c): SQLite caps
 * every mapping at a size fixed when it is built (2 GiB in Debian's build),
 * and a read-only handle maps past it through its own VFS.  This process
 * lowers SQLite's cap to CAP before SQLite starts, so that an index of a few
 * megabytes stands where a 3.7 GB one does under Debian's: the reader must
 * map the whole file all the same, serve the same pages as a reader that
 * reads every page, and follow the file as the writer grows it and as
 * VACUUM shrinks it (a mapping past the end of a file faults when read),
 * without mapping it again after a commit (SQLite's VFS maps afresh then,
 * which made every search after a commit of syncd's dearer), and with one
 * mapping for all the process's readers of the file.
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
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"
#include "support_index.h"

#include "../../libmailbox/core/index-private.h"

#define CAP	(INT64_C(256) << 10)	/* SQLite's cap on mappings in this process */
#define T0	1700000000
#define MAX_IDS	2000

/* Messages first..last, each with words of its own and "kayak" in some. */
static void
put_range(struct mb_test_index *t, uint32_t first, uint32_t last)
{
	struct mb_err err = { 0 };
	char body[3000], subject[64];

	assert_int_equal(mb_index_begin(t->idx, &err), 0);
	for (uint32_t uid = first; uid <= last; uid++) {
		size_t n = 0;

		for (uint32_t w = 0; w < 200 && n + 16 < sizeof(body); w++)
			n += (size_t)snprintf(body + n, sizeof(body) - n, "%s w%u_%u ",
			    (uid + w) % 7 == 0 ? "kayak" : "river", uid % 97, w);
		snprintf(subject, sizeof(subject), "trip %u%s", uid, uid % 5 == 0 ? " kayak" : "");
		mb_test_put(t->idx, t->inbox, uid, &(struct mb_test_msg){ .subject = subject,
		    .body = body, .date = T0 + (int64_t)uid * 3600 });
	}
	assert_int_equal(mb_index_commit(t->idx, &err), 0);
}

/* Every page of the file written back from the WAL, so readers fetch them from the file. */
static void
checkpoint(struct mb_test_index *t)
{
	assert_int_equal(sqlite3_exec(mb_index_db(t->idx), "PRAGMA wal_checkpoint(TRUNCATE)",
	    NULL, NULL, NULL), SQLITE_OK);
}

static int64_t
file_size(const struct mb_test_index *t)
{
	struct stat st;

	assert_int_equal(stat(t->path, &st), 0);
	return (int64_t)st.st_size;
}

/* The first page (50) of text on idx, in the engine's order, into ids; returns how many. */
static size_t
first_page(struct mb_index *idx, const char *text, int64_t *ids)
{
	struct mb_search_page pg;
	struct mb_query q;
	struct mb_err err = { 0 };
	size_t n = 0;

	mb_query_init(&q);
	assert_int_equal(mb_query_compile(text, strlen(text), &q, &err), 0);
	if (mb_search_run(idx, &q, 0, 50, &pg, &err) == -1)
		fail_msg("search \"%s\": %s", text, err.msg);
	for (size_t i = 0; i < pg.n && n < MAX_IDS; i++)
		ids[n++] = pg.hits[i].id;
	mb_search_page_release(&pg);
	mb_query_release(&q);
	return n;
}

/*
 * The page read through the whole mapping is the page of a reader that
 * reads every page, and the order FTS5's bm25() gives; the mapping covers
 * the whole file although SQLite's cap is far smaller.
 */
static void
same_page_through_the_mapping(struct mb_test_index *t, struct mb_index *mapped,
    struct mb_index *plain, const char *text)
{
	static int64_t got[MAX_IDS], want[MAX_IDS], oracle[MAX_IDS];
	size_t n_got = first_page(mapped, text, got), n_want = first_page(plain, text, want);

	assert_true(n_got > 0);
	assert_int_equal(n_got, n_want);
	assert_memory_equal(got, want, n_got * sizeof(*got));
	assert_true(mb_test_bm25_order(t->idx, text, oracle, MAX_IDS) >= n_got);
	assert_memory_equal(got, oracle, n_got * sizeof(*got));
	assert_int_equal(idx_map_len(mapped), file_size(t));
}

/*
 * What a connection through SQLite's default VFS maps when asked for
 * MB_INDEX_READER_MMAP: PRAGMA mmap_size answers the limit its VFS took.
 */
static int64_t
default_vfs_mapping(const struct mb_test_index *t)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	char sql[64];
	int64_t got;

	assert_int_equal(sqlite3_open_v2(t->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA mmap_size = %lld", (long long)MB_INDEX_READER_MMAP);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA mmap_size", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	got = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return got;
}

static void
a_reader_maps_the_whole_index_past_sqlites_cap(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_index *mapped = NULL, *second = NULL, *plain = NULL;
	struct mb_err err = { 0 };
	uint64_t maps;

	put_range(t, 1, 600);
	checkpoint(t);
	assert_true(file_size(t) > 4 * CAP);
	assert_int_equal(mb_index_open(t->path, MB_INDEX_RO, &mapped, &err), 0);
	assert_int_equal(mb_index_set_mmap(mapped, MB_INDEX_READER_MMAP, &err), 0);
	assert_int_equal(mb_index_open(t->path, MB_INDEX_RO, &plain, &err), 0);

	/* the default VFS stops at SQLite's cap whatever the PRAGMA asks; the reader maps it all */
	assert_int_equal(default_vfs_mapping(t), CAP);
	same_page_through_the_mapping(t, mapped, plain, "kayak");
	same_page_through_the_mapping(t, mapped, plain, "w13_150");

	/* a second reader (mcpd's next thread) serves the same mapping: none is made */
	maps = idx_maps_made;
	assert_int_equal(mb_index_open(t->path, MB_INDEX_RO, &second, &err), 0);
	assert_int_equal(mb_index_set_mmap(second, MB_INDEX_READER_MMAP, &err), 0);
	same_page_through_the_mapping(t, second, plain, "kayak");
	assert_int_equal(idx_maps_made, maps);

	/* a commit (a flag, as syncd's flag sync writes) leaves the mapping as it was */
	assert_int_equal(sqlite3_exec(mb_index_db(t->idx),
	    "UPDATE messages SET flags = flags | 1 WHERE uid = 7", NULL, NULL, NULL), SQLITE_OK);
	same_page_through_the_mapping(t, mapped, plain, "kayak");
	assert_int_equal(idx_maps_made, maps);

	/* grown by the writer: the next read transaction serves the longer file, not mapped again */
	put_range(t, 601, 1500);
	checkpoint(t);
	assert_true(file_size(t) > idx_map_len(mapped));
	same_page_through_the_mapping(t, mapped, plain, "kayak");
	same_page_through_the_mapping(t, mapped, plain, "w96_199");
	assert_int_equal(idx_maps_made, maps);

	/* shrunk by VACUUM: mapped afresh, nothing read past the end */
	assert_int_equal(sqlite3_exec(mb_index_db(t->idx),
	    "DELETE FROM messages WHERE uid > 200", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(mb_index_db(t->idx), "VACUUM", NULL, NULL, NULL),
	    SQLITE_OK);
	checkpoint(t);
	assert_true(file_size(t) < idx_map_len(mapped));
	same_page_through_the_mapping(t, mapped, plain, "kayak");
	same_page_through_the_mapping(t, mapped, plain, "trip");

	mb_index_close(&plain);
	mb_index_close(&second);
	mb_index_close(&mapped);
}

/* A read-write handle keeps SQLite's own VFS and its mapping. */
static void
a_writer_keeps_sqlites_mapping(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_err err = { 0 };

	assert_int_equal(mb_index_set_mmap(t->idx, MB_INDEX_READER_MMAP, &err), 0);
	assert_int_equal(idx_map_len(t->idx), -1);
}

int
main(void)
{
	/* before SQLite starts: its cap on mappings, Debian's 2 GiB in small */
	if (sqlite3_config(SQLITE_CONFIG_MMAP_SIZE, (sqlite3_int64)0, (sqlite3_int64)CAP) !=
	    SQLITE_OK) {
		fprintf(stderr, "test_index_map: cannot set SQLite's mapping cap\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(a_reader_maps_the_whole_index_past_sqlites_cap),
		MB_TEST_INDEX(a_writer_keeps_sqlites_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
