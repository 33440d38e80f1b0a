/*
 * The hiding rules of a message's own <style> blocks (html-private.h,
 * docs/normaliser.md "HTML").  No CSS engine: the rules a mail uses to hide
 * text from a reader (a preheader, a tracking line, text for another client)
 * are nearly always one class, id or element with display:none and the like,
 * so simple selectors are matched and everything else is left alone.  What
 * cannot be read is skipped, never guessed at: the worst case is that the
 * text shows, as it did before.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/tree.h>

#include "mailbox/buf.h"
#include "mailbox/util.h"
#include "html-private.h"

#define CSS_TEXT_MAX	(256u << 10)	/* style text read per message */
#define CSS_RULES_MAX	256		/* hiding selectors kept */
#define CSS_CLASSES_MAX	4		/* classes in one compound selector */
#define CSS_NAME_MAX	64

/* One compound selector: element, classes and id, each optional ("" when absent). */
struct css_sel {
	char	 tag[CSS_NAME_MAX];
	char	 id[CSS_NAME_MAX];
	char	 cls[CSS_CLASSES_MAX][CSS_NAME_MAX];
	int	 n_cls;
	bool	 hides;		/* the last rule for it hides (else it was shown again) */
};

struct mb_css {
	struct css_sel	 v[CSS_RULES_MAX];
	size_t		 n;
	size_t		 n_hiding;
};

/* The text of one <style> element into b, at most budget bytes; comments blanked. */
static void
style_text(xmlNode *style, struct mb_buf *b, size_t budget)
{
	for (xmlNode *t = style->children; t != NULL && b->len < budget; t = t->next)
		if ((t->type == XML_TEXT_NODE || t->type == XML_CDATA_SECTION_NODE) &&
		    t->content != NULL) {
			size_t len = strlen((const char *)t->content);

			if (len > budget - b->len)
				len = budget - b->len;
			(void)mb_buf_add(b, t->content, len);
		}
	/* CSS comments and the HTML comment marks some mail wraps style text in. */
	for (size_t i = 0; i + 1 < b->len; i++) {
		if (b->data[i] == '/' && b->data[i + 1] == '*') {
			size_t j = i + 2;

			while (j + 1 < b->len && !(b->data[j] == '*' && b->data[j + 1] == '/'))
				j++;
			j = j + 2 < b->len ? j + 2 : b->len;
			memset(b->data + i, ' ', j - i);
			i = j - 1;
		} else if (i + 3 < b->len && memcmp(b->data + i, "<!--", 4) == 0)
			memset(b->data + i, ' ', 4);
		else if (i + 2 < b->len && memcmp(b->data + i, "-->", 3) == 0)
			memset(b->data + i, ' ', 3);
	}
}

static bool
name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_' || (unsigned char)c >= 0x80;
}

/* Copy a name starting at *pp into out; false when it is empty or too long. */
static bool
take_name(const char **pp, const char *end, char out[CSS_NAME_MAX])
{
	const char *p = *pp;
	size_t n = 0;

	while (p < end && name_char(*p)) {
		if (n + 1 == CSS_NAME_MAX)
			return false;
		out[n++] = *p++;
	}
	out[n] = '\0';
	*pp = p;
	return n > 0;
}

/* [s, e) as one compound selector, trimmed; false when it is not a simple one. */
static bool
parse_sel(const char *s, const char *e, struct css_sel *sel)
{
	memset(sel, 0, sizeof(*sel));
	while (s < e && strchr(" \t\r\n\f", *s) != NULL)
		s++;
	while (e > s && strchr(" \t\r\n\f", e[-1]) != NULL)
		e--;
	if (s == e)
		return false;
	if (name_char(*s)) {
		if (!take_name(&s, e, sel->tag))
			return false;
		for (char *t = sel->tag; *t; t++)
			if (*t >= 'A' && *t <= 'Z')
				*t = (char)(*t - 'A' + 'a');
	}
	while (s < e) {
		char c = *s++;

		if (c == '.' && sel->n_cls < CSS_CLASSES_MAX) {
			if (!take_name(&s, e, sel->cls[sel->n_cls++]))
				return false;
		} else if (c == '#' && sel->id[0] == '\0') {
			if (!take_name(&s, e, sel->id))
				return false;
		} else
			return false;	/* a combinator, a pseudo-class, an attribute test */
	}
	return true;
}

static bool
same_sel(const struct css_sel *a, const struct css_sel *b)
{
	if (strcmp(a->tag, b->tag) != 0 || strcasecmp(a->id, b->id) != 0 || a->n_cls != b->n_cls)
		return false;
	for (int i = 0; i < a->n_cls; i++)
		if (strcasecmp(a->cls[i], b->cls[i]) != 0)
			return false;
	return true;
}

/* Record what a rule says about each simple selector of its list [s, e). */
static void
rule(struct mb_css *css, const char *s, const char *e, bool hides)
{
	while (s < e) {
		const char *comma = memchr(s, ',', (size_t)(e - s));
		const char *end = comma != NULL ? comma : e;
		struct css_sel sel;
		size_t i;

		if (parse_sel(s, end, &sel)) {
			for (i = 0; i < css->n && !same_sel(&css->v[i], &sel); i++)
				;
			if (i < css->n) {
				if (css->v[i].hides && !hides)
					css->n_hiding--;
				else if (!css->v[i].hides && hides)
					css->n_hiding++;
				css->v[i].hides = hides;
			} else if (hides && css->n < CSS_RULES_MAX) {
				sel.hides = true;
				css->v[css->n++] = sel;
				css->n_hiding++;
			}
		}
		s = end + (comma != NULL);
	}
}

/* The end of the block that starts at p ('{'), nested blocks included. */
static const char *
block_end(const char *p, const char *end)
{
	int depth = 0;

	for (; p < end; p++) {
		if (*p == '{')
			depth++;
		else if (*p == '}' && --depth == 0)
			return p;
	}
	return end;
}

/*
 * One style sheet (one <style> element's text) into css.  As in a browser,
 * a block still open at the end of the sheet is closed there.
 */
static void
sheet(struct mb_css *css, const char *p, const char *end)
{
	while (p < end) {
		const char *open = memchr(p, '{', (size_t)(end - p)), *close, *at;
		char *decls;

		if (open == NULL)
			break;
		close = block_end(open, end);
		/* An @-rule (@media, @font-face, @import ...;): its rules do not apply here. */
		at = memchr(p, '@', (size_t)(open - p));
		if (at != NULL) {
			const char *semi = memchr(at, ';', (size_t)(open - at));

			p = semi != NULL ? semi + 1 : close + (close < end);
			continue;
		}
		if (memchr(open + 1, '{', (size_t)(close - open - 1)) == NULL) {
			decls = mb_xstrndup(open + 1, (size_t)(close - open - 1));
			switch (mb_html_style_verdict(decls)) {
			case MB_CSS_HIDES:
				rule(css, p, open, true);
				break;
			case MB_CSS_SHOWS:
				rule(css, p, open, false);
				break;
			case MB_CSS_NONE:
				break;
			}
			free(decls);
		}
		p = close + (close < end);
	}
}

struct mb_css *
mb_css_collect(xmlDoc *doc)
{
	struct mb_css *css = NULL;
	struct mb_buf b = MB_BUF_INIT(CSS_TEXT_MAX);
	size_t read = 0;
	xmlNode *n = doc->children;

	/* Every <style> element, in document order, through the whole tree. */
	while (n != NULL && read < CSS_TEXT_MAX) {
		if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, "style") == 0) {
			mb_buf_reset(&b);
			style_text(n, &b, CSS_TEXT_MAX - read);
			read += b.len + 1;
			if (css == NULL)
				css = mb_xcalloc(1, sizeof(*css));
			sheet(css, b.data, b.data + b.len);
		} else if (n->type == XML_ELEMENT_NODE && n->children != NULL) {
			n = n->children;
			continue;
		}
		while (n != NULL && n->next == NULL)
			n = n->parent;
		if (n != NULL)
			n = n->next;
	}
	mb_buf_release(&b);
	if (css != NULL && css->n_hiding == 0)
		mb_css_free(&css);
	return css;
}

void
mb_css_free(struct mb_css **cssp)
{
	free(*cssp);
	*cssp = NULL;
}

/* The value of n's attribute name (one text child), or NULL; borrowed. */
static const char *
attr(xmlNode *n, const char *name)
{
	for (xmlAttr *a = n->properties; a != NULL; a = a->next)
		if (strcasecmp((const char *)a->name, name) == 0 && a->children != NULL &&
		    a->children->type == XML_TEXT_NODE)
			return (const char *)a->children->content;
	return NULL;
}

/* Whether the class attribute value list holds the class c (ASCII case ignored, as in quirks mode). */
static bool
has_class(const char *list, const char *c)
{
	size_t n = strlen(c);

	for (const char *p = list; p != NULL && *p != '\0'; ) {
		size_t len;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f')
			p++;
		len = strcspn(p, " \t\n\r\f");
		if (len == n && strncasecmp(p, c, n) == 0)
			return true;
		p += len;
	}
	return false;
}

bool
mb_css_hides(const struct mb_css *css, xmlNode *n)
{
	const char *cls, *id;

	if (css == NULL)
		return false;
	cls = attr(n, "class");
	id = attr(n, "id");
	for (size_t i = 0; i < css->n; i++) {
		const struct css_sel *s = &css->v[i];
		int k;

		if (!s->hides || (s->tag[0] != '\0' && strcmp(s->tag, (const char *)n->name) != 0))
			continue;
		if (s->id[0] != '\0' && (id == NULL || strcasecmp(s->id, id) != 0))
			continue;
		for (k = 0; k < s->n_cls && has_class(cls, s->cls[k]); k++)
			;
		if (k == s->n_cls)
			return true;
	}
	return false;
}
