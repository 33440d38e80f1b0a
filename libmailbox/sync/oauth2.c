/*
 * The OAuth 2.0 token client: include/mailbox/oauth2.h.  One POST per call,
 * form-encoded, no redirects, a capped answer; every buffer that held a
 * token or the client secret is wiped before it is freed (jansson's own
 * copies inside a parsed document are the exception: it has no wiping free).
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mailbox/buf.h"
#include "mailbox/http.h"
#include "mailbox/conf.h"
#include "mailbox/log.h"
#include "mailbox/oauth2.h"
#include "mailbox/url.h"
#include "mailbox/util.h"

#define OAUTH2_ANSWER_MAX	(64u * 1024)	/* a token answer is a few KB (Microsoft's ~4) */
#define OAUTH2_TOKEN_MAX	16384		/* longer is not a token we can put in SASL */
#define OAUTH2_TIMEOUT_S	30

/* --- answers ------------------------------------------------------------- */

/* A token: printable ASCII, no space (RFC 6750's b64token and then some). */
static bool
token_ok(const char *s)
{
	size_t n = 0;

	for (; s[n] != '\0'; n++)
		if (s[n] <= 0x20 || s[n] >= 0x7f)
			return false;
	return n > 0 && n <= OAUTH2_TOKEN_MAX;
}

/* Peer text for an error message: printable ASCII, at most 120 bytes, scrubbed. */
static void
peer_text(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (; in != NULL && *in != '\0' && o + 1 < size && o < 120; in++)
		out[o++] = (*in >= 0x20 && *in < 0x7f) ? *in : '?';
	out[o] = '\0';
	mb_log_scrub(out, size);
}

static const char *
json_str(json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

/* A number of seconds, as a JSON integer or (some servers) a digit string. */
static int64_t
json_seconds(json_t *doc, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(doc, key);
	const char *s;
	unsigned long long n;

	if (json_is_integer(v) && json_integer_value(v) >= 0)
		n = (unsigned long long)json_integer_value(v);
	else if ((s = json_string_value(v)) != NULL && mb_conf_parse_uint(s, 0, UINT64_MAX, &n) == 0)
		;
	else
		return dflt;
	return n > 10ULL * 366 * 86400 ? 10LL * 366 * 86400 : (int64_t)n;
}

/*
 * The error part of an answer that is not a success: MB_E_AUTH for what
 * the server refused on purpose, MB_E_TEMP for its trouble.  *code_r (may be
 * NULL) gets the "error" value, cut to size.
 */
static int
answer_error(long status, json_t *doc, const char *what, char *code_r, size_t size,
    struct mb_err *err)
{
	char code[64], desc[128];

	peer_text(doc ? json_str(doc, "error") : NULL, code, sizeof(code));
	peer_text(doc ? json_str(doc, "error_description") : NULL, desc, sizeof(desc));
	if (code_r != NULL)
		snprintf(code_r, size, "%s", code);
	if (status >= 500 || status == 429 || (*code == '\0' && status != 400 && status != 401))
		return mb_err_set(err, MB_E_TEMP, "%s: HTTP status %ld%s%s", what, status,
		    *code ? ": " : "", code);
	if (*code == '\0')
		return mb_err_set(err, MB_E_AUTH, "%s: HTTP status %ld without an OAuth error",
		    what, status);
	return mb_err_set(err, MB_E_AUTH, "%s: %s%s%s%s", what, code, *desc ? " (" : "",
	    desc, *desc ? ")" : "");
}

static json_t *
answer_load(const char *body, size_t len)
{
	json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);

	if (doc != NULL && !json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

void
mb_oauth2_token_release(struct mb_oauth2_token *tok)
{
	if (tok->access_token != NULL)
		mb_freezero(tok->access_token, strlen(tok->access_token));
	if (tok->refresh_token != NULL)
		mb_freezero(tok->refresh_token, strlen(tok->refresh_token));
	*tok = (struct mb_oauth2_token){ 0 };
}

/* The token answer's fields, once the status said success. */
static int
parse_token_doc(json_t *doc, const char *user, struct mb_oauth2_token *tok_r,
    struct mb_err *err)
{
	const char *at = json_str(doc, "access_token"), *rt = json_str(doc, "refresh_token");
	const char *type = json_str(doc, "token_type");

	if (at == NULL || !token_ok(at))
		return mb_err_set(err, MB_E_PROTO, "token endpoint: the answer holds no usable "
		    "access_token");
	/* Registered before anything else can fail, so no later line shows it. */
	mb_log_add_token(user, at);
	if (rt != NULL) {
		if (!token_ok(rt))
			return mb_err_set(err, MB_E_PROTO, "token endpoint: the refresh_token in the "
			    "answer is not a token");
		mb_log_add_token(user, rt);
	}
	if (type != NULL && strcasecmp(type, "Bearer") != 0) {
		char t[32];

		peer_text(type, t, sizeof(t));
		return mb_err_set(err, MB_E_PROTO, "token endpoint: token_type '%s', want Bearer", t);
	}
	tok_r->access_token = mb_xstrdup(at);
	tok_r->refresh_token = rt ? mb_xstrdup(rt) : NULL;
	tok_r->expires_in = json_seconds(doc, "expires_in", 0);
	return 0;
}

static int
parse_token(long status, const char *body, size_t len, const char *user,
    struct mb_oauth2_token *tok_r, char *code_r, size_t size, struct mb_err *err)
{
	json_t *doc = answer_load(body, len);
	int r;

	*tok_r = (struct mb_oauth2_token){ 0 };
	if (code_r != NULL && size > 0)
		*code_r = '\0';
	if (status != 200) {
		r = answer_error(status, doc, "token endpoint", code_r, size, err);
	} else if (doc == NULL) {
		r = mb_err_set(err, MB_E_PROTO, "token endpoint: the answer is not a JSON object");
	} else {
		r = parse_token_doc(doc, user, tok_r, err);
		if (r == -1)
			mb_oauth2_token_release(tok_r);
	}
	json_decref(doc);
	return r;
}

int
mb_oauth2_parse_token(long status, const char *body, size_t len,
    struct mb_oauth2_token *tok_r, struct mb_err *err)
{
	return parse_token(status, body, len, NULL, tok_r, NULL, 0, err);
}

void
mb_oauth2_device_release(struct mb_oauth2_device *d)
{
	if (d->device_code != NULL)
		mb_freezero(d->device_code, strlen(d->device_code));
	free(d->user_code);
	free(d->verification_uri);
	free(d->verification_uri_complete);
	*d = (struct mb_oauth2_device){ 0 };
}

/* A URI shown to the user: http(s), printable, no spaces. */
static bool
uri_ok(const char *s)
{
	return s != NULL && (strncasecmp(s, "https://", 8) == 0 ||
	    strncasecmp(s, "http://", 7) == 0) && token_ok(s) && strlen(s) < 2048;
}

int
mb_oauth2_parse_device(long status, const char *body, size_t len, struct mb_oauth2_device *d_r,
    struct mb_err *err)
{
	json_t *doc = answer_load(body, len);
	const char *dc, *uc, *uri, *uric;
	int r = -1;

	*d_r = (struct mb_oauth2_device){ 0 };
	if (status != 200) {
		r = answer_error(status, doc, "device endpoint", NULL, 0, err);
		goto out;
	}
	if (doc == NULL) {
		mb_err_set(err, MB_E_PROTO, "device endpoint: the answer is not a JSON object");
		goto out;
	}
	dc = json_str(doc, "device_code");
	uc = json_str(doc, "user_code");
	/* Google's answer says verification_url (its pre-RFC name). */
	uri = json_str(doc, "verification_uri");
	if (uri == NULL)
		uri = json_str(doc, "verification_url");
	uric = json_str(doc, "verification_uri_complete");
	if (dc == NULL || !token_ok(dc) || uc == NULL || !token_ok(uc) || strlen(uc) > 64 ||
	    !uri_ok(uri)) {
		mb_err_set(err, MB_E_PROTO, "device endpoint: the answer lacks a device_code, "
		    "user_code or verification_uri");
		goto out;
	}
	mb_log_add_token(NULL, dc);
	d_r->device_code = mb_xstrdup(dc);
	d_r->user_code = mb_xstrdup(uc);
	d_r->verification_uri = mb_xstrdup(uri);
	d_r->verification_uri_complete = uri_ok(uric) ? mb_xstrdup(uric) : NULL;
	d_r->interval = (unsigned)json_seconds(doc, "interval", 5);
	if (d_r->interval == 0)
		d_r->interval = 5;
	if (d_r->interval > 300)
		d_r->interval = 300;
	d_r->expires_in = (unsigned)json_seconds(doc, "expires_in", 600);
	r = 0;
out:
	json_decref(doc);
	return r;
}

/* --- one POST ------------------------------------------------------------ */

/* name=value&, the value form-encoded; the encoded copy is wiped. */
static void
form_add(struct mb_buf *b, CURL *h, const char *name, const char *value)
{
	char *enc;

	if (value == NULL)
		return;
	enc = curl_easy_escape(h, value, 0);
	if (enc == NULL)
		mb_fatalx("out of memory");
	mb_buf_addf(b, "%s%s=%s", b->len ? "&" : "", name, enc);
	explicit_bzero(enc, strlen(enc));
	curl_free(enc);
}

struct field {
	const char	*name;
	const char	*value;	/* NULL: left out */
};

/*
 * POST the fields (and client_id, client_secret) to url; *status_r, and the
 * answer into *body_r (the caller wipes and releases it).  -1 with err for a
 * transport failure only: any HTTP status is the caller's to read.
 */
static int
post(const struct mb_oauth2_client *c, const char *url, const char *what,
    const struct field *f, size_t nf, long *status_r, struct mb_buf *body_r, struct mb_err *err)
{
	struct mb_http_sink s = { .body = MB_BUF_INIT(OAUTH2_ANSWER_MAX), .toobig = false };
	struct mb_buf form = MB_BUF_INIT(4 * OAUTH2_TOKEN_MAX);
	char cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	CURL *h;
	CURLcode rc;

	*status_r = 0;
	if (mb_url_fetchable(url, what, err) == -1)
		return -1;
	if ((h = mb_http_new(url, &s, cerr, &hdrs)) == NULL)
		return mb_err_set(err, MB_E_INTERNAL, "curl_easy_init failed");
	for (size_t i = 0; i < nf; i++)
		form_add(&form, h, f[i].name, f[i].value);
	form_add(&form, h, "client_id", c->client_id);
	form_add(&form, h, "client_secret", c->client_secret);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)(c->timeout_s ? c->timeout_s : OAUTH2_TIMEOUT_S));
	curl_easy_setopt(h, CURLOPT_USERAGENT, "imap-mcp-syncd");
	/* Not COPYPOSTFIELDS: curl reads our buffer, so the one copy is wiped below. */
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, form.data);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)form.len);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status_r);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	explicit_bzero(form.data, form.len);
	mb_buf_release(&form);
	if (rc != CURLE_OK) {
		explicit_bzero(s.body.data, s.body.len);
		mb_buf_release(&s.body);
		if (s.toobig || rc == CURLE_FILESIZE_EXCEEDED)
			return mb_err_set(err, MB_E_PROTO, "POST %s: more than %u bytes", url,
			    OAUTH2_ANSWER_MAX);
		return mb_err_set(err, MB_E_TEMP, "POST %s: %s", url,
		    cerr[0] ? cerr : curl_easy_strerror(rc));
	}
	*body_r = s.body;
	return 0;
}

static void
wipe(struct mb_buf *b)
{
	explicit_bzero(b->data, b->len);
	mb_buf_release(b);
}

int
mb_oauth2_refresh(const struct mb_oauth2_client *c, const char *refresh_token,
    struct mb_oauth2_token *tok_r, struct mb_err *err)
{
	const struct field f[] = {
		{ "grant_type", "refresh_token" },
		{ "refresh_token", refresh_token },
		{ "scope", c->scope && *c->scope ? c->scope : NULL },
	};
	struct mb_buf body = MB_BUF_INIT(0);
	long status;
	int r;

	*tok_r = (struct mb_oauth2_token){ 0 };
	mb_log_add_token(c->user, refresh_token);
	if (post(c, c->token_url, "IMAP_OAUTH_TOKEN_URL", f, MB_ARRAY_LEN(f), &status, &body,
	    err) == -1)
		return -1;
	r = parse_token(status, body.data, body.len, c->user, tok_r, NULL, 0, err);
	wipe(&body);
	return r;
}

int
mb_oauth2_device_start(const struct mb_oauth2_client *c, const char *device_url,
    struct mb_oauth2_device *d_r, struct mb_err *err)
{
	const struct field f[] = { { "scope", c->scope && *c->scope ? c->scope : NULL } };
	struct mb_buf body = MB_BUF_INIT(0);
	long status;
	int r;

	*d_r = (struct mb_oauth2_device){ 0 };
	if (post(c, device_url, "IMAP_OAUTH_DEVICE_URL", f, MB_ARRAY_LEN(f), &status, &body,
	    err) == -1)
		return -1;
	r = mb_oauth2_parse_device(status, body.data, body.len, d_r, err);
	wipe(&body);
	return r;
}

int
mb_oauth2_device_poll(const struct mb_oauth2_client *c, const char *device_code,
    struct mb_oauth2_token *tok_r, struct mb_err *err)
{
	const struct field f[] = {
		{ "grant_type", "urn:ietf:params:oauth:grant-type:device_code" },
		{ "device_code", device_code },
	};
	struct mb_buf body = MB_BUF_INIT(0);
	char code[64];
	long status;
	int r;

	*tok_r = (struct mb_oauth2_token){ 0 };
	if (post(c, c->token_url, "IMAP_OAUTH_TOKEN_URL", f, MB_ARRAY_LEN(f), &status, &body,
	    err) == -1)
		return -1;
	r = parse_token(status, body.data, body.len, c->user, tok_r, code, sizeof(code), err);
	wipe(&body);
	if (r == 0)
		return MB_OAUTH2_DONE;
	/* RFC 8628 §3.5: the two answers that mean "ask again". */
	if (strcmp(code, "authorization_pending") == 0) {
		mb_err_clear(err);
		return MB_OAUTH2_PENDING;
	}
	if (strcmp(code, "slow_down") == 0) {
		mb_err_clear(err);
		return MB_OAUTH2_SLOW_DOWN;
	}
	return -1;
}
