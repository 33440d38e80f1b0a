/*
 * Placeholder text parts: a multipart/alternative whose text/plain part only
 * says "view this message in a browser" beside an HTML part that holds the
 * real content (newsletters, invoices, receipts).  The rule is in
 * docs/normaliser.md ("Body assembly"); mime.c applies it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "mime-private.h"

/*
 * Words that such a part uses, lower case.  English, and the common French,
 * German, Spanish, Italian and Dutch forms; a short part naming none of them
 * is a short message, and stays.
 */
static const char *const placeholder_words[] = {
	"browser", "html", "web version", "webversion", "online version", "view online",
	"view this", "view it", "view the", "read online", "open this", "display this",
	"email client", "e-mail client", "mail client", "can't see", "cannot see",
	"trouble viewing", "unable to view", "does not support", "navigateur", "version web",
	"version en ligne", "navegador", "versión web", "versione web", "online ansehen",
	"webansicht", "bekijk", "online bekijken",
};

/* Whether s[0..len) contains word, ASCII case ignored. */
static bool
has_word(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; i + n <= len; i++)
		if (strncasecmp(s + i, word, n) == 0)
			return true;
	return false;
}

bool
mb_mime_placeholder(const char *plain, size_t plain_len, size_t html_text_len)
{
	size_t start = 0, end = plain_len, n;

	while (start < end && strchr(" \t\r\n", plain[start]) != NULL)
		start++;
	while (end > start && strchr(" \t\r\n", plain[end - 1]) != NULL)
		end--;
	n = end - start;
	if (n > MB_MIME_PLACEHOLDER_MAX)
		return false;
	if (html_text_len < 3 * n || html_text_len < n + MB_MIME_PLACEHOLDER_MORE)
		return false;
	for (size_t i = 0; i < sizeof(placeholder_words) / sizeof(placeholder_words[0]); i++)
		if (has_word(plain + start, n, placeholder_words[i]))
			return true;
	return false;
}
