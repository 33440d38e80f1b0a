/*
 * JWT access tokens (RFC 9068) signed with JWS (RFC 7515), checked against a
 * key set (RFC 7517 JWKS).  No network here: jwks.c fetches and caches the
 * key set, auth.c turns the outcome into an HTTP answer.
 *
 * A check runs in three steps so the caller can look the key up (and refetch
 * the key set on an unknown kid) between parsing and verifying:
 *
 *	mcp_jwt_parse()		split, base64url-decode, header checks (typ, alg)
 *	mcp_jwt_verify()	key by kid, kty/alg match, signature
 *	mcp_jwt_claims()	iss, aud, exp, nbf, iat, sub, scope
 *
 * mcp_jwt_validate() runs all three against a fixed key set.
 *
 * Each step returns an enum mcp_jwt_fail: MCP_JWT_OK (0) or the class of the
 * refusal, which the client is told (mcp_jwt_fail_str()); err gets the detail,
 * for the server log only.  Nothing here ever copies the token into err.
 */
#ifndef MCPD_JWT_H
#define MCPD_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "mailbox/err.h"

#define MCP_JWT_MAX_LEN		8192	/* bytes of compact token accepted */
#define MCP_JWT_MAX_LEEWAY	60	/* seconds of clock skew, at most */
#define MCP_JWKS_MAX_KEYS	64	/* keys kept from one JWKS document */

enum mcp_jwt_fail {
	MCP_JWT_OK = 0,
	MCP_JWT_MALFORMED,	/* not a JWS compact token, bad base64url or JSON */
	MCP_JWT_TOO_LONG,	/* longer than MCP_JWT_MAX_LEN */
	MCP_JWT_BAD_TYP,	/* typ is not at+jwt (a plain JWT, an ID token, none) */
	MCP_JWT_BAD_ALG,	/* alg not in RS256 PS256 ES256 EdDSA (Ed25519) */
	MCP_JWT_UNKNOWN_KEY,	/* no key in the set for this kid and alg */
	MCP_JWT_BAD_SIG,	/* the signature does not verify */
	MCP_JWT_BAD_ISS,	/* iss missing or not the configured issuer */
	MCP_JWT_BAD_AUD,	/* aud missing or without this resource */
	MCP_JWT_EXPIRED,	/* exp passed (beyond the leeway) or missing */
	MCP_JWT_NOT_YET_VALID,	/* nbf or iat in the future (beyond the leeway) */
	MCP_JWT_BAD_CLAIMS,	/* a claim of the wrong type, sub missing, ... */
};

/* A short fixed text for error_description ("token expired"); never NULL. */
const char	*mcp_jwt_fail_str(enum mcp_jwt_fail fail);

enum mcp_jwt_alg {
	MCP_ALG_RS256 = 1,	/* RSASSA-PKCS1-v1_5 with SHA-256 */
	MCP_ALG_PS256,		/* RSASSA-PSS, SHA-256, MGF1-SHA-256, salt 32 */
	MCP_ALG_ES256,		/* ECDSA P-256 SHA-256, JOSE r||s signature */
	MCP_ALG_EDDSA,		/* Ed25519 ("EdDSA", or RFC 9864's "Ed25519") */
};

/*
 * A key set: the verification keys of one JWKS document.  Immutable once
 * made and reference counted, so threads share one while jwks.c swaps in a
 * newer one.
 */
struct mcp_keyset;

/*
 * Parse a JWKS document ({"keys":[...]}).  json is borrowed (len bytes, need
 * not be NUL-terminated).  Keys this module cannot use (other kty or curve,
 * use "enc", RSA shorter than 2048 bits, key_ops without "verify") are
 * skipped; a key that claims to be usable but is broken (bad base64url,
 * point off the curve) is an error.  On success *set_r is the caller's, with
 * one reference: drop it with mcp_keyset_unref().  An empty usable set is
 * accepted (nkeys 0).  On failure returns -1 with err set (MB_E_PROTO).
 */
int	mcp_keyset_parse(const char *json, size_t len, struct mcp_keyset **set_r,
	    struct mb_err *err);
struct mcp_keyset	*mcp_keyset_ref(struct mcp_keyset *set);	/* returns set */
void	mcp_keyset_unref(struct mcp_keyset **setp);	/* NULL-safe; sets *setp = NULL */
size_t	mcp_keyset_count(const struct mcp_keyset *set);
/* Whether set has a key for kid (NULL: token without kid) usable with alg. */
bool	mcp_keyset_has(const struct mcp_keyset *set, const char *kid, enum mcp_jwt_alg alg);

/* A parsed token (header and payload decoded, signature not yet checked). */
struct mcp_jwt;

/*
 * Split and decode a compact JWS, check its header: typ at+jwt or
 * application/at+jwt (case-insensitive), alg in the allow-list, no crit.
 * token is borrowed (len bytes) and must outlive *jwt_r, which points into it
 * for the signed bytes.  On MCP_JWT_OK *jwt_r is the caller's: free it with
 * mcp_jwt_free().  Otherwise *jwt_r is NULL and err is set.
 */
enum mcp_jwt_fail	mcp_jwt_parse(const char *token, size_t len, struct mcp_jwt **jwt_r,
			    struct mb_err *err);
void	mcp_jwt_free(struct mcp_jwt **jwtp);	/* NULL-safe; sets *jwtp = NULL */

/* The header's kid (NULL when absent) and alg; valid until mcp_jwt_free(). */
const char		*mcp_jwt_kid(const struct mcp_jwt *jwt);
enum mcp_jwt_alg	 mcp_jwt_alg(const struct mcp_jwt *jwt);

/*
 * Verify the signature with the key of set whose kid is the header's (a
 * token without kid: the only key in set usable with alg) and whose kty,
 * curve and (when given) alg fit the header's alg.  set is borrowed.
 */
enum mcp_jwt_fail	mcp_jwt_verify(const struct mcp_jwt *jwt, const struct mcp_keyset *set,
			    struct mb_err *err);

/* What a token must say to be for us, and how much clock skew to allow. */
struct mcp_jwt_policy {
	const char	*issuer;	/* compared exactly with iss */
	const char	*audience;	/* the resource URL; aud must contain it */
	unsigned	 leeway;	/* seconds, at most MCP_JWT_MAX_LEEWAY */
};

/* What a valid token says about who asked and what it may do. */
struct mcp_jwt_claims {
	char		*sub;		/* owned; never NULL after success */
	char		*client_id;	/* owned; NULL when the token has none */
	char		*scope;		/* owned; space-separated, "" when none */
	long long	 exp;		/* seconds since the epoch */
};

/*
 * Check the payload's claims against policy at time now: iss exact; aud (a
 * string or an array) containing policy->audience, compared after lowering
 * scheme and host and dropping one trailing slash; exp required and
 * now < exp + leeway; nbf and iat, when present, <= now + leeway; sub a
 * string; scope from "scope" (space-separated) or else "scp" (array or
 * string).  On MCP_JWT_OK fills *claims (release with
 * mcp_jwt_claims_release()); otherwise leaves it zeroed and sets err.
 */
enum mcp_jwt_fail	mcp_jwt_claims(const struct mcp_jwt *jwt, const struct mcp_jwt_policy *policy,
			    time_t now, struct mcp_jwt_claims *claims, struct mb_err *err);
void	mcp_jwt_claims_release(struct mcp_jwt_claims *claims);	/* idempotent */

/* parse + verify + claims against a fixed key set (tests, the fuzzer). */
enum mcp_jwt_fail	mcp_jwt_validate(const char *token, size_t len, const struct mcp_keyset *set,
			    const struct mcp_jwt_policy *policy, time_t now,
			    struct mcp_jwt_claims *claims, struct mb_err *err);

/* Whether the space-separated list scopes contains scope (exact token). */
bool	mcp_scope_has(const char *scopes, const char *scope);

/*
 * Canonical form of an absolute URL for comparing audiences: scheme and host
 * lowered, one trailing slash dropped.  Returns a string the caller frees,
 * or NULL when url is not "scheme://authority..." or is longer than 2048.
 */
char	*mcp_url_canon(const char *url);

/*
 * Decode base64url without padding (RFC 7515 §2) via OpenSSL.  Returns a
 * buffer of *len_r bytes plus a NUL, which the caller frees, or NULL when in
 * has a character outside the alphabet, padding, or an impossible length.
 */
unsigned char	*mcp_b64url_decode(const char *in, size_t len, size_t *len_r);

#endif
