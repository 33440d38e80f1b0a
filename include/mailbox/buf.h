/*
 * A growable byte buffer with a hard cap (git strbuf + curl dynbuf).
 * data is never NULL and always NUL-terminated; appends past max fail with
 * EMSGSIZE and leave the buffer as it was.
 */
#ifndef MAILBOX_BUF_H
#define MAILBOX_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "mailbox/util.h"

struct mb_buf {
	char	*data;	/* never NULL after init; always NUL-terminated */
	size_t	 len;	/* bytes used, not counting the NUL */
	size_t	 cap;	/* private */
	size_t	 max;	/* hard cap on len: appends past it fail with EMSGSIZE */
};

extern char mb_buf_empty[1];	/* shared "" so data is never NULL */
#define MB_BUF_INIT(maxlen)	{ .data = mb_buf_empty, .len = 0, .cap = 0, .max = (maxlen) }

void	 mb_buf_init(struct mb_buf *b, size_t max);
int	 mb_buf_add(struct mb_buf *b, const void *p, size_t n);	/* 0, or -1+errno; b intact */
int	 mb_buf_adds(struct mb_buf *b, const char *s);
int	 mb_buf_addc(struct mb_buf *b, char c);
int	 mb_buf_addf(struct mb_buf *b, const char *fmt, ...) MB_PRINTF(2, 3);
int	 mb_buf_vaddf(struct mb_buf *b, const char *fmt, va_list ap) MB_PRINTF(2, 0);
void	 mb_buf_truncate(struct mb_buf *b, size_t len);	/* len <= b->len */
void	 mb_buf_reset(struct mb_buf *b);			/* len = 0, keeps memory */
char	*mb_buf_detach(struct mb_buf *b, size_t *len_r);	/* caller free(3)s; b reset */
void	 mb_buf_release(struct mb_buf *b);			/* frees and resets; idempotent */

#endif
