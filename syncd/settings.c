/*
 * syncd's settings: one table (libmailbox/core/conf.c), in step with .env.example.  The
 * password (and an OAuth refresh token or client secret) is not a setting: main.c reads it from IMAP_PASSWORD_FILE or
 * systemd's credentials directory, never from the environment or argv.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/log.h"
#include "syncd.h"

static const char *const tls_choices[] = { "implicit", "starttls", "none", NULL };
static const char *const auth_choices[] = { "password", "oauth2", NULL };
static const char *const level_choices[] = { "error", "warning", "info", "debug", NULL };

#define K(name, type, field, def, min, max, flags, choices, help) \
	{ name, type, offsetof(struct sd_conf, field), def, min, max, flags, choices, help }

const struct mb_conf_key sd_conf_keys[] = {
	K("IMAP_HOST", MB_CONF_STR, imap_host, NULL, 0, 0, MB_CF_REQUIRED, NULL, NULL),
	K("IMAP_PORT", MB_CONF_UINT, imap_port, "993", 1, 65535, 0, NULL, NULL),
	K("IMAP_TLS", MB_CONF_ENUM, imap_tls, "implicit", 0, 0, 0, tls_choices, NULL),
	K("IMAP_USER", MB_CONF_STR, imap_user, NULL, 0, 0, MB_CF_REQUIRED, NULL, NULL),
	K("IMAP_PASSWORD_FILE", MB_CONF_PATH, imap_password_file, NULL, 0, 0, 0, NULL,
	    "or $CREDENTIALS_DIRECTORY/imap-password"),
	K("IMAP_AUTH", MB_CONF_ENUM, imap_auth, "password", 0, 0, 0, auth_choices,
	    "oauth2: XOAUTH2/OAUTHBEARER with a token from IMAP_OAUTH_* (docs/setup.md)"),
	K("IMAP_OAUTH_PROVIDER", MB_CONF_STR, oauth_provider, NULL, 0, 0, 0, NULL,
	    "google or microsoft: fills in the URLs and scope below"),
	K("IMAP_OAUTH_TOKEN_URL", MB_CONF_STR, oauth_token_url, NULL, 0, 0, 0, NULL, NULL),
	K("IMAP_OAUTH_DEVICE_URL", MB_CONF_STR, oauth_device_url, NULL, 0, 0, 0, NULL,
	    "for syncd --oauth-login"),
	K("IMAP_OAUTH_CLIENT_ID", MB_CONF_STR, oauth_client_id, NULL, 0, 0, 0, NULL, NULL),
	K("IMAP_OAUTH_CLIENT_SECRET_FILE", MB_CONF_PATH, oauth_client_secret_file, NULL, 0, 0,
	    0, NULL, "or $CREDENTIALS_DIRECTORY/imap-oauth-client-secret; none: public client"),
	K("IMAP_OAUTH_REFRESH_TOKEN_FILE", MB_CONF_PATH, oauth_refresh_token_file, NULL, 0, 0,
	    0, NULL, "or $CREDENTIALS_DIRECTORY/imap-oauth-refresh-token (read-only there)"),
	K("IMAP_OAUTH_SCOPE", MB_CONF_STR, oauth_scope, NULL, 0, 0, 0, NULL, NULL),
	K("IMAP_CA_FILE", MB_CONF_PATH, imap_ca_file, NULL, 0, 0, 0, NULL, NULL),
	K("SYNC_FOLDERS", MB_CONF_STR, sync_folders, NULL, 0, 0, 0, NULL,
	    "empty: every selectable folder"),
	K("SYNC_INTERVAL", MB_CONF_UINT, sync_interval, "3600", 1, 86400 * 7, 0, NULL, "seconds"),
	K("SYNC_RANGE_SIZE", MB_CONF_UINT, sync_range_size, "100", 1, 10000, 0, NULL, "UIDs"),
	K("SYNC_MAX_RANGES_PER_TICK", MB_CONF_UINT, sync_max_ranges, "50", 1, 1000000, 0, NULL,
	    "not applied by --backfill"),
	K("SYNC_WORKERS", MB_CONF_UINT, sync_workers, "4", 1, 16, 0, NULL, "IMAP connections"),
	K("SYNC_MAX_ATTEMPTS", MB_CONF_UINT, sync_max_attempts, "3", 1, 100, 0, NULL,
	    "then dead_letters"),
	K("SYNC_RETRY_BACKOFF", MB_CONF_UINT, sync_retry_backoff, "30", 0, 86400, 0, NULL,
	    "seconds, doubled per attempt"),
	K("SYNC_RANGE_TIMEOUT", MB_CONF_UINT, sync_range_timeout, "300", 2, 86400, 0, NULL,
	    "seconds per range, then the worker is killed"),
	K("SYNC_MAX_MESSAGE_SIZE", MB_CONF_UINT, sync_max_message_size, "26214400", 1024,
	    4294967295ULL, 0, NULL, "bytes; larger messages are indexed headers-only"),
	K("SYNC_FLAG_BUDGET", MB_CONF_UINT, sync_flag_budget, "50000", 0, 100000000, 0, NULL,
	    "messages whose flags a tick fetches on servers without CONDSTORE; 0: none"),
	K("DATA_DIR", MB_CONF_PATH, data_dir, "/var/lib/imap-mcp", 0, 0, 0, NULL,
	    "index.db and blobs/"),
	K("LOG_LEVEL", MB_CONF_ENUM, log_level, "info", 0, 0, 0, level_choices, NULL),
	K("SYNCD_SOCKET", MB_CONF_PATH, syncd_socket, "/run/imap-mcp/syncd.sock", 0, 0, 0, NULL,
	    "the control socket mcpd's write tools use (daemon mode)"),
	K("SYNCD_ALLOWED_UIDS", MB_CONF_STR, syncd_allowed_uids, NULL, 0, 0, 0, NULL,
	    "users (names or numbers) that may connect; empty: syncd's own"),
	K("SYNC_WRITE_TIMEOUT", MB_CONF_UINT, write_timeout, "30", 2, 3600, 0, NULL,
	    "seconds one write may take, then it is killed"),
	K("SYNC_WATCH", MB_CONF_STR, sync_watch, "INBOX", 0, 0, 0, NULL,
	    "folders held in IDLE for new mail within seconds (docs/syncd.md, Push)"),
	K("SYNC_WATCH_MAX", MB_CONF_UINT, sync_watch_max, "3", 0, 10, 0, NULL,
	    "IMAP connections the watch may hold; 0: no push, the tick alone"),
	K("SYNC_WATCH_RENEW", MB_CONF_UINT, sync_watch_renew, "1740", 5, 1740, 0, NULL,
	    "seconds between IDLE renewals (RFC 2177: at most 29 minutes)"),
	K("SYNC_PUSH_KEEP", MB_CONF_UINT, sync_push_keep, "60", 0, 1740, 0, NULL,
	    "seconds a push keeps its IMAP sessions logged in for the next; 0: closed at once"),
	K("DRAFT_FROM", MB_CONF_STR, draft_from, NULL, 0, 0, 0, NULL,
	    "From of create_draft's drafts (Name <addr>); empty: IMAP_USER if it is an address"),
	K("SYNC_SINCE", MB_CONF_STR, sync_since, NULL, 0, 0, 0, NULL,
	    "YYYY-MM-DD: index only mail received on or after it; empty: all"),
	K("MY_ADDRESSES", MB_CONF_STR, my_addresses, NULL, 0, 0, 0, NULL,
	    "the account's other addresses (comma-separated), for from:me, to:me and replies"),
	K("EXTRACT_TYPES", MB_CONF_STR, extract.types, NULL, 0, 0, 0, NULL,
	    "attachment text: text,html,calendar,pdf,office (empty: all; off: none)"),
	K("EXTRACT_MAX_INPUT", MB_CONF_UINT, extract.max_input, "20971520", 1024, 1u << 30, 0,
	    NULL, "bytes of one attachment; larger ones get no text"),
	K("EXTRACT_MAX_CHARS", MB_CONF_UINT, extract.max_chars, "200000", 100, 10000000, 0, NULL,
	    "characters of text kept per attachment"),
	K("EXTRACT_CPU_SECONDS", MB_CONF_UINT, extract.cpu_seconds, "10", 1, 3600, 0, NULL,
	    "CPU time of one PDF or office extraction"),
	K("EXTRACT_MEMORY_MB", MB_CONF_UINT, extract.memory_mb, "512", 64, 65536, 0, NULL,
	    "address space of one PDF or office extraction"),
	K("EXTRACT_ZIP_MAX_MB", MB_CONF_UINT, extract.zip_max_mb, "100", 1, 65536, 0, NULL,
	    "uncompressed size of one office document"),
	K("EXTRACT_ZIP_MAX_RATIO", MB_CONF_UINT, extract.zip_max_ratio, "100", 2, 100000, 0, NULL,
	    "compression ratio above which a document is a zip bomb"),
	K("EXTRACT_ZIP_MAX_ENTRIES", MB_CONF_UINT, extract.zip_max_entries, "10000", 1, 1000000,
	    0, NULL, "entries of one office document"),
	K("EXTRACT_MAX_DEPTH", MB_CONF_UINT, extract.max_depth, "64", 4, 256, 0, NULL,
	    "XML nesting followed in office documents"),
};
const size_t sd_conf_nkeys = MB_ARRAY_LEN(sd_conf_keys);

enum mb_log_level
sd_conf_log_level(const struct sd_conf *conf)
{
	static const enum mb_log_level levels[] = { MB_LOG_ERR, MB_LOG_WARNING, MB_LOG_INFO,
	    MB_LOG_DEBUG };

	return conf->log_level < MB_ARRAY_LEN(levels) ? levels[conf->log_level] : MB_LOG_INFO;
}

void
sd_imap_conf(const struct sd_conf *conf, const char *password, struct mb_imap_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->host = conf->imap_host;
	c->port = conf->imap_port;
	c->tls = (enum mb_imap_tls)conf->imap_tls;
	c->user = conf->imap_user;
	c->auth = (enum mb_imap_auth)conf->imap_auth;
	c->password = password;
	c->ca_file = conf->imap_ca_file;
	/* One IMAP command waits at most a minute, or the range's whole timeout if shorter. */
	c->timeout_s = conf->sync_range_timeout < 60 ? conf->sync_range_timeout : 60;
}

int
sd_split_folders(const char *spec, char ***names_r, size_t *n_r)
{
	char **names = NULL;
	size_t n = 0;
	const char *p = spec;

	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *b = p, *e = end;

		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > b) {
			names = mb_xrealloc(names, (n + 1) * sizeof(char *));
			names[n++] = mb_xstrndup(b, (size_t)(e - b));
		}
		p = comma ? comma + 1 : NULL;
	}
	*names_r = names;
	*n_r = n;
	return 0;
}

void
sd_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
sd_conf_check(const struct sd_conf *conf, struct mb_err *err)
{
	char **names;
	size_t n;

	struct mb_imap_day day;

	if (conf->sync_since != NULL && *conf->sync_since != '\0' &&
	    !sd_conf_since(conf, &day))
		return mb_err_set(err, MB_E_CONFIG, "SYNC_SINCE: '%.64s' is not a day as "
		    "YYYY-MM-DD (e.g. 2020-01-31)", conf->sync_since);
	if (conf->sync_folders == NULL || conf->sync_folders[strspn(conf->sync_folders,
	    " \t")] == '\0')
		return 0;	/* empty: every selectable folder */
	sd_split_folders(conf->sync_folders, &names, &n);
	sd_free_names(names, n);
	if (n == 0)
		return mb_err_set(err, MB_E_CONFIG, "SYNC_FOLDERS: '%.64s' names no folder; name "
		    "folders separated by commas, or leave it empty for every selectable folder",
		    conf->sync_folders);
	return 0;
}

bool
sd_conf_since(const struct sd_conf *conf, struct mb_imap_day *day)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *s = conf->sync_since;
	int y, m, d, end = 0;

	if (s == NULL || *s == '\0')
		return false;
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &end) != 3 || end != 10 || s[end] != '\0' ||
	    s[4] != '-' || s[7] != '-' || y < 1970 || m < 1 || m > 12 || d < 1 ||
	    d > mdays[m - 1] || (m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 ||
	    y % 400 == 0))))
		return false;
	*day = (struct mb_imap_day){ .year = y, .month = m, .day = d };
	return true;
}
