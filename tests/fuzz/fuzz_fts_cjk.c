/*
 * fuzz_fts_cjk: the mb_cjk tokenizer on arbitrary bytes, indexed and used as
 * a query, with highlight() and mb_snippet() (fts_hits.c) over the result,
 * so a bad offset or a misread of broken UTF-8 shows up under ASan (both
 * copy by the offsets); mb_snippet() also in pieces of 7 bytes, as it
 * goes through a long body, and for valid UTF-8 without NUL the two
 * snippets must be the same.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/utf8.h"

#include "../../libmailbox/core/index-private.h"

static sqlite3		*db;
static sqlite3_stmt	*ins, *query, *clear;

static void
setup(void)
{
	struct mb_err err = { 0 };

	if (sqlite3_open(":memory:", &db) != SQLITE_OK || mb_fts_cjk_register(db, &err) == -1 ||
	    mb_fts_hits_register(db, &err) == -1 ||
	    sqlite3_exec(db, "CREATE VIRTUAL TABLE t USING fts5(x,"
	    " tokenize='mb_cjk porter unicode61 remove_diacritics 2')", NULL, NULL, NULL) != SQLITE_OK)
		abort();
	sqlite3_prepare_v2(db, "INSERT INTO t (x) VALUES (?1)", -1, &ins, NULL);
	sqlite3_prepare_v2(db, "SELECT highlight(t, 0, '[', ']'), mb_snippet(t, 0, 16), "
	    "mb_snippet(t, 0, 1, 7), mb_snippet(t, 0, 16, 7) FROM t WHERE t MATCH ?1", -1,
	    &query, NULL);
	sqlite3_prepare_v2(db, "DELETE FROM t", -1, &clear, NULL);
	if (ins == NULL || query == NULL || clear == NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *phrase;
	bool valid = mb_utf8_valid((const char *)data, size) && memchr(data, 0, size) == NULL;

	if (db == NULL)
		setup();
	sqlite3_bind_text(ins, 1, (const char *)data, (int)size, SQLITE_STATIC);
	if (sqlite3_step(ins) != SQLITE_DONE)
		abort();
	sqlite3_reset(ins);
	/* As a quoted phrase (always valid syntax), and as raw query syntax. */
	phrase = malloc(size * 2 + 3);
	size_t n = 0;
	phrase[n++] = '"';
	for (size_t i = 0; i < size; i++) {
		if (data[i] == '"')
			phrase[n++] = '"';
		phrase[n++] = data[i] ? (char)data[i] : ' ';
	}
	phrase[n++] = '"';
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0)
			sqlite3_bind_text(query, 1, phrase, (int)n, SQLITE_STATIC);
		else
			sqlite3_bind_text(query, 1, (const char *)data, (int)size, SQLITE_STATIC);
		while (sqlite3_step(query) == SQLITE_ROW) {
			const unsigned char *whole = sqlite3_column_text(query, 1);
			const unsigned char *pieces = sqlite3_column_text(query, 3);

			/*
			 * In valid UTF-8 without NUL, all the index holds
			 * (docs/normaliser.md), the pieces change nothing; in
			 * other bytes a token's offsets may differ (never out of
			 * the text: ASan).
			 */
			if (!valid)
				continue;
			if ((whole == NULL) != (pieces == NULL) || (whole != NULL &&
			    strcmp((const char *)whole, (const char *)pieces) != 0))
				abort();
		}
		sqlite3_reset(query);
	}
	free(phrase);
	sqlite3_step(clear);
	sqlite3_reset(clear);
	return 0;
}
