/*
 * The draft composer (libmailbox/sync/compose.c).  What a user checks is the
 * draft their mail client opens: the recipients, subject and body they asked
 * for, threaded under the original when it is a reply, and nothing a header
 * could be smuggled through.  Each draft is read back with our own
 * normaliser, the same path synced mail takes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/buf.h"
#include "mailbox/compose.h"
#include "mailbox/mime.h"
#include "mailbox/util.h"

#define DATE	1764432000	/* 2025-11-29T16:00:00Z */

static struct mb_msg *
compose_and_parse(const struct mb_draft *d, char **raw_r, char **id_r)
{
	struct mb_err err = { 0 };
	struct mb_msg *m = NULL;
	size_t len;

	if (mb_compose_draft(d, raw_r, &len, id_r, &err) == -1)
		fail_msg("compose: %s", err.msg);
	assert_int_equal(strlen(*raw_r), len);
	assert_int_equal(mb_mime_parse(*raw_r, len, NULL, &m, &err), 0);
	assert_null(m->parse_error);
	return m;
}

static void
release(struct mb_msg **m, char *raw, char *id)
{
	mb_msg_free(m);
	free(raw);
	free(id);
}

/* Every line ends in CRLF, no line passes 998 bytes, and the header is ASCII. */
static void
assert_wire_clean(const char *raw)
{
	const char *line = raw, *eoh = strstr(raw, "\r\n\r\n");

	assert_non_null(eoh);
	for (const char *p = raw; *p; p++) {
		if (*p == '\n') {
			assert_true(p > raw && p[-1] == '\r');
			assert_true(p - line <= 1000);
			line = p + 1;
		} else if (*p == '\r')
			assert_int_equal(p[1], '\n');
		if (p < eoh)
			assert_true((unsigned char)*p < 0x80);
	}
}

static void
plain_draft_reads_back(void **state)
{
	const char *to[] = { "Alice Example <alice@example.org>", "bob@example.net" };
	const char *cc[] = { "carol@example.com" };
	struct mb_draft d = { .from = "me@home.example", .to = to, .n_to = 2, .cc = cc, .n_cc = 1,
	    .subject = "Lunch on Friday?", .body = "Hi both,\nare you free?\n", .date = DATE };
	char *raw, *id;
	struct mb_msg *m = compose_and_parse(&d, &raw, &id);

	(void)state;
	assert_wire_clean(raw);
	assert_string_equal(m->subject, "Lunch on Friday?");
	assert_int_equal(m->n_to, 2);
	assert_string_equal(m->to[0].name, "Alice Example");
	assert_string_equal(m->to[0].addr, "alice@example.org");
	assert_string_equal(m->to[1].addr, "bob@example.net");
	assert_int_equal(m->n_cc, 1);
	assert_string_equal(m->cc[0].addr, "carol@example.com");
	assert_string_equal(m->from.addr, "me@home.example");
	assert_string_equal(m->message_id, id);
	assert_non_null(strstr(id, "@home.example"));	/* the From's domain */
	assert_true(m->has_date);
	assert_int_equal(m->date, DATE);
	assert_string_equal(m->body, "Hi both,\nare you free?");
	assert_null(m->in_reply_to);
	assert_int_equal(m->n_references, 0);
	assert_non_null(strstr(raw, "MIME-Version: 1.0\r\n"));
	assert_non_null(strstr(raw, "charset=utf-8"));
	release(&m, raw, id);
}

static void
non_ascii_is_encoded_and_round_trips(void **state)
{
	const char *to[] = { "Jürgen Müller <jm@example.de>" };
	const char *body = "Grüße aus Köln — 日本語のテキスト\r\nzweite Zeile\rdritte Zeile";
	struct mb_draft d = { .to = to, .n_to = 1, .subject = "Grüße — 日本語", .body = body,
	    .date = DATE };
	char *raw, *id;
	struct mb_msg *m = compose_and_parse(&d, &raw, &id);

	(void)state;
	assert_wire_clean(raw);	/* RFC 2047 in the header, QP or base64 in the body */
	assert_non_null(strstr(raw, "\r\nSubject: =?"));
	assert_string_equal(m->subject, "Grüße — 日本語");
	assert_string_equal(m->to[0].name, "Jürgen Müller");
	assert_string_equal(m->body, "Grüße aus Köln — 日本語のテキスト\nzweite Zeile\ndritte Zeile");
	assert_non_null(strstr(id, "@imap-mcp.invalid"));	/* no From: no domain to borrow */
	assert_string_equal(m->from.addr == NULL ? "" : m->from.addr, "");
	release(&m, raw, id);
}

static void
long_lines_stay_under_the_limit(void **state)
{
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	const char *to[] = { "a@example.org" };
	struct mb_draft d = { .to = to, .n_to = 1, .subject = "long", .date = DATE };
	char *raw, *id, *body;
	struct mb_msg *m;

	(void)state;
	for (int i = 0; i < 5000; i++)
		mb_buf_adds(&b, "word ");
	body = mb_buf_detach(&b, NULL);
	d.body = body;
	m = compose_and_parse(&d, &raw, &id);
	assert_wire_clean(raw);
	assert_int_equal(m->body_len, 5000 * 5 - 1);	/* the trailing space is trimmed by the normaliser */
	release(&m, raw, id);
	free(body);
}

static void
reply_derives_re_and_threading(void **state)
{
	const char *to[] = { "alice@example.org" };
	struct mb_draft_original o = { .message_id = "orig@example.org",
	    .refs = "root@example.org mid@example.org", .subject = "Budget 2026" };
	struct mb_draft d = { .to = to, .n_to = 1, .body = "Agreed.", .reply_to = &o,
	    .date = DATE };
	char *raw, *id;
	struct mb_msg *m = compose_and_parse(&d, &raw, &id);

	(void)state;
	assert_string_equal(m->subject, "Re: Budget 2026");
	assert_string_equal(m->in_reply_to, "orig@example.org");
	assert_int_equal(m->n_references, 3);
	assert_string_equal(m->references[0], "root@example.org");
	assert_string_equal(m->references[1], "mid@example.org");
	assert_string_equal(m->references[2], "orig@example.org");
	release(&m, raw, id);

	/* A subject the caller gives is kept, and "Re:" is never doubled. */
	d.subject = "RE: Budget 2026 (revised)";
	m = compose_and_parse(&d, &raw, &id);
	assert_string_equal(m->subject, "RE: Budget 2026 (revised)");
	release(&m, raw, id);
	d.subject = "new numbers";
	m = compose_and_parse(&d, &raw, &id);
	assert_string_equal(m->subject, "Re: new numbers");
	release(&m, raw, id);
}

static void
references_are_capped(void **state)
{
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	const char *to[] = { "alice@example.org" };
	struct mb_draft_original o = { .message_id = "parent@x", .subject = "long thread" };
	struct mb_draft d = { .to = to, .n_to = 1, .body = "ok", .reply_to = &o, .date = DATE };
	char *raw, *id, *refs;
	struct mb_msg *m;

	(void)state;
	for (int i = 0; i < 60; i++)
		mb_buf_addf(&b, "%sr%d@x", i ? " " : "", i);
	refs = mb_buf_detach(&b, NULL);
	o.refs = refs;
	m = compose_and_parse(&d, &raw, &id);
	assert_int_equal(m->n_references, MB_DRAFT_REFS_MAX);
	assert_string_equal(m->references[0], "r0@x");		/* the thread's root */
	assert_string_equal(m->references[1], "r42@x");		/* then the newest 18 */
	assert_string_equal(m->references[MB_DRAFT_REFS_MAX - 2], "r59@x");
	assert_string_equal(m->references[MB_DRAFT_REFS_MAX - 1], "parent@x");
	release(&m, raw, id);
	free(refs);

	/* An original without a Message-ID: "Re:" only, nothing to refer to. */
	o.message_id = NULL;
	o.refs = "r0@x";
	m = compose_and_parse(&d, &raw, &id);
	assert_string_equal(m->subject, "Re: long thread");
	assert_null(m->in_reply_to);
	assert_int_equal(m->n_references, 0);
	release(&m, raw, id);
}

static void
refuse(struct mb_draft *d, const char *why)
{
	struct mb_err err = { 0 };
	char *raw = (char *)1, *id = (char *)1;
	size_t len = 1;

	assert_int_equal(mb_compose_draft(d, &raw, &len, &id, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
	if (strstr(err.msg, why) == NULL)
		fail_msg("'%s' does not say '%s'", err.msg, why);
	assert_null(raw);
	assert_null(id);
}

static void
bad_recipients_and_header_smuggling_are_refused(void **state)
{
	const char *to[1], *cc[1];
	struct mb_draft d = { .to = to, .n_to = 1, .cc = cc, .n_cc = 0, .subject = "s",
	    .body = "b", .date = DATE };
	static const char *bad[] = { "not an address", "a@example.org, b@example.org",
	    "Team: a@example.org, b@example.org;", "@example.org", "user@", "" };

	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(bad); i++) {
		to[0] = bad[i];
		refuse(&d, "is not one email address");
	}
	to[0] = "jürgen@example.de";	/* the name may be any script, the address not */
	refuse(&d, "non-ASCII characters");
	to[0] = "Eve <eve@example.org>\r\nBcc: victim@example.org";
	refuse(&d, "control character");
	to[0] = "ok@example.org";
	d.n_cc = 1;
	cc[0] = "x@example.org\nBcc: y@example.org";
	refuse(&d, "cc holds a control character");
	d.n_cc = 0;
	d.subject = "hello\r\nBcc: victim@example.org";
	refuse(&d, "the subject holds a control character");
	d.subject = "s";
	d.body = "\xff\xfe not UTF-8";
	refuse(&d, "the body is not UTF-8");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_draft_reads_back),
		cmocka_unit_test(non_ascii_is_encoded_and_round_trips),
		cmocka_unit_test(long_lines_stay_under_the_limit),
		cmocka_unit_test(reply_derives_re_and_threading),
		cmocka_unit_test(references_are_capped),
		cmocka_unit_test(bad_recipients_and_header_smuggling_are_refused),
	};

	mb_mime_global_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
