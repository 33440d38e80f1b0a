/*
 * The Mailbox interface's checks that need no server: settings that must be
 * refused before any connection (plaintext to anything but loopback, missing
 * values), and loopback spellings that are allowed in plaintext (those get as
 * far as a refused TCP connect, a temporary error, on a port nothing uses).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/imap.h"
#include "mailbox/log.h"
#include "mailbox/util.h"

static struct mb_imap_conf
conf_for(const char *host, enum mb_imap_tls tls)
{
	struct mb_imap_conf c = { .host = host, .port = 1, .tls = tls, .user = "alice",
	    .password = "unit-secret", .timeout_s = 2 };

	return c;
}

static void
imap_refuses_plaintext_to_remote_hosts_before_connecting(void **state)
{
	/* Names that look local but are not literal loopback, and real remotes. */
	static const char *hosts[] = {
		"192.0.2.1", "10.0.0.1", "mail.example.org", "localhost.example.org",
		"127.0.0.1.nip.io", "::ffff:10.0.0.1", "0.0.0.0", "128.0.0.1",
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(hosts); i++) {
		struct mb_imap_conf c = conf_for(hosts[i], MB_IMAP_TLS_NONE);
		struct mb_err err = { 0 };
		struct mb_imap *imap = (struct mb_imap *)1;

		/* MB_E_CONFIG, not a network error: it never tried to connect. */
		assert_int_equal(mb_imap_connect(&c, &imap, &err), -1);
		assert_null(imap);
		assert_int_equal(err.code, MB_E_CONFIG);
		assert_non_null(strstr(err.msg, "plaintext"));
	}
}

static void
imap_allows_plaintext_to_loopback(void **state)
{
	static const char *hosts[] = { "127.0.0.1", "127.9.8.7", "localhost", "LocalHost" };

	for (size_t i = 0; i < MB_ARRAY_LEN(hosts); i++) {
		struct mb_imap_conf c = conf_for(hosts[i], MB_IMAP_TLS_NONE);
		struct mb_err err = { 0 };
		struct mb_imap *imap = NULL;

		/* Port 1 is closed: the setting passed, the connect failed. */
		assert_int_equal(mb_imap_connect(&c, &imap, &err), -1);
		assert_null(imap);
		assert_int_equal(err.code, MB_E_TEMP);
	}
}

static void
imap_refuses_missing_settings(void **state)
{
	struct mb_imap_conf c[5];
	struct mb_imap *imap = NULL;

	for (size_t i = 0; i < MB_ARRAY_LEN(c); i++)
		c[i] = conf_for("127.0.0.1", MB_IMAP_TLS_IMPLICIT);
	c[0].host = NULL;
	c[1].host = "";
	c[2].port = 0;
	c[3].user = NULL;
	c[4].password = NULL;
	for (size_t i = 0; i < MB_ARRAY_LEN(c); i++) {
		struct mb_err err = { 0 };

		assert_int_equal(mb_imap_connect(&c[i], &imap, &err), -1);
		assert_null(imap);
		assert_int_equal(err.code, MB_E_CONFIG);
	}
}

static void
imap_close_is_null_safe(void **state)
{
	struct mb_imap *imap = NULL;

	mb_imap_close(&imap);
	assert_null(imap);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(imap_refuses_plaintext_to_remote_hosts_before_connecting),
		cmocka_unit_test(imap_allows_plaintext_to_loopback),
		cmocka_unit_test(imap_refuses_missing_settings),
		cmocka_unit_test(imap_close_is_null_safe),
	};

	mb_log_init("test_imap", MB_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
