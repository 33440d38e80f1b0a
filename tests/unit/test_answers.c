/*
 * What a careful reader checks, end to end inside one process: mail the
 * test writes is parsed by the normaliser (mb_mime_parse), indexed
 * (mb_index_upsert, with an INTERNALDATE), and read back through mcpd's
 * tools (get_message, search_messages) as a client would see it: the
 * structured addresses and their quoted display strings, the identifiers,
 * the date a message is ordered and filtered by, and the body a search
 * finds.  docs/normaliser.md states each rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/index.h"
#include "mailbox/mime.h"
#include "mailbox/util.h"
#include "mcpd.h"
#include "support_index.h"

struct fx {
	char			 dir[64];
	char			 path[96];
	struct mb_index		*idx;
	int64_t			 folder;
	uint32_t		 uid;
	struct mcp_server	 srv;
	struct mcp_config	 conf;
	bool			 serving;
};

static int
setup(void **state)
{
	struct fx *f = mb_xcalloc(1, sizeof(*f));
	struct mb_err err = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_answers.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/index.db", f->dir);
	if (mb_index_open(f->path, MB_INDEX_RW, &f->idx, &err) == -1 ||
	    mb_index_folder_ensure(f->idx, "INBOX", NULL, &f->folder, &err) == -1 ||
	    mcp_tools_load(&err) == -1)
		fail_msg("setup: %s", err.msg);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	if (f->serving) {
		mcp_server_close_index(&f->srv);
		mcp_server_release(&f->srv);
	}
	mb_index_close(&f->idx);
	mb_test_rmtree(f->dir);
	free(f);
	return 0;
}

/* Parse raw (LF line ends) and index it with this INTERNALDATE; returns its id. */
static int64_t
deliver(struct fx *f, const char *raw, int64_t internaldate)
{
	struct mb_msg *m = NULL;
	struct mb_err err = { 0 };
	struct mb_index_row row = { .folder_id = f->folder, .uidvalidity = 1, .uid = ++f->uid,
	    .internaldate = internaldate, .size = strlen(raw) };
	int64_t id = 0;

	assert_int_equal(mb_mime_parse(raw, strlen(raw), NULL, &m, &err), 0);
	row.msg = m;
	if (mb_index_upsert(f->idx, &row, &id, &err) == -1)
		fail_msg("upsert: %s", err.msg);
	mb_msg_free(&m);
	return id;
}

static void
serve(struct fx *f)
{
	struct mb_err err = { 0 };

	f->conf = (struct mcp_config){ .max_sessions = 4, .rate = 10, .index_path = f->path };
	assert_int_equal(mcp_server_init(&f->srv, &f->conf, &err), 0);
	f->serving = true;
}

/* A tool's result (not an error); the caller owns it. */
static json_t *
call(struct fx *f, const char *tool, json_t *args)
{
	struct mb_err err = { 0 };
	json_t *r = mcp_tools_call(&f->srv, tool, args, &(const struct mcp_caller){ 0 }, &err);

	if (r == NULL || json_is_true(json_object_get(r, "isError")))
		fail_msg("%s failed: %s", tool, err.msg);
	json_decref(args);
	return r;
}

static json_t *
get_message(struct fx *f, int64_t id)
{
	return call(f, "get_message", json_pack("{s:I}", "id", (json_int_t)id));
}

static json_t *
sc(json_t *r)
{
	return json_object_get(r, "structuredContent");
}

static const char *
text(json_t *r)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0),
	    "text"));
}

static const char *
str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* The ids search_messages answers for query, best (or newest) first, as "1 3 2". */
static char *
search_ids(struct fx *f, const char *query)
{
	json_t *r = call(f, "search_messages", json_pack("{s:s, s:i}", "query", query,
	    "limit", 50)), *h;
	char *s = mb_xcalloc(1, 512);
	size_t i;

	json_array_foreach(json_object_get(sc(r), "results"), i, h)
		snprintf(s + strlen(s), 512 - strlen(s), "%s%lld", i ? " " : "",
		    (long long)json_integer_value(json_object_get(h, "id")));
	json_decref(r);
	return s;
}

static void
assert_ids(struct fx *f, const char *query, const char *want)
{
	char *got = search_ids(f, query);

	if (strcmp(got, want) != 0)
		fail_msg("search %s: ids \"%s\", want \"%s\"", query, got, want);
	free(got);
}

/* ---- addresses and identifiers */

static void
addresses_are_structured_and_quoted(void **state)
{
	struct fx *f = *state;
	json_t *r, *m, *to, *cc;
	int64_t id;

	id = deliver(f, "From: \"Smith, Anna\" <anna@example.com>\n"
	    "To: =?utf-8?Q?Doe=2C_John?= <john@example.com>, plain@example.com,\n"
	    " Team: Dee <dee@example.com>, eve@example.com;\n"
	    "Cc: Carl <carl@example.com>\n"
	    "Subject: addresses\n"
	    "Message-ID: <addr-1@example.com>\n"
	    "In-Reply-To: <parent@example.com>\n"
	    "References: <root@example.com> <parent@example.com>\n"
	    "Date: Mon, 02 Mar 2026 09:15:00 +0000\n\nhello\n", 1772442900);
	serve(f);
	r = get_message(f, id);
	m = sc(r);
	/* The display strings quote what an address parser would split. */
	assert_string_equal(str(m, "from"), "\"Smith, Anna\" <anna@example.com>");
	assert_string_equal(str(m, "to"), "\"Doe, John\" <john@example.com>, plain@example.com, "
	    "Team: Dee <dee@example.com>, eve@example.com;");
	assert_string_equal(str(m, "cc"), "Carl <carl@example.com>");
	/* Beside them, the structure: one entry per person, groups named. */
	assert_int_equal(json_array_size(json_object_get(m, "from_addresses")), 1);
	assert_string_equal(str(json_array_get(json_object_get(m, "from_addresses"), 0), "name"),
	    "Smith, Anna");
	to = json_object_get(m, "to_addresses");
	assert_int_equal(json_array_size(to), 4);
	assert_string_equal(str(json_array_get(to, 0), "name"), "Doe, John");
	assert_string_equal(str(json_array_get(to, 0), "address"), "john@example.com");
	assert_null(json_object_get(json_array_get(to, 1), "name"));	/* absent: omitted */
	assert_null(json_object_get(json_array_get(to, 1), "group"));
	assert_string_equal(str(json_array_get(to, 2), "group"), "Team");
	assert_string_equal(str(json_array_get(to, 3), "group"), "Team");
	cc = json_object_get(m, "cc_addresses");
	assert_int_equal(json_array_size(cc), 1);
	/* The identifiers. */
	assert_string_equal(str(m, "message_id"), "addr-1@example.com");
	assert_string_equal(str(m, "in_reply_to"), "parent@example.com");
	assert_int_equal(json_array_size(json_object_get(m, "references")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(m, "references"), 0)),
	    "root@example.com");
	/* The text block a model reads says the same. */
	assert_non_null(strstr(text(r), "From: \"Smith, Anna\" <anna@example.com>\n"));
	assert_non_null(strstr(text(r), "Message-ID: addr-1@example.com\n"));
	json_decref(r);
	/* A hit carries the Message-ID and the same quoted sender. */
	r = call(f, "search_messages", json_pack("{s:s}", "query", "addresses"));
	m = json_array_get(json_object_get(sc(r), "results"), 0);
	assert_string_equal(str(m, "message_id"), "addr-1@example.com");
	assert_string_equal(str(m, "from"), "\"Smith, Anna\" <anna@example.com>");
	json_decref(r);
}

/* An empty group in To is To: the Cc addresses are not shown as To. */
static void
empty_group_in_to_stays_to(void **state)
{
	struct fx *f = *state;
	json_t *r, *m, *to;
	int64_t id;

	id = deliver(f, "From: a@example.com\nTo: undisclosed-recipients:;\n"
	    "Cc: bcc-like@example.com\nSubject: hidden\n\nbody\n", 1772442900);
	serve(f);
	r = get_message(f, id);
	m = sc(r);
	assert_string_equal(str(m, "to"), "undisclosed-recipients:;");
	to = json_object_get(m, "to_addresses");
	assert_int_equal(json_array_size(to), 1);
	assert_string_equal(str(json_array_get(to, 0), "group"), "undisclosed-recipients");
	assert_null(json_object_get(json_array_get(to, 0), "address"));
	assert_string_equal(str(m, "cc"), "bcc-like@example.com");
	assert_null(strstr(text(r), "To: bcc-like"));
	json_decref(r);
	r = call(f, "search_messages", json_pack("{s:s}", "query", "hidden"));
	m = json_array_get(json_object_get(sc(r), "results"), 0);
	assert_string_equal(str(m, "to"), "undisclosed-recipients:;");
	assert_null(json_object_get(m, "message_id"));	/* none in the mail: omitted */
	json_decref(r);
}

/* ---- threads */

/*
 * A reply whose In-Reply-To names an unknown message first and a known one
 * second joins the known one's thread: every id counts, not the first.
 */
static void
in_reply_to_with_several_ids_joins_by_any(void **state)
{
	struct fx *f = *state;
	json_t *r;
	int64_t a, b, reply;

	a = deliver(f, "From: a@example.com\nSubject: plan A\nMessage-ID: <a@example.com>\n\nx\n",
	    1772442900);
	b = deliver(f, "From: b@example.com\nSubject: plan B\nMessage-ID: <b@example.com>\n\nx\n",
	    1772442960);
	reply = deliver(f, "From: c@example.com\nSubject: re: both\n"
	    "Message-ID: <c@example.com>\n"
	    "In-Reply-To: <never-seen@example.com> <b@example.com>\n\nx\n", 1772443020);
	serve(f);
	r = call(f, "get_thread", json_pack("{s:I}", "id", (json_int_t)reply));
	assert_int_equal(json_integer_value(json_object_get(sc(r), "total")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(sc(r), "messages"), 0), "id")), b);
	json_decref(r);
	r = call(f, "get_thread", json_pack("{s:I}", "id", (json_int_t)a));
	assert_int_equal(json_integer_value(json_object_get(sc(r), "total")), 1);
	json_decref(r);
	r = get_message(f, reply);
	assert_string_equal(str(sc(r), "in_reply_to"), "never-seen@example.com");
	json_decref(r);
}

/* ---- dates */

#define DAY	86400
#define T0	1772442900	/* 2026-03-02 09:15:00 UTC */

/*
 * The header date orders and filters mail when it is sane; INTERNALDATE
 * when it is missing, unreadable or in the future; which one was used is
 * said.
 */
static void
dates_fall_back_to_received(void **state)
{
	struct fx *f = *state;
	json_t *r, *m;
	int64_t good, future, missing, garbage, old;

	/* 1: an honest Date, 10 minutes before arrival */
	good = deliver(f, "From: a@example.com\nSubject: ledger good\n"
	    "Date: Mon, 02 Mar 2026 09:05:00 +0000\n\nx\n", T0);
	/* 2: a Date forged a year ahead, to stay on top */
	future = deliver(f, "From: a@example.com\nSubject: ledger future\n"
	    "Date: Tue, 02 Mar 2027 09:00:00 +0000\n\nx\n", T0 - 2 * DAY);
	/* 3: no Date at all */
	missing = deliver(f, "From: a@example.com\nSubject: ledger missing\n\nx\n", T0 - DAY);
	/* 4: a Date nothing can read */
	garbage = deliver(f, "From: a@example.com\nSubject: ledger garbage\n"
	    "Date: the day after tomorrow\n\nx\n", T0 - 3 * DAY);
	/* 5: old mail imported today: its Date is right, however old */
	old = deliver(f, "From: a@example.com\nSubject: ledger old\n"
	    "Date: Sat, 01 Jan 2022 12:00:00 +0000\n\nx\n", T0 + DAY);
	serve(f);

	r = get_message(f, good);
	assert_string_equal(str(sc(r), "date"), "2026-03-02T09:05:00Z");
	assert_string_equal(str(sc(r), "received"), "2026-03-02T09:15:00Z");
	assert_string_equal(str(sc(r), "date_used"), "date");
	json_decref(r);
	r = get_message(f, future);
	assert_string_equal(str(sc(r), "date"), "2027-03-02T09:00:00Z");	/* kept, not used */
	assert_string_equal(str(sc(r), "date_used"), "received");
	json_decref(r);
	r = get_message(f, missing);
	assert_null(json_object_get(sc(r), "date"));	/* no value: left out */
	assert_string_equal(str(sc(r), "date_used"), "received");
	json_decref(r);
	r = get_message(f, garbage);
	assert_null(json_object_get(sc(r), "date"));	/* no value: left out */
	assert_string_equal(str(sc(r), "date_used"), "received");
	json_decref(r);
	r = get_message(f, old);
	assert_string_equal(str(sc(r), "date_used"), "date");
	json_decref(r);

	/* Newest first by the date used: good (T0), missing (T0-1d), future (T0-2d),
	 * garbage (T0-3d), old (2022). */
	assert_ids(f, "ledger", "1 3 2 4 5");
	/* Filters alone use the same date; mail without a Date passes them. */
	assert_ids(f, "after:2026-02-28", "1 3 2");
	assert_ids(f, "after:2026-02-28 before:2026-03-02", "3 2");
	assert_ids(f, "before:2023-01-01", "5");
	/* A hit says which date it was ordered by. */
	r = call(f, "search_messages", json_pack("{s:s}", "query", "future"));
	m = json_array_get(json_object_get(sc(r), "results"), 0);
	assert_string_equal(str(m, "date_used"), "received");
	assert_string_equal(str(m, "received"), "2026-02-28T09:15:00Z");
	json_decref(r);
}

/* ---- the body a reader sees */

/* A newsletter's real content is found and shown, not its "view in a browser" line. */
static void
placeholder_text_part_loses_to_the_html(void **state)
{
	struct fx *f = *state;
	json_t *r;
	int64_t id;

	id = deliver(f, "From: news@example.com\nSubject: March letter\nMIME-Version: 1.0\n"
	    "Content-Type: multipart/alternative; boundary=\"b\"\n\n--b\n"
	    "Content-Type: text/plain\n\nView this email in your browser.\n--b\n"
	    "Content-Type: text/html\n\n<p>Our spring catalogue has arrived: garden tools, "
	    "seeds and planters at twenty percent off until the end of the month, with free "
	    "delivery for members on every order above thirty euros.</p><p>The composting "
	    "guide comes with each parcel, and invoice 2026-0412 is on your account page.</p>\n"
	    "--b--\n", T0);
	serve(f);
	assert_ids(f, "catalogue", "1");
	assert_ids(f, "browser", "");
	r = get_message(f, id);
	assert_non_null(strstr(str(sc(r), "body"), "spring catalogue"));
	json_decref(r);
}

/* Text the message's own style sheet hides is neither shown nor found. */
static void
style_sheet_hiding_is_applied(void **state)
{
	struct fx *f = *state;
	json_t *r;
	int64_t id;

	id = deliver(f, "From: shop@example.com\nSubject: offer\nMIME-Version: 1.0\n"
	    "Content-Type: text/html\n\n<html><head><style>.pre{display:none}"
	    " #trk{font-size:0}</style></head><body><div class=\"pre\">zanzibar teaser</div>"
	    "<p>Real offer text.</p><span id=\"trk\">quokka tracking</span></body></html>\n", T0);
	serve(f);
	assert_ids(f, "offer", "1");
	assert_ids(f, "zanzibar", "");
	assert_ids(f, "quokka", "");
	r = get_message(f, id);
	assert_string_equal(str(sc(r), "body"), "Real offer text.");
	json_decref(r);
}

/* ---- text folded for search */

/*
 * Stored in NFC; found through search_messages by the plain spelling of a
 * ligature, a full-width word or a decomposed accent, and the other way
 * round; a version number finds the labelled version.
 */
static void
search_folds_text_and_queries_alike(void **state)
{
	struct fx *f = *state;
	json_t *r;

	deliver(f, "From: a@example.com\nSubject: one\nContent-Type: text/plain; charset=utf-8\n\n"
	    "The \xef\xac\x81nal \xef\xbc\xb2\xef\xbc\xa5\xef\xbc\xb0\xef\xbc\xaf\xef\xbc\xb2\xef\xbc\xb4 "
	    "for re\xcc\x81sume\xcc\x81 v4.2.1\n", T0);
	deliver(f, "From: a@example.com\nSubject: two\nContent-Type: text/plain; charset=utf-8\n\n"
	    "The final report for r\xc3\xa9sum\xc3\xa9 4.2.1\n", T0);
	serve(f);
	r = get_message(f, 1);
	/* NFC stored: the decomposed accents came back composed */
	assert_non_null(strstr(str(sc(r), "body"), "r\xc3\xa9sum\xc3\xa9"));
	assert_non_null(strstr(str(sc(r), "body"), "\xef\xac\x81nal"));	/* NFC keeps ﬁ */
	json_decref(r);
	assert_ids(f, "final", "2 1");
	assert_ids(f, "\xef\xac\x81nal", "2 1");
	assert_ids(f, "report", "2 1");
	assert_ids(f, "\xef\xbd\x92\xef\xbd\x85\xef\xbd\x90\xef\xbd\x8f\xef\xbd\x92\xef\xbd\x94", "2 1");
	assert_ids(f, "re\xcc\x81sume\xcc\x81", "2 1");
	assert_ids(f, "resume", "2 1");
	assert_ids(f, "4.2.1", "2 1");
	assert_ids(f, "v4.2.1", "1");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(addresses_are_structured_and_quoted, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(empty_group_in_to_stays_to, setup, teardown),
		cmocka_unit_test_setup_teardown(in_reply_to_with_several_ids_joins_by_any, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(dates_fall_back_to_received, setup, teardown),
		cmocka_unit_test_setup_teardown(placeholder_text_part_loses_to_the_html, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(search_folds_text_and_queries_alike, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(style_sheet_hiding_is_applied, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
