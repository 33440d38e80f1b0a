/*
 * mcpd as an OAuth 2.1 resource server (MCP authorization, RFC 6750, 9068,
 * 9728): decides whether a request may go on, and says what to answer when
 * it may not.  Knows nothing of libmicrohttpd, so tests call it directly;
 * http.c wires it in (docs/auth.md shows how):
 *
 *	value = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
 *	    mcp_auth_header_name(auth));
 *	mcp_auth_check(auth, value, NULL, &res);	  NULL: the read scope
 *	if (res.status != 200)
 *		answer res.status, with "WWW-Authenticate: res.www_authenticate"
 *		when that is not NULL;
 *	else run the tool, with res.sub / res.client_id for the audit log and
 *	res.may_write for the write tools;
 *	mcp_auth_result_release(&res);
 *
 * A token is never logged, copied into a message or forwarded: only sub,
 * client_id and the reason for a refusal are.
 */
#ifndef MCPD_AUTH_H
#define MCPD_AUTH_H

#include <stdbool.h>
#include <time.h>

#include "mailbox/err.h"
#include "jwt.h"

enum mcp_auth_mode {
	MCP_AUTH_MODE_JWT = 0,	/* MCP_AUTH=jwt (the default) */
	MCP_AUTH_MODE_NONE,	/* MCP_AUTH=none: loopback or unix: listeners only */
};

/* The settings, as read from MCP_* keys (docs/auth.md, .env.example). */
struct mcp_auth_conf {
	enum mcp_auth_mode mode;
	char		*resource_url;	/* MCP_RESOURCE_URL, canonical; owned */
	char		*issuer;	/* MCP_OAUTH_ISSUER; owned */
	char		*jwks_url;	/* MCP_JWKS_URL; owned; NULL: discover */
	char		*scope_read;	/* MCP_SCOPE_READ; owned; "mail.read" */
	char		*scope_write;	/* MCP_SCOPE_WRITE; owned; "mail.write" */
	char		*header;	/* MCP_AUTH_HEADER; owned; NULL: Authorization */
	unsigned	 leeway;	/* MCP_JWT_LEEWAY, seconds, <= 60; 60 */
	char		*resource_name;	/* for the metadata; owned; "Mailbox (imap-mcp)" */
	time_t		(*now)(void);	/* not a key: NULL is time(); tests move the clock */
};

/*
 * Fill conf from lookup(name) (getenv in main.c, a table in tests; NULL or
 * "" is unset), apply defaults, and check: MCP_AUTH is none or jwt; with jwt,
 * MCP_RESOURCE_URL and MCP_OAUTH_ISSUER are set, absolute, https (http only
 * for a loopback host), without query or fragment; scopes are RFC 6749
 * scope-tokens; MCP_AUTH_HEADER is an HTTP token; MCP_JWT_LEEWAY is 0..60.
 * Returns 0, or -1 with err set (MB_E_CONFIG, naming the key).  Release conf
 * with mcp_auth_conf_release() either way.
 */
int	mcp_auth_conf_load(struct mcp_auth_conf *conf, const char *(*lookup)(const char *name),
	    struct mb_err *err);
void	mcp_auth_conf_release(struct mcp_auth_conf *conf);	/* idempotent */

/*
 * Whether mcpd may listen on listen ("127.0.0.1:8080", "[::1]:8080",
 * "localhost:8080", "unix:/run/imap-mcp/mcpd.sock", "0.0.0.0:8080", ...)
 * with this mode: always with jwt; with none only on a loopback address or a
 * unix: socket.  Returns 0, or -1 with err (MB_E_CONFIG) saying why not.
 */
int	mcp_auth_listen_check(enum mcp_auth_mode mode, const char *listen, struct mb_err *err);

struct mcp_auth;

/*
 * Make the checker from a loaded conf (copied).  With jwt, makes the JWKS
 * cache (mcp_jwks_new(): call before starting threads) without fetching yet.
 * On success *auth_r is the caller's: mcp_auth_free() it after the HTTP
 * daemon has stopped.
 */
int	mcp_auth_new(const struct mcp_auth_conf *conf, struct mcp_auth **auth_r,
	    struct mb_err *err);
/* The same with a fixed key set instead of fetching one (tests, fuzzer);
 * takes a reference on set. */
int	mcp_auth_new_with_keys(const struct mcp_auth_conf *conf, struct mcp_keyset *set,
	    struct mcp_auth **auth_r, struct mb_err *err);
void	mcp_auth_free(struct mcp_auth **authp);	/* NULL-safe; sets *authp = NULL */

/* Fetch the key set now (at startup), so a wrong issuer shows at once.
 * 0 or -1 with err; a failure is worth a warning, not an exit. */
int	mcp_auth_prefetch(struct mcp_auth *auth, struct mb_err *err);

/* The JWKS cache's fetch counts (mcp_jwks_stats()); zeros with none. */
void	mcp_auth_jwks_stats(struct mcp_auth *auth, unsigned *fetches_r, unsigned *failures_r);

/* The request header to read: "Authorization", or MCP_AUTH_HEADER. */
const char	*mcp_auth_header_name(const struct mcp_auth *auth);
const char	*mcp_auth_scope_read(const struct mcp_auth *auth);
const char	*mcp_auth_scope_write(const struct mcp_auth *auth);
enum mcp_auth_mode	mcp_auth_mode(const struct mcp_auth *auth);

struct mcp_auth_result {
	unsigned	 status;	/* 200 go on; 401; 403; 503 keys unavailable */
	char		*www_authenticate;	/* owned; value for 401 and 403, else NULL */
	char		*sub;		/* owned; who asked (200, 403); NULL with MCP_AUTH=none */
	char		*client_id;	/* owned; NULL when the token has none */
	char		*scope;		/* owned; granted scopes, space-separated */
	bool		 may_write;	/* the write scope was granted (always with none) */
	char		 reason[256];	/* why refused, for the log; never the token */
};

/*
 * Decide on one request.  value is the header's value as received (NULL when
 * absent; "Bearer <token>" for Authorization, the bare token or "Bearer
 * <token>" for MCP_AUTH_HEADER); scope is the scope the operation needs
 * (NULL: the read scope).  Thread-safe.  Always fills *res (release it with
 * mcp_auth_result_release()):
 *   200 allowed: sub, client_id, scope, may_write;
 *   401 no credentials: `Bearer resource_metadata="<u>", scope="<s>"`;
 *   401 bad token: `Bearer error="invalid_token", error_description="<why>",
 *       resource_metadata="<u>", scope="<s>"`;
 *   403 valid token without scope s: `Bearer error="insufficient_scope",
 *       scope="<s and the granted ones>", resource_metadata="<u>"`;
 *   503 the issuer's keys could not be fetched (no WWW-Authenticate).
 * Refusals are logged (info) with the reason and, when known, sub.
 */
void	mcp_auth_check(struct mcp_auth *auth, const char *value, const char *scope,
	    struct mcp_auth_result *res);
void	mcp_auth_result_release(struct mcp_auth_result *res);	/* idempotent */

/*
 * RFC 9728 protected resource metadata: whether path (the request path,
 * without query) is one of the two well-known locations to serve it at:
 * /.well-known/oauth-protected-resource<resource path> and
 * /.well-known/oauth-protected-resource.  Always false with MCP_AUTH=none.
 */
bool	mcp_auth_is_metadata_path(const struct mcp_auth *auth, const char *path);
/* The URL of the first, as put in resource_metadata="..."; NULL with none. */
const char	*mcp_auth_metadata_url(const struct mcp_auth *auth);
/*
 * The metadata document (serve as 200 application/json, with
 * Access-Control-Allow-Origin: *): resource, authorization_servers,
 * scopes_supported, bearer_methods_supported ["header"], resource_name.
 * Returns a string the caller frees, or NULL with MCP_AUTH=none.
 */
char	*mcp_auth_metadata_json(const struct mcp_auth *auth);

#endif
