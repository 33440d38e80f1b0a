/*
 * JWT access tokens and the resource server's answers: tokens minted here
 * with OpenSSL (RSA, P-256 and Ed25519 keys made in-process), checked
 * against a key set built in memory, with no network.  Each refusal is
 * asserted by its class and by what the client is told.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "auth.h"
#include "jwks.h"
#include "jwt.h"
#include "mailbox/log.h"

#define ISS	"https://auth.example.com"
#define AUD	"https://mail.example.com/mcp"
#define PRM	"https://mail.example.com/.well-known/oauth-protected-resource/mcp"

static EVP_PKEY *k_rsa, *k_ec, *k_ed, *k_other_rsa, *k_other_ec;
static struct mcp_keyset *keys;
static time_t now;

/* --- minting ------------------------------------------------------------ */

/* a + sep + b in a fresh string (caller frees). */
static char *
join(const char *a, const char *sep, const char *b)
{
	size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
	char *s = malloc(n);

	snprintf(s, n, "%s%s%s", a, sep, b);
	return s;
}

static char *
b64url(const unsigned char *p, size_t n)
{
	char *out = malloc(n / 3 * 4 + 8);
	int len = EVP_EncodeBlock((unsigned char *)out, p, (int)n);
	int i;

	while (len > 0 && out[len - 1] == '=')
		len--;
	out[len] = '\0';
	for (i = 0; i < len; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	return out;
}

static char *
b64url_bn(EVP_PKEY *k, const char *param, int pad)
{
	BIGNUM *bn = NULL;
	unsigned char buf[1024];
	int n;

	assert_int_equal(EVP_PKEY_get_bn_param(k, param, &bn), 1);
	n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
	BN_free(bn);
	return b64url(buf, (size_t)n);
}

static EVP_PKEY *
keygen(const char *type)
{
	EVP_PKEY *k = NULL;

	if (strcmp(type, "RSA") == 0)
		k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	else if (strcmp(type, "EC") == 0)
		k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	else
		k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	assert_non_null(k);
	return k;
}

/* The public JWK of k, as a jansson object. */
static json_t *
jwk_of(EVP_PKEY *k, const char *kid, const char *alg)
{
	json_t *j = json_object();
	unsigned char raw[32];
	size_t rawlen = sizeof(raw);
	char *a, *b;

	json_object_set_new(j, "kid", json_string(kid));
	if (alg)
		json_object_set_new(j, "alg", json_string(alg));
	json_object_set_new(j, "use", json_string("sig"));
	if (EVP_PKEY_is_a(k, "RSA")) {
		a = b64url_bn(k, OSSL_PKEY_PARAM_RSA_N, 0);
		b = b64url_bn(k, OSSL_PKEY_PARAM_RSA_E, 0);
		json_object_set_new(j, "kty", json_string("RSA"));
		json_object_set_new(j, "n", json_string(a));
		json_object_set_new(j, "e", json_string(b));
	} else if (EVP_PKEY_is_a(k, "EC")) {
		a = b64url_bn(k, OSSL_PKEY_PARAM_EC_PUB_X, 32);
		b = b64url_bn(k, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
		json_object_set_new(j, "kty", json_string("EC"));
		json_object_set_new(j, "crv", json_string("P-256"));
		json_object_set_new(j, "x", json_string(a));
		json_object_set_new(j, "y", json_string(b));
	} else {
		assert_int_equal(EVP_PKEY_get_raw_public_key(k, raw, &rawlen), 1);
		a = b64url(raw, rawlen);
		b = NULL;
		json_object_set_new(j, "kty", json_string("OKP"));
		json_object_set_new(j, "crv", json_string("Ed25519"));
		json_object_set_new(j, "x", json_string(a));
	}
	free(a);
	free(b);
	return j;
}

/* Sign input with k as alg names it; returns the JOSE signature bytes. */
static unsigned char *
sign(EVP_PKEY *k, const char *alg, const char *input, size_t *len_r)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	unsigned char *sig;
	size_t len = 0;

	assert_int_equal(EVP_DigestSignInit_ex(md, &pctx, strcmp(alg, "EdDSA") == 0 ? NULL :
	    "SHA256", NULL, NULL, k, NULL), 1);
	if (strcmp(alg, "PS256") == 0) {
		EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
		EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
	}
	assert_int_equal(EVP_DigestSign(md, NULL, &len, (const unsigned char *)input,
	    strlen(input)), 1);
	sig = malloc(len);
	assert_int_equal(EVP_DigestSign(md, sig, &len, (const unsigned char *)input,
	    strlen(input)), 1);
	EVP_MD_CTX_free(md);
	if (strcmp(alg, "ES256") == 0) {	/* DER to JOSE r||s */
		const unsigned char *p = sig;
		ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)len);
		unsigned char *rs = malloc(64);

		assert_non_null(es);
		BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 32);
		BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 32, 32);
		ECDSA_SIG_free(es);
		free(sig);
		sig = rs;
		len = 64;
	}
	*len_r = len;
	return sig;
}

/* header.payload.signature; takes the references to hdr and payload. */
static char *
mint_raw(EVP_PKEY *k, const char *alg, json_t *hdr, json_t *payload)
{
	char *h = json_dumps(hdr, JSON_COMPACT), *p = json_dumps(payload, JSON_COMPACT);
	char *hb = b64url((unsigned char *)h, strlen(h)), *pb = b64url((unsigned char *)p,
	    strlen(p));
	char *input = join(hb, ".", pb), *tok, *sb;
	unsigned char *sig;
	size_t siglen;

	sig = sign(k, alg, input, &siglen);
	sb = b64url(sig, siglen);
	tok = join(input, ".", sb);
	free(h), free(p), free(hb), free(pb), free(input), free(sig), free(sb);
	json_decref(hdr);
	json_decref(payload);
	return tok;
}

static json_t *
header(const char *alg, const char *kid, const char *typ)
{
	json_t *h = json_pack("{s:s}", "alg", alg);

	if (kid)
		json_object_set_new(h, "kid", json_string(kid));
	if (typ)
		json_object_set_new(h, "typ", json_string(typ));
	return h;
}

/* The claims an RFC 9068 access token for AUD carries, valid for an hour. */
static json_t *
claims(void)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:s}",
	    "iss", ISS, "aud", AUD, "sub", "alice", "client_id", "claude",
	    "iat", (json_int_t)now - 10, "exp", (json_int_t)now + 3600,
	    "scope", "mail.read", "jti", "j1");
}

static char *
mint(const char *alg, json_t *payload)
{
	EVP_PKEY *k = strcmp(alg, "ES256") == 0 ? k_ec : strcmp(alg, "EdDSA") == 0 ? k_ed : k_rsa;
	const char *kid = strcmp(alg, "ES256") == 0 ? "ec1" : strcmp(alg, "EdDSA") == 0 ? "ed1" :
	    strcmp(alg, "PS256") == 0 ? "ps1" : "rsa1";

	return mint_raw(k, alg, header(alg, kid, "at+jwt"), payload);
}

static json_t *
with(json_t *payload, const char *key, json_t *v)
{
	if (v == NULL)
		json_object_del(payload, key);
	else
		json_object_set_new(payload, key, v);
	return payload;
}

static enum mcp_jwt_fail
check_leeway(const char *tok, unsigned leeway, struct mcp_jwt_claims *c)
{
	struct mcp_jwt_policy pol = { .issuer = ISS, .audience = AUD, .leeway = leeway };
	struct mb_err err = { 0 };
	enum mcp_jwt_fail f;

	f = mcp_jwt_validate(tok, strlen(tok), keys, &pol, now, c, &err);
	/* Whatever the outcome, the detail never quotes the token. */
	if (tok[0] != '\0')
		assert_null(strstr(err.msg, tok));
	if (f != MCP_JWT_OK)
		assert_true(err.msg[0] != '\0');
	return f;
}

/* Check tok with the default policy and free it. */
static enum mcp_jwt_fail
check(char *tok)
{
	struct mcp_jwt_claims c;
	enum mcp_jwt_fail f = check_leeway(tok, 60, &c);

	mcp_jwt_claims_release(&c);
	free(tok);
	return f;
}

/* --- fixtures ----------------------------------------------------------- */

static int
setup(void **state)
{
	json_t *set = json_object(), *arr = json_array(), *enc;
	char *doc;
	struct mb_err err = { 0 };

	mb_log_init("test_jwt", MB_LOG_ERR);
	now = time(NULL);
	k_rsa = keygen("RSA");
	k_other_rsa = keygen("RSA");
	k_ec = keygen("EC");
	k_other_ec = keygen("EC");
	k_ed = keygen("ED25519");
	json_array_append_new(arr, jwk_of(k_rsa, "rsa1", "RS256"));
	json_array_append_new(arr, jwk_of(k_rsa, "ps1", "PS256"));
	json_array_append_new(arr, jwk_of(k_ec, "ec1", "ES256"));
	json_array_append_new(arr, jwk_of(k_ed, "ed1", NULL));
	/* An encryption key must never verify anything. */
	enc = jwk_of(k_other_rsa, "enc1", NULL);
	json_object_set_new(enc, "use", json_string("enc"));
	json_array_append_new(arr, enc);
	json_object_set_new(set, "keys", arr);
	doc = json_dumps(set, JSON_COMPACT);
	json_decref(set);
	assert_int_equal(mcp_keyset_parse(doc, strlen(doc), &keys, &err), 0);
	free(doc);
	assert_int_equal(mcp_keyset_count(keys), 4);
	return 0;
}

static int
teardown(void **state)
{
	mcp_keyset_unref(&keys);
	EVP_PKEY_free(k_rsa);
	EVP_PKEY_free(k_other_rsa);
	EVP_PKEY_free(k_ec);
	EVP_PKEY_free(k_other_ec);
	EVP_PKEY_free(k_ed);
	return 0;
}

/* --- tokens ------------------------------------------------------------- */

static void
valid_token_of_each_alg_is_accepted(void **state)
{
	static const char *algs[] = { "RS256", "PS256", "ES256", "EdDSA" };
	struct mcp_jwt_claims c;
	size_t i;
	char *tok;

	for (i = 0; i < MB_ARRAY_LEN(algs); i++) {
		tok = mint(algs[i], claims());
		assert_int_equal(check_leeway(tok, 60, &c), MCP_JWT_OK);
		assert_string_equal(c.sub, "alice");
		assert_string_equal(c.client_id, "claude");
		assert_string_equal(c.scope, "mail.read");
		assert_int_equal(c.exp, (long long)now + 3600);
		mcp_jwt_claims_release(&c);
		free(tok);
	}
}

static void
typ_is_checked_case_insensitively_and_plain_jwt_is_refused(void **state)
{
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "rsa1", "AT+JWT"),
	    claims())), MCP_JWT_OK);
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "rsa1",
	    "application/at+jwt"), claims())), MCP_JWT_OK);
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "rsa1", "JWT"),
	    claims())), MCP_JWT_BAD_TYP);
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "rsa1", NULL),
	    claims())), MCP_JWT_BAD_TYP);
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "rsa1", "at+jwt+x"),
	    claims())), MCP_JWT_BAD_TYP);
}

static void
alg_none_and_hs256_with_the_public_key_are_refused(void **state)
{
	json_t *hj = json_pack("{s:s,s:s,s:s}", "alg", "none", "typ", "at+jwt", "kid", "rsa1");
	char *h = json_dumps(hj, JSON_COMPACT);
	json_t *cl = claims();
	char *p = json_dumps(cl, JSON_COMPACT), *hb, *pb, *tok, *pem, *sb, *input, *hp;
	unsigned char mac[32];
	unsigned int maclen = sizeof(mac);
	BIO *bio = BIO_new(BIO_s_mem());
	long pemlen;

	json_decref(cl);
	hb = b64url((unsigned char *)h, strlen(h));
	pb = b64url((unsigned char *)p, strlen(p));
	hp = join(hb, ".", pb);
	assert_int_equal(check(join(hp, ".", "")), MCP_JWT_BAD_ALG);	/* alg none: no signature */
	assert_int_equal(check(join(hp, ".", "AAAA")), MCP_JWT_BAD_ALG);
	free(h), free(hb), free(hp);

	/* The classic confusion: HS256 keyed with the RSA public key's PEM. */
	PEM_write_bio_PUBKEY(bio, k_rsa);
	pemlen = BIO_get_mem_data(bio, &pem);
	json_decref(hj);
	hj = json_pack("{s:s,s:s,s:s}", "alg", "HS256", "typ", "at+jwt", "kid", "rsa1");
	h = json_dumps(hj, JSON_COMPACT);
	json_decref(hj);
	hb = b64url((unsigned char *)h, strlen(h));
	input = join(hb, ".", pb);
	HMAC(EVP_sha256(), pem, (int)pemlen, (unsigned char *)input, strlen(input), mac, &maclen);
	sb = b64url(mac, maclen);
	tok = join(input, ".", sb);
	assert_int_equal(check(tok), MCP_JWT_BAD_ALG);
	BIO_free(bio);
	free(h), free(hb), free(pb), free(p), free(input), free(sb);
}

static void
token_signed_by_another_key_is_refused(void **state)
{
	/* Right kid, wrong key: the signature cannot verify. */
	assert_int_equal(check(mint_raw(k_other_rsa, "RS256", header("RS256", "rsa1", "at+jwt"),
	    claims())), MCP_JWT_BAD_SIG);
	assert_int_equal(check(mint_raw(k_other_ec, "ES256", header("ES256", "ec1", "at+jwt"),
	    claims())), MCP_JWT_BAD_SIG);
	/* PKCS#1 v1.5 signature presented as PS256 under the PS256 key. */
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("PS256", "ps1", "at+jwt"),
	    claims())), MCP_JWT_BAD_SIG);
}

static void
unknown_kid_and_kid_of_another_key_type_are_refused(void **state)
{
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "rsa9", "at+jwt"),
	    claims())), MCP_JWT_UNKNOWN_KEY);
	/* ES256 pointing at an RSA key: the key's type must fit the alg. */
	assert_int_equal(check(mint_raw(k_ec, "ES256", header("ES256", "rsa1", "at+jwt"),
	    claims())), MCP_JWT_UNKNOWN_KEY);
	/* RS256 pointing at the key published for PS256 only. */
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", "ps1", "at+jwt"),
	    claims())), MCP_JWT_UNKNOWN_KEY);
	/* The encryption key is not in the set at all. */
	assert_int_equal(check(mint_raw(k_other_rsa, "RS256", header("RS256", "enc1", "at+jwt"),
	    claims())), MCP_JWT_UNKNOWN_KEY);
	/* No kid: the one key published for the alg is used (rsa1 for RS256:
	 * ps1 is the same RSA key published for PS256 only). */
	assert_int_equal(check(mint_raw(k_rsa, "RS256", header("RS256", NULL, "at+jwt"),
	    claims())), MCP_JWT_OK);
	assert_int_equal(check(mint_raw(k_ed, "EdDSA", header("EdDSA", NULL, "at+jwt"),
	    claims())), MCP_JWT_OK);
}

static void
tampered_payload_fails_the_signature(void **state)
{
	/* mallory's claims under the signature made over alice's. */
	char *alice = mint("ES256", claims());
	char *mallory = mint("ES256", with(claims(), "sub", json_string("mallory")));
	char *forged;

	*strrchr(mallory, '.') = '\0';
	forged = join(mallory, "", strrchr(alice, '.'));
	assert_int_equal(check(forged), MCP_JWT_BAD_SIG);
	free(alice);
	free(mallory);
}

static void
expiry_and_not_before_respect_the_leeway(void **state)
{
	struct mcp_jwt_claims c;
	char *tok;

	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_integer(now - 61)))),
	    MCP_JWT_EXPIRED);
	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_integer(now - 60)))),
	    MCP_JWT_EXPIRED);
	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_integer(now - 59)))),
	    MCP_JWT_OK);
	assert_int_equal(check(mint("RS256", with(claims(), "exp", NULL))), MCP_JWT_EXPIRED);
	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_string("soon")))),
	    MCP_JWT_BAD_CLAIMS);
	assert_int_equal(check(mint("RS256", with(claims(), "nbf", json_integer(now + 61)))),
	    MCP_JWT_NOT_YET_VALID);
	assert_int_equal(check(mint("RS256", with(claims(), "nbf", json_integer(now + 60)))),
	    MCP_JWT_OK);
	assert_int_equal(check(mint("RS256", with(claims(), "iat", json_integer(now + 3600)))),
	    MCP_JWT_NOT_YET_VALID);
	/* Absurd dates are not dates (and cannot overflow the arithmetic). */
	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_integer(INT64_MAX)))),
	    MCP_JWT_BAD_CLAIMS);
	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_integer(INT64_MIN)))),
	    MCP_JWT_BAD_CLAIMS);
	assert_int_equal(check(mint("RS256", with(claims(), "nbf", json_real(-1.0)))),
	    MCP_JWT_BAD_CLAIMS);
	/* A real-valued exp (RFC 7519 NumericDate) counts too. */
	assert_int_equal(check(mint("RS256", with(claims(), "exp", json_real((double)now + 5.5)))),
	    MCP_JWT_OK);

	/* With no leeway, a token that expired a second ago is refused. */
	tok = mint("EdDSA", with(claims(), "exp", json_integer(now - 1)));
	assert_int_equal(check_leeway(tok, 0, &c), MCP_JWT_EXPIRED);
	assert_int_equal(check_leeway(tok, 5, &c), MCP_JWT_OK);
	mcp_jwt_claims_release(&c);
	free(tok);
	/* A leeway above 60 s is held to 60. */
	tok = mint("EdDSA", with(claims(), "exp", json_integer(now - 61)));
	assert_int_equal(check_leeway(tok, 3600, &c), MCP_JWT_EXPIRED);
	free(tok);
}

static void
audience_must_name_this_resource(void **state)
{
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_string("https://other.example.com/api")))), MCP_JWT_BAD_AUD);
	assert_int_equal(check(mint("ES256", with(claims(), "aud", NULL))), MCP_JWT_BAD_AUD);
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_string("https://mail.example.com/mcp/other")))), MCP_JWT_BAD_AUD);
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_string("https://mail.example.com")))), MCP_JWT_BAD_AUD);
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_pack("[s,s]", "https://a.example", "https://b.example")))), MCP_JWT_BAD_AUD);
	/* An array that contains us; case of scheme and host; one trailing slash. */
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_pack("[s,s]", "https://other.example.com/api", AUD)))), MCP_JWT_OK);
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_string("HTTPS://Mail.Example.COM/mcp/")))), MCP_JWT_OK);
	/* The path is case-sensitive. */
	assert_int_equal(check(mint("ES256", with(claims(), "aud",
	    json_string("https://mail.example.com/MCP")))), MCP_JWT_BAD_AUD);
}

static void
issuer_must_match_exactly(void **state)
{
	assert_int_equal(check(mint("PS256", with(claims(), "iss",
	    json_string("https://evil.example.com")))), MCP_JWT_BAD_ISS);
	assert_int_equal(check(mint("PS256", with(claims(), "iss", json_string(ISS "/")))),
	    MCP_JWT_BAD_ISS);
	assert_int_equal(check(mint("PS256", with(claims(), "iss", NULL))), MCP_JWT_BAD_ISS);
	assert_int_equal(check(mint("PS256", with(claims(), "iss", json_integer(1)))),
	    MCP_JWT_BAD_ISS);
}

static void
subject_and_scopes_are_read_from_either_claim(void **state)
{
	struct mcp_jwt_claims c;
	char *tok;

	tok = mint("RS256", with(with(claims(), "scope", NULL), "scp",
	    json_pack("[s,s]", "mail.read", "mail.write")));
	assert_int_equal(check_leeway(tok, 60, &c), MCP_JWT_OK);
	assert_string_equal(c.scope, "mail.read mail.write");
	assert_true(mcp_scope_has(c.scope, "mail.write"));
	assert_false(mcp_scope_has(c.scope, "mail"));
	mcp_jwt_claims_release(&c);
	free(tok);

	tok = mint("RS256", with(with(claims(), "scope", json_string("  openid   mail.read ")),
	    "client_id", NULL));
	assert_int_equal(check_leeway(tok, 60, &c), MCP_JWT_OK);
	assert_string_equal(c.scope, "openid mail.read");
	assert_null(c.client_id);
	mcp_jwt_claims_release(&c);
	free(tok);

	assert_int_equal(check(mint("RS256", with(claims(), "sub", NULL))), MCP_JWT_BAD_CLAIMS);
	assert_int_equal(check(mint("RS256", with(claims(), "sub", json_string("a\nb")))),
	    MCP_JWT_BAD_CLAIMS);
	assert_int_equal(check(mint("RS256", with(claims(), "scope", json_string("a \"b\"")))),
	    MCP_JWT_BAD_CLAIMS);
	assert_int_equal(check(mint("RS256", with(claims(), "scope", json_integer(3)))),
	    MCP_JWT_BAD_CLAIMS);
}

static void
garbage_opaque_and_oversize_tokens_are_malformed(void **state)
{
	static const char *bad[] = {
		"",
		"not a token",
		"2YotnFZFEjr1zCsicMWpAA",	/* RFC 6749's opaque token */
		"a.b",
		"a.b.c.d",
		"..",
		"e!J.e30.AAAA",			/* outside the alphabet */
		"eyJ==.e30.AAAA",		/* padding */
		"eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCJ9.A.AAAA",	/* length 1 mod 4 */
		"W10.e30.AAAA",			/* header is [] */
		"eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCJ9.W10.AAAA",	/* payload is [] */
		"eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCJ9.e30.",	/* no signature */
	};
	char *big;
	size_t i;

	for (i = 0; i < MB_ARRAY_LEN(bad); i++)
		assert_int_equal(check(mb_xstrdup(bad[i])), MCP_JWT_MALFORMED);
	/* Duplicate members are refused, not resolved either way. */
	assert_int_equal(check(mb_xstrdup("eyJhbGciOiJSUzI1NiIsImFsZyI6Im5vbmUiLCJ0eXAiOiJhdCtqd3QifQ"
	    ".e30.AAAA")), MCP_JWT_MALFORMED);
	/* crit names an extension we do not know. */
	assert_int_equal(check(mint_raw(k_rsa, "RS256", json_pack("{s:s,s:s,s:s,s:[s]}", "alg",
	    "RS256", "kid", "rsa1", "typ", "at+jwt", "crit", "exp"), claims())), MCP_JWT_MALFORMED);

	big = malloc(MCP_JWT_MAX_LEN + 2);
	memset(big, 'A', MCP_JWT_MAX_LEN + 1);
	big[MCP_JWT_MAX_LEN + 1] = '\0';
	assert_int_equal(check(big), MCP_JWT_TOO_LONG);
}

static void
oversize_but_well_signed_token_is_refused_by_length(void **state)
{
	char *pad = malloc(MCP_JWT_MAX_LEN);
	char *tok;

	memset(pad, 'x', MCP_JWT_MAX_LEN - 1);
	pad[MCP_JWT_MAX_LEN - 1] = '\0';
	tok = mint("ES256", with(claims(), "pad", json_string(pad)));
	free(pad);
	assert_true(strlen(tok) > MCP_JWT_MAX_LEN);
	assert_int_equal(check(tok), MCP_JWT_TOO_LONG);
}

/* --- base64url, URLs, key sets ------------------------------------------ */

static void
base64url_decodes_strictly(void **state)
{
	size_t n;
	unsigned char *p;

	p = mcp_b64url_decode("QQ", 2, &n);
	assert_non_null(p);
	assert_int_equal(n, 1);
	assert_int_equal(p[0], 'A');
	free(p);
	p = mcp_b64url_decode("-_8", 3, &n);	/* 0xfb 0xff */
	assert_non_null(p);
	assert_int_equal(n, 2);
	assert_int_equal(p[0], 0xfb);
	assert_int_equal(p[1], 0xff);
	free(p);
	p = mcp_b64url_decode("", 0, &n);
	assert_non_null(p);
	assert_int_equal(n, 0);
	free(p);
	assert_null(mcp_b64url_decode("QQ==", 4, &n));
	assert_null(mcp_b64url_decode("+/8", 3, &n));
	assert_null(mcp_b64url_decode("QUJDR", 5, &n));
	assert_null(mcp_b64url_decode("QU JD", 5, &n));
}

static void
urls_are_canonicalised_for_audience_checks(void **state)
{
	char *c;

	c = mcp_url_canon("HTTPS://Mail.Example.COM/MCP/");
	assert_string_equal(c, "https://mail.example.com/MCP");
	free(c);
	c = mcp_url_canon("https://mail.example.com/");
	assert_string_equal(c, "https://mail.example.com");
	free(c);
	assert_null(mcp_url_canon("mail.example.com/mcp"));
	assert_null(mcp_url_canon("https:///mcp"));
	assert_null(mcp_url_canon("://x"));
}

static void
keyset_refuses_broken_keys_and_skips_foreign_ones(void **state)
{
	struct mcp_keyset *set = NULL;
	struct mb_err err = { 0 };
	json_t *j;
	char *doc;
	EVP_PKEY *small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	static const char *skipped =
	    "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"},"
	    "{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"},"
	    "{\"kty\":\"RSA\",\"alg\":\"RS512\",\"n\":\"AQAB\",\"e\":\"AQAB\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AA\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"key_ops\":[\"sign\"],\"x\":\"AA\"}]}";
	/* P-256 x and y that are not a point on the curve. */
	static const char *off_curve = "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"k\","
	    "\"x\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
	    "\"y\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}";

	assert_int_equal(mcp_keyset_parse(skipped, strlen(skipped), &set, &err), 0);
	assert_int_equal(mcp_keyset_count(set), 0);
	mcp_keyset_unref(&set);
	assert_null(set);

	/* An RSA key with e = 1 (every message its own signature). */
	j = jwk_of(k_rsa, "e1", "RS256");
	json_object_set_new(j, "e", json_string("AQ"));
	j = json_pack("{s:[o]}", "keys", j);
	doc = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_int_equal(mcp_keyset_parse(doc, strlen(doc), &set, &err), -1);
	assert_null(set);
	free(doc);
	mb_err_clear(&err);

	assert_int_equal(mcp_keyset_parse(off_curve, strlen(off_curve), &set, &err), -1);
	assert_null(set);
	assert_int_equal(err.code, MB_E_PROTO);

	mb_err_clear(&err);
	assert_int_equal(mcp_keyset_parse("{\"keys\":{}}", 11, &set, &err), -1);
	mb_err_clear(&err);
	assert_int_equal(mcp_keyset_parse("[", 1, &set, &err), -1);

	/* An RSA key shorter than 2048 bits is not trusted. */
	assert_non_null(small);
	j = json_pack("{s:[o]}", "keys", jwk_of(small, "small", "RS256"));
	doc = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	mb_err_clear(&err);
	assert_int_equal(mcp_keyset_parse(doc, strlen(doc), &set, &err), 0);
	assert_int_equal(mcp_keyset_count(set), 0);
	assert_false(mcp_keyset_has(set, "small", MCP_ALG_RS256));
	mcp_keyset_unref(&set);
	free(doc);
	EVP_PKEY_free(small);
}

/* --- the resource server's answers -------------------------------------- */

static const char *
table_lookup(const char *name)
{
	static const char *tbl[][2] = {
		{ "MCP_AUTH", "jwt" },
		{ "MCP_RESOURCE_URL", "https://Mail.Example.com/mcp" },
		{ "MCP_OAUTH_ISSUER", ISS },
	};
	size_t i;

	for (i = 0; i < MB_ARRAY_LEN(tbl); i++)
		if (strcmp(tbl[i][0], name) == 0)
			return tbl[i][1];
	return NULL;
}

static struct mcp_auth *
auth_make(void)
{
	struct mcp_auth_conf conf;
	struct mcp_auth *a = NULL;
	struct mb_err err = { 0 };

	assert_int_equal(mcp_auth_conf_load(&conf, table_lookup, &err), 0);
	assert_string_equal(conf.resource_url, AUD);	/* canonical */
	assert_int_equal(conf.leeway, 60);
	assert_int_equal(mcp_auth_new_with_keys(&conf, keys, &a, &err), 0);
	mcp_auth_conf_release(&conf);
	return a;
}

static void
auth_answers_carry_the_exact_challenges(void **state)
{
	struct mcp_auth *a = auth_make();
	struct mcp_auth_result r;
	char *tok, *hv;

	assert_string_equal(mcp_auth_header_name(a), "Authorization");
	assert_string_equal(mcp_auth_metadata_url(a), PRM);

	mcp_auth_check(a, NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	assert_string_equal(r.www_authenticate,
	    "Bearer resource_metadata=\"" PRM "\", scope=\"mail.read\"");
	assert_null(r.sub);
	mcp_auth_result_release(&r);

	/* Another scheme is no bearer credential: no error code either. */
	mcp_auth_check(a, "Basic YWxpY2U6c2VjcmV0", NULL, &r);
	assert_int_equal(r.status, 401);
	assert_string_equal(r.www_authenticate,
	    "Bearer resource_metadata=\"" PRM "\", scope=\"mail.read\"");
	mcp_auth_result_release(&r);

	tok = mint("ES256", with(claims(), "exp", json_integer(now - 3600)));
	hv = join("Bearer ", "", tok);
	mcp_auth_check(a, hv, NULL, &r);
	assert_int_equal(r.status, 401);
	assert_string_equal(r.www_authenticate, "Bearer error=\"invalid_token\", "
	    "error_description=\"token expired\", resource_metadata=\"" PRM "\", "
	    "scope=\"mail.read\"");
	assert_null(strstr(r.reason, tok));
	assert_non_null(strstr(r.reason, "expired"));
	mcp_auth_result_release(&r);
	free(tok), free(hv);

	mcp_auth_check(a, "Bearer 2YotnFZFEjr1zCsicMWpAA", NULL, &r);
	assert_int_equal(r.status, 401);
	assert_string_equal(r.www_authenticate, "Bearer error=\"invalid_token\", "
	    "error_description=\"malformed token\", resource_metadata=\"" PRM "\", "
	    "scope=\"mail.read\"");
	mcp_auth_result_release(&r);

	/* A valid token with read only: reads go on, writes get 403. */
	tok = mint("EdDSA", with(claims(), "scope", json_string("openid mail.read")));
	hv = join("bearer   ", tok, " ");
	mcp_auth_check(a, hv, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_null(r.www_authenticate);
	assert_string_equal(r.sub, "alice");
	assert_string_equal(r.client_id, "claude");
	assert_false(r.may_write);
	mcp_auth_result_release(&r);
	mcp_auth_check(a, hv, mcp_auth_scope_write(a), &r);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.www_authenticate, "Bearer error=\"insufficient_scope\", "
	    "scope=\"mail.write openid mail.read\", resource_metadata=\"" PRM "\"");
	assert_string_equal(r.sub, "alice");
	mcp_auth_result_release(&r);
	free(tok), free(hv);

	/* The write scope is the broader one: it satisfies a read tool. */
	tok = mint("RS256", with(claims(), "scope", json_string("mail.write")));
	hv = join("Bearer ", "", tok);
	mcp_auth_check(a, hv, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(r.may_write);
	mcp_auth_result_release(&r);
	free(tok), free(hv);

	/* Missing the read scope: 403 on a read tool. */
	tok = mint("RS256", with(claims(), "scope", json_string("openid")));
	hv = join("Bearer ", "", tok);
	mcp_auth_check(a, hv, NULL, &r);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.www_authenticate, "Bearer error=\"insufficient_scope\", "
	    "scope=\"mail.read openid\", resource_metadata=\"" PRM "\"");
	assert_false(r.may_write);
	mcp_auth_result_release(&r);
	free(tok), free(hv);
	mcp_auth_free(&a);
	assert_null(a);
}

static void
auth_serves_protected_resource_metadata(void **state)
{
	struct mcp_auth *a = auth_make();
	char *doc = mcp_auth_metadata_json(a);

	assert_string_equal(doc, "{\"resource\":\"" AUD "\",\"authorization_servers\":[\"" ISS
	    "\"],\"scopes_supported\":[\"mail.read\",\"mail.write\"],"
	    "\"bearer_methods_supported\":[\"header\"],\"resource_name\":\"Mailbox (imap-mcp)\"}");
	free(doc);
	assert_true(mcp_auth_is_metadata_path(a, "/.well-known/oauth-protected-resource/mcp"));
	assert_true(mcp_auth_is_metadata_path(a, "/.well-known/oauth-protected-resource"));
	assert_false(mcp_auth_is_metadata_path(a, "/.well-known/oauth-protected-resource/x"));
	assert_false(mcp_auth_is_metadata_path(a, "/mcp"));
	mcp_auth_free(&a);
}

static const char *cur_tbl[8][2];

static const char *
cur_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < MB_ARRAY_LEN(cur_tbl) && cur_tbl[i][0]; i++)
		if (strcmp(cur_tbl[i][0], name) == 0)
			return cur_tbl[i][1];
	return NULL;
}

/* Load a config of "KEY=VALUE" pairs (NULL-terminated); return 0/-1 and err. */
static int
load(struct mb_err *err, ...)
{
	struct mcp_auth_conf conf;
	va_list ap;
	const char *kv;
	size_t i = 0;
	int r;
	static char store[8][256];

	memset(cur_tbl, 0, sizeof(cur_tbl));
	va_start(ap, err);
	while ((kv = va_arg(ap, const char *)) != NULL) {
		snprintf(store[i], sizeof(store[i]), "%s", kv);
		*strchr(store[i], '=') = '\0';
		cur_tbl[i][0] = store[i];
		cur_tbl[i][1] = store[i] + strlen(store[i]) + 1;
		i++;
	}
	va_end(ap);
	mb_err_clear(err);
	r = mcp_auth_conf_load(&conf, cur_lookup, err);
	mcp_auth_conf_release(&conf);
	return r;
}

static void
config_errors_name_the_key(void **state)
{
	struct mb_err err = { 0 };

	assert_int_equal(load(&err, "MCP_AUTH=none", NULL), 0);
	assert_int_equal(load(&err, "MCP_AUTH=maybe", NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_AUTH"));
	assert_int_equal(load(&err, "MCP_OAUTH_ISSUER=" ISS, NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_RESOURCE_URL"));
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_OAUTH_ISSUER"));
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_JWT_LEEWAY=61", NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_JWT_LEEWAY"));
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_JWT_LEEWAY=-1", NULL), -1);
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_JWT_LEEWAY=0", NULL), 0);
	/* Plain http only to a loopback host. */
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD,
	    "MCP_OAUTH_ISSUER=http://auth.example.com", NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_OAUTH_ISSUER"));
	assert_non_null(strstr(err.msg, "loopback"));
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=http://127.0.0.1:8080/mcp",
	    "MCP_OAUTH_ISSUER=http://localhost:9000", NULL), 0);
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD "#frag", "MCP_OAUTH_ISSUER=" ISS,
	    NULL), -1);
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_JWKS_URL=ftp://auth.example.com/jwks", NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_JWKS_URL"));
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_SCOPE_READ=mail read", NULL), -1);
	assert_non_null(strstr(err.msg, "MCP_SCOPE_READ"));
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_AUTH_HEADER=Cf-Access-Jwt-Assertion", NULL), 0);
	assert_int_equal(load(&err, "MCP_RESOURCE_URL=" AUD, "MCP_OAUTH_ISSUER=" ISS,
	    "MCP_AUTH_HEADER=X: y", NULL), -1);
}

static void
auth_none_is_refused_on_public_listeners(void **state)
{
	static const char *ok[] = { "127.0.0.1:8080", "127.1.2.3:1", "[::1]:8080", "::1",
	    "localhost:8080", "unix:/run/imap-mcp/mcpd.sock", "127.0.0.1" };
	static const char *bad[] = { "0.0.0.0:8080", "[::]:8080", ":8080", "192.168.1.5:8080",
	    "mail.example.com:443", "unix:", "[::ffff:10.0.0.1]:80", "" };
	struct mb_err err = { 0 };
	size_t i;

	for (i = 0; i < MB_ARRAY_LEN(ok); i++)
		assert_int_equal(mcp_auth_listen_check(MCP_AUTH_MODE_NONE, ok[i], &err), 0);
	for (i = 0; i < MB_ARRAY_LEN(bad); i++) {
		mb_err_clear(&err);
		assert_int_equal(mcp_auth_listen_check(MCP_AUTH_MODE_NONE, bad[i], &err), -1);
		assert_non_null(strstr(err.msg, "MCP_AUTH=none"));
		assert_int_equal(mcp_auth_listen_check(MCP_AUTH_MODE_JWT, bad[i], &err), 0);
	}
}

static void
auth_header_option_takes_the_bare_token(void **state)
{
	struct mcp_auth_conf conf = { .mode = MCP_AUTH_MODE_JWT, .resource_url = AUD,
	    .issuer = ISS, .header = "Cf-Access-Jwt-Assertion", .leeway = 30 };
	struct mcp_auth *a = NULL;
	struct mcp_auth_result r;
	struct mb_err err = { 0 };
	char *tok = mint("PS256", claims());

	assert_int_equal(mcp_auth_new_with_keys(&conf, keys, &a, &err), 0);
	assert_string_equal(mcp_auth_header_name(a), "Cf-Access-Jwt-Assertion");
	mcp_auth_check(a, tok, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.sub, "alice");
	mcp_auth_result_release(&r);
	mcp_auth_check(a, "", NULL, &r);
	assert_int_equal(r.status, 401);
	assert_null(strstr(r.www_authenticate, "error="));
	mcp_auth_result_release(&r);
	free(tok);
	mcp_auth_free(&a);

	/* MCP_AUTH=none lets everything through, with no subject. */
	conf = (struct mcp_auth_conf){ .mode = MCP_AUTH_MODE_NONE };
	assert_int_equal(mcp_auth_new_with_keys(&conf, keys, &a, &err), 0);
	mcp_auth_check(a, NULL, "mail.write", &r);
	assert_int_equal(r.status, 200);
	assert_true(r.may_write);
	assert_null(r.sub);
	assert_null(mcp_auth_metadata_json(a));
	assert_false(mcp_auth_is_metadata_path(a, "/.well-known/oauth-protected-resource"));
	mcp_auth_result_release(&r);
	mcp_auth_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_token_of_each_alg_is_accepted),
		cmocka_unit_test(typ_is_checked_case_insensitively_and_plain_jwt_is_refused),
		cmocka_unit_test(alg_none_and_hs256_with_the_public_key_are_refused),
		cmocka_unit_test(token_signed_by_another_key_is_refused),
		cmocka_unit_test(unknown_kid_and_kid_of_another_key_type_are_refused),
		cmocka_unit_test(tampered_payload_fails_the_signature),
		cmocka_unit_test(expiry_and_not_before_respect_the_leeway),
		cmocka_unit_test(audience_must_name_this_resource),
		cmocka_unit_test(issuer_must_match_exactly),
		cmocka_unit_test(subject_and_scopes_are_read_from_either_claim),
		cmocka_unit_test(garbage_opaque_and_oversize_tokens_are_malformed),
		cmocka_unit_test(oversize_but_well_signed_token_is_refused_by_length),
		cmocka_unit_test(base64url_decodes_strictly),
		cmocka_unit_test(urls_are_canonicalised_for_audience_checks),
		cmocka_unit_test(keyset_refuses_broken_keys_and_skips_foreign_ones),
		cmocka_unit_test(auth_answers_carry_the_exact_challenges),
		cmocka_unit_test(auth_serves_protected_resource_metadata),
		cmocka_unit_test(config_errors_name_the_key),
		cmocka_unit_test(auth_none_is_refused_on_public_listeners),
		cmocka_unit_test(auth_header_option_takes_the_bare_token),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
