/*
 * HTML attachments: decoded like text, then through the body's HTML
 * normaliser (html.c), so hidden text stays hidden in attachments too.
 */
#include <stdlib.h>

#include "mailbox/html.h"

#include "extract-private.h"
#include "mime-private.h"

int
mb_extract_html(const struct mb_extract_limits *lim, const char *charset, const void *data,
    size_t len, struct mb_extract_out *out)
{
	struct mb_buf u;
	size_t tl;
	char *t;

	mb_buf_init(&u, len * 3 + 16);
	(void)mb_charset_to_utf8(charset, data, len, &u);
	t = mb_html_to_text(u.data, u.len, &tl);
	mb_buf_release(&u);
	(void)ex_add(out, t, tl);
	free(t);
	return 0;
}
