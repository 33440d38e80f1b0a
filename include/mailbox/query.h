/*
 * The search query language, compiled to an FTS5 MATCH expression plus SQL
 * filters.  Every user term becomes a quoted FTS5 string, so no input can
 * produce an FTS5 syntax error: operators, column names, '^', '*', ':' and
 * parentheses typed by a user are searched as text, never interpreted.
 *
 * Grammar (whitespace separated; ASCII field names are case-insensitive;
 * docs/query.md is the table, with examples):
 *   word            a term ("" is doubled inside the FTS5 string)
 *   "a phrase"      a phrase; an unbalanced quote runs to the end of input
 *   word*           a prefix query: "word"*
 *   -term           excludes messages matching term (needs a positive term)
 *   a OR b          either term (OR in capitals, between two terms)
 *   from:x to:x cc:x subject:x body:x   the term in that column only
 *                   (to: and cc: both search the recipients column)
 *   from:me to:me   from / to or cc one of the account's own addresses
 *   filename:x attachment:x   the term in the attachments' file names, or in
 *                   their extracted text (docs/attachments.md)
 *   folder:NAME in:NAME   only that folder (exact name; quote names with spaces)
 *   in:inbox in:sent in:drafts in:trash in:junk in:spam in:archive in:all
 *                   the folder of that special-use role (in:inbox: INBOX)
 *   after:DATE before:DATE   on or after / before that day (UTC; since: = after:)
 *   date:2024 date:2024-03 date:2024-03-01 date:A..B date:..B date:A..
 *   date:today date:yesterday   (the server's local time zone)
 *   newer_than:N older_than:N   N = 7d, 2w, 3m, 1y, counted from now
 *   size:N larger:N smaller:N size:A..B   N = 5000, 10K, 5M, 1G (1K = 1024)
 *   id:ID msgid:ID  the message with that Message-ID (<> optional)
 *   thread:N        the messages of thread N
 *   list:x          mail whose List-Id contains x
 *   label:x keyword:x tag:x   carries the IMAP keyword x (any case)
 *   account:NAME    the account NAME only (several: any of them); kept in
 *                   q->accounts for mcpd, which serves several indexes: the
 *                   search engine of one index never reads it
 *   has:attachment  is:unread is:read is:flagged is:starred is:answered
 *                   is:replied is:draft
 * Negation (-) applies to words and to has:, is:, label: and from:me/to:me;
 * the other filters say how to express the opposite instead.  Any other
 * NAME: is refused with the list of known prefixes (put text with a colon
 * in quotes to search for it; a URL, NAME://..., is searched as text).
 * A single CJK character becomes a prefix query, because the index holds
 * CJK text as overlapping bigrams.  NUL, control characters and bytes that
 * are not UTF-8 separate words.
 */
#ifndef MAILBOX_QUERY_H
#define MAILBOX_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

#define MB_QUERY_MAX_LEN	1024	/* bytes of query text */
#define MB_QUERY_MAX_TERMS	32
#define MB_QUERY_MAX_LABELS	8	/* label: filters in one query */

struct mb_query {
	char	*match;		/* owned; FTS5 MATCH expression; NULL: no text terms */
	char	*folder;	/* owned; exact folder name, or NULL for all */
	char	*role;		/* owned; the special-use role ("\Sent") of the one
				 * folder searched, or NULL (never with folder) */
	int64_t	 since;		/* unix seconds, inclusive; INT64_MIN: no bound */
	int64_t	 until;		/* unix seconds, exclusive; INT64_MAX: no bound */
	unsigned flags_set;	/* enum mb_flag bits that must be set */
	unsigned flags_clear;	/* enum mb_flag bits that must be clear */
	int	 has_attachment;	/* -1 either, 0 none, 1 at least one */
	int64_t	 size_min;	/* RFC822.SIZE bytes, inclusive; -1: no bound */
	int64_t	 size_max;	/* bytes, exclusive; -1: no bound */
	char	*msgid;		/* owned; a Message-ID without <>, or NULL */
	int64_t	 thread_id;	/* 0: any thread */
	char	*list;		/* owned, lower-cased; the List-Id contains it; NULL: any */
	char	*labels;	/* owned; keyword tests, see mb_labels_test(); NULL: none */
	int	 from_me;	/* -1 either, 1 from one of the account's addresses, 0 not */
	int	 to_me;		/* -1 either, 1 to or cc one of them, 0 neither */
	char	*dates;	/* owned; the date filters as given ("after:2024 newer_than:7d"),
				 * or NULL: what a cursor's hash holds when one is relative */
	bool	 dates_relative;	/* a date filter counts from now */
	int64_t	 now;		/* unix seconds that newer_than:, older_than: and
				 * date:today count from; 0: the clock when compiled.
				 * Set it after mb_query_init(), before compiling. */
	size_t	 n_terms;	/* positive text terms in match */
	const char *column;	/* static; the FTS5 column every positive term is
				 * restricted to (subject:a subject:b), or NULL */
	char	*accounts;	/* owned; the account: names, lower-cased, each once,
				 * separated by single spaces; NULL: none given */
	char	**hl;		/* owned; the positive terms' words, for highlighting */
	size_t	 n_hl;
};

/* An empty query (no terms, no filters). */
void	mb_query_init(struct mb_query *q);

/*
 * Compile text (len bytes, not necessarily NUL-terminated or valid UTF-8)
 * into q, which must have been initialised; filters already set in q (the
 * structured arguments of a tool) are narrowed, never widened.  On error
 * returns -1 with err (MB_E_INVALID) saying what to change, in words a
 * model can act on; q is then released.  The caller releases q.
 */
int	mb_query_compile(const char *text, size_t len, struct mb_query *q, struct mb_err *err);

/*
 * Narrow q to mail whose sender (the from_text column: name and address)
 * contains value (len bytes, any bytes) as a phrase: the structured "from"
 * of a search, one more term of q's MATCH expression, built as the query
 * text from:"value" would build it (a '"' in value separates words).  Its
 * words are not highlighted in excerpts.  Returns 0, or -1 with err
 * (MB_E_INVALID, in words a model can act on) when value holds nothing
 * searchable or is too long; q is unchanged then.
 */
int	mb_query_and_from(struct mb_query *q, const char *value, size_t len,
	    struct mb_err *err);

/*
 * True when q has neither text terms nor any filter.  account: is not one
 * here: it chooses indexes, not messages (a query of account: alone is empty).
 */
bool	mb_query_empty(const struct mb_query *q);

/*
 * Parse YYYY-MM-DD (a real calendar date, years 1970..9999) into the unix
 * time of that day's 00:00 UTC.  Returns 0, or -1 when s is not such a date.
 */
int	mb_query_parse_date(const char *s, size_t len, int64_t *t_r);

/*
 * The prefixes the compiler knows, as text for messages: "from: to: ..."
 * (static).
 */
const char	*mb_query_prefixes(void);

/*
 * Append the FTS5 string literal for s (len bytes) to out: "s" with "
 * doubled, and a space first when s starts with a control character (a
 * separator to the tokenizer: the same match), so that no phrase of it is
 * taken for an index word as it is (mb_cjk's raw terms, docs/index.md).
 */
struct mb_buf;
int	mb_query_quote(struct mb_buf *out, const char *s, size_t len);

void	mb_query_release(struct mb_query *q);	/* frees strings; q becomes empty */

/*
 * A short excerpt of text (len bytes of valid UTF-8) around the first place
 * a word of q's positive terms starts (case-insensitive for ASCII; every
 * term matches as a prefix, which covers most stemmed forms), about max_chars
 * characters, cut at word boundaries with "…" where text was cut, and every
 * occurrence inside marked **like this**.  Returns 0 with the excerpt
 * appended to out, or -1 when no term occurs literally (the caller falls back
 * to a snippet from the index's positions, which knows stemming and
 * diacritic folding, and tokenizes the text).
 */
int	mb_query_excerpt(const struct mb_query *q, const char *text, size_t len,
	    size_t max_chars, struct mb_buf *out);

/*
 * Where in text (len bytes) mb_query_excerpt() would find its first word:
 * 0 with the byte offset in *at_r, or -1 when no word of q occurs literally.
 */
int	mb_query_find(const struct mb_query *q, const char *text, size_t len, size_t *at_r);

#endif
