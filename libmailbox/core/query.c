/*
 * The search query compiler (include/mailbox/query.h).  The input is hostile
 * text typed by a user or a model; the output is an FTS5 expression in which
 * every user term is a quoted string, so the only FTS5 syntax in it is ours.
 * The prefix table is here; what each filter's value means is
 * query_filter.c's (docs/query.md is the user's table of both).
 *
 * Over 600 lines on purpose: the lexer, the parser and the renderer of one
 * small language share its token and node types, which stay private here so
 * that no other code can build FTS5 text.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mailbox/buf.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#include "query-private.h"

/* Every prefix, in the order the unknown-prefix error lists them. */
static const struct {
	const char	*name;
	enum q_field	 field;
	const char	*column;	/* FTS5 column, for text fields */
} q_fields[] = {
	{ "from", QF_FROM, "from_text" },
	{ "to", QF_TO, "recipients" },
	{ "cc", QF_CC, "recipients" },
	{ "subject", QF_SUBJECT, "subject" },
	{ "body", QF_BODY, "body" },
	{ "folder", QF_FOLDER, NULL },
	{ "in", QF_IN, NULL },
	{ "after", QF_AFTER, NULL },
	{ "since", QF_AFTER, NULL },
	{ "before", QF_BEFORE, NULL },
	{ "date", QF_DATE, NULL },
	{ "newer_than", QF_NEWER, NULL },
	{ "older_than", QF_OLDER, NULL },
	{ "size", QF_SIZE, NULL },
	{ "larger", QF_LARGER, NULL },
	{ "smaller", QF_SMALLER, NULL },
	{ "id", QF_ID, NULL },
	{ "msgid", QF_ID, NULL },
	{ "thread", QF_THREAD, NULL },
	{ "list", QF_LIST, NULL },
	{ "label", QF_LABEL, NULL },
	{ "keyword", QF_LABEL, NULL },
	{ "tag", QF_LABEL, NULL },
	{ "has", QF_HAS, NULL },
	{ "is", QF_IS, NULL },
	{ "filename", QF_FILENAME, "att_names" },	/* docs/attachments.md */
	{ "attachment", QF_ATTACHMENT, "att_text" },
	{ "account", QF_ACCOUNT, NULL },	/* resolved by mcpd (docs/mcpd.md, accounts) */
};

struct q_term {
	const char	*column;	/* NULL: all columns */
	char		*text;		/* owned, NUL-terminated */
	size_t		 len;
	bool		 prefix;
	bool		 neg;
	bool		 or_next;	/* joined to the next term by OR */
};

struct q_state {
	struct q_term	terms[MB_QUERY_MAX_TERMS * 2];
	size_t		n;
	size_t		n_pos;
};

void
mb_query_init(struct mb_query *q)
{
	memset(q, 0, sizeof(*q));
	q->since = INT64_MIN;
	q->until = INT64_MAX;
	q->has_attachment = -1;
	q->size_min = -1;
	q->size_max = -1;
	q->from_me = -1;
	q->to_me = -1;
}

void
mb_query_release(struct mb_query *q)
{
	free(q->match);
	free(q->folder);
	free(q->role);
	free(q->msgid);
	free(q->list);
	free(q->labels);
	free(q->dates);
	free(q->accounts);
	for (size_t i = 0; i < q->n_hl; i++)
		free(q->hl[i]);
	free(q->hl);
	mb_query_init(q);
}

bool
mb_query_empty(const struct mb_query *q)
{
	return q->match == NULL && q->folder == NULL && q->since == INT64_MIN &&
	    q->until == INT64_MAX && q->flags_set == 0 && q->flags_clear == 0 &&
	    q->has_attachment == -1 && q->role == NULL && q->size_min == -1 &&
	    q->size_max == -1 && q->msgid == NULL && q->thread_id == 0 && q->list == NULL &&
	    q->labels == NULL && q->from_me == -1 && q->to_me == -1;
}

/*
 * Copy text into out with every NUL, control character and byte that is not
 * part of valid UTF-8 turned into a space: the parser below then only ever
 * sees valid UTF-8 words separated by ASCII spaces.
 */
static int
sanitize(const char *text, size_t len, struct mb_buf *out)
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = mb_utf8_decode(text + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ||
		    cp == 0x2028 || cp == 0x2029 || mb_utf8_is_invisible(cp)) {
			if (mb_buf_addc(out, ' ') == -1)
				return -1;
			i += n ? n : 1;
			continue;
		}
		if (mb_buf_add(out, text + i, n) == -1)
			return -1;
		i += n;
	}
	return 0;
}

/* True when the term has something a tokenizer would index (a letter or digit, roughly). */
static bool
searchable(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (isalnum((unsigned char)s[i]) || (unsigned char)s[i] >= 0x80)
			return true;
	return false;
}

/* A single CJK character: the index holds bigrams, so it must be a prefix. */
static bool
single_cjk(const char *s, size_t len)
{
	uint32_t cp;
	size_t n = mb_utf8_decode(s, len, &cp);

	return n != 0 && n == len && mb_utf8_is_cjk(cp);
}

int
mb_query_quote(struct mb_buf *out, const char *s, size_t len)
{
	size_t i;

	if (mb_buf_addc(out, '"') == -1)
		return -1;
	/*
	 * A control character is a separator to the tokenizer, so a space
	 * before it changes no match; and a phrase that starts with one could
	 * be taken for an index word as it is (MB_FTS_RAW_TERM, mb_cjk).
	 */
	if (len > 0 && (unsigned char)s[0] < 0x20 && mb_buf_addc(out, ' ') == -1)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] == '"' && mb_buf_addc(out, '"') == -1)
			return -1;
		if (mb_buf_addc(out, s[i]) == -1)
			return -1;
	}
	return mb_buf_addc(out, '"');
}

/* The field named s (len bytes), with its canonical name and FTS5 column. */
static enum q_field
field_lookup(const char *s, size_t len, const char **name_r, const char **column_r)
{
	size_t i;

	for (i = 0; i < MB_ARRAY_LEN(q_fields); i++)
		if (strlen(q_fields[i].name) == len && strncasecmp(q_fields[i].name, s, len) == 0) {
			*name_r = q_fields[i].name;
			*column_r = q_fields[i].column;
			return q_fields[i].field;
		}
	*name_r = NULL;
	*column_r = NULL;
	return QF_NONE;
}

static int
add_term(struct q_state *st, const char *column, const char *s, size_t len, bool prefix,
    bool neg, struct mb_err *err)
{
	struct q_term *t;

	if (!searchable(s, len))
		return 0;	/* punctuation only: nothing a tokenizer would index */
	if (st->n == MB_ARRAY_LEN(st->terms) || (!neg && st->n_pos == MB_QUERY_MAX_TERMS))
		return mb_err_set(err, MB_E_INVALID,
		    "too many search terms (at most %d): keep the few most distinctive words",
		    MB_QUERY_MAX_TERMS);
	t = &st->terms[st->n++];
	t->column = column;
	t->text = mb_xstrndup(s, len);
	t->len = len;
	t->prefix = prefix || single_cjk(s, len);
	t->neg = neg;
	t->or_next = false;
	if (!neg)
		st->n_pos++;
	return 0;
}

/*
 * The error for an unknown NAME: prefix: every known one, so that a model
 * can rewrite its query (a word with a colon in it is searched in quotes).
 */
static int
unknown_prefix(const char *s, size_t len, struct mb_err *err)
{
	struct mb_buf b = MB_BUF_INIT(1024);
	int rc;

	for (size_t i = 0; i < MB_ARRAY_LEN(q_fields); i++)
		mb_buf_addf(&b, "%s%s:", i ? " " : "", q_fields[i].name);
	rc = mb_err_set(err, MB_E_INVALID, "unknown prefix '%.*s:'; the known ones are %s; "
	    "to search for text with a colon, put it in quotes (\"%.*s:\")",
	    (int)(len > 40 ? 40 : len), s, b.data ? b.data : "", (int)(len > 40 ? 40 : len), s);
	mb_buf_release(&b);
	return rc;
}

static int
render_term(struct mb_buf *out, const struct q_term *t)
{
	if (t->column != NULL && mb_buf_addf(out, "{%s} : ", t->column) == -1)
		return -1;
	if (mb_query_quote(out, t->text, t->len) == -1)
		return -1;
	return t->prefix ? mb_buf_addc(out, '*') : 0;
}

/* Positive groups joined by AND (OR within a group), then NOT (negatives). */
static int
render(const struct q_state *st, struct mb_buf *out)
{
	size_t i, n_neg = 0;
	bool first = true, in_group = false;

	for (i = 0; i < st->n; i++) {
		const struct q_term *t = &st->terms[i];

		if (t->neg)
			continue;
		if (!in_group) {
			if (!first && mb_buf_adds(out, " AND ") == -1)
				return -1;
			if (t->or_next && mb_buf_addc(out, '(') == -1)
				return -1;
		}
		first = false;
		if (render_term(out, t) == -1)
			return -1;
		if (t->or_next) {
			if (mb_buf_adds(out, " OR ") == -1)
				return -1;
			in_group = true;
		} else {
			if (in_group && mb_buf_addc(out, ')') == -1)
				return -1;
			in_group = false;
		}
	}
	for (i = 0; i < st->n; i++) {
		if (!st->terms[i].neg)
			continue;
		if (mb_buf_adds(out, n_neg == 0 ? " NOT (" : " OR ") == -1 ||
		    render_term(out, &st->terms[i]) == -1)
			return -1;
		n_neg++;
	}
	if (n_neg > 0 && mb_buf_addc(out, ')') == -1)
		return -1;
	return 0;
}

static int
parse(struct mb_query *q, const char *s, size_t len, struct q_state *st, struct mb_err *err)
{
	size_t i = 0, start, j;
	bool pending_or = false;

	while (i < len) {
		bool neg = false, prefix = false, phrase = false;
		const char *column = NULL, *fname = NULL;
		enum q_field f = QF_NONE;
		const char *v;
		size_t vlen;

		while (i < len && s[i] == ' ')
			i++;
		if (i == len)
			break;
		if (s[i] == '-' && i + 1 < len && s[i + 1] != ' ') {
			neg = true;
			i++;
		}
		/*
		 * field:value: an ASCII name, then a colon.  A name we do not know
		 * is an error, never text, unless it starts a URL (name://).
		 */
		for (j = i; j < len && (isalpha((unsigned char)s[j]) || s[j] == '_'); j++)
			;
		if (j > i && j < len && s[j] == ':') {
			f = field_lookup(s + i, j - i, &fname, &column);
			if (f != QF_NONE)
				i = j + 1;
			else if (!(j + 2 < len && s[j + 1] == '/' && s[j + 2] == '/'))
				return unknown_prefix(s + i, j - i, err);
		}
		if (i < len && s[i] == '"') {
			phrase = true;
			start = ++i;
			while (i < len && s[i] != '"')
				i++;
			v = s + start;
			vlen = i - start;
			if (i < len)
				i++;	/* the closing quote */
			if (i < len && s[i] == '*') {
				prefix = true;
				while (i < len && s[i] == '*')
					i++;
			}
		} else {
			start = i;
			while (i < len && s[i] != ' ')
				i++;
			v = s + start;
			vlen = i - start;
			while (vlen > 0 && v[vlen - 1] == '*') {
				prefix = true;
				vlen--;
			}
		}
		if ((f == QF_FROM || f == QF_TO || f == QF_CC) && !phrase && !prefix && vlen == 2 &&
		    strncasecmp(v, "me", 2) == 0) {
			/* from:me, to:me, cc:me: the account's own addresses */
			f = f == QF_FROM ? QF_FROM_ME : QF_TO_ME;
			column = NULL;
		}
		if (f != QF_NONE && column == NULL) {
			if (q_filter_apply(q, f, fname, v, vlen, neg, err) == -1)
				return -1;
			pending_or = false;
			continue;
		}
		if (f == QF_NONE && !neg && !phrase && !prefix && vlen == 2 &&
		    memcmp(v, "OR", 2) == 0) {
			/* OR between two positive terms; a dangling OR is dropped. */
			if (st->n_pos > 0)
				pending_or = true;
			continue;
		}
		if (pending_or && !neg && searchable(v, vlen)) {
			/* join the last positive term to this one */
			for (j = st->n; j-- > 0;)
				if (!st->terms[j].neg) {
					st->terms[j].or_next = true;
					break;
				}
		}
		if (!neg)
			pending_or = false;
		if (add_term(st, column, v, vlen, prefix, neg, err) == -1)
			return -1;
	}
	return 0;
}

/* The column all positive terms are restricted to, or NULL. */
static const char *
one_column(const struct q_state *st)
{
	const char *column = NULL;

	for (size_t i = 0; i < st->n; i++) {
		if (st->terms[i].neg)
			continue;
		if (st->terms[i].column == NULL ||
		    (column != NULL && strcmp(column, st->terms[i].column) != 0))
			return NULL;
		column = st->terms[i].column;
	}
	return column;
}

int
mb_query_compile(const char *text, size_t len, struct mb_query *q, struct mb_err *err)
{
	struct mb_buf clean = MB_BUF_INIT(MB_QUERY_MAX_LEN * 3 + 16);
	struct mb_buf out = MB_BUF_INIT(64 * 1024);
	struct q_state *st;
	size_t i;
	int rc = -1;

	if (len > MB_QUERY_MAX_LEN) {
		mb_err_set(err, MB_E_INVALID,
		    "query too long (%zu bytes; at most %d): keep the few most distinctive words",
		    len, MB_QUERY_MAX_LEN);
		mb_query_release(q);
		return -1;
	}
	st = mb_xcalloc(1, sizeof(*st));
	if (sanitize(text, len, &clean) == -1) {
		mb_err_set(err, MB_E_INTERNAL, "query: out of buffer space");
		goto out;
	}
	if (parse(q, clean.data, clean.len, st, err) == -1)
		goto out;
	if (st->n_pos == 0 && st->n > 0) {
		mb_err_set(err, MB_E_INVALID,
		    "a query cannot consist only of excluded terms (-word): add a word to search for");
		goto out;
	}
	if (st->n_pos > 0) {
		if (render(st, &out) == -1) {
			mb_err_set(err, MB_E_INTERNAL, "query: out of buffer space");
			goto out;
		}
		free(q->match);
		q->match = mb_buf_detach(&out, NULL);
		q->n_terms = st->n_pos;
		q->column = one_column(st);
		/* the words of the positive terms, for mb_query_excerpt() */
		for (i = 0; i < st->n; i++) {
			const char *w = st->terms[i].text, *end = w + st->terms[i].len;

			if (st->terms[i].neg)
				continue;
			while (w < end) {
				const char *b;

				while (w < end && (unsigned char)*w < 0x80 && !isalnum((unsigned char)*w))
					w++;
				b = w;
				while (w < end && ((unsigned char)*w >= 0x80 || isalnum((unsigned char)*w)))
					w++;
				if (w > b && q->n_hl < 2 * MB_QUERY_MAX_TERMS) {
					q->hl = mb_xrealloc(q->hl, (q->n_hl + 1) * sizeof(*q->hl));
					q->hl[q->n_hl++] = mb_xstrndup(b, (size_t)(w - b));
				}
			}
		}
	}
	rc = 0;
out:
	for (i = 0; i < st->n; i++)
		free(st->terms[i].text);
	free(st);
	mb_buf_release(&clean);
	mb_buf_release(&out);
	if (rc == -1)
		mb_query_release(q);
	return rc;
}

static bool
word_byte(unsigned char c)
{
	return c >= 0x80 || isalnum(c);
}

/* Length of the highlight term matching at text[i], or 0. */
static size_t
match_at(const struct mb_query *q, const char *text, size_t len, size_t i)
{
	bool cjk_or_start = i == 0 || !word_byte((unsigned char)text[i - 1]);

	for (size_t k = 0; k < q->n_hl; k++) {
		size_t n = strlen(q->hl[k]);
		uint32_t cp = 0;

		if (n == 0 || n > len - i)
			continue;
		/* CJK has no word boundaries: a CJK term may start anywhere */
		if (!cjk_or_start && !(mb_utf8_decode(q->hl[k], n, &cp) &&
		    mb_utf8_is_cjk(cp)))
			continue;
		if (strncasecmp(text + i, q->hl[k], n) == 0)
			return n;
	}
	return 0;
}

/*
 * The bytes a term of q can start with, either case (match_at() compares
 * with strncasecmp()).  The search for the first match tries match_at() only
 * where one of them stands: a body is mostly other bytes, and trying every
 * term at every character was most of the cost of an excerpt.
 */
static void
first_bytes(const struct mb_query *q, bool set[256])
{
	memset(set, 0, 256 * sizeof(set[0]));
	for (size_t k = 0; k < q->n_hl; k++) {
		unsigned char c = (unsigned char)q->hl[k][0];

		set[c] = true;
		set[(unsigned char)tolower(c)] = true;
		set[(unsigned char)toupper(c)] = true;
	}
}

/* The first place in text a term of q starts, or len. */
static size_t
first_match(const struct mb_query *q, const char *text, size_t len, const bool can_start[256])
{
	for (size_t i = 0; i < len; i++)
		if (can_start[(unsigned char)text[i]] && ((unsigned char)text[i] & 0xc0) != 0x80 &&
		    match_at(q, text, len, i) > 0)
			return i;
	return len;
}

int
mb_query_find(const struct mb_query *q, const char *text, size_t len, size_t *at_r)
{
	bool can_start[256];

	first_bytes(q, can_start);
	*at_r = first_match(q, text, len, can_start);
	return *at_r < len ? 0 : -1;
}

int
mb_query_excerpt(const struct mb_query *q, const char *text, size_t len, size_t max_chars,
    struct mb_buf *out)
{
	size_t i, first, start, end, chars, m;
	bool can_start[256];

	first_bytes(q, can_start);
	if ((first = first_match(q, text, len, can_start)) == len)
		return -1;
	/* back up about a quarter of the budget, to a word start */
	start = first;
	for (chars = 0; start > 0 && chars < max_chars / 4; chars++) {
		start--;
		while (start > 0 && ((unsigned char)text[start] & 0xc0) == 0x80)
			start--;
	}
	if (start > 0) {
		size_t s2 = start;

		while (s2 < first && word_byte((unsigned char)text[s2]))
			s2++;	/* skip the partial word */
		start = s2 < first ? s2 : start;
		while (start < first && (text[start] == ' ' || text[start] == '\n'))
			start++;
	}
	/* forward to max_chars characters, then back to a word end */
	end = start;
	for (chars = 0; end < len && chars < max_chars; chars++) {
		end++;
		while (end < len && ((unsigned char)text[end] & 0xc0) == 0x80)
			end++;
	}
	if (end < len) {
		size_t e2 = end;

		while (e2 > first && word_byte((unsigned char)text[e2 - 1]) &&
		    word_byte((unsigned char)text[e2]))
			e2--;
		if (e2 > first)
			end = e2;
	}
	if (start > 0 && mb_buf_adds(out, "\xe2\x80\xa6") == -1)
		return -1;
	for (i = start; i < end;) {
		m = can_start[(unsigned char)text[i]] && ((unsigned char)text[i] & 0xc0) != 0x80 ?
		    match_at(q, text, len, i) : 0;
		if (m > 0) {
			size_t w = i + m;

			/* mark the rest of the word (meeting -> **meetings**), but not
			 * into CJK, which has no spaces between words */
			while (w < end) {
				uint32_t cp = 0;
				size_t n = mb_utf8_decode(text + w, len - w, &cp);

				if (n == 0 || !word_byte((unsigned char)text[w]) || mb_utf8_is_cjk(cp))
					break;
				w += n;
			}
			if (mb_buf_adds(out, "**") == -1 || mb_buf_add(out, text + i, w - i) == -1 ||
			    mb_buf_adds(out, "**") == -1)
				return -1;
			i = w;
			continue;
		}
		if (mb_buf_addc(out, text[i] == '\r' ? ' ' : text[i]) == -1)
			return -1;
		i++;
	}
	if (end < len && mb_buf_adds(out, "\xe2\x80\xa6") == -1)
		return -1;
	return 0;
}

/*
 * The from filter is one phrase term of the from_text column, built and
 * rendered like a from:"..." term of the query text, then ANDed to what q
 * already matches.  Its words are not added to q->hl: the excerpt shows
 * where the query's own words are in the body, never the sender.
 */
int
mb_query_and_from(struct mb_query *q, const char *value, size_t len, struct mb_err *err)
{
	struct mb_buf clean = MB_BUF_INIT(MB_QUERY_MAX_LEN * 3 + 16);
	struct mb_buf out = MB_BUF_INIT(64 * 1024);
	const char *name, *column;
	struct q_state *st;
	int rc = -1;

	/* measured as the query text from:"value" it stands for (7 bytes more) */
	if (len + 7 > MB_QUERY_MAX_LEN)
		return mb_err_set(err, MB_E_INVALID, "from must contain a name or an address: "
		    "query too long (%zu bytes; at most %d): keep the few most distinctive words",
		    len + 7, MB_QUERY_MAX_LEN);
	(void)field_lookup("from", 4, &name, &column);
	st = mb_xcalloc(1, sizeof(*st));
	/* a quote would end the phrase in query text: here it separates words too */
	for (size_t i = 0; i < len; i++)
		if (mb_buf_addc(&out, value[i] == '"' ? ' ' : value[i]) == -1)
			goto nospace;
	if (sanitize(out.data, out.len, &clean) == -1)
		goto nospace;
	mb_buf_reset(&out);
	if (add_term(st, column, clean.data, clean.len, false, false, err) == -1)
		goto out;
	if (st->n == 0) {
		mb_err_set(err, MB_E_INVALID, "from must contain a name or an address");
		goto out;
	}
	if (q->match != NULL && mb_buf_addf(&out, "(%s) AND ", q->match) == -1)
		goto nospace;
	if (render(st, &out) == -1)
		goto nospace;
	if (q->match != NULL && (q->column == NULL || strcmp(q->column, column) != 0))
		q->column = NULL;	/* the terms are in more than one column */
	else
		q->column = column;
	free(q->match);
	q->match = mb_buf_detach(&out, NULL);
	q->n_terms++;
	rc = 0;
	goto out;
nospace:
	mb_err_set(err, MB_E_INTERNAL, "query: out of buffer space");
out:
	for (size_t i = 0; i < st->n; i++)
		free(st->terms[i].text);
	free(st);
	mb_buf_release(&clean);
	mb_buf_release(&out);
	return rc;
}
