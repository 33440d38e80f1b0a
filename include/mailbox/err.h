/*
 * Errors: a class chosen by what the caller does next, plus a message for the
 * log.  Fallible calls return 0/-1 (or NULL) and take struct mb_err *err last.
 */
#ifndef MAILBOX_ERR_H
#define MAILBOX_ERR_H

#include "mailbox/util.h"

enum mb_errcode {
	MB_OK = 0,
	MB_E_INVALID,	/* bad input from a caller or client: don't retry */
	MB_E_TEMP,	/* network, busy lock: retry with backoff */
	MB_E_AUTH,	/* login refused: stop until the next tick */
	MB_E_PROTO,	/* a peer broke IMAP or IPC: drop that peer */
	MB_E_NOTFOUND,
	MB_E_CONFIG,	/* a missing or bad setting: stop loudly */
	MB_E_INTERNAL,	/* bug or limit: clients get a generic message */
};

struct mb_err {
	enum mb_errcode	code;
	char		msg[256];	/* for the log, never a secret */
};

/*
 * Keeps the first error (the root cause) and returns -1, so a caller can write
 * `return mb_err_set(err, MB_E_TEMP, "folder '%s': uidvalidity changed", f);`.
 * err may be NULL.
 */
int	 mb_err_set(struct mb_err *err, enum mb_errcode code, const char *fmt, ...) MB_PRINTF(3, 4);
void	 mb_err_clear(struct mb_err *err);
const char	*mb_errcode_name(enum mb_errcode code);	/* "invalid", "temp", ... */

#endif
