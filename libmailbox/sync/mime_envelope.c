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

/* s (owned, or NULL) in NFC: the same string, or a new one with s freed. */
static char *
nfc_str(char *s)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);
	const char *p;

	if (s == NULL)
		return NULL;
	for (p = s; *p != '\0' && (unsigned char)*p < 0x80; p++)
		;
	if (*p == '\0' || mb_utf8_nfc(s, strlen(s), &b) == -1) {
		mb_buf_release(&b);
		return s;
	}
	free(s);
	return mb_buf_detach(&b, NULL);
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
	return nfc_str(r);
}

struct addr_vec {
	struct mb_addr	*v;
	size_t		 n, cap;
};

static struct mb_addr *
addr_next(struct addr_vec *a)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 4;
		a->v = mb_xrealloc(a->v, a->cap * sizeof(*a->v));
	}
	memset(&a->v[a->n], 0, sizeof(a->v[a->n]));
	return &a->v[a->n++];
}

/* A mailbox, listed in group (NULL: none). */
static void
addr_push(struct addr_vec *a, InternetAddress *ia, const char *group)
{
	struct mb_addr *v = addr_next(a);

	/* GMime has decoded the name already; our pass cleans and re-checks it. */
	v->name = addr_part(internet_address_get_name(ia), false);
	v->addr = addr_part(internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia)),
	    false);
	v->group = group != NULL ? mb_xstrdup(group) : NULL;
}

/*
 * Flatten a list: group members take the group's place, each naming it, and
 * an empty group stays as one entry naming only itself (so an empty To is
 * not mistaken for a missing one).  Groups do not nest: a group inside one
 * is read as members of the outer one.
 */
static void
addr_list(InternetAddressList *l, struct addr_vec *a, int depth, const char *group)
{
	int n = l ? internet_address_list_length(l) : 0;

	for (int i = 0; i < n && a->n < 10000; i++) {
		InternetAddress *ia = internet_address_list_get_address(l, i);

		if (INTERNET_ADDRESS_IS_GROUP(ia)) {
			InternetAddressList *members = internet_address_group_get_members(
			    INTERNET_ADDRESS_GROUP(ia));
			char *name = group == NULL ?
			    addr_part(internet_address_get_name(ia), false) : NULL;
			const char *g = group != NULL ? group : name != NULL ? name : "";
			size_t before = a->n;

			if (depth < 2)
				addr_list(members, a, depth + 1, g);
			if (a->n == before && group == NULL)
				addr_next(a)->group = mb_xstrdup(g);
			free(name);
		} else if (INTERNET_ADDRESS_IS_MAILBOX(ia))
			addr_push(a, ia, group);
	}
}

/*
 * The ids of a header of msg-ids (References, In-Reply-To), at most max, into
 * a new array (*n_r of them, empty ones skipped); NULL when there are none.
 * The caller frees the array and each id.
 */
static char **
msgid_list(GMimeParserOptions *popts, const char *raw, int max, size_t *n_r)
{
	GMimeReferences *refs;
	char **v;
	int n;

	*n_r = 0;
	if (raw == NULL || (refs = g_mime_references_parse(popts, raw)) == NULL)
		return NULL;
	n = g_mime_references_length(refs);
	if (n > max)
		n = max;	/* a thread never needs more; hostile ones do */
	v = n > 0 ? mb_xcalloc((size_t)n + 1, sizeof(char *)) : NULL;
	for (int i = 0; i < n; i++) {
		char *id = addr_part(g_mime_references_get_message_id(refs, i), false);

		if (id != NULL)
			v[(*n_r)++] = id;
	}
	g_mime_references_free(refs);
	return v;
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

/* The charset name of the first "=?charset?" in v, into hint ("" if none). */
static void
charset_hint(const char *v, char *hint, size_t hint_sz)
{
	const char *p = strstr(v, "=?"), *q;
	size_t n;

	hint[0] = '\0';
	if (p == NULL)
		return;
	p += 2;
	for (q = p; *q && *q != '?' && *q != '*' && *q != ' ' && (size_t)(q - p) < hint_sz - 1; q++)
		;
	if (*q != '?' && *q != '*')
		return;
	n = (size_t)(q - p);
	memcpy(hint, p, n);
	hint[n] = '\0';
}

void
mb_mime_envelope(GMimeMessage *m, GMimeParserOptions *popts, struct mb_msg *msg,
    char *hint, size_t hint_sz)
{
	struct addr_vec a = { 0 };
	const char *v;
	GDateTime *dt;

	hint[0] = '\0';
	if ((v = raw_header(m, "Subject")) != NULL) {
		charset_hint(v, hint, hint_sz);
		msg->subject = nfc_str(mb_rfc2047_decode(v, strlen(v)));
		if (*msg->subject == '\0') {
			free(msg->subject);
			msg->subject = NULL;
		}
	}

	addr_list(g_mime_message_get_from(m), &a, 0, NULL);
	/* From is the first mailbox: a group there (RFC 6854) lends it no name. */
	for (size_t i = 0; i < a.n; i++) {
		free(a.v[i].group);
		if (msg->from.name == NULL && msg->from.addr == NULL &&
		    (a.v[i].name != NULL || a.v[i].addr != NULL)) {
			msg->from = a.v[i];
			msg->from.group = NULL;
			continue;
		}
		free(a.v[i].name);
		free(a.v[i].addr);
	}
	free(a.v);
	memset(&a, 0, sizeof(a));
	addr_list(g_mime_message_get_addresses(m, GMIME_ADDRESS_TYPE_TO), &a, 0, NULL);
	msg->to = a.v;
	msg->n_to = a.n;
	memset(&a, 0, sizeof(a));
	addr_list(g_mime_message_get_addresses(m, GMIME_ADDRESS_TYPE_CC), &a, 0, NULL);
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
	/* Every id of In-Reply-To joins the thread; in_reply_to is the first. */
	msg->parents = msgid_list(popts, raw_header(m, "In-Reply-To"), MB_MSG_PARENTS_MAX,
	    &msg->n_parents);
	if (msg->n_parents > 0)
		msg->in_reply_to = mb_xstrdup(msg->parents[0]);
	msg->references = msgid_list(popts, raw_header(m, "References"), 1000,
	    &msg->n_references);
	if ((v = raw_header(m, "List-Id")) != NULL)
		msg->list_id = list_id(v);
}
