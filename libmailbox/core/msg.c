/* Lifetime of struct mb_msg, and the flag names: see include/mailbox/msg.h. */
#include <stdlib.h>
#include <strings.h>

#include "mailbox/msg.h"
#include "mailbox/util.h"

struct mb_msg *
mb_msg_new(void)
{
	struct mb_msg *m = mb_xcalloc(1, sizeof(*m));

	m->body = mb_xstrdup("");
	return m;
}

static void
addr_release(struct mb_addr *a)
{
	free(a->name);
	free(a->addr);
}

void
mb_msg_free(struct mb_msg **msgp)
{
	struct mb_msg *m = *msgp;

	if (m == NULL)
		return;
	free(m->subject);
	addr_release(&m->from);
	for (size_t i = 0; i < m->n_to; i++)
		addr_release(&m->to[i]);
	free(m->to);
	for (size_t i = 0; i < m->n_cc; i++)
		addr_release(&m->cc[i]);
	free(m->cc);
	free(m->message_id);
	free(m->in_reply_to);
	for (size_t i = 0; i < m->n_references; i++)
		free(m->references[i]);
	free(m->references);
	free(m->list_id);
	free(m->body);
	for (size_t i = 0; i < m->n_attachments; i++) {
		struct mb_attachment *a = &m->attachments[i];

		free(a->filename);
		free(a->mime_type);
		free(a->content_id);
		free(a->data);
		free(a->charset);
		free(a->text);
		free(a->text_status);
	}
	free(m->attachments);
	free(m->parse_error);
	free(m);
	*msgp = NULL;
}

const struct mb_flag_name mb_flag_names[MB_FLAG_COUNT] = {
	{ MB_FLAG_SEEN, "seen", "\\Seen", "unread" },
	{ MB_FLAG_ANSWERED, "answered", "\\Answered", NULL },
	{ MB_FLAG_FLAGGED, "flagged", "\\Flagged", NULL },
	{ MB_FLAG_DELETED, "deleted", "\\Deleted", NULL },
	{ MB_FLAG_DRAFT, "draft", "\\Draft", NULL },
};

enum mb_flag
mb_flag_parse(const char *s)
{
	for (size_t i = 0; s != NULL && i < MB_FLAG_COUNT; i++)
		if (strcasecmp(s, mb_flag_names[i].imap) == 0 ||
		    strcasecmp(s, mb_flag_names[i].word) == 0)
			return mb_flag_names[i].bit;
	return 0;
}
