/*
 * The JWKS cache: one key set shared by all request threads, swapped whole
 * when a fetch brings a new one (threads still holding the old one keep it
 * alive by its reference count).  The lock is never held across the network:
 * a fetching flag lets one thread fetch while the others carry on with the
 * current set, or wait on the condition variable when they have none that
 * can help them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mailbox/buf.h"
#include "mailbox/http.h"
#include "mailbox/log.h"
#include "mailbox/url.h"
#include "mailbox/util.h"
#include "jwks.h"

struct mcp_jwks {
	char		*issuer;	/* owned; NULL for a static cache */
	char		*conf_url;	/* owned; MCP_JWKS_URL, NULL: discover */
	char		*found_url;	/* owned; discovered jwks_uri (fetching thread only) */
	long		 connect_timeout_ms, timeout_ms;
	size_t		 max_bytes;
	unsigned	 refresh_s, min_refetch_s, retry_s;
	time_t		(*now)(void);
	bool		 is_static;

	pthread_mutex_t	 mu;		/* guards everything below */
	pthread_cond_t	 cv;		/* signalled when a fetch ends */
	struct mcp_keyset *set;		/* one reference; NULL until a fetch succeeds */
	time_t		 fetched_at;	/* of set */
	time_t		 attempted_at;	/* of the last fetch, good or bad */
	bool		 attempted;
	bool		 fetching;
	unsigned	 fetches, failures;
	char		 last_error[256];
};

/* --- one HTTP GET ------------------------------------------------------- */

/* GET url into *body_r (caller mb_buf_release()s it); 0, or -1 with err set. */
static int
http_get(struct mcp_jwks *c, const char *url, struct mb_buf *body_r, struct mb_err *err)
{
	struct mb_http_sink s = { .body = MB_BUF_INIT(c->max_bytes), .toobig = false };
	char cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	CURL *h;
	CURLcode rc;
	long status = 0;

	if (mb_url_fetchable(url, "jwks", err) == -1)
		return -1;
	if ((h = mb_http_new(url, &s, cerr, &hdrs)) == NULL)
		return mb_err_set(err, MB_E_INTERNAL, "curl_easy_init failed");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "imap-mcp-mcpd");
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK || status != 200) {
		mb_buf_release(&s.body);
		if (s.toobig || rc == CURLE_FILESIZE_EXCEEDED)
			return mb_err_set(err, MB_E_PROTO, "GET %s: more than %zu bytes", url,
			    c->max_bytes);
		if (rc != CURLE_OK)
			return mb_err_set(err, MB_E_TEMP, "GET %s: %s", url,
			    cerr[0] ? cerr : curl_easy_strerror(rc));
		return mb_err_set(err, MB_E_TEMP, "GET %s: HTTP status %ld", url, status);
	}
	*body_r = s.body;
	return 0;
}

/* --- discovery and fetch ------------------------------------------------ */

/*
 * The metadata URL of issuer: RFC 8414 inserts the well-known suffix between
 * host and path; OpenID Connect Discovery appends it.  Caller frees.
 */
static char *
metadata_url(const char *issuer, const char *suffix, bool insert)
{
	struct mb_buf b = MB_BUF_INIT(4096);
	const char *auth = strstr(issuer, "://") + 3, *path = auth + strcspn(auth, "/");
	size_t plen = strlen(path);

	if (plen && path[plen - 1] == '/')
		plen--;
	if (insert) {
		mb_buf_add(&b, issuer, (size_t)(path - issuer));
		mb_buf_addf(&b, "/.well-known/%s", suffix);
		mb_buf_add(&b, path, plen);
	} else {
		mb_buf_add(&b, issuer, (size_t)(path - issuer) + plen);
		mb_buf_addf(&b, "/.well-known/%s", suffix);
	}
	return mb_buf_detach(&b, NULL);
}

static int
discover(struct mcp_jwks *c, struct mb_err *err)
{
	static const struct { const char *suffix; bool insert; } wk[] = {
		{ "oauth-authorization-server", true },
		{ "openid-configuration", false },
	};
	struct mb_err ferr = { 0 };
	struct mb_buf body;
	json_t *doc;
	const char *iss, *uri;
	size_t i;
	char *url;
	int r;

	for (i = 0; i < MB_ARRAY_LEN(wk); i++) {
		url = metadata_url(c->issuer, wk[i].suffix, wk[i].insert);
		mb_err_clear(&ferr);
		r = http_get(c, url, &body, &ferr);
		if (r == -1) {
			mb_log_debug("jwks: discovery: %s", ferr.msg);
			free(url);
			continue;
		}
		doc = json_loadb(body.data, body.len, JSON_REJECT_DUPLICATES, NULL);
		mb_buf_release(&body);
		iss = json_string_value(json_object_get(doc, "issuer"));
		uri = json_string_value(json_object_get(doc, "jwks_uri"));
		if (iss == NULL || strcmp(iss, c->issuer) != 0 || uri == NULL) {
			mb_err_set(err, MB_E_PROTO, "%s: issuer is not '%s' or no jwks_uri", url,
			    c->issuer);
			json_decref(doc);
			free(url);
			return -1;
		}
		if (mb_url_fetchable(uri, "jwks_uri", err) == -1) {
			json_decref(doc);
			free(url);
			return -1;
		}
		free(c->found_url);
		c->found_url = mb_xstrdup(uri);
		mb_log_info("jwks: %s names jwks_uri %s", url, uri);
		json_decref(doc);
		free(url);
		return 0;
	}
	return mb_err_set(err, ferr.code ? ferr.code : MB_E_TEMP,
	    "no authorization server metadata for issuer %s: %s", c->issuer, ferr.msg);
}

/* Fetch and parse the key set; called with the lock released. */
static int
fetch(struct mcp_jwks *c, struct mcp_keyset **set_r, struct mb_err *err)
{
	struct mb_buf body = MB_BUF_INIT(0);
	const char *url = c->conf_url;

	if (url == NULL) {
		if (c->found_url == NULL && discover(c, err) == -1)
			return -1;
		url = c->found_url;
	}
	if (http_get(c, url, &body, err) == -1 ||
	    mcp_keyset_parse(body.data, body.len, set_r, err) == -1) {
		/* Maybe the issuer moved its keys: look again next time. */
		if (c->conf_url == NULL) {
			free(c->found_url);
			c->found_url = NULL;
		}
		mb_buf_release(&body);
		return -1;
	}
	mb_buf_release(&body);
	mb_log_info("jwks: %zu usable keys from %s", mcp_keyset_count(*set_r), url);
	return 0;
}

/* --- the cache ---------------------------------------------------------- */

static time_t
clock_time(void)
{
	return time(NULL);
}

int
mcp_jwks_new(const struct mcp_jwks_conf *conf, struct mcp_jwks **jwks_r, struct mb_err *err)
{
	struct mcp_jwks *c;

	*jwks_r = NULL;
	if (conf->jwks_url != NULL && mb_url_fetchable(conf->jwks_url, "MCP_JWKS_URL", err) == -1)
		return -1;
	if (conf->jwks_url == NULL) {
		if (conf->issuer == NULL)
			return mb_err_set(err, MB_E_CONFIG, "MCP_OAUTH_ISSUER or MCP_JWKS_URL is needed");
		if (mb_url_fetchable(conf->issuer, "MCP_OAUTH_ISSUER", err) == -1)
			return -1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "curl_global_init failed");
	c = mb_xcalloc(1, sizeof(*c));
	c->issuer = mb_xstrdup(conf->issuer);
	c->conf_url = mb_xstrdup(conf->jwks_url);
	c->connect_timeout_ms = conf->connect_timeout_ms ? conf->connect_timeout_ms : 3000;
	c->timeout_ms = conf->timeout_ms ? conf->timeout_ms : 10000;
	c->max_bytes = conf->max_bytes ? conf->max_bytes : 256 * 1024;
	c->refresh_s = conf->refresh_s ? conf->refresh_s : 600;
	c->min_refetch_s = conf->min_refetch_s ? conf->min_refetch_s : 60;
	c->retry_s = conf->retry_s ? conf->retry_s : 5;
	c->now = conf->now ? conf->now : clock_time;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	*jwks_r = c;
	return 0;
}

struct mcp_jwks *
mcp_jwks_new_static(struct mcp_keyset *set)
{
	struct mcp_jwks *c = mb_xcalloc(1, sizeof(*c));

	c->is_static = true;
	c->now = clock_time;
	c->set = mcp_keyset_ref(set);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	return c;
}

void
mcp_jwks_free(struct mcp_jwks **jwksp)
{
	struct mcp_jwks *c = *jwksp;

	*jwksp = NULL;
	if (c == NULL)
		return;
	mcp_keyset_unref(&c->set);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	if (!c->is_static)
		curl_global_cleanup();
	free(c->issuer);
	free(c->conf_url);
	free(c->found_url);
	free(c);
}

static bool
elapsed(time_t now, time_t since, unsigned secs)
{
	return now < since || now - since >= (time_t)secs;	/* a clock set back counts */
}

/* With the lock held: fetch (dropping the lock meanwhile) and install. */
static void
fetch_locked(struct mcp_jwks *c, time_t now)
{
	struct mcp_keyset *fresh = NULL;
	struct mb_err ferr = { 0 };
	int r;

	c->fetching = true;
	c->attempted = true;
	c->attempted_at = now;
	c->fetches++;
	pthread_mutex_unlock(&c->mu);
	r = fetch(c, &fresh, &ferr);
	pthread_mutex_lock(&c->mu);
	c->fetching = false;
	if (r == 0) {
		mcp_keyset_unref(&c->set);
		c->set = fresh;
		c->fetched_at = c->now();
		c->last_error[0] = '\0';
	} else {
		c->failures++;
		snprintf(c->last_error, sizeof(c->last_error), "%s", ferr.msg);
		mb_log_warnx("jwks: fetch failed%s: %s", c->set ? ", keeping the old keys" : "",
		    ferr.msg);
	}
	pthread_cond_broadcast(&c->cv);
}

int
mcp_jwks_acquire(struct mcp_jwks *c, const char *kid, enum mcp_jwt_alg alg,
    struct mcp_keyset **set_r, struct mb_err *err)
{
	time_t now;
	bool have, want;

	*set_r = NULL;
	pthread_mutex_lock(&c->mu);
	while (!c->is_static) {
		now = c->now();
		have = c->set != NULL && mcp_keyset_has(c->set, kid, alg);
		if (c->fetching && !have) {
			/* The fetch under way may bring our key: wait for it. */
			pthread_cond_wait(&c->cv, &c->mu);
			continue;
		}
		if (c->set == NULL)
			want = !c->attempted || elapsed(now, c->attempted_at, c->retry_s);
		else if (!have)
			want = elapsed(now, c->attempted_at, c->min_refetch_s);
		else
			want = elapsed(now, c->fetched_at, c->refresh_s) &&
			    elapsed(now, c->attempted_at, c->min_refetch_s);
		if (!want || c->fetching)
			break;	/* nothing to fetch, or a refresh under way: this set serves */
		fetch_locked(c, now);
		break;
	}
	if (c->set == NULL) {
		mb_err_set(err, MB_E_TEMP, "no key set from the issuer yet%s%s",
		    c->last_error[0] ? ": " : "", c->last_error);
		pthread_mutex_unlock(&c->mu);
		return -1;
	}
	*set_r = mcp_keyset_ref(c->set);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

int
mcp_jwks_refresh(struct mcp_jwks *c, struct mb_err *err)
{
	int r = 0;

	pthread_mutex_lock(&c->mu);
	if (!c->is_static) {
		while (c->fetching)
			pthread_cond_wait(&c->cv, &c->mu);
		fetch_locked(c, c->now());
		if (c->last_error[0] != '\0')
			r = mb_err_set(err, MB_E_TEMP, "%s", c->last_error);
	}
	pthread_mutex_unlock(&c->mu);
	return r;
}

void
mcp_jwks_stats(struct mcp_jwks *c, unsigned *fetches_r, unsigned *failures_r)
{
	pthread_mutex_lock(&c->mu);
	*fetches_r = c->fetches;
	*failures_r = c->failures;
	pthread_mutex_unlock(&c->mu);
}
