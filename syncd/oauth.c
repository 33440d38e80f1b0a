/*
 * OAuth 2.0 login (IMAP_AUTH=oauth2; docs/syncd.md "OAuth 2.0"): the
 * provider presets, the refresh token and client secret read like the
 * password, the access token cached in the scheduler's memory and refreshed
 * there only, a rotated refresh token written back atomically, and
 * syncd --oauth-login (RFC 8628's device authorization grant).
 *
 * Why only the scheduler refreshes: every IMAP session of syncd starts in the
 * scheduler or in a child it forks just then (a worker, a watcher, a write
 * process).  So before it forks, it makes sure the token has a while to live
 * (sd_credential), and the child inherits it in its copy of memory: one
 * token endpoint request per token lifetime, however many processes log in,
 * and no child ever holds the refresh token's use.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mailbox/log.h"
#include "mailbox/oauth2.h"
#include "syncd.h"

/*
 * What a provider's users would otherwise have to look up.  Settings that
 * are set win over these; nothing else in syncd knows a provider.
 */
static const struct preset {
	const char	*name;
	const char	*token_url;
	const char	*device_url;
	const char	*scope;
} presets[] = {
	{ "google", "https://oauth2.googleapis.com/token",
	    "https://oauth2.googleapis.com/device/code", "https://mail.google.com/" },
	{ "microsoft", "https://login.microsoftonline.com/common/oauth2/v2.0/token",
	    "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode",
	    "https://outlook.office.com/IMAP.AccessAsUser.All offline_access" },
};

#define OAUTH_MARGIN_MS		60000LL		/* a token must live this long to be handed out */
#define OAUTH_DEFAULT_LIFE_S	3600		/* when the server does not say */

/* Add what to do to err's message (mb_err_set keeps the first message whole). */
static void
hint(struct mb_err *err, const char *h)
{
	size_t n = strlen(err->msg);

	snprintf(err->msg + n, sizeof(err->msg) - n, " %s", h);
}

static void
fill(char **field, const char *value)
{
	if ((*field == NULL || **field == '\0') && value != NULL) {
		free(*field);
		*field = mb_xstrdup(value);
	}
}

int
sd_oauth_conf_check(struct sd_conf *conf, struct mb_err *err)
{
	const struct preset *p = NULL;

	if (conf->oauth_provider != NULL && *conf->oauth_provider != '\0') {
		for (size_t i = 0; i < MB_ARRAY_LEN(presets); i++)
			if (strcasecmp(conf->oauth_provider, presets[i].name) == 0)
				p = &presets[i];
		if (p == NULL)
			return mb_err_set(err, MB_E_CONFIG, "IMAP_OAUTH_PROVIDER: '%.32s' is not "
			    "one of google, microsoft (or leave it empty and set "
			    "IMAP_OAUTH_TOKEN_URL)", conf->oauth_provider);
		fill(&conf->oauth_token_url, p->token_url);
		fill(&conf->oauth_device_url, p->device_url);
		fill(&conf->oauth_scope, p->scope);
	}
	if (conf->imap_auth != MB_IMAP_AUTH_OAUTH2)
		return 0;
	if (conf->oauth_token_url == NULL || *conf->oauth_token_url == '\0')
		return mb_err_set(err, MB_E_CONFIG, "IMAP_AUTH=oauth2 needs IMAP_OAUTH_TOKEN_URL "
		    "(or IMAP_OAUTH_PROVIDER=google|microsoft)");
	if (conf->oauth_client_id == NULL || *conf->oauth_client_id == '\0')
		return mb_err_set(err, MB_E_CONFIG, "IMAP_AUTH=oauth2 needs IMAP_OAUTH_CLIENT_ID "
		    "(the client registered with the provider; docs/setup.md)");
	return 0;
}

static bool
has_credential(const char *creds_dir, const char *name)
{
	char path[4200];

	if (creds_dir == NULL || *creds_dir == '\0')
		return false;
	snprintf(path, sizeof(path), "%s/%s", creds_dir, name);
	return access(path, F_OK) == 0;
}

int
sd_oauth_open(struct sd_oauth *o, const struct sd_conf *conf, const char *creds_dir,
    struct mb_err *err)
{
	*o = (struct sd_oauth){ 0 };
	if (mb_conf_read_secret(conf->oauth_refresh_token_file, creds_dir,
	    "imap-oauth-refresh-token", "IMAP_OAUTH_REFRESH_TOKEN_FILE", &o->refresh_token,
	    err) == -1) {
		if (conf->oauth_refresh_token_file != NULL && strstr(err->msg, strerror(ENOENT)))
			hint(err, "(run syncd --oauth-login first)");
		return -1;
	}
	mb_log_add_token(conf->imap_user, o->refresh_token);
	/* systemd's credentials directory is read-only: a rotated token cannot go back there. */
	o->writable = conf->oauth_refresh_token_file != NULL;
	/* The client secret is optional: a public client (Microsoft's) has
	 * none; Google's Desktop clients have one.  Configured, or present in
	 * the credentials directory, it must be readable and private. */
	if (conf->oauth_client_secret_file != NULL || has_credential(creds_dir,
	    "imap-oauth-client-secret")) {
		if (mb_conf_read_secret(conf->oauth_client_secret_file, creds_dir,
		    "imap-oauth-client-secret", "IMAP_OAUTH_CLIENT_SECRET_FILE", &o->client_secret,
		    err) == -1) {
			sd_oauth_close(o);
			return -1;
		}
		mb_log_add_secret(NULL, o->client_secret);
	}
	return 0;
}

void
sd_oauth_close(struct sd_oauth *o)
{
	mb_conf_password_free(&o->refresh_token);
	mb_conf_password_free(&o->client_secret);
	mb_conf_password_free(&o->access_token);
	*o = (struct sd_oauth){ 0 };
}

/*
 * Write token into path atomically: a temporary file (0600) in the same
 * directory, fsync, rename over path, fsync the directory.  A crash leaves
 * the old token or the new one, never half of one.
 */
static int
store_token(const char *path, const char *token, struct mb_err *err)
{
	char tmp[4200], dirbuf[4200];
	size_t len = strlen(token);
	int fd, dfd, saved;

	if (snprintf(tmp, sizeof(tmp), "%s.new-XXXXXX", path) >= (int)sizeof(tmp))
		return mb_err_set(err, MB_E_CONFIG, "%s: path too long", path);
	fd = mkstemp(tmp);	/* mode 0600, whatever the umask */
	if (fd == -1)
		return mb_err_set(err, MB_E_CONFIG, "%s: cannot create a file beside it: %s", path,
		    strerror(errno));
	if (write(fd, token, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) == -1) {
		saved = errno;
		close(fd);
		unlink(tmp);
		return mb_err_set(err, MB_E_CONFIG, "%s: %s", tmp, strerror(saved));
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		saved = errno;
		unlink(tmp);
		return mb_err_set(err, MB_E_CONFIG, "%s: %s", path, strerror(saved));
	}
	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	if ((dfd = open(dirname(dirbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		(void)fsync(dfd);	/* the rename itself durable */
		close(dfd);
	}
	return 0;
}

static void
client_of(const struct sd_conf *conf, const struct sd_oauth *o, struct mb_oauth2_client *c)
{
	*c = (struct mb_oauth2_client){ .token_url = conf->oauth_token_url,
	    .client_id = conf->oauth_client_id, .client_secret = o ? o->client_secret : NULL,
	    .scope = conf->oauth_scope, .user = conf->imap_user, .timeout_s = 30 };
}

/* Take a new access token (and a rotated refresh token) from the endpoint. */
static int
refresh(struct sd *sd, struct mb_err *err)
{
	struct sd_oauth *o = sd->oauth;
	struct mb_oauth2_client c;
	struct mb_oauth2_token tok;
	struct mb_err serr = { 0 };
	long long life_s;

	client_of(sd->conf, o, &c);
	o->refreshes++;
	mb_conf_password_free(&o->access_token);
	if (mb_oauth2_refresh(&c, o->refresh_token, &tok, err) == -1) {
		if (err->code == MB_E_AUTH)
			hint(err, "(the refresh token may have been revoked or expired: run "
			    "syncd --oauth-login)");
		return -1;
	}
	o->access_token = tok.access_token;
	tok.access_token = NULL;
	life_s = tok.expires_in > 0 ? tok.expires_in : OAUTH_DEFAULT_LIFE_S;
	o->lifetime_ms = life_s * 1000;
	o->expires_ms = mb_now_ms() + o->lifetime_ms;
	if (tok.refresh_token != NULL && strcmp(tok.refresh_token, o->refresh_token) != 0) {
		/* Rotated: the old one is spent (a server may revoke the whole grant
		 * if it is shown again), so the new one must reach the disk. */
		mb_conf_password_free(&o->refresh_token);
		o->refresh_token = tok.refresh_token;
		tok.refresh_token = NULL;
		if (!o->writable)
			mb_log_error("oauth: the server rotated the refresh token, but it came from "
			    "$CREDENTIALS_DIRECTORY, which is read-only: set "
			    "IMAP_OAUTH_REFRESH_TOKEN_FILE to a file syncd may write");
		else if (store_token(sd->conf->oauth_refresh_token_file, o->refresh_token,
		    &serr) == -1)
			mb_log_error("oauth: the rotated refresh token could not be saved (%s); "
			    "after a restart run syncd --oauth-login", serr.msg);
		else
			mb_log_info("oauth: refresh token rotated and saved");
	}
	mb_oauth2_token_release(&tok);
	mb_log_info("oauth: new access token, valid %lld s", life_s);
	return 0;
}

const char *
sd_credential(struct sd *sd, struct mb_err *err)
{
	struct sd_oauth *o = sd->oauth;
	long long need;

	if (o == NULL)
		return sd->password;
	/* Long enough to log in with; a short-lived token's half life. */
	need = o->lifetime_ms / 2 < OAUTH_MARGIN_MS ? o->lifetime_ms / 2 : OAUTH_MARGIN_MS;
	if (o->access_token == NULL || mb_now_ms() + need >= o->expires_ms) {
		if (o->access_token != NULL)
			mb_log_debug("oauth: access token expires in %lld s; refreshing",
			    (o->expires_ms - mb_now_ms()) / 1000);
		if (refresh(sd, err) == -1)
			return NULL;
	}
	return o->access_token;
}

int
sd_connect(struct sd *sd, bool qresync, struct mb_imap **imap_r, struct mb_err *err)
{
	unsigned before = sd->oauth ? sd->oauth->refreshes : 0;
	struct mb_imap_conf c;
	const char *cred;

	*imap_r = NULL;
	if ((cred = sd_credential(sd, err)) == NULL)
		return -1;
	sd_imap_conf(sd->conf, cred, &c);
	c.qresync = qresync;
	if (mb_imap_connect(&c, imap_r, err) == 0)
		return 0;
	/* A cached token refused (revoked, or expired before its time): one
	 * refresh and one more login; a token fresh from the endpoint is not
	 * tried twice. */
	if (sd->oauth == NULL || err->code != MB_E_AUTH || sd->oauth->refreshes != before)
		return -1;
	mb_log_warnx("%s; refreshing the access token and trying once more", err->msg);
	mb_err_clear(err);
	if (refresh(sd, err) == -1)
		return -1;
	sd_imap_conf(sd->conf, sd->oauth->access_token, &c);
	c.qresync = qresync;
	return mb_imap_connect(&c, imap_r, err);
}

/* --- syncd --oauth-login ------------------------------------------------- */

static int
exit_of(const struct mb_err *err)
{
	return err->code == MB_E_AUTH ? SD_EXIT_AUTH : err->code == MB_E_CONFIG ?
	    SD_EXIT_CONFIG : SD_EXIT_FAIL;
}

int
sd_oauth_login(const struct sd_conf *conf, const char *creds_dir)
{
	struct sd_oauth o = { 0 };
	struct mb_oauth2_client c;
	struct mb_oauth2_device d;
	struct mb_oauth2_token tok = { 0 };
	struct mb_err err = { 0 };
	long long until;
	unsigned interval;
	int r;

	if (conf->imap_auth != MB_IMAP_AUTH_OAUTH2 || conf->oauth_device_url == NULL ||
	    *conf->oauth_device_url == '\0' || conf->oauth_refresh_token_file == NULL) {
		mb_log_error("--oauth-login needs IMAP_AUTH=oauth2, IMAP_OAUTH_DEVICE_URL (or "
		    "IMAP_OAUTH_PROVIDER) and IMAP_OAUTH_REFRESH_TOKEN_FILE, where the token "
		    "goes");
		return SD_EXIT_CONFIG;
	}
	if ((conf->oauth_client_secret_file != NULL || has_credential(creds_dir,
	    "imap-oauth-client-secret")) && mb_conf_read_secret(
	    conf->oauth_client_secret_file, creds_dir, "imap-oauth-client-secret",
	    "IMAP_OAUTH_CLIENT_SECRET_FILE", &o.client_secret, &err) == -1) {
		mb_log_error("%s", err.msg);
		return SD_EXIT_CONFIG;
	}
	if (o.client_secret != NULL)
		mb_log_add_secret(NULL, o.client_secret);
	client_of(conf, &o, &c);
	if (mb_oauth2_device_start(&c, conf->oauth_device_url, &d, &err) == -1) {
		mb_log_error("oauth: %s", err.msg);
		sd_oauth_close(&o);
		return exit_of(&err);
	}
	printf("To let imap-mcp read the mailbox of %s, open\n\n    %s\n\nand enter the code\n\n"
	    "    %s\n\n", conf->imap_user, d.verification_uri, d.user_code);
	if (d.verification_uri_complete != NULL)
		printf("(or open %s, which carries the code)\n\n", d.verification_uri_complete);
	printf("Waiting for the approval; the code expires in %u minutes.\n",
	    (d.expires_in + 59) / 60);
	fflush(stdout);
	interval = d.interval;
	until = mb_now_ms() + 1000LL * d.expires_in;
	for (;;) {
		sleep(interval);
		r = mb_oauth2_device_poll(&c, d.device_code, &tok, &err);
		if (r == MB_OAUTH2_DONE)
			break;
		if (r == MB_OAUTH2_SLOW_DOWN)
			interval += 5;	/* RFC 8628 §3.5 */
		if (r == -1 && err.code != MB_E_TEMP)
			goto fail;
		if (r == -1)	/* the network: keep asking while the code lives */
			mb_log_warnx("oauth: %s; asking again", err.msg);
		mb_err_clear(&err);
		if (mb_now_ms() >= until) {
			mb_err_set(&err, MB_E_AUTH, "the code expired before it was approved; "
			    "run --oauth-login again");
			goto fail;
		}
	}
	if (tok.refresh_token == NULL) {
		mb_err_set(&err, MB_E_AUTH, "the server issued no refresh token (the scope may "
		    "lack offline_access, or the client may not be allowed the refresh_token "
		    "grant)");
		goto fail;
	}
	if (store_token(conf->oauth_refresh_token_file, tok.refresh_token, &err) == -1)
		goto fail;
	printf("Approved.  The refresh token is in %s; syncd can log in now.\n",
	    conf->oauth_refresh_token_file);
	mb_log_info("oauth: device login approved; refresh token stored in %s",
	    conf->oauth_refresh_token_file);
	mb_oauth2_token_release(&tok);
	mb_oauth2_device_release(&d);
	sd_oauth_close(&o);
	return SD_EXIT_OK;
fail:
	mb_log_error("oauth: %s", err.msg);
	mb_oauth2_token_release(&tok);
	mb_oauth2_device_release(&d);
	sd_oauth_close(&o);
	return exit_of(&err);
}
