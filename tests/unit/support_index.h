/*
 * A test index on a real SQLite file under mkdtemp, and one message into
 * it, for the unit tests and fuzz_jsonrpc that use a small real index.
 */
#ifndef MB_TEST_SUPPORT_INDEX_H
#define MB_TEST_SUPPORT_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mb_index;
struct sqlite3;

/* A fresh read-write index with a folder INBOX (id inbox). */
struct mb_test_index {
	char		 dir[64];
	char		 path[128];
	struct mb_index	*idx;
	int64_t		 inbox;
	struct mb_index	*ro;	/* mb_test_index_reader()'s; NULL until asked */
};
/*
 * Record folder name as examined under UIDVALIDITY 1 (the one mb_test_put
 * writes), as a sync tick does before it indexes a row: readers serve only
 * rows of their folder's current UIDVALIDITY.  Exits on failure.
 */
void	mb_test_folder_examined(struct mb_index *idx, const char *name);
/* Open t under /tmp/<tag>.XXXXXX (INBOX examined); exits on failure. */
void	mb_test_index_open(struct mb_test_index *t, const char *tag);
/* t's read-only handle, as mcpd reads, opened on first use (borrowed: t's); exits on failure. */
struct mb_index	*mb_test_index_reader(struct mb_test_index *t);
/* Close t (and its reader) and remove its directory. */
void	mb_test_index_close(struct mb_test_index *t);
/* cmocka setup and teardown: *state is a struct mb_test_index, opened and closed. */
int	mb_test_index_setup(void **state);
int	mb_test_index_teardown(void **state);
/* A cmocka test run on a fresh test index (include cmocka.h first). */
#define MB_TEST_INDEX(f)	cmocka_unit_test_setup_teardown(f, mb_test_index_setup, \
				    mb_test_index_teardown)
/*
 * A second connection to t's file holding the write lock (BEGIN IMMEDIATE),
 * with t->idx's busy wait cut to 50 ms, so a write through t->idx meets a
 * busy database at once.  Give it back with mb_test_index_unlock().
 */
struct sqlite3	*mb_test_index_lock(struct mb_test_index *t);
void		 mb_test_index_unlock(struct sqlite3 **dbp);
/* The first column of the first row of sql (fixed text) on t, -1 without a row. */
int64_t	mb_test_index_int(struct mb_test_index *t, const char *sql);
/*
 * FTS5's integrity check of the full-text index, its content included (rank
 * 1), on idx, a read-write handle (the check is an INSERT); exits on failure.
 */
void	mb_test_fts_consistent(struct mb_index *idx);

struct mb_test_msg {
	const char	*subject;
	const char	*from;		/* an address; NULL: alice@example.com; "": no From */
	const char	*from_name;	/* NULL: none */
	const char	*to, *to_name;	/* one To address and its name, or NULL */
	const char	*cc;		/* one Cc address, or NULL */
	uint32_t	 uidvalidity;	/* 0: 1 */
	const char	*body;		/* NULL: empty */
	int64_t		 date;		/* the Date header, unix seconds; 0: none */
	int64_t		 internaldate;
	unsigned	 flags;		/* enum mb_flag bits */
	const char	*keywords;	/* IMAP keywords, space-separated, or NULL */
	const char	*message_id;	/* NULL: none; likewise in_reply_to */
	const char	*in_reply_to;
	uint64_t	 size;		/* RFC822.SIZE; 0: 100 */
	bool		 headers_only;	/* over the size cap: only headers fetched */
};

/* Upsert t as folder's uid (UIDVALIDITY 1 unless t says); t is borrowed.  Exits on failure. */
void	mb_test_put(struct mb_index *idx, int64_t folder, uint32_t uid,
	    const struct mb_test_msg *t);

/*
 * The order a search promises, computed independently of the engine: every
 * match of the query text, by FTS5's own bm25() with the engine's column
 * weights, then the date (newest first, undated last), then the id (highest
 * first), into ids (room for max); returns how many.  Exits on failure.
 */
size_t	mb_test_bm25_order(struct mb_index *idx, const char *text, int64_t *ids, size_t max);
/* FTS5's bm25() of row id for text (the query language's), as mcpd weighs the columns. */
double	mb_test_bm25_of(struct mb_index *idx, const char *text, int64_t id);
/* mb_index_rank_build() on t, up to 1,000 chunks: how many it built; exits on failure. */
size_t	mb_test_rank_build(struct mb_test_index *t);

/*
 * The same over the matches for which where, an SQL condition on messages
 * AS m, is true: the oracle of a query with filters, which the test spells
 * in SQL of its own (text may hold the filters; only its words are used).
 */
size_t	mb_test_bm25_order_where(struct mb_index *idx, const char *text, const char *where,
	    int64_t *ids, size_t max);

/* Remove dir and everything under it (a test index's mkdtemp directory). */
void	mb_test_rmtree(const char *dir);

#endif
