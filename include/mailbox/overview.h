/*
 * Overviews of the index (libmailbox/core/index_overview.c,
 * index_contacts.c): counts of the mail a query matches, grouped; the
 * people in the mail; the threads awaiting a reply.  Read-only, one read
 * transaction each, current rows only.  Plain C data: every string is owned
 * by the page it is in and freed by that page's release function.
 * docs/index.md, "Overviews", says what each reads and what it costs.
 */
#ifndef MAILBOX_OVERVIEW_H
#define MAILBOX_OVERVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

#define MB_OVERVIEW_MAX_LIMIT	100	/* groups, contacts or threads per page at most */

struct mb_index;
struct mb_query;

/* What count_messages groups by. */
enum mb_count_group {
	MB_COUNT_FOLDER,
	MB_COUNT_YEAR,		/* the Date header's year, UTC: "2024" */
	MB_COUNT_MONTH,		/* "2024-03" */
	MB_COUNT_DAY,		/* "2024-03-01" */
	MB_COUNT_SENDER,	/* the From address, lower-cased */
	MB_COUNT_SENDER_DOMAIN,	/* what follows its '@' */
	MB_COUNT_LABEL,		/* each IMAP keyword (a message counts once per label) */
};

/*
 * The grouping named name ("folder", "year", "month", "day", "sender",
 * "sender_domain", "label"); 0, or -1 with err (MB_E_INVALID, listing them).
 */
int	mb_count_group_parse(const char *name, enum mb_count_group *g_r, struct mb_err *err);
const char	*mb_count_group_name(enum mb_count_group g);	/* static */

struct mb_count_row {
	char		*key;		/* owned; never NULL */
	int64_t		 count;
};

/*
 * One page of groups.  Dates group newest first; every other grouping
 * largest first, then by key.
 */
struct mb_count_page {
	struct mb_count_row *rows;	/* owned; n of them */
	size_t		 n;
	int64_t		 total;		/* messages the query matches */
	int64_t		 ungrouped;	/* of them, without a key (no date, no sender, no label) */
	int64_t		 groups;	/* groups in all pages */
	bool		 more;		/* a next page starts at next_offset */
	int64_t		 next_offset;
};

/*
 * Groups [offset, offset + limit) of the current mail q matches (q may be
 * empty: all mail), grouped by g.  limit is 1..MB_OVERVIEW_MAX_LIMIT.
 * Returns 0 with *page filled (release it with mb_count_page_release(),
 * also after -1), or -1 with err: MB_E_NOTFOUND when q names a folder that
 * does not exist, MB_E_INVALID for a bad limit or offset, else the index's.
 */
int	mb_overview_count(struct mb_index *idx, const struct mb_query *q, enum mb_count_group g,
	    int64_t offset, size_t limit, struct mb_count_page *page, struct mb_err *err);
void	mb_count_page_release(struct mb_count_page *page);	/* page becomes empty */

#define MB_CONTACT_MAX_NAMES	5	/* names kept per contact, most used first */

/* A person seen in From, To or Cc. */
struct mb_contact {
	char		*address;	/* owned, lower-cased */
	char		*names[MB_CONTACT_MAX_NAMES];	/* owned; n_names of them */
	size_t		 n_names;
	int64_t		 received_from;	/* messages they sent (From: them) */
	int64_t		 sent_to;	/* messages from the account's addresses to or cc them */
	int64_t		 messages;	/* messages naming them anywhere */
	bool		 has_dates;
	int64_t		 first_date;	/* unix seconds, when has_dates */
	int64_t		 last_date;
};

struct mb_contact_page {
	struct mb_contact *list;	/* owned; n of them */
	size_t		 n;
	bool		 more;
	int64_t		 next_offset;
};

/*
 * Contacts [offset, offset + limit) whose address or a name contains
 * fragment (case-insensitive for ASCII; NULL or "": everyone), ranked by
 * the mail exchanged with them (received_from + sent_to, then messages, then
 * address).  The account's own addresses are not listed.  Returns 0 with
 * *page filled (release with mb_contact_page_release(), also after -1), or
 * -1 with err (MB_E_INVALID for a bad limit or offset, else the index's).
 */
int	mb_overview_contacts(struct mb_index *idx, const char *fragment, int64_t offset,
	    size_t limit, struct mb_contact_page *page, struct mb_err *err);
void	mb_contact_page_release(struct mb_contact_page *page);	/* page becomes empty */

/* Whose turn a thread is. */
enum mb_await_dir {
	MB_AWAIT_OTHERS = 1 << 0,	/* the last message is from the account: waiting on others */
	MB_AWAIT_ME = 1 << 1,		/* the last is to the account, unanswered: waiting on me */
};

/* A thread awaiting a reply, described by its last message. */
struct mb_await_thread {
	int64_t		 thread_id;
	enum mb_await_dir dir;
	int64_t		 id;		/* the last message */
	int64_t		 date;		/* its date, unix seconds */
	char		*folder;	/* owned */
	char		*from;		/* owned; its From as displayed, or NULL */
	char		*to;		/* owned; its recipients as displayed, or NULL */
	char		*subject;	/* owned, or NULL */
	int64_t		 messages;	/* current messages in the thread */
};

struct mb_await_page {
	struct mb_await_thread *list;	/* owned; n of them, newest first */
	size_t		 n;
	bool		 more;
	int64_t		 next_offset;
};

/*
 * Threads [offset, offset + limit) whose last dated message (drafts, trash
 * and junk aside) is older than before (unix seconds) and, per dirs (a mask
 * of enum mb_await_dir), is from one of the account's addresses, or is
 * addressed to one of them, not from one, and not \Answered.  Newest first.
 * Returns 0 with *page filled (release with mb_await_page_release(), also
 * after -1), or -1 with err: MB_E_CONFIG when the index knows no address of
 * the account (mailbox/account.h), MB_E_INVALID for a bad argument, else the
 * index's.
 */
int	mb_overview_awaiting(struct mb_index *idx, unsigned dirs, int64_t before, int64_t offset,
	    size_t limit, struct mb_await_page *page, struct mb_err *err);
void	mb_await_page_release(struct mb_await_page *page);	/* page becomes empty */

#endif
