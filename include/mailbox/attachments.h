/*
 * Attachments in the index (libmailbox/core/index_attachments.c): one
 * attachment's metadata and a page of its extracted text for the tools,
 * the attachments still waiting for extraction (rows stored before it
 * existed), and whether a blob is still referred to.  docs/attachments.md.
 */
#ifndef MAILBOX_ATTACHMENTS_H
#define MAILBOX_ATTACHMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_index;

/* One attachment with one page of its text.  Strings owned, NULL where none. */
struct mb_attachment_page {
	int64_t		 id;
	int64_t		 message_id;
	int		 ordinal;	/* 0-based position in the message */
	char		*name;
	char		*type;
	int64_t		 size;		/* decoded bytes */
	bool		 is_inline;
	char		*sha256;	/* the blob's name; NULL: no bytes stored */
	char		*status;	/* "ok..." or why there is no text; NULL: not tried yet */
	bool		 has_text;
	/* text_len bytes from character offset on (NUL-terminated; "" without text) */
	char		*text;
	size_t		 text_len;
	size_t		 text_chars;	/* characters in the whole text */
	bool		 more;
	int64_t		 next_offset;
};

/*
 * Attachment id with at most page_chars characters of its text from
 * character offset on.  0 with *a filled (mb_attachment_page_release), or
 * -1 with err: MB_E_NOTFOUND when there is no such attachment.
 */
int	mb_attachment_read(struct mb_index *idx, int64_t id, size_t offset, size_t page_chars,
	    struct mb_attachment_page *a, struct mb_err *err);
void	mb_attachment_page_release(struct mb_attachment_page *a);	/* a becomes empty */

/* An attachment whose blob is stored but whose text was never extracted. */
struct mb_attachment_backlog {
	int64_t		 id;
	char		 sha256[65];
	char		*type;		/* owned */
	char		*name;		/* owned; may be NULL */
};

/*
 * Up to max such attachments with id > after_id, by id: *v (n_r of them)
 * is the caller's (mb_attachment_backlog_free).  *left_r (may be NULL): how
 * many are waiting in all, for progress.
 */
int	mb_attachment_backlog(struct mb_index *idx, int64_t after_id, size_t max,
	    struct mb_attachment_backlog **v, size_t *n_r, int64_t *left_r, struct mb_err *err);
void	mb_attachment_backlog_free(struct mb_attachment_backlog **v, size_t n);

/*
 * Record the outcome of extracting attachment id (text may be NULL; status
 * "ok..." or the reason) and refresh its message's searchable attachment
 * text.  Read-write handles only; atomic.
 */
int	mb_attachment_set_text(struct mb_index *idx, int64_t id, const char *text, size_t len,
	    const char *status, struct mb_err *err);

/* Whether any attachment row names blob sha256 (hex). */
int	mb_attachment_blob_used(struct mb_index *idx, const char *sha256, bool *used_r,
	    struct mb_err *err);

#endif
