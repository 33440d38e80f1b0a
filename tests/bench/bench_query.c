/*
 * bench_query: the query language's filters through the search engine, the
 * way mcpd runs them (mb_search_run on a read-only handle, one page of 20,
 * total included), for scripts/bench-query and scripts/bench-outliers.  Each
 * query is run REPS times after one warm-up; one line per query: p50 and
 * p95 wall time, the mean CPU time of the thread (both in ms), hits on the
 * page, the total and whether it is exact, and the warm-up's CPU time: the
 * query's first run on the connection, which also computes the statistics
 * the ranking keeps per query (fts_rank.c), as a search a person has not
 * just made does.  The
 * handle is set up as mcpd sets up its own (mcpd/server.c): SQLite in
 * multi-thread mode, the index read through a mapping, and freed memory
 * kept for the next search (glibc's defaults map a body's copy afresh or
 * trim the heap and grow it again: a page of 200 KB bodies then measured
 * 2 to 19 ms depending on the queries run before it).
 *
 *   bench_query INDEX REPS QUERY...
 *
 * BENCH_PREFIX=walk walks every prefix the block walk can take (whatever
 * share of its rows its bounded words hold), BENCH_PREFIX=whole reads every
 * prefix whole: the two sides of idx_rank_prefix_min_share's choice
 * (docs/benchmarks.md, "Prefixes walked only when one word holds them").
 *
 * BENCH_OR=whole reads an OR of words whole, as before the block walk took
 * it (idx_rank_or_walked); BENCH_NOT=whole a query with a NOT (-word)
 * (idx_rank_not_walked); BENCH_WORDS=whole several words every match holds
 * all of (idx_rank_words_walked), BENCH_WORDS=walk walks them however few
 * their matches (idx_rank_min_matches 0); BENCH_PHRASES=whole a phrase of
 * several words beside other phrases (idx_rank_phrases_walked).
 *
 * BENCH_AND_SHARE=N walks several words bounded at one length whose
 * guessed matches are an Nth of the ids or more (idx_rank_and_share).
 *
 * BENCH_ONE_LENGTH=apart bounds a few phrases (an AND, an OR, an OR
 * beside an AND) each at its best, not at one length together
 * (idx_rank_one_length).
 *
 * BENCH_OFFSET=N searches the page N hits down instead of the first (a
 * deep page: the walk's floor is the (N + 20)th score).
 *
 * BENCH_FLOOR_READS=N: the ranges the block walk reads after the page is
 * full before it chooses between more ranges and one statement over the
 * blocks left (idx_rank_floor_reads; docs/benchmarks.md, "The choice of
 * one statement made later; a deep page's rows cut by selection").
 *
 * BENCH_NO_NARROW_IDS=1 reads the matches of a narrow scope (a date range,
 * a small folder) without the bitmap of its ids (idx_narrow_ids_used), as
 * before it.
 *
 * BENCH_COMMON=off reads words every match holds, some of them in most
 * messages, through FTS5 alone, without those words' kept hits
 * (idx_common_used), as before them.
 *
 * BENCH_COUNTERS=1: after each query's line, what the engine did in its
 * last repetition (BENCH_COUNTERS=first: in its warm-up, the query's
 * first search), from its counters: walks, the rows whose hits were read
 * (and of them those left before all their phrases' hits were: cut short)
 * and those measured (a length read), ranges read as one statement over
 * the blocks left, rows joined to the filters, lengths from the kept
 * blocks, searches whose common words were read from their kept hits,
 * and the virtual machine steps of the total's statement and of
 * the statements that read the page's snippets from the positions.
 *
 * BENCH_IDS=1: the last repetition's page, its ids in order, on stderr: to
 * check that two builds give the same pages.  BENCH_IDS=snippets: each
 * hit's snippet, attachment and attachment snippet too.
 *
 * BENCH_COUNT=GROUP runs count_messages' count instead (mb_overview_count,
 * grouped by GROUP: folder, year, month, day, sender, sender_domain or
 * label; a page of 20 groups): hits are the page's groups, total the
 * messages counted; with BENCH_IDS=1 the groups and their counts.
 *
 * BENCH_TOUCH=1: before each repetition, a second (read-write) handle
 * commits a flag change to one message, as syncd's flag sync does, so that
 * every search measured is the first after a commit.  It writes to INDEX:
 * give it a copy.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"
#include "mailbox/search.h"

#include "../../libmailbox/core/rank-private.h"
#include "../../libmailbox/core/search-private.h"

static double
now_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The engine's counters (BENCH_COUNTERS), as they stood before a repetition. */
struct counters {
	uint64_t	walks, hits, cut, sized, rest, joined, lengths, total_steps, snippet_steps,
			list_steps, meets, common;
};

static void
counters_mark(struct counters *c)
{
	c->walks = idx_rank_walks + idx_rank_prefix_walks;
	c->hits = idx_rank_hits_read;
	c->cut = idx_rank_cut;
	c->sized = idx_rank_sized;
	c->rest = idx_rank_rest_reads;
	c->joined = idx_rank_joined;
	c->lengths = idx_rank_lengths_served;
	c->total_steps = idx_total_steps;
	c->snippet_steps = idx_snippet_steps;
	c->list_steps = idx_list_steps;
	c->meets = idx_meets;
	c->common = idx_common_reads;
}

/* The counters' growth from mark to now, on one line under the query's. */
static void
counters_print(const struct counters *mark, const struct counters *end)
{
	struct counters now = *end;

	printf("    walks %llu, hits read %llu (cut short %llu), measured %llu "
	    "(%llu from kept lengths), one statement over the rest %llu, joined %llu, "
	    "common words read from their hits %llu, the total's VM steps %llu, "
	    "the snippets' VM steps %llu, a list's VM steps %llu, "
	    "lists where two indexes met %llu\n",
	    (unsigned long long)(now.walks - mark->walks),
	    (unsigned long long)(now.hits - mark->hits),
	    (unsigned long long)(now.cut - mark->cut),
	    (unsigned long long)(now.sized - mark->sized),
	    (unsigned long long)(now.lengths - mark->lengths),
	    (unsigned long long)(now.rest - mark->rest),
	    (unsigned long long)(now.joined - mark->joined),
	    (unsigned long long)(now.common - mark->common),
	    (unsigned long long)(now.total_steps - mark->total_steps),
	    (unsigned long long)(now.snippet_steps - mark->snippet_steps),
	    (unsigned long long)(now.list_steps - mark->list_steps),
	    (unsigned long long)(now.meets - mark->meets));
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The page searched: BENCH_OFFSET's hits down (0: the first page). */
static int64_t page_offset;

/* One search of text; -1 with err. */
static int
once(struct mb_index *idx, const char *text, struct mb_search_page *pg, struct mb_err *err)
{
	struct mb_query q;
	int rc;

	mb_query_init(&q);
	if (mb_query_compile(text, strlen(text), &q, err) == -1)
		return -1;
	rc = mb_search_run(idx, &q, page_offset, 20, pg, err);
	mb_query_release(&q);
	return rc;
}

/*
 * One count of text grouped by g (BENCH_COUNT), as a page: hits the
 * groups on it, total the messages counted (exact); with ids, the groups
 * on stderr.  -1 with err.
 */
static int
once_count(struct mb_index *idx, const char *text, enum mb_count_group g, bool ids,
    size_t *hits_r, long long *total_r, struct mb_err *err)
{
	struct mb_count_page cpg;
	struct mb_query q;
	int rc;

	mb_query_init(&q);
	if (mb_query_compile(text, strlen(text), &q, err) == -1)
		return -1;
	rc = mb_overview_count(idx, &q, g, 0, 20, &cpg, err);
	mb_query_release(&q);
	if (rc == -1)
		return -1;
	*hits_r = cpg.n;
	*total_r = (long long)cpg.total;
	if (ids) {
		fprintf(stderr, "%s |", text);
		for (size_t k = 0; k < cpg.n; k++)
			fprintf(stderr, " %s=%lld", cpg.rows[k].key, (long long)cpg.rows[k].count);
		fprintf(stderr, "\n");
	}
	mb_count_page_release(&cpg);
	return 0;
}

/* Commit a flag change to the first message through rw (\\Flagged on, then off). */
static int
touch(struct mb_index *rw, struct mb_err *err)
{
	static const char sql[] = "SELECT folder_id, uidvalidity, uid, flags FROM messages "
	    "ORDER BY id LIMIT 1";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(mb_index_db(rw), sql, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return mb_err_set(err, MB_E_INTERNAL, "touch: no message to flag");
	}
	rc = mb_index_update_flags(rw, sqlite3_column_int64(st, 0),
	    (uint32_t)sqlite3_column_int64(st, 1), (uint32_t)sqlite3_column_int64(st, 2),
	    (unsigned)sqlite3_column_int64(st, 3) ^ MB_FLAG_FLAGGED, NULL, 0, err);
	sqlite3_finalize(st);
	return rc;
}

int
main(int argc, char **argv)
{
	struct mb_index *idx = NULL, *rw = NULL;
	struct mb_err err = { 0 };
	const char *prefix = getenv("BENCH_PREFIX");
	bool ids = getenv("BENCH_IDS") != NULL;
	bool snippets = ids && strcmp(getenv("BENCH_IDS"), "snippets") == 0;
	bool counters = getenv("BENCH_COUNTERS") != NULL;
	/* BENCH_COUNTERS=first: the warm-up's (a query's first search) */
	bool counters_first = counters && strcmp(getenv("BENCH_COUNTERS"), "first") == 0;
	const char *count_by = getenv("BENCH_COUNT");
	bool counting = count_by != NULL;
	enum mb_count_group group = MB_COUNT_FOLDER;
	int reps;
	double *wall;

	if (argc < 4 || (reps = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: bench_query INDEX REPS QUERY...\n");
		return 2;
	}
	if (prefix != NULL && strcmp(prefix, "walk") == 0)
		idx_rank_prefix_min_share = 0;
	else if (prefix != NULL && strcmp(prefix, "whole") == 0)
		idx_rank_prefix_min_matches = INT64_MAX;
	if (getenv("BENCH_OR") != NULL && strcmp(getenv("BENCH_OR"), "whole") == 0)
		idx_rank_or_walked = false;
	if (getenv("BENCH_NOT") != NULL && strcmp(getenv("BENCH_NOT"), "whole") == 0)
		idx_rank_not_walked = false;
	if (getenv("BENCH_WORDS") != NULL && strcmp(getenv("BENCH_WORDS"), "whole") == 0)
		idx_rank_words_walked = false;
	else if (getenv("BENCH_WORDS") != NULL && strcmp(getenv("BENCH_WORDS"), "walk") == 0)
		idx_rank_min_matches = 0;
	if (getenv("BENCH_AND_SHARE") != NULL)
		idx_rank_and_share = atoll(getenv("BENCH_AND_SHARE"));
	if (getenv("BENCH_ONE_LENGTH") != NULL && strcmp(getenv("BENCH_ONE_LENGTH"), "apart") == 0)
		idx_rank_one_length = false;
	if (getenv("BENCH_PHRASES") != NULL && strcmp(getenv("BENCH_PHRASES"), "whole") == 0)
		idx_rank_phrases_walked = false;
	if (getenv("BENCH_OFFSET") != NULL)
		page_offset = atoll(getenv("BENCH_OFFSET"));
	if (getenv("BENCH_FLOOR_READS") != NULL)
		idx_rank_floor_reads = atoll(getenv("BENCH_FLOOR_READS"));
	if (getenv("BENCH_COMMON") != NULL && strcmp(getenv("BENCH_COMMON"), "off") == 0)
		idx_common_used = false;
	if (getenv("BENCH_NO_NARROW_IDS") != NULL)
		idx_narrow_ids_used = false;
	if (counting && mb_count_group_parse(count_by, &group, &err) == -1) {
		fprintf(stderr, "bench_query: BENCH_COUNT: %s\n", err.msg);
		return 2;
	}
	(void)mallopt(M_MMAP_THRESHOLD, 8 << 20);	/* as mcpd/server.c's malloc_reuse() */
	(void)mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mb_index_per_thread_handles();
	if (mb_index_open(argv[1], MB_INDEX_RO, &idx, &err) == -1) {
		fprintf(stderr, "bench_query: %s\n", err.msg);
		return 1;
	}
	(void)mb_index_set_mmap(idx, MB_INDEX_READER_MMAP, &err);
	if (getenv("BENCH_TOUCH") != NULL &&
	    mb_index_open(argv[1], MB_INDEX_RW, &rw, &err) == -1) {
		fprintf(stderr, "bench_query: %s\n", err.msg);
		return 1;
	}
	wall = calloc((size_t)reps, sizeof(*wall));
	printf("%-48s %8s %8s %8s %5s %8s %9s\n", "query", "p50 ms", "p95 ms", "cpu ms", "hits",
	    "total", "first ms");
	for (int i = 3; i < argc; i++) {
		struct mb_search_page pg;
		struct counters mark = { 0 }, end = { 0 };
		int counted = counters_first ? -1 : reps - 1;	/* the repetition counted */
		double cpu = 0, first = 0;
		size_t hits = 0;
		long long total = 0;
		int exact = 1;

		for (int r = -1; r < reps; r++) {
			if (r == counted)
				counters_mark(&mark);
			if (rw != NULL && r >= 0 && touch(rw, &err) == -1) {
				fprintf(stderr, "bench_query: %s\n", err.msg);
				return 1;
			}
			double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);

			if (counting ? once_count(idx, argv[i], group, ids && r == reps - 1, &hits,
			    &total, &err) == -1 : once(idx, argv[i], &pg, &err) == -1) {
				fprintf(stderr, "bench_query: '%s': %s\n", argv[i], err.msg);
				return 1;
			}
			if (r == counted)
				counters_mark(&end);
			if (r >= 0) {
				wall[r] = now_ms(CLOCK_MONOTONIC) - w0;
				cpu += now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
			} else
				first = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
			if (counting)
				continue;
			if (ids && r == reps - 1) {
				fprintf(stderr, "%s |", argv[i]);
				for (size_t k = 0; k < pg.n; k++)
					fprintf(stderr, " %lld", (long long)pg.hits[k].id);
				fprintf(stderr, "\n");
				for (size_t k = 0; snippets && k < pg.n; k++)
					fprintf(stderr, "  %lld: %s | %s | %s\n",
					    (long long)pg.hits[k].id, pg.hits[k].snippet,
					    pg.hits[k].att_name ? pg.hits[k].att_name : "-",
					    pg.hits[k].att_snippet ? pg.hits[k].att_snippet : "-");
			}
			hits = pg.n;
			total = (long long)pg.total;
			exact = pg.total_exact;
			mb_search_page_release(&pg);
		}
		qsort(wall, (size_t)reps, sizeof(*wall), cmp_double);
		printf("%-48s %8.2f %8.2f %8.2f %5zu %7lld%s %9.2f\n", argv[i], wall[reps / 2],
		    wall[(reps * 95 + 99) / 100 - 1], cpu / reps, hits, total, exact ? "" : "+",
		    first);
		if (counters)
			counters_print(&mark, &end);
	}
	free(wall);
	mb_index_close(&rw);
	mb_index_close(&idx);
	return 0;
}
