/* HTML to readable text (libxml2's HTML parser).  Part of mailbox_sync. */
#ifndef MAILBOX_HTML_H
#define MAILBOX_HTML_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Text a reader would see: script, style, head, template and every element a
 * reader could not see (hidden, aria-hidden="true", display:none,
 * visibility:hidden, font-size:0, opacity:0, inline or by a simple selector of
 * the document's own <style> blocks) dropped; br, p, div, li, tr make
 * line breaks; a link keeps its text and its URL once; character references
 * decoded as a browser decodes them in text (the HTML5 legacy names such as
 * "&copy" also without ";"); invisible characters stripped.  html is UTF-8
 * (len bytes).
 * Returns a NUL-terminated UTF-8 string the caller free(3)s (never NULL),
 * with its length in *len_r (may be NULL).
 */
char	*mb_html_to_text(const char *html, size_t len, size_t *len_r);

/*
 * Whether an inline style attribute value hides its element: display:none,
 * visibility:hidden or collapse, font-size:0 (any unit), opacity:0, or a zero
 * (max-)height box with overflow:hidden.  Property names and values are
 * matched case-insensitively, !important and spaces ignored.
 */
bool	mb_html_style_hides(const char *style);

#endif
