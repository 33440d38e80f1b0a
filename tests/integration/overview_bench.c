/*
 * overview_bench: the overviews (mailbox/overview.h) timed in-process on a
 * read-only handle, as mcpd runs them.  Each case runs REPS times; one line
 * per case: its name, then p50 and p95 of wall and CPU time in ms.
 *
 *   overview_bench INDEX REPS [ME]
 *
 * ME (an address) is recorded as the account's own first (through a
 * read-write handle) when the index knows none, for awaiting_reply and
 * find_contacts' sent_to; that open also applies any migration the index
 * lacks, and recording the address rebuilds the overview summaries
 * (migration 0011), so its wall and CPU time are printed first.
 * docs/benchmarks.md has the figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mailbox/account.h"
#include "mailbox/index.h"
#include "mailbox/overview.h"
#include "mailbox/query.h"

enum kind { COUNT, CONTACTS, AWAIT };

struct bcase {
	const char	*name;
	enum kind	 kind;
	enum mb_count_group g;
	const char	*text;		/* count: the query; contacts: the fragment */
	unsigned	 dirs;
};

static const struct bcase cases[] = {
	{ "count folder", COUNT, MB_COUNT_FOLDER, NULL, 0 },
	{ "count year", COUNT, MB_COUNT_YEAR, NULL, 0 },
	{ "count month", COUNT, MB_COUNT_MONTH, NULL, 0 },
	{ "count day", COUNT, MB_COUNT_DAY, NULL, 0 },
	{ "count sender", COUNT, MB_COUNT_SENDER, NULL, 0 },
	{ "count sender_domain", COUNT, MB_COUNT_SENDER_DOMAIN, NULL, 0 },
	{ "count label", COUNT, MB_COUNT_LABEL, NULL, 0 },
	{ "count sender, after:2002-09-01", COUNT, MB_COUNT_SENDER, "after:2002-09-01", 0 },
	{ "count sender, is:unread", COUNT, MB_COUNT_SENDER, "is:unread", 0 },
	{ "count month, word 'list'", COUNT, MB_COUNT_MONTH, "list", 0 },
	{ "count sender_domain, word 'razor'", COUNT, MB_COUNT_SENDER_DOMAIN, "razor", 0 },
	{ "contacts (everyone)", CONTACTS, 0, NULL, 0 },
	{ "contacts 'john'", CONTACTS, 0, "john", 0 },
	{ "contacts '@example.com'", CONTACTS, 0, "@example.com", 0 },
	{ "awaiting both", AWAIT, 0, NULL, MB_AWAIT_OTHERS | MB_AWAIT_ME },
	{ "awaiting others", AWAIT, 0, NULL, MB_AWAIT_OTHERS },
	{ "awaiting me", AWAIT, 0, NULL, MB_AWAIT_ME },
};

static double
now_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return v[(int)(p * (n - 1) + 0.5)];
}

/* One run of c; exits on an error. */
static void
run(struct mb_index *idx, const struct bcase *c)
{
	struct mb_err err = { 0 };
	int rc = 0;

	if (c->kind == COUNT) {
		struct mb_query q;
		struct mb_count_page pg;

		mb_query_init(&q);
		if (c->text && mb_query_compile(c->text, strlen(c->text), &q, &err) == -1)
			rc = -1;
		if (rc == 0)
			rc = mb_overview_count(idx, &q, c->g, 0, 20, &pg, &err);
		mb_count_page_release(&pg);
		mb_query_release(&q);
	} else if (c->kind == CONTACTS) {
		struct mb_contact_page pg;

		rc = mb_overview_contacts(idx, c->text, 0, 20, &pg, &err);
		mb_contact_page_release(&pg);
	} else {
		struct mb_await_page pg;

		rc = mb_overview_awaiting(idx, c->dirs, (int64_t)time(NULL), 0, 20, &pg, &err);
		mb_await_page_release(&pg);
	}
	if (rc == -1) {
		fprintf(stderr, "%s: %s\n", c->name, err.msg);
		exit(1);
	}
}

/* Record me as the account's address when the index knows none. */
static void
ensure_me(const char *path, const char *me)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	struct mb_account_address a = { me, "MY_ADDRESSES" };
	char **have = NULL;

	if (mb_index_open(path, MB_INDEX_RW, &idx, &err) == -1 ||
	    mb_account_addresses(idx, &have, &err) == -1 ||
	    (have[0] == NULL && mb_account_set_addresses(idx, &a, 1, &err) == -1)) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		exit(1);
	}
	mb_account_addresses_free(&have);
	mb_index_close(&idx);
}

int
main(int argc, char **argv)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	char *end = NULL;
	long n = argc >= 3 ? strtol(argv[2], &end, 10) : 0;
	int reps = (int)n;

	if (argc < 3 || end == argv[2] || *end != '\0' || n < 1 || n > 100000) {
		fprintf(stderr, "usage: overview_bench INDEX REPS [ME]\n");
		return 2;
	}
	if (argc > 3) {
		double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);

		ensure_me(argv[1], argv[3]);
		printf("%-36s wall %9.2f | cpu %9.2f ms\n", "open rw, migrate, record ME",
		    now_ms(CLOCK_MONOTONIC) - w0, now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0);
	}
	if (mb_index_open(argv[1], MB_INDEX_RO, &idx, &err) == -1) {
		fprintf(stderr, "%s: %s\n", argv[1], err.msg);
		return 1;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double *wall = calloc((size_t)reps, sizeof(double));
		double *cpu = calloc((size_t)reps, sizeof(double));

		if (wall == NULL || cpu == NULL)
			return 1;

		run(idx, &cases[i]);	/* warm the statement cache and the pages */
		for (int r = 0; r < reps; r++) {
			double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);

			run(idx, &cases[i]);
			wall[r] = now_ms(CLOCK_MONOTONIC) - w0;
			cpu[r] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		}
		printf("%-36s wall p50 %7.2f p95 %7.2f | cpu p50 %7.2f p95 %7.2f ms\n",
		    cases[i].name, pct(wall, reps, 0.5), pct(wall, reps, 0.95), pct(cpu, reps, 0.5),
		    pct(cpu, reps, 0.95));
		free(wall);
		free(cpu);
	}
	mb_index_close(&idx);
	return 0;
}
