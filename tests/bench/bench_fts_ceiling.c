/*
 * bench_fts_ceiling: what one core can put into FTS5 alone, as a ceiling for
 * syncd's single writer (docs/benchmarks.md, "What one writer on two cores
 * can reach").  It reads the first N messages' six full-text columns from an
 * index (in id order, through messages_fts_content, as FTS5 itself reads
 * them), and inserts them into a fresh FTS5 table with the index's
 * tokenizer and the writer's settings (WAL, synchronous NORMAL, a 4 MiB
 * cache, temporary data in files), in transactions of 1,000 rows as syncd
 * commits its groups.  Nothing else is written: no messages table, no
 * triggers, no summaries, no ranking bounds, no IPC.  The time of the
 * inserts alone is the thread's CPU time around them (the reading is
 * counted apart), printed at every tenth of N.
 *
 *   bench_fts_ceiling SOURCE_INDEX N OUT_DB
 *
 * scripts/bench-fts-ceiling makes the corpus indexes and runs it for each N.
 *
 * CEIL_TOKENIZE sets the tokenize option (default the index's,
 * "mb_cjk porter unicode61 remove_diacritics 2"); CEIL_CACHE_KIB the
 * cache (default 4096, the writer's); CEIL_GROUP the rows a transaction
 * (default 1000).  OUT_DB is replaced.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"

#include "../../libmailbox/core/index-private.h"	/* mb_fts_cjk_register */

#define N_COLS	6

/* Clock c in seconds: the thread's CPU time or the wall. */
static double
seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what, sqlite3 *db)
{
	fprintf(stderr, "bench_fts_ceiling: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
	exit(1);
}

static void
exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(sql, db);
}

/* One row's columns, copied out of the source statement (owned). */
struct row {
	int64_t	 id;
	char	*col[N_COLS];
	int	 len[N_COLS];
};

int
main(int argc, char **argv)
{
	const char *tokenize = getenv("CEIL_TOKENIZE");
	const char *cache = getenv("CEIL_CACHE_KIB");
	const char *group_env = getenv("CEIL_GROUP");
	struct mb_index *src = NULL;
	struct mb_err err = { 0 };
	sqlite3 *out = NULL, *in;
	sqlite3_stmt *rd, *ins;
	struct row *rows;
	int64_t n, group, done = 0, tenth, next_mark;
	double cpu_ins = 0, cpu_rd = 0, wall0, bytes = 0;
	double mark_cpu = 0;	/* cpu_ins and done at the last line printed */
	int64_t mark_rows = 0;
	char sql[512];

	if (argc != 4 || (n = atoll(argv[2])) < 1) {
		fprintf(stderr, "usage: bench_fts_ceiling SOURCE_INDEX N OUT_DB\n");
		return 2;
	}
	group = group_env != NULL ? atoll(group_env) : 1000;
	if (group < 1)
		group = 1000;
	if (mb_index_open(argv[1], MB_INDEX_RO, &src, &err) == -1) {
		fprintf(stderr, "bench_fts_ceiling: %s\n", err.msg);
		return 1;
	}
	in = mb_index_db(src);
	for (int i = 0; i < 3; i++) {	/* OUT_DB is replaced, its WAL and shm too */
		static const char *const sfx[] = { "", "-wal", "-shm" };

		snprintf(sql, sizeof(sql), "%s%s", argv[3], sfx[i]);
		(void)unlink(sql);
	}
	if (sqlite3_open(argv[3], &out) != SQLITE_OK)
		die("open", out);
	if (mb_fts_cjk_register(out, &err) == -1) {
		fprintf(stderr, "bench_fts_ceiling: %s\n", err.msg);
		return 1;
	}
	exec(out, "PRAGMA page_size = 4096");
	exec(out, "PRAGMA journal_mode = WAL");
	exec(out, "PRAGMA synchronous = NORMAL");
	exec(out, "PRAGMA temp_store = FILE");
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", cache != NULL ? atoi(cache) : 4096);
	exec(out, sql);
	snprintf(sql, sizeof(sql), "CREATE VIRTUAL TABLE t USING fts5(subject, from_text, "
	    "recipients, body, att_names, att_text, content='', tokenize='%s')",
	    tokenize != NULL ? tokenize : "mb_cjk porter unicode61 remove_diacritics 2");
	exec(out, sql);
	if (sqlite3_prepare_v2(in, "SELECT id, subject, from_text, recipients, body, att_names, "
	    "att_text FROM messages_fts_content ORDER BY id LIMIT ?", -1, &rd, NULL) != SQLITE_OK)
		die("prepare read", in);
	sqlite3_bind_int64(rd, 1, n);
	if (sqlite3_prepare_v2(out, "INSERT INTO t(rowid, subject, from_text, recipients, body, "
	    "att_names, att_text) VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &ins, NULL) != SQLITE_OK)
		die("prepare insert", out);
	rows = calloc((size_t)group, sizeof(*rows));
	printf("%10s %10s %12s %14s %12s\n", "rows", "insert s", "msg/s (CPU)", "last tenth/s",
	    "read s");
	wall0 = seconds(CLOCK_MONOTONIC);
	tenth = n / 10 > 0 ? n / 10 : 1;
	next_mark = tenth;
	for (;;) {
		int64_t k = 0;
		double t0 = seconds(CLOCK_THREAD_CPUTIME_ID);

		while (k < group && sqlite3_step(rd) == SQLITE_ROW) {
			rows[k].id = sqlite3_column_int64(rd, 0);
			for (int c = 0; c < N_COLS; c++) {
				const unsigned char *t = sqlite3_column_text(rd, c + 1);

				rows[k].len[c] = sqlite3_column_bytes(rd, c + 1);
				rows[k].col[c] = t ? strndup((const char *)t,
				    (size_t)rows[k].len[c]) : NULL;
				bytes += rows[k].len[c];
			}
			k++;
		}
		cpu_rd += seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (k == 0)
			break;
		t0 = seconds(CLOCK_THREAD_CPUTIME_ID);
		exec(out, "BEGIN");
		for (int64_t i = 0; i < k; i++) {
			sqlite3_bind_int64(ins, 1, rows[i].id);
			for (int c = 0; c < N_COLS; c++)	/* a NULL text binds NULL */
				sqlite3_bind_text(ins, c + 2, rows[i].col[c], rows[i].len[c],
				    SQLITE_STATIC);
			if (sqlite3_step(ins) != SQLITE_DONE)
				die("insert", out);
			sqlite3_reset(ins);
		}
		exec(out, "COMMIT");
		cpu_ins += seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
		for (int64_t i = 0; i < k; i++)
			for (int c = 0; c < N_COLS; c++)
				free(rows[i].col[c]);
		done += k;
		if (done >= next_mark || k < group) {
			printf("%10lld %10.2f %12.0f %14.0f %12.2f\n", (long long)done,
			    cpu_ins, (double)done / cpu_ins,
			    (double)(done - mark_rows) / (cpu_ins - mark_cpu), cpu_rd);
			fflush(stdout);
			mark_rows = done;
			mark_cpu = cpu_ins;
			next_mark += tenth;
		}
		if (k < group)
			break;
	}
	printf("%lld rows (%.0f bytes of text a row): inserts %.2f s of CPU, %.0f msg/s; "
	    "reading %.2f s; wall %.2f s\n", (long long)done, done ? bytes / (double)done : 0.0,
	    cpu_ins, (double)done / cpu_ins, cpu_rd, seconds(CLOCK_MONOTONIC) - wall0);
	sqlite3_finalize(rd);
	sqlite3_finalize(ins);
	sqlite3_close(out);
	mb_index_close(&src);
	free(rows);
	return 0;
}
