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
		cmocka_unit_test(log_escapes_control_characters),
		cmocka_unit_test(log_respects_the_level),
		cmocka_unit_test(buf_refuses_to_grow_past_its_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
