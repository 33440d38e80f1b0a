/* Growable, capped byte buffers: see include/mailbox/buf.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"

char mb_buf_empty[1];

void
mb_buf_init(struct mb_buf *b, size_t max)
{
	b->data = mb_buf_empty;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* Make room for n more bytes plus the NUL; -1 (EMSGSIZE) past the cap. */
static int
buf_grow(struct mb_buf *b, size_t n)
{
	size_t want, cap;

	if (n > b->max - b->len) {	/* check before the arithmetic */
		errno = EMSGSIZE;
		return -1;
	}
	want = b->len + n + 1;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	if (b->cap == 0) {
		b->data = mb_xmalloc(cap);
		b->data[0] = '\0';
	} else
		b->data = mb_xrealloc(b->data, cap);
	b->cap = cap;
	return 0;
}

int
mb_buf_add(struct mb_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (buf_grow(b, n) == -1)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
mb_buf_adds(struct mb_buf *b, const char *s)
{
	return mb_buf_add(b, s, strlen(s));
}

int
mb_buf_addc(struct mb_buf *b, char c)
{
	/* Room already there, the common case: JSON writers add a char at a time. */
	if (b->len < b->max && b->cap - b->len >= 2) {
		b->data[b->len++] = c;
		b->data[b->len] = '\0';
		return 0;
	}
	return mb_buf_add(b, &c, 1);
}

/*
 * Formatted into the room the buffer has, which is usually enough; only
 * when it is not is the text measured, room made and formatted again (a
 * page of search results formats a few hundred short fields).
 */
int
mb_buf_vaddf(struct mb_buf *b, const char *fmt, va_list ap)
{
	size_t room = b->cap - b->len;	/* the NUL's byte included; 0 before the first growth */
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = room > 0 ? vsnprintf(b->data + b->len, room, fmt, ap2) : vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n >= 0 && (size_t)n < room && (size_t)n <= b->max - b->len) {
		b->len += (size_t)n;	/* vsnprintf wrote the NUL */
		return 0;
	}
	if (room > 0)
		b->data[b->len] = '\0';	/* what did not fit, or passes the cap, is not kept */
	if (n < 0)
		return -1;
	if (buf_grow(b, (size_t)n) == -1)
		return -1;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
mb_buf_addf(struct mb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = mb_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

void
mb_buf_truncate(struct mb_buf *b, size_t len)
{
	if (MB_NEVER(len > b->len))
		return;
	b->len = len;
	if (b->cap)
		b->data[len] = '\0';
}

void
mb_buf_reset(struct mb_buf *b)
{
	mb_buf_truncate(b, 0);
}

char *
mb_buf_detach(struct mb_buf *b, size_t *len_r)
{
	char *p = b->cap ? b->data : mb_xstrdup("");

	if (len_r)
		*len_r = b->len;
	mb_buf_init(b, b->max);
	return p;
}

void
mb_buf_release(struct mb_buf *b)
{
	if (b->cap)
		free(b->data);
	mb_buf_init(b, b->max);
}
