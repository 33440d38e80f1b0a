/*
 * bench_rank_bounds: the ranking's block bounds on a real index
 * (docs/benchmarks.md, "Exact ranking through block bounds").  Builds the
 * bounds of every complete chunk (mb_index_rank_build, as syncd does after
 * its commits) and prints the CPU time, then checks that the engine's first
 * 100 matches of each QUERY, read two pages of 50, are FTS5's own bm25()
 * order (ties newest first, then highest id).  Exits 1 on a difference.
 *
 *   bench_rank_bounds INDEX QUERY...
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/query.h"
#include "mailbox/search.h"

static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The first 100 ids of match in bm25() order into want; how many. */
static int
oracle(struct mb_index *idx, const char *match, long long want[100])
{
	sqlite3_stmt *st;
	int n = 0;

	if (sqlite3_prepare_v2(mb_index_db(idx), "SELECT m.id FROM messages_fts JOIN messages "
	    "AS m ON m.id = messages_fts.rowid WHERE messages_fts MATCH ?1 ORDER BY "
	    "bm25(messages_fts, 10.0, 4.0, 2.0, 1.0, 4.0, 1.0), m.sort_date DESC NULLS LAST, "
	    "m.id DESC LIMIT 100", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW)
		want[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

int
main(int argc, char **argv)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	size_t built = 0;
	double c0;
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_rank_bounds INDEX QUERY...\n");
		return 2;
	}
	if (mb_index_open(argv[1], MB_INDEX_RW, &idx, &err) == -1) {
		fprintf(stderr, "bench_rank_bounds: %s\n", err.msg);
		return 1;
	}
	c0 = cpu_ms();
	if (mb_index_rank_build(idx, 1, (size_t)-1, &built, &err) == -1) {
		fprintf(stderr, "bench_rank_bounds: %s\n", err.msg);
		return 1;
	}
	printf("built %zu chunks of 2,048 ids in %.0f ms of CPU (%.1f us a message)\n", built,
	    cpu_ms() - c0, built ? (cpu_ms() - c0) * 1e3 / ((double)built * 2048) : 0.0);
	for (int a = 2; a < argc; a++) {
		struct mb_query q;
		long long want[100];
		int n, same = 0, got = 0;

		mb_query_init(&q);
		if (mb_query_compile(argv[a], strlen(argv[a]), &q, &err) == -1 ||
		    (n = oracle(idx, q.match, want)) < 0) {
			fprintf(stderr, "bench_rank_bounds: '%s': %s\n", argv[a], err.msg);
			return 1;
		}
		for (int off = 0; off < 100; off += 50) {
			struct mb_search_page pg;

			if (mb_search_run(idx, &q, off, 50, &pg, &err) == -1) {
				fprintf(stderr, "bench_rank_bounds: '%s': %s\n", argv[a], err.msg);
				return 1;
			}
			for (size_t i = 0; i < pg.n; i++, got++)
				same += off + (int)i < n && pg.hits[i].id == want[off + (int)i];
			mb_search_page_release(&pg);
		}
		printf("%-24s %d of the first %d as bm25() orders them%s\n", argv[a], same, got,
		    same == got && got == n ? "" : "  DIFFERENT");
		bad |= same != got || got != n;
		mb_query_release(&q);
	}
	mb_index_close(&idx);
	return bad;
}
