/*
 * Attachment text extraction: each format gives the text a reader of the
 * document sees, and every hostile document (encrypted, truncated, a zip
 * bomb, nesting too deep, a parser that loops) gives a status saying why
 * there is no text, never a crash or a hang.  The fixtures are written by
 * tests/lib/mkattach.py into a fresh directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mailbox/extract.h"
#include "mailbox/utf8.h"
#include "mailbox/mime.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

static char fixdir[256];

static int
setup_all(void **state)
{
	char cmd[1024];

	snprintf(fixdir, sizeof(fixdir), "/tmp/mb-extract-XXXXXX");
	if (mkdtemp(fixdir) == NULL)
		return -1;
	snprintf(cmd, sizeof(cmd), "python3 %s/tests/lib/mkattach.py %s", MB_SOURCE_DIR, fixdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int
teardown_all(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fixdir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *
slurp(const char *name, size_t *len_r)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = mb_xmalloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len_r = (size_t)n;
	return buf;
}

/* Extract fixture name as type; its status must start with status_prefix. */
static void
run(const struct mb_extract_limits *lim, const char *name, const char *type,
    const char *charset, const char *status_prefix, struct mb_extract_out *out)
{
	size_t len;
	char *data = slurp(name, &len);

	mb_extract(lim, type, name, charset, data, len, false, out);
	free(data);
	if (strncmp(out->status, status_prefix, strlen(status_prefix)) != 0)
		fail_msg("%s: status [%s], want [%s...]; text [%s]", name, out->status,
		    status_prefix, out->text.data);
}

static void
expect_text(const char *name, const char *type, const char *charset, const char *const *want)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	struct mb_extract_out out;

	run(&lim, name, type, charset, "ok", &out);
	for (; *want != NULL; want++)
		if (strstr(out.text.data, *want) == NULL)
			fail_msg("%s: no [%s] in [%s]", name, *want, out.text.data);
	mb_buf_release(&out.text);
}

static void
expect_status(const char *name, const char *type, const char *status)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	struct mb_extract_out out;

	run(&lim, name, type, NULL, status, &out);
	assert_int_equal(out.text.len, 0);
	mb_buf_release(&out.text);
}

static void
test_pdf(void **state)
{
	expect_text("plain.pdf", "application/pdf", NULL, (const char *[]){ "Quarterly contract",
	    "Zebulon", NULL });
	expect_text("flate.pdf", "application/pdf", NULL, (const char *[]){ "xylophone", NULL });
	expect_text("pages.pdf", "application/pdf", NULL, (const char *[]){ "first page alpha",
	    "second page bravo", "third page charlie", NULL });
	expect_text("accents.pdf", "application/pdf", NULL, (const char *[]){ "Café déjà vu",
	    "façade", NULL });
	expect_text("cjk.pdf", "application/pdf", NULL, (const char *[]){ "日本語の契約書", NULL });
	/* A generic type: the name says PDF. */
	expect_text("plain.pdf", "application/octet-stream", NULL, (const char *[]){ "Zebulon",
	    NULL });
}

static void
test_pdf_hostile(void **state)
{
	expect_status("encrypted.pdf", "application/pdf", "encrypted:");
	expect_status("truncated.pdf", "application/pdf", "failed:");
}

/*
 * A ToUnicode CMap that maps glyphs to lone UTF-16 surrogates: poppler
 * encodes them as if they were characters (ED B8 8C...), which is not
 * UTF-8.  The text must come out valid, each bad byte as U+FFFD, the rest
 * kept.  (Found by fuzz_extract_pdf; the input is its seed surrogates.pdf.)
 */
static void
test_pdf_surrogates(void **state)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	struct mb_extract_out out;
	FILE *f = fopen(MB_SOURCE_DIR "/tests/fuzz/corpus/extract_pdf/surrogates.pdf", "rb");
	char data[4096];
	size_t len;

	assert_non_null(f);
	len = fread(data, 1, sizeof(data), f);
	fclose(f);
	/* The entry point itself, which the fuzzer calls: not only mb_extract's cleaned text. */
	mb_buf_init(&out.text, (size_t)lim.max_chars * 4 + 64);
	snprintf(out.status, sizeof(out.status), "ok");
	assert_int_equal(mb_extract_pdf(&lim, NULL, data, len, &out), 0);
	assert_true(out.text.len > 0);
	if (!mb_utf8_valid(out.text.data, out.text.len))
		fail_msg("not UTF-8: [%s]", out.text.data);
	assert_non_null(strstr(out.text.data, "\xef\xbf\xbd"));
	assert_non_null(strstr(out.text.data, "\xc3\x9e"));	/* a valid Þ around them stays */
	mb_buf_release(&out.text);
}

static void
test_office(void **state)
{
	expect_text("report.docx", "application/vnd.openxmlformats-officedocument."
	    "wordprocessingml.document", NULL, (const char *[]){ "Board minutes for the walrus "
	    "project\nBudget approved", NULL });
	expect_text("book.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml."
	    "sheet", NULL, (const char *[]){ "Sheet: Invoices\nCustomer\tAmount\nQuokka Ltd\t1200",
	    "Sheet: Summary\nTotal\t1200\nStatus\tpaid", NULL });
	expect_text("notes.odt", "application/vnd.oasis.opendocument.text", NULL,
	    (const char *[]){ "OpenDocument notes about the narwhal\nSecond paragraph", NULL });
	expect_text("nested.docx", "application/octet-stream", NULL, (const char *[]){
	    "outer text", NULL });
}

static void
test_office_hostile(void **state)
{
	const char *docx = "application/vnd.openxmlformats-officedocument.wordprocessingml."
	    "document";
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	struct mb_extract_out out;

	expect_status("bomb.docx", docx, "refused:");
	expect_status("deep.docx", docx, "refused:");
	/* The embedded document is not opened. */
	run(&lim, "nested.docx", docx, NULL, "ok", &out);
	assert_null(strstr(out.text.data, "inner secret"));
	mb_buf_release(&out.text);
	/* A PDF named .docx is no zip. */
	expect_status("plain.pdf", docx, "failed:");
}

static void
test_calendar(void **state)
{
	expect_text("invite.ics", "text/calendar", NULL, (const char *[]){
	    "Invitation: Design review, round two\n"
	    "Organiser: Ada Lovelace <ada@example.org>\n"
	    "Attendees: Bob Builder <bob@example.org>, carol@example.org\n"
	    "Start: 2026-12-03 10:00 Europe/Berlin\n"
	    "End: 2026-12-03 11:30 Europe/Berlin\n"
	    "Location: Room 4\n"
	    "Description: Bring the plans\nand the sketches.", NULL });
}

static void
test_text_charsets(void **state)
{
	/* Declared windows-1252, and undeclared (the body's fallback reads it the same). */
	expect_text("legacy.csv", "text/csv", "windows-1252", (const char *[]){
	    "Jürgen;Köln\nFrançois;Besançon", NULL });
	expect_text("legacy.csv", "text/csv", NULL, (const char *[]){ "Jürgen;Köln", NULL });
}

static void
test_limits(void **state)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	struct mb_extract_out out;
	static char big[5000];

	memset(big, 'a', sizeof(big));
	for (size_t i = 10; i < sizeof(big); i += 11)
		big[i] = ' ';
	lim.max_chars = 100;
	mb_extract(&lim, "text/plain", NULL, NULL, big, sizeof(big), false, &out);
	assert_string_equal(out.status, "ok: cut at 100 characters");
	assert_int_equal(out.text.len, 100);
	mb_buf_release(&out.text);

	lim = (struct mb_extract_limits)MB_EXTRACT_LIMITS_DEFAULT;
	lim.max_input = 1024;
	mb_extract(&lim, "text/plain", NULL, NULL, big, sizeof(big), false, &out);
	assert_true(strncmp(out.status, "refused:", 8) == 0);
	mb_buf_release(&out.text);

	lim = (struct mb_extract_limits)MB_EXTRACT_LIMITS_DEFAULT;
	lim.types = "pdf";
	mb_extract(&lim, "text/plain", NULL, NULL, big, sizeof(big), false, &out);
	assert_string_equal(out.status, "skipped: text/plain is not extracted");
	mb_buf_release(&out.text);
	lim.types = "off";
	mb_extract(&lim, "text/plain", NULL, NULL, big, sizeof(big), false, &out);
	assert_string_equal(out.status, "skipped: extraction is off");
	mb_buf_release(&out.text);

	mb_extract(&lim, "image/png", NULL, NULL, big, sizeof(big), false, &out);
	assert_true(strncmp(out.status, "skipped:", 8) == 0);
	mb_buf_release(&out.text);
}

/* Every format also runs in the child, with the same answers. */
static void
test_sandbox(void **state)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	struct mb_extract_out out;
	size_t len;
	char *data = slurp("legacy.csv", &len);

	lim.cpu_seconds = 1;
	mb_extract(&lim, "text/csv", NULL, "windows-1252", data, len, true, &out);
	assert_string_equal(out.status, "ok");
	assert_non_null(strstr(out.text.data, "Jürgen;Köln"));
	mb_buf_release(&out.text);
	free(data);
	data = slurp("invite.ics", &len);
	mb_extract(&lim, "text/calendar", NULL, NULL, data, len, true, &out);
	assert_non_null(strstr(out.text.data, "Organiser: Ada Lovelace"));
	mb_buf_release(&out.text);
	free(data);
}

static void
test_types_parse(void **state)
{
	struct mb_err err = { 0 };
	unsigned t;

	assert_int_equal(mb_extract_types_parse("text, pdf", &t, &err), 0);
	assert_int_equal(t, MB_EXTRACT_TEXT | MB_EXTRACT_PDF);
	assert_int_equal(mb_extract_types_parse(NULL, &t, &err), 0);
	assert_int_equal(t, MB_EXTRACT_ALL);
	assert_int_equal(mb_extract_types_parse("off", &t, &err), 0);
	assert_int_equal(t, 0);
	assert_int_equal(mb_extract_types_parse("text,word", &t, &err), -1);
	assert_non_null(strstr(err.msg, "'word'"));
}

/* The message loop: each attachment gets its text or its reason; the cache reuses it. */
static void
test_message(void **state)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	char dir[300], cache[700];
	struct mb_msg *m = mb_msg_new();
	size_t len;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/data", fixdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	m->attachments = mb_xcalloc(2, sizeof(*m->attachments));
	m->n_attachments = 2;
	m->attachments[0].mime_type = mb_xstrdup("application/pdf");
	m->attachments[0].data = (unsigned char *)slurp("flate.pdf", &len);
	m->attachments[0].size = len;
	m->attachments[1].mime_type = mb_xstrdup("image/png");
	m->attachments[1].data = (unsigned char *)mb_xstrdup("png");
	m->attachments[1].size = 3;
	mb_extract_message(&lim, dir, m);
	assert_string_equal(m->attachments[0].text_status, "ok");
	assert_non_null(strstr(m->attachments[0].text, "xylophone"));
	assert_string_equal(m->attachments[1].text_status, "skipped: image/png is not extracted");
	assert_null(m->attachments[1].text);
	snprintf(cache, sizeof(cache), "%s/blobs/%.2s/%s.txt", dir, m->attachments[0].sha256,
	    m->attachments[0].sha256 + 2);
	assert_int_equal(stat(cache, &st), 0);
	/* Same bytes again: the text comes from the cache (proved by editing it). */
	{
		FILE *f = fopen(cache, "r+");
		char buf[4096];
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		char *p;

		buf[n] = '\0';
		p = strstr(buf, "xylophone");
		assert_non_null(p);
		memcpy(p, "XYLOPHONE", 9);
		rewind(f);
		fwrite(buf, 1, n, f);
		fclose(f);
	}
	free(m->attachments[0].text);
	free(m->attachments[0].text_status);
	m->attachments[0].text = m->attachments[0].text_status = NULL;
	mb_extract_message(&lim, dir, m);
	assert_non_null(strstr(m->attachments[0].text, "XYLOPHONE"));
	mb_msg_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pdf),
		cmocka_unit_test(test_pdf_hostile),
		cmocka_unit_test(test_pdf_surrogates),
		cmocka_unit_test(test_office),
		cmocka_unit_test(test_office_hostile),
		cmocka_unit_test(test_calendar),
		cmocka_unit_test(test_text_charsets),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_sandbox),
		cmocka_unit_test(test_types_parse),
		cmocka_unit_test(test_message),
	};

	mb_mime_global_init();
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
