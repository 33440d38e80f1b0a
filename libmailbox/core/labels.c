/*
 * Labels (include/mailbox/labels.h): splitting a stored keyword list, and
 * the SQL function the search statements filter label: with.  A function
 * rather than LIKE over the column: keywords may hold '%' and '_', and one
 * bound argument carries any number of label: terms of a query.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "mailbox/labels.h"
#include "mailbox/util.h"

#include "index-private.h"

/* The next space-separated word of *sp (advanced past it); length in *len_r, NULL at the end. */
static const char *
next_word(const char **sp, size_t *len_r)
{
	const char *s = *sp, *w;

	while (*s == ' ')
		s++;
	if (*s == '\0')
		return NULL;
	w = s;
	while (*s != '\0' && *s != ' ')
		s++;
	*len_r = (size_t)(s - w);
	*sp = s;
	return w;
}

/* True when keywords holds the keyword w (len bytes), in any ASCII case. */
static bool
has_keyword(const char *keywords, const char *w, size_t len)
{
	const char *k;
	size_t klen;

	while (keywords != NULL && (k = next_word(&keywords, &klen)) != NULL)
		if (klen == len && strncasecmp(k, w, len) == 0)
			return true;
	return false;
}

char **
mb_labels_split(const char *keywords, size_t *n_r)
{
	const char *s = keywords, *w;
	char **v = NULL;
	size_t n = 0, len;

	while (s != NULL && (w = next_word(&s, &len)) != NULL) {
		bool dup = false;

		if (w[0] == '\\')
			continue;	/* a system flag without a bit, not a label */
		for (size_t i = 0; i < n && !dup; i++)
			dup = strlen(v[i]) == len && strncasecmp(v[i], w, len) == 0;
		if (dup)
			continue;
		v = mb_xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = mb_xstrndup(w, len);
	}
	*n_r = n;
	return v;
}

void
mb_labels_free(char **labels, size_t n)
{
	for (size_t i = 0; labels != NULL && i < n; i++)
		free(labels[i]);
	free(labels);
}

bool
mb_labels_test(const char *keywords, const char *tests)
{
	const char *t;
	size_t len;

	while (tests != NULL && (t = next_word(&tests, &len)) != NULL) {
		if (len < 2 || (t[0] != '+' && t[0] != '-'))
			return false;	/* not built by the compiler: match nothing */
		if (has_keyword(keywords, t + 1, len - 1) != (t[0] == '+'))
			return false;
	}
	return true;
}

static void
labels_test_sql(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	sqlite3_result_int(ctx, mb_labels_test((const char *)sqlite3_value_text(argv[0]),
	    (const char *)sqlite3_value_text(argv[1])));
}

int
mb_labels_register(sqlite3 *db, struct mb_err *err)
{
	if (sqlite3_create_function(db, "mb_labels_test", 2,
	    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL, labels_test_sql, NULL,
	    NULL) != SQLITE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "index: cannot register mb_labels_test: %s",
		    sqlite3_errmsg(db));
	return 0;
}

bool
mb_labels_has(const char *keywords, const char *label)
{
	return label != NULL && has_keyword(keywords, label, strlen(label));
}

bool
mb_label_valid(const char *s, size_t max)
{
	size_t n = 0;

	if (s == NULL || *s == '\0')
		return false;
	for (; s[n] != '\0'; n++) {
		unsigned char ch = (unsigned char)s[n];

		if (n >= max || ch <= 0x20 || ch >= 0x7f || strchr("(){%*\"\\]", ch) != NULL)
			return false;
	}
	return true;
}
