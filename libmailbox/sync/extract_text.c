/*
 * Text attachments (text/plain, text/csv, text/markdown, any text/ type): decoded from their
 * declared charset with the same fallbacks as bodies (charset.c): UTF-8
 * where valid, windows-1252 byte by byte elsewhere.
 */
#include "mailbox/util.h"

#include "extract-private.h"
#include "mime-private.h"

int
mb_extract_text(const struct mb_extract_limits *lim, const char *charset, const void *data,
    size_t len, struct mb_extract_out *out)
{
	/* No more input than max_chars characters can come from (UTF-32: 4 bytes each). */
	size_t n = len < (size_t)lim->max_chars * 4 ? len : (size_t)lim->max_chars * 4;
	struct mb_buf u;

	mb_buf_init(&u, n * 3 + 16);	/* a byte becomes at most 3 (U+FFFD) */
	(void)mb_charset_to_utf8(charset, data, n, &u);
	(void)ex_add(out, u.data, u.len);
	mb_buf_release(&u);
	return 0;
}
