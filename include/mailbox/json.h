/*
 * JSON string literals (RFC 8259), the one escaper every hand-built JSON
 * text uses: mcpd's answers (mcpd/json_dump.c), the index's to_json/cc_json
 * columns and syncd's write log.  The spelling is jansson's (json_dumps()
 * without JSON_ENSURE_ASCII), so mcpd's fast path stays byte for byte what
 * jansson would write: '"' and '\\' and \b \f \n \r \t by name, the other
 * bytes below 0x20 as \u00XX (upper-case hex), every other byte as it is.
 */
#ifndef MAILBOX_JSON_H
#define MAILBOX_JSON_H

#include <stddef.h>

struct mb_buf;

/*
 * Append "s" (len bytes, quotes included) to b.  s should be valid UTF-8:
 * bytes of 0x80 and up are copied, not checked.  0, or -1 when b is full.
 */
int	mb_json_quote(struct mb_buf *b, const char *s, size_t len);

#endif
