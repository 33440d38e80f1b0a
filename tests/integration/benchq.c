/*
 * benchq: the naive floor for scripts/bench-mcpd.  Runs each query (the
 * search_messages syntax, compiled by mb_query_compile) REPS times straight
 * against the index in-process with the plain FTS5 shape -- bm25(), ORDER BY
 * rank LIMIT 20, snippet() -- and prints one line per run: the query's
 * number, the wall time and the CPU time in milliseconds.
 *
 *   benchq INDEX REPS QUERY...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/query.h"

static const char naive_sql[] =
	"SELECT messages_fts.rowid, bm25(messages_fts), "
	"snippet(messages_fts, -1, '**', '**', '…', 16) "
	"FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid "
	"WHERE messages_fts MATCH ?1 "
	"AND (?2 IS NULL OR m.date >= ?2) AND (?3 IS NULL OR m.date < ?3) "
	"ORDER BY rank LIMIT 20";

static const char filter_sql[] =
	"SELECT m.id, substr(mb_text(m.body), 1, 200) FROM messages AS m "
	"WHERE (?2 IS NULL OR m.date >= ?2) AND (?3 IS NULL OR m.date < ?3) "
	"ORDER BY m.date DESC LIMIT 20";

static double
now_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int
main(int argc, char **argv)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	sqlite3_stmt *st[2];
	int reps;

	if (argc < 4) {
		fprintf(stderr, "usage: benchq INDEX REPS QUERY...\n");
		return 2;
	}
	reps = atoi(argv[2]);
	if (mb_index_open(argv[1], MB_INDEX_RO, &idx, &err) == -1) {
		fprintf(stderr, "benchq: %s\n", err.msg);
		return 1;
	}
	if (sqlite3_prepare_v2(mb_index_db(idx), naive_sql, -1, &st[0], NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(mb_index_db(idx), filter_sql, -1, &st[1], NULL) != SQLITE_OK) {
		fprintf(stderr, "benchq: %s\n", sqlite3_errmsg(mb_index_db(idx)));
		return 1;
	}
	for (int r = 0; r < reps; r++) {
		for (int i = 3; i < argc; i++) {
			struct mb_query q;
			sqlite3_stmt *s;
			double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
			int rc;

			mb_query_init(&q);
			if (mb_query_compile(argv[i], strlen(argv[i]), &q, &err) == -1) {
				fprintf(stderr, "benchq: %s: %s\n", argv[i], err.msg);
				return 1;
			}
			s = st[q.match == NULL];
			sqlite3_reset(s);
			sqlite3_clear_bindings(s);
			if (q.match)
				sqlite3_bind_text(s, 1, q.match, -1, SQLITE_STATIC);
			if (q.since != INT64_MIN)
				sqlite3_bind_int64(s, 2, q.since);
			if (q.until != INT64_MAX)
				sqlite3_bind_int64(s, 3, q.until);
			while ((rc = sqlite3_step(s)) == SQLITE_ROW)
				;
			if (rc != SQLITE_DONE) {
				fprintf(stderr, "benchq: %s: %s\n", argv[i],
				    sqlite3_errmsg(mb_index_db(idx)));
				return 1;
			}
			mb_query_release(&q);
			printf("%d %.4f %.4f\n", i - 3, now_ms(CLOCK_MONOTONIC) - t0,
			    now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0);
		}
	}
	sqlite3_finalize(st[0]);
	sqlite3_finalize(st[1]);
	mb_index_close(&idx);
	return 0;
}
