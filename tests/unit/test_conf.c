/*
 * Configuration: what an operator sees when a setting is right, missing,
 * wrong, or secret; and the rules for the password file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mailbox/conf.h"

struct tconf {
	char		*host;
	unsigned	 port;
	unsigned	 tls;
	char		*pw_file;
	char		*token;
	char		*folders;
	unsigned	 interval;
};

static const char *const tls_choices[] = { "implicit", "starttls", "none", NULL };

static const struct mb_conf_key keys[] = {
	{ "IMAP_HOST", MB_CONF_STR, offsetof(struct tconf, host), NULL, 0, 0, MB_CF_REQUIRED, NULL, NULL },
	{ "IMAP_PORT", MB_CONF_UINT, offsetof(struct tconf, port), "993", 1, 65535, 0, NULL, NULL },
	{ "IMAP_TLS", MB_CONF_ENUM, offsetof(struct tconf, tls), "implicit", 0, 0, 0, tls_choices, NULL },
	{ "IMAP_PASSWORD_FILE", MB_CONF_PATH, offsetof(struct tconf, pw_file), NULL, 0, 0, 0, NULL, NULL },
	{ "API_TOKEN", MB_CONF_STR, offsetof(struct tconf, token), NULL, 0, 0, MB_CF_SECRET, NULL, NULL },
	{ "SYNC_FOLDERS", MB_CONF_STR, offsetof(struct tconf, folders), NULL, 0, 0, 0, NULL, NULL },
	{ "SYNC_INTERVAL", MB_CONF_UINT, offsetof(struct tconf, interval), "3600", 60, 86400, 0, NULL, NULL },
};
#define NKEYS	MB_ARRAY_LEN(keys)

/* The "environment" of a test: a NULL-terminated list of NAME=VALUE. */
static const char *const *test_env;

static const char *
test_lookup(const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; test_env && test_env[i]; i++)
		if (strncmp(test_env[i], name, len) == 0 && test_env[i][len] == '=')
			return test_env[i] + len + 1;
	return NULL;
}

static char tmpdir[64];

static int
setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_conf.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	test_env = NULL;
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *
write_file(const char *name, const char *text, mode_t mode)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

/* Load with file text (NULL: no file) and the current test_env. */
static int
load(const char *text, struct tconf *c, enum mb_conf_source *src, struct mb_err *err)
{
	const char *path = text ? write_file("env", text, 0644) : NULL;

	memset(c, 0, sizeof(*c));
	mb_err_clear(err);
	return mb_conf_load(keys, NKEYS, c, path, test_lookup, src, err);
}

static void
conf_defaults_then_file_then_environment(void **state)
{
	static const char *const env[] = { "IMAP_PORT=143", "UNRELATED_VAR=1", NULL };
	enum mb_conf_source src[NKEYS];
	struct tconf c;
	struct mb_err err;

	test_env = env;
	assert_int_equal(load("# a comment\n"
	    "IMAP_HOST = mail.example.org   # trailing comment\n"
	    "export IMAP_PORT=1143\n"
	    "IMAP_TLS=\"StartTLS\"\n"
	    "SYNC_FOLDERS='INBOX,Archive #2'\n"
	    "SYNC_INTERVAL=\n"
	    "\n", &c, src, &err), 0);
	assert_string_equal(c.host, "mail.example.org");
	assert_int_equal(c.port, 143);		/* the environment wins over the file */
	assert_int_equal(src[1], MB_CONF_FROM_ENV);
	assert_int_equal(c.tls, 1);
	assert_string_equal(c.folders, "INBOX,Archive #2");
	assert_int_equal(c.interval, 3600);	/* empty value: the default */
	assert_int_equal(src[6], MB_CONF_FROM_DEFAULT);
	assert_int_equal(src[0], MB_CONF_FROM_FILE);
	assert_null(c.pw_file);
	assert_int_equal(src[3], MB_CONF_UNSET);
	mb_conf_release(keys, NKEYS, &c);
	assert_null(c.host);
	mb_conf_release(keys, NKEYS, &c);	/* idempotent */
}

static void
conf_errors_name_the_key(void **state)
{
	static const struct { const char *file; const char *env; const char *needle; } cases[] = {
		{ "IMAP_HOST=h\nIMAP_HSOT=x\n", NULL, "env:2: unknown key IMAP_HSOT" },
		{ "IMAP_HOST=h\nIMAP_PORT=99999\n", NULL, "IMAP_PORT: '99999' is not a number in 1..65535" },
		{ "IMAP_HOST=h\nIMAP_PORT=-1\n", NULL, "IMAP_PORT" },
		{ "IMAP_HOST=h\nIMAP_PORT= 12x\n", NULL, "IMAP_PORT: '12x'" },
		{ "IMAP_HOST=h\nIMAP_PORT=0x10\n", NULL, "IMAP_PORT" },
		{ "IMAP_HOST=h\nIMAP_PORT=184467440737095516160\n", NULL, "IMAP_PORT" },
		{ "IMAP_HOST=h\n", "SYNC_INTERVAL=59", "environment: SYNC_INTERVAL" },
		{ "IMAP_HOST=h\nIMAP_TLS=ssl\n", NULL, "IMAP_TLS: 'ssl' is not one of implicit|starttls|none" },
		{ "IMAP_HOST=h\nIMAP_PASSWORD_FILE=relative/pw\n", NULL, "IMAP_PASSWORD_FILE: must be an absolute path" },
		{ "IMAP_PORT=143\n", NULL, "IMAP_HOST: required setting is missing" },
		{ "IMAP_HOST=\"unterminated\n", NULL, "IMAP_HOST: unterminated quote" },
		{ "IMAP_HOST='a' b\n", NULL, "IMAP_HOST: text after the closing quote" },
		{ "IMAP_HOST=a\nIMAP_HOST=b\n", NULL, "IMAP_HOST: set twice" },
		{ "just some words\n", NULL, "env:1: expected KEY=VALUE" },
		{ "API_TOKEN=x\n", NULL, "IMAP_HOST" },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		const char *env[] = { cases[i].env, NULL };
		struct tconf c;
		struct mb_err err;

		test_env = env;
		assert_int_equal(load(cases[i].file, &c, NULL, &err), -1);
		assert_int_equal(err.code, MB_E_CONFIG);
		if (strstr(err.msg, cases[i].needle) == NULL)
			fail_msg("case %zu: '%s' does not contain '%s'", i, err.msg, cases[i].needle);
		mb_conf_release(keys, NKEYS, &c);
	}
}

static void
conf_missing_file_is_an_error(void **state)
{
	struct tconf c = { 0 };
	struct mb_err err = { 0 };

	assert_int_equal(mb_conf_load(keys, NKEYS, &c, "/nonexistent/syncd.conf", NULL, NULL,
	    &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/syncd.conf"));
	mb_conf_release(keys, NKEYS, &c);
}

static void
conf_print_hides_secrets(void **state)
{
	static const char *const env[] = { "API_TOKEN=tok-s3cret-value", NULL };
	enum mb_conf_source src[NKEYS];
	struct tconf c;
	struct mb_err err;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;

	test_env = env;
	assert_int_equal(load("IMAP_HOST=h.example\n", &c, src, &err), 0);
	f = open_memstream(&out, &outlen);
	mb_conf_print(keys, NKEYS, &c, src, f);
	fclose(f);
	assert_null(strstr(out, "tok-s3cret-value"));
	assert_non_null(strstr(out, "API_TOKEN=<hidden>\t# environment"));
	assert_non_null(strstr(out, "IMAP_HOST=h.example\t# file"));
	assert_non_null(strstr(out, "IMAP_PORT=993\t# default"));
	assert_non_null(strstr(out, "IMAP_TLS=implicit"));
	assert_non_null(strstr(out, "#IMAP_PASSWORD_FILE=\t# unset"));
	free(out);
	mb_conf_release(keys, NKEYS, &c);
}

static void
conf_parse_uint_checks_everything(void **state)
{
	unsigned long long v;

	assert_int_equal(mb_conf_parse_uint("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(mb_conf_parse_uint("", 0, 100, &v), -1);
	assert_int_equal(mb_conf_parse_uint(" 4", 0, 100, &v), -1);
	assert_int_equal(mb_conf_parse_uint("+4", 0, 100, &v), -1);
	assert_int_equal(mb_conf_parse_uint("4 ", 0, 100, &v), -1);
	assert_int_equal(mb_conf_parse_uint("101", 0, 100, &v), -1);
	assert_int_equal(mb_conf_parse_uint("99999999999999999999999", 0, ~0ULL, &v), -1);
}

static void
password_read_strips_one_newline(void **state)
{
	struct mb_err err = { 0 };
	char *pw = NULL;
	const char *path = write_file("pw", "p4ss word\"\\\n", 0600);

	assert_int_equal(mb_conf_read_password(path, NULL, &pw, &err), 0);
	assert_string_equal(pw, "p4ss word\"\\");
	mb_conf_password_free(&pw);
	assert_null(pw);
	mb_conf_password_free(&pw);

	path = write_file("pwcrlf", "crlf\r\n", 0400);
	assert_int_equal(mb_conf_read_password(path, NULL, &pw, &err), 0);
	assert_string_equal(pw, "crlf");
	mb_conf_password_free(&pw);
}

static void
password_from_credentials_directory(void **state)
{
	struct mb_err err = { 0 };
	char *pw = NULL;

	write_file("imap-password", "from-systemd", 0600);
	assert_int_equal(mb_conf_read_password(NULL, tmpdir, &pw, &err), 0);
	assert_string_equal(pw, "from-systemd");
	mb_conf_password_free(&pw);
}

static void
password_refused_when_others_could_read_it(void **state)
{
	static const struct { const char *text; mode_t mode; const char *needle; } cases[] = {
		{ "secret-one\n", 0640, "mode 0640 lets group or others read it" },
		{ "secret-one\n", 0604, "mode 0604" },
		{ "", 0600, "empty" },
		{ "\n", 0600, "empty" },
		{ "two\nlines\n", 0600, "more than one line" },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++) {
		struct mb_err err = { 0 };
		char *pw = NULL;
		const char *path = write_file("pw", cases[i].text, cases[i].mode);

		assert_int_equal(mb_conf_read_password(path, NULL, &pw, &err), -1);
		assert_null(pw);
		assert_int_equal(err.code, MB_E_CONFIG);
		if (strstr(err.msg, cases[i].needle) == NULL)
			fail_msg("case %zu: '%s'", i, err.msg);
		assert_null(strstr(err.msg, "secret-one"));
	}
	{
		struct mb_err err = { 0 };
		char *pw = NULL;

		assert_int_equal(mb_conf_read_password(NULL, NULL, &pw, &err), -1);
		assert_non_null(strstr(err.msg, "IMAP_PASSWORD_FILE"));
		mb_err_clear(&err);
		assert_int_equal(mb_conf_read_password(tmpdir, NULL, &pw, &err), -1);
		assert_non_null(strstr(err.msg, "not a regular file"));
		mb_err_clear(&err);
		assert_int_equal(mb_conf_read_password("/nonexistent/pw", NULL, &pw, &err), -1);
		assert_non_null(strstr(err.msg, "/nonexistent/pw"));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(conf_defaults_then_file_then_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(conf_errors_name_the_key, setup, teardown),
		cmocka_unit_test_setup_teardown(conf_missing_file_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(conf_print_hides_secrets, setup, teardown),
		cmocka_unit_test(conf_parse_uint_checks_everything),
		cmocka_unit_test_setup_teardown(password_read_strips_one_newline, setup, teardown),
		cmocka_unit_test_setup_teardown(password_from_credentials_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(password_refused_when_others_could_read_it, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
