/*
 * The resource server's decision: credentials in, status and challenge out.
 * Every refusal carries the RFC 9728 resource_metadata URL, so an MCP client
 * can find the authorization server from any 401 (MCP 2025-06-18 makes that
 * a MUST; 2025-11-25 accepts it or the well-known URL, and we serve both).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/url.h"
#include "mailbox/util.h"
#include "auth.h"
#include "jwks.h"

#define WK_PRM	"/.well-known/oauth-protected-resource"

struct mcp_auth {
	struct mcp_auth_conf	 conf;		/* owned copies */
	struct mcp_jwks		*jwks;		/* NULL with none */
	char			*metadata_url;	/* origin + WK_PRM + resource path */
	char			*metadata_path;	/* WK_PRM + resource path */
};

/* --- configuration ------------------------------------------------------ */

void
mcp_auth_conf_release(struct mcp_auth_conf *c)
{
	free(c->resource_url);
	free(c->issuer);
	free(c->jwks_url);
	free(c->scope_read);
	free(c->scope_write);
	free(c->header);
	free(c->resource_name);
	memset(c, 0, sizeof(*c));
}

static const char *
get(const char *(*lookup)(const char *), const char *name)
{
	const char *v = lookup ? lookup(name) : NULL;

	return v != NULL && *v != '\0' ? v : NULL;
}

static bool
scope_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 128)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
			return false;
	return true;
}

/* An HTTP field name (RFC 9110 token). */
static bool
token_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("!#$%&'*+-.^_`|~", s[i]) == NULL)
			return false;
	return true;
}

/* A resource or issuer URL: fetchable rules, no query, no fragment. */
static int
url_check(const char *url, const char *key, struct mb_err *err)
{
	if (mb_url_fetchable(url, key, err) == -1)
		return -1;
	if (strpbrk(url, "?# \t\"\\") != NULL)
		return mb_err_set(err, MB_E_CONFIG, "%s '%s': no query, fragment, space or quote allowed",
		    key, url);
	return 0;
}

int
mcp_auth_conf_load(struct mcp_auth_conf *c, const char *(*lookup)(const char *),
    struct mb_err *err)
{
	const char *mode = get(lookup, "MCP_AUTH"), *v;
	char *end;
	unsigned long n;

	memset(c, 0, sizeof(*c));
	if (mode == NULL || strcasecmp(mode, "jwt") == 0)
		c->mode = MCP_AUTH_MODE_JWT;
	else if (strcasecmp(mode, "none") == 0)
		c->mode = MCP_AUTH_MODE_NONE;
	else
		return mb_err_set(err, MB_E_CONFIG, "MCP_AUTH '%s': want jwt or none", mode);
	c->scope_read = mb_xstrdup(get(lookup, "MCP_SCOPE_READ") ?: "mail.read");
	c->scope_write = mb_xstrdup(get(lookup, "MCP_SCOPE_WRITE") ?: "mail.write");
	c->header = mb_xstrdup(get(lookup, "MCP_AUTH_HEADER"));
	c->resource_name = mb_xstrdup("Mailbox (imap-mcp)");
	c->leeway = MCP_JWT_MAX_LEEWAY;
	if (!scope_ok(c->scope_read))
		return mb_err_set(err, MB_E_CONFIG, "MCP_SCOPE_READ '%s' is not a scope token",
		    c->scope_read);
	if (!scope_ok(c->scope_write))
		return mb_err_set(err, MB_E_CONFIG, "MCP_SCOPE_WRITE '%s' is not a scope token",
		    c->scope_write);
	if (c->header != NULL && !token_ok(c->header))
		return mb_err_set(err, MB_E_CONFIG, "MCP_AUTH_HEADER '%s' is not a header name",
		    c->header);
	if ((v = get(lookup, "MCP_JWT_LEEWAY")) != NULL) {
		errno = 0;
		n = strtoul(v, &end, 10);
		if (!isdigit((unsigned char)*v) || *end != '\0' || errno != 0 ||
		    n > MCP_JWT_MAX_LEEWAY)
			return mb_err_set(err, MB_E_CONFIG, "MCP_JWT_LEEWAY '%s': want 0 to %d seconds",
			    v, MCP_JWT_MAX_LEEWAY);
		c->leeway = (unsigned)n;
	}
	if ((v = get(lookup, "MCP_RESOURCE_URL")) != NULL) {
		if (url_check(v, "MCP_RESOURCE_URL", err) == -1)
			return -1;
		c->resource_url = mcp_url_canon(v);
	}
	if ((v = get(lookup, "MCP_OAUTH_ISSUER")) != NULL) {
		if (url_check(v, "MCP_OAUTH_ISSUER", err) == -1)
			return -1;
		c->issuer = mb_xstrdup(v);	/* iss is compared exactly: keep as given */
	}
	if ((v = get(lookup, "MCP_JWKS_URL")) != NULL) {
		if (mb_url_fetchable(v, "MCP_JWKS_URL", err) == -1)
			return -1;
		c->jwks_url = mb_xstrdup(v);
	}
	if (c->mode == MCP_AUTH_MODE_NONE)
		return 0;
	if (c->resource_url == NULL)
		return mb_err_set(err, MB_E_CONFIG,
		    "MCP_RESOURCE_URL is needed with MCP_AUTH=jwt (the public URL of /mcp)");
	if (c->issuer == NULL)
		return mb_err_set(err, MB_E_CONFIG,
		    "MCP_OAUTH_ISSUER is needed with MCP_AUTH=jwt (the authorization server)");
	return 0;
}

int
mcp_auth_listen_check(enum mcp_auth_mode mode, const char *listen, struct mb_err *err)
{
	const char *host = listen, *end;

	if (mode == MCP_AUTH_MODE_JWT)
		return 0;
	if (strncmp(listen, "unix:", 5) == 0 && listen[5] != '\0')
		return 0;
	if (*host == '[') {
		host++;
		end = strchr(host, ']');
	} else {
		end = strrchr(host, ':');
		if (end != NULL && strchr(host, ':') != end)
			end = host + strlen(host);	/* a bare IPv6 literal */
	}
	if (end == NULL)
		end = host + strlen(host);
	if (mb_host_is_loopback(host, (size_t)(end - host)))
		return 0;
	return mb_err_set(err, MB_E_CONFIG,
	    "MCP_AUTH=none would serve the mailbox to anyone who can reach '%s', which is not a "
	    "loopback address or unix: socket; set MCP_AUTH=jwt (docs/auth.md) or listen on "
	    "127.0.0.1 or unix:", listen);
}

/* --- the checker -------------------------------------------------------- */

static void
conf_copy(struct mcp_auth_conf *d, const struct mcp_auth_conf *s)
{
	d->mode = s->mode;
	d->resource_url = mb_xstrdup(s->resource_url);
	d->issuer = mb_xstrdup(s->issuer);
	d->jwks_url = mb_xstrdup(s->jwks_url);
	d->scope_read = mb_xstrdup(s->scope_read ? s->scope_read : "mail.read");
	d->scope_write = mb_xstrdup(s->scope_write ? s->scope_write : "mail.write");
	d->header = mb_xstrdup(s->header);
	d->leeway = s->leeway > MCP_JWT_MAX_LEEWAY ? MCP_JWT_MAX_LEEWAY : s->leeway;
	d->resource_name = mb_xstrdup(s->resource_name ? s->resource_name : "Mailbox (imap-mcp)");
	d->now = s->now;
}

static time_t
clock_time(void)
{
	return time(NULL);
}

static int
auth_init(const struct mcp_auth_conf *conf, struct mcp_auth **auth_r, struct mb_err *err)
{
	struct mcp_auth *a;
	const char *auth, *path;
	struct mb_buf b = MB_BUF_INIT(4096);

	*auth_r = NULL;
	if (conf->mode == MCP_AUTH_MODE_JWT && (conf->resource_url == NULL ||
	    conf->issuer == NULL || strstr(conf->resource_url, "://") == NULL))
		return mb_err_set(err, MB_E_CONFIG, "MCP_RESOURCE_URL and MCP_OAUTH_ISSUER are needed");
	/* jansson seeds its hash function on first use; do it here, before the
	 * request threads, rather than racing for it. */
	json_object_seed(0);
	a = mb_xcalloc(1, sizeof(*a));
	conf_copy(&a->conf, conf);
	if (a->conf.now == NULL)
		a->conf.now = clock_time;
	if (conf->mode == MCP_AUTH_MODE_JWT) {
		/* RFC 9728 §3.1: the well-known suffix goes between host and path. */
		auth = strstr(a->conf.resource_url, "://") + 3;
		path = auth + strcspn(auth, "/");
		mb_buf_add(&b, a->conf.resource_url, (size_t)(path - a->conf.resource_url));
		mb_buf_addf(&b, WK_PRM "%s", strcmp(path, "/") == 0 ? "" : path);
		a->metadata_url = mb_buf_detach(&b, NULL);
		a->metadata_path = mb_xstrdup(a->metadata_url + (path - a->conf.resource_url));
	}
	*auth_r = a;
	return 0;
}

int
mcp_auth_new(const struct mcp_auth_conf *conf, struct mcp_auth **auth_r, struct mb_err *err)
{
	struct mcp_jwks_conf jc = { 0 };
	struct mcp_auth *a;

	if (auth_init(conf, &a, err) == -1)
		return -1;
	if (conf->mode == MCP_AUTH_MODE_JWT) {
		jc.issuer = a->conf.issuer;
		jc.jwks_url = a->conf.jwks_url;
		jc.now = a->conf.now;
		if (mcp_jwks_new(&jc, &a->jwks, err) == -1) {
			mcp_auth_free(&a);
			return -1;
		}
	}
	*auth_r = a;
	return 0;
}

int
mcp_auth_new_with_keys(const struct mcp_auth_conf *conf, struct mcp_keyset *set,
    struct mcp_auth **auth_r, struct mb_err *err)
{
	struct mcp_auth *a;

	if (auth_init(conf, &a, err) == -1)
		return -1;
	if (conf->mode == MCP_AUTH_MODE_JWT)
		a->jwks = mcp_jwks_new_static(set);
	*auth_r = a;
	return 0;
}

void
mcp_auth_free(struct mcp_auth **authp)
{
	struct mcp_auth *a = *authp;

	*authp = NULL;
	if (a == NULL)
		return;
	mcp_jwks_free(&a->jwks);
	mcp_auth_conf_release(&a->conf);
	free(a->metadata_url);
	free(a->metadata_path);
	free(a);
}

int
mcp_auth_prefetch(struct mcp_auth *a, struct mb_err *err)
{
	return a->jwks ? mcp_jwks_refresh(a->jwks, err) : 0;
}

void
mcp_auth_jwks_stats(struct mcp_auth *a, unsigned *fetches_r, unsigned *failures_r)
{
	*fetches_r = *failures_r = 0;
	if (a->jwks != NULL)
		mcp_jwks_stats(a->jwks, fetches_r, failures_r);
}

const char *
mcp_auth_header_name(const struct mcp_auth *a)
{
	return a->conf.header ? a->conf.header : "Authorization";
}

const char *
mcp_auth_scope_read(const struct mcp_auth *a)
{
	return a->conf.scope_read;
}

const char *
mcp_auth_scope_write(const struct mcp_auth *a)
{
	return a->conf.scope_write;
}

enum mcp_auth_mode
mcp_auth_mode(const struct mcp_auth *a)
{
	return a->conf.mode;
}

void
mcp_auth_result_release(struct mcp_auth_result *r)
{
	free(r->www_authenticate);
	free(r->sub);
	free(r->client_id);
	free(r->scope);
	memset(r, 0, sizeof(*r));
}

/* --- the decision ------------------------------------------------------- */

/* Format the reason, cutting it at the field's size (it is for the log). */
static void MB_PRINTF(2, 3)
set_reason(struct mcp_auth_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

static void
refuse_401(struct mcp_auth *a, struct mcp_auth_result *r, const char *scope,
    const char *description, const char *detail)
{
	struct mb_buf b = MB_BUF_INIT(2048);

	r->status = 401;
	mb_buf_adds(&b, "Bearer ");
	/* RFC 6750 §3.1: no error code when the request carried no credentials. */
	if (description != NULL)
		mb_buf_addf(&b, "error=\"invalid_token\", error_description=\"%s\", ", description);
	mb_buf_addf(&b, "resource_metadata=\"%s\", scope=\"%s\"", a->metadata_url, scope);
	r->www_authenticate = mb_buf_detach(&b, NULL);
	set_reason(r, "%s", detail);
	mb_log_info("auth: refused (401): %s", detail);
}

/* The token from the header value, or NULL when there is no bearer token. */
static const char *
bearer_token(const struct mcp_auth *a, const char *value, size_t *len_r)
{
	const char *p = value, *e;

	*len_r = 0;
	if (value == NULL)
		return NULL;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "Bearer", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
		p += 6;
		while (*p == ' ' || *p == '\t')
			p++;
	} else if (a->conf.header == NULL) {
		return NULL;	/* another scheme (Basic, ...): no bearer credentials */
	}
	e = p + strlen(p);
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e == p)
		return NULL;
	*len_r = (size_t)(e - p);
	return p;
}

void
mcp_auth_check(struct mcp_auth *a, const char *value, const char *scope,
    struct mcp_auth_result *r)
{
	struct mcp_jwt_policy pol = { .issuer = a->conf.issuer, .audience = a->conf.resource_url,
	    .leeway = a->conf.leeway };
	struct mcp_jwt_claims claims = { 0 };
	struct mcp_keyset *set = NULL;
	struct mcp_jwt *jwt = NULL;
	struct mb_err err = { 0 };
	struct mb_buf b = MB_BUF_INIT(2048);
	enum mcp_jwt_fail fail;
	const char *tok, *g, *e;
	char detail[320];
	size_t len;

	memset(r, 0, sizeof(*r));
	if (scope == NULL)
		scope = a->conf.scope_read;
	if (a->conf.mode == MCP_AUTH_MODE_NONE) {
		r->status = 200;
		r->may_write = true;
		r->scope = mb_xstrdup("");
		return;
	}
	if ((tok = bearer_token(a, value, &len)) == NULL) {
		refuse_401(a, r, scope, NULL, value == NULL ? "no credentials" :
		    "no bearer token in the header");
		return;
	}
	fail = mcp_jwt_parse(tok, len, &jwt, &err);
	if (fail == MCP_JWT_OK) {
		if (mcp_jwks_acquire(a->jwks, mcp_jwt_kid(jwt), mcp_jwt_alg(jwt), &set, &err) == -1) {
			mcp_jwt_free(&jwt);
			r->status = 503;
			set_reason(r, "cannot check tokens: %s", err.msg);
			mb_log_warnx("auth: refused (503): %s", r->reason);
			return;
		}
		fail = mcp_jwt_verify(jwt, set, &err);
		mcp_keyset_unref(&set);
	}
	if (fail == MCP_JWT_OK)
		fail = mcp_jwt_claims(jwt, &pol, a->conf.now(), &claims, &err);
	mcp_jwt_free(&jwt);
	if (fail != MCP_JWT_OK) {
		snprintf(detail, sizeof(detail), "%s: %s", mcp_jwt_fail_str(fail), err.msg);
		refuse_401(a, r, scope, mcp_jwt_fail_str(fail), detail);
		return;
	}
	r->sub = claims.sub;
	r->client_id = claims.client_id;
	r->scope = claims.scope;
	r->may_write = mcp_scope_has(claims.scope, a->conf.scope_write);
	/*
	 * The write scope is the broader one: a token that may change the
	 * mailbox may read it, and MCP 2026-07-28 says a broader scope must
	 * satisfy the narrower one.
	 */
	if (mcp_scope_has(claims.scope, scope) ||
	    (strcmp(scope, a->conf.scope_read) == 0 && r->may_write)) {
		r->status = 200;
		return;
	}
	/* 403 with the scopes to ask for: the missing one and those granted. */
	r->status = 403;
	mb_buf_addf(&b, "Bearer error=\"insufficient_scope\", scope=\"%s", scope);
	for (g = claims.scope; *g != '\0'; g = *e ? e + 1 : e) {
		e = g + strcspn(g, " ");
		if ((size_t)(e - g) != strlen(scope) || strncmp(g, scope, (size_t)(e - g)) != 0) {
			mb_buf_addc(&b, ' ');
			mb_buf_add(&b, g, (size_t)(e - g));
		}
	}
	mb_buf_addf(&b, "\", resource_metadata=\"%s\"", a->metadata_url);
	r->www_authenticate = mb_buf_detach(&b, NULL);
	set_reason(r, "scope %s not granted (has '%s')", scope, claims.scope);
	mb_log_info("auth: refused (403) sub %s client %s: %s", r->sub,
	    r->client_id ? r->client_id : "-", r->reason);
}

/* --- RFC 9728 metadata -------------------------------------------------- */

bool
mcp_auth_is_metadata_path(const struct mcp_auth *a, const char *path)
{
	if (a->conf.mode != MCP_AUTH_MODE_JWT || path == NULL)
		return false;
	return strcmp(path, WK_PRM) == 0 || strcmp(path, a->metadata_path) == 0;
}

const char *
mcp_auth_metadata_url(const struct mcp_auth *a)
{
	return a->metadata_url;
}

char *
mcp_auth_metadata_json(const struct mcp_auth *a)
{
	json_t *doc;
	char *s;

	if (a->conf.mode != MCP_AUTH_MODE_JWT)
		return NULL;
	doc = json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s}",
	    "resource", a->conf.resource_url,
	    "authorization_servers", a->conf.issuer,
	    "scopes_supported", a->conf.scope_read, a->conf.scope_write,
	    "bearer_methods_supported", "header",
	    "resource_name", a->conf.resource_name);
	if (doc == NULL)
		mb_fatalx("auth: cannot build the resource metadata");
	s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (s == NULL)
		mb_fatalx("auth: cannot serialise the resource metadata");
	return s;
}
