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
 *	mb_snippet_column(messages_fts[, one])
 *		the column snippet() should mark for the hit's main snippet: of
 *		the columns before att_text, the one where most of the query's
 *		phrases match (the first on a tie); the body when none does
 *		(the match is in attachment text alone, which the hit shows
 *		apart, so the main snippet shows the start of the body).  With
 *		one true every phrase counts as the same one (a prefix's words)
 *	mb_hit_offset(messages_fts, col)
 *		the token offset of the first match in column col, or NULL
 *	mb_column_tokens(messages_fts, col)
 *		the number of tokens in column col of the row
 *	mb_snippet(messages_fts, col, n[, piece])
 *		n tokens of column col around its first match, the matches
 *		marked **like this**, "…" where the column was cut: what
 *		snippet(messages_fts, col, '**', '**', '…', n) gives, but at the
 *		column's first match instead of its best window.  snippet()
 *		scores every window against every match, so a row of 20,000
 *		matches cost it seconds; this reads the matches once and
 *		tokenizes the column up to the window's end, in pieces of
 *		piece bytes (8 KB; the fuzzer asks for small ones), growing.
 *
 * mb_fts_mark() marks a query's words in a short text with the index's own
 * tokenizer, for a match that is not literally there (stemmed, folded).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/query.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#include "index-private.h"

/* mb_snippet_column(messages_fts[, one]) */
static void
snippet_column(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	unsigned seen[IDX_FTS_ATT_TEXT] = { 0 };	/* per column: bit per phrase (first 32) */
	/* a prefix's words (index_search.c, page_words()): every phrase is the prefix */
	bool one = n_val >= 1 && sqlite3_value_int(val[0]) != 0;
	int n_inst = 0, best = IDX_FTS_BODY, best_n = 0, rc;

	rc = api->xInstCount(fts, &n_inst);
	for (int i = 0; rc == SQLITE_OK && i < n_inst; i++) {
		int phrase, col, off;

		rc = api->xInst(fts, i, &phrase, &col, &off);
		if (rc == SQLITE_OK && col >= 0 && col < IDX_FTS_ATT_TEXT)
			seen[col] |= 1u << (one ? 0 : phrase & 31);
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
/*
 * The token offset of the row's first match in column want into *first_r
 * (-1: none there), and the row's match count into *n_inst_r; an SQLite
 * result code.
 */
static int
first_match_in(const Fts5ExtensionApi *api, Fts5Context *fts, int want, int *first_r,
    int *n_inst_r)
{
	int rc = api->xInstCount(fts, n_inst_r);

	*first_r = -1;
	for (int i = 0; rc == SQLITE_OK && i < *n_inst_r; i++) {
		int phrase, col, off;

		rc = api->xInst(fts, i, &phrase, &col, &off);
		if (rc == SQLITE_OK && col == want && (*first_r < 0 || off < *first_r))
			*first_r = off;
	}
	return rc;
}

static void
hit_offset(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	int n_inst = 0, first = -1, rc;

	if (n_val != 1) {
		sqlite3_result_error(ctx, "mb_hit_offset: one argument, the column", -1);
		return;
	}
	rc = first_match_in(api, fts, sqlite3_value_int(val[0]), &first, &n_inst);
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

/* ---- mb_snippet */

#define SNIPPET_MAX_TOKENS	64

/* What the tokenizer callback builds: the window's tokens and their marks. */
struct snippet_window {
	int	start, end;			/* the window: token positions [start, end) */
	int	mark[SNIPPET_MAX_TOKENS];	/* per window token: its match + 1, or 0 */
	int	pos;				/* the next token's position */
	const char *text;			/* the column, len bytes */
	int	len;
	int	base;				/* the piece being tokenized starts here */
	bool	passed;				/* a token past the window was seen */
	int	byte_start, byte_end;		/* the window's bytes */
	int	spans[SNIPPET_MAX_TOKENS][2];	/* byte ranges to mark, in order, apart */
	int	n_spans;
	int	last_mark;			/* mark of the window's previous token */
};

static int
window_token(void *p, int flags, const char *tok, int ntok, int start, int end)
{
	struct snippet_window *w = p;
	int pos, m;

	(void)tok;
	(void)ntok;
	if (flags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;	/* a synonym at the same position */
	pos = w->pos++;
	if (pos < w->start)
		return SQLITE_OK;
	if (pos >= w->end) {
		w->passed = true;
		return SQLITE_DONE;	/* stop (the tokenizer answers SQLITE_OK) */
	}
	start += w->base;
	end += w->base;
	/*
	 * A token ends after the combining marks that follow it: the tokenizer
	 * says so when its folding changed the text (it maps back whole
	 * clusters) and not otherwise, and a piece may be folded or not apart
	 * from the rest.  A mark is never cut from its character either.
	 */
	while (end < w->len) {
		uint32_t cp = 0;
		size_t k = mb_utf8_decode(w->text + end, (size_t)(w->len - end), &cp);

		if (k == 0 || g_unichar_combining_class(cp) == 0)
			break;
		end += (int)k;
	}
	if (w->byte_start < 0)
		w->byte_start = start;
	if (end > w->byte_end)
		w->byte_end = end;
	m = w->mark[pos - w->start];
	if (m != 0 && w->n_spans > 0 && (m == w->last_mark ||
	    start < w->spans[w->n_spans - 1][1])) {
		/* the next word of the same phrase, or a CJK bigram overlapping the last */
		if (end > w->spans[w->n_spans - 1][1])
			w->spans[w->n_spans - 1][1] = end;
	} else if (m != 0) {
		w->spans[w->n_spans][0] = start;
		w->spans[w->n_spans][1] = end;
		w->n_spans++;
	}
	w->last_mark = m;
	return SQLITE_OK;
}

#define SNIPPET_FIRST_PIECE	8192	/* bytes: most windows are in a body's first few KB */

/*
 * Where a piece of text[0, len) from base of about want bytes ends: after
 * white space that an ASCII byte follows, or at len.  No token spans white
 * space, but a combining mark after a space starts its token at the space,
 * and the tokenizer's folding could join the two: an ASCII byte is neither.
 * So in valid UTF-8 without NUL, all the index holds, the pieces give the
 * tokens and offsets of the whole (fuzz_fts_cjk checks it).
 */
static int
piece_end(const char *text, int len, int base, int want)
{
	int at = want < len - base ? base + want : len;

	while (at < len && !((text[at - 1] == ' ' || text[at - 1] == '\n' ||
	    text[at - 1] == '\t' || text[at - 1] == '\r') && (unsigned char)text[at] < 0x80))
		at++;
	return at;
}

/* mb_snippet(messages_fts, col, n[, piece]) */
static void
snippet_first(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int n_val,
    sqlite3_value **val)
{
	struct snippet_window w = { .byte_start = -1 };
	struct mb_buf out = MB_BUF_INIT(SIZE_MAX / 2);
	int col, n, first_piece, n_inst = 0, n_col = 0, first = -1, len = 0, at, rc;
	const char *text = NULL;

	if (n_val != 2 && n_val != 3) {
		sqlite3_result_error(ctx, "mb_snippet: the column, the tokens and maybe the "
		    "piece", -1);
		return;
	}
	col = sqlite3_value_int(val[0]);
	n = sqlite3_value_int(val[1]);
	first_piece = n_val == 3 ? sqlite3_value_int(val[2]) : SNIPPET_FIRST_PIECE;
	if (n < 1 || n > SNIPPET_MAX_TOKENS || first_piece < 1) {
		sqlite3_result_error(ctx, "mb_snippet: tokens or piece out of range", -1);
		return;
	}
	/* the first match in the column, then every match's tokens in the window */
	rc = first_match_in(api, fts, col, &first, &n_inst);
	if (rc == SQLITE_OK)
		rc = api->xColumnSize(fts, col, &n_col);
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	/* a quarter of the window before the match, as excerpts do; never past the end */
	w.start = first > n / 4 ? first - n / 4 : 0;
	if (w.start + n > n_col)
		w.start = n_col > n ? n_col - n : 0;
	w.end = w.start + n;
	for (int i = 0; i < n_inst; i++) {
		int phrase, c, off, size;

		if (api->xInst(fts, i, &phrase, &c, &off) != SQLITE_OK || c != col)
			continue;
		size = api->xPhraseSize(fts, phrase);
		for (int t = off; t < off + size && t < w.end; t++)
			if (t >= w.start)
				w.mark[t - w.start] = i + 1;
	}
	/*
	 * The tokenizer folds its whole input before it hands out a token, so
	 * the column goes to it in pieces cut at white space (piece_end()),
	 * growing, until the window is passed.
	 */
	rc = api->xColumnText(fts, col, &text, &len);
	w.text = text;
	w.len = len;
	for (int piece = first_piece; rc == SQLITE_OK && text != NULL && w.base < len &&
	    !w.passed;
	    piece = piece < INT_MAX / 4 ? piece * 4 : INT_MAX) {
		int cut = piece_end(text, len, w.base, piece);

		rc = api->xTokenize(fts, text + w.base, cut - w.base, &w, window_token);
		w.base = cut;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	if (w.byte_start < 0) {		/* an empty column */
		sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
		return;
	}
	/*
	 * As snippet(): from the column's first byte when the window starts
	 * it, to its last when it ends it.  Offsets are the tokenizer's, kept
	 * in order and inside the text here whatever it answered.
	 */
	if (w.start > 0)
		mb_buf_adds(&out, "\xe2\x80\xa6");
	else
		w.byte_start = 0;
	if (w.end >= n_col || w.byte_end > len)
		w.byte_end = len;
	at = w.byte_start;
	for (int i = 0; i < w.n_spans; i++) {
		int from = w.spans[i][0] > at ? w.spans[i][0] : at;
		int to = w.spans[i][1] < w.byte_end ? w.spans[i][1] : w.byte_end;

		if (to <= from)
			continue;
		mb_buf_add(&out, text + at, (size_t)(from - at));
		mb_buf_adds(&out, "**");
		mb_buf_add(&out, text + from, (size_t)(to - from));
		mb_buf_adds(&out, "**");
		at = to;
	}
	if (w.byte_end > at)
		mb_buf_add(&out, text + at, (size_t)(w.byte_end - at));
	if (w.end < n_col)
		mb_buf_adds(&out, "\xe2\x80\xa6");
	sqlite3_result_text(ctx, out.data, (int)out.len, SQLITE_TRANSIENT);
	mb_buf_release(&out);
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
		{ "mb_snippet", snippet_first },
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
