/* Allocation that never returns NULL, wiping free, and the clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mailbox/util.h"

static _Noreturn void
out_of_memory(size_t n)
{
	/* No logger here: it may need memory itself. */
	fprintf(stderr, "<2>out of memory allocating %zu bytes\n", n);
	abort();
}

void *
mb_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		out_of_memory(n);
	return p;
}

void *
mb_xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (p == NULL)
		out_of_memory(nmemb * size);
	return p;
}

void *
mb_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		out_of_memory(n);
	return q;
}

char *
mb_xstrdup(const char *s)
{
	return s ? mb_xstrndup(s, strlen(s)) : NULL;
}

char *
mb_xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = mb_xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

void
mb_freezero(void *p, size_t n)
{
	if (p == NULL)
		return;
	explicit_bzero(p, n);
	free(p);
}

long long
mb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
