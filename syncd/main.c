/*
 * syncd: the only process that holds the IMAP password and the only writer
 * of the index.  main() is the table of contents: parse the command line,
 * load the settings, read the password, take the data directory's lock,
 * open the index, run the loop, shut down.
 *
 *	syncd [--config FILE]		daemon: tick now, then every SYNC_INTERVAL
 *	syncd --once			one tick, drained, then exit
 *	syncd --backfill		ticks with no per-tick cap until converged
 *	syncd --rebuild			empty the index, then backfill
 *	syncd --status			what is indexed, queued, dead-lettered
 *	syncd --check-config		print the effective settings; exit 0 or 78
 *	syncd --oauth-login		IMAP_AUTH=oauth2: the device grant, stores the refresh token
 *
 * Exit statuses (SD_EXIT_* in syncd.h, docs/syncd.md "Commands"): 0, 1 any
 * other failure, 2 usage, 75 partial (ranges dead-lettered), 77 a LOGIN
 * refused, 78 a bad setting or an unreadable password.
 *	syncd --backup FILE		online copy of the index into FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mailbox/account.h"
#include "mailbox/index_status.h"
#include "mailbox/log.h"
#include "mailbox/mime.h"
#include "syncd.h"

enum command { CMD_DAEMON, CMD_ONCE, CMD_BACKFILL, CMD_REBUILD, CMD_STATUS, CMD_CHECK,
    CMD_BACKUP, CMD_OAUTH_LOGIN };
static const char *backup_path;	/* --backup FILE */

static void
usage(FILE *out)
{
	fprintf(out, "usage: syncd [--config FILE] [--once | --backfill | --rebuild | --status | "
	    "--check-config | --backup FILE | --oauth-login]\n"
	    "  (no command)    run as a daemon: sync now, then every SYNC_INTERVAL seconds\n"
	    "  --once          sync once and exit\n"
	    "  --backfill      sync until every folder is indexed (no per-tick cap);\n"
	    "                  Ctrl-C stops cleanly, and running it again resumes\n"
	    "  --rebuild       empty the index, then backfill\n"
	    "  --status        folders, queue, dead letters and recent writes\n"
	    "  --check-config  print the effective settings (secrets hidden)\n"
	    "  --backup FILE   a consistent copy of the index into FILE (SQLite online\n"
	    "                  backup; works beside a running daemon)\n"
	    "  --oauth-login   IMAP_AUTH=oauth2: sign in on another device (RFC 8628) and\n"
	    "                  store the refresh token in IMAP_OAUTH_REFRESH_TOKEN_FILE\n"
	    "Settings come from FILE (KEY=VALUE, see .env.example), overridden by the\n"
	    "environment.  The password is read from IMAP_PASSWORD_FILE or\n"
	    "$CREDENTIALS_DIRECTORY/imap-password (OAuth: the refresh token from\n"
	    "IMAP_OAUTH_REFRESH_TOKEN_FILE), never from the command line.\n");
}

static const char *
env_lookup(const char *name)
{
	return getenv(name);
}

static int
parse_args(int argc, char **argv, enum command *cmd_r, const char **config_r)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "once", no_argument, NULL, 'o' },
		{ "backfill", no_argument, NULL, 'b' },
		{ "rebuild", no_argument, NULL, 'r' },
		{ "status", no_argument, NULL, 's' },
		{ "check-config", no_argument, NULL, 'n' },
		{ "backup", required_argument, NULL, 'B' },
		{ "oauth-login", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, commands = 0;

	*cmd_r = CMD_DAEMON;
	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			*config_r = optarg;
			break;
		case 'o': *cmd_r = CMD_ONCE; commands++; break;
		case 'b': *cmd_r = CMD_BACKFILL; commands++; break;
		case 'r': *cmd_r = CMD_REBUILD; commands++; break;
		case 's': *cmd_r = CMD_STATUS; commands++; break;
		case 'n': *cmd_r = CMD_CHECK; commands++; break;
		case 'B': *cmd_r = CMD_BACKUP; backup_path = optarg; commands++; break;
		case 'L': *cmd_r = CMD_OAUTH_LOGIN; commands++; break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc || commands > 1) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/*
 * One syncd per data directory: a lock file held with flock for the life of
 * the process.  A second daemon, or a backfill next to a daemon, is refused
 * with a message saying what to do.
 */
static int
take_lock(const char *data_dir)
{
	char path[4200], pid[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/syncd.lock", data_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd == -1) {
		mb_log_warn("%s", path);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		mb_log_error("another syncd (pid %s) is using %s; stop it first (systemctl stop "
		    "imap-mcp-syncd) or wait for it to finish, then run this again",
		    *pid ? pid : "unknown", data_dir);
		close(fd);
		return -1;
	}
	if (ftruncate(fd, 0) == 0) {
		n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
		(void)!pwrite(fd, pid, (size_t)n, 0);
	}
	return fd;
}

static int
make_dirs(const char *data_dir)
{
	char path[4200];

	if (mkdir(data_dir, 0750) == -1 && errno != EEXIST) {
		mb_log_warn("DATA_DIR %s", data_dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/blobs", data_dir);
	if (mkdir(path, 0750) == -1 && errno != EEXIST) {
		mb_log_warn("%s", path);
		return -1;
	}
	return 0;
}

static int
check_config(const struct sd_conf *conf, const enum mb_conf_source *src)
{
	struct mb_err err = { 0 };
	char *pw = NULL;

	mb_conf_print(sd_conf_keys, sd_conf_nkeys, conf, src, stdout);
	if (conf->imap_auth == MB_IMAP_AUTH_OAUTH2) {
		struct sd_oauth o;

		/* Whether the secrets can be read, never what they are. */
		if (sd_oauth_open(&o, conf, getenv("CREDENTIALS_DIRECTORY"), &err) == -1) {
			printf("# oauth: %s\n", err.msg);
			return SD_EXIT_CONFIG;
		}
		printf("# oauth: refresh token readable, not readable by group or others; "
		    "client secret %s\n", o.client_secret ? "readable" : "none (public client)");
		sd_oauth_close(&o);
		return 0;
	}
	if (mb_conf_read_password(conf->imap_password_file, getenv("CREDENTIALS_DIRECTORY"), &pw,
	    &err) == -1) {
		printf("# password: %s\n", err.msg);
		return SD_EXIT_CONFIG;
	}
	mb_conf_password_free(&pw);
	printf("# password: readable, not readable by group or others\n");
	return 0;
}

/* DATA_DIR/index.db opened read-only (works beside a running daemon); logs why not. */
static int
open_index_ro(const struct sd_conf *conf, struct mb_index **idx_r)
{
	struct mb_err err = { 0 };
	char path[4200];

	snprintf(path, sizeof(path), "%s/index.db", conf->data_dir);
	if (mb_index_open(path, MB_INDEX_RO, idx_r, &err) == -1) {
		mb_log_error("%s", err.msg);
		return -1;
	}
	return 0;
}

static int
print_status(const struct sd_conf *conf)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	int r;

	if (open_index_ro(conf, &idx) == -1)
		return 1;
	r = sd_status_print(idx, stdout, &err);
	if (r == -1)
		mb_log_error("%s", err.msg);
	else
		sd_status_print_watch(conf->data_dir, stdout);
	mb_index_close(&idx);
	return r == 0 ? 0 : 1;
}

/* --backup FILE: the online backup API over a read-only open, beside a daemon. */
static int
backup(const struct sd_conf *conf, const char *dest)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	int r;

	if (open_index_ro(conf, &idx) == -1)
		return 1;
	r = mb_index_backup(idx, dest, &err);
	if (r == -1)
		mb_log_error("backup: %s", err.msg);
	else
		mb_log_info("backup: %s written", dest);
	mb_index_close(&idx);
	return r == 0 ? 0 : 1;
}

/*
 * Record the account's own addresses in the index (mcpd reads them for
 * from:me and the reply overviews; it sees no syncd setting): IMAP_USER when
 * it is an address, DRAFT_FROM's address, and each of MY_ADDRESSES.
 */
static int
store_own_addresses(const struct sd_conf *c, struct mb_index *idx, struct mb_err *err)
{
	struct mb_account_address list[64];
	char *copy = mb_xstrdup(c->my_addresses), *save = NULL, *tok;
	size_t n = 0;
	int rc;

	list[n++] = (struct mb_account_address){ c->imap_user, "IMAP_USER" };
	if (c->draft_from != NULL)
		list[n++] = (struct mb_account_address){ c->draft_from, "DRAFT_FROM" };
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		char *a = mb_account_address_of(tok);

		free(a);
		if (a == NULL && strspn(tok, " \t") == strlen(tok))
			continue;	/* "a@x, ,b@y": an empty entry says nothing */
		if (a == NULL || n == MB_ARRAY_LEN(list)) {
			if (a == NULL)
				mb_err_set(err, MB_E_CONFIG, "MY_ADDRESSES: '%s' is not an address",
				    tok);
			else
				mb_err_set(err, MB_E_CONFIG, "MY_ADDRESSES: more than %zu addresses",
				    MB_ARRAY_LEN(list) - 2);
			free(copy);
			return -1;
		}
		list[n++] = (struct mb_account_address){ tok, "MY_ADDRESSES" };
	}
	rc = mb_account_set_addresses(idx, list, n, err);
	free(copy);
	return rc;
}

int
main(int argc, char **argv)
{
	struct sd_conf conf = { 0 };
	/* where each setting came from, for --check-config: one per key */
	enum mb_conf_source *src = NULL;
	struct mb_err err = { 0 };
	struct sd sd = { .proc = { .sigfd = -1 } };
	struct sd_oauth oauth = { 0 };
	const char *config = NULL, *crash;
	enum command cmd;
	char *password = NULL, path[4200];
	int lock = -1, rc = SD_EXIT_FAIL;

	mb_log_init("syncd", MB_LOG_INFO);
	/* Every command may read the password: no core dumps, no ptrace by peers. */
	prctl(PR_SET_DUMPABLE, 0);
	if (parse_args(argc, argv, &cmd, &config) == -1)
		return SD_EXIT_USAGE;
	src = mb_xcalloc(sd_conf_nkeys, sizeof(*src));
	if (mb_conf_load(sd_conf_keys, sd_conf_nkeys, &conf, config, env_lookup, src, &err) == -1 ||
	    sd_conf_check(&conf, &err) == -1 || sd_oauth_conf_check(&conf, &err) == -1) {
		mb_log_error("%s", err.msg);
		if (cmd == CMD_CHECK)
			mb_conf_print(sd_conf_keys, sd_conf_nkeys, &conf, NULL, stdout);
		rc = SD_EXIT_CONFIG;
		goto out;
	}
	if (mb_extract_types_parse(conf.extract.types, &(unsigned){ 0 }, &err) == -1) {
		mb_log_error("%s", err.msg);
		goto out;
	}
	mb_log_set_level(sd_conf_log_level(&conf));
	if (cmd == CMD_CHECK) {
		rc = check_config(&conf, src);
		goto out;
	}
	if (cmd == CMD_STATUS) {
		rc = print_status(&conf);
		goto out;
	}
	if (cmd == CMD_BACKUP) {
		rc = backup(&conf, backup_path);
		goto out;
	}
	if (cmd == CMD_OAUTH_LOGIN) {
		rc = sd_oauth_login(&conf, getenv("CREDENTIALS_DIRECTORY"));
		goto out;
	}

	if (conf.imap_auth == MB_IMAP_AUTH_OAUTH2) {
		if (sd_oauth_open(&oauth, &conf, getenv("CREDENTIALS_DIRECTORY"), &err) == -1) {
			mb_log_error("%s", err.msg);
			rc = SD_EXIT_CONFIG;
			goto out;
		}
		sd.oauth = &oauth;
	} else {
		if (mb_conf_read_password(conf.imap_password_file, getenv("CREDENTIALS_DIRECTORY"),
		    &password, &err) == -1) {
			mb_log_error("%s", err.msg);
			rc = SD_EXIT_CONFIG;
			goto out;
		}
		mb_log_add_secret(conf.imap_user, password);
	}
	if (make_dirs(conf.data_dir) == -1 || (lock = take_lock(conf.data_dir)) == -1)
		goto out;
	snprintf(path, sizeof(path), "%s/index.db", conf.data_dir);
	if (mb_index_open(path, MB_INDEX_RW, &sd.idx, &err) == -1) {
		mb_log_error("%s", err.msg);
		goto out;
	}
	if (cmd == CMD_REBUILD) {
		if (mb_index_reset(sd.idx, &err) == -1) {
			mb_log_error("rebuild: %s", err.msg);
			goto out;
		}
		mb_log_info("rebuild: index emptied; backfilling");
	}
	if (store_own_addresses(&conf, sd.idx, &err) == -1) {
		mb_log_error("%s", err.msg);
		goto out;
	}
	mb_mime_global_init();
	if (sd_proc_open(&sd.proc, &err) == -1) {
		mb_log_error("%s", err.msg);
		goto out;
	}
	sd.conf = &conf;
	sd.password = password;
	sd.mode = cmd == CMD_DAEMON ? SD_DAEMON : cmd == CMD_ONCE ? SD_ONCE : SD_BACKFILL;
	if ((crash = getenv("SYNCD_TEST_CRASH_AT_COMMIT")) != NULL) {
		unsigned long long n;

		if (mb_conf_parse_uint(crash, 1, 1000000, &n) == 0)
			sd.writer.crash_at = (unsigned)n;
	}
	mb_log_info("started: %s, %s:%u as %s%s, data in %s", sd.mode == SD_DAEMON ? "daemon" :
	    sd.mode == SD_ONCE ? "one tick" : "backfill", conf.imap_host, conf.imap_port,
	    conf.imap_user, sd.oauth ? " (OAuth 2.0)" : "", conf.data_dir);
	rc = sd_run(&sd);
	mb_log_info("stopped");
out:
	free(src);
	sd_proc_close(&sd.proc);
	mb_index_close(&sd.idx);
	mb_conf_password_free(&password);
	sd_oauth_close(&oauth);
	mb_log_clear_secrets();
	if (lock != -1)
		close(lock);
	mb_conf_release(sd_conf_keys, sd_conf_nkeys, &conf);
	return rc;
}
