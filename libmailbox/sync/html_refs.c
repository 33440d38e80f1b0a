/*
 * Character references without ";" (see html-private.h).  libxml2 2.9 keeps
 * "&copy" literal where a browser shows ©, and once it has built the tree
 * "&copy" can no longer be told from "&amp;copy", so the source is
 * rewritten before parsing: each legacy reference in text becomes a numeric
 * one, which libxml2 decodes.  A small tokenizer tells text from tags,
 * comments and script/style; what it is unsure of is left as it was.
 */
#include <libxml/HTMLparser.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mailbox/util.h"
#include "html-private.h"

struct ref { const char *name, *repl; };

/* The HTML5 names that are decoded without ";" (its "legacy" list); sorted by strcmp. */
static const struct ref legacy_refs[] = {
	{ "AElig", "&#xc6;" }, { "AMP", "&#x26;" }, { "Aacute", "&#xc1;" },
	{ "Acirc", "&#xc2;" }, { "Agrave", "&#xc0;" }, { "Aring", "&#xc5;" },
	{ "Atilde", "&#xc3;" }, { "Auml", "&#xc4;" }, { "COPY", "&#xa9;" },
	{ "Ccedil", "&#xc7;" }, { "ETH", "&#xd0;" }, { "Eacute", "&#xc9;" },
	{ "Ecirc", "&#xca;" }, { "Egrave", "&#xc8;" }, { "Euml", "&#xcb;" },
	{ "GT", "&#x3e;" }, { "Iacute", "&#xcd;" }, { "Icirc", "&#xce;" },
	{ "Igrave", "&#xcc;" }, { "Iuml", "&#xcf;" }, { "LT", "&#x3c;" },
	{ "Ntilde", "&#xd1;" }, { "Oacute", "&#xd3;" }, { "Ocirc", "&#xd4;" },
	{ "Ograve", "&#xd2;" }, { "Oslash", "&#xd8;" }, { "Otilde", "&#xd5;" },
	{ "Ouml", "&#xd6;" }, { "QUOT", "&#x22;" }, { "REG", "&#xae;" },
	{ "THORN", "&#xde;" }, { "Uacute", "&#xda;" }, { "Ucirc", "&#xdb;" },
	{ "Ugrave", "&#xd9;" }, { "Uuml", "&#xdc;" }, { "Yacute", "&#xdd;" },
	{ "aacute", "&#xe1;" }, { "acirc", "&#xe2;" }, { "acute", "&#xb4;" },
	{ "aelig", "&#xe6;" }, { "agrave", "&#xe0;" }, { "amp", "&#x26;" },
	{ "aring", "&#xe5;" }, { "atilde", "&#xe3;" }, { "auml", "&#xe4;" },
	{ "brvbar", "&#xa6;" }, { "ccedil", "&#xe7;" }, { "cedil", "&#xb8;" },
	{ "cent", "&#xa2;" }, { "copy", "&#xa9;" }, { "curren", "&#xa4;" },
	{ "deg", "&#xb0;" }, { "divide", "&#xf7;" }, { "eacute", "&#xe9;" },
	{ "ecirc", "&#xea;" }, { "egrave", "&#xe8;" }, { "eth", "&#xf0;" },
	{ "euml", "&#xeb;" }, { "frac12", "&#xbd;" }, { "frac14", "&#xbc;" },
	{ "frac34", "&#xbe;" }, { "gt", "&#x3e;" }, { "iacute", "&#xed;" },
	{ "icirc", "&#xee;" }, { "iexcl", "&#xa1;" }, { "igrave", "&#xec;" },
	{ "iquest", "&#xbf;" }, { "iuml", "&#xef;" }, { "laquo", "&#xab;" },
	{ "lt", "&#x3c;" }, { "macr", "&#xaf;" }, { "micro", "&#xb5;" },
	{ "middot", "&#xb7;" }, { "nbsp", "&#xa0;" }, { "not", "&#xac;" },
	{ "ntilde", "&#xf1;" }, { "oacute", "&#xf3;" }, { "ocirc", "&#xf4;" },
	{ "ograve", "&#xf2;" }, { "ordf", "&#xaa;" }, { "ordm", "&#xba;" },
	{ "oslash", "&#xf8;" }, { "otilde", "&#xf5;" }, { "ouml", "&#xf6;" },
	{ "para", "&#xb6;" }, { "plusmn", "&#xb1;" }, { "pound", "&#xa3;" },
	{ "quot", "&#x22;" }, { "raquo", "&#xbb;" }, { "reg", "&#xae;" },
	{ "sect", "&#xa7;" }, { "shy", "&#xad;" }, { "sup1", "&#xb9;" },
	{ "sup2", "&#xb2;" }, { "sup3", "&#xb3;" }, { "szlig", "&#xdf;" },
	{ "thorn", "&#xfe;" }, { "times", "&#xd7;" }, { "uacute", "&#xfa;" },
	{ "ucirc", "&#xfb;" }, { "ugrave", "&#xf9;" }, { "uml", "&#xa8;" },
	{ "uuml", "&#xfc;" }, { "yacute", "&#xfd;" }, { "yen", "&#xa5;" },
	{ "yuml", "&#xff;" }
};

/*
 * HTML5 names (with ";") that begin with a legacy name and that libxml2's
 * HTML 4 table lacks: "&ltimes;" is U+22C9, not "<" and "imes;".
 */
static const struct ref semi_refs[] = {
	{ "centerdot", "&#xb7;" }, { "copysr", "&#x2117;" },
	{ "divideontimes", "&#x22c7;" }, { "gtcc", "&#x2aa7;" }, { "gtcir", "&#x2a7a;" },
	{ "gtdot", "&#x22d7;" }, { "gtlPar", "&#x2995;" }, { "gtquest", "&#x2a7c;" },
	{ "gtrapprox", "&#x2a86;" }, { "gtrarr", "&#x2978;" }, { "gtrdot", "&#x22d7;" },
	{ "gtreqless", "&#x22db;" }, { "gtreqqless", "&#x2a8c;" },
	{ "gtrless", "&#x2277;" }, { "gtrsim", "&#x2273;" }, { "ltcc", "&#x2aa6;" },
	{ "ltcir", "&#x2a79;" }, { "ltdot", "&#x22d6;" }, { "lthree", "&#x22cb;" },
	{ "ltimes", "&#x22c9;" }, { "ltlarr", "&#x2976;" }, { "ltquest", "&#x2a7b;" },
	{ "ltrPar", "&#x2996;" }, { "ltri", "&#x25c3;" }, { "ltrie", "&#x22b4;" },
	{ "ltrif", "&#x25c2;" }, { "notinE", "&#x22f9;&#x338;" },
	{ "notindot", "&#x22f5;&#x338;" }, { "notinva", "&#x2209;" },
	{ "notinvb", "&#x22f7;" }, { "notinvc", "&#x22f6;" }, { "notni", "&#x220c;" },
	{ "notniva", "&#x220c;" }, { "notnivb", "&#x22fe;" }, { "notnivc", "&#x22fd;" },
	{ "parallel", "&#x2225;" }, { "timesb", "&#x22a0;" }, { "timesbar", "&#x2a31;" },
	{ "timesd", "&#x2a30;" }
};

#define REF_NAME_MAX	32	/* longer than any HTML5 name */

static int
ref_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ref *)elem)->name);
}

static const struct ref *
ref_find(const struct ref *tab, size_t n, const char *name)
{
	return bsearch(name, tab, n, sizeof(*tab), ref_cmp);
}

static bool
is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
 * The reference at s (just after "&", len bytes left): how many name bytes
 * it consumes and, in *repl, what replaces "&" and them; 0 when it is left to
 * libxml2 (numeric, known with ";", or no legacy name at all).
 */
static size_t
ref_at(const char *s, size_t len, const char **repl)
{
	char name[REF_NAME_MAX + 1];
	const struct ref *r;
	size_t n = 0, k;

	while (n < len && n < REF_NAME_MAX && is_alnum(s[n]))
		n++;
	if (n < 2)
		return 0;
	memcpy(name, s, n);
	name[n] = '\0';
	if (n < len && s[n] == ';') {
		if (htmlEntityLookup((const xmlChar *)name) != NULL)
			return 0;
		if ((r = ref_find(semi_refs, MB_ARRAY_LEN(semi_refs), name)) != NULL) {
			*repl = r->repl;
			return n + 1;
		}
	}
	/* HTML5: the longest legacy name the text begins with. */
	for (k = n < 6 ? n : 6; k >= 2; k--) {
		name[k] = '\0';
		if ((r = ref_find(legacy_refs, MB_ARRAY_LEN(legacy_refs), name)) != NULL) {
			*repl = r->repl;
			return k;
		}
	}
	return 0;
}

/* Where the construct opened by "<" at s[i] ends (index past it), or i when it is text. */
static size_t
markup_end(const char *s, size_t len, size_t i)
{
	const char *e;
	size_t j = i + 1;
	char q = 0;

	if (j < len && (s[j] == '!' || s[j] == '?')) {
		if (len - j >= 3 && s[j + 1] == '-' && s[j + 2] == '-') {
			e = memmem(s + j + 3, len - j - 3, "-->", 3);
			return e ? (size_t)(e - s) + 3 : len;
		}
		e = memchr(s + j, '>', len - j);
		return e ? (size_t)(e - s) + 1 : len;
	}
	if (j < len && s[j] == '/')
		j++;
	if (j >= len || !((s[j] | 0x20) >= 'a' && (s[j] | 0x20) <= 'z'))
		return i;	/* "a < b" is text */
	for (; j < len; j++) {
		if (q != 0) {
			if (s[j] == q)
				q = 0;
		} else if (s[j] == '"' || s[j] == '\'')
			q = s[j];
		else if (s[j] == '>')
			return j + 1;
	}
	return len;
}

/* After <script> or <style> (tag at [i, j)): past the raw text up to its end tag. */
static size_t
rawtext_end(const char *s, size_t len, size_t i, size_t j)
{
	static const char *const raw[] = { "script", "style" };

	for (size_t r = 0; r < MB_ARRAY_LEN(raw); r++) {
		size_t n = strlen(raw[r]);
		const char *p;

		if (j - i < n + 2 || strncasecmp(s + i + 1, raw[r], n) != 0 || is_alnum(s[i + 1 + n]))
			continue;
		for (p = s + j; (p = memchr(p, '<', len - (size_t)(p - s))) != NULL; p++)
			if ((size_t)(s + len - p) >= n + 2 && p[1] == '/' &&
			    strncasecmp(p + 2, raw[r], n) == 0)
				return (size_t)(p - s);
		return len;
	}
	return j;
}

char *
mb_html_legacy_refs(const char *s, size_t len, size_t *len_r)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);
	size_t i = 0, done = 0, j, n;
	const char *repl;
	bool changed = false;

	while (i < len) {
		const char *p = s + i;

		/* Jump to the next "<" or "&": most of the input is neither. */
		while (p < s + len && *p != '<' && *p != '&')
			p++;
		i = (size_t)(p - s);
		if (i >= len)
			break;
		if (s[i] == '<') {
			j = markup_end(s, len, i);
			i = j == i ? i + 1 : rawtext_end(s, len, i, j);
			continue;
		}
		if ((n = ref_at(s + i + 1, len - i - 1, &repl)) == 0) {
			i++;
			continue;
		}
		(void)mb_buf_add(&b, s + done, i - done);
		(void)mb_buf_adds(&b, repl);
		i += 1 + n;
		done = i;
		changed = true;
	}
	if (!changed) {
		mb_buf_release(&b);
		return NULL;
	}
	(void)mb_buf_add(&b, s + done, len - done);
	return mb_buf_detach(&b, len_r);
}
