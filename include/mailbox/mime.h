/*
 * The MIME normaliser (GMime 3): raw RFC 5322 bytes in, a normalised message
 * out.  Part of mailbox_sync: mcpd never links it.
 */
#ifndef MAILBOX_MIME_H
#define MAILBOX_MIME_H

#include <stdbool.h>
#include <stddef.h>

#include "mailbox/err.h"
#include "mailbox/msg.h"

struct mb_mime_opts {
	size_t		body_cap;		/* bytes of body text kept (cut at a UTF-8 boundary) */
	unsigned	max_depth;		/* MIME nesting followed at most */
	bool		keep_attachment_data;	/* fill mb_attachment.data */
};
#define MB_MIME_BODY_CAP	(1u << 20)
#define MB_MIME_OPTS_DEFAULT	{ .body_cap = MB_MIME_BODY_CAP, .max_depth = 32, \
				  .keep_attachment_data = true }

/* Once per process, before any parse (g_mime_init). */
void	mb_mime_global_init(void);

/*
 * Normalise one message.  raw is borrowed (only until this returns); opts may
 * be NULL for the defaults.  Malformed mail still gives a message, with what
 * could be read and msg->parse_error set: the call fails (-1, err set,
 * *msg_r NULL) only on an internal error.  On success *msg_r is the caller's
 * (mb_msg_free).
 */
int	mb_mime_parse(const char *raw, size_t len, const struct mb_mime_opts *opts,
	    struct mb_msg **msg_r, struct mb_err *err);

#endif
