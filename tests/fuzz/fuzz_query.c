/*
 * libFuzzer target for the search query compiler: any input either compiles
 * to an FTS5 expression that SQLite accepts, or is refused with MB_E_INVALID;
 * never an FTS5 syntax error.  The input is "query\ntext": the text (when it
 * is valid UTF-8) also goes through mb_query_excerpt().  The expression
 * also goes through the block walk's phrase reader (index_search_blocks.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/labels.h"
#include "mailbox/log.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/utf8.h"

#include "../../libmailbox/core/search-private.h"

static sqlite3 *db;
static sqlite3_stmt *st;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the index's columns (migration 0005's attachment names and text too), with the
	 * stock tokenizer (mb_cjk needs a file index) */
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE VIRTUAL TABLE messages_fts USING fts5(subject, from_text, "
	    "recipients, body, att_names, att_text, "
	    "tokenize='porter unicode61 remove_diacritics 2');"
	    "INSERT INTO messages_fts VALUES('Budget review', 'Alice <a@x>', 'Bob <b@y>', "
	    "'quarterly budget, meeting at noon; 会議は月曜日です', 'invoice.pdf', "
	    "'total due 120 EUR');", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1 "
	    "AND rank MATCH 'bm25(10.0, 4.0, 2.0, 1.0, 4.0, 1.0)' ORDER BY rank", -1, &st, NULL) != SQLITE_OK)
		mb_fatalx("fuzz_query setup: %s", sqlite3_errmsg(db));
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *nl = memchr(s, '\n', size);
	size_t qlen = nl ? (size_t)(nl - s) : size;
	struct mb_query q;
	struct mb_err err = { 0 };

	mb_query_init(&q);
	if (mb_query_compile(s, qlen, &q, &err) == -1) {
		if (err.code != MB_E_INVALID || q.match != NULL)
			abort();
		return 0;
	}
	if (q.match != NULL) {
		int rc;

		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, q.match, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		if (rc != SQLITE_DONE)
			mb_fatalx("FTS5 rejected '%s': %s", q.match, sqlite3_errmsg(db));
		/* read as the block walk reads it: within bounds whatever was typed */
		(void)idx_match_plain(q.match);
	}
	/* the label tests are the compiler's own "+x -y" list, whatever was typed */
	if (q.labels != NULL && (q.labels[0] != '+' && q.labels[0] != '-'))
		abort();
	(void)mb_labels_test("$Label1 project-x \\Old", q.labels);
	(void)mb_search_hash(&q);
	if (nl != NULL && mb_utf8_valid(nl + 1, size - qlen - 1)) {
		struct mb_buf out = MB_BUF_INIT(1u << 20);

		mb_query_excerpt(&q, nl + 1, size - qlen - 1, 160, &out);
		if (!mb_utf8_valid(out.data, out.len))
			abort();
		mb_buf_release(&out);
	}
	mb_query_release(&q);
	return 0;
}
