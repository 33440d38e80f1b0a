/*
 * What a reader shows of the index (libmailbox/core/index_read.c): one
 * message with a page of its body, a page of a thread, the folders with
 * their counts, the newest messages.  Plain C data; every string is owned
 * by the struct it is in and freed by that struct's release function, and
 * is NULL where the index holds none.  Strings are the index's bytes:
 * valid UTF-8 as syncd writes them, but a reader should not rely on it.
 */
#ifndef MAILBOX_READ_H
#define MAILBOX_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_index;

/* An attachment's metadata (its text: mailbox/attachments.h). */
struct mb_read_attachment {
	char		*name;		/* the file name, or NULL */
	char		*type;		/* MIME type */
	int64_t		 size;		/* bytes, decoded */
	bool		 is_inline;
	int64_t		 id;		/* attachments.id: get_attachment's id */
	bool		 has_text;	/* extracted text is stored */
	char		*text_status;	/* "ok..." or why there is no text; NULL: not tried yet */
};

/* One message, with one page of its body. */
struct mb_read_message {
	int64_t		 id;
	char		*folder;
	char		*folder_role;	/* "\\Sent"...; NULL when none */
	int64_t		 thread_id;
	char		*message_id;
	char		*in_reply_to;
	bool		 has_date;
	int64_t		 date;		/* the Date header, unix seconds, when has_date */
	bool		 has_received;
	int64_t		 received;	/* INTERNALDATE, unix seconds, when has_received */
	/*
	 * true: the message is ordered and filtered by date; false: by received
	 * (or by nothing, when neither is known).  The rule: docs/normaliser.md.
	 */
	bool		 dated_by_header;
	char		*from;		/* the From header as indexed for search */
	char		*from_name;	/* its display name, decoded */
	char		*from_addr;	/* its address */
	char		*refs;		/* References: space-separated ids, oldest first */
	char		*recipients;	/* every recipient as displayed (to and cc) */
	char		*to_json;	/* [{"name":..,"addr":..}, ...] as stored, or NULL */
	char		*cc_json;	/* likewise */
	char		*subject;
	unsigned	 flags;		/* enum mb_flag bits */
	char		*list_id;
	char		*keywords;	/* its IMAP keywords (labels), space-separated, or NULL */
	/* the page: body_len bytes from character offset on (NUL-terminated) */
	char		*body;
	size_t		 body_len;
	size_t		 body_chars;	/* characters in the whole body */
	bool		 more;		/* the body goes on at character next_offset */
	int64_t		 next_offset;
	bool		 body_truncated;	/* syncd cut the body when indexing it */
	bool		 headers_only;	/* over syncd's size cap: only headers indexed */
	uint64_t	 size;		/* the message's size on the server (RFC822.SIZE) */
	struct mb_read_attachment *atts;	/* n_atts, in MIME order */
	size_t		 n_atts;
};

/*
 * Message id with at most page_chars characters of its body from character
 * offset on (characters are UTF-8 sequences; a stray byte counts as one).
 * Returns 0 with *m filled (release it with mb_read_message_release()), or
 * -1 with err: MB_E_NOTFOUND when there is no such message, or when it is
 * not current (an older UIDVALIDITY generation of its folder, or a folder
 * the server no longer lists): mb_read_gone() says which.
 */
int	mb_read_message(struct mb_index *idx, int64_t id, size_t offset, size_t page_chars,
	    struct mb_read_message *m, struct mb_err *err);
void	mb_read_message_release(struct mb_read_message *m);	/* m becomes empty */

/*
 * What became of a message id that is no longer served: 1 with a sentence
 * for the client in buf (len bytes, NUL-terminated) -- "this folder was
 * re-created on the server; the current copy is id N" when a current row
 * has its Message-ID, else "no longer in the mailbox" -- or 0 when id is
 * current or names no row at all (then buf is untouched); -1 with err.
 * The sentence names ids as id_base + the index's id (mcpd's account
 * prefix, docs/mcpd.md; 0 for the index's own ids).
 */
int	mb_read_gone(struct mb_index *idx, int64_t id, int64_t id_base, char *buf, size_t len,
	    struct mb_err *err);

/* One message of a thread. */
struct mb_read_thread_item {
	int64_t		 id;
	char		*folder;
	bool		 has_date;
	int64_t		 date;
	char		*from;
	char		*subject;
	char		*preview;	/* the body's first preview_chars characters */
};

/* A page of a thread, oldest first by sort date (undated last, then by id). */
struct mb_read_thread {
	int64_t		 thread_id;
	int64_t		 total;		/* messages in the whole thread */
	struct mb_read_thread_item *items;	/* n of them */
	size_t		 n;
};

/*
 * The thread of message id: at most limit messages from position offset on,
 * each with preview_chars characters of its body.  Returns 0 with *t filled
 * (release it with mb_read_thread_release()), or -1 with err: MB_E_NOTFOUND
 * when there is no such message.
 */
int	mb_read_thread(struct mb_index *idx, int64_t id, int64_t offset, size_t limit,
	    size_t preview_chars, struct mb_read_thread *t, struct mb_err *err);
void	mb_read_thread_release(struct mb_read_thread *t);	/* t becomes empty */

/* A folder with its counts. */
struct mb_read_folder {
	char		*name;
	char		*role;		/* special use, or NULL */
	bool		 role_by_name;	/* the role was found by name, not SPECIAL-USE */
	int64_t		 last_sync;	/* unix seconds; 0: never */
	int64_t		 messages;
	int64_t		 unread;	/* without \Seen */
};

/*
 * Every folder, by name.  *list_r (n_r entries) is the caller's: free it
 * with mb_read_folders_free().
 */
int	mb_read_folders(struct mb_index *idx, struct mb_read_folder **list_r, size_t *n_r,
	    struct mb_err *err);
void	mb_read_folders_free(struct mb_read_folder **listp, size_t n);

/* A message in the newest-first list. */
struct mb_read_recent {
	int64_t		 id;
	char		*subject;
	bool		 has_date;
	int64_t		 date;		/* the sort date (what orders the list), when has_date */
};

/*
 * Messages newest first by sort date (undated last, then highest id): at most limit from
 * position offset on; *more_r tells whether any follow.  *list_r (n_r
 * entries) is the caller's: free it with mb_read_recent_free().
 */
int	mb_read_recent(struct mb_index *idx, int64_t offset, size_t limit,
	    struct mb_read_recent **list_r, size_t *n_r, bool *more_r, struct mb_err *err);
void	mb_read_recent_free(struct mb_read_recent **listp, size_t n);

#endif
