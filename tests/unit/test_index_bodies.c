/*
 * Packed bodies (migration 0016, text_pack.c; attachment text is packed the
 * same way, test_index_attach_search.c): a long body is stored as a
 * zstd frame and everything a user reads of it -- get_message and its
 * pages, a thread's excerpts, search and its snippets, FTS5's own checks --
 * sees the text; a short one stays text; a damaged frame is an error, not
 * text; and an index from before the migration is packed when it opens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/query.h"
#include "mailbox/read.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#include "support_index.h"

#define SHORT_BODY	"A short note about zanzibar."

/* A long body of mail-like text (owned by the caller): words, numbers, lines;
 * "kilimanjaro" near the middle and "zanzibar" at the end. */
static char *
long_body(void)
{
	static const char *const words[] = { "meeting", "budget", "report", "quarter",
	    "please", "review", "attached", "numbers", "thanks", "regards", "schedule",
	    "project", "deadline", "friday", "monday", "invoice", "payment", "server" };
	struct mb_buf b = MB_BUF_INIT(1 << 16);
	unsigned x = 12345;

	for (int i = 0; i < 900; i++) {
		x = x * 1103515245u + 12345u;
		mb_buf_addf(&b, "%s%s", words[(x >> 16) % MB_ARRAY_LEN(words)],
		    i % 12 == 11 ? ".\n" : " ");
		if (i % 37 == 0)
			mb_buf_addf(&b, "%u ", (x >> 8) % 10000);
		if (i == 450)
			mb_buf_addf(&b, "kilimanjaro ");
	}
	mb_buf_addf(&b, "Last: zanzibar.");
	return mb_buf_detach(&b, NULL);
}

static void
put(struct mb_test_index *t, uint32_t uid, const char *subject, const char *body)
{
	struct mb_test_msg m = { .subject = subject, .body = body, .date = 1700000000 + uid,
	    .message_id = NULL };

	mb_test_put(t->idx, t->inbox, uid, &m);
}

static int64_t
id_of(struct mb_test_index *t, uint32_t uid)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "SELECT id FROM messages WHERE uid = %u", uid);
	return mb_test_index_int(t, sql);
}

/* The whole body of id as get_message reads it, page after page (owned). */
static char *
read_whole(struct mb_index *idx, int64_t id)
{
	struct mb_buf b = MB_BUF_INIT(1 << 16);
	size_t offset = 0;

	for (;;) {
		struct mb_read_message m = { 0 };
		struct mb_err err = { 0 };
		bool more;

		if (mb_read_message(idx, id, offset, 1000, &m, &err) == -1)
			fail_msg("read %lld at %zu: %s", (long long)id, offset, err.msg);
		mb_buf_add(&b, m.body, m.body_len);
		more = m.more;
		offset = m.next_offset;
		mb_read_message_release(&m);
		if (!more)
			break;
	}
	return mb_buf_detach(&b, NULL);
}

/* The snippet of the hit for id in a search of text ("" when none; owned). */
static char *
snippet_of(struct mb_index *idx, const char *text, int64_t id, size_t *n_hits)
{
	struct mb_search_page pg = { 0 };
	struct mb_query q;
	struct mb_err err = { 0 };
	char *s = NULL;

	mb_query_init(&q);
	if (mb_query_compile(text, strlen(text), &q, &err) == -1 ||
	    mb_search_run(idx, &q, 0, 20, &pg, &err) == -1)
		fail_msg("search %s: %s", text, err.msg);
	for (size_t i = 0; i < pg.n; i++)
		if (pg.hits[i].id == id)
			s = mb_xstrndup(pg.hits[i].snippet ? pg.hits[i].snippet : "",
			    pg.hits[i].snippet_len);
	*n_hits = pg.n;
	mb_search_page_release(&pg);
	mb_query_release(&q);
	return s != NULL ? s : mb_xstrdup("");
}

/* What a user reads of the two messages is their text, on either handle. */
static void
check_readers(struct mb_test_index *t, struct mb_index *idx, const char *body)
{
	struct mb_read_thread th = { 0 };
	struct mb_err err = { 0 };
	size_t n;
	char *got = read_whole(idx, id_of(t, 1)), *s;

	assert_string_equal(got, body);
	free(got);
	got = read_whole(idx, id_of(t, 2));
	assert_string_equal(got, SHORT_BODY);
	free(got);

	s = snippet_of(idx, "kilimanjaro", id_of(t, 1), &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(s, "**kilimanjaro**"));
	free(s);
	s = snippet_of(idx, "zanzibar", id_of(t, 2), &n);
	assert_int_equal(n, 2);
	assert_non_null(strstr(s, "**zanzibar**"));
	free(s);

	if (mb_read_thread(idx, id_of(t, 1), 0, 10, 40, &th, &err) == -1)
		fail_msg("thread: %s", err.msg);
	assert_int_equal(th.n, 1);
	assert_int_equal(strlen(th.items[0].preview), 40);
	assert_true(strncmp(body, th.items[0].preview, 40) == 0);
	mb_read_thread_release(&th);
}

static void
long_bodies_are_packed_and_read_back_whole(void **state)
{
	struct mb_test_index *t = *state;
	char *body = long_body();

	put(t, 1, "Budget", body);
	put(t, 2, "Note", SHORT_BODY);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT typeof(body) = 'blob' FROM messages WHERE uid = 1"), 1);
	/* about 2:1 on this text: at least a third saved */
	assert_true(mb_test_index_int(t, "SELECT length(body) FROM messages WHERE uid = 1") <
	    (int64_t)strlen(body) * 2 / 3);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT typeof(body) = 'text' FROM messages WHERE uid = 2"), 1);

	check_readers(t, t->idx, body);
	check_readers(t, mb_test_index_reader(t), body);
	mb_test_fts_consistent(t->idx);

	/* fetched again unchanged: the row and its full-text entry stay consistent */
	put(t, 1, "Budget", body);
	mb_test_fts_consistent(t->idx);
	free(body);
}

static void
a_damaged_packed_body_is_an_error_not_text(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_read_message m = { 0 };
	struct mb_err err = { 0 };
	sqlite3 *db = mb_index_db(t->idx);
	sqlite3_stmt *st;
	char *body = long_body();
	unsigned char *frame;
	int n;

	put(t, 1, "Budget", body);
	/* the FTS5 trigger would refuse the damaged value: write around it */
	assert_int_equal(sqlite3_exec(db, "DROP TRIGGER messages_fts_update", NULL, NULL, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT body FROM messages WHERE uid = 1", -1,
	    &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_bytes(st, 0);
	frame = mb_xmalloc((size_t)n);
	memcpy(frame, sqlite3_column_blob(st, 0), (size_t)n);
	sqlite3_finalize(st);
	frame[n / 2] ^= 0x5a;
	assert_int_equal(sqlite3_prepare_v2(db, "UPDATE messages SET body = ?1 WHERE uid = 1",
	    -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_blob(st, 1, frame, n, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	free(frame);

	assert_int_equal(mb_read_message(t->idx, id_of(t, 1), 0, 1000, &m, &err), -1);
	assert_non_null(strstr(err.msg, "a stored text is damaged"));
	mb_read_message_release(&m);
	free(body);
}

/*
 * An index written before migration 0016 (bodies as text, FTS5 reading the
 * messages table): opening it packs the long bodies, rebuilds the full-text
 * index through the view, and asks for a merge; readers see the same text.
 */
static void
an_older_index_is_packed_when_it_opens(void **state)
{
	static const char undo_sql[] =
		"DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_delete; "
		"DROP TRIGGER messages_fts_update; DROP TABLE messages_fts; "
		"DROP VIEW messages_fts_content; "
		"UPDATE messages SET body = mb_text(body), att_text = mb_text(att_text); "
		"CREATE VIRTUAL TABLE messages_fts USING fts5(subject, from_text, recipients, body, "
		"att_names, att_text, content='messages', content_rowid='id', "
		"tokenize='mb_cjk porter unicode61 remove_diacritics 2'); "
		"INSERT INTO messages_fts(messages_fts) VALUES ('rebuild'); "
		"CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
		"INSERT INTO messages_fts(rowid, subject, from_text, recipients, body, att_names, "
		"att_text) VALUES (new.id, new.subject, new.from_text, new.recipients, new.body, "
		"new.att_names, new.att_text); END; "
		"CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN "
		"INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body, "
		"att_names, att_text) VALUES ('delete', old.id, old.subject, old.from_text, "
		"old.recipients, old.body, old.att_names, old.att_text); END; "
		"CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, from_text, recipients, "
		"body, att_names, att_text ON messages BEGIN "
		"INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body, "
		"att_names, att_text) VALUES ('delete', old.id, old.subject, old.from_text, "
		"old.recipients, old.body, old.att_names, old.att_text); "
		"INSERT INTO messages_fts(rowid, subject, from_text, recipients, body, att_names, "
		"att_text) VALUES (new.id, new.subject, new.from_text, new.recipients, new.body, "
		"new.att_names, new.att_text); END; "
		"INSERT INTO fts_merge_state VALUES (1, (SELECT max(id) FROM messages)); "
		"DELETE FROM schema_migrations WHERE version = 16";
	struct mb_test_index *t = *state;
	struct mb_err err = { 0 };
	char *body = long_body();

	put(t, 1, "Budget", body);
	put(t, 2, "Note", SHORT_BODY);
	assert_int_equal(sqlite3_exec(mb_index_db(t->idx), undo_sql, NULL, NULL, NULL),
	    SQLITE_OK);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT count(*) FROM messages WHERE typeof(body) = 'blob'"), 0);
	mb_index_close(&t->idx);

	if (mb_index_open(t->path, MB_INDEX_RW, &t->idx, &err) == -1)
		fail_msg("reopen: %s", err.msg);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT typeof(body) = 'blob' FROM messages WHERE uid = 1"), 1);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT typeof(body) = 'text' FROM messages WHERE uid = 2"), 1);
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM fts_merge_state"), 0);
	check_readers(t, t->idx, body);
	mb_test_fts_consistent(t->idx);

	/* and the triggers index new and changed rows through mb_text() */
	put(t, 3, "Later", body);
	put(t, 2, "Note", "A changed note about serengeti, long enough to be packed: "
	    "serengeti serengeti serengeti serengeti serengeti serengeti serengeti serengeti.");
	assert_int_equal(mb_test_index_int(t,
	    "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'kilimanjaro'"), 2);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'serengeti'"), 1);
	assert_int_equal(mb_test_index_int(t,
	    "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'note AND zanzibar'"), 0);
	mb_test_fts_consistent(t->idx);
	free(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(long_bodies_are_packed_and_read_back_whole),
		MB_TEST_INDEX(a_damaged_packed_body_is_an_error_not_text),
		MB_TEST_INDEX(an_older_index_is_packed_when_it_opens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
