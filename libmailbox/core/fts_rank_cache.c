/*
 * The ranking's statistics kept between searches (fts_rank.c): each
 * query's row count, average length, and per phrase its IDF and rows, and
 * once a search counted them the rows the query matches (its total), for
 * as long as the full-text index holds what it held when they were counted.
 *
 * They are kept for the process, not per connection.  mcpd searches on a
 * connection per thread (MCP_THREADS, 4 by default), and a client's
 * requests reach whichever thread its HTTP connection is on: behind the
 * reverse proxy, whose pool of upstream connections spreads them, the next
 * page of a search, or the same search again, usually ran on another
 * connection and counted its statistics afresh, a walk of each phrase's
 * doclist (at 1,000,000 messages 20 to 190 ms for a common word, a phrase
 * or a prefix; docs/benchmarks.md, "Statistics kept for the process").
 *
 * An entry is found by three things that together say which counts it
 * holds: the database file (sqlite3_db_filename; a read-write connection's
 * entries are its own, since it may see a transaction of its own that will
 * be rolled back, and so are an in-memory database's), the full-text
 * index's records when they were counted (FTS5's structure record, with its
 * write counter and segments, and its averages record: fts_key_read), and
 * the MATCH text.  A connection reads those records again whenever its data
 * version moved (a commit by anyone), so it asks only for entries of the
 * index it reads now; entries of an older index are never found again and
 * make room in least-recently-used order.  Most of syncd's commits leave
 * the full-text index as it was (flag syncs, moves, labels, the block
 * bounds), and entries outlive them (docs/benchmarks.md, "Statistics kept
 * across commits").
 *
 * One mutex guards the table; an entry is copied in and out under it, so
 * no caller holds a pointer into it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/util.h"

#include "rank-private.h"

#define RANK_KEPT	128	/* queries whose statistics the process keeps */

/* One query's statistics, as of one full-text index of one file. */
struct rank_kept {
	uint64_t	 hash;		/* of file and key, compared first */
	char		*file;		/* owned: rank_view's file; NULL: a free slot */
	unsigned char	*fts_key;	/* owned: the full-text index's records then */
	size_t		 fts_key_len;
	char		*key;		/* owned: the MATCH text */
	int		 n_phrase;
	double		 avgdl;		/* average row length in tokens */
	double		*stats;		/* owned: n_phrase IDFs, then n_phrase row counts */
	int64_t		 total;		/* the rows the query matches; -1: not counted */
	uint64_t	 used;		/* LRU clock */
};

static struct {
	pthread_mutex_t		mu;
	struct rank_kept	slot[RANK_KEPT];
	uint64_t		clock;
} kept = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* The full-text index's records that every statistic depends on. */
static const char fts_key_sql[] =
	"SELECT block FROM main.messages_fts_data WHERE id IN (1, 10) ORDER BY id";

/*
 * The records of fts_key_sql, concatenated with their lengths, into *key_r
 * (owned by the caller; NULL on failure); SQLite's result code.  Run
 * inside the calling statement's read transaction, so it sees the index
 * the statement ranks.
 */
static int
fts_key_read(sqlite3 *db, unsigned char **key_r, size_t *len_r)
{
	sqlite3_stmt *st = NULL;
	unsigned char *key = NULL;
	size_t len = 0;
	int rc = sqlite3_prepare_v2(db, fts_key_sql, -1, &st, NULL);

	while (st != NULL && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 0);

		key = mb_xrealloc(key, len + sizeof(n) + n + 1);
		memcpy(key + len, &n, sizeof(n));
		if (n > 0)
			memcpy(key + len + sizeof(n), sqlite3_column_blob(st, 0), n);
		len += sizeof(n) + n;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(key);
		*key_r = NULL;
		*len_r = 0;
		return rc == SQLITE_OK ? SQLITE_ERROR : rc;
	}
	*key_r = key;
	*len_r = len;
	return SQLITE_OK;
}

/*
 * Which entries db's connection may share (owned by the caller): a
 * read-only connection's file's; else the connection's own (its address
 * beside the file, or alone for a database in memory).
 */
static char *
view_file(sqlite3 *db)
{
	const char *f = sqlite3_db_filename(db, "main");
	char *out;

	if (f != NULL && f[0] != '\0' && sqlite3_db_readonly(db, "main") == 1)
		return mb_xstrdup(f);
	out = mb_xmalloc(strlen(f != NULL ? f : "") + 32);
	sprintf(out, "%p %s", (void *)db, f != NULL ? f : "");
	return out;
}

void
rank_view_release(struct rank_view *v)
{
	free(v->fts_key);
	free(v->file);
	memset(v, 0, sizeof(*v));
}

bool
rank_view_current(struct rank_view *v, sqlite3 *db)
{
	unsigned version = 0;
	unsigned char *key = NULL;
	size_t len = 0;

	if (v->file == NULL)
		v->file = view_file(db);
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &version) != SQLITE_OK)
		key = NULL;
	else if (v->checked && v->version == version)
		return true;
	else if (fts_key_read(db, &key, &len) != SQLITE_OK)
		key = NULL;
	free(v->fts_key);
	v->fts_key = key;
	v->fts_key_len = key != NULL ? len : 0;
	v->checked = key != NULL;
	v->version = version;
	return v->checked;
}

/* FNV-1a of the file, a NUL and the MATCH text. */
static uint64_t
kept_hash(const char *file, const char *key)
{
	uint64_t h = 14695981039346656037u;

	for (const char *p = file; ; p++) {
		h = (h ^ (unsigned char)*p) * 1099511628211u;
		if (*p == '\0')
			break;
	}
	for (const char *p = key; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211u;
	return h;
}

/* The slot of v's index for key; NULL: none.  Called with the mutex held. */
static struct rank_kept *
kept_find(const struct rank_view *v, uint64_t hash, const char *key)
{
	for (size_t i = 0; i < RANK_KEPT; i++) {
		struct rank_kept *s = &kept.slot[i];

		if (s->file != NULL && s->hash == hash && s->fts_key_len == v->fts_key_len &&
		    strcmp(s->key, key) == 0 && strcmp(s->file, v->file) == 0 &&
		    memcmp(s->fts_key, v->fts_key, v->fts_key_len) == 0)
			return s;
	}
	return NULL;
}

bool
rank_kept_get(const struct rank_view *v, const char *key, int n_phrase, int max_phrase,
    int *n_r, double *avgdl_r, double *stats)
{
	uint64_t hash = kept_hash(v->file, key);
	struct rank_kept *s;
	bool found = false;

	pthread_mutex_lock(&kept.mu);
	s = kept_find(v, hash, key);
	if (s != NULL && (n_phrase == 0 || s->n_phrase == n_phrase) &&
	    s->n_phrase <= max_phrase) {
		s->used = ++kept.clock;
		*n_r = s->n_phrase;
		*avgdl_r = s->avgdl;
		memcpy(stats, s->stats, 2 * (size_t)s->n_phrase * sizeof(double));
		found = true;
	}
	pthread_mutex_unlock(&kept.mu);
	return found;
}

static void
kept_clear(struct rank_kept *s)
{
	free(s->file);
	free(s->fts_key);
	free(s->key);
	free(s->stats);
	memset(s, 0, sizeof(*s));
}

void
rank_kept_put(const struct rank_view *v, const char *key, int n_phrase, double avgdl,
    const double *stats)
{
	uint64_t hash = kept_hash(v->file, key);
	struct rank_kept *s;

	pthread_mutex_lock(&kept.mu);
	if ((s = kept_find(v, hash, key)) == NULL) {
		s = &kept.slot[0];
		for (size_t i = 1; i < RANK_KEPT; i++)
			if (kept.slot[i].used < s->used)
				s = &kept.slot[i];
	}
	kept_clear(s);
	s->hash = hash;
	s->file = mb_xstrdup(v->file);
	s->fts_key = mb_xmalloc(v->fts_key_len + 1);
	memcpy(s->fts_key, v->fts_key, v->fts_key_len);
	s->fts_key_len = v->fts_key_len;
	s->key = mb_xstrdup(key);
	s->n_phrase = n_phrase;
	s->avgdl = avgdl;
	s->stats = mb_xmalloc(2 * (size_t)n_phrase * sizeof(double) + 1);
	memcpy(s->stats, stats, 2 * (size_t)n_phrase * sizeof(double));
	s->total = -1;
	s->used = ++kept.clock;
	pthread_mutex_unlock(&kept.mu);
}

bool
rank_kept_total_get(const struct rank_view *v, const char *key, int64_t *total_r)
{
	struct rank_kept *s;
	bool found = false;

	pthread_mutex_lock(&kept.mu);
	s = kept_find(v, kept_hash(v->file, key), key);
	if (s != NULL && s->total >= 0) {
		s->used = ++kept.clock;
		*total_r = s->total;
		found = true;
	}
	pthread_mutex_unlock(&kept.mu);
	return found;
}

void
rank_kept_total_put(const struct rank_view *v, const char *key, int64_t total)
{
	struct rank_kept *s;

	pthread_mutex_lock(&kept.mu);
	s = kept_find(v, kept_hash(v->file, key), key);
	if (s != NULL)
		s->total = total;
	pthread_mutex_unlock(&kept.mu);
}
