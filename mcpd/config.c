/*
 * mcpd's settings: one typed table (libmailbox/core/conf.c, the
 * one syncd uses), read from the environment, then what derives from them
 * (the listen address split, the index path, the allow-lists, the accounts:
 * accounts.c).  The OAuth
 * settings are auth.c's (mcp_auth_conf_load).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/conf.h"
#include "mailbox/log.h"
#include "mailbox/util.h"
#include "mcpd.h"

static const char *const level_choices[] = { "error", "warning", "info", "debug", NULL };
/* Index parity is the answer: odd means read-only. */
static const char *const bool_choices[] = { "0", "1", "false", "true", "no", "yes", NULL };

#define K(name, type, field, def, min, max, choices) \
	{ name, type, offsetof(struct mcp_config, field), def, min, max, 0, choices, NULL }

static const struct mb_conf_key mcp_conf_keys[] = {
	K("MCP_LISTEN", MB_CONF_STR, listen, "127.0.0.1:8765", 0, 0, NULL),
	K("MCP_INDEX", MB_CONF_PATH, index_path, NULL, 0, 0, NULL),
	K("DATA_DIR", MB_CONF_PATH, data_dir, "/var/lib/imap-mcp", 0, 0, NULL),
	K("MCP_ALLOWED_ORIGINS", MB_CONF_STR, origins_setting, NULL, 0, 0, NULL),
	K("MCP_ALLOWED_HOSTS", MB_CONF_STR, hosts_setting, NULL, 0, 0, NULL),
	K("MCP_THREADS", MB_CONF_UINT, threads, "4", 1, 64, NULL),
	K("MCP_MAX_CONNECTIONS", MB_CONF_UINT, max_connections, "64", 4, 10000, NULL),
	K("MCP_TIMEOUT", MB_CONF_UINT, timeout, "30", 1, 3600, NULL),
	K("MCP_MAX_SESSIONS", MB_CONF_UINT, max_sessions, "1024", 1, 1000000, NULL),
	K("MCP_MAX_SESSIONS_PER_CALLER", MB_CONF_UINT, max_sessions_per_caller, "64", 1, 1000000,
	    NULL),
	K("MCP_RATE_LIMIT", MB_CONF_UINT, rate, "50", 0, 100000, NULL),
	K("MCP_REQUEST_TIMEOUT", MB_CONF_UINT, request_timeout, "20", 1, 3600, NULL),
	K("MCP_MAX_CONNECTIONS_PER_ADDRESS", MB_CONF_UINT, max_per_address, "32", 0, 10000,
	    NULL),
	K("MCP_PORT_FILE", MB_CONF_PATH, port_file, NULL, 0, 0, NULL),
	K("LOG_LEVEL", MB_CONF_ENUM, level_choice, "info", 0, 0, level_choices),
	K("SYNCD_SOCKET", MB_CONF_PATH, syncd_socket, "/run/imap-mcp/syncd.sock", 0, 0, NULL),
	K("MCP_READ_ONLY", MB_CONF_ENUM, read_only_choice, "0", 0, 0, bool_choices),
	K("MCP_MAX_BATCH", MB_CONF_UINT, max_batch, "64", 1, 10000, NULL),
	K("MCP_MAX_RESPONSE", MB_CONF_UINT, max_response, "4194304", 65536, 268435456, NULL),
	K("MCP_ATTACHMENT_MAX_BYTES", MB_CONF_UINT, attachment_max, "10485760", 1024, 1u << 30,
	    NULL),
};

char **
mcp_split_list(const char *v)
{
	char **list;
	size_t n = 1, i = 0;
	const char *p, *start;

	for (p = v ? v : ""; *p; p++)
		if (*p == ',')
			n++;
	list = mb_xcalloc(n + 1, sizeof(*list));
	if (v == NULL)
		return list;
	for (start = p = v;; p++) {
		if (*p == ',' || *p == '\0') {
			const char *a = start, *b = p;

			while (a < b && (*a == ' ' || *a == '\t'))
				a++;
			while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
				b--;
			if (b > a)
				list[i++] = mb_xstrndup(a, (size_t)(b - a));
			if (*p == '\0')
				break;
			start = p + 1;
		}
	}
	return list;
}

void
mcp_free_list(char ***listp)
{
	char **l = *listp;

	if (l == NULL)
		return;
	for (size_t i = 0; l[i]; i++)
		free(l[i]);
	free(l);
	*listp = NULL;
}

/* "127.0.0.1:8765", "[::1]:8765", "localhost:8765" (bound as 127.0.0.1), "unix:/path". */
static int
parse_listen(struct mcp_config *c, struct mb_err *err)
{
	const char *v = c->listen, *colon;
	char *end;
	unsigned long port;

	if (strncmp(v, "unix:", 5) == 0) {
		if (v[5] != '/')
			return mb_err_set(err, MB_E_CONFIG,
			    "MCP_LISTEN: unix: wants an absolute path, got '%s'", v);
		c->listen_unix = true;
		c->unix_path = mb_xstrdup(v + 5);
		return 0;
	}
	if (v[0] == '[') {
		const char *rb = strchr(v, ']');

		if (rb == NULL || rb[1] != ':')
			return mb_err_set(err, MB_E_CONFIG,
			    "MCP_LISTEN: want [v6-address]:port, got '%s'", v);
		c->host = mb_xstrndup(v + 1, (size_t)(rb - v - 1));
		colon = rb + 1;
	} else {
		colon = strrchr(v, ':');
		if (colon == NULL || colon == v)
			return mb_err_set(err, MB_E_CONFIG,
			    "MCP_LISTEN: want host:port or unix:/path, got '%s'", v);
		c->host = mb_xstrndup(v, (size_t)(colon - v));
		if (strcmp(c->host, "localhost") == 0) {
			free(c->host);
			c->host = mb_xstrdup("127.0.0.1");
		}
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || colon[1] == '\0' || port > 65535)
		return mb_err_set(err, MB_E_CONFIG, "MCP_LISTEN: bad port in '%s'", v);
	c->port = (unsigned)port;
	return 0;
}

int
mcp_config_load(struct mcp_config *c, const char *(*lookup)(const char *), struct mb_err *err)
{
	static const int levels[] = { MB_LOG_ERR, MB_LOG_WARNING, MB_LOG_INFO, MB_LOG_DEBUG };

	memset(c, 0, sizeof(*c));
	if (mb_conf_load(mcp_conf_keys, MB_ARRAY_LEN(mcp_conf_keys), c, NULL, lookup, NULL,
	    err) == -1 || parse_listen(c, err) == -1)
		goto fail;
	if (c->index_path == NULL) {
		struct mb_buf b = MB_BUF_INIT(8192);

		mb_buf_addf(&b, "%s/index.db", c->data_dir);
		c->index_path = mb_buf_detach(&b, NULL);
	}
	c->allowed_origins = mcp_split_list(c->origins_setting);
	c->allowed_hosts = mcp_split_list(c->hosts_setting);
	c->log_level = levels[c->level_choice];
	c->read_only = c->read_only_choice & 1;
	if (mcp_accounts_load(c, lookup, err) == -1)
		goto fail;
	return 0;
fail:
	mcp_config_release(c);
	return -1;
}

void
mcp_config_release(struct mcp_config *c)
{
	mcp_accounts_release(c);
	mb_conf_release(mcp_conf_keys, MB_ARRAY_LEN(mcp_conf_keys), c);
	free(c->unix_path);
	free(c->host);
	mcp_free_list(&c->allowed_origins);
	mcp_free_list(&c->allowed_hosts);
	memset(c, 0, sizeof(*c));
}
