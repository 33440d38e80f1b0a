/*
 * HTML to the text a reader would see: see include/mailbox/html.h and
 * docs/normaliser.md.  libxml2 builds the tree (it decodes character
 * references, html_refs.c first rewrites those it leaves without ";", and
 * it recovers from any tag soup); we walk it without recursion, so nesting
 * depth costs no stack, and every step appends to one buffer, so the work is
 * linear in the size of the tree.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/HTMLparser.h>
#include <libxml/tree.h>

#include "mailbox/buf.h"
#include "mailbox/html.h"
#include "mailbox/utf8.h"
#include "html-private.h"

/* What an element does to the text, by name (libxml2 gives names in lower case). */
enum {
	EL_DROP = 1 << 0,	/* content never shown to a reader of a mail */
	EL_BLOCK = 1 << 1,	/* starts and ends a line of its own */
	EL_PARA = 1 << 2,	/* takes a blank line around it */
	EL_CELL = 1 << 3,	/* a table cell: a space between neighbours */
	EL_BR = 1 << 4,
	EL_PRE = 1 << 5,
	EL_A = 1 << 6,
};

static const struct el { const char *name; unsigned flags; } html_elements[] = {	/* sorted */
	{ "a", EL_A }, { "address", EL_BLOCK }, { "applet", EL_DROP },
	{ "article", EL_BLOCK }, { "aside", EL_BLOCK }, { "audio", EL_DROP },
	{ "blockquote", EL_BLOCK }, { "body", EL_BLOCK }, { "br", EL_BR },
	{ "canvas", EL_DROP }, { "caption", EL_BLOCK }, { "center", EL_BLOCK },
	{ "datalist", EL_DROP }, { "dd", EL_BLOCK }, { "details", EL_BLOCK },
	{ "div", EL_BLOCK }, { "dl", EL_BLOCK }, { "dt", EL_BLOCK }, { "embed", EL_DROP },
	{ "fieldset", EL_BLOCK }, { "figcaption", EL_BLOCK }, { "figure", EL_BLOCK },
	{ "footer", EL_BLOCK }, { "form", EL_BLOCK }, { "frame", EL_DROP },
	{ "frameset", EL_DROP }, { "h1", EL_PARA }, { "h2", EL_PARA }, { "h3", EL_PARA },
	{ "h4", EL_PARA }, { "h5", EL_PARA }, { "h6", EL_PARA }, { "head", EL_DROP },
	{ "header", EL_BLOCK }, { "hr", EL_BLOCK }, { "html", EL_BLOCK },
	{ "iframe", EL_DROP }, { "legend", EL_BLOCK }, { "li", EL_BLOCK },
	{ "main", EL_BLOCK }, { "map", EL_DROP }, { "math", EL_DROP }, { "nav", EL_BLOCK },
	{ "object", EL_DROP }, { "ol", EL_BLOCK }, { "option", EL_BLOCK }, { "p", EL_PARA },
	{ "pre", EL_BLOCK | EL_PRE }, { "script", EL_DROP }, { "section", EL_BLOCK },
	{ "select", EL_DROP }, { "style", EL_DROP }, { "summary", EL_BLOCK },
	{ "svg", EL_DROP }, { "table", EL_BLOCK }, { "tbody", EL_BLOCK }, { "td", EL_CELL },
	{ "template", EL_DROP }, { "tfoot", EL_BLOCK }, { "th", EL_CELL },
	{ "thead", EL_BLOCK }, { "title", EL_DROP }, { "tr", EL_BLOCK }, { "ul", EL_BLOCK },
	{ "video", EL_DROP },
};

static int
el_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct el *)elem)->name);
}

static unsigned
el_flags(const xmlChar *name)
{
	const struct el *e;

	if (name == NULL)
		return 0;
	e = bsearch(name, html_elements, MB_ARRAY_LEN(html_elements), sizeof(html_elements[0]),
	    el_cmp);
	return e ? e->flags : 0;
}

struct html_out {
	struct mb_buf	 b;
	const struct mb_css *css;	/* the <style> rules that hide; NULL: none */
	bool		 space;	/* whitespace seen since the last character */
	unsigned	 pre;	/* depth of <pre>: whitespace kept */
};

/* Number of newlines the buffer ends with (0..2). */
static unsigned
out_trailing_nl(const struct html_out *o)
{
	if (o->b.len == 0)
		return 2;	/* the start counts as a paragraph break */
	if (o->b.data[o->b.len - 1] != '\n')
		return 0;
	if (o->b.len == 1 || o->b.data[o->b.len - 2] != '\n')
		return 1;
	return 2;
}

/* End the line, and leave a blank line when want is 2. */
static void
out_break(struct html_out *o, unsigned want)
{
	o->space = false;
	while (out_trailing_nl(o) < want)
		(void)mb_buf_addc(&o->b, '\n');
}

/* <br>: one more line break, but never more than one blank line. */
static void
out_br(struct html_out *o)
{
	o->space = false;
	if (o->b.len > 0 && out_trailing_nl(o) < 2)
		(void)mb_buf_addc(&o->b, '\n');
}

static void
out_char(struct html_out *o, const char *p, size_t n)
{
	if (o->space && o->b.len > 0 && out_trailing_nl(o) == 0)
		(void)mb_buf_addc(&o->b, ' ');
	o->space = false;
	(void)mb_buf_add(&o->b, p, n);
}

/*
 * Append a text node: whitespace collapses as a browser collapses it (outside
 * <pre>), invisible characters (including those that arrived as &#8203;)
 * disappear, and U+00A0 counts as a space.
 */
static void
out_text(struct html_out *o, const char *s, size_t len)
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x80) {
			if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
				if (o->pre && c == '\n')
					out_br(o);
				else if (o->pre && c != '\r')
					out_char(o, " ", 1);
				else
					o->space = true;
			} else if (c >= 0x20 && c != 0x7f)
				out_char(o, s + i, 1);
			i++;
			continue;
		}
		if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0) {
			i++;	/* libxml2 hands out UTF-8; be safe anyway */
			continue;
		}
		if (cp == 0xa0) {
			if (o->pre)
				out_char(o, " ", 1);
			else
				o->space = true;
		} else if (!mb_utf8_is_invisible(cp) && !(cp >= 0x80 && cp < 0xa0))
			out_char(o, s + i, n);
		i += n;
	}
}

/* Lower-case, trimmed copy of [s, e) into out (NUL-terminated, truncated). */
static void
css_token(const char *s, const char *e, char *out, size_t outsz)
{
	size_t n = 0;

	while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r' ||
	    e[-1] == '\f'))
		e--;
	for (; s < e && n + 1 < outsz; s++) {
		char c = *s;

		out[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	out[n] = '\0';
}

/* A CSS length or number that is zero: "0", "0px", "0.0em", "-0", "0%". */
static bool
css_is_zero(const char *v)
{
	bool digit = false;

	if (*v == '+' || *v == '-')
		v++;
	for (; *v == '0' || *v == '.'; v++)
		if (*v == '0')
			digit = true;
	if (!digit)
		return false;
	if (*v >= '1' && *v <= '9')
		return false;
	/* What follows is a unit (letters or %) or nothing. */
	for (; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || *v == '%'))
			return false;
	return true;
}

enum mb_css_verdict
mb_html_style_verdict(const char *style)
{
	char prop[64], val[128];
	const char *p = style, *decl, *colon, *end, *bang;
	bool zero_height = false, overflow_hidden = false, shows = false;

	while (*p) {
		/* One declaration: up to ';' (CSS comments are not expected in mail). */
		decl = p;
		end = strchr(p, ';');
		if (end == NULL)
			end = p + strlen(p);
		p = *end ? end + 1 : end;
		colon = memchr(decl, ':', (size_t)(end - decl));
		if (colon == NULL)
			continue;
		css_token(decl, colon, prop, sizeof(prop));
		css_token(colon + 1, end, val, sizeof(val));
		if ((bang = strchr(val, '!')) != NULL) {	/* "none !important" */
			val[bang - val] = '\0';
			css_token(val, val + strlen(val), val, sizeof(val));
		}
		if (strcmp(prop, "display") == 0) {
			if (strcmp(val, "none") == 0)
				return MB_CSS_HIDES;
			shows = true;
		}
		if (strcmp(prop, "visibility") == 0) {
			if (strcmp(val, "hidden") == 0 || strcmp(val, "collapse") == 0)
				return MB_CSS_HIDES;
			shows = true;
		}
		if (strcmp(prop, "font-size") == 0 && css_is_zero(val))
			return MB_CSS_HIDES;
		if (strcmp(prop, "opacity") == 0 && css_is_zero(val))
			return MB_CSS_HIDES;
		if ((strcmp(prop, "max-height") == 0 || strcmp(prop, "height") == 0) &&
		    css_is_zero(val))
			zero_height = true;
		if (strcmp(prop, "overflow") == 0 && strcmp(val, "hidden") == 0)
			overflow_hidden = true;
	}
	/* The e-mail "preheader" idiom: a box with no height that clips. */
	if (zero_height && overflow_hidden)
		return MB_CSS_HIDES;
	return shows ? MB_CSS_SHOWS : MB_CSS_NONE;
}

bool
mb_html_style_hides(const char *style)
{
	return mb_html_style_verdict(style) == MB_CSS_HIDES;
}

/* The value of an attribute as libxml2 stores it (one text child), or ""; borrowed from the tree. */
static const char *
attr_value(xmlAttr *a)
{
	if (a->children != NULL && a->children->type == XML_TEXT_NODE &&
	    a->children->next == NULL && a->children->content != NULL)
		return (const char *)a->children->content;
	return "";
}

/* An element whose content a reader cannot see (css: the message's <style> rules). */
static bool
element_hidden(xmlNode *n, unsigned flags, const struct mb_css *css)
{
	enum mb_css_verdict inline_style = MB_CSS_NONE;
	char tok[16];

	if (flags & EL_DROP)
		return true;
	for (xmlAttr *a = n->properties; a != NULL; a = a->next) {
		const char *name = (const char *)a->name, *v;

		if (strcasecmp(name, "hidden") == 0)
			return true;
		if (strcasecmp(name, "aria-hidden") == 0) {
			v = attr_value(a);
			css_token(v, v + strlen(v), tok, sizeof(tok));
			if (strcmp(tok, "true") == 0)
				return true;
		} else if (strcasecmp(name, "style") == 0 &&
		    (inline_style = mb_html_style_verdict(attr_value(a))) == MB_CSS_HIDES)
			return true;
	}
	/* An inline display or visibility outranks the style sheet. */
	return inline_style != MB_CSS_SHOWS && mb_css_hides(css, n);
}

/*
 * A link target worth showing (not empty, not script, not an in-page jump),
 * trimmed; the caller xmlFree()s it.  NULL when there is none.
 */
static xmlChar *
link_href(xmlNode *n)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)"href");
	const char *s;

	if (v == NULL)
		return NULL;
	for (s = (const char *)v; *s && (unsigned char)*s <= ' '; s++)
		;
	if (*s == '\0' || *s == '#' || strncasecmp(s, "javascript:", 11) == 0 ||
	    strncasecmp(s, "vbscript:", 9) == 0 || strncasecmp(s, "data:", 5) == 0) {
		xmlFree(v);
		return NULL;
	}
	if (s != (const char *)v)
		memmove(v, s, strlen(s) + 1);
	return v;
}

/* Does the visible text say the URL already ("example.com" for its URL)? */
static bool
link_text_is_url(const char *text, size_t tlen, const char *url)
{
	size_t ulen;

	while (tlen > 0 && (*text == ' ' || *text == '\n')) {
		text++;
		tlen--;
	}
	while (tlen > 0 && (text[tlen - 1] == ' ' || text[tlen - 1] == '\n'))
		tlen--;
	if (strncasecmp(url, "mailto:", 7) == 0)
		url += 7;
	ulen = strlen(url);
	if (ulen > 0 && url[ulen - 1] == '/' && (tlen == 0 || text[tlen - 1] != '/'))
		ulen--;
	if (tlen == ulen && strncasecmp(text, url, ulen) == 0)
		return true;
	/* "www.example.com" for "http://www.example.com" */
	for (const char *scheme = strstr(url, "://"); scheme != NULL; scheme = NULL) {
		size_t off = (size_t)(scheme + 3 - url);

		if (tlen == ulen - off && strncasecmp(text, url + off, tlen) == 0)
			return true;
	}
	return false;
}

/* Leaving a link: add its URL after its text, once. */
static void
link_end(struct html_out *o, xmlNode *n)
{
	size_t start = (size_t)(uintptr_t)n->_private - 1;
	xmlChar *href = link_href(n);

	n->_private = NULL;
	if (href == NULL)
		return;
	if (start > o->b.len)
		start = o->b.len;
	if (!link_text_is_url(o->b.data + start, o->b.len - start, (const char *)href)) {
		if (o->b.len > start)
			o->space = true;
		out_char(o, "<", 1);
		(void)mb_buf_adds(&o->b, (const char *)href);
		(void)mb_buf_addc(&o->b, '>');
	}
	xmlFree(href);
}

static void
element_start(struct html_out *o, xmlNode *n, unsigned flags)
{
	if (flags & EL_BR)
		out_br(o);
	else if (flags & EL_PARA)
		out_break(o, 2);
	else if (flags & EL_BLOCK)
		out_break(o, 1);
	else if (flags & EL_CELL)
		o->space = true;
	if (flags & EL_PRE)
		o->pre++;
	if (flags & EL_A)
		n->_private = (void *)(uintptr_t)(o->b.len + 1);
}

static void
element_end(struct html_out *o, xmlNode *n)
{
	unsigned flags = el_flags(n->name);

	if ((flags & EL_A) && n->_private != NULL)
		link_end(o, n);
	if ((flags & EL_PRE) && o->pre > 0)
		o->pre--;
	if (flags & EL_PARA)
		out_break(o, 2);
	else if (flags & EL_BLOCK)
		out_break(o, 1);
	else if (flags & EL_CELL)
		o->space = true;
}

/* Depth-first walk over parent/child/sibling links: no recursion, no stack. */
static void
walk(struct html_out *o, xmlNode *root)
{
	xmlNode *n = root;

	while (n != NULL) {
		bool descend = false;

		if (n->type == XML_ELEMENT_NODE) {
			unsigned flags = el_flags(n->name);

			if (!element_hidden(n, flags, o->css)) {
				element_start(o, n, flags);
				descend = n->children != NULL;
				if (!descend)
					element_end(o, n);
			}
		} else if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
			if (n->content != NULL)
				out_text(o, (const char *)n->content,
				    strlen((const char *)n->content));
		}
		if (descend) {
			n = n->children;
			continue;
		}
		/* Next sibling, or climb, closing each element we leave. */
		while (n != NULL && n != root && n->next == NULL) {
			n = n->parent;
			if (n != NULL && n->type == XML_ELEMENT_NODE)
				element_end(o, n);
		}
		if (n == NULL || n == root)
			break;
		n = n->next;
	}
}

/*
 * Valid UTF-8 without NUL bytes, so libxml2 neither switches its decoder
 * nor stops early.  Returns a new string the caller frees.
 */
static char *
html_sanitize(const char *html, size_t len, size_t *len_r)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);
	size_t i = 0, n, run;
	uint32_t cp;

	while (i < len) {
		for (run = i; run < len && (unsigned char)html[run] < 0x80 && html[run] != '\0'; run++)
			;
		(void)mb_buf_add(&b, html + i, run - i);
		i = run;
		if (i >= len)
			break;
		if (html[i] == '\0') {
			(void)mb_buf_addc(&b, ' ');
			i++;
		} else if ((n = mb_utf8_decode(html + i, len - i, &cp)) != 0) {
			(void)mb_buf_add(&b, html + i, n);
			i += n;
		} else {
			(void)mb_buf_adds(&b, "\xef\xbf\xbd");
			i++;
		}
	}
	return mb_buf_detach(&b, len_r);
}

/*
 * One parser context per thread, reset for each document, so its
 * dictionary and buffers are not rebuilt for every mail.  Hostile mail can
 * fill the dictionary with made-up tag names: past a size, start afresh.
 */
static _Thread_local htmlParserCtxtPtr html_ctxt;

static htmlDocPtr
html_parse(const char *s, size_t len)
{
	if (html_ctxt != NULL && html_ctxt->dict != NULL && xmlDictSize(html_ctxt->dict) > 50000) {
		htmlFreeParserCtxt(html_ctxt);
		html_ctxt = NULL;
	}
	if (html_ctxt == NULL && (html_ctxt = htmlNewParserCtxt()) == NULL)
		return NULL;
	return htmlCtxtReadMemory(html_ctxt, s, (int)len, NULL, "UTF-8",
	    HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
	    HTML_PARSE_NONET | HTML_PARSE_COMPACT | XML_PARSE_HUGE);
}

char *
mb_html_to_text(const char *html, size_t len, size_t *len_r)
{
	struct html_out o = { .b = MB_BUF_INIT(SIZE_MAX / 2) };
	htmlDocPtr doc = NULL;
	char *clean = NULL, *refs;
	const char *in = html;
	size_t clen = len;

	if (html == NULL) {
		html = "";
		len = 0;
	}
	/* Mail text arrives as valid UTF-8 already: copy only when it is not. */
	if (memchr(html, '\0', len) != NULL || !mb_utf8_valid(html, len)) {
		clean = html_sanitize(html, len, &clen);
		in = clean;
	}
	if ((refs = mb_html_legacy_refs(in, clen, &clen)) != NULL) {
		free(clean);
		in = clean = refs;
	}
	if (clen > 0 && clen <= INT32_MAX)
		doc = html_parse(in, clen);
	if (doc != NULL) {
		struct mb_css *css = mb_css_collect(doc);

		o.css = css;
		/* Text after </html> lands in a second top-level element: walk them all. */
		for (xmlNode *top = doc->children; top != NULL; top = top->next)
			walk(&o, top);
		mb_css_free(&css);
		xmlFreeDoc(doc);
	}
	free(clean);
	/* Trim the trailing line breaks the last block left. */
	while (o.b.len > 0 && (o.b.data[o.b.len - 1] == '\n' || o.b.data[o.b.len - 1] == ' '))
		mb_buf_truncate(&o.b, o.b.len - 1);
	return mb_buf_detach(&o.b, len_r);
}
