/*
 * The logger: secrets never reach a line in any of their wire forms, and a
 * peer's control characters cannot forge a second line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"

/* Run fn with stderr redirected to a pipe; return what it wrote (caller frees). */
static char *
capture(void (*fn)(void))
{
	int fds[2], saved = dup(STDERR_FILENO);
	char *out = calloc(1, 65536);
	ssize_t n, off = 0;

	assert_int_equal(pipe(fds), 0);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	while ((n = read(fds[0], out + off, 65535 - (size_t)off)) > 0)
		off += n;
	close(fds[0]);
	return out;
}

static void
log_secret_forms(void)
{
	/* plain, quoted, base64 (LOGIN), base64 of AUTH=PLAIN with and without authzid */
	mb_log_info("login alice s3cr\"et!");
	mb_log_info("quoted \"s3cr\\\"et!\"");
	mb_log_info("auth login czNjciJldCE=");
	mb_log_info("auth plain AGFsaWNlAHMzY3IiZXQh");
	mb_log_info("auth plain YWxpY2UAYWxpY2UAczNjciJldCE=");
	mb_log_debug("debug line with s3cr\"et! too");
}

static void
log_hides_every_form_of_the_password(void **state)
{
	char *out;

	mb_log_init("test", MB_LOG_DEBUG);
	assert_int_equal(mb_log_add_secret("alice", "s3cr\"et!"), 0);
	out = capture(log_secret_forms);
	assert_null(strstr(out, "s3cr\"et!"));
	assert_null(strstr(out, "s3cr\\\"et!"));
	assert_null(strstr(out, "czNjciJldCE"));
	assert_null(strstr(out, "AGFsaWNlAHMzY3IiZXQh"));
	assert_null(strstr(out, "YWxpY2UAYWxpY2UAczNjciJldCE"));
	assert_non_null(strstr(out, "login alice <hidden>"));
	assert_non_null(strstr(out, "debug line with <hidden> too"));
	free(out);
	mb_log_clear_secrets();
}

/*
 * An access token as it goes on the wire: SASL initial responses, computed
 * here with OpenSSL rather than copied from log.c, so the test checks the
 * forms a server really sees.
 */
static char tok_xoauth2[512], tok_bearer[512], tok_bearer_noa[512];
static const char tok[] = "ya29.a0Af-tok_EN\"x/42+";

static void
b64(const char *in, size_t len, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)len);
}

static void
log_token_forms(void)
{
	mb_log_info("token %s", tok);
	mb_log_debug("imap >>> A1 AUTHENTICATE XOAUTH2 %s", tok_xoauth2);
	mb_log_debug("imap >>> A1 AUTHENTICATE OAUTHBEARER %s", tok_bearer);
	mb_log_warnx("server echoed %s", tok_bearer_noa);
	mb_log_error("refresh failed for Bearer %s", tok);
}

static void
log_hides_every_form_of_an_oauth_token(void **state)
{
	char raw[256], *out;
	int n;

	n = snprintf(raw, sizeof(raw), "user=alice@example.org\001auth=Bearer %s\001\001", tok);
	b64(raw, (size_t)n, tok_xoauth2);
	n = snprintf(raw, sizeof(raw), "n,a=alice@example.org,\001auth=Bearer %s\001\001", tok);
	b64(raw, (size_t)n, tok_bearer);
	n = snprintf(raw, sizeof(raw), "n,,\001auth=Bearer %s\001\001", tok);
	b64(raw, (size_t)n, tok_bearer_noa);
	mb_log_init("test", MB_LOG_DEBUG);
	assert_int_equal(mb_log_add_token("alice@example.org", tok), 0);
	out = capture(log_token_forms);
	assert_null(strstr(out, tok));
	assert_null(strstr(out, tok_xoauth2));
	assert_null(strstr(out, tok_bearer));
	assert_null(strstr(out, tok_bearer_noa));
	/* The token's characters must not survive inside a base64 run either:
	 * the unpadded prefix is what a truncated line would show. */
	tok_xoauth2[strlen(tok_xoauth2) - 4] = '\0';
	assert_null(strstr(out, tok_xoauth2));
	assert_non_null(strstr(out, "XOAUTH2 <hidden>"));
	assert_non_null(strstr(out, "OAUTHBEARER <hidden>"));
	assert_non_null(strstr(out, "refresh failed for Bearer <hidden>"));
	free(out);
	mb_log_clear_secrets();
}

static char rolled[8][32];

static void
log_rolled_tokens(void)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(rolled); i++)
		mb_log_info("t %s", rolled[i]);
}

static void
log_keeps_the_newest_tokens_and_never_fills(void **state)
{
	char t[32], *out;

	mb_log_init("test", MB_LOG_DEBUG);
	assert_int_equal(mb_log_add_secret("alice", "the-password"), 0);
	/* A daemon refreshing hourly for a year: the table must not fill. */
	for (int i = 0; i < 9000; i++) {
		snprintf(t, sizeof(t), "old-token-%05d", i);
		assert_int_equal(mb_log_add_token("alice", t), 0);
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(rolled); i++) {
		snprintf(rolled[i], sizeof(rolled[i]), "token-number-%zu", i);
		assert_int_equal(mb_log_add_token("alice", rolled[i]), 0);
	}
	out = capture(log_rolled_tokens);
	/* The four newest are hidden; the password, registered first, still is. */
	for (size_t i = 4; i < MB_ARRAY_LEN(rolled); i++)
		assert_null(strstr(out, rolled[i]));
	assert_non_null(strstr(out, "t token-number-0"));	/* wiped: long expired */
	free(out);
	mb_log_clear_secrets();
}

static void
log_password_survives_token_rolls(void **state)
{
	char t[32], *out;

	mb_log_init("test", MB_LOG_DEBUG);
	assert_int_equal(mb_log_add_secret("alice", "s3cr\"et!"), 0);
	for (int i = 0; i < 50; i++) {
		snprintf(t, sizeof(t), "roll-token-%03d", i);
		assert_int_equal(mb_log_add_token("alice", t), 0);
	}
	out = capture(log_secret_forms);
	assert_null(strstr(out, "s3cr\"et!"));
	assert_null(strstr(out, "YWxpY2UAYWxpY2UAczNjciJldCE"));
	free(out);
	mb_log_clear_secrets();
}

static void
log_forged_line(void)
{
	mb_log_warnx("server said: %s", "NO bad\n<3>syncd: forged");
}

static void
log_escapes_control_characters(void **state)
{
	char *out;

	mb_log_init("test", MB_LOG_DEBUG);
	out = capture(log_forged_line);
	assert_non_null(strstr(out, "NO bad\\x0a<3>syncd: forged"));
	assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out));	/* one line */
	free(out);
}

static void
log_below_level(void)
{
	mb_log_debug("invisible");
	mb_log_info("visible");
}

static void
log_respects_the_level(void **state)
{
	char *out;

	mb_log_init("test", MB_LOG_INFO);
	out = capture(log_below_level);
	assert_null(strstr(out, "invisible"));
	assert_non_null(strstr(out, "visible"));
	free(out);
}

static void
buf_refuses_to_grow_past_its_cap(void **state)
{
	struct mb_buf b = MB_BUF_INIT(8);

	assert_int_equal(mb_buf_adds(&b, "12345678"), 0);
	assert_int_equal(mb_buf_addc(&b, '9'), -1);
	assert_string_equal(b.data, "12345678");	/* intact after a refused append */
	assert_int_equal(mb_buf_addf(&b, "%d", 1), -1);
	mb_buf_release(&b);
	assert_string_equal(b.data, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(log_hides_every_form_of_the_password),
		cmocka_unit_test(log_hides_every_form_of_an_oauth_token),
		cmocka_unit_test(log_keeps_the_newest_tokens_and_never_fills),
		cmocka_unit_test(log_password_survives_token_rolls),
		cmocka_unit_test(log_escapes_control_characters),
		cmocka_unit_test(log_respects_the_level),
		cmocka_unit_test(buf_refuses_to_grow_past_its_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
