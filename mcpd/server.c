/*
 * What the request threads share: the configuration, the session map, the
 * cursor key, and one read-only index connection per thread (SQLite
 * connections are not shared across threads here; each pool thread opens its
 * own on first use and a pthread key closes it when the thread ends).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "mailbox/log.h"
#include "mcpd.h"

static void
close_index(void *p)
{
	struct mb_index *idx = p;

	mb_index_close(&idx);
}

int
mcp_server_init(struct mcp_server *srv, const struct mcp_config *conf, struct mb_err *err)
{
	memset(srv, 0, sizeof(*srv));
	srv->conf = conf;
	if (RAND_bytes(srv->cursor_key, sizeof(srv->cursor_key)) != 1)
		return mb_err_set(err, MB_E_INTERNAL, "no random bytes for the cursor key");
	if (pthread_key_create(&srv->idx_key, close_index) != 0)
		return mb_err_set(err, MB_E_INTERNAL, "pthread_key_create failed");
	srv->sessions = mcp_sessions_new(conf->max_sessions);
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
	struct mb_index *idx = pthread_getspecific(srv->idx_key);

	if (idx != NULL)
		return idx;
	if (mb_index_open(srv->conf->index_path, MB_INDEX_RO, &idx, err) == -1)
		return NULL;
	pthread_setspecific(srv->idx_key, idx);
	return idx;
}

void
mcp_server_close_index(struct mcp_server *srv)
{
	struct mb_index *idx = pthread_getspecific(srv->idx_key);

	if (idx != NULL) {
		pthread_setspecific(srv->idx_key, NULL);
		mb_index_close(&idx);
	}
}
