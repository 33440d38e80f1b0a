/*
 * Inside the query compiler: the fields of the language, shared by the
 * parser (query.c) and the filters (query_filter.c).  Not a public header.
 */
#ifndef MAILBOX_QUERY_PRIVATE_H
#define MAILBOX_QUERY_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include "mailbox/err.h"

struct mb_query;

enum q_field {
	QF_NONE,
	/* text: a term in one FTS5 column */
	QF_FROM,
	QF_TO,
	QF_CC,
	QF_SUBJECT,
	QF_BODY,
	QF_FILENAME,	/* the attachments' names and text (docs/attachments.md) */
	QF_ATTACHMENT,
	/* filters: SQL bounds in struct mb_query */
	QF_FOLDER,
	QF_IN,
	QF_AFTER,
	QF_BEFORE,
	QF_DATE,
	QF_NEWER,
	QF_OLDER,
	QF_SIZE,
	QF_LARGER,
	QF_SMALLER,
	QF_ID,
	QF_THREAD,
	QF_LIST,
	QF_LABEL,
	QF_HAS,
	QF_IS,
	QF_ACCOUNT,	/* kept in q->accounts for the caller; never reaches SQL */
	QF_FROM_ME,	/* from:me, to:me and cc:me: not names in the table */
	QF_TO_ME,
};

/*
 * Narrow q by the filter field f (its name as typed in canonical case, its
 * value v of vlen bytes, negated or not).  Returns 0, or -1 with err
 * (MB_E_INVALID, in words a model can act on).
 */
int	q_filter_apply(struct mb_query *q, enum q_field f, const char *name, const char *v,
	    size_t vlen, bool neg, struct mb_err *err);

/*
 * Record a date filter (name, value) in q->dates; relative: it counts from
 * q->now (newer_than:, date:today), so the bounds alone would change with
 * the clock.
 */
void	q_dates_note(struct mb_query *q, const char *name, const char *v, size_t vlen,
	    bool relative);

#endif
