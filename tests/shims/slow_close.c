/*
 * An LD_PRELOAD shim for tests/integration/test_mcpd_limits.sh: a socket
 * closed by one of libmicrohttpd's pool threads ("MHD-worker") is closed 30 ms
 * late.  libmicrohttpd closes a connection's socket after it notifies the
 * connection closed and before it stops counting it, so the shim holds that
 * window open long enough for the acceptor to look in it every time, where
 * in a real run it is microseconds wide and was met once in some twenty runs.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int
close(int fd)
{
	static int (*real_close)(int);
	struct timespec late = { .tv_sec = 0, .tv_nsec = 30 * 1000 * 1000 };
	struct stat st;
	char name[16] = "";

	if (real_close == NULL)
		*(void **)&real_close = dlsym(RTLD_NEXT, "close");
	if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 &&
	    strcmp(name, "MHD-worker") == 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
		nanosleep(&late, NULL);
	return real_close(fd);
}
