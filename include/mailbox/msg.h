/*
 * A normalised message: what the MIME normaliser (syncd) produces and what the
 * index stores.  Every string is UTF-8 and owned by the struct.
 */
#ifndef MAILBOX_MSG_H
#define MAILBOX_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mb_buf;

/*
 * One address.  Groups are flattened: each member carries the group's
 * display name in group, and a group with no members ("undisclosed-
 * recipients:;") is one entry with only group set.
 */
struct mb_addr {
	char	*name;	/* owned; display name, decoded; may be NULL */
	char	*addr;	/* owned; "user@host"; NULL for an empty group */
	char	*group;	/* owned; the group this address is listed in; NULL if none */
};

/*
 * Append "Name <addr>", "addr" or "Name" to b, the display name written as
 * an RFC 5322 phrase: left as it is when every character is atext (UTF-8
 * counts, RFC 6532) with single spaces between words, else as a quoted
 * string with '"' and '\' escaped.  Nothing when both are missing.
 * Returns 0, or -1 when b is full.
 */
int	mb_addr_format(struct mb_buf *b, const char *name, const char *addr);
/*
 * Append the list v[0..n) as an RFC 5322 address list: ", "-separated, and
 * consecutive members of a group as "Group: a, b;" ("Group:;" when empty).
 * Returns 0, or -1 when b is full.
 */
int	mb_addr_list_format(struct mb_buf *b, const struct mb_addr *v, size_t n);

struct mb_attachment {
	char		*filename;	/* owned; RFC 2231/2047 decoded; may be NULL */
	char		*mime_type;	/* owned; lower case "type/subtype" */
	char		*content_id;	/* owned; without <>; may be NULL */
	bool		 is_inline;	/* Content-Disposition: inline (or none, with a Content-ID) */
	uint64_t	 size;		/* decoded bytes */
	unsigned char	*data;		/* owned; decoded bytes (size of them); may be NULL once stored */
	char		 sha256[65];	/* hex of data, filled by whoever stores the blob; "" until then */
	char		*charset;	/* owned; a text part's declared charset; may be NULL */
	char		*text;		/* owned; extracted text (text_len bytes, UTF-8); may be NULL */
	size_t		 text_len;
	char		*text_status;	/* owned; "ok..." or why there is no text
					 * (mailbox/extract.h); NULL: not tried */
};

struct mb_msg {
	char		*subject;		/* owned; may be NULL */
	struct mb_addr	 from;
	struct mb_addr	*to;			/* owned array of n_to */
	size_t		 n_to;
	struct mb_addr	*cc;			/* owned array of n_cc */
	size_t		 n_cc;
	bool		 has_date;		/* false: Date missing or malformed */
	int64_t		 date;			/* seconds since the epoch, UTC */
	char		*message_id;		/* owned; without <>; may be NULL */
	char		*in_reply_to;		/* owned; the first In-Reply-To id, without <>; may be NULL */
	char		**parents;		/* owned array of n_parents: every In-Reply-To id, in order */
	size_t		 n_parents;		/* (parents[0] equals in_reply_to); at most MB_MSG_PARENTS_MAX */
	char		**references;		/* owned array of n_references ids, without <> */
	size_t		 n_references;
	char		*list_id;		/* owned; may be NULL */

	char		*body;			/* owned; normalised plain text, never NULL */
	size_t		 body_len;
	bool		 body_truncated;	/* cut at the body cap, marker appended */
	bool		 body_from_html;	/* no text/plain: the text came from HTML */

	struct mb_attachment	*attachments;	/* owned array of n_attachments */
	size_t		 n_attachments;

	char		*parse_error;		/* owned; NULL when the message parsed cleanly */
};

#define MB_MSG_PARENTS_MAX	32	/* In-Reply-To ids kept; a real reply names one or a few */

/* An empty message (body ""); the caller owns it.  Never NULL. */
struct mb_msg	*mb_msg_new(void);
/* NULL-safe; frees everything the struct owns and sets *msgp = NULL. */
void		 mb_msg_free(struct mb_msg **msgp);

/* Message flags as stored in the index (bit mask). */
enum mb_flag {
	MB_FLAG_SEEN = 1 << 0,
	MB_FLAG_ANSWERED = 1 << 1,
	MB_FLAG_FLAGGED = 1 << 2,
	MB_FLAG_DELETED = 1 << 3,
	MB_FLAG_DRAFT = 1 << 4,
};
#define MB_FLAG_COUNT	5

/*
 * The one table of flag names, in bit order (the order every list of flags
 * is written in).  word is the public spelling, what get_message and
 * search_messages answer ("seen"); imap is the IMAP system flag ("\Seen",
 * one backslash), what the write tools answer and syncd logs.  unset_word
 * names the flag's absence where answers do ("unread"), else NULL.
 * docs/mcpd.md says which spelling a client sees where.
 */
struct mb_flag_name {
	enum mb_flag	 bit;
	const char	*word;
	const char	*imap;
	const char	*unset_word;
};
extern const struct mb_flag_name mb_flag_names[MB_FLAG_COUNT];

/*
 * The flag a client named: its IMAP name or its public word, in any case
 * ("\Seen", "\SEEN", "seen").  Returns the bit, or 0 for anything else
 * (including "unread", which names no flag but its absence).
 */
enum mb_flag	mb_flag_parse(const char *s);

#endif
