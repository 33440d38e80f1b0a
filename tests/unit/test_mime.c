/*
 * The MIME normaliser, one test per rule, on the fixture mails in
 * tests/fixtures/mail/: what a user searching their mail would check is that
 * the words they remember are in the body and subject exactly, that hidden
 * text is not, and that no mail is ever lost.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support_cpu.h"

#include "mailbox/buf.h"
#include "mailbox/mime.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

/* The bytes of fixtures/mail/<name>; the caller frees. */
static char *
slurp(const char *name, size_t *len_r)
{
	char path[1024];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/mail/%s", MB_FIXTURES, name);
	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("cannot open fixture %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	buf[n] = '\0';
	*len_r = (size_t)n;
	return buf;
}

static struct mb_msg *
parse_mem(const char *raw, size_t len, const struct mb_mime_opts *opts)
{
	struct mb_msg *m = NULL;
	struct mb_err err = { 0 };

	assert_int_equal(mb_mime_parse(raw, len, opts, &m, &err), 0);
	assert_non_null(m);
	assert_non_null(m->body);
	assert_int_equal(strlen(m->body), m->body_len);
	assert_true(mb_utf8_valid(m->body, m->body_len));
	return m;
}

static struct mb_msg *
parse(const char *name)
{
	size_t len;
	char *raw = slurp(name, &len);
	struct mb_msg *m = parse_mem(raw, len, NULL);

	free(raw);
	return m;
}

#define assert_contains(hay, needle) do {					\
	if ((hay) == NULL || strstr((hay), (needle)) == NULL)			\
		fail_msg("[%s] does not contain [%s]", (hay) ? (hay) : "(null)", (needle)); \
} while (0)
#define assert_lacks(hay, needle) do {						\
	if ((hay) != NULL && strstr((hay), (needle)) != NULL)			\
		fail_msg("[%s] contains [%s]", (hay), (needle));		\
} while (0)

static void
mime_iso_8859_15_a4_is_euro(void **state)
{
	struct mb_msg *m = parse("iso-8859-15-euro.eml");

	assert_string_equal(m->body, "The price is 42 \xe2\x82\xac, \xc5\x93uvre.");
	assert_null(m->parse_error);
	mb_msg_free(&m);
}

static void
mime_raw_8bit_windows_1252_body(void **state)
{
	struct mb_msg *m = parse("raw-8bit-cp1252.eml");

	/* “Café” costs 5 € — naïve. */
	assert_string_equal(m->body, "\xe2\x80\x9c" "Caf\xc3\xa9\xe2\x80\x9d costs 5 \xe2\x82\xac "
	    "\xe2\x80\x94 na\xc3\xafve.");
	mb_msg_free(&m);
}

static void
mime_raw_8bit_utf8_body(void **state)
{
	struct mb_msg *m = parse("raw-8bit-utf8.eml");

	assert_string_equal(m->body, "Gr\xc3\xbc\xc3\x9f" "e aus K\xc3\xb6ln: caf\xc3\xa9, "
	    "\xe4\xbc\x9a\xe8\xad\xb0\xe3\x81\xaf\xe6\x9c\x88\xe6\x9b\x9c\xe6\x97\xa5\xe3\x81\xa7"
	    "\xe3\x81\x99.");
	mb_msg_free(&m);
}

static void
mime_raw_8bit_headers(void **state)
{
	struct mb_msg *m = parse("raw-8bit-header.eml");

	assert_string_equal(m->subject, "caf\xc3\xa9 cr\xc3\xa8me");
	assert_string_equal(m->from.name, "Jos\xc3\xa9 Garc\xc3\xad" "a");
	assert_string_equal(m->from.addr, "jose@example.com");
	mb_msg_free(&m);
}

static void
mime_raw_utf8_headers(void **state)
{
	const char raw[] = "From: J\xc3\xb6rg M\xc3\xbcller <j@example.com>\n"
	    "Subject: Gr\xc3\xbc\xc3\x9f" "e \xe4\xbc\x9a\xe8\xad\xb0\n\nbody\n";
	struct mb_msg *m = parse_mem(raw, sizeof(raw) - 1, NULL);

	assert_string_equal(m->subject, "Gr\xc3\xbc\xc3\x9f" "e \xe4\xbc\x9a\xe8\xad\xb0");
	assert_string_equal(m->from.name, "J\xc3\xb6rg M\xc3\xbcller");
	mb_msg_free(&m);
}

static void
mime_html_zero_width_and_hidden_text(void **state)
{
	struct mb_msg *m = parse("html-only.eml");

	assert_true(m->body_from_html);
	assert_contains(m->body, "Quarterly report");
	assert_contains(m->body, "Revenue grew by 12%.");
	assert_contains(m->body, "Password reset: click here <https://example.com/reset>");
	assert_lacks(m->body, "hidden");
	assert_lacks(m->body, "Title text");
	assert_lacks(m->body, "color:red");
	mb_msg_free(&m);
}

static void
mime_bidi_override_stripped_from_body_and_subject(void **state)
{
	struct mb_msg *m = parse("bidi-override.eml");

	assert_string_equal(m->subject, "Invoice FDP.exe");
	assert_string_equal(m->body, "Open invoicegpj.exe now, payment due.");
	mb_msg_free(&m);
}

static void
mime_soft_hyphen_and_marks_stripped_from_body_and_subject(void **state)
{
	struct mb_msg *m = parse("soft-hyphen-lrm.eml");

	/* U+00AD, U+200E/F, U+061C, U+180E and U+2061..U+2064 hide nothing from search. */
	assert_string_equal(m->subject, "Password reset for account");
	assert_string_equal(m->body, "Your password expires. Confirm at account settings.");
	mb_msg_free(&m);
}

static void
mime_tag_characters_stripped(void **state)
{
	struct mb_msg *m = parse("tag-chars.eml");

	assert_string_equal(m->body, "Hello world.");
	mb_msg_free(&m);
}

static void
mime_base64_without_padding_keeps_last_bytes(void **state)
{
	struct mb_msg *m = parse("base64-no-padding.eml");

	/* RFC 2045 6.8: the final group lost its "==" or "=": decode what is there. */
	assert_string_equal(m->body, "The door code is 42170\n\n"
	    "Lunch moved to Friday, 12:30 at Rosa's, okay");
	assert_int_equal(m->n_attachments, 1);
	assert_int_equal(m->attachments[0].size, 14);
	assert_memory_equal(m->attachments[0].data, "%PDF-1.4\n%%EOF", 14);
	mb_msg_free(&m);
}

static void
mime_rfc2231_filename(void **state)
{
	struct mb_msg *m = parse("rfc2231-euro.eml");

	assert_int_equal(m->n_attachments, 1);
	assert_string_equal(m->attachments[0].filename, "\xe2\x82\xac.pdf");
	assert_string_equal(m->attachments[0].mime_type, "application/pdf");
	assert_false(m->attachments[0].is_inline);
	assert_int_equal(m->attachments[0].size, 9);
	assert_memory_equal(m->attachments[0].data, "%PDF-1.4\n", 9);
	assert_string_equal(m->body, "See attached.");
	mb_msg_free(&m);
}

static void
mime_rfc2231_filename_with_continuations(void **state)
{
	struct mb_msg *m = parse("rfc2231-continuations.eml");

	assert_int_equal(m->n_attachments, 1);
	assert_string_equal(m->attachments[0].filename, "\xe2\x82\xac-continued.pdf");
	mb_msg_free(&m);
}

static void
mime_rfc2047_filename_inline_with_content_id(void **state)
{
	struct mb_msg *m = parse("rfc2047-filename.eml");

	assert_int_equal(m->n_attachments, 1);
	assert_string_equal(m->attachments[0].filename, "\xe2\x82\xac.png");
	assert_string_equal(m->attachments[0].mime_type, "image/png");
	assert_string_equal(m->attachments[0].content_id, "img1@example.com");
	assert_true(m->attachments[0].is_inline);
	assert_int_equal(m->attachments[0].size, 8);
	mb_msg_free(&m);
}

static void
mime_attachment_data_is_optional(void **state)
{
	struct mb_mime_opts o = MB_MIME_OPTS_DEFAULT;
	size_t len;
	char *raw = slurp("rfc2231-euro.eml", &len);
	struct mb_msg *m;

	o.keep_attachment_data = false;
	m = parse_mem(raw, len, &o);
	assert_int_equal(m->n_attachments, 1);
	assert_null(m->attachments[0].data);
	assert_int_equal(m->attachments[0].size, 9);
	mb_msg_free(&m);
	free(raw);
}

static void
mime_boundary_quote_does_not_crash_and_keeps_text(void **state)
{
	struct mb_msg *m = parse("boundary-quote.eml");

	assert_contains(m->body, "Text inside the odd boundary.");
	mb_msg_free(&m);
}

static void
mime_boundary_never_appears_keeps_text(void **state)
{
	struct mb_msg *m = parse("boundary-never.eml");

	assert_contains(m->body, "this text must still be found");
	assert_non_null(m->parse_error);
	assert_contains(m->parse_error, "boundary never appears");
	mb_msg_free(&m);
}

static void
mime_adjacent_encoded_words_join(void **state)
{
	struct mb_msg *m = parse("encoded-words.eml");

	/* "Grüße" "aus Köln" "á" joined; plain " und " kept; 会議 decoded. */
	assert_string_equal(m->subject, "Gr\xc3\xbc\xc3\x9f" "e aus K\xc3\xb6ln\xc3\xa1 und "
	    "\xe4\xbc\x9a\xe8\xad\xb0");
	assert_string_equal(m->from.name, "J\xc3\xb6rg");
	mb_msg_free(&m);
}

static void
mime_encoded_word_split_character_survives(void **state)
{
	/* € (E2 82 AC) split across two adjacent words. */
	const char raw[] = "Subject: =?utf-8?Q?price_=E2=82?= =?utf-8?Q?=AC5?=\n\nx\n";
	struct mb_msg *m = parse_mem(raw, sizeof(raw) - 1, NULL);

	assert_string_equal(m->subject, "price \xe2\x82\xac" "5");
	mb_msg_free(&m);
}

static void
mime_hostile_subject_is_linear(void **state)
{
	struct mb_buf b = MB_BUF_INIT(4u << 20);
	struct mb_msg *m;
	long long t0;

	/* 100,000 unterminated encoded-word starts with no space between them. */
	assert_int_equal(mb_buf_adds(&b, "Subject: "), 0);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(mb_buf_adds(&b, "x=?a?q?"), 0);
	assert_int_equal(mb_buf_adds(&b, "\n\nbody\n"), 0);
	t0 = mb_test_cpu_ms();
	m = parse_mem(b.data, b.len, NULL);
	print_message("700 KB subject of broken encoded words: %lld ms\n", mb_test_cpu_ms() - t0);
	assert_true(mb_test_cpu_ms() - t0 < 10000);
	assert_non_null(m->subject);
	assert_int_equal(strncmp(m->subject, "x=?a?q?x=?a?q?", 14), 0);
	assert_string_equal(m->body, "body");
	mb_msg_free(&m);
	mb_buf_release(&b);
}

static void
mime_date_parsed_to_utc(void **state)
{
	struct mb_msg *m = parse("alternative.eml");

	/* Mon, 02 Mar 2026 09:15:00 +0100 = 08:15 UTC */
	assert_true(m->has_date);
	assert_int_equal(m->date, 1772439300);
	mb_msg_free(&m);
}

static void
mime_date_missing_or_malformed_gives_no_date(void **state)
{
	static const char *names[] = { "no-date.eml", "bad-date.eml" };
	const char zero[] = "Subject: x\nDate: Thu, 01 Jan 1970 00:00:00 +0000\n\nx\n";
	struct mb_msg *m;

	for (size_t i = 0; i < MB_ARRAY_LEN(names); i++) {
		m = parse(names[i]);
		assert_false(m->has_date);
		assert_int_equal(m->date, 0);
		assert_non_null(m->subject);
		mb_msg_free(&m);
	}
	m = parse_mem(zero, sizeof(zero) - 1, NULL);
	assert_false(m->has_date);
	mb_msg_free(&m);
}

static void
mime_shift_jis_is_read_as_cp932(void **state)
{
	struct mb_msg *m = parse("shift-jis-cp932.eml");

	/* 会議は月曜日です ①② ﾃｽﾄ */
	assert_string_equal(m->body, "\xe4\xbc\x9a\xe8\xad\xb0\xe3\x81\xaf\xe6\x9c\x88\xe6\x9b\x9c"
	    "\xe6\x97\xa5\xe3\x81\xa7\xe3\x81\x99 \xe2\x91\xa0\xe2\x91\xa1 \xef\xbe\x83\xef\xbd\xbd"
	    "\xef\xbe\x84");
	mb_msg_free(&m);
}

static void
mime_undeclared_cjk_body_read_in_subject_charset(void **state)
{
	/* 会議は月曜日です。 */
	static const char want[] = "\xe4\xbc\x9a\xe8\xad\xb0\xe3\x81\xaf\xe6\x9c\x88\xe6\x9b\x9c"
	    "\xe6\x97\xa5\xe3\x81\xa7\xe3\x81\x99\xe3\x80\x82";
	static const char *names[] = { "undeclared-sjis.eml", "undeclared-iso-2022-jp.eml",
	    "undeclared-sjis-jis-subject.eml" };
	struct mb_msg *m;

	for (size_t i = 0; i < MB_ARRAY_LEN(names); i++) {
		m = parse(names[i]);
		assert_string_equal(m->body, want);
		assert_string_equal(m->subject, "\xe4\xbc\x9a\xe8\xad\xb0\xe3\x81\xae\xe4\xbb\xb6");
		mb_msg_free(&m);
	}
	/* The guess is dropped when the bytes do not decode in it. */
	m = parse("undeclared-latin1-sjis-subject.eml");
	assert_string_equal(m->body, "caf\xc3\xa9. na\xc3\xafve.");
	mb_msg_free(&m);
}

static void
mime_unknown_charset_never_fails(void **state)
{
	struct mb_msg *m = parse("unknown-charset.eml");

	assert_string_equal(m->body, "Caf\xc3\xa9 still readable.");
	assert_string_equal(m->subject, "caf\xc3\xa9 ok");
	mb_msg_free(&m);
}

static void
mime_alternative_prefers_plain(void **state)
{
	struct mb_msg *m = parse("alternative.eml");

	assert_string_equal(m->body, "Plain version of the meeting notes.");
	assert_false(m->body_from_html);
	assert_int_equal(m->n_attachments, 0);
	mb_msg_free(&m);
}

static void
mime_alternative_with_empty_plain_uses_html(void **state)
{
	struct mb_msg *m = parse("alternative-empty-plain.eml");

	assert_string_equal(m->body, "The offer is only in the HTML part.");
	assert_true(m->body_from_html);
	mb_msg_free(&m);
}

static void
mime_mixed_text_parts_concatenated_attachments_listed(void **state)
{
	struct mb_msg *m = parse("mixed-text-parts.eml");

	assert_string_equal(m->body, "First part.\n\nSecond part, caf\xc3\xa9.");
	assert_int_equal(m->n_attachments, 2);
	assert_string_equal(m->attachments[0].filename, "report.pdf");
	assert_string_equal(m->attachments[1].filename, "notes.txt");
	assert_string_equal(m->attachments[1].mime_type, "text/plain");
	mb_msg_free(&m);
}

static void
mime_forwarded_message_is_searchable(void **state)
{
	struct mb_msg *m = parse("forwarded.eml");

	assert_contains(m->body, "See below.");
	assert_contains(m->body, "From: Carol <carol@example.org>");
	assert_contains(m->body, "Subject: Budget 2026");
	assert_contains(m->body, "Date: Fri, 27 Feb 2026 16:00:00 +0000");
	assert_contains(m->body, "The forwarded budget says 1200 for travel.");
	/* The outer envelope stays the outer one. */
	assert_string_equal(m->subject, "Fwd: Budget");
	assert_string_equal(m->from.addr, "alice@example.com");
	mb_msg_free(&m);
}

static void
mime_format_flowed_is_joined(void **state)
{
	struct mb_msg *m = parse("flowed.eml");

	assert_string_equal(m->body, "This paragraph was wrapped by the sender.\n"
	    "> quoted line that continues\n-- \nsig");
	mb_msg_free(&m);
	m = parse("flowed-delsp.eml");
	assert_string_equal(m->body, "Supercalifragilistic word.");
	mb_msg_free(&m);
}

static void
mime_envelope_addresses_groups_and_threading(void **state)
{
	struct mb_msg *m = parse("groups.eml");

	assert_string_equal(m->from.addr, "a@example.com");
	assert_null(m->from.name);
	assert_int_equal(m->n_to, 3);
	assert_string_equal(m->to[0].addr, "c@example.com");
	assert_string_equal(m->to[1].name, "Dee");
	assert_string_equal(m->to[1].addr, "d@example.com");
	assert_string_equal(m->to[2].addr, "e@example.com");
	/* Groups are flattened, each member naming its group. */
	assert_string_equal(m->to[0].group, "Team");
	assert_string_equal(m->to[1].group, "Team");
	assert_null(m->to[2].group);
	/* An empty group stays: one entry with only the group's name. */
	assert_int_equal(m->n_cc, 1);
	assert_string_equal(m->cc[0].group, "undisclosed-recipients");
	assert_null(m->cc[0].name);
	assert_null(m->cc[0].addr);
	assert_string_equal(m->in_reply_to, "c@z");
	assert_int_equal(m->n_references, 3);
	assert_string_equal(m->references[0], "a@x");
	assert_string_equal(m->references[2], "c@z");
	assert_string_equal(m->list_id, "team.example.com");
	mb_msg_free(&m);
	m = parse("alternative.eml");
	assert_string_equal(m->message_id, "alternative@example.com");
	assert_string_equal(m->from.name, "Alice Example");
	assert_string_equal(m->to[0].addr, "bob@example.com");
	mb_msg_free(&m);
}

static void
mime_crlf_becomes_lf_and_mbox_line_is_dropped(void **state)
{
	struct mb_msg *m = parse("crlf.eml");

	assert_string_equal(m->body, "line one\nline two");
	assert_string_equal(m->subject, "CRLF");
	mb_msg_free(&m);
	m = parse("mbox-from.eml");
	assert_string_equal(m->subject, "mbox line");
	assert_string_equal(m->from.addr, "alice@example.com");
	assert_string_equal(m->body, "body after mbox line");
	mb_msg_free(&m);
}

static void
mime_no_structure_is_kept_as_text(void **state)
{
	struct mb_msg *m = parse("no-mime.eml");

	assert_contains(m->body, "just a line of text with no headers at all");
	assert_contains(m->body, "and a second line");
	assert_non_null(m->parse_error);
	assert_contains(m->parse_error, "no MIME structure");
	mb_msg_free(&m);
}

static void
mime_empty_and_garbage_input_give_a_message(void **state)
{
	static const char *inputs[] = { "", "\n", "\r\n\r\n", "From ", ":", "Subject:\n",
	    "Content-Type: multipart/mixed\n\n--\n", "\x00\x01\x02\xff" };
	struct mb_msg *m;

	for (size_t i = 0; i < MB_ARRAY_LEN(inputs); i++) {
		m = parse_mem(inputs[i], i == 7 ? 4 : strlen(inputs[i]), NULL);
		mb_msg_free(&m);
	}
}

static void
mime_body_cap_cuts_at_a_character_boundary(void **state)
{
	struct mb_mime_opts o = MB_MIME_OPTS_DEFAULT;
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	const char *marker = "\n[\xe2\x80\xa6 body truncated]";
	struct mb_msg *m;
	size_t kept;

	assert_int_equal(mb_buf_adds(&b, "Subject: long\nContent-Type: text/plain; charset=utf-8\n\n"), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(mb_buf_adds(&b, "\xe2\x82\xac"), 0);	/* 3-byte € */
	for (size_t cap = 100; cap < 104; cap++) {
		o.body_cap = cap;
		m = parse_mem(b.data, b.len, &o);
		assert_true(m->body_truncated);
		assert_true(m->body_len > strlen(marker));
		kept = m->body_len - strlen(marker);
		assert_string_equal(m->body + kept, marker);
		assert_true(kept <= cap);
		assert_true(kept > cap - 3);
		assert_int_equal(kept % 3, 0);
		mb_msg_free(&m);
	}
	o.body_cap = 3000;
	m = parse_mem(b.data, b.len, &o);
	assert_false(m->body_truncated);
	assert_int_equal(m->body_len, 3000);
	mb_msg_free(&m);
	mb_buf_release(&b);
}

/* n levels of multipart/mixed, each with its own boundary, text at the bottom. */
static void
nested(struct mb_buf *b, int n)
{
	assert_int_equal(mb_buf_adds(b, "Subject: deep\n"), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(mb_buf_addf(b, "Content-Type: multipart/mixed; boundary=\"b%d\"\n\n--b%d\n",
		    i, i), 0);
	assert_int_equal(mb_buf_adds(b, "Content-Type: text/plain\n\nbottom text\n"), 0);
	for (int i = n - 1; i >= 0; i--)
		assert_int_equal(mb_buf_addf(b, "--b%d--\n", i), 0);
}

static void
mime_deep_nesting_is_capped(void **state)
{
	struct mb_mime_opts o = MB_MIME_OPTS_DEFAULT;
	struct mb_buf b = MB_BUF_INIT(16u << 20);
	struct mb_msg *m;
	long long t0;

	nested(&b, 10);
	m = parse_mem(b.data, b.len, &o);
	assert_string_equal(m->body, "bottom text");
	assert_null(m->parse_error);
	mb_msg_free(&m);

	o.max_depth = 5;
	m = parse_mem(b.data, b.len, &o);
	assert_non_null(m->parse_error);
	assert_contains(m->parse_error, "nesting too deep");
	assert_string_equal(m->subject, "deep");
	mb_msg_free(&m);

	mb_buf_reset(&b);
	nested(&b, 50000);
	t0 = mb_test_cpu_ms();
	m = parse_mem(b.data, b.len, NULL);
	print_message("50,000-level nested message (%zu bytes): %lld ms\n", b.len, mb_test_cpu_ms() - t0);
	assert_true(mb_test_cpu_ms() - t0 < 30000);
	assert_non_null(m->parse_error);
	assert_string_equal(m->subject, "deep");
	mb_msg_free(&m);
	mb_buf_release(&b);
}

static void
mime_long_line_is_linear(void **state)
{
	struct mb_buf b = MB_BUF_INIT(16u << 20);
	struct mb_msg *m;
	long long t0;

	assert_int_equal(mb_buf_adds(&b, "Subject: one line\n\n"), 0);
	while (b.len < (10u << 20))
		assert_int_equal(mb_buf_adds(&b, "abcdefghij klmnopqrstuvwxyz 0123456789 "), 0);
	t0 = mb_test_cpu_ms();
	m = parse_mem(b.data, b.len, NULL);
	print_message("10 MB single line: %lld ms\n", mb_test_cpu_ms() - t0);
	assert_true(m->body_truncated);
	assert_true(m->body_len <= MB_MIME_BODY_CAP + 32);
	assert_true(mb_test_cpu_ms() - t0 < 20000);
	mb_msg_free(&m);
	mb_buf_release(&b);
}

/* Every id of In-Reply-To is kept, in order; in_reply_to is the first. */
static void
mime_in_reply_to_keeps_every_id(void **state)
{
	static const char raw[] = "From: a@example.com\nSubject: re\n"
	    "In-Reply-To: <one@x> <two@y>\n (a comment) <three@z>\n\nbody\n";
	struct mb_msg *m = parse_mem(raw, sizeof(raw) - 1, NULL);

	(void)state;
	assert_string_equal(m->in_reply_to, "one@x");
	assert_int_equal(m->n_parents, 3);
	assert_string_equal(m->parents[0], "one@x");
	assert_string_equal(m->parents[1], "two@y");
	assert_string_equal(m->parents[2], "three@z");
	mb_msg_free(&m);
}

/* A multipart/alternative with this text/plain and this HTML body (both generated). */
static struct mb_msg *
alternative(const char *plain, const char *html)
{
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	struct mb_msg *m;

	mb_buf_addf(&b, "From: news@example.com\nSubject: alt\nMIME-Version: 1.0\n"
	    "Content-Type: multipart/alternative; boundary=\"b\"\n\n--b\n"
	    "Content-Type: text/plain; charset=utf-8\n\n%s\n--b\n"
	    "Content-Type: text/html; charset=utf-8\n\n<html><body>%s</body></html>\n--b--\n",
	    plain, html);
	m = parse_mem(b.data, b.len, NULL);
	mb_buf_release(&b);
	return m;
}

#define NEWSLETTER_HTML \
	"<h1>March offers</h1><p>Our spring catalogue has arrived: garden tools, seeds and " \
	"planters at twenty percent off until the end of the month. Members get free " \
	"delivery on every order above thirty euros, and the new composting guide is " \
	"included with each parcel.</p><p>Invoice number 2026-0412 is attached to your " \
	"account page.</p>"

/*
 * A text/plain part that only points at the HTML loses to it; a short text
 * part that is a real message, or a placeholder beside HTML that says no
 * more, is kept.
 */
static void
mime_placeholder_text_part_yields_to_html(void **state)
{
	struct mb_msg *m;

	(void)state;
	m = alternative("To view this message, please open it in a web browser.", NEWSLETTER_HTML);
	assert_contains(m->body, "spring catalogue");
	assert_contains(m->body, "2026-0412");
	assert_null(strstr(m->body, "web browser"));
	assert_true(m->body_from_html);
	mb_msg_free(&m);
	m = alternative("Si ce message ne s'affiche pas correctement, ouvrez-le dans votre "
	    "navigateur.", NEWSLETTER_HTML);
	assert_contains(m->body, "spring catalogue");
	mb_msg_free(&m);
	/* A short real reply beside a long HTML signature keeps its text part. */
	m = alternative("Thanks, see you at five.", NEWSLETTER_HTML);
	assert_string_equal(m->body, "Thanks, see you at five.");
	assert_false(m->body_from_html);
	mb_msg_free(&m);
	/* The placeholder words, but HTML with little more to say: the text stays. */
	m = alternative("View this message in your browser.", "<p>View it online.</p>");
	assert_string_equal(m->body, "View this message in your browser.");
	mb_msg_free(&m);
	/* A long text part is never a placeholder, whatever it mentions. */
	{
		char plain[1200];

		memset(plain, 'a', sizeof(plain) - 40);
		strcpy(plain + sizeof(plain) - 40, " view this in a browser");
		m = alternative(plain, NEWSLETTER_HTML NEWSLETTER_HTML NEWSLETTER_HTML
		    NEWSLETTER_HTML NEWSLETTER_HTML NEWSLETTER_HTML NEWSLETTER_HTML);
		assert_contains(m->body, "view this in a browser");
		assert_false(m->body_from_html);
		mb_msg_free(&m);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mime_iso_8859_15_a4_is_euro),
		cmocka_unit_test(mime_raw_8bit_windows_1252_body),
		cmocka_unit_test(mime_raw_8bit_utf8_body),
		cmocka_unit_test(mime_raw_8bit_headers),
		cmocka_unit_test(mime_raw_utf8_headers),
		cmocka_unit_test(mime_html_zero_width_and_hidden_text),
		cmocka_unit_test(mime_bidi_override_stripped_from_body_and_subject),
		cmocka_unit_test(mime_tag_characters_stripped),
		cmocka_unit_test(mime_soft_hyphen_and_marks_stripped_from_body_and_subject),
		cmocka_unit_test(mime_base64_without_padding_keeps_last_bytes),
		cmocka_unit_test(mime_rfc2231_filename),
		cmocka_unit_test(mime_rfc2231_filename_with_continuations),
		cmocka_unit_test(mime_rfc2047_filename_inline_with_content_id),
		cmocka_unit_test(mime_attachment_data_is_optional),
		cmocka_unit_test(mime_boundary_quote_does_not_crash_and_keeps_text),
		cmocka_unit_test(mime_boundary_never_appears_keeps_text),
		cmocka_unit_test(mime_adjacent_encoded_words_join),
		cmocka_unit_test(mime_encoded_word_split_character_survives),
		cmocka_unit_test(mime_hostile_subject_is_linear),
		cmocka_unit_test(mime_date_parsed_to_utc),
		cmocka_unit_test(mime_date_missing_or_malformed_gives_no_date),
		cmocka_unit_test(mime_shift_jis_is_read_as_cp932),
		cmocka_unit_test(mime_undeclared_cjk_body_read_in_subject_charset),
		cmocka_unit_test(mime_unknown_charset_never_fails),
		cmocka_unit_test(mime_alternative_prefers_plain),
		cmocka_unit_test(mime_alternative_with_empty_plain_uses_html),
		cmocka_unit_test(mime_mixed_text_parts_concatenated_attachments_listed),
		cmocka_unit_test(mime_forwarded_message_is_searchable),
		cmocka_unit_test(mime_format_flowed_is_joined),
		cmocka_unit_test(mime_envelope_addresses_groups_and_threading),
		cmocka_unit_test(mime_crlf_becomes_lf_and_mbox_line_is_dropped),
		cmocka_unit_test(mime_no_structure_is_kept_as_text),
		cmocka_unit_test(mime_empty_and_garbage_input_give_a_message),
		cmocka_unit_test(mime_body_cap_cuts_at_a_character_boundary),
		cmocka_unit_test(mime_deep_nesting_is_capped),
		cmocka_unit_test(mime_long_line_is_linear),
		cmocka_unit_test(mime_placeholder_text_part_yields_to_html),
		cmocka_unit_test(mime_in_reply_to_keeps_every_id),
	};

	mb_mime_global_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
