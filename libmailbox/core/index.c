/*
 * The index: opening (read-write for syncd, read-only for mcpd), migrations,
 * transactions, the statement cache and online backup.  See
 * include/mailbox/index.h for the contract and docs/index.md for the why.
 *
 * Over 600 lines on purpose: opening, the migration runner and the
 * transaction calls share the handle's private setup (pragmas, tokenizer
 * and ranking registration) and read best in one place; every table's
 * statements live in the index_*.c modules.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/log.h"
#include "mailbox/migrations.h"
#include "mailbox/notify.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "rank-private.h"

#define IDX_BUSY_TIMEOUT_MS	10000
#define IDX_PATH_MAX		4096

/* The columns of messages an upsert writes, in bind order ?1..?28. */
#define IDX_MSG_COLS \
	"folder_id, uidvalidity, uid, message_id, in_reply_to, refs, thread_id, subject," \
	" from_name, from_addr, from_text, recipients, to_json, cc_json, date, internaldate," \
	" size, flags, keywords, modseq, list_id, body, body_truncated, body_from_html," \
	" headers_only, attachment_count, parse_error, indexed_at"

/*
 * The staging tables of the writer (see index_messages.c for why upserts
 * go through them).  TEMP: private to this connection, in a temporary file
 * (temp_store FILE, open_rw) whose pages stay in a small cache.
 */
static const char stage_sql[] =
	"CREATE TEMP TABLE mb_stage ("
	" folder_id INTEGER NOT NULL, uidvalidity INTEGER NOT NULL, uid INTEGER NOT NULL,"
	" message_id, in_reply_to, refs, thread_id, subject, from_name, from_addr, from_text,"
	" recipients, to_json, cc_json, date, internaldate, size, flags, keywords, modseq,"
	" list_id, body, body_truncated, body_from_html, headers_only, attachment_count,"
	" parse_error, indexed_at, att_names, att_text,"
	" PRIMARY KEY (folder_id, uidvalidity, uid));"
	"CREATE TEMP TABLE mb_stage_att ("
	" folder_id INTEGER NOT NULL, uidvalidity INTEGER NOT NULL, uid INTEGER NOT NULL,"
	" ordinal INTEGER NOT NULL, filename, mime_type, size, content_id, is_inline, sha256,"
	" extracted_text, extract_status,"
	" PRIMARY KEY (folder_id, uidvalidity, uid, ordinal));"
	"CREATE INDEX temp.mb_stage_thread ON mb_stage(thread_id);";

/*
 * The SQL of every cached statement (enum idx_stmt).  Fixed text only: every
 * value reaches SQLite through a bind.
 */
static const char *const idx_sql[IDX_STMT_COUNT] = {
	[IDX_BEGIN] = "BEGIN IMMEDIATE",
	[IDX_COMMIT] = "COMMIT",
	[IDX_ROLLBACK] = "ROLLBACK",
	[IDX_SAVEPOINT] = "SAVEPOINT mb_unit",
	[IDX_RELEASE] = "RELEASE mb_unit",
	[IDX_ROLLBACK_TO] = "ROLLBACK TO mb_unit",
	[IDX_SCHEMA_VERSION] = "SELECT coalesce(max(version), 0) FROM schema_migrations",
	[IDX_MIGRATION_APPLIED] = "SELECT 1 FROM schema_migrations WHERE version = ?1",
	[IDX_MIGRATION_RECORD] =
	    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
	[IDX_FOLDER_ENSURE] =
	    "INSERT INTO folders (name, role, role_source)"
	    " VALUES (?1, ?2, CASE WHEN ?2 IS NULL THEN NULL ELSE 'special-use' END)"
	    " ON CONFLICT (name) DO UPDATE SET role = coalesce(excluded.role, role),"
	    " role_source = CASE WHEN excluded.role IS NULL THEN role_source"
	    " ELSE 'special-use' END"
	    " RETURNING id",
	[IDX_FOLDER_GET] =
	    "SELECT id, name, role, uidvalidity, uidnext, highestmodseq, watermark, last_sync,"
	    " absent_ticks, role_source, left_out, flag_cursor FROM folders WHERE name = ?1",
	[IDX_FOLDER_UPDATE] =
	    "UPDATE folders SET role = ?2, uidvalidity = ?3, uidnext = ?4, highestmodseq = ?5,"
	    " watermark = ?6, last_sync = ?7, flag_cursor = ?9,"
	    " role_source = CASE WHEN ?2 IS NULL THEN NULL WHEN ?8 THEN 'name'"
	    " ELSE 'special-use' END WHERE id = ?1",
	[IDX_FOLDER_LIST] =
	    "SELECT id, name, role, uidvalidity, uidnext, highestmodseq, watermark, last_sync,"
	    " absent_ticks, role_source, left_out, flag_cursor FROM folders ORDER BY name",
	[IDX_MSG_FIND] =
	    "SELECT id, thread_id FROM messages"
	    " WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid = ?3",
	/* The body is stored packed when that pays (text_pack.c, migration 0016). */
	[IDX_STAGE_PUT] =
	    "INSERT OR REPLACE INTO temp.mb_stage (" IDX_MSG_COLS ")"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
	    " ?17, ?18, ?19, ?20, ?21, mb_text_pack(?22), ?23, ?24, ?25, ?26, ?27, ?28)",
	[IDX_STAGE_ATT_CLEAR_KEY] =
	    "DELETE FROM temp.mb_stage_att WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid = ?3",
	[IDX_STAGE_ATT_PUT] =
	    "INSERT INTO temp.mb_stage_att (folder_id, uidvalidity, uid, ordinal, filename,"
	    " mime_type, size, content_id, is_inline, sha256, extracted_text, extract_status)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	/* WHERE true: without it, ON CONFLICT would parse as a join constraint. */
	[IDX_STAGE_FLUSH] =
	    "INSERT INTO messages (" IDX_MSG_COLS ", att_names, att_text)"
	    " SELECT " IDX_MSG_COLS ", att_names, att_text FROM temp.mb_stage"
	    " WHERE true ORDER BY rowid"
	    " ON CONFLICT (folder_id, uidvalidity, uid) DO UPDATE SET"
	    " message_id = excluded.message_id, in_reply_to = excluded.in_reply_to,"
	    " refs = excluded.refs, thread_id = excluded.thread_id,"
	    " subject = excluded.subject, from_name = excluded.from_name,"
	    " from_addr = excluded.from_addr, from_text = excluded.from_text,"
	    " recipients = excluded.recipients, to_json = excluded.to_json,"
	    " cc_json = excluded.cc_json, date = excluded.date,"
	    " internaldate = excluded.internaldate, size = excluded.size,"
	    " flags = excluded.flags, keywords = excluded.keywords, modseq = excluded.modseq,"
	    " list_id = excluded.list_id, body = excluded.body,"
	    " body_truncated = excluded.body_truncated, body_from_html = excluded.body_from_html,"
	    " headers_only = excluded.headers_only, attachment_count = excluded.attachment_count,"
	    " parse_error = excluded.parse_error, indexed_at = excluded.indexed_at,"
	    " att_names = excluded.att_names, att_text = excluded.att_text",
	[IDX_STAGE_ATT_REPLACE] =
	    "DELETE FROM attachments WHERE message_id IN (SELECT m.id FROM temp.mb_stage s"
	    " JOIN messages m ON m.folder_id = s.folder_id AND m.uidvalidity = s.uidvalidity"
	    " AND m.uid = s.uid)",
	[IDX_STAGE_ATT_FLUSH] =
	    "INSERT INTO attachments (message_id, ordinal, filename, mime_type, size, content_id,"
	    " is_inline, sha256, extracted_text, extract_status)"
	    " SELECT m.id, a.ordinal, a.filename, a.mime_type, a.size, a.content_id, a.is_inline,"
	    " a.sha256, a.extracted_text, a.extract_status"
	    " FROM temp.mb_stage_att a JOIN messages m ON m.folder_id = a.folder_id"
	    " AND m.uidvalidity = a.uidvalidity AND m.uid = a.uid",
	/*
	 * The staged messages' attachment names and text (migration 0005), from
	 * the staged attachments, before the flush: so the row is inserted with
	 * them, and FTS5 indexes it once.  Set by an UPDATE of messages after
	 * the insert, the FTS update trigger deleted the row just indexed
	 * (tokenizing it again for the delete) and indexed it a third time.
	 * The text is stored packed when that pays (migration 0016).
	 */
	[IDX_STAGE_ATT_COLS] =
	    "UPDATE temp.mb_stage SET"
	    " att_names = (SELECT group_concat(filename, char(10)) FROM (SELECT filename"
	    " FROM temp.mb_stage_att AS a WHERE a.folder_id = mb_stage.folder_id"
	    " AND a.uidvalidity = mb_stage.uidvalidity AND a.uid = mb_stage.uid"
	    " AND filename IS NOT NULL ORDER BY ordinal)),"
	    " att_text = mb_text_pack((SELECT group_concat(extracted_text, char(10) || char(10))"
	    " FROM (SELECT extracted_text FROM temp.mb_stage_att AS a"
	    " WHERE a.folder_id = mb_stage.folder_id AND a.uidvalidity = mb_stage.uidvalidity"
	    " AND a.uid = mb_stage.uid AND extracted_text IS NOT NULL ORDER BY ordinal)))"
	    " WHERE attachment_count > 0",
	[IDX_STAGE_CLEAR] = "DELETE FROM temp.mb_stage",
	[IDX_STAGE_ATT_CLEAR] = "DELETE FROM temp.mb_stage_att",
	[IDX_MSG_DELETE] =
	    "DELETE FROM messages WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid = ?3",
	/* Names no FTS column: the update trigger does not fire. */
	[IDX_MSG_FLAGS] =
	    "UPDATE messages SET flags = ?4, keywords = ?5, modseq = ?6"
	    " WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid = ?3",
	[IDX_BUCKETS] =
	    "SELECT (uid - ?3) / ?4, count(*) FROM messages"
	    " WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid >= ?3 AND uid < ?5"
	    " GROUP BY 1",
	[IDX_WM_UIDS] =
	    "SELECT uid FROM messages WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid > ?3"
	    " ORDER BY uid",
	/* Both read the (folder_id, uidvalidity, uid) index only, never a row. */
	[IDX_UID_COUNT] =
	    "SELECT count(*), coalesce(max(uid), 0) FROM messages"
	    " WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid BETWEEN ?3 AND ?4",
	[IDX_UID_LIST] =
	    "SELECT uid FROM messages WHERE folder_id = ?1 AND uidvalidity = ?2"
	    " AND uid BETWEEN ?3 AND ?4 ORDER BY uid",
	/* IDX_MSG_FLAGS, but an unchanged row is not rewritten; modseq 0 (none
	 * sent) keeps the row's. */
	[IDX_MSG_FLAGS_CHANGED] =
	    "UPDATE messages SET flags = ?4, keywords = ?5,"
	    " modseq = CASE WHEN ?6 = 0 THEN modseq ELSE ?6 END"
	    " WHERE folder_id = ?1 AND uidvalidity = ?2 AND uid = ?3"
	    " AND (flags IS NOT ?4 OR keywords IS NOT ?5 OR (?6 <> 0 AND modseq IS NOT ?6))",
	[IDX_THREAD_REF_GET] = "SELECT thread_id FROM thread_refs WHERE message_id = ?1",
	[IDX_THREAD_REF_PUT] =
	    "INSERT INTO thread_refs (message_id, thread_id) VALUES (?1, ?2)"
	    " ON CONFLICT (message_id) DO UPDATE SET thread_id = excluded.thread_id"
	    " WHERE thread_id <> excluded.thread_id",
	[IDX_THREAD_NEXT] =
	    "SELECT max((SELECT coalesce(max(thread_id), 0) FROM messages),"
	    " (SELECT coalesce(max(thread_id), 0) FROM thread_refs),"
	    " (SELECT coalesce(max(thread_id), 0) FROM temp.mb_stage)) + 1",
	[IDX_THREAD_MOVE_MSGS] = "UPDATE messages SET thread_id = ?1 WHERE thread_id = ?2",
	[IDX_THREAD_MOVE_REFS] = "UPDATE thread_refs SET thread_id = ?1 WHERE thread_id = ?2",
	[IDX_THREAD_MOVE_STAGE] = "UPDATE temp.mb_stage SET thread_id = ?1 WHERE thread_id = ?2",
};

int
idx_sqlerr(struct mb_index *idx, int rc, const char *what, struct mb_err *err)
{
	enum mb_errcode code;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
	case SQLITE_FULL:
		code = MB_E_TEMP;
		break;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_TOOBIG:
		code = MB_E_INVALID;
		break;
	default:
		code = MB_E_INTERNAL;
		break;
	}
	return mb_err_set(err, code, "index: %s: %s", what,
	    idx->db ? sqlite3_errmsg(idx->db) : sqlite3_errstr(rc));
}

sqlite3_stmt *
idx_stmt(struct mb_index *idx, enum idx_stmt id, struct mb_err *err)
{
	sqlite3_stmt *st = idx->stmts[id];
	int rc;

	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	rc = sqlite3_prepare_v3(idx->db, idx_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK) {
		idx_sqlerr(idx, rc, "prepare", err);
		sqlite3_finalize(st);
		return NULL;
	}
	idx->stmts[id] = st;
	return st;
}

void
idx_stmt_done(sqlite3_stmt *st)
{
	if (st != NULL)
		sqlite3_reset(st);
}

int
idx_step_done(struct mb_index *idx, sqlite3_stmt *st, const char *what, struct mb_err *err)
{
	int rc;

	for (rc = sqlite3_step(st); rc == SQLITE_ROW; rc = sqlite3_step(st))
		;
	if (rc != SQLITE_DONE) {
		idx_sqlerr(idx, rc, what, err);
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	return 0;
}

int
idx_bind_text(sqlite3_stmt *st, int col, const char *s)
{
	if (s == NULL)
		return sqlite3_bind_null(st, col);
	return sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
}

static int
idx_run(struct mb_index *idx, enum idx_stmt id, const char *what, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, id, err);

	if (st == NULL)
		return -1;
	return idx_step_done(idx, st, what, err);
}

int
mb_index_begin(struct mb_index *idx, struct mb_err *err)
{
	return idx_run(idx, IDX_BEGIN, "begin", err);
}

int
mb_index_commit(struct mb_index *idx, struct mb_err *err)
{
	return idx_run(idx, IDX_COMMIT, "commit", err);
}

void
mb_index_rollback(struct mb_index *idx)
{
	struct mb_err ignored = { 0 };

	if (idx == NULL || sqlite3_get_autocommit(idx->db))
		return;
	idx_run(idx, IDX_ROLLBACK, "rollback", &ignored);
}

int
idx_unit_begin(struct mb_index *idx, struct idx_unit *u, struct mb_err *err)
{
	u->own_txn = sqlite3_get_autocommit(idx->db) != 0;
	return idx_run(idx, u->own_txn ? IDX_BEGIN : IDX_SAVEPOINT, "begin", err);
}

int
idx_unit_end(struct mb_index *idx, struct idx_unit *u, bool ok, struct mb_err *err)
{
	struct mb_err ignored = { 0 };

	if (u->own_txn) {
		if (ok && idx_run(idx, IDX_COMMIT, "commit", err) == 0)
			return 0;
		mb_index_rollback(idx);
		return -1;
	}
	if (ok)
		return idx_run(idx, IDX_RELEASE, "release savepoint", err);
	/* ROLLBACK TO keeps the savepoint open: release it too. */
	idx_run(idx, IDX_ROLLBACK_TO, "rollback to savepoint", &ignored);
	idx_run(idx, IDX_RELEASE, "release savepoint", &ignored);
	return -1;
}

int
mb_index_code_schema_version(void)
{
	int v = 0;

	for (unsigned i = 0; i < mb_migrations_count; i++)
		if (mb_migrations[i].version > v)
			v = mb_migrations[i].version;
	return v;
}

int
mb_index_schema_version(struct mb_index *idx, int *version_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, IDX_SCHEMA_VERSION, err);
	int rc;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		idx_sqlerr(idx, rc, "schema version", err);
		idx_stmt_done(st);
		return -1;
	}
	*version_r = sqlite3_column_int(st, 0);
	idx_stmt_done(st);
	return 0;
}

/* Refuse an index written by a newer build: its schema may mean other things. */
static int
check_not_newer(struct mb_index *idx, struct mb_err *err)
{
	int have, code = mb_index_code_schema_version();

	if (mb_index_schema_version(idx, &have, err) == -1)
		return -1;
	if (have > code)
		return mb_err_set(err, MB_E_CONFIG,
		    "index schema version %d is newer than this build (%d): upgrade imap-mcp",
		    have, code);
	return 0;
}

/*
 * A migration that rebuilds the full-text index (0005, 0016) takes about a
 * minute at 300,000 messages (docs/benchmarks.md, "Packed bodies"), and
 * syncd runs them before it tells systemd it is ready (Type=notify): past
 * the start timeout (90 s by default) systemd would kill it, the migration
 * would roll back, and every restart would begin it again.  So each
 * migration is announced (STATUS=, and EXTEND_TIMEOUT_USEC= for a minute
 * more), and while it runs SQLite's progress callback asks for another
 * minute every MIGRATE_PING_MS, with the watchdog's WATCHDOG=1 when due.
 * Without $NOTIFY_SOCKET (a shell, the tests) mb_notify() does nothing.
 */
#define MIGRATE_EXTEND_USEC	"60000000"
#define MIGRATE_PING_MS		10000
#define MIGRATE_PROGRESS_OPS	100000	/* VM steps between two looks at the clock */

static int
migrate_progress(void *arg)
{
	long long *last_ms = arg, now = mb_now_ms();

	if (now - *last_ms >= MIGRATE_PING_MS) {
		*last_ms = now;
		(void)mb_notify("EXTEND_TIMEOUT_USEC=" MIGRATE_EXTEND_USEC);
		(void)mb_notify_watchdog();
	}
	return 0;	/* go on */
}

/* Run migration m's SQL, telling systemd it is under way (above). */
static int
migrate_one(struct mb_index *idx, const struct mb_migration *m, struct mb_err *err)
{
	char status[160], *errmsg = NULL;
	long long start = mb_now_ms(), last = start;
	int rc;

	snprintf(status, sizeof(status),
	    "STATUS=migrating the index: %s\nEXTEND_TIMEOUT_USEC=" MIGRATE_EXTEND_USEC, m->name);
	(void)mb_notify(status);
	sqlite3_progress_handler(idx->db, MIGRATE_PROGRESS_OPS, migrate_progress, &last);
	/* Migration text is compiled in, never input: exec is right here. */
	rc = sqlite3_exec(idx->db, m->sql, NULL, NULL, &errmsg);
	sqlite3_progress_handler(idx->db, 0, NULL, NULL);
	if (rc != SQLITE_OK) {
		mb_err_set(err, MB_E_INTERNAL, "index: migration %s: %s", m->name,
		    errmsg ? errmsg : sqlite3_errstr(rc));
		sqlite3_free(errmsg);
		return -1;
	}
	if (mb_now_ms() - start >= 1000)
		mb_log_info("index: migration %s took %.1f s", m->name,
		    (double)(mb_now_ms() - start) / 1000.0);
	return 0;
}

/*
 * Apply every migration not yet recorded, each in its own transaction with
 * its record, so a crash leaves either all of a migration or none of it.  The
 * check runs inside the transaction: two writers starting at once (which
 * should not happen, but) cannot both apply one migration.
 */
static int
migrate(struct mb_index *idx, struct mb_err *err)
{
	int rc;

	rc = sqlite3_exec(idx->db,
	    "CREATE TABLE IF NOT EXISTS schema_migrations ("
	    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
	    NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return idx_sqlerr(idx, rc, "create schema_migrations", err);
	if (check_not_newer(idx, err) == -1)
		return -1;

	for (unsigned i = 0; i < mb_migrations_count; i++) {
		const struct mb_migration *m = &mb_migrations[i];
		sqlite3_stmt *st;
		bool applied;

		if (mb_index_begin(idx, err) == -1)
			return -1;
		st = idx_stmt(idx, IDX_MIGRATION_APPLIED, err);
		if (st == NULL)
			goto fail;
		sqlite3_bind_int(st, 1, m->version);
		rc = sqlite3_step(st);
		applied = rc == SQLITE_ROW;
		idx_stmt_done(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			idx_sqlerr(idx, rc, "schema_migrations", err);
			goto fail;
		}
		if (applied) {
			mb_index_rollback(idx);
			continue;
		}
		if (migrate_one(idx, m, err) == -1)
			goto fail;
		st = idx_stmt(idx, IDX_MIGRATION_RECORD, err);
		if (st == NULL)
			goto fail;
		sqlite3_bind_int(st, 1, m->version);
		sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
		if (idx_step_done(idx, st, "record migration", err) == -1)
			goto fail;
		if (mb_index_commit(idx, err) == -1)
			goto fail;
	}
	return 0;
fail:
	mb_index_rollback(idx);
	return -1;
}

/* mkdir -p of path's directory (0750: the index is nobody else's business). */
static int
make_parent_dir(const char *path, struct mb_err *err)
{
	char dir[IDX_PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(dir))
		return mb_err_set(err, MB_E_CONFIG, "index path too long");
	memcpy(dir, path, len + 1);
	char *slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(dir, 0750) == -1 && errno != EEXIST)
			return mb_err_set(err, MB_E_CONFIG, "index directory %s: %s", dir,
			    strerror(errno));
		*p = saved;
		if (saved == '\0')
			break;
	}
	return 0;
}

static int
exec_fixed(struct mb_index *idx, const char *sql, struct mb_err *err)
{
	int rc = sqlite3_exec(idx->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return idx_sqlerr(idx, rc, sql, err);
	return 0;
}

static int
open_rw(struct mb_index *idx, struct mb_err *err)
{
	int persist = 1;

	/*
	 * page_size only takes effect on a new file; 4096 matches the file
	 * system and measured best for this workload (docs/index.md).
	 * auto_vacuum too (an older file keeps NONE until a VACUUM): with
	 * INCREMENTAL the pages a full-text merge frees go back to the file
	 * system (index_fts_merge.c) instead of staying in the file.
	 * secure_delete: Debian turns it on at compile time; it zeroes freed
	 * pages, doubling the writes of every FTS merge for nothing we need.
	 * temp_store FILE and a 4 MiB cache bound the writer's memory: with
	 * MEMORY, the statement journal of the writer's one INSERT per group
	 * (a copy of every page it changes, FTS5 merges included) stayed in
	 * the heap, 20 MB and more at 100,000 messages; as a file (0600,
	 * unlinked at once; spilled past 64 KiB) it is the kernel's page
	 * cache.  A 16 MiB cache saved no CPU (docs/benchmarks.md).
	 */
	if (exec_fixed(idx, "PRAGMA page_size = 4096", err) == -1 ||
	    exec_fixed(idx, "PRAGMA auto_vacuum = INCREMENTAL", err) == -1 ||
	    exec_fixed(idx, "PRAGMA journal_mode = WAL", err) == -1 ||
	    exec_fixed(idx, "PRAGMA synchronous = NORMAL", err) == -1 ||
	    exec_fixed(idx, "PRAGMA foreign_keys = ON", err) == -1 ||
	    exec_fixed(idx, "PRAGMA secure_delete = OFF", err) == -1 ||
	    exec_fixed(idx, "PRAGMA temp_store = FILE", err) == -1 ||
	    exec_fixed(idx, "PRAGMA cache_size = -4096", err) == -1)
		return -1;
	/*
	 * Keep -wal and -shm after the writer closes, so mcpd (read-only, and
	 * typically without write access to the directory) can still open the
	 * index while syncd is down.  See docs/index.md, "Read-only mode".
	 */
	sqlite3_file_control(idx->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	if (migrate(idx, err) == -1)
		return -1;
	return exec_fixed(idx, stage_sql, err);
}

/*
 * A WAL reader must map the -shm file; without write access to the directory
 * it cannot create one.  syncd keeps -wal and -shm (see open_rw), so this
 * means they were removed, or the index was last written by something else.
 */
static int
ro_error(struct mb_index *idx, int rc, struct mb_err *err)
{
	if ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN)
		return mb_err_set(err, MB_E_CONFIG,
		    "index %s: cannot read: a read-only reader needs %s-shm to exist"
		    " (syncd keeps it) or write access to the directory: %s",
		    idx->path, idx->path, sqlite3_errmsg(idx->db));
	return idx_sqlerr(idx, rc, "open read-only", err);
}

static int
open_ro(struct mb_index *idx, struct mb_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc, found;

	if (exec_fixed(idx, "PRAGMA query_only = 1", err) == -1)
		return -1;
	/* An uninitialised index has no schema_migrations; say so plainly. */
	rc = sqlite3_prepare_v2(idx->db,
	    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return ro_error(idx, rc, err);
	rc = sqlite3_step(st);
	found = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	if (found == -1)
		return ro_error(idx, rc, err);
	if (found == 0)
		return mb_err_set(err, MB_E_CONFIG,
		    "index %s is not initialised: run syncd first", idx->path);
	return check_not_newer(idx, err);
}

int
mb_index_open(const char *path, enum mb_index_mode mode, struct mb_index **idx_r,
    struct mb_err *err)
{
	struct mb_index *idx;
	int flags, rc;

	*idx_r = NULL;
	if (mode == MB_INDEX_RO) {
		flags = SQLITE_OPEN_READONLY;
		if (access(path, F_OK) == -1)
			return mb_err_set(err, MB_E_CONFIG,
			    "index %s does not exist: run syncd first", path);
	} else {
		flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
		if (make_parent_dir(path, err) == -1)
			return -1;
	}
	idx = mb_xcalloc(1, sizeof(*idx));
	idx->mode = mode;
	idx->path = mb_xstrdup(path);
	rc = sqlite3_open_v2(path, &idx->db, flags | SQLITE_OPEN_NOFOLLOW,
	    mode == MB_INDEX_RO ? idx_map_vfs() : NULL);
	if (rc != SQLITE_OK) {
		mb_err_set(err, rc == SQLITE_CANTOPEN ? MB_E_CONFIG : MB_E_INTERNAL,
		    "index %s: cannot open: %s", path,
		    idx->db ? sqlite3_errmsg(idx->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_extended_result_codes(idx->db, 1);
	sqlite3_busy_timeout(idx->db, IDX_BUSY_TIMEOUT_MS);
	if (mb_fts_cjk_register(idx->db, err) == -1 || mb_fts_rank_register(idx->db, err) == -1 ||
	    mb_fts_hits_register(idx->db, err) == -1 || mb_fts_bounds_register(idx->db, err) == -1 ||
	    mb_labels_register(idx->db, err) == -1 || mb_text_register(idx->db, err) == -1)
		goto fail;
	if ((mode == MB_INDEX_RO ? open_ro(idx, err) : open_rw(idx, err)) == -1)
		goto fail;
	*idx_r = idx;
	return 0;
fail:
	mb_index_close(&idx);
	return -1;
}

void
mb_index_close(struct mb_index **idxp)
{
	struct mb_index *idx = *idxp;

	if (idx == NULL)
		return;
	for (size_t i = 0; i < IDX_STMT_COUNT; i++)
		sqlite3_finalize(idx->stmts[i]);
	for (size_t i = 0; i < IDX_SQL_CACHE; i++)
		sqlite3_finalize(idx->by_sql[i].st);
	if (idx->db != NULL && sqlite3_close(idx->db) != SQLITE_OK)
		sqlite3_close_v2(idx->db);	/* a statement leaked: close when it goes */
	free(idx->path);
	free(idx);
	*idxp = NULL;
}

struct sqlite3 *
mb_index_db(struct mb_index *idx)
{
	return idx->db;
}

/* Remove path and the journal, WAL and shared-memory files beside it. */
static void
remove_db_files(const char *path)
{
	static const char *const suffixes[] = { "", "-journal", "-wal", "-shm" };
	struct mb_buf p = MB_BUF_INIT(IDX_PATH_MAX);

	for (size_t i = 0; i < MB_ARRAY_LEN(suffixes); i++) {
		mb_buf_reset(&p);
		if (mb_buf_addf(&p, "%s%s", path, suffixes[i]) == 0)
			unlink(p.data);
	}
	mb_buf_release(&p);
}

/*
 * The copy is written to dest_path.tmp, then renamed over dest_path, so a
 * failed backup never replaces a good one.  One backup step copies every page
 * under one read transaction: a consistent snapshot, even while syncd writes
 * through another connection.
 */
int
mb_index_backup(struct mb_index *idx, const char *dest_path, struct mb_err *err)
{
	struct mb_buf tmp = MB_BUF_INIT(IDX_PATH_MAX);
	sqlite3 *dest = NULL;
	sqlite3_backup *bk;
	int rc, ret = -1;

	if (mb_buf_addf(&tmp, "%s.tmp", dest_path) == -1)
		return mb_err_set(err, MB_E_INVALID, "backup path too long");
	remove_db_files(tmp.data);
	rc = sqlite3_open_v2(tmp.data, &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		mb_err_set(err, MB_E_INTERNAL, "backup to %s: %s", tmp.data,
		    dest ? sqlite3_errmsg(dest) : sqlite3_errstr(rc));
		goto out;
	}
	bk = sqlite3_backup_init(dest, "main", idx->db, "main");
	if (bk == NULL) {
		mb_err_set(err, MB_E_INTERNAL, "backup to %s: %s", tmp.data, sqlite3_errmsg(dest));
		goto out;
	}
	do {
		rc = sqlite3_backup_step(bk, -1);
		if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
			sqlite3_sleep(50);
	} while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
	sqlite3_backup_finish(bk);
	if (rc != SQLITE_DONE) {
		mb_err_set(err, MB_E_TEMP, "backup to %s: %s", tmp.data, sqlite3_errstr(rc));
		goto out;
	}
	/*
	 * The copy carries the source's WAL flag.  Make it a rollback-journal
	 * file: a stale dest-wal left beside an older backup can then never be
	 * replayed into it, and a read-only reader needs no -shm.  Opening it
	 * with mb_index_open(RW) turns WAL back on.
	 */
	rc = sqlite3_exec(dest, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		mb_err_set(err, MB_E_INTERNAL, "backup to %s: %s", tmp.data, sqlite3_errmsg(dest));
		goto out;
	}
	rc = sqlite3_close(dest);
	dest = NULL;
	if (rc != SQLITE_OK) {
		mb_err_set(err, MB_E_INTERNAL, "backup to %s: close: %s", tmp.data,
		    sqlite3_errstr(rc));
		goto out;
	}
	if (rename(tmp.data, dest_path) == -1) {
		mb_err_set(err, MB_E_INTERNAL, "backup: rename to %s: %s", dest_path,
		    strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (dest != NULL)
		sqlite3_close(dest);
	if (ret == -1)
		remove_db_files(tmp.data);
	mb_buf_release(&tmp);
	return ret;
}
