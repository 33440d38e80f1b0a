/*
 * Where a search hit's words are, read from FTS5's position lists without
 * re-tokenizing the row: what a snippet of a long attachment needs
 * (docs/attachments.md, "Snippets").  snippet() tokenizes every column it
 * looks at, from the first byte, and with column -1 it looks at all of
 * them: for a row holding 200,000 characters of attachment text that was
 * most of a search's time.  These functions read the instance list (the
 * matches' token positions) and the column sizes, which FTS5 keeps, so
 * their cost is the number of matches, not the length of the text.
 *
 *	mb_snippet_column(messages_fts)
 *		the column snippet() should mark for the hit's main snippet: of
 *		the columns before att_text, the one where most of the query's
 *		phrases match (the first on a tie); the body when none does
 *		(the match is in attachment text alone, which the hit shows
 *		apart, so the main snippet shows the start of the body)
 *	mb_hit_offset(messages_fts, col)
 *		the token offset of the first match in column col, or NULL
 *	mb_column_tokens(messages_fts, col)
 *		the number of tokens in column col of the row
 *
 * mb_fts_mark() marks a query's words in a short text with the index's own
 * tokenizer, for a match that is not literally there (stemmed, folded).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "index-private.h"

/* mb_snippet_column(messages_fts) */
static void
snippet_column(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	unsigned seen[IDX_FTS_ATT_TEXT] = { 0 };	/* per column: bit per phrase (first 32) */
	int n_inst = 0, best = IDX_FTS_BODY, best_n = 0, rc;

	(void)n_val;
	(void)val;
	rc = api->xInstCount(fts, &n_inst);
	for (int i = 0; rc == SQLITE_OK && i < n_inst; i++) {
		int phrase, col, off;

		rc = api->xInst(fts, i, &phrase, &col, &off);
		if (rc == SQLITE_OK && col >= 0 && col < IDX_FTS_ATT_TEXT)
			seen[col] |= 1u << (phrase & 31);
	}
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	for (int col = 0; col < IDX_FTS_ATT_TEXT; col++) {
		int n = __builtin_popcount(seen[col]);

		if (n > best_n) {
			best_n = n;
			best = col;
		}
	}
	sqlite3_result_int(ctx, best);
}

/* mb_hit_offset(messages_fts, col) */
static void
hit_offset(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	int n_inst = 0, want, first = -1, rc;

	if (n_val != 1) {
		sqlite3_result_error(ctx, "mb_hit_offset: one argument, the column", -1);
		return;
	}
	want = sqlite3_value_int(val[0]);
	rc = api->xInstCount(fts, &n_inst);
	for (int i = 0; rc == SQLITE_OK && i < n_inst; i++) {
		int phrase, col, off;

		rc = api->xInst(fts, i, &phrase, &col, &off);
		if (rc == SQLITE_OK && col == want && (first < 0 || off < first))
			first = off;
	}
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else if (first >= 0)
		sqlite3_result_int(ctx, first);
	else
		sqlite3_result_null(ctx);
}

/* mb_column_tokens(messages_fts, col) */
static void
column_tokens(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	int n = 0, rc;

	if (n_val != 1) {
		sqlite3_result_error(ctx, "mb_column_tokens: one argument, the column", -1);
		return;
	}
	rc = api->xColumnSize(fts, sqlite3_value_int(val[0]), &n);
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_int(ctx, n);
}

int
mb_fts_hits_register(sqlite3 *db, struct mb_err *err)
{
	static const struct {
		const char		*name;
		fts5_extension_function	 fn;
	} fns[] = {
		{ "mb_snippet_column", snippet_column },
		{ "mb_hit_offset", hit_offset },
		{ "mb_column_tokens", column_tokens },
	};
	fts5_api *api = mb_fts5_api(db);

	if (api == NULL || api->iVersion < 2)
		return mb_err_set(err, MB_E_INTERNAL, "index: this SQLite has no FTS5");
	for (size_t i = 0; i < MB_ARRAY_LEN(fns); i++) {
		int rc = api->xCreateFunction(api, fns[i].name, NULL, fns[i].fn, NULL);

		if (rc != SQLITE_OK)
			return mb_err_set(err, MB_E_INTERNAL, "index: registering %s: %s",
			    fns[i].name, sqlite3_errstr(rc));
	}
	return 0;
}

/* ---- marking with the index's tokenizer */

#define MARK_MAX_TOKENS	(2 * MB_QUERY_MAX_TERMS)
#define MARK_MAX_SPANS	64

struct mark_ctx {
	char	*tokens[MARK_MAX_TOKENS];	/* the query's words, as the index has them */
	int	 n_tokens;
	int	 spans[MARK_MAX_SPANS][2];	/* byte ranges of the text to mark */
	int	 n_spans;
};

static int
query_token(void *p, int flags, const char *tok, int ntok, int start, int end)
{
	struct mark_ctx *m = p;

	(void)start;
	(void)end;
	if ((flags & FTS5_TOKEN_COLOCATED) || ntok <= 0 || m->n_tokens == MARK_MAX_TOKENS)
		return SQLITE_OK;
	m->tokens[m->n_tokens++] = mb_xstrndup(tok, (size_t)ntok);
	return SQLITE_OK;
}

/* A word of the text is marked when a query word is a prefix of it, as in excerpts. */
static int
text_token(void *p, int flags, const char *tok, int ntok, int start, int end)
{
	struct mark_ctx *m = p;

	if ((flags & FTS5_TOKEN_COLOCATED) || m->n_spans == MARK_MAX_SPANS)
		return SQLITE_OK;
	for (int i = 0; i < m->n_tokens; i++) {
		size_t n = strlen(m->tokens[i]);

		if (n <= (size_t)ntok && memcmp(tok, m->tokens[i], n) == 0) {
			if (m->n_spans > 0 && start < m->spans[m->n_spans - 1][1])
				break;	/* a CJK bigram overlapping the last one */
			m->spans[m->n_spans][0] = start;
			m->spans[m->n_spans][1] = end;
			m->n_spans++;
			break;
		}
	}
	return SQLITE_OK;
}

/* Back from i to the start of a UTF-8 character of text. */
static size_t
char_start(const char *text, size_t i)
{
	while (i > 0 && ((unsigned char)text[i] & 0xc0) == 0x80)
		i--;
	return i;
}

int
mb_fts_mark(sqlite3 *db, const struct mb_query *q, const char *text, size_t len,
    size_t max_bytes, struct mb_buf *out, size_t *from_r, size_t *to_r)
{
	struct mark_ctx m = { .n_tokens = 0 };
	fts5_tokenizer tk;
	Fts5Tokenizer *t = NULL;
	size_t at, end;
	int rc;

	if (len > INT32_MAX || mb_fts_tokenizer(db, &tk, &t) == -1)
		return -1;
	rc = SQLITE_OK;
	for (size_t i = 0; rc == SQLITE_OK && i < q->n_hl; i++)
		rc = tk.xTokenize(t, &m, FTS5_TOKENIZE_QUERY, q->hl[i], (int)strlen(q->hl[i]),
		    query_token);
	if (rc == SQLITE_OK && m.n_tokens > 0)
		rc = tk.xTokenize(t, &m, FTS5_TOKENIZE_AUX, text, (int)len, text_token);
	tk.xDelete(t);
	for (int i = 0; i < m.n_tokens; i++)
		free(m.tokens[i]);
	if (rc != SQLITE_OK || m.n_spans == 0)
		return -1;
	/* max_bytes from a quarter of them before the first word, as excerpts do */
	at = (size_t)m.spans[0][0] > max_bytes / 4 ? char_start(text, m.spans[0][0] - max_bytes / 4) :
	    0;
	end = len - at > max_bytes ? char_start(text, at + max_bytes) : len;
	*from_r = at;
	for (int i = 0; i < m.n_spans; i++) {
		size_t s = (size_t)m.spans[i][0], e = (size_t)m.spans[i][1];

		if (s < at || s >= e || s >= end)
			continue;
		end = e > end ? e : end;	/* never cut a marked word */
		if (end > len || mb_buf_add(out, text + at, s - at) == -1 ||
		    mb_buf_adds(out, "**") == -1 || mb_buf_add(out, text + s, e - s) == -1 ||
		    mb_buf_adds(out, "**") == -1)
			return -1;
		at = e;
	}
	*to_r = end;
	return mb_buf_add(out, text + at, end - at);
}
