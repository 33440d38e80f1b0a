/*
 * Unix-socket listeners (include/mailbox/unixsock.h), and mcpd's, which
 * uses one (syncd's control socket is the same call): a live socket is never taken over, a stale one is replaced,
 * anything that is not a socket is never deleted, and the socket's mode is
 * never wider than asked, not even between bind() and chmod().
 *
 * bind() is wrapped below: after the real bind it records the mode the new
 * socket file has at that moment, the window a connect() could use.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "mailbox/err.h"
#include "mailbox/unixsock.h"
#include "mcpd.h"

static mode_t	bound_mode;	/* the socket's mode right after the last bind() */

int
bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)sa;
	struct stat st;
	int r = (int)syscall(SYS_bind, fd, sa, len);

	bound_mode = 0;
	if (r == 0 && sa->sa_family == AF_UNIX && lstat(sun->sun_path, &st) == 0)
		bound_mode = st.st_mode & 07777;
	return r;
}

struct fx {
	char	dir[64];
	char	path[128];
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_unixsock.XXXXXX");
	if (f == NULL || mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static bool
file_holds(const char *path, const char *text)
{
	char buf[64] = { 0 };
	FILE *fp = fopen(path, "r");
	size_t n;

	if (fp == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static void
mcpd_conf(struct mcp_config *conf, char *path)
{
	memset(conf, 0, sizeof(*conf));
	conf->listen = (char *)"unix:";
	conf->listen_unix = true;
	conf->unix_path = path;
	conf->threads = 2;
	conf->max_connections = 4;
	conf->timeout = 5;
}

/* MCP_LISTEN=unix:/path naming a regular file: mcpd refuses, the file stays. */
static void
mcpd_refuses_a_file_that_is_not_a_socket(void **state)
{
	struct fx *f = *state;
	struct mcp_config conf;
	struct mcp_server srv = { .conf = &conf };
	struct mb_err err = { 0 };
	struct mcp_http *h;
	unsigned port;

	mcpd_conf(&conf, f->path);
	write_file(f->path, "precious");
	h = mcp_http_start(&srv, &port, &err);
	if (h != NULL)
		mcp_http_stop(&h);
	assert_null(h);
	assert_int_equal(err.code, MB_E_CONFIG);
	if (strstr(err.msg, "MCP_LISTEN") == NULL || strstr(err.msg, "not a socket") == NULL)
		fail_msg("unclear error: %s", err.msg);
	assert_true(file_holds(f->path, "precious"));
}

/* Even with umask 0, mcpd's socket is never more than 0660, not for a moment. */
static void
mcpd_socket_is_never_wider_than_0660(void **state)
{
	struct fx *f = *state;
	struct mcp_config conf;
	struct mcp_server srv = { .conf = &conf };
	struct mb_err err = { 0 };
	struct mcp_http *h;
	struct stat st;
	unsigned port;
	mode_t old = umask(0);

	mcpd_conf(&conf, f->path);
	h = mcp_http_start(&srv, &port, &err);
	umask(old);
	if (h == NULL)
		fail_msg("mcp_http_start: %s", err.msg);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	if ((bound_mode & ~(mode_t)0660) != 0)
		fail_msg("the socket was %04o between bind() and chmod()", (unsigned)bound_mode);
	mcp_http_stop(&h);
	assert_int_equal(lstat(f->path, &st), -1);	/* removed on a clean stop */
}

/* ---- mb_unix_listen() itself */

static void
listen_gives_exactly_the_mode_asked(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct stat st;
	mode_t old = umask(0);
	int fd = mb_unix_listen(f->path, 0600, MB_UNIX_NONBLOCK, 4, &err);

	assert_int_equal(umask(old), 0);	/* the process umask is back as it was */
	if (fd == -1)
		fail_msg("%s", err.msg);
	assert_int_equal(bound_mode, 0600);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* a stricter umask does not narrow the mode asked for either */
	unlink(f->path);
	old = umask(077);
	fd = mb_unix_listen(f->path, 0660, 0, 4, &err);
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
}

static void
listen_refuses_a_live_socket_and_replaces_a_stale_one(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, fd2, c;

	fd = mb_unix_listen(f->path, 0600, 0, 4, &err);
	assert_true(fd >= 0);
	fd2 = mb_unix_listen(f->path, 0600, 0, 4, &err);
	assert_int_equal(fd2, -1);
	assert_int_equal(err.code, MB_E_CONFIG);
	assert_non_null(strstr(err.msg, "live"));
	/* the live one still answers */
	memcpy(sun.sun_path, f->path, strlen(f->path) + 1);
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(c);
	close(fd);	/* dies without unlinking: the socket file is stale */
	mb_err_clear(&err);
	fd2 = mb_unix_listen(f->path, 0600, 0, 4, &err);
	if (fd2 == -1)
		fail_msg("stale socket not replaced: %s", err.msg);
	close(fd2);
}

static void
listen_never_deletes_what_is_not_a_socket(void **state)
{
	struct fx *f = *state;
	struct mb_err err = { 0 };
	char link[160];

	write_file(f->path, "keep me");
	assert_int_equal(mb_unix_listen(f->path, 0600, 0, 4, &err), -1);
	assert_int_equal(err.code, MB_E_CONFIG);
	assert_non_null(strstr(err.msg, "not a socket"));
	assert_true(file_holds(f->path, "keep me"));
	/* nor a symlink (to a stale socket or anything else) */
	snprintf(link, sizeof(link), "%s/l.sock", f->dir);
	assert_int_equal(symlink(f->path, link), 0);
	mb_err_clear(&err);
	assert_int_equal(mb_unix_listen(link, 0600, 0, 4, &err), -1);
	assert_non_null(strstr(err.msg, "not a socket"));
	assert_int_equal(unlink(link), 0);
}

static void
listen_refuses_a_path_too_long(void **state)
{
	struct mb_err err = { 0 };
	char path[200];

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(mb_unix_listen(path, 0600, 0, 4, &err), -1);
	assert_int_equal(err.code, MB_E_CONFIG);
	mb_err_clear(&err);
	assert_int_equal(mb_unix_listen("", 0600, 0, 4, &err), -1);
	assert_int_equal(err.code, MB_E_CONFIG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(mcpd_refuses_a_file_that_is_not_a_socket, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(mcpd_socket_is_never_wider_than_0660, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(listen_gives_exactly_the_mode_asked, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(listen_refuses_a_live_socket_and_replaces_a_stale_one,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(listen_never_deletes_what_is_not_a_socket, setup,
		    teardown),
		cmocka_unit_test(listen_refuses_a_path_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
