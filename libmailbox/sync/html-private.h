/*
 * Internals of the HTML-to-text converter (html.c, html_refs.c).  Not
 * installed; tests use mb_html_to_text().
 */
#ifndef MAILBOX_HTML_PRIVATE_H
#define MAILBOX_HTML_PRIVATE_H

#include <stddef.h>

#include "mailbox/buf.h"

/*
 * Rewrite the character references that HTML5 decodes without ";" (the
 * legacy names: "&copy", "&lt", "&eacute", ...; the longest such name the
 * text begins with, so "&notit;" is "&not" and "it;") as numeric references,
 * in text only: tags and their attribute values, comments, and script and
 * style content are copied as they are.  Names with ";" are left to
 * libxml2, except the few HTML5 names that begin with a legacy name and that
 * libxml2 does not know ("&ltimes;").  s need not be NUL-terminated.
 * Returns NULL when nothing changes, else a new NUL-terminated string of
 * *len_r bytes that the caller free(3)s.
 */
char	*mb_html_legacy_refs(const char *s, size_t len, size_t *len_r);

#endif
