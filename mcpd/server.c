/*
 * What the request threads share: the configuration, the session map, the
 * cursor key, and one read-only index connection per thread (SQLite
 * connections are not shared across threads here; each pool thread opens its
 * own on first use and a pthread key closes it when the thread ends).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "mailbox/log.h"
#include "mailbox/util.h"
#include "mcpd.h"

#define MCP_INDEX_MMAP	"4294967296"	/* 4 GiB of address space at most */

/* One pool thread's connection and its prepared statements. */
#define STMT_CACHE	24
struct thread_db {
	struct mb_index	*idx;
	struct {
		const char	*sql;	/* identity: the static string's address */
		sqlite3_stmt	*st;
	} cache[STMT_CACHE];
};

static void
close_thread_db(void *p)
{
	struct thread_db *t = p;

	for (size_t i = 0; i < STMT_CACHE; i++)
		sqlite3_finalize(t->cache[i].st);
	mb_index_close(&t->idx);
	free(t);
}

/*
 * Before SQLite's first use (it fails harmlessly after): each pool thread has
 * its own connection and never lends it, so SQLite's serialized mode
 * (Debian's default: a mutex around every call on a connection) and its
 * allocation statistics (a global mutex around every malloc) only cost:
 * 5-15% of a search's CPU, measured.  Multi-thread mode keeps SQLite's own shared
 * state locked.
 */
static void
sqlite_threading(void)
{
	(void)sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/*
 * Keep freed memory for the next search.  FTS5 builds a prefix query's
 * doclist in buffers of megabytes; with glibc's defaults each search mapped
 * them afresh (or the thread's heap was trimmed and grown again), so every
 * page was faulted in and every unmap flushed the TLB of both cores: spam*
 * at 100,000 messages took 20-27 ms of CPU, 7.7 ms with these.  The cost is
 * up to the trim threshold of free memory kept per malloc arena, measured
 * at about a megabyte more RssAnon.
 */
static void
malloc_reuse(void)
{
#ifdef M_TRIM_THRESHOLD
	(void)mallopt(M_MMAP_THRESHOLD, 8 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

int
mcp_server_init(struct mcp_server *srv, const struct mcp_config *conf, struct mb_err *err)
{
	sqlite_threading();
	malloc_reuse();
	memset(srv, 0, sizeof(*srv));
	if (mcp_tools_load(err) == -1)	/* a broken mcpd/tools/<name>.json stops mcpd here */
		return -1;
	srv->conf = conf;
	if (RAND_bytes(srv->cursor_key, sizeof(srv->cursor_key)) != 1)
		return mb_err_set(err, MB_E_INTERNAL, "no random bytes for the cursor key");
	if (pthread_key_create(&srv->idx_key, close_thread_db) != 0)
		return mb_err_set(err, MB_E_INTERNAL, "pthread_key_create failed");
	srv->sessions = mcp_sessions_new(conf->max_sessions);
	mcp_sessions_set_rate(srv->sessions, conf->rate);
	return 0;
}

void
mcp_server_release(struct mcp_server *srv)
{
	mcp_server_close_index(srv);
	pthread_key_delete(srv->idx_key);
	mcp_sessions_free(&srv->sessions);
	OPENSSL_cleanse(srv->cursor_key, sizeof(srv->cursor_key));
}

struct mb_index *
mcp_server_index(struct mcp_server *srv, struct mb_err *err)
{
	struct thread_db *t = pthread_getspecific(srv->idx_key);

	if (t != NULL)
		return t->idx;
	t = mb_xcalloc(1, sizeof(*t));
	if (mb_index_open(srv->conf->index_path, MB_INDEX_RO, &t->idx, err) == -1) {
		free(t);
		return NULL;
	}
	/*
	 * Read the index through a shared mapping rather than pread() into each
	 * thread's page cache: searches touch many pages once (doclists, bodies
	 * for excerpts), and the copies were a quarter of a search's CPU.  The
	 * mapped pages are the kernel's page cache, shared and reclaimable, not
	 * the process's own memory (RssFile, not RssAnon).
	 */
	sqlite3_exec(mb_index_db(t->idx), "PRAGMA mmap_size = " MCP_INDEX_MMAP, NULL, NULL, NULL);
	pthread_setspecific(srv->idx_key, t);
	return t->idx;
}

sqlite3_stmt *
mcp_server_stmt(struct mcp_server *srv, const char *sql)
{
	struct thread_db *t = pthread_getspecific(srv->idx_key);
	sqlite3_stmt *st = NULL;
	size_t i;

	if (MB_NEVER(t == NULL))
		return NULL;
	for (i = 0; i < STMT_CACHE && t->cache[i].sql != NULL; i++)
		if (t->cache[i].sql == sql) {
			sqlite3_reset(t->cache[i].st);
			sqlite3_clear_bindings(t->cache[i].st);
			return t->cache[i].st;
		}
	if (sqlite3_prepare_v3(mb_index_db(t->idx), sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
	    NULL) != SQLITE_OK) {
		mb_log_error("prepare: %s", sqlite3_errmsg(mb_index_db(t->idx)));
		return NULL;
	}
	if (i < STMT_CACHE) {
		t->cache[i].sql = sql;
		t->cache[i].st = st;
		return st;
	}
	/* MB_NEVER: the cache holds every statement mcpd has; leak-free fallback */
	mb_log_error("statement cache full");
	sqlite3_finalize(st);
	return NULL;
}

void
mcp_server_stmt_done(sqlite3_stmt *st)
{
	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

void
mcp_server_close_index(struct mcp_server *srv)
{
	struct thread_db *t = pthread_getspecific(srv->idx_key);

	if (t != NULL) {
		pthread_setspecific(srv->idx_key, NULL);
		close_thread_db(t);
	}
}
