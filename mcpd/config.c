/*
 * mcpd's settings, from the environment.  The typed table in
 * libmailbox/core/conf.c (syncd's work) was not on main when this was
 * written; the keys below are few and parsed here with the same rules:
 * numbers via strtoul with end and range checks, every error names its key.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/log.h"
#include "mailbox/util.h"
#include "mcpd.h"

static int
get_uint(const char *(*lookup)(const char *), const char *key, unsigned def, unsigned min,
    unsigned max, unsigned *out, struct mb_err *err)
{
	const char *v = lookup(key);
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0') {
		*out = def;
		return 0;
	}
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || v[0] == '-' || n < min || n > max)
		return mb_err_set(err, MB_E_CONFIG, "%s: want a number from %u to %u, got '%s'",
		    key, min, max, v);
	*out = (unsigned)n;
	return 0;
}

/* Split a comma-separated list into an owned NULL-terminated array. */
static char **
split_list(const char *v)
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

static void
free_list(char ***listp)
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
	const char *v;
	enum mb_log_level level = MB_LOG_INFO;

	memset(c, 0, sizeof(*c));
	v = lookup("MCP_LISTEN");
	c->listen = mb_xstrdup(v && *v ? v : "127.0.0.1:8765");
	if (parse_listen(c, err) == -1)
		goto fail;
	v = lookup("MCP_INDEX");
	if (v && *v)
		c->index_path = mb_xstrdup(v);
	else {
		const char *dir = lookup("DATA_DIR");
		size_t n;

		if (dir == NULL || *dir == '\0')
			dir = "/var/lib/imap-mcp";
		n = strlen(dir) + sizeof("/index.db");
		c->index_path = mb_xmalloc(n);
		memcpy(c->index_path, dir, strlen(dir));
		memcpy(c->index_path + strlen(dir), "/index.db", sizeof("/index.db"));
	}
	c->allowed_origins = split_list(lookup("MCP_ALLOWED_ORIGINS"));
	c->allowed_hosts = split_list(lookup("MCP_ALLOWED_HOSTS"));
	if (get_uint(lookup, "MCP_THREADS", 4, 1, 64, &c->threads, err) == -1 ||
	    get_uint(lookup, "MCP_MAX_CONNECTIONS", 64, 4, 10000, &c->max_connections, err) == -1 ||
	    get_uint(lookup, "MCP_TIMEOUT", 30, 1, 3600, &c->timeout, err) == -1 ||
	    get_uint(lookup, "MCP_MAX_SESSIONS", 1024, 1, 1000000, &c->max_sessions, err) == -1 ||
	    get_uint(lookup, "MCP_RATE_LIMIT", 50, 0, 100000, &c->rate, err) == -1)
		goto fail;
	v = lookup("MCP_PORT_FILE");
	c->port_file = v && *v ? mb_xstrdup(v) : NULL;
	v = lookup("LOG_LEVEL");
	if (v && *v && mb_log_level_parse(v, &level) == -1) {
		mb_err_set(err, MB_E_CONFIG, "LOG_LEVEL: want error, warning, info or debug, got '%s'",
		    v);
		goto fail;
	}
	c->log_level = (int)level;
	v = lookup("SYNCD_SOCKET");
	c->syncd_socket = mb_xstrdup(v && *v ? v : "/run/imap-mcp/syncd.sock");
	v = lookup("MCP_READ_ONLY");
	c->read_only = v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 ||
	    strcmp(v, "yes") == 0);
	return 0;
fail:
	mcp_config_release(c);
	return -1;
}

void
mcp_config_release(struct mcp_config *c)
{
	free(c->listen);
	free(c->unix_path);
	free(c->host);
	free(c->index_path);
	free(c->port_file);
	free(c->syncd_socket);
	free_list(&c->allowed_origins);
	free_list(&c->allowed_hosts);
	memset(c, 0, sizeof(*c));
}
