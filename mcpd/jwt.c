/*
 * JWT access-token checks (RFC 9068 §4) with OpenSSL 3 EVP and jansson.
 *
 * The token is hostile input: every length is checked before it is used,
 * JSON is parsed with duplicate keys refused, and the signature is checked
 * before any claim is believed.  The algorithm comes from an allow-list and
 * must fit the key's type, so a token can neither pick "none" nor turn an
 * RSA public key into an HMAC secret.
 *
 * Over 600 lines on purpose: the checks run as one sequence over one hostile
 * token (segments, header, key, signature, claims), and keeping them in one
 * file keeps every intermediate state private to it.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "mailbox/buf.h"
#include "mailbox/util.h"
#include "jwt.h"

#define CLAIM_MAX	1024	/* bytes in sub, client_id, a scope list */
#define SCOPES_MAX	64	/* scope values in a token */

enum kty { KTY_RSA = 1, KTY_EC, KTY_OKP };

struct mcp_jwk {
	char		*kid;		/* owned; NULL when the JWK has none */
	enum kty	 kty;
	enum mcp_jwt_alg alg;		/* 0: the JWK names no alg */
	EVP_PKEY	*pkey;		/* owned */
};

struct mcp_keyset {
	atomic_int	 refs;
	size_t		 n;
	struct mcp_jwk	 keys[];
};

struct mcp_jwt {
	enum mcp_jwt_alg alg;
	char		*kid;		/* owned; NULL when absent */
	json_t		*payload;	/* owned: a JSON object */
	const char	*input;		/* borrowed: header.payload, signed bytes */
	size_t		 input_len;
	unsigned char	*sig;		/* owned */
	size_t		 sig_len;
};

const char *
mcp_jwt_fail_str(enum mcp_jwt_fail fail)
{
	switch (fail) {
	case MCP_JWT_OK:		return "ok";
	case MCP_JWT_MALFORMED:		return "malformed token";
	case MCP_JWT_TOO_LONG:		return "token too long";
	case MCP_JWT_BAD_TYP:		return "not an access token (typ)";
	case MCP_JWT_BAD_ALG:		return "signing algorithm not accepted";
	case MCP_JWT_UNKNOWN_KEY:	return "unknown signing key";
	case MCP_JWT_BAD_SIG:		return "bad signature";
	case MCP_JWT_BAD_ISS:		return "wrong issuer";
	case MCP_JWT_BAD_AUD:		return "token not issued for this resource";
	case MCP_JWT_EXPIRED:		return "token expired";
	case MCP_JWT_NOT_YET_VALID:	return "token not yet valid";
	case MCP_JWT_BAD_CLAIMS:	return "bad claims";
	}
	return "invalid token";
}

/* --- base64url ---------------------------------------------------------- */

static bool
b64url_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_';
}

unsigned char *
mcp_b64url_decode(const char *in, size_t len, size_t *len_r)
{
	size_t pad, i, std_len;
	char *std;
	unsigned char *out;
	int n;

	*len_r = 0;
	if (len % 4 == 1 || len > INT_MAX / 2)
		return NULL;
	for (i = 0; i < len; i++)
		if (!b64url_char((unsigned char)in[i]))
			return NULL;
	/* Translate to the standard alphabet and restore the padding, then let
	 * OpenSSL decode whole quanta. */
	pad = (4 - len % 4) % 4;
	std_len = len + pad;
	std = mb_xmalloc(std_len + 1);
	for (i = 0; i < len; i++)
		std[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
	for (; i < std_len; i++)
		std[i] = '=';
	std[std_len] = '\0';
	out = mb_xmalloc(std_len / 4 * 3 + 1);
	n = std_len ? EVP_DecodeBlock(out, (const unsigned char *)std, (int)std_len) : 0;
	free(std);
	/* EVP_DecodeBlock counts the bytes the padding stands for: drop them. */
	if (n < 0 || (size_t)n < pad) {
		free(out);
		return NULL;
	}
	*len_r = (size_t)n - pad;
	out[*len_r] = '\0';
	return out;
}

/* --- algorithms --------------------------------------------------------- */

static enum mcp_jwt_alg
alg_parse(const char *s)
{
	if (strcmp(s, "RS256") == 0)
		return MCP_ALG_RS256;
	if (strcmp(s, "PS256") == 0)
		return MCP_ALG_PS256;
	if (strcmp(s, "ES256") == 0)
		return MCP_ALG_ES256;
	if (strcmp(s, "EdDSA") == 0 || strcmp(s, "Ed25519") == 0)
		return MCP_ALG_EDDSA;
	return 0;
}

static enum kty
alg_kty(enum mcp_jwt_alg alg)
{
	switch (alg) {
	case MCP_ALG_RS256:
	case MCP_ALG_PS256:
		return KTY_RSA;
	case MCP_ALG_ES256:
		return KTY_EC;
	case MCP_ALG_EDDSA:
		return KTY_OKP;
	}
	return 0;
}

/* --- JWK to EVP_PKEY ---------------------------------------------------- */

static const char *
jstr(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Decode the base64url member key of obj into a fresh buffer (caller frees). */
static unsigned char *
jb64(const json_t *obj, const char *key, size_t *len_r)
{
	const json_t *v = json_object_get(obj, key);

	*len_r = 0;
	if (!json_is_string(v))
		return NULL;
	return mcp_b64url_decode(json_string_value(v), json_string_length(v), len_r);
}

static EVP_PKEY *
pkey_fromdata(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	EVP_PKEY *pkey = NULL;

	if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		pkey = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pkey;
}

/* A public key that OpenSSL itself agrees is sound (EC point on the curve). */
static bool
pkey_sound(EVP_PKEY *pkey)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
	bool ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;

	EVP_PKEY_CTX_free(ctx);
	return ok;
}

static EVP_PKEY *
jwk_rsa(const json_t *jwk, struct mb_err *err)
{
	size_t nlen, elen;
	unsigned char *n = jb64(jwk, "n", &nlen), *e = jb64(jwk, "e", &elen);
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pkey = NULL;

	if (n == NULL || e == NULL || nlen == 0 || elen == 0 || nlen > 1024 || elen > 8) {
		mb_err_set(err, MB_E_PROTO, "jwks: RSA key without a usable n or e");
		goto out;
	}
	bn = BN_bin2bn(n, (int)nlen, NULL);
	be = BN_bin2bn(e, (int)elen, NULL);
	if (bn == NULL || be == NULL || !BN_is_odd(be) || BN_is_one(be)) {
		/* e = 1 would make every message its own signature. */
		mb_err_set(err, MB_E_PROTO, "jwks: RSA key with an unusable exponent");
		goto out;
	}
	bld = OSSL_PARAM_BLD_new();
	if (bld == NULL ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) ||
	    (pkey = pkey_fromdata("RSA", bld)) == NULL) {
		mb_err_set(err, MB_E_PROTO, "jwks: RSA key refused by OpenSSL");
		goto out;
	}
out:
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(n);
	free(e);
	return pkey;
}

static EVP_PKEY *
jwk_ec(const json_t *jwk, struct mb_err *err)
{
	size_t xlen, ylen;
	unsigned char *x = jb64(jwk, "x", &xlen), *y = jb64(jwk, "y", &ylen);
	unsigned char point[65];
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pkey = NULL;

	if (x == NULL || y == NULL || xlen != 32 || ylen != 32) {
		mb_err_set(err, MB_E_PROTO, "jwks: P-256 key without 32-byte x and y");
		goto out;
	}
	point[0] = POINT_CONVERSION_UNCOMPRESSED;
	memcpy(point + 1, x, 32);
	memcpy(point + 33, y, 32);
	bld = OSSL_PARAM_BLD_new();
	if (bld == NULL ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point)) ||
	    (pkey = pkey_fromdata("EC", bld)) == NULL || !pkey_sound(pkey)) {
		EVP_PKEY_free(pkey);
		pkey = NULL;
		mb_err_set(err, MB_E_PROTO, "jwks: P-256 point refused by OpenSSL");
	}
out:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return pkey;
}

static EVP_PKEY *
jwk_okp(const json_t *jwk, struct mb_err *err)
{
	size_t xlen;
	unsigned char *x = jb64(jwk, "x", &xlen);
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pkey = NULL;

	if (x == NULL || xlen != 32) {
		mb_err_set(err, MB_E_PROTO, "jwks: Ed25519 key without a 32-byte x");
		goto out;
	}
	bld = OSSL_PARAM_BLD_new();
	if (bld == NULL ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, x, xlen) ||
	    (pkey = pkey_fromdata("ED25519", bld)) == NULL)
		mb_err_set(err, MB_E_PROTO, "jwks: Ed25519 key refused by OpenSSL");
out:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	return pkey;
}

/* Whether the key may verify signatures: use and key_ops, when present, say so. */
static bool
jwk_for_signing(const json_t *jwk)
{
	const json_t *use = json_object_get(jwk, "use"), *ops = json_object_get(jwk, "key_ops");
	const json_t *op;
	size_t i;

	if (use != NULL && (!json_is_string(use) || strcmp(json_string_value(use), "sig") != 0))
		return false;
	if (ops == NULL)
		return true;
	if (!json_is_array(ops))
		return false;
	json_array_foreach(ops, i, op)
		if (json_is_string(op) && strcmp(json_string_value(op), "verify") == 0)
			return true;
	return false;
}

/*
 * Fill *key from one JWK.  Returns 1 when it is a key we use, 0 when it is
 * one to skip, -1 (err set) when it claims to be usable but is broken.
 */
static int
jwk_load(const json_t *jwk, struct mcp_jwk *key, struct mb_err *err)
{
	const char *kty = jstr(jwk, "kty"), *crv = jstr(jwk, "crv"), *alg = jstr(jwk, "alg");
	const json_t *kid = json_object_get(jwk, "kid");

	memset(key, 0, sizeof(*key));
	if (!json_is_object(jwk) || kty == NULL || !jwk_for_signing(jwk))
		return 0;
	if (alg != NULL && (key->alg = alg_parse(alg)) == 0)
		return 0;	/* a key for an algorithm we never accept */
	if (strcmp(kty, "RSA") == 0)
		key->kty = KTY_RSA;
	else if (strcmp(kty, "EC") == 0 && crv != NULL && strcmp(crv, "P-256") == 0)
		key->kty = KTY_EC;
	else if (strcmp(kty, "OKP") == 0 && crv != NULL && strcmp(crv, "Ed25519") == 0)
		key->kty = KTY_OKP;
	else
		return 0;
	if (key->alg != 0 && alg_kty(key->alg) != key->kty)
		return mb_err_set(err, MB_E_PROTO, "jwks: key of type %s with alg %s", kty, alg);
	if (kid != NULL) {
		if (!json_is_string(kid) || json_string_length(kid) > 256)
			return mb_err_set(err, MB_E_PROTO, "jwks: kid not a short string");
		key->kid = mb_xstrdup(json_string_value(kid));
	}
	switch (key->kty) {
	case KTY_RSA:
		key->pkey = jwk_rsa(jwk, err);
		break;
	case KTY_EC:
		key->pkey = jwk_ec(jwk, err);
		break;
	case KTY_OKP:
		key->pkey = jwk_okp(jwk, err);
		break;
	}
	if (key->pkey == NULL) {
		free(key->kid);
		key->kid = NULL;
		return -1;
	}
	if (key->kty == KTY_RSA && EVP_PKEY_get_bits(key->pkey) < 2048) {
		EVP_PKEY_free(key->pkey);
		free(key->kid);
		memset(key, 0, sizeof(*key));
		return 0;	/* too weak to trust: as if absent */
	}
	return 1;
}

int
mcp_keyset_parse(const char *json, size_t len, struct mcp_keyset **set_r, struct mb_err *err)
{
	json_error_t jerr;
	json_t *doc, *keys, *jwk;
	struct mcp_keyset *set;
	size_t i;
	int r;

	*set_r = NULL;
	doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL)
		return mb_err_set(err, MB_E_PROTO, "jwks: not JSON: %s", jerr.text);
	keys = json_object_get(doc, "keys");
	if (!json_is_array(keys)) {
		json_decref(doc);
		return mb_err_set(err, MB_E_PROTO, "jwks: no \"keys\" array");
	}
	set = mb_xcalloc(1, sizeof(*set) + MCP_JWKS_MAX_KEYS * sizeof(set->keys[0]));
	atomic_init(&set->refs, 1);
	json_array_foreach(keys, i, jwk) {
		if (set->n == MCP_JWKS_MAX_KEYS)
			break;
		r = jwk_load(jwk, &set->keys[set->n], err);
		if (r < 0) {
			ERR_clear_error();
			json_decref(doc);
			mcp_keyset_unref(&set);
			return -1;
		}
		set->n += (size_t)r;
	}
	json_decref(doc);
	ERR_clear_error();	/* from keys skipped or refused above */
	*set_r = set;
	return 0;
}

struct mcp_keyset *
mcp_keyset_ref(struct mcp_keyset *set)
{
	atomic_fetch_add(&set->refs, 1);
	return set;
}

void
mcp_keyset_unref(struct mcp_keyset **setp)
{
	struct mcp_keyset *set = *setp;
	size_t i;

	*setp = NULL;
	if (set == NULL || atomic_fetch_sub(&set->refs, 1) != 1)
		return;
	for (i = 0; i < set->n; i++) {
		free(set->keys[i].kid);
		EVP_PKEY_free(set->keys[i].pkey);
	}
	free(set);
}

size_t
mcp_keyset_count(const struct mcp_keyset *set)
{
	return set->n;
}

static bool
key_fits(const struct mcp_jwk *k, enum mcp_jwt_alg alg)
{
	return k->kty == alg_kty(alg) && (k->alg == 0 || k->alg == alg);
}

/* The key for kid and alg: by kid, or the only fitting key when kid is NULL. */
static const struct mcp_jwk *
keyset_find(const struct mcp_keyset *set, const char *kid, enum mcp_jwt_alg alg)
{
	const struct mcp_jwk *found = NULL;
	size_t i, fits = 0;

	for (i = 0; i < set->n; i++) {
		const struct mcp_jwk *k = &set->keys[i];

		if (kid != NULL) {
			if (k->kid != NULL && strcmp(k->kid, kid) == 0 && key_fits(k, alg))
				return k;
			continue;
		}
		if (key_fits(k, alg)) {
			found = k;
			fits++;
		}
	}
	return fits == 1 ? found : NULL;
}

bool
mcp_keyset_has(const struct mcp_keyset *set, const char *kid, enum mcp_jwt_alg alg)
{
	return keyset_find(set, kid, alg) != NULL;
}

/* --- parsing ------------------------------------------------------------ */

void
mcp_jwt_free(struct mcp_jwt **jwtp)
{
	struct mcp_jwt *jwt = *jwtp;

	*jwtp = NULL;
	if (jwt == NULL)
		return;
	free(jwt->kid);
	json_decref(jwt->payload);
	free(jwt->sig);
	free(jwt);
}

/* Decode one base64url part as a JSON object (caller json_decref()s). */
static json_t *
part_json(const char *p, size_t len)
{
	size_t n;
	unsigned char *raw = mcp_b64url_decode(p, len, &n);
	json_t *v;

	if (raw == NULL)
		return NULL;
	v = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
	free(raw);
	if (v != NULL && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static bool
typ_ok(const char *typ)
{
	return strcasecmp(typ, "at+jwt") == 0 || strcasecmp(typ, "application/at+jwt") == 0;
}

enum mcp_jwt_fail
mcp_jwt_parse(const char *token, size_t len, struct mcp_jwt **jwt_r, struct mb_err *err)
{
	const char *dot1, *dot2, *end = token + len;
	json_t *hdr = NULL;
	const json_t *typ, *alg, *kid;
	struct mcp_jwt *jwt = NULL;
	enum mcp_jwt_fail fail = MCP_JWT_MALFORMED;

	*jwt_r = NULL;
	if (len > MCP_JWT_MAX_LEN) {
		mb_err_set(err, MB_E_INVALID, "token of %zu bytes, more than %d", len, MCP_JWT_MAX_LEN);
		return MCP_JWT_TOO_LONG;
	}
	dot1 = memchr(token, '.', len);
	dot2 = dot1 ? memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1)) : NULL;
	if (dot2 == NULL || memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)) != NULL) {
		mb_err_set(err, MB_E_INVALID, "not a JWS compact token (3 parts)");
		return MCP_JWT_MALFORMED;
	}
	if ((hdr = part_json(token, (size_t)(dot1 - token))) == NULL) {
		mb_err_set(err, MB_E_INVALID, "token header is not base64url JSON object");
		return MCP_JWT_MALFORMED;
	}
	typ = json_object_get(hdr, "typ");
	alg = json_object_get(hdr, "alg");
	kid = json_object_get(hdr, "kid");
	if (!json_is_string(alg)) {
		mb_err_set(err, MB_E_INVALID, "token header without alg");
		fail = MCP_JWT_BAD_ALG;
		goto out;
	}
	if (!json_is_string(typ) || !typ_ok(json_string_value(typ))) {
		mb_err_set(err, MB_E_INVALID, "token typ is %s%s%s, not at+jwt",
		    json_is_string(typ) ? "'" : "", json_is_string(typ) ?
		    json_string_value(typ) : "missing", json_is_string(typ) ? "'" : "");
		fail = MCP_JWT_BAD_TYP;
		goto out;
	}
	jwt = mb_xcalloc(1, sizeof(*jwt));
	if ((jwt->alg = alg_parse(json_string_value(alg))) == 0) {
		mb_err_set(err, MB_E_INVALID, "token alg '%s' not accepted", json_string_value(alg));
		fail = MCP_JWT_BAD_ALG;
		goto out;
	}
	if (json_object_get(hdr, "crit") != NULL) {
		mb_err_set(err, MB_E_INVALID, "token header has crit, which we do not understand");
		goto out;
	}
	if (kid != NULL) {
		if (!json_is_string(kid) || json_string_length(kid) > 256) {
			mb_err_set(err, MB_E_INVALID, "token kid not a short string");
			goto out;
		}
		jwt->kid = mb_xstrdup(json_string_value(kid));
	}
	if ((jwt->payload = part_json(dot1 + 1, (size_t)(dot2 - dot1 - 1))) == NULL) {
		mb_err_set(err, MB_E_INVALID, "token payload is not base64url JSON object");
		goto out;
	}
	if ((jwt->sig = mcp_b64url_decode(dot2 + 1, (size_t)(end - dot2 - 1), &jwt->sig_len)) ==
	    NULL || jwt->sig_len == 0) {
		mb_err_set(err, MB_E_INVALID, "token signature is not base64url");
		goto out;
	}
	jwt->input = token;
	jwt->input_len = (size_t)(dot2 - token);
	fail = MCP_JWT_OK;
	*jwt_r = jwt;
	jwt = NULL;
out:
	json_decref(hdr);
	mcp_jwt_free(&jwt);
	return fail;
}

const char *
mcp_jwt_kid(const struct mcp_jwt *jwt)
{
	return jwt->kid;
}

enum mcp_jwt_alg
mcp_jwt_alg(const struct mcp_jwt *jwt)
{
	return jwt->alg;
}

/* --- signatures --------------------------------------------------------- */

/* JOSE's ES256 signature is r||s, 32 bytes each; OpenSSL wants DER. */
static unsigned char *
es256_der(const unsigned char *sig, size_t len, size_t *der_len_r)
{
	ECDSA_SIG *es = NULL;
	BIGNUM *r = NULL, *s = NULL;
	unsigned char *der = NULL;
	int n;

	*der_len_r = 0;
	if (len != 64)
		return NULL;
	es = ECDSA_SIG_new();
	r = BN_bin2bn(sig, 32, NULL);
	s = BN_bin2bn(sig + 32, 32, NULL);
	if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return NULL;
	}
	n = i2d_ECDSA_SIG(es, &der);	/* es owns r and s now */
	ECDSA_SIG_free(es);
	if (n <= 0)
		return NULL;
	*der_len_r = (size_t)n;
	return der;
}

static bool
sig_ok(enum mcp_jwt_alg alg, EVP_PKEY *pkey, const char *input, size_t input_len,
    const unsigned char *sig, size_t sig_len)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	unsigned char *der = NULL;
	const char *digest = alg == MCP_ALG_EDDSA ? NULL : "SHA256";
	bool ok = false;

	if (md == NULL || EVP_DigestVerifyInit_ex(md, &pctx, digest, NULL, NULL, pkey, NULL) != 1)
		goto out;
	switch (alg) {
	case MCP_ALG_RS256:
		if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)
			goto out;
		break;
	case MCP_ALG_PS256:
		if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
		    EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, "SHA256", NULL) != 1 ||
		    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1)
			goto out;
		break;
	case MCP_ALG_ES256:
		if ((der = es256_der(sig, sig_len, &sig_len)) == NULL)
			goto out;
		sig = der;
		break;
	case MCP_ALG_EDDSA:
		if (sig_len != 64)
			goto out;
		break;
	}
	ok = EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)input, input_len) == 1;
out:
	if (!ok)
		ERR_clear_error();	/* a refused token is not an error for this thread */
	OPENSSL_free(der);
	EVP_MD_CTX_free(md);
	return ok;
}

enum mcp_jwt_fail
mcp_jwt_verify(const struct mcp_jwt *jwt, const struct mcp_keyset *set, struct mb_err *err)
{
	const struct mcp_jwk *key = keyset_find(set, jwt->kid, jwt->alg);

	if (key == NULL) {
		mb_err_set(err, MB_E_INVALID, "no key for kid '%s' and this alg in the key set",
		    jwt->kid ? jwt->kid : "(none)");
		return MCP_JWT_UNKNOWN_KEY;
	}
	if (!sig_ok(jwt->alg, key->pkey, jwt->input, jwt->input_len, jwt->sig, jwt->sig_len)) {
		mb_err_set(err, MB_E_INVALID, "signature does not verify with key '%s'",
		    key->kid ? key->kid : "(none)");
		return MCP_JWT_BAD_SIG;
	}
	return MCP_JWT_OK;
}

/* --- claims ------------------------------------------------------------- */

char *
mcp_url_canon(const char *url)
{
	const char *sep = strstr(url, "://"), *auth, *p;
	size_t len = strlen(url), i;
	char *out;

	if (sep == NULL || sep == url || len > 2048)
		return NULL;
	if (!isalpha((unsigned char)*url))
		return NULL;
	for (p = url; p < sep; p++)
		if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
			return NULL;
	auth = sep + 3;
	out = mb_xstrndup(url, len);
	/* Lower the scheme and the authority (up to the path, query or fragment). */
	for (i = 0; i < (size_t)(auth - url); i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	for (; out[i] != '\0' && strchr("/?#", out[i]) == NULL; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	if (i == (size_t)(auth - url)) {
		free(out);
		return NULL;	/* empty authority */
	}
	if (len > i && out[len - 1] == '/')
		out[len - 1] = '\0';
	return out;
}

static bool
aud_matches(const json_t *v, const char *want_canon)
{
	char *c;
	bool ok;

	if (!json_is_string(v) || (c = mcp_url_canon(json_string_value(v))) == NULL)
		return false;
	ok = strcmp(c, want_canon) == 0;
	free(c);
	return ok;
}

/*
 * A NumericDate claim: absent (0), a number (1, *v_r set) or not a number
 * (-1).  Dates before 1970 or after year 30000 count as not a number, so the
 * arithmetic on them cannot overflow.
 */
static int
numeric_date(const json_t *payload, const char *name, long long *v_r)
{
	const json_t *v = json_object_get(payload, name);
	double d;

	*v_r = 0;
	if (v == NULL)
		return 0;
	if (json_is_integer(v))
		d = (double)json_integer_value(v);
	else if (json_is_real(v))
		d = json_real_value(v);
	else
		return -1;
	if (!(d >= 0 && d < 9e11))	/* also refuses NaN */
		return -1;
	*v_r = (long long)d;
	return 1;
}

/* A short string claim without control characters, or NULL. */
static const char *
claim_str(const json_t *payload, const char *name)
{
	const json_t *v = json_object_get(payload, name);
	const char *s;
	size_t i;

	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > CLAIM_MAX)
		return NULL;
	s = json_string_value(v);
	for (i = 0; i < json_string_length(v); i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return NULL;
	return s;
}

/* An RFC 6749 scope-token: printable ASCII without space, '"' and '\'. */
static bool
scope_token_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 128)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
			return false;
	return true;
}

/* Collect the token's scopes into one space-separated string (caller frees). */
static char *
scopes_of(const json_t *payload)
{
	const json_t *scope = json_object_get(payload, "scope"), *scp = json_object_get(payload, "scp");
	const json_t *v;
	struct mb_buf b = MB_BUF_INIT(CLAIM_MAX);
	const char *s, *e;
	size_t i, n = 0;

	if (scope == NULL && json_is_string(scp))
		scope = scp;
	if (scope != NULL) {
		if (!json_is_string(scope))
			return NULL;
		for (s = json_string_value(scope); *s != '\0'; s = e) {
			while (*s == ' ')
				s++;
			if (*s == '\0')
				break;
			e = strchr(s, ' ');
			if (e == NULL)
				e = s + strlen(s);
			if (!scope_token_ok(s, (size_t)(e - s)) || ++n > SCOPES_MAX ||
			    (b.len && mb_buf_addc(&b, ' ') == -1) || mb_buf_add(&b, s, (size_t)(e - s)) == -1)
				goto bad;
		}
	} else if (scp != NULL) {
		if (!json_is_array(scp))
			return NULL;
		json_array_foreach(scp, i, v) {
			if (!json_is_string(v) || !scope_token_ok(json_string_value(v),
			    json_string_length(v)) || ++n > SCOPES_MAX ||
			    (b.len && mb_buf_addc(&b, ' ') == -1) || mb_buf_adds(&b, json_string_value(v)) == -1)
				goto bad;
		}
	}
	return b.len ? mb_buf_detach(&b, NULL) : mb_xstrdup("");
bad:
	mb_buf_release(&b);
	return NULL;
}

void
mcp_jwt_claims_release(struct mcp_jwt_claims *c)
{
	free(c->sub);
	free(c->client_id);
	free(c->scope);
	memset(c, 0, sizeof(*c));
}

enum mcp_jwt_fail
mcp_jwt_claims(const struct mcp_jwt *jwt, const struct mcp_jwt_policy *policy, time_t now,
    struct mcp_jwt_claims *claims, struct mb_err *err)
{
	const json_t *p = jwt->payload, *aud = json_object_get(p, "aud"), *v;
	const char *iss = json_string_value(json_object_get(p, "iss")), *sub, *cid;
	long long exp, nbf, iat, t = (long long)now;
	long long leeway = policy->leeway > MCP_JWT_MAX_LEEWAY ? MCP_JWT_MAX_LEEWAY : policy->leeway;
	char *want;
	bool aud_ok = false;
	size_t i;
	int r;

	memset(claims, 0, sizeof(*claims));
	if (iss == NULL || strcmp(iss, policy->issuer) != 0) {
		mb_err_set(err, MB_E_INVALID, "iss is %s%s%s, not '%s'", iss ? "'" : "",
		    iss ? iss : "missing", iss ? "'" : "", policy->issuer);
		return MCP_JWT_BAD_ISS;
	}
	if ((want = mcp_url_canon(policy->audience)) == NULL) {
		mb_err_set(err, MB_E_CONFIG, "resource URL '%s' is not absolute", policy->audience);
		return MCP_JWT_BAD_AUD;
	}
	if (json_is_array(aud)) {
		json_array_foreach(aud, i, v)
			aud_ok = aud_ok || aud_matches(v, want);
	} else {
		aud_ok = aud_matches(aud, want);
	}
	free(want);
	if (!aud_ok) {
		mb_err_set(err, MB_E_INVALID, "aud %s '%s'", aud ? "does not contain" : "missing, want",
		    policy->audience);
		return MCP_JWT_BAD_AUD;
	}
	if ((r = numeric_date(p, "exp", &exp)) != 1) {
		mb_err_set(err, MB_E_INVALID, "exp %s", r == 0 ? "missing" : "not a number");
		return r == 0 ? MCP_JWT_EXPIRED : MCP_JWT_BAD_CLAIMS;
	}
	if (t >= exp + leeway) {
		mb_err_set(err, MB_E_INVALID, "expired %lld s ago (leeway %lld s)", t - exp, leeway);
		return MCP_JWT_EXPIRED;
	}
	if ((r = numeric_date(p, "nbf", &nbf)) < 0 || numeric_date(p, "iat", &iat) < 0) {
		mb_err_set(err, MB_E_INVALID, "nbf or iat not a number");
		return MCP_JWT_BAD_CLAIMS;
	}
	if (r == 1 && nbf > t + leeway) {
		mb_err_set(err, MB_E_INVALID, "not valid for another %lld s (nbf)", nbf - t);
		return MCP_JWT_NOT_YET_VALID;
	}
	if (json_object_get(p, "iat") != NULL && iat > t + leeway) {
		mb_err_set(err, MB_E_INVALID, "issued %lld s in the future (iat)", iat - t);
		return MCP_JWT_NOT_YET_VALID;
	}
	if ((sub = claim_str(p, "sub")) == NULL) {
		mb_err_set(err, MB_E_INVALID, "sub missing or not a plain string");
		return MCP_JWT_BAD_CLAIMS;
	}
	cid = claim_str(p, "client_id");
	if (json_object_get(p, "client_id") != NULL && cid == NULL) {
		mb_err_set(err, MB_E_INVALID, "client_id not a plain string");
		return MCP_JWT_BAD_CLAIMS;
	}
	if ((claims->scope = scopes_of(p)) == NULL) {
		mb_err_set(err, MB_E_INVALID, "scope or scp malformed");
		return MCP_JWT_BAD_CLAIMS;
	}
	claims->sub = mb_xstrdup(sub);
	claims->client_id = mb_xstrdup(cid);
	claims->exp = exp;
	return MCP_JWT_OK;
}

enum mcp_jwt_fail
mcp_jwt_validate(const char *token, size_t len, const struct mcp_keyset *set,
    const struct mcp_jwt_policy *policy, time_t now, struct mcp_jwt_claims *claims,
    struct mb_err *err)
{
	struct mcp_jwt *jwt;
	enum mcp_jwt_fail fail;

	memset(claims, 0, sizeof(*claims));
	if ((fail = mcp_jwt_parse(token, len, &jwt, err)) != MCP_JWT_OK)
		return fail;
	if ((fail = mcp_jwt_verify(jwt, set, err)) == MCP_JWT_OK)
		fail = mcp_jwt_claims(jwt, policy, now, claims, err);
	mcp_jwt_free(&jwt);
	return fail;
}

bool
mcp_scope_has(const char *scopes, const char *scope)
{
	size_t n = strlen(scope);
	const char *p = scopes;

	if (n == 0 || scopes == NULL)
		return false;
	while ((p = strstr(p, scope)) != NULL) {
		if ((p == scopes || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return true;
		p += n;
	}
	return false;
}
