/*
 * The envelope of a message: Subject, addresses, Date, Message-ID, threading
 * headers and List-Id.  GMime parses the structured headers; the
 * unstructured ones go through our RFC 2047 decoder (rfc2047.c).
 */
#include <stdlib.h>
#include <string.h>

#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mime-private.h"

/* Dates before this are a broken client's "epoch", not a real date. */
#define MB_DATE_MIN	(365LL * 86400)

/* The raw (undecoded, folded) value of a header; borrowed from m, or NULL. */
static const char *
raw_header(GMimeMessage *m, const char *name)
{
	GMimeHeaderList *hl = g_mime_object_get_header_list(GMIME_OBJECT(m));
	GMimeHeader *h;

	if (hl == NULL || (h = g_mime_header_list_get_header(hl, name)) == NULL)
		return NULL;
	return g_mime_header_get_raw_value(h);
}

/* A decoded, cleaned copy of an address part, or NULL when empty; caller frees. */
static char *
addr_part(const char *s, bool decode)
{
	char *r;

	if (s == NULL || *s == '\0')
		return NULL;
	if (decode) {
		r = mb_rfc2047_decode(s, strlen(s));
	} else {
		struct mb_buf b = MB_BUF_INIT(1u << 16);

		(void)mb_charset_to_utf8(NULL, s, strlen(s), &b);
		b.len = mb_utf8_strip_invisible(b.data, b.len);
		r = mb_buf_detach(&b, NULL);
	}
	if (*r == '\0') {
		free(r);
		return NULL;
	}
	return r;
}

struct addr_vec {
	struct mb_addr	*v;
	size_t		 n, cap;
};

static void
addr_push(struct addr_vec *a, InternetAddress *ia)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 4;
		a->v = mb_xrealloc(a->v, a->cap * sizeof(*a->v));
	}
	/* GMime has decoded the name already; our pass cleans and re-checks it. */
	a->v[a->n].name = addr_part(internet_address_get_name(ia), false);
	a->v[a->n].addr = INTERNET_ADDRESS_IS_MAILBOX(ia) ?
	    addr_part(internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia)), false) :
	    NULL;
	a->n++;
}

/* Flatten a list: group members take the group's place (groups do not nest). */
static void
addr_list(InternetAddressList *l, struct addr_vec *a, int depth)
{
	int n = l ? internet_address_list_length(l) : 0;

	for (int i = 0; i < n && a->n < 10000; i++) {
		InternetAddress *ia = internet_address_list_get_address(l, i);

		if (INTERNET_ADDRESS_IS_GROUP(ia)) {
			if (depth < 2)
				addr_list(internet_address_group_get_members(
				    INTERNET_ADDRESS_GROUP(ia)), a, depth + 1);
		} else
			addr_push(a, ia);
	}
}

/* The id of "<id>" (or of a bare id), or NULL; caller frees. */
static char *
msgid_first(GMimeParserOptions *popts, const char *raw)
{
	GMimeReferences *refs;
	char *r = NULL;

	if (raw == NULL)
		return NULL;
	if ((refs = g_mime_references_parse(popts, raw)) != NULL) {
		if (g_mime_references_length(refs) > 0)
			r = addr_part(g_mime_references_get_message_id(refs, 0), false);
		g_mime_references_free(refs);
	}
	return r;
}

/* "Description <list.example.com>" gives "list.example.com"; caller frees; NULL if empty. */
static char *
list_id(const char *raw)
{
	char *v = mb_rfc2047_decode(raw, strlen(raw)), *lt, *gt, *r;

	lt = strrchr(v, '<');
	gt = lt ? strchr(lt, '>') : NULL;
	if (lt != NULL && gt != NULL && gt > lt + 1) {
		r = mb_xstrndup(lt + 1, (size_t)(gt - lt - 1));
		free(v);
		return r;
	}
	if (*v == '\0') {
		free(v);
		return NULL;
	}
	return v;
}

void
mb_mime_envelope(GMimeMessage *m, GMimeParserOptions *popts, struct mb_msg *msg)
{
	struct addr_vec a = { 0 };
	const char *v;
	GDateTime *dt;
	GMimeReferences *refs;

	if ((v = raw_header(m, "Subject")) != NULL) {
		msg->subject = mb_rfc2047_decode(v, strlen(v));
		if (*msg->subject == '\0') {
			free(msg->subject);
			msg->subject = NULL;
		}
	}

	addr_list(g_mime_message_get_from(m), &a, 0);
	if (a.n > 0) {
		msg->from = a.v[0];
		for (size_t i = 1; i < a.n; i++) {
			free(a.v[i].name);
			free(a.v[i].addr);
		}
	}
	free(a.v);
	memset(&a, 0, sizeof(a));
	addr_list(g_mime_message_get_addresses(m, GMIME_ADDRESS_TYPE_TO), &a, 0);
	msg->to = a.v;
	msg->n_to = a.n;
	memset(&a, 0, sizeof(a));
	addr_list(g_mime_message_get_addresses(m, GMIME_ADDRESS_TYPE_CC), &a, 0);
	msg->cc = a.v;
	msg->n_cc = a.n;

	/* GMime gives NULL for a missing or unreadable Date. */
	if ((dt = g_mime_message_get_date(m)) != NULL) {
		int64_t t = g_date_time_to_unix(dt);

		if (t >= MB_DATE_MIN) {
			msg->has_date = true;
			msg->date = t;
		}
	}

	msg->message_id = addr_part(g_mime_message_get_message_id(m), false);
	msg->in_reply_to = msgid_first(popts, raw_header(m, "In-Reply-To"));
	if ((v = raw_header(m, "References")) != NULL &&
	    (refs = g_mime_references_parse(popts, v)) != NULL) {
		int n = g_mime_references_length(refs);

		if (n > 1000)
			n = 1000;	/* a thread never needs more; hostile ones do */
		msg->references = mb_xcalloc((size_t)n + 1, sizeof(char *));
		for (int i = 0; i < n; i++) {
			char *id = addr_part(g_mime_references_get_message_id(refs, i), false);

			if (id != NULL)
				msg->references[msg->n_references++] = id;
		}
		g_mime_references_free(refs);
	}
	if ((v = raw_header(m, "List-Id")) != NULL)
		msg->list_id = list_id(v);
}
