/*
 * Inside the index: the handle, its cache of prepared statements, and the
 * helpers the index*.c files share.  Not a public header.
 */
#ifndef MAILBOX_INDEX_PRIVATE_H
#define MAILBOX_INDEX_PRIVATE_H

#include <sqlite3.h>

#include "mailbox/index.h"

/*
 * Every statement the index runs, prepared once on first use (so a read-only
 * handle never prepares a write) and kept until mb_index_close().
 */
enum idx_stmt {
	IDX_BEGIN,
	IDX_COMMIT,
	IDX_ROLLBACK,
	IDX_SAVEPOINT,
	IDX_RELEASE,
	IDX_ROLLBACK_TO,
	IDX_SCHEMA_VERSION,
	IDX_MIGRATION_APPLIED,
	IDX_MIGRATION_RECORD,
	IDX_FOLDER_ENSURE,
	IDX_FOLDER_GET,
	IDX_FOLDER_UPDATE,
	IDX_FOLDER_LIST,
	IDX_MSG_FIND,
	IDX_STAGE_PUT,
	IDX_STAGE_ATT_CLEAR_KEY,
	IDX_STAGE_ATT_PUT,
	IDX_STAGE_FLUSH,
	IDX_STAGE_ATT_REPLACE,
	IDX_STAGE_ATT_FLUSH,
	IDX_STAGE_CLEAR,
	IDX_STAGE_ATT_CLEAR,
	IDX_MSG_DELETE,
	IDX_MSG_FLAGS,
	IDX_BUCKETS,
	IDX_WM_UIDS,
	IDX_UID_COUNT,
	IDX_UID_LIST,
	IDX_MSG_FLAGS_CHANGED,
	IDX_THREAD_REF_GET,
	IDX_THREAD_REF_PUT,
	IDX_THREAD_NEXT,
	IDX_THREAD_MOVE_MSGS,
	IDX_THREAD_MOVE_REFS,
	IDX_THREAD_MOVE_STAGE,
	IDX_STAGE_ATT_COLS,
	IDX_STMT_COUNT
};

/*
 * Statements cached by the address of their SQL (idx_stmt_sql): the
 * reader's, the attachments', and syncd's bookkeeping (about 70 today: the
 * queue, the audit, the status views, the write checks), with room.
 */
#define IDX_SQL_CACHE	128

/*
 * The one test of "this row is what the mailbox holds now", as SQL text to
 * splice into a statement: m and f are the quoted aliases of a messages row
 * and its folders row, e.g.  "... WHERE " IDX_CURRENT("m", "f") " AND ...".
 * A row of an older UIDVALIDITY generation, or of a folder the server's LIST
 * no longer shows (folders.absent_ticks > 0), stays addressable (writes and
 * get_message can say what became of it, mb_read_gone) but is never served
 * as current.  Every reader that lists, counts or ranks rows uses this and
 * nothing else.  docs/syncd.md, "When the mailbox changes shape", says when
 * such rows are purged.
 */
#define IDX_CURRENT(m, f)	\
	"(" m ".uidvalidity = " f ".uidvalidity AND " IDX_LISTED(f) ")"
/* The folder half of IDX_CURRENT: the folders row f is one LIST still shows. */
#define IDX_LISTED(f)		"(" f ".absent_ticks = 0)"

/*
 * The text terms of a compiled query as a rowid set, for readers that do not
 * rank (the overviews); its filters are the search's own, SEARCH_FILTERS and
 * SEARCH_DATES with idx_search_bind() (search-private.h), so a filter the
 * query language gains reaches every reader at once.
 */
#define IDX_QUERY_MATCH(m) \
	m ".id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1)"

/*
 * One read transaction around a reader's statements (one snapshot, one WAL
 * read lock): idx_read_begin() ends a transaction a failed COMMIT left open
 * first; idx_read_end() cannot lose anything, so it reports nothing.
 */
int	idx_read_begin(struct mb_index *idx, struct mb_err *err);
void	idx_read_end(struct mb_index *idx);

/* A page's arguments: 0 when limit is 1..max and offset a start; else -1 with err (MB_E_INVALID). */
int	idx_page_check(int64_t offset, size_t limit, size_t max, struct mb_err *err);

/*
 * The next row of a page of limit rows from st, which asks for limit + 1
 * (so the extra row says a next page exists) and has given n so far:
 * SQLITE_ROW for a row of the page; SQLITE_DONE at the page's end, with
 * *more_r set when a row lay beyond it; else the step's error.
 */
int	idx_page_step(sqlite3_stmt *st, size_t n, size_t limit, bool *more_r);

struct mb_index {
	sqlite3			*db;
	enum mb_index_mode	 mode;
	char			*path;	/* owned */
	sqlite3_stmt		*stmts[IDX_STMT_COUNT];
	struct {
		const char	*sql;	/* identity: the static string's address */
		sqlite3_stmt	*st;
	} by_sql[IDX_SQL_CACHE];
};

/*
 * The cached statement id, ready for binding (reset, bindings cleared), or
 * NULL with err set.  Borrowed: call idx_stmt_done() after the last step so
 * the statement releases its read lock.
 */
sqlite3_stmt	*idx_stmt(struct mb_index *idx, enum idx_stmt id, struct mb_err *err);
void		 idx_stmt_done(sqlite3_stmt *st);

/*
 * The same for a statement whose SQL lives beside the code that runs it
 * (index_search.c, index_read.c, index_queue.c, index_audit.c,
 * index_status.c, index_writes.c: each statement's reasoning stays next to
 * its text): sql must be a static string, the cache is keyed by its address.
 * Prepared on first use, kept until mb_index_close().  NULL with err when
 * it cannot be prepared or the cache (IDX_SQL_CACHE) is full.
 */
sqlite3_stmt	*idx_stmt_sql(struct mb_index *idx, const char *sql, struct mb_err *err);
/*
 * The integer of the first row of sql (a static string) into *v_r, with
 * text (borrowed; NULL: none) bound as ?1; -1 with err without a row.
 */
int	idx_one_int64(struct mb_index *idx, const char *sql, const char *text, const char *what,
	    int64_t *v_r, struct mb_err *err);
/* The highest message id (0: none) into *max_r; what names the caller in an error. */
int	idx_max_id(struct mb_index *idx, const char *what, int64_t *max_r, struct mb_err *err);

/*
 * The VFS a read-only handle opens the index through (index_map.c): the
 * default one, whose mapping of the file SQLite's cap on mappings (2 GiB in
 * Debian's build) does not limit.  idx_map_vfs() registers it once; NULL
 * when it could not be, and the default VFS serves.
 */
#define IDX_MAP_VFS		"mb-map"
/* Its file control on the main database (far above SQLite's own op codes). */
#define IDX_FCNTL_MAP_LEN	0x6d620001	/* sqlite3_int64 *: set to the bytes served mapped now */
const char	*idx_map_vfs(void);
/* Mappings made by this thread's handles so far (a test's count: a commit makes none). */
extern _Thread_local uint64_t	idx_maps_made;
/*
 * Bytes of idx's file its mapping serves now (the file's length when last
 * measured, within the mapping); -1 when it is not opened through IDX_MAP_VFS.
 */
int64_t		 idx_map_len(struct mb_index *idx);

/* Sets err from the connection's last error ("index: <what>: <sqlite msg>"), returns -1. */
int	idx_sqlerr(struct mb_index *idx, int rc, const char *what, struct mb_err *err);

/* Step a statement that returns no rows (or whose rows are ignored), then reset it. */
int	idx_step_done(struct mb_index *idx, sqlite3_stmt *st, const char *what,
	    struct mb_err *err);

/*
 * A unit of work that is atomic whether or not the caller has a transaction
 * open: BEGIN IMMEDIATE ... COMMIT outside one, a savepoint inside one.
 * idx_unit_end(ok = false) undoes exactly this unit's changes.
 */
struct idx_unit {
	bool	own_txn;	/* true: we began the transaction */
};
int	idx_unit_begin(struct mb_index *idx, struct idx_unit *u, struct mb_err *err);
int	idx_unit_end(struct mb_index *idx, struct idx_unit *u, bool ok, struct mb_err *err);

/* Bind a C string or NULL (SQLITE_STATIC: it must outlive the step). */
int	idx_bind_text(sqlite3_stmt *st, int col, const char *s);

/*
 * A copy of column col of the current row, every byte of it (NUL-terminated
 * beyond that), or NULL when the value is NULL; *len_r (may be NULL) its
 * length.  The caller free(3)s it.
 */
char	*idx_col_text(sqlite3_stmt *st, int col, size_t *len_r);

/*
 * Thread id of message m (index_threads.c): joins the thread of every id it
 * names, merging threads it links, and records its ids.  keep_tid (0: none)
 * is the thread of the row being replaced.  Must run inside a unit.
 */
int	idx_thread_assign(struct mb_index *idx, const struct mb_msg *m, int64_t keep_tid,
	    int64_t *tid_r, struct mb_err *err);

struct mb_search_hit;
struct mb_query;
struct mb_buf;

/*
 * A page of text (len bytes of UTF-8): at most cap characters from
 * character offset on, copied into *page_r (NUL-terminated, the caller
 * frees; *page_len_r bytes); *more_r when text goes on, at character
 * *next_r (0 otherwise).  Bodies and attachment text page the same way.
 */
void	idx_text_page(const char *text, size_t len, size_t offset, size_t cap, char **page_r,
	    size_t *page_len_r, bool *more_r, int64_t *next_r);

/*
 * For each hit with attachments, whether q's MATCH expression found an
 * attachment's text or file name, which attachment, and a snippet of its
 * text with q's words marked (index_attach_hits.c): fills the hits' att_*
 * fields, reading a bounded window of the text whatever its length.  Runs
 * inside the search's transaction.  words, when not NULL, is q's prefix
 * as its words (idx_prefix_read_words), read a seek a hit.
 */
int	idx_attachment_hits(struct mb_index *idx, const struct mb_query *q, const char *words,
	    struct mb_search_hit *hits, size_t n, struct mb_err *err);
/*
 * How many FTS5 reads idx_attachment_hits made on this thread: for the
 * tests, which check that a prefix's page reads its doclists once.
 */
extern _Thread_local uint64_t	idx_attachment_reads;

/* The columns of messages_fts (migrations/0005) that the snippet code names. */
enum {
	IDX_FTS_BODY = 3,
	IDX_FTS_ATT_NAMES = 4,
	IDX_FTS_ATT_TEXT = 5,
};

/*
 * Register mb_snippet_column, mb_hit_offset and mb_column_tokens, FTS5
 * functions that read where a row's matches are without tokenizing it
 * (fts_hits.c).
 */
int	mb_fts_hits_register(sqlite3 *db, struct mb_err *err);

/*
 * Mark the words of q in text (len bytes of UTF-8, short: it is tokenized
 * whole) wherever the index's tokenizer makes a word the same as a word of q
 * (stemmed, folded, any case): appends to out about max_bytes of text from a
 * quarter of them before the first such word, each marked **like this**,
 * and sets [*from_r, *to_r) to the bytes of text that went out.  Returns 0,
 * or -1 when no word is marked (out may then hold part of text).
 */
int	mb_fts_mark(sqlite3 *db, const struct mb_query *q, const char *text, size_t len,
	    size_t max_bytes, struct mb_buf *out, size_t *from_r, size_t *to_r);

/* The fts5_api of db, through the documented pointer-passing interface
 * (fts_cjk.c); NULL when SQLite has no FTS5.  Borrowed: it lives as long as db. */
fts5_api	*mb_fts5_api(sqlite3 *db);

/*
 * An instance of messages_fts's tokenizer (mb_cjk over porter, unicode61,
 * remove_diacritics 2: migrations/0005) into *tk and *t, to tokenize text
 * as the index does; free it with tk->xDelete(*t).  -1 when there is none.
 */
int	mb_fts_tokenizer(sqlite3 *db, fts5_tokenizer *tk, Fts5Tokenizer **t);

/*
 * text's one token as t makes it with flags (FTS5_TOKENIZE_QUERY, and
 * FTS5_TOKENIZE_PREFIX for a prefix), owned by the caller; NULL when it
 * makes none, several, or one with a colocated token beside it.
 */
char	*mb_fts_single_token(fts5_tokenizer *tk, Fts5Tokenizer *t, const char *text, int flags);

/*
 * A query phrase whose text starts with this byte is one index word, as
 * the index holds it (mb_cjk passes it through untouched): the prefix walk
 * matches the words it read from the index so (index_search_prefix.c).
 * mb_query_quote() never starts a phrase with a control character, so no
 * user's text is taken for one.
 */
#define MB_FTS_RAW_TERM	'\x01'

/*
 * Append the first len bytes of term to b as one phrase of a MATCH
 * expression that matches that index word itself (MB_FTS_RAW_TERM, quoted,
 * a quote doubled): what a word read from the index (rank_terms, the
 * prefix's words) is matched by.  -1 when b's cap is reached (fts_cjk.c).
 */
int	mb_fts_raw_term(struct mb_buf *b, const char *term, size_t len);

/* Register the mb_cjk FTS5 tokenizer on db (fts_cjk.c). */
int	mb_fts_cjk_register(sqlite3 *db, struct mb_err *err);

/*
 * The floor of an exact top-k ranking (index_search.c, fts_rank.c): the
 * score of the k-th best row so far (mb_bm25's scale: lower is better), once
 * set.  mb_bm25_top() answers NULL for a row that cannot score as well:
 * without its length when the length its hits prove already says so, else
 * once measured.  Passed to SQL by sqlite3_bind_pointer() with
 * the type IDX_RANK_FLOOR; the caller owns it and raises it between steps.
 */
#define IDX_RANK_FLOOR	"mb_rank_floor"
/*
 * The rows that hold some of a query's phrases, known without FTS5 walking
 * their doclists (idx_rank_known_hits(), index_rank_counts.c): hits[i] >= 0
 * for phrase i (FTS5's numbering, a phrase of one token), -1 for one not
 * known, and every phrase from n on is not known.  mb_bm25 counts the
 * others itself when it computes a query's statistics (fts_rank.c), and
 * all of them for a statement whose MATCH text is not match: the same
 * floor also scores statements of a prefix's words, whose phrases are
 * others.
 */
#define IDX_RANK_PHRASES	64	/* phrases a query's statistics are kept for, at most */
struct idx_rank_known {
	const char	*match;		/* the MATCH text counted (not owned) */
	int		 n;
	int64_t		 hits[IDX_RANK_PHRASES];
};

struct idx_rank_lengths;

struct idx_rank_floor {
	bool	set;
	double	score;
	/*
	 * The block walk's (index_search_blocks.c; NULL otherwise): per block
	 * of RANK_BLOCK_IDS ids, the best score a row of it can have, and
	 * whether it was ranked already (NULL: none was).  A row of a block
	 * ranked, or whose bound is worse than the floor, is answered NULL
	 * before its hits are read.
	 */
	const double	*block_bound;
	const bool	*block_read;
	int64_t		 n_blocks;
	/*
	 * A search read whole (index_search.c; NULL otherwise): per block, a
	 * length every matching row of it has at least, from a word's fronts
	 * (idx_rank_min_lengths), n_min_len blocks.  A row is measured only
	 * when its score at the longer of this and what its hits prove can
	 * still reach the floor.
	 */
	const uint32_t	*block_min_len;
	int64_t		 n_min_len;
	/*
	 * A search read whole with a narrow scope (index_search_narrow.c; NULL
	 * otherwise): bit i of n_id_bits says id i is in the scope.  A row
	 * whose bit is clear fails the folder or date filter: it is answered
	 * NULL before its hits are read, and is neither joined nor counted.
	 */
	const uint64_t	*id_bits;
	int64_t		 n_id_bits;
	/* A prefix's walk (index_search_prefix.c; NULL otherwise). */
	const struct idx_rank_prefix	*prefix;
	/* A statement of an OR of words ranked in parts (index_search_or.c; NULL otherwise). */
	const struct idx_rank_parts	*parts;
	/* A statement that scores each row twice, in WHERE and in its columns (NULL otherwise). */
	struct idx_rank_memo		*memo;
	/* Rows known to hold the query's phrases, for its statistics (may be NULL). */
	const struct idx_rank_known	*known;
	/* The rows' lengths kept by block (index_rank_lengths.c; NULL: FTS5's). */
	struct idx_rank_lengths		*lengths;
};

/*
 * Whether the block walk ranked block b already, or bounds it below the
 * floor (struct idx_rank_floor): its rows are answered before being scored.
 */
static inline bool
idx_rank_block_passed(const struct idx_rank_floor *floor, int64_t b)
{
	return floor->block_bound != NULL && b >= 0 && b < floor->n_blocks &&
	    ((floor->block_read != NULL && floor->block_read[b]) ||
	    (floor->set && floor->block_bound[b] > floor->score));
}

/*
 * A filtered statement that asks mb_bm25_top() in WHERE (a term of
 * messages_fts alone, tested before the join), so that a row which cannot
 * reach the page is dropped before its seek into messages_search_filter,
 * and again in its columns, for the score: the block walk's filtered
 * ranges (index_search_blocks.c) and a filtered search read whole
 * (index_search.c).  The second call for a row takes the first's answer
 * from here instead of scoring it again.  Within one statement FTS5 gives
 * each id once, in order, so the id tells the second call from a new row;
 * the caller clears the answer before each statement.
 *
 * With passing set, every row is joined (the first call answers 1 without
 * scoring it, the second scores it) while *passing, the rows the statement
 * has given so far, is below join_until: a search read whole counts what
 * passes its filters exactly up to there, and drops rows only past it.
 */
struct idx_rank_memo {
	bool		 valid;		/* the next call for rowid takes this answer */
	bool		 deferred;	/* joined unscored: the next call scores it */
	bool		 has_score;	/* else the answer was NULL */
	int64_t		 rowid;
	double		 score;
	const int64_t	*passing;	/* NULL: drop every row that cannot reach the page */
	int64_t		 join_until;
	int64_t		 dropped;	/* rows answered NULL before the join */
};

/*
 * A prefix ranked as the OR of its words (index_search_prefix.c): the
 * statement's phrases are the words, and a row's hits of all of them
 * together are the prefix's hits, scored as one phrase with the prefix's
 * statistics (its IDF over the rows that hold any of its words).  A row
 * whose id is in skip (sorted) was ranked by an earlier statement: it is
 * answered NULL.
 */
struct idx_rank_prefix {
	double		 idf;
	double		 avgdl;
	const int64_t	*skip;
	size_t		 n_skip;
};

/* A kept phrase's rows with more hits than a byte holds (struct idx_rank_parts). */
struct idx_rank_many {
	int64_t		*id;	/* owned, ascending */
	uint32_t	*f;	/* owned: id[i]'s hits */
	size_t		 n, cap;
};

/*
 * A query ranked in parts: an OR of words (index_search_or.c), or an AND
 * whose kept words' hits are read from syncd's bytes (index_search_common.c,
 * the kept slots below).  A statement's phrases are some of the query's
 * words, its phrase i the query's phrase slot[i] (n_slot of them), and
 * every row it gives holds none of the query's other words but the kept
 * ones.  A row is scored with the query's statistics (stats), its hits in
 * their slots and 0 in the others, so the score is the one bm25() gives it
 * for the whole query, summed in the same order.  A row whose id is in
 * skip (sorted) was ranked by an earlier statement: it is answered NULL.
 */
struct idx_rank_parts {
	const struct idx_rank_stats	*stats;
	const int			*slot;
	int				 n_slot;
	const int64_t			*skip;
	size_t				 n_skip;
	/*
	 * The query's phrases read from the hits syncd keeps by chunk instead
	 * (index_search_common.c; n_kept 0 otherwise): phrase kept_slot[k] has
	 * kept_hits[k][id] weighted hits in row id, for ids below n_kept_ids,
	 * or when that is RANK_HITS_MANY those kept_many[k] holds for it.  A
	 * row with 0 of one is no match: answered NULL before its hits are read.
	 */
	const int			*kept_slot;
	const uint8_t *const		*kept_hits;
	const struct idx_rank_many	*kept_many;
	int				 n_kept;
	int64_t				 n_kept_ids;
};

/*
 * Row id of a query ranked in parts whose every phrase is a kept one
 * (n_slot 0: index_search_common.c reads no statement for it), scored from
 * the bytes and the row's kept length as rank_row_parts() scores a row FTS5
 * gives it, against floor as a search without filters, read whole or
 * walked, sets it (its set, score, block_min_len and lengths; a walk's
 * blocks are the caller's to pass): 1 with *score_r; 0 when the row lacks a
 * phrase or cannot reach the floor; -1 when the builder kept no length for
 * the row (FTS5 must score it).  fts_rank.c.
 */
int	idx_rank_kept_row(const struct idx_rank_parts *p, const struct idx_rank_floor *floor,
	    int64_t id, double *score_r);

/*
 * The column weights of the ranking (docs/index.md, "Ranking"), as SQL
 * arguments: subject over sender over recipients over body; attachment file
 * names as the sender, their text as the body.  The ranked statements and
 * the bounds syncd builds for them (index_rank_build.c) take the same text,
 * and rank_state records it: bounds built for other weights are ignored.
 */
#define IDX_RANK_WEIGHTS	"10.0, 4.0, 2.0, 1.0, 4.0, 1.0"

/*
 * A query's statistics as mb_bm25 scores with them, filled by
 * mb_bm25_stats() (fts_rank.c) on the first row of a statement, through a
 * pointer bound with the type IDX_RANK_STATS; set stays false when the
 * query has more phrases than fit.  The caller owns it.
 */
#define IDX_RANK_STATS		"mb_rank_stats"
struct idx_rank_stats {
	bool	set;
	int	n_phrase;
	int	size[IDX_RANK_PHRASES];		/* tokens in each phrase */
	double	idf[IDX_RANK_PHRASES];
	int64_t	n_hit[IDX_RANK_PHRASES];	/* rows that hold each phrase */
	double	avgdl;				/* average row length in tokens */
	/* an input, may be NULL: rows known to hold some phrases (struct idx_rank_known) */
	const struct idx_rank_known	*known;
};

/* Register the FTS5 ranking functions mb_bm25, mb_bm25_top and mb_bm25_stats on db (fts_rank.c). */
int	mb_fts_rank_register(sqlite3 *db, struct mb_err *err);

/* Register the SQL function mb_labels_test() on db (labels.c, mailbox/labels.h). */
int	mb_labels_register(sqlite3 *db, struct mb_err *err);

/*
 * Register the SQL functions mb_text() and mb_text_pack() on db (text_pack.c,
 * docs/index.md "Packed text").
 */
int	mb_text_register(sqlite3 *db, struct mb_err *err);

/*
 * The schema version from which count_unread (migrations/0028) counts the
 * unread messages: list_folders and count_messages read it from then on, and
 * count the messages of an older index.
 */
#define IDX_SCHEMA_COUNT_UNREAD	28
/* And from which count_unread_senders and count_unread_labels (migrations/0029) count them by sender and label. */
#define IDX_SCHEMA_COUNT_UNREAD_PEOPLE	29

/* The VM steps of mb_read_folders()' statement on this thread (for tests). */
extern _Thread_local uint64_t	idx_read_folders_steps;

/* Packed texts mb_text() has unpacked on this thread (a statistic, for tests). */
extern _Thread_local uint64_t	idx_text_unpacked;

#endif
