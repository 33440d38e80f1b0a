/*
 * The authorization server's key set, fetched with libcurl and cached for
 * every request thread.
 *
 * The JWKS URL is configured (MCP_JWKS_URL) or discovered from the issuer's
 * metadata: RFC 8414 /.well-known/oauth-authorization-server, then OpenID
 * /.well-known/openid-configuration, whose "issuer" must be the configured
 * issuer exactly and whose "jwks_uri" is then used.  URLs must be https; http
 * is allowed only when the host is loopback (127.0.0.0/8, ::1, localhost),
 * for tests.
 *
 * Fetching happens in the request path, by one thread at a time, never under
 * the cache lock; while it runs, threads whose key is in the current set go
 * on with it and the others wait for the fetch to end:
 *   - a key set older than refresh_s (600) is refetched; meanwhile and if
 *     that fails, the old set keeps serving;
 *   - an unknown kid triggers a refetch at most once per min_refetch_s (60),
 *     counted from the last fetch of any kind, so forged kids cannot make us
 *     hammer the issuer;
 *   - with no key set at all (first use, or the issuer was down), a fetch is
 *     tried at most once per retry_s (5).
 * Each fetch has connect and total timeouts and a size cap; redirects are
 * not followed.
 */
#ifndef MCPD_JWKS_H
#define MCPD_JWKS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "mailbox/err.h"
#include "jwt.h"

struct mcp_jwks_conf {
	const char	*issuer;	/* borrowed; required unless jwks_url is set */
	const char	*jwks_url;	/* borrowed; NULL: discover from issuer */
	long		 connect_timeout_ms;	/* 0: 3000 */
	long		 timeout_ms;		/* 0: 10000 */
	size_t		 max_bytes;		/* 0: 256 KiB per document */
	unsigned	 refresh_s;		/* 0: 600 */
	unsigned	 min_refetch_s;		/* 0: 60 */
	unsigned	 retry_s;		/* 0: 5 */
	time_t		(*now)(void);		/* NULL: time(); tests move the clock */
};

struct mcp_jwks;

/*
 * Make a cache; nothing is fetched yet.  conf's strings are copied.  Refuses
 * (MB_E_CONFIG) a non-https URL whose host is not loopback.  Calls
 * curl_global_init(), so call it before starting threads.  On success
 * *jwks_r is the caller's: free it with mcp_jwks_free() once no thread uses it.
 */
int	mcp_jwks_new(const struct mcp_jwks_conf *conf, struct mcp_jwks **jwks_r,
	    struct mb_err *err);

/* A cache that never fetches and always answers set (tests, the fuzzer).
 * Takes a reference on set. */
struct mcp_jwks	*mcp_jwks_new_static(struct mcp_keyset *set);

void	mcp_jwks_free(struct mcp_jwks **jwksp);	/* NULL-safe; sets *jwksp = NULL */

/*
 * The key set to verify a token whose header has kid (NULL: none) and alg,
 * fetching first when the rules above say so.  Thread-safe.  Returns 0 with
 * *set_r holding a reference the caller drops with mcp_keyset_unref() (the
 * set may still lack the kid: then the token's key is unknown), or -1 with
 * err set (MB_E_TEMP) when there is no key set at all because the issuer
 * could not be reached.
 */
int	mcp_jwks_acquire(struct mcp_jwks *jwks, const char *kid, enum mcp_jwt_alg alg,
	    struct mcp_keyset **set_r, struct mb_err *err);

/* Fetch now (at startup, to fail early); keeps the old set on failure. */
int	mcp_jwks_refresh(struct mcp_jwks *jwks, struct mb_err *err);

/* Fetches tried and failed since mcp_jwks_new(), for logs and tests. */
void	mcp_jwks_stats(struct mcp_jwks *jwks, unsigned *fetches_r, unsigned *failures_r);

#endif
