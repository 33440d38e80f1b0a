/* Small helpers every module uses. */
#ifndef MAILBOX_UTIL_H
#define MAILBOX_UTIL_H

#include <stddef.h>

#define MB_PRINTF(f, a)	__attribute__((format(printf, f, a)))
#define MB_ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * Defensive checks (SQLite's ALWAYS/NEVER): abort in debug builds, carry on
 * in release builds, so a "cannot happen" branch is still handled.
 */
#ifdef NDEBUG
#define MB_ALWAYS(x)	(x)
#define MB_NEVER(x)	(x)
#else
#include <assert.h>
#define MB_ALWAYS(x)	((x) ? 1 : (assert(0 && #x), 0))
#define MB_NEVER(x)	((x) ? (assert(0 && #x), 1) : 0)
#endif

/* malloc/calloc/strdup that abort on exhaustion: a daemon cannot do better. */
void	*mb_xmalloc(size_t n);
void	*mb_xcalloc(size_t nmemb, size_t size);
void	*mb_xrealloc(void *p, size_t n);
char	*mb_xstrdup(const char *s);		/* s may be NULL: returns NULL */
char	*mb_xstrndup(const char *s, size_t n);	/* copies at most n bytes, NUL-terminates */

/* Wipe then free (keys, passwords).  NULL-safe. */
void	 mb_freezero(void *p, size_t n);

/* Monotonic clock in milliseconds. */
long long	mb_now_ms(void);

#endif
