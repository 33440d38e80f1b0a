/*
 * mcpd: the MCP server.  Reads the index read-only, holds no credential,
 * never speaks IMAP (it does not link the code that could).
 *
 * main() is the table of contents: load the settings, block the signals
 * (before any thread exists, so every libmicrohttpd thread inherits the
 * mask), start the HTTP daemon, wait in sigwait() for TERM/INT, stop.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/notify.h"
#include "auth.h"
#include "mcpd.h"

static const char *
env_lookup(const char *key)
{
	return getenv(key);
}

static void
usage(void)
{
	fprintf(stderr, "usage: mcpd\n"
	    "Settings come from the environment: MCP_LISTEN (127.0.0.1:8765 or unix:/path),\n"
	    "MCP_INDEX or DATA_DIR, MCP_ALLOWED_HOSTS, MCP_ALLOWED_ORIGINS, MCP_THREADS,\n"
	    "MCP_MAX_CONNECTIONS, MCP_TIMEOUT, MCP_MAX_SESSIONS, MCP_RATE_LIMIT, MCP_PORT_FILE,\n"
	    "LOG_LEVEL, and the MCP_AUTH* / MCP_OAUTH_* keys of docs/auth.md.\n"
	    "See docs/mcpd.md.\n");
	exit(2);
}

static void
write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 ||
	    rename(tmp, path) == -1)
		mb_fatal("MCP_PORT_FILE %s", path);
}

int
main(int argc, char **argv)
{
	struct mcp_config conf;
	struct mcp_server srv;
	struct mcp_http *http;
	struct mcp_auth_conf ac;
	struct mcp_auth *auth = NULL;
	struct mb_err err = { 0 };
	sigset_t set;
	unsigned port;
	int sig;

	if (argc > 1)
		usage();
	mb_log_init("mcpd", MB_LOG_INFO);
	if (mcp_config_load(&conf, env_lookup, &err) == -1)
		mb_fatalx("%s", err.msg);
	mb_log_set_level((enum mb_log_level)conf.log_level);
	/* OAuth resource server (docs/auth.md); MCP_AUTH=none only on loopback/unix: */
	if (mcp_auth_conf_load(&ac, env_lookup, &err) == -1 ||
	    mcp_auth_listen_check(ac.mode, conf.listen, &err) == -1 ||
	    mcp_auth_new(&ac, &auth, &err) == -1)
		mb_fatalx("%s", err.msg);
	mcp_auth_conf_release(&ac);
	if (mcp_auth_prefetch(auth, &err) == -1)
		mb_log_warnx("auth: %s; will retry on requests", err.msg);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		mb_fatalx("pthread_sigmask failed");

	if (mcp_server_init(&srv, &conf, &err) == -1)
		mb_fatalx("%s", err.msg);
	srv.auth = auth;
	http = mcp_http_start(&srv, &port, &err);
	if (http == NULL)
		mb_fatalx("%s", err.msg);
	if (conf.listen_unix)
		mb_log_info("listening on unix:%s", conf.unix_path);
	else
		mb_log_info("listening on %s%s%s:%u", strchr(conf.host, ':') ? "[" : "",
		    conf.host, strchr(conf.host, ':') ? "]" : "", port);
	for (size_t i = 0; i < conf.n_accounts; i++)
		mb_log_info("account %s (number %u): index %s%s", conf.accounts[i].name,
		    conf.accounts[i].number, conf.accounts[i].index_path,
		    conf.accounts[i].syncd_socket ? "" : ", read-only");
	if (conf.port_file)
		write_port_file(conf.port_file, port);

	(void)mb_notify("READY=1\nSTATUS=serving MCP");	/* systemd Type=notify */
	for (;;) {	/* WATCHDOG=1 every half WATCHDOG_USEC while waiting */
		int wd = mb_notify_watchdog();
		struct timespec ts = { .tv_sec = wd / 1000, .tv_nsec = (long)(wd % 1000) * 1000000L };

		sig = sigtimedwait(&set, NULL, wd < 0 ? NULL : &ts);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		/* HUP: nothing to reload (settings are read at start); PIPE: ignored */
	}
	(void)mb_notify("STOPPING=1");
	mb_log_info("shutting down");
	mcp_http_stop(&http);
	mcp_auth_free(&auth);
	mcp_server_release(&srv);
	mcp_config_release(&conf);
	return 0;
}
