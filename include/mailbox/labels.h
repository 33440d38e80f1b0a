/*
 * Labels: the IMAP keywords of a message ("$Label1", "project-x"), which the
 * index stores as they came from the server, space separated, in
 * messages.keywords (migrations/0001_init.sql).  An entry that starts with a
 * backslash is a system flag the index has no bit for, not a label.  IMAP
 * compares keywords without regard to ASCII case; so does everything here.
 */
#ifndef MAILBOX_LABELS_H
#define MAILBOX_LABELS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The labels in keywords (NULL or a stored messages.keywords value), in
 * stored order, duplicates (in any case) dropped: an owned array of *n_r
 * owned strings, NULL when there is none.  Free with mb_labels_free().
 */
char	**mb_labels_split(const char *keywords, size_t *n_r);
void	  mb_labels_free(char **labels, size_t n);	/* NULL-safe */

/*
 * The test behind label: (the SQL function mb_labels_test(keywords, tests)
 * that every index connection has): tests is a space-separated list of
 * "+label" (must be present) and "-label" (must be absent), as the query
 * compiler builds it.  True when keywords passes every one of them.
 */
bool	  mb_labels_test(const char *keywords, const char *tests);
/* Whether keywords (as stored) holds label, in any ASCII case. */
bool	  mb_labels_has(const char *keywords, const char *label);

/*
 * Whether s can be written as a label: a non-empty IMAP atom (RFC 3501
 * flag-keyword: printable ASCII without space and without any of
 * ( ) { % * " \ ]) of at most max bytes.  A leading backslash would name
 * a system flag, and \ is refused anywhere.
 */
bool	  mb_label_valid(const char *s, size_t max);

#endif
