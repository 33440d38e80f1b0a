/*
 * bench_normalise: the foundation benchmark (run by scripts/bench-normalise).
 *
 *   bench_normalise CORPUS_DIR COUNT INDEX_PATH
 *
 * Loads every *.txt message under CORPUS_DIR (the SpamAssassin corpus from
 * npm), clones them with fresh Message-IDs up to COUNT, and measures on one
 * core: parse + normalise alone; parse + normalise + FTS5 insert in batched
 * transactions (mb_index_upsert_batch, as syncd's writer does); index bytes
 * per message; top-20 BM25 search with snippet over 20 representative queries
 * (p50/p95).  Prints markdown table rows.  Rates are given per second of wall
 * time and per second of this process's CPU time: the machine is shared, and
 * CPU time is what other load does not inflate.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/log.h"
#include "mailbox/mime.h"

#ifndef BATCH
#define BATCH	1000
#endif

struct corpus {
	char	**msgs;		/* owned raw messages */
	size_t	 *lens;
	size_t	  n, cap;
};

static void
corpus_add(struct corpus *c, char *raw, size_t len)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		c->msgs = mb_xrealloc(c->msgs, c->cap * sizeof(*c->msgs));
		c->lens = mb_xrealloc(c->lens, c->cap * sizeof(*c->lens));
	}
	c->msgs[c->n] = raw;
	c->lens[c->n] = len;
	c->n++;
}

/* Read one corpus file, dropping the mbox "From " line.  Caller frees. */
static char *
read_message(const char *path, size_t *len_r)
{
	FILE *f = fopen(path, "rb");
	struct mb_buf b = MB_BUF_INIT(64u << 20);
	char chunk[65536];
	size_t n, skip = 0;

	if (f == NULL)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		mb_buf_add(&b, chunk, n);
	fclose(f);
	if (b.len > 5 && memcmp(b.data, "From ", 5) == 0) {
		char *nl = memchr(b.data, '\n', b.len);

		skip = nl ? (size_t)(nl - b.data) + 1 : b.len;
	}
	*len_r = b.len - skip;
	char *out = mb_xmalloc(*len_r + 1);

	memcpy(out, b.data + skip, *len_r);
	out[*len_r] = '\0';
	mb_buf_release(&b);
	return out;
}

static void
load_dir(struct corpus *c, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		mb_fatal("opendir %s", dir);
	while ((e = readdir(d)) != NULL) {
		struct mb_buf path = MB_BUF_INIT(4096);
		struct stat st;
		size_t nlen = strlen(e->d_name);

		if (e->d_name[0] == '.')
			continue;
		mb_buf_addf(&path, "%s/%s", dir, e->d_name);
		if (stat(path.data, &st) == 0 && S_ISDIR(st.st_mode))
			load_dir(c, path.data);
		else if (nlen > 4 && strcmp(e->d_name + nlen - 4, ".txt") == 0) {
			size_t len;
			char *raw = read_message(path.data, &len);

			if (raw)
				corpus_add(c, raw, len);
		}
		mb_buf_release(&path);
	}
	closedir(d);
}

/*
 * A copy of raw with its Message-ID replaced by a fresh one, so clones thread
 * and index as distinct messages.  Caller frees.
 */
static char *
clone_message(const char *raw, size_t len, size_t serial, size_t *len_r)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX);
	const char *p = raw, *end = raw + len;
	int skipping = 0;

	mb_buf_addf(&b, "Message-ID: <clone-%zu@bench.imap-mcp>\n", serial);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (p[0] == '\n' || (p[0] == '\r' && p + 1 < end && p[1] == '\n')) {
			mb_buf_add(&b, p, (size_t)(end - p));	/* the body, untouched */
			break;
		}
		if (p[0] != ' ' && p[0] != '\t')
			skipping = (size_t)(end - p) >= 11 && strncasecmp(p, "Message-ID:", 11) == 0;
		if (!skipping)
			mb_buf_add(&b, p, (size_t)(next - p));
		p = next;
	}
	return mb_buf_detach(&b, len_r);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static const char *const queries[20] = {
	"money", "linux", "please", "free", "email", "list", "python", "razor",
	"perl script", "mailing list", "credit card", "\"click here\"", "\"spam assassin\"",
	"spamassassin", "subject: free", "from: rssfeeds", "exmh", "unsubscribe",
	"inter*", "会議",
};

int
main(int argc, char **argv)
{
	struct corpus base = { 0 }, all = { 0 };
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	struct mb_mime_opts opts = MB_MIME_OPTS_DEFAULT;
	size_t count, parse_errors = 0;
	double t0, c0, t_norm, t_index, c_norm, c_index;
	int64_t folder_id;
	struct stat st;

	if (argc != 4) {
		fprintf(stderr, "usage: %s CORPUS_DIR COUNT INDEX_PATH\n", argv[0]);
		return 2;
	}
	mb_log_init("bench", MB_LOG_WARNING);
	mb_mime_global_init();
	count = strtoul(argv[2], NULL, 10);
	load_dir(&base, argv[1]);
	if (base.n == 0)
		mb_fatalx("no *.txt messages under %s", argv[1]);
	for (size_t i = 0; i < count; i++) {
		size_t len;
		char *raw = clone_message(base.msgs[i % base.n], base.lens[i % base.n], i, &len);

		corpus_add(&all, raw, len);
	}
	size_t bytes = 0;
	for (size_t i = 0; i < all.n; i++)
		bytes += all.lens[i];

	/* 1. parse + normalise alone */
	t0 = now_s();
	c0 = cpu_s();
	for (size_t i = 0; i < all.n; i++) {
		struct mb_msg *m = NULL;

		if (mb_mime_parse(all.msgs[i], all.lens[i], &opts, &m, &err) == -1)
			mb_fatalx("parse: %s", err.msg);
		parse_errors += m->parse_error != NULL;
		mb_msg_free(&m);
	}
	t_norm = now_s() - t0;
	c_norm = cpu_s() - c0;

	/* 2. parse + normalise + upsert, BATCH rows per transaction */
	unlink(argv[3]);
	if (mb_index_open(argv[3], MB_INDEX_RW, &idx, &err) == -1 ||
	    mb_index_folder_ensure(idx, "INBOX", NULL, &folder_id, &err) == -1)
		mb_fatalx("index: %s", err.msg);
	if (getenv("BENCH_SQL") != NULL)	/* experiments: PRAGMAs, FTS5 settings */
		sqlite3_exec(mb_index_db(idx), getenv("BENCH_SQL"), NULL, NULL, NULL);
	t0 = now_s();
	c0 = cpu_s();
	struct mb_index_row *rows = mb_xcalloc(BATCH, sizeof(*rows));
	struct mb_msg **msgs = mb_xcalloc(BATCH, sizeof(*msgs));

	for (size_t i = 0; i < all.n; i += BATCH) {
		size_t n = 0;

		for (size_t j = i; j < all.n && j < i + BATCH; j++, n++) {
			if (mb_mime_parse(all.msgs[j], all.lens[j], &opts, &msgs[n], &err) == -1)
				mb_fatalx("parse: %s", err.msg);
			rows[n] = (struct mb_index_row){ .folder_id = folder_id, .uidvalidity = 1,
			    .uid = (uint32_t)j + 1, .size = all.lens[j], .msg = msgs[n] };
		}
		if (mb_index_upsert_batch(idx, rows, n, &err) == -1)
			mb_fatalx("upsert: %s", err.msg);
		for (size_t j = 0; j < n; j++)
			mb_msg_free(&msgs[j]);
	}
	free(rows);
	free(msgs);
	t_index = now_s() - t0;
	c_index = cpu_s() - c0;
	sqlite3_exec(mb_index_db(idx), "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	if (stat(argv[3], &st) == -1)
		mb_fatal("stat %s", argv[3]);

	/* 3. search: top 20 by BM25 with a snippet, each query REPS times */
	enum { REPS = 25 };
	double lat[MB_ARRAY_LEN(queries) * REPS], clat[MB_ARRAY_LEN(queries) * REPS];
	size_t nlat = 0;
	sqlite3_stmt *q;
	const char *sql =
	    "SELECT m.id, m.subject, snippet(messages_fts, 3, '[', ']', '...', 12)"
	    " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
	    " WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT 20";

	if (sqlite3_prepare_v2(mb_index_db(idx), sql, -1, &q, NULL) != SQLITE_OK)
		mb_fatalx("prepare: %s", sqlite3_errmsg(mb_index_db(idx)));
	for (size_t i = 0; i < MB_ARRAY_LEN(queries); i++) {
		/* The benchmark speaks FTS5 directly; "subject: x" is a column filter. */
		struct mb_buf fts = MB_BUF_INIT(1024);

		if (strncmp(queries[i], "subject: ", 9) == 0)
			mb_buf_addf(&fts, "subject : %s", queries[i] + 9);
		else if (strncmp(queries[i], "from: ", 6) == 0)
			mb_buf_addf(&fts, "from_text : %s", queries[i] + 6);
		else
			mb_buf_adds(&fts, queries[i]);
		for (int r = 0; r < REPS; r++) {
			size_t hits = 0;

			t0 = now_s();
			c0 = cpu_s();
			sqlite3_bind_text(q, 1, fts.data, (int)fts.len, SQLITE_STATIC);
			while (sqlite3_step(q) == SQLITE_ROW)
				hits++;
			sqlite3_reset(q);
			clat[nlat] = (cpu_s() - c0) * 1000.0;
			lat[nlat++] = (now_s() - t0) * 1000.0;
			if (r == 0) {
				printf("query %-18s %2zu hits\n", queries[i], hits);
			}
		}
		mb_buf_release(&fts);
	}
	sqlite3_finalize(q);
	qsort(lat, nlat, sizeof(lat[0]), cmp_double);
	qsort(clat, nlat, sizeof(clat[0]), cmp_double);

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("\n| measure | value |\n|---|---|\n");
	printf("| messages | %zu (%zu distinct corpus messages, %.1f MB raw) |\n", all.n, base.n,
	    (double)bytes / 1e6);
	printf("| parse + normalise (one core) | %.0f msg/s wall, %.0f msg/CPU-s |\n",
	    (double)all.n / t_norm, (double)all.n / c_norm);
	printf("| parse + normalise + FTS5 insert, %d per transaction | %.0f msg/s wall, "
	    "%.0f msg/CPU-s |\n", BATCH, (double)all.n / t_index, (double)all.n / c_index);
	printf("| index size | %.2f MB, %.0f bytes/message |\n", (double)st.st_size / 1e6,
	    (double)st.st_size / (double)all.n);
	printf("| search top-20 BM25 + snippet, %zu queries x %d | p50 %.2f ms, p95 %.2f ms wall; "
	    "p50 %.2f ms, p95 %.2f ms CPU |\n", MB_ARRAY_LEN(queries), REPS, lat[nlat / 2],
	    lat[nlat * 95 / 100], clat[nlat / 2], clat[nlat * 95 / 100]);
	printf("| messages with a parse note | %zu |\n", parse_errors);
	printf("| peak RSS | %ld MB |\n", ru.ru_maxrss / 1024);
	mb_index_close(&idx);
	for (size_t i = 0; i < base.n; i++)
		free(base.msgs[i]);
	for (size_t i = 0; i < all.n; i++)
		free(all.msgs[i]);
	free(base.msgs);
	free(base.lens);
	free(all.msgs);
	free(all.lens);
	return 0;
}
