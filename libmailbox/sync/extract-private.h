/*
 * Inside the extractors (extract*.c): the helpers the format files share.
 * Not installed.
 */
#ifndef MAILBOX_EXTRACT_PRIVATE_H
#define MAILBOX_EXTRACT_PRIVATE_H

#include <stdarg.h>

#include "mailbox/extract.h"

/* Set out->status from a format ("failed: %s"), return -1. */
int	ex_fail(struct mb_extract_out *out, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/*
 * Append s (n bytes, UTF-8) to out->text.  Returns 0, or 1 once the
 * buffer is full (the rest is dropped: the caller may stop early).
 */
int	ex_add(struct mb_extract_out *out, const char *s, size_t n);
int	ex_adds(struct mb_extract_out *out, const char *s);

/*
 * Run fn on (charset, data, len) in a child with the limits' RLIMIT_CPU and
 * RLIMIT_AS, every other descriptor closed, and its answer read back over
 * a pipe; a child that dies, runs out of time or memory, or answers too
 * much becomes a "failed" status.  Always fills out.
 */
void	ex_sandbox(const struct mb_extract_limits *lim, mb_extract_fn *fn, const char *charset,
	    const void *data, size_t len, struct mb_extract_out *out);

#endif
