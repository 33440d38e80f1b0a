/*
 * Composing a draft with GMime 3 (include/mailbox/compose.h): GMime encodes
 * the headers (RFC 2047 for non-ASCII subjects and names), folds them, picks
 * the body's transfer encoding and writes CRLF line endings.  What is ours:
 * refusing what would not be one clean header line, and the reply rules.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gmime/gmime.h>

#include "mailbox/buf.h"
#include "mailbox/compose.h"
#include "mailbox/mime.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mime-private.h"

#define NO_DOMAIN	"imap-mcp.invalid"	/* Message-ID's right side without a From */

char *
mb_compose_reply_subject(const char *subject)
{
	const char *s = subject ? subject : "";
	struct mb_buf b = MB_BUF_INIT(MB_DRAFT_LINE_MAX + 8);

	while (*s == ' ' || *s == '\t')
		s++;
	if (strncasecmp(s, "re:", 3) != 0)
		mb_buf_adds(&b, "Re: ");
	mb_buf_adds(&b, s);
	return mb_buf_detach(&b, NULL);
}

/* One header line's worth: UTF-8, no control character, not too long. */
static int
check_line(const char *what, const char *s, struct mb_err *err)
{
	size_t len = strlen(s);

	if (len > MB_DRAFT_LINE_MAX)
		return mb_err_set(err, MB_E_INVALID, "%s is longer than %d bytes", what,
		    MB_DRAFT_LINE_MAX);
	if (!mb_utf8_valid(s, len))
		return mb_err_set(err, MB_E_INVALID, "%s is not UTF-8", what);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return mb_err_set(err, MB_E_INVALID, "%s holds a control character "
			    "(a line break?); it must be one line", what);
	return 0;
}

/* Parse one recipient ("Name <addr>" or "addr") onto list: exactly one mailbox. */
static int
add_address(InternetAddressList *list, const char *what, const char *s, struct mb_err *err)
{
	InternetAddressList *one;
	InternetAddress *ia;
	const char *addr, *at;

	if (check_line(what, s, err) == -1)
		return -1;
	one = internet_address_list_parse(NULL, s);
	if (one == NULL || internet_address_list_length(one) != 1 ||
	    !INTERNET_ADDRESS_IS_MAILBOX(ia = internet_address_list_get_address(one, 0)) ||
	    (addr = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia))) == NULL ||
	    (at = strchr(addr, '@')) == NULL || at == addr || at[1] == '\0') {
		if (one != NULL)
			g_object_unref(one);
		return mb_err_set(err, MB_E_INVALID, "%s '%s' is not one email address "
		    "(name@example.org, or Name <name@example.org>)", what, s);
	}
	for (const char *p = addr; *p; p++)
		if ((unsigned char)*p >= 0x80) {
			g_object_unref(one);
			/* RFC 6532 addresses need SMTPUTF8 end to end; a draft keeps to ASCII. */
			return mb_err_set(err, MB_E_INVALID, "%s '%s': an address with non-ASCII "
			    "characters (internationalised email) is not supported; the name may be "
			    "in any script", what, s);
		}
	internet_address_list_append(list, one);
	g_object_unref(one);
	return 0;
}

static int
add_addresses(GMimeMessage *m, GMimeAddressType type, const char *what,
    const char *const *v, size_t n, struct mb_err *err)
{
	InternetAddressList *list = g_mime_message_get_addresses(m, type);

	for (size_t i = 0; i < n; i++)
		if (add_address(list, what, v[i], err) == -1)
			return -1;
	return 0;
}

/* A Message-ID token fit to repeat: no space, no bracket, no control. */
static bool
id_ok(const char *s, size_t len)
{
	if (len == 0 || len > 250)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f || s[i] == '<' ||
		    s[i] == '>')
			return false;
	return true;
}

/*
 * In-Reply-To and References of a reply: the original's references and its
 * own id, capped at MB_DRAFT_REFS_MAX (the first kept, as RFC 5322 3.6.4
 * suggests, and the newest).  Without an original Message-ID there is
 * nothing to refer to.
 */
static void
set_threading(GMimeMessage *m, const struct mb_draft_original *o)
{
	const char *ids[MB_DRAFT_REFS_MAX];
	size_t lens[MB_DRAFT_REFS_MAX], n = 0, total = 0, k = 0;
	struct mb_buf b = MB_BUF_INIT(64 * 1024);
	char *v;

	if (o->message_id == NULL || !id_ok(o->message_id, strlen(o->message_id)))
		return;
	/* Count the usable references first, then keep the first and the tail. */
	for (const char *p = o->refs ? o->refs : ""; *p; ) {
		size_t len = strcspn(p, " ");

		if (id_ok(p, len))
			total++;
		p += len;
		p += strspn(p, " ");
	}
	/* Room for the parent's id: the first reference and the newest behind it. */
	for (const char *p = o->refs ? o->refs : ""; *p; ) {
		size_t len = strcspn(p, " ");

		if (id_ok(p, len)) {
			if (k == 0 || k + (MB_DRAFT_REFS_MAX - 2) >= total) {
				ids[n] = p;
				lens[n++] = len;
			}
			k++;
		}
		p += len;
		p += strspn(p, " ");
	}
	for (size_t i = 0; i < n; i++) {
		mb_buf_addc(&b, '<');
		mb_buf_add(&b, ids[i], lens[i]);
		mb_buf_adds(&b, "> ");
	}
	mb_buf_addc(&b, '<');
	mb_buf_adds(&b, o->message_id);
	mb_buf_addc(&b, '>');
	v = mb_buf_detach(&b, NULL);
	g_mime_object_set_header(GMIME_OBJECT(m), "References", v, NULL);
	free(v);
	mb_buf_addf(&b, "<%s>", o->message_id);
	v = mb_buf_detach(&b, NULL);
	g_mime_object_set_header(GMIME_OBJECT(m), "In-Reply-To", v, NULL);
	free(v);
}

/* The body as one text/plain part in UTF-8, LF line endings (GMime writes CRLF). */
static GMimeObject *
body_part(const char *body)
{
	struct mb_buf b = MB_BUF_INIT(strlen(body) + 2);
	GMimeTextPart *part = g_mime_text_part_new_with_subtype("plain");
	GMimeStream *mem;
	GMimeDataWrapper *dw;

	for (const char *p = body; *p; p++) {
		if (*p == '\r') {
			mb_buf_addc(&b, '\n');
			if (p[1] == '\n')
				p++;
		} else
			mb_buf_addc(&b, *p);
	}
	if (b.len == 0 || b.data[b.len - 1] != '\n')
		mb_buf_addc(&b, '\n');
	mem = g_mime_stream_mem_new_with_buffer(b.data, b.len);
	mb_buf_release(&b);
	dw = g_mime_data_wrapper_new_with_stream(mem, GMIME_CONTENT_ENCODING_DEFAULT);
	g_object_unref(mem);
	g_mime_part_set_content(GMIME_PART(part), dw);
	g_object_unref(dw);
	g_mime_text_part_set_charset(part, "utf-8");
	/* 7bit when it is plain ASCII with short lines; else quoted-printable or base64. */
	g_mime_part_set_content_encoding(GMIME_PART(part),
	    g_mime_part_get_best_content_encoding(GMIME_PART(part), GMIME_ENCODING_CONSTRAINT_7BIT));
	return GMIME_OBJECT(part);
}

/* The right side of the new Message-ID: the From address's domain. */
static char *
id_domain(GMimeMessage *m)
{
	InternetAddressList *from = g_mime_message_get_from(m);
	InternetAddress *ia;
	const char *addr, *at;

	if (internet_address_list_length(from) > 0 &&
	    INTERNET_ADDRESS_IS_MAILBOX(ia = internet_address_list_get_address(from, 0)) &&
	    (addr = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(ia))) != NULL &&
	    (at = strrchr(addr, '@')) != NULL && id_ok(at + 1, strlen(at + 1)))
		return mb_xstrdup(at + 1);
	return mb_xstrdup(NO_DOMAIN);
}

int
mb_compose_draft(const struct mb_draft *d, char **raw_r, size_t *len_r, char **message_id_r,
    struct mb_err *err)
{
	GMimeMessage *m;
	GMimeFormatOptions *fo;
	GMimeObject *part;
	GDateTime *date;
	GTimeZone *tz;
	char *subject = NULL, *domain, *gid, *raw;
	int r = -1;

	*raw_r = *message_id_r = NULL;
	*len_r = 0;
	mb_mime_global_init();
	if (d->body == NULL || !mb_utf8_valid(d->body, strlen(d->body)))
		return mb_err_set(err, MB_E_INVALID, "the body is not UTF-8 text");
	m = g_mime_message_new(TRUE);
	if (d->from != NULL &&
	    add_address(g_mime_message_get_from(m), "the From address", d->from, err) == -1)
		goto out;
	if (add_addresses(m, GMIME_ADDRESS_TYPE_TO, "to", d->to, d->n_to, err) == -1 ||
	    add_addresses(m, GMIME_ADDRESS_TYPE_CC, "cc", d->cc, d->n_cc, err) == -1)
		goto out;
	if (d->subject != NULL && check_line("the subject", d->subject, err) == -1)
		goto out;
	if (d->reply_to != NULL) {
		subject = mb_compose_reply_subject(d->subject != NULL && *d->subject ?
		    d->subject : d->reply_to->subject);
		/* The original's subject came from mail: flatten what a header cannot
		 * hold.  The index holds UTF-8, but a header must never carry raw bytes. */
		bool utf8 = mb_utf8_valid(subject, strlen(subject));

		for (char *p = subject; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = ' ';
			else if (!utf8 && (unsigned char)*p >= 0x80)
				*p = '?';
		set_threading(m, d->reply_to);
	} else
		subject = mb_xstrdup(d->subject ? d->subject : "");
	g_mime_message_set_subject(m, subject, "utf-8");
	tz = g_time_zone_new_local();
	date = g_date_time_new_from_unix_utc(d->date);
	{
		GDateTime *local = g_date_time_to_timezone(date, tz);

		g_mime_message_set_date(m, local);
		g_date_time_unref(local);
	}
	g_date_time_unref(date);
	g_time_zone_unref(tz);
	domain = id_domain(m);
	gid = g_mime_utils_generate_message_id(domain);
	free(domain);
	g_mime_message_set_message_id(m, gid);
	part = body_part(d->body);
	g_mime_message_set_mime_part(m, part);
	g_object_unref(part);

	fo = g_mime_format_options_clone(NULL);
	g_mime_format_options_set_newline_format(fo, GMIME_NEWLINE_FORMAT_DOS);
	raw = g_mime_object_to_string(GMIME_OBJECT(m), fo);
	g_mime_format_options_free(fo);
	*len_r = strlen(raw);
	*raw_r = mb_xstrdup(raw);
	g_free(raw);
	*message_id_r = mb_xstrdup(gid);
	g_free(gid);
	r = 0;
out:
	free(subject);
	g_object_unref(m);
	return r;
}
