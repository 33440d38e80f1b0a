/*
 * fuzz_jwt: the JWT parser and validator, the JWKS parser and the resource
 * server's decision on arbitrary bytes, against a fixed in-memory key set
 * (no network, a fixed clock).  The seeds in tests/fuzz/corpus/jwt/ include
 * tokens validly signed by these keys (P-256, Ed25519, RSA), so mutations
 * reach the claim checks, and the key set itself (jwks.json), so inputs
 * starting with '{' exercise the JWK parser.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "jwt.h"
#include "mailbox/log.h"

#define NOW	1900000000	/* between the seeds' iat and exp */

static const char jwks[] =
	"{\"keys\":[{\"kty\":\"EC\",\"x\":\"6okeuad4ctU163_RfKKqSYETw2WtuG1uclLjHvcdDxg\""
	",\"y\":\"9qtMT2oWvCkCEpxEHJl4UpZl6wdb8NbhV6kXKm38xoc\",\"crv\":\"P-256\",\"kid\""
	":\"f-ec\",\"use\":\"sig\"},{\"crv\":\"Ed25519\",\"x\":\"SwmKIbr8K4yyZUkxsBI7joHMzdD"
	"xDQ-7GTJnPla__OE\",\"kty\":\"OKP\",\"kid\":\"f-ed\",\"use\":\"sig\"},{\"kty\":\"RSA\",\""
	"n\":\"6IxpeGk1jdP_-DcqXnwksULuEk1ZxOMOv9SeI59VRBGKlf0ZUdjgUos7da4OQ7EOMQ"
	"T4XkuDDePiamAyF0g_CyvC4Uzi0T5j32H-pjgJ0R4asnv5UCR7ZabmQCD2OX5x0xmfnvVm"
	"P88v7qh9632MFcs8dm01jFvpT0MNggIme3crACfhFn4zvrNcXOP5BUvtPbEyP_-fMxrKT5"
	"udXPTWPHE_5jYKYqta42ePnYjdpiinL0OwmuSbHKd38OsGXpGqITQEidb0s1asCOzbAEgF"
	"as5mlyjjXWrI3GN71RYE5i7snojEHcHmaPnuYHZBqqccvtqH6OP77yrdNoIh6fvtVw\",\"e"
	"\":\"AQAB\",\"kid\":\"f-rsa\",\"use\":\"sig\"}]}";

static struct mcp_keyset *keys;
static struct mcp_auth *auth;

static time_t
fixed_clock(void)
{
	return NOW;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct mcp_auth_conf conf = { .mode = MCP_AUTH_MODE_JWT,
	    .resource_url = "https://mail.example.com/mcp", .issuer = "https://auth.example.com",
	    .leeway = 60, .now = fixed_clock };
	struct mb_err err = { 0 };

	mb_log_init("fuzz_jwt", MB_LOG_ERR);
	if (mcp_keyset_parse(jwks, sizeof(jwks) - 1, &keys, &err) == -1 ||
	    mcp_keyset_count(keys) != 3 || mcp_auth_new_with_keys(&conf, keys, &auth, &err) == -1)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_jwt_policy pol = { .issuer = "https://auth.example.com",
	    .audience = "https://mail.example.com/mcp", .leeway = 60 };
	struct mcp_jwt_claims claims;
	struct mcp_auth_result res;
	struct mcp_keyset *set = NULL;
	struct mb_err err = { 0 };
	char *hdr;

	if (mcp_jwt_validate((const char *)data, size, keys, &pol, NOW, &claims, &err) ==
	    MCP_JWT_OK) {
		/* What the validator hands out must be well-formed. */
		if (claims.sub == NULL || claims.scope == NULL || strlen(claims.sub) == 0)
			abort();
		mcp_jwt_claims_release(&claims);
	}
	if (size > 0 && data[0] == '{') {
		mb_err_clear(&err);
		if (mcp_keyset_parse((const char *)data, size, &set, &err) == 0)
			mcp_keyset_unref(&set);
	}
	/* The decision, as the HTTP layer would ask for it (NUL ends the header). */
	hdr = malloc(size + 8);
	memcpy(hdr, "Bearer ", 7);
	memcpy(hdr + 7, data, size);
	hdr[size + 7] = '\0';
	mcp_auth_check(auth, hdr, NULL, &res);
	if (res.status != 200 && res.status != 401 && res.status != 403)
		abort();
	if ((res.status == 401 || res.status == 403) && res.www_authenticate == NULL)
		abort();
	mcp_auth_result_release(&res);
	free(hdr);
	return 0;
}
