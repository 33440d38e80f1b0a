/*
 * Composing a draft (create_draft, docs/writes.md): recipients, subject and
 * body in, RFC 5322 bytes out, built with GMime 3 (part of mailbox_sync:
 * mcpd never links it).  A reply derives "Re:", In-Reply-To and References
 * from the original as indexed.  Nothing here sends mail.
 */
#ifndef MAILBOX_COMPOSE_H
#define MAILBOX_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

#define MB_DRAFT_REFS_MAX	20	/* References kept: the first and the newest 19 */
#define MB_DRAFT_LINE_MAX	998	/* bytes of one recipient or of the subject (RFC 5322) */

/* The original of a reply, as indexed; every field borrowed, any may be NULL. */
struct mb_draft_original {
	const char	*message_id;	/* without <> */
	const char	*refs;		/* space-separated ids without <>, oldest first */
	const char	*subject;
};

struct mb_draft {
	const char			*from;		/* "Name <addr>" or "addr"; NULL: no From */
	const char *const		*to;		/* each "Name <addr>" or "addr" */
	size_t				 n_to;
	const char *const		*cc;
	size_t				 n_cc;
	const char			*subject;	/* NULL or "": none (a reply: the original's) */
	const char			*body;		/* UTF-8 text; any line ending */
	const struct mb_draft_original	*reply_to;	/* NULL: not a reply */
	int64_t				 date;		/* unix seconds (Date, in local time) */
};

/*
 * Build the draft.  Refused (-1, MB_E_INVALID, err says which field) when a
 * recipient is not one email address, when the subject or a recipient holds
 * a control character or passes MB_DRAFT_LINE_MAX, or when the body is not
 * UTF-8.  On success *raw_r (len *len_r, CRLF line endings, NUL-terminated)
 * and *message_id_r (without <>) are the caller's (free).
 */
int	mb_compose_draft(const struct mb_draft *d, char **raw_r, size_t *len_r,
	    char **message_id_r, struct mb_err *err);

/* "Re: " + subject unless it already starts with "Re:" (any case); caller frees. */
char	*mb_compose_reply_subject(const char *subject);

#endif
