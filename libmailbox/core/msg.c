/* Lifetime of struct mb_msg, and the flag names: see include/mailbox/msg.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mailbox/buf.h"
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
	free(a->group);
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
	for (size_t i = 0; i < m->n_parents; i++)
		free(m->parents[i]);
	free(m->parents);
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

/* ---- display strings (RFC 5322 section 3.4) */

/* atext of RFC 5322 section 3.2.3, with RFC 6532's UTF-8 bytes. */
static bool
is_atext(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c >= 0x80 || strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL;
}

/* Whether s can be written as a phrase of atoms: atext words, single spaces between. */
static bool
is_phrase(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (*p == '\0' || *p == ' ')
		return false;
	for (; *p != '\0'; p++) {
		if (*p == ' ' && p[1] != ' ' && p[1] != '\0')
			continue;
		if (!is_atext(*p))
			return false;
	}
	return true;
}

/* s as a phrase: as it is, or quoted. */
static int
add_phrase(struct mb_buf *b, const char *s)
{
	if (is_phrase(s))
		return mb_buf_adds(b, s);
	if (mb_buf_addc(b, '"') == -1)
		return -1;
	for (; *s != '\0'; s++)
		if (((*s == '"' || *s == '\\') && mb_buf_addc(b, '\\') == -1) ||
		    mb_buf_addc(b, *s) == -1)
			return -1;
	return mb_buf_addc(b, '"');
}

int
mb_addr_format(struct mb_buf *b, const char *name, const char *addr)
{
	bool has_name = name != NULL && *name != '\0';
	bool has_addr = addr != NULL && *addr != '\0';

	if (has_name && add_phrase(b, name) == -1)
		return -1;
	if (has_name && has_addr && mb_buf_adds(b, " <") == -1)
		return -1;
	if (has_addr && mb_buf_adds(b, addr) == -1)
		return -1;
	if (has_name && has_addr && mb_buf_addc(b, '>') == -1)
		return -1;
	return 0;
}

static bool
blank(const char *s)
{
	return s == NULL || *s == '\0';
}

static bool
same_group(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

int
mb_addr_list_format(struct mb_buf *b, const struct mb_addr *v, size_t n)
{
	size_t start = b->len;

	for (size_t i = 0; i < n; i++) {
		const struct mb_addr *a = &v[i];
		bool grouped = !blank(a->group);
		bool opens = grouped && (i == 0 || !same_group(v[i - 1].group, a->group));
		bool closes = grouped && (i + 1 == n || !same_group(v[i + 1].group, a->group));
		bool empty = blank(a->name) && blank(a->addr);

		if (empty && !grouped)
			continue;	/* an empty address adds nothing */
		if ((opens || !grouped) && b->len > start && mb_buf_adds(b, ", ") == -1)
			return -1;
		if (opens && (add_phrase(b, a->group) == -1 || mb_buf_addc(b, ':') == -1))
			return -1;
		if (!empty && grouped && mb_buf_adds(b, opens ? " " : ", ") == -1)
			return -1;
		if (mb_addr_format(b, a->name, a->addr) == -1)
			return -1;
		if (closes && mb_buf_addc(b, ';') == -1)
			return -1;
	}
	return 0;
}
