/* Lifetime of struct mb_msg: see include/mailbox/msg.h. */
#include <stdlib.h>

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
	}
	free(m->attachments);
	free(m->parse_error);
	free(m);
	*msgp = NULL;
}
