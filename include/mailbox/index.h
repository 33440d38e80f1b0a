/*
 * The index: one SQLite database (WAL) written by syncd, read by mcpd.
 * Prepared statements only: no SQL is ever built from input text.
 */
#ifndef MAILBOX_INDEX_H
#define MAILBOX_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"
#include "mailbox/msg.h"

struct mb_index;
struct sqlite3;

/*
 * A handle is one SQLite connection with its cached statements: use it from
 * one thread at a time.  Error codes: MB_E_CONFIG for an index this build
 * cannot use (missing, uninitialised, newer schema, unreadable -shm),
 * MB_E_TEMP for a busy lock or full disk, MB_E_INVALID for bad rows.
 */

enum mb_index_mode {
	MB_INDEX_RW,	/* syncd: creates the file, applies migrations, WAL */
	MB_INDEX_RO,	/* mcpd: SQLITE_OPEN_READONLY plus PRAGMA query_only */
};

/*
 * Open the index at path.  RW creates it and applies pending migrations
 * (each in a transaction, recorded in schema_migrations); both modes refuse
 * an index whose schema is newer than this code, and RO refuses one that has
 * not been created yet.  Registers the FTS5 tokenizer the schema uses, and
 * mb_bm25(messages_fts, MATCH, weights...): bm25() with each query's IDFs
 * kept on the connection until the index changes (libmailbox/core/fts_rank.c).
 * On success *idx_r is the caller's: close it with mb_index_close().
 */
int	mb_index_open(const char *path, enum mb_index_mode mode, struct mb_index **idx_r,
	    struct mb_err *err);
void	mb_index_close(struct mb_index **idxp);	/* NULL-safe; sets *idxp = NULL */

/*
 * Every SQL statement lives in libmailbox's index modules (index_*.c):
 * the daemons never see the connection.  Tests and benchmarks that inspect
 * an index from outside take it from mailbox/index_raw.h.
 */

/*
 * For a reader that gives each thread its own handles and never lends one
 * to another thread (mcpd): SQLite's multi-thread mode, no allocation
 * statistics.  Call before the first mb_index_open() of the process; later
 * calls do nothing.
 */
void	mb_index_per_thread_handles(void);

/*
 * Read idx through a shared mapping of at most max_bytes (PRAGMA mmap_size)
 * instead of pread() into the connection's page cache.  For mcpd: searches
 * touch many pages once, and copying them was a quarter of a search's CPU;
 * mapped pages are the kernel's page cache, shared and reclaimable.  A
 * read-only handle maps as far as asked; SQLite's own VFS, a read-write
 * handle's, stops at the cap SQLite was built with (2 GiB in Debian's).
 */
int	mb_index_set_mmap(struct mb_index *idx, int64_t max_bytes, struct mb_err *err);

/*
 * The mapping a reader asks for (mcpd, bench_query): 16 GiB of address
 * space at most, an index of about 4 million messages; pages past it are
 * read, as without a mapping.
 */
#define MB_INDEX_READER_MMAP	(INT64_C(16) << 30)

/*
 * Bytes of text FTS5 has handed the tokenizer for snippet() and the other
 * auxiliary functions, in this process so far (indexing and queries are not
 * counted).  A cost counter: re-tokenizing a long column is what a snippet
 * costs, and the tests bound it per search (docs/attachments.md, "Snippets").
 */
uint64_t	mb_index_snippet_bytes(void);

/* The highest applied migration, and the highest this code knows. */
int	mb_index_schema_version(struct mb_index *idx, int *version_r, struct mb_err *err);
int	mb_index_code_schema_version(void);

int	mb_index_begin(struct mb_index *idx, struct mb_err *err);	/* BEGIN IMMEDIATE */
int	mb_index_commit(struct mb_index *idx, struct mb_err *err);
void	mb_index_rollback(struct mb_index *idx);	/* no-op outside a transaction */

/* Per-folder sync state. */
struct mb_folder_state {
	int64_t		 id;
	char		*name;		/* owned; UTF-8 (decoded from modified UTF-7) */
	char		*role;		/* owned; "\\Trash"...; NULL when none */
	bool		 role_by_name;	/* role found by the folder's name, not SPECIAL-USE */
	uint32_t	 uidvalidity;	/* 0: never examined */
	uint32_t	 uidnext;
	uint64_t	 highestmodseq;	/* 0: no CONDSTORE */
	uint32_t	 watermark;	/* highest UID below the first gap */
	int64_t		 last_sync;	/* unix seconds; 0 = never */
	unsigned	 absent_ticks;	/* ticks LIST has not shown it, or SYNC_FOLDERS
					 * has left it out; 0: listed and synced */
	bool		 left_out;	/* hidden because SYNC_FOLDERS left it out */
	uint32_t	 flag_cursor;	/* without CONDSTORE: the highest UID the last
					 * flag window covered; 0: start from the first */
};
void	mb_folder_state_release(struct mb_folder_state *st);	/* frees the strings */
void	mb_folder_list_free(struct mb_folder_state **listp, size_t n);

/*
 * Create the folder row if missing (role updated if given, as a SPECIAL-USE
 * role; mb_index_folder_update records a role found by name); *id_r its id.
 */
int	mb_index_folder_ensure(struct mb_index *idx, const char *name, const char *role,
	    int64_t *id_r, struct mb_err *err);
/* MB_E_NOTFOUND when there is no such folder.  *st_r's strings are the caller's. */
int	mb_index_folder_get(struct mb_index *idx, const char *name, struct mb_folder_state *st_r,
	    struct mb_err *err);
/*
 * Writes uidvalidity, uidnext, highestmodseq, watermark, last_sync,
 * flag_cursor, role and where the role came from (role_by_name) by st->id.
 */
int	mb_index_folder_update(struct mb_index *idx, const struct mb_folder_state *st,
	    struct mb_err *err);
/* Every folder, by name; *list_r is the caller's (mb_folder_list_free). */
int	mb_index_folder_list(struct mb_index *idx, struct mb_folder_state **list_r, size_t *n_r,
	    struct mb_err *err);
/*
 * Record whether this tick's LIST showed folder id and SYNC_FOLDERS names
 * it: both reset its absent_ticks to 0, otherwise it grows by one; *absent_r
 * is the new value.  left_out is set when it is listed but not wanted.  A
 * folder with absent_ticks > 0 is hidden from every reader at once.
 */
int	mb_index_folder_presence(struct mb_index *idx, int64_t id, bool listed, bool wanted,
	    unsigned *absent_r, struct mb_err *err);
/*
 * Delete folder_id's rows of every UIDVALIDITY but keep_uidvalidity (the
 * older generations, once the current one has converged); *purged_r says
 * how many.  Through the expunge path: FTS and attachment rows go with them.
 */
int	mb_index_purge_generations(struct mb_index *idx, int64_t folder_id,
	    uint32_t keep_uidvalidity, unsigned *purged_r, struct mb_err *err);
/*
 * Delete a folder the server no longer lists: its rows (as above), its
 * queued ranges and the folder row, in one unit; *purged_r the rows deleted.
 */
int	mb_index_purge_folder(struct mb_index *idx, int64_t folder_id, unsigned *purged_r,
	    struct mb_err *err);

/* One message as syncd stores it. */
struct mb_index_row {
	int64_t			 folder_id;
	uint32_t		 uidvalidity;
	uint32_t		 uid;
	unsigned		 flags;		/* enum mb_flag bits */
	const char		*keywords;	/* borrowed; space-separated; may be NULL */
	int64_t			 internaldate;	/* unix seconds; 0 unknown */
	uint64_t		 size;		/* RFC822.SIZE */
	uint64_t		 modseq;	/* 0 without CONDSTORE */
	bool			 headers_only;	/* over the size cap: only headers were fetched */
	const struct mb_msg	*msg;		/* borrowed */
};

/*
 * Insert or update the message keyed on (folder_id, uidvalidity, uid): a
 * second upsert of one key updates in place, never duplicates.  Assigns the
 * thread id (Message-ID, In-Reply-To, References).  Runs inside the caller's
 * transaction if one is open.  *msg_id_r (may be NULL) is the row id.
 */
int	mb_index_upsert(struct mb_index *idx, const struct mb_index_row *row, int64_t *msg_id_r,
	    struct mb_err *err);
/* All rows in one transaction (its own); all or none. */
int	mb_index_upsert_batch(struct mb_index *idx, const struct mb_index_row *rows, size_t n,
	    struct mb_err *err);
/*
 * The two halves of mb_index_upsert_batch, for a writer that groups several
 * batches into one transaction (syncd): mb_index_stage assigns the rows'
 * thread ids and stages them; mb_index_flush moves everything staged into
 * messages with one statement, so FTS5 writes one segment for the whole
 * group instead of one per batch.  Both need the caller's open transaction
 * (MB_E_INVALID otherwise), and staged rows are part of it: a rollback drops
 * them.  After a failure of either, roll the transaction back.  Rows are
 * copied into the stage: they may be freed once mb_index_stage returns.
 * Readers see nothing until the flush and the COMMIT.  mb_index_upsert and
 * mb_index_upsert_batch start from an empty stage: flush before calling them.
 */
int	mb_index_stage(struct mb_index *idx, const struct mb_index_row *rows, size_t n,
	    struct mb_err *err);
int	mb_index_flush(struct mb_index *idx, struct mb_err *err);
/*
 * Flag sync (FETCH FLAGS, CONDSTORE CHANGEDSINCE): set flags, keywords (borrowed,
 * may be NULL) and modseq of one indexed message.  Touches no indexed text, so
 * the FTS index is not rewritten.  MB_E_NOTFOUND when the key is not indexed.
 */
int	mb_index_update_flags(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t uid, unsigned flags, const char *keywords, uint64_t modseq,
	    struct mb_err *err);
/*
 * Reconciliation (syncd): as mb_index_update_flags, but a row whose flags,
 * keywords and modseq already match is left alone (*changed_r false), so a
 * full flag rescan does not rewrite every row into the WAL, and a modseq of
 * 0 (the server sent none) keeps the row's.  A key that is
 * not indexed is no error either (*changed_r false): the mail is newer than
 * the index and will be fetched whole.
 */
int	mb_index_update_flags_changed(struct mb_index *idx, int64_t folder_id,
	    uint32_t uidvalidity, uint32_t uid, unsigned flags, const char *keywords,
	    uint64_t modseq, bool *changed_r, struct mb_err *err);
/* Deleting a key that is not indexed is not an error.  Attachments go with the row. */
int	mb_index_delete(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t uid, struct mb_err *err);

/*
 * Rows of (folder, uidvalidity) with first <= uid <= last: *n_r how many,
 * *max_r the highest uid among them (0 when none).  Reads the key index only.
 */
int	mb_index_uid_count(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t first, uint32_t last, uint64_t *n_r, uint32_t *max_r, struct mb_err *err);
/*
 * The indexed uids of (folder, uidvalidity) with first <= uid <= last,
 * ascending.  *uids_r is the caller's (free); never NULL on success.
 */
int	mb_index_uids(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t first, uint32_t last, uint32_t **uids_r, size_t *n_r, struct mb_err *err);

/*
 * Gap detection: counts_r[i] = rows of (folder, uidvalidity) whose uid is in
 * [first_uid + i*bucket, first_uid + (i+1)*bucket), for i < n_buckets.
 */
int	mb_index_bucket_counts(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t first_uid, uint32_t bucket, size_t n_buckets, uint32_t *counts_r,
	    struct mb_err *err);

/*
 * The watermark: the highest UID u such that every mailbox UID <= u is
 * indexed.  mailbox_uids are the UIDs the server listed above old_watermark,
 * ascending; everything at or below old_watermark counts as indexed.  Correct
 * when ranges complete out of order.  With no gap, *wm_r is the last of
 * mailbox_uids (old_watermark when n == 0): UIDs between it and UIDNEXT-1 do
 * not exist, so the caller may raise it to UIDNEXT-1.
 */
int	mb_index_watermark(struct mb_index *idx, int64_t folder_id, uint32_t uidvalidity,
	    uint32_t old_watermark, const uint32_t *mailbox_uids, size_t n, uint32_t *wm_r,
	    struct mb_err *err);

/*
 * Build the ranking's block bounds (migrations/0014_rank_bounds.sql,
 * docs/index.md "Ranking") for up to max_chunks chunks of 2,048 ids that
 * are complete (a higher id exists) and not bounded, oldest first, each run
 * of neighbours in its own unit of work (a savepoint inside the caller's
 * transaction), and none while fewer than min_chunks are waiting
 * (neighbours share their statements, so syncd lets a backfill's gather);
 * when the index has doubled since the frequent terms were chosen, chooses
 * them again first (a read of FTS5's whole vocabulary).  Also keeps the
 * rows' lengths of up to 16 times max_chunks chunks built before migration
 * 0022 (0022_rank_lengths.sql).  *built_r: the chunks built or given their
 * lengths.  syncd calls it after a commit; a search is exact with or
 * without them, only faster with.
 */
int	mb_index_rank_build(struct mb_index *idx, size_t min_chunks, size_t max_chunks,
	    size_t *built_r, struct mb_err *err);

/*
 * Merging the full-text index into one segment (migrations/0015_fts_merge.sql,
 * docs/index.md "Segments"), which makes every search cheaper.
 * mb_index_fts_merge_due: *due_r is true when the index has grown by a
 * quarter since the last merge finished (a fresh index: as soon as it holds
 * a message).  mb_index_fts_merge_step: merges about `pages` leaf pages in
 * its own unit of work (a savepoint inside the caller's transaction); once
 * nothing is left to merge, a step gives up to 1,000 of the freed pages back
 * to the file system instead (an index made with auto_vacuum INCREMENTAL:
 * every new one); *done_r is true when it found neither work, and the merge
 * is then recorded.  mb_index_fts_merge: every step, MB_INDEX_FTS_MERGE_PAGES
 * at a time.  A search is exact whatever the segments.
 */
#define MB_INDEX_FTS_MERGE_PAGES	1000	/* a step: about 50 ms of CPU */
int	mb_index_fts_merge_due(struct mb_index *idx, bool *due_r, struct mb_err *err);
int	mb_index_fts_merge_step(struct mb_index *idx, int pages, bool *done_r,
	    struct mb_err *err);
int	mb_index_fts_merge(struct mb_index *idx, struct mb_err *err);

/* Online backup to dest_path through the sqlite3 backup API. */
int	mb_index_backup(struct mb_index *idx, const char *dest_path, struct mb_err *err);

#endif
