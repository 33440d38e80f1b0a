/*
 * OAuth 2.0 for IMAP login: what syncd makes of a token endpoint's and a
 * device endpoint's answers (libmailbox/sync/oauth2.c), and of the
 * IMAP_AUTH / IMAP_OAUTH_* settings with and without a provider preset
 * (syncd/oauth.c).  The exchanges with a real server are in
 * tests/integration/test_syncd_oauth.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/log.h"
#include "mailbox/oauth2.h"
#include "syncd.h"

static const struct {
	const char		*name;
	long			 status;
	const char		*body;
	int			 rc;
	enum mb_errcode		 code;		/* when rc == -1 */
	const char		*in_msg;	/* when rc == -1: the message names it */
	const char		*access;	/* when rc == 0 */
	const char		*refresh;	/* when rc == 0; NULL: none in the answer */
	int64_t			 expires_in;
} token_cases[] = {
	{ "a rotating server's answer", 200, "{\"access_token\":\"at-1\",\"expires_in\":60,"
	    "\"refresh_token\":\"rt-2\",\"token_type\":\"Bearer\"}", 0, 0, NULL, "at-1", "rt-2", 60 },
	{ "Google's, without a new refresh token", 200, "{\"access_token\":\"ya29.x\","
	    "\"expires_in\":3599,\"scope\":\"https://mail.google.com/\",\"token_type\":\"Bearer\"}",
	    0, 0, NULL, "ya29.x", NULL, 3599 },
	{ "expires_in as a string", 200, "{\"access_token\":\"abc\",\"expires_in\":\"4223\","
	    "\"token_type\":\"bearer\"}", 0, 0, NULL, "abc", NULL, 4223 },
	{ "no expires_in", 200, "{\"access_token\":\"abc\"}", 0, 0, NULL, "abc", NULL, 0 },
	{ "a revoked refresh token", 400, "{\"error\":\"invalid_grant\",\"error_description\":"
	    "\"grant request is invalid\"}", -1, MB_E_AUTH, "invalid_grant (grant request is "
	    "invalid)", NULL, NULL, 0 },
	{ "a wrong client secret", 401, "{\"error\":\"invalid_client\"}", -1, MB_E_AUTH,
	    "invalid_client", NULL, NULL, 0 },
	{ "the server's trouble", 503, "<html>busy</html>", -1, MB_E_TEMP, "HTTP status 503",
	    NULL, NULL, 0 },
	{ "a 400 that is not OAuth", 400, "bad request", -1, MB_E_AUTH, "without an OAuth error",
	    NULL, NULL, 0 },
	{ "no access token", 200, "{\"token_type\":\"Bearer\"}", -1, MB_E_PROTO, "no usable",
	    NULL, NULL, 0 },
	{ "a token SASL cannot carry", 200, "{\"access_token\":\"a b\"}", -1, MB_E_PROTO,
	    "no usable", NULL, NULL, 0 },
	{ "a token with a control character", 200, "{\"access_token\":\"a\\u0001b\"}", -1,
	    MB_E_PROTO, "no usable", NULL, NULL, 0 },
	{ "not a bearer token", 200, "{\"access_token\":\"abc\",\"token_type\":\"mac\"}", -1,
	    MB_E_PROTO, "token_type 'mac'", NULL, NULL, 0 },
	{ "not JSON", 200, "access_token=abc", -1, MB_E_PROTO, "not a JSON object", NULL, NULL,
	    0 },
	{ "a JSON array", 200, "[\"abc\"]", -1, MB_E_PROTO, "not a JSON object", NULL, NULL, 0 },
	{ "a duplicate key", 200, "{\"access_token\":\"a\",\"access_token\":\"b\"}", -1,
	    MB_E_PROTO, "not a JSON object", NULL, NULL, 0 },
};

static void
token_answers_are_read_as_a_user_would_expect(void **state)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(token_cases); i++) {
		struct mb_oauth2_token tok;
		struct mb_err err = { 0 };
		int rc;

		print_message("%s\n", token_cases[i].name);
		rc = mb_oauth2_parse_token(token_cases[i].status, token_cases[i].body,
		    strlen(token_cases[i].body), &tok, &err);
		assert_int_equal(rc, token_cases[i].rc);
		if (rc == -1) {
			assert_int_equal(err.code, token_cases[i].code);
			assert_non_null(strstr(err.msg, token_cases[i].in_msg));
			assert_null(tok.access_token);
			continue;
		}
		assert_string_equal(tok.access_token, token_cases[i].access);
		if (token_cases[i].refresh == NULL)
			assert_null(tok.refresh_token);
		else
			assert_string_equal(tok.refresh_token, token_cases[i].refresh);
		assert_int_equal(tok.expires_in, token_cases[i].expires_in);
		mb_oauth2_token_release(&tok);
		assert_null(tok.access_token);
	}
	mb_log_clear_secrets();
}

static void
a_server_echoing_a_token_in_its_error_does_not_put_it_in_the_message(void **state)
{
	static const char body[] = "{\"error\":\"invalid_grant\",\"error_description\":"
	    "\"refresh token rt-secret-123456 is revoked\"}";
	struct mb_oauth2_token tok;
	struct mb_err err = { 0 };

	mb_log_add_token("alice", "rt-secret-123456");
	assert_int_equal(mb_oauth2_parse_token(400, body, strlen(body), &tok, &err), -1);
	assert_int_equal(err.code, MB_E_AUTH);
	assert_null(strstr(err.msg, "rt-secret-123456"));
	assert_non_null(strstr(err.msg, "<hidden>"));
	mb_log_clear_secrets();
}

static void
device_answers(void **state)
{
	static const char google[] = "{\"device_code\":\"AH-1Ng\",\"user_code\":\"GQVQ-JKEC\","
	    "\"expires_in\":1800,\"interval\":5,\"verification_url\":\"https://www.google.com/device\"}";
	static const char rfc[] = "{\"device_code\":\"dc\",\"user_code\":\"FJJC-NFWM\","
	    "\"verification_uri\":\"http://127.0.0.1:1/device\",\"verification_uri_complete\":"
	    "\"http://127.0.0.1:1/device?user_code=FJJC-NFWM\",\"expires_in\":600}";
	static const char no_code[] = "{\"device_code\":\"dc\",\"verification_uri\":"
	    "\"https://x/device\"}";
	static const char bad_uri[] = "{\"device_code\":\"dc\",\"user_code\":\"A\","
	    "\"verification_uri\":\"javascript:alert(1)\"}";
	struct mb_oauth2_device d;
	struct mb_err err = { 0 };

	assert_int_equal(mb_oauth2_parse_device(200, google, strlen(google), &d, &err), 0);
	assert_string_equal(d.verification_uri, "https://www.google.com/device");
	assert_string_equal(d.user_code, "GQVQ-JKEC");
	assert_null(d.verification_uri_complete);
	assert_int_equal(d.interval, 5);
	assert_int_equal(d.expires_in, 1800);
	mb_oauth2_device_release(&d);
	assert_int_equal(mb_oauth2_parse_device(200, rfc, strlen(rfc), &d, &err), 0);
	assert_string_equal(d.verification_uri_complete,
	    "http://127.0.0.1:1/device?user_code=FJJC-NFWM");
	assert_int_equal(d.interval, 5);	/* RFC 8628 §3.2: 5 when not given */
	mb_oauth2_device_release(&d);
	assert_int_equal(mb_oauth2_parse_device(200, no_code, strlen(no_code), &d, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
	mb_err_clear(&err);
	assert_int_equal(mb_oauth2_parse_device(200, bad_uri, strlen(bad_uri), &d, &err), -1);
	assert_int_equal(err.code, MB_E_PROTO);
	mb_log_clear_secrets();
}

static void
provider_presets_fill_what_is_not_set(void **state)
{
	struct sd_conf c = { .imap_auth = MB_IMAP_AUTH_OAUTH2 };
	struct mb_err err = { 0 };

	c.oauth_provider = strdup("Microsoft");
	c.oauth_client_id = strdup("client-1");
	c.oauth_scope = strdup("custom.scope");
	assert_int_equal(sd_oauth_conf_check(&c, &err), 0);
	assert_string_equal(c.oauth_token_url,
	    "https://login.microsoftonline.com/common/oauth2/v2.0/token");
	assert_string_equal(c.oauth_device_url,
	    "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode");
	assert_string_equal(c.oauth_scope, "custom.scope");	/* a setting wins */
	free(c.oauth_provider);
	free(c.oauth_token_url);
	free(c.oauth_device_url);
	free(c.oauth_scope);
	c.oauth_provider = strdup("google");
	c.oauth_token_url = NULL;
	c.oauth_device_url = NULL;
	c.oauth_scope = NULL;
	assert_int_equal(sd_oauth_conf_check(&c, &err), 0);
	assert_string_equal(c.oauth_scope, "https://mail.google.com/");
	assert_string_equal(c.oauth_token_url, "https://oauth2.googleapis.com/token");
	free(c.oauth_provider);
	free(c.oauth_token_url);
	free(c.oauth_device_url);
	free(c.oauth_scope);
	free(c.oauth_client_id);
}

static void
oauth_settings_that_cannot_work_are_refused(void **state)
{
	struct sd_conf c = { .imap_auth = MB_IMAP_AUTH_OAUTH2 };
	struct mb_err err = { 0 };

	c.oauth_provider = strdup("yahoo");
	assert_int_equal(sd_oauth_conf_check(&c, &err), -1);
	assert_int_equal(err.code, MB_E_CONFIG);
	assert_non_null(strstr(err.msg, "IMAP_OAUTH_PROVIDER: 'yahoo'"));
	free(c.oauth_provider);
	c.oauth_provider = NULL;
	mb_err_clear(&err);
	assert_int_equal(sd_oauth_conf_check(&c, &err), -1);
	assert_non_null(strstr(err.msg, "IMAP_OAUTH_TOKEN_URL"));
	mb_err_clear(&err);
	c.oauth_token_url = strdup("https://as.example/token");
	assert_int_equal(sd_oauth_conf_check(&c, &err), -1);
	assert_non_null(strstr(err.msg, "IMAP_OAUTH_CLIENT_ID"));
	free(c.oauth_token_url);
	/* With passwords none of it matters. */
	c = (struct sd_conf){ .imap_auth = MB_IMAP_AUTH_PASSWORD };
	mb_err_clear(&err);
	assert_int_equal(sd_oauth_conf_check(&c, &err), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(token_answers_are_read_as_a_user_would_expect),
		cmocka_unit_test(a_server_echoing_a_token_in_its_error_does_not_put_it_in_the_message),
		cmocka_unit_test(device_answers),
		cmocka_unit_test(provider_presets_fill_what_is_not_set),
		cmocka_unit_test(oauth_settings_that_cannot_work_are_refused),
	};

	mb_log_init("test", MB_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
