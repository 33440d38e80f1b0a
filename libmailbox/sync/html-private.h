/*
 * Internals of the HTML-to-text converter (html.c, html_refs.c).  Not
 * installed; tests use mb_html_to_text().
 */
#ifndef MAILBOX_HTML_PRIVATE_H
#define MAILBOX_HTML_PRIVATE_H

#include <stddef.h>

#include <stdbool.h>

#include <libxml/tree.h>

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

/* What a declaration block (an inline style, a rule's body) says about visibility. */
enum mb_css_verdict {
	MB_CSS_NONE,	/* nothing about it */
	MB_CSS_HIDES,	/* the rules of mb_html_style_hides() (include/mailbox/html.h) */
	MB_CSS_SHOWS,	/* sets display (not none) or visibility (visible) */
};
enum mb_css_verdict	mb_html_style_verdict(const char *style);

/*
 * The hiding rules of a document's own <style> blocks (html_css.c): simple
 * selectors only (an element name, .class, #id, or one compound of them such
 * as div.a.b#c), outside @-rules, whose declarations hide (mb_html_style_
 * verdict); a later rule for the same selector that shows cancels it.
 * Bounded: the first 256 KB of style text and 256 hiding selectors.  NULL
 * when there are none; the caller frees with mb_css_free().
 */
struct mb_css;
struct mb_css	*mb_css_collect(xmlDoc *doc);
void		 mb_css_free(struct mb_css **cssp);
/* Whether one of css's selectors matches element n (css may be NULL). */
bool		 mb_css_hides(const struct mb_css *css, xmlNode *n);

#endif
