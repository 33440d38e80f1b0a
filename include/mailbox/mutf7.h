/*
 * IMAP mailbox names in modified UTF-7 (RFC 3501 5.1.3), converted with
 * glibc's iconv "UTF-7-IMAP" charset.  Used by the Mailbox implementation
 * (LIST decodes, EXAMINE encodes); separate so it can be tested without a
 * server.
 */
#ifndef MAILBOX_MUTF7_H
#define MAILBOX_MUTF7_H

#include "mailbox/err.h"

/*
 * Decode a modified UTF-7 name into UTF-8.  On success *utf8_r is the
 * caller's (free).  A name that is not canonical modified UTF-7 (raw 8-bit,
 * a bad or unclosed shift, ASCII inside a shift: anything that would not
 * encode back to the same bytes) fails with MB_E_PROTO, *utf8_r NULL.
 */
int	mb_mutf7_decode(const char *mutf7, char **utf8_r, struct mb_err *err);

/*
 * Encode a UTF-8 name into modified UTF-7 ("&" becomes "&-").  On success
 * *mutf7_r is the caller's (free).  Invalid UTF-8 fails with MB_E_INVALID.
 */
int	mb_mutf7_encode(const char *utf8, char **mutf7_r, struct mb_err *err);

#endif
