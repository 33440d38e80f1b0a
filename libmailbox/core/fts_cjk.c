/*
 * mb_cjk: an FTS5 tokenizer that makes Chinese, Japanese and Korean text
 * searchable without a second index.
 *
 * unicode61 treats a run of CJK characters as one token ("会議は月曜日です" is
 * one word), so no query short of the whole run finds it.  mb_cjk wraps a
 * parent tokenizer chain the way porter wraps unicode61:
 *
 *	tokenize='mb_cjk porter unicode61 remove_diacritics 2'
 *
 * It splits the text into CJK runs and the rest.  The rest goes to the parent
 * (offsets shifted back into the whole text); each CJK run becomes overlapping
 * bigrams, 会議 議は は月 ..., or the single character when the run is one
 * character long.  Every token carries the byte offsets of its characters in
 * the original text, so snippet() and highlight() mark the right bytes.
 * Queries go through the same code: the bareword 会議 is the bigram 会議, and
 * 会議は is the phrase "会議 議は".  docs/index.md has the costs and limits.
 *
 * Two more rules apply to both sides before anything else (docs/normaliser.md
 * "Unicode forms" and "Version-like identifiers"): the text is folded by
 * mb_utf8_fold() (NFKC: ﬁ is fi, ＡＢＣ is ABC, NFD is NFC), with every token's
 * offsets mapped back to the unfolded bytes; and in indexed text a token that
 * mixes ASCII letters and digits (v4, 1rc1, 10am) also carries its first run
 * of digits at the same position, so the query 4.2.1 finds v4.2.1.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/err.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#include "index-private.h"

/* mb_index_snippet_bytes(): relaxed, since it is a statistic (mcpd reads on several threads) */
static _Atomic uint64_t aux_bytes;

struct cjk_tok {
	fts5_tokenizer	 parent;	/* the parent's methods */
	Fts5Tokenizer	*parent_tok;	/* the parent instance */
};

/*
 * Decode one UTF-8 character at p (n bytes available).  Returns its length
 * (1 for an invalid byte, which then counts as U+FFFD: not CJK) and sets
 * *cp_r.
 */
static int
utf8_next(const unsigned char *p, int n, uint32_t *cp_r)
{
	size_t len = mb_utf8_decode((const char *)p, (size_t)n, cp_r);

	if (len == 0) {
		*cp_r = 0xfffd;
		return 1;
	}
	return (int)len;
}

/*
 * Where tokens go: the caller's callback, with offsets mapped from the
 * folded text back to the caller's (map: see mb_utf8_fold; NULL when the
 * text was not folded).
 */
struct out_ctx {
	void		*ctx;
	int		 (*token)(void *, int, const char *, int, int, int);
	const uint32_t	*map;
	bool		 document;	/* indexing text, not tokenizing a query */
};

static int
out_token(struct out_ctx *o, int tflags, const char *tok, int ntok, int start, int end)
{
	if (o->map != NULL && end > start) {
		int s = (int)o->map[2 * start], e = (int)o->map[2 * (end - 1) + 1];

		start = s;
		end = e;
	}
	return o->token(o->ctx, tflags, tok, ntok, start, end);
}

static int
out_cb(void *p, int tflags, const char *tok, int ntok, int start, int end)
{
	return out_token(p, tflags, tok, ntok, start, end);
}

/*
 * The first run of ASCII digits of a token that also has a letter, or
 * NULL (*n_r: its length).  "v4" gives "4", "1rc1" "1", "x86" "86".
 */
static const char *
digit_run(const char *tok, int ntok, int *n_r)
{
	const char *d = NULL;
	bool letter = false;
	int n = 0;

	for (int i = 0; i < ntok; i++) {
		bool digit = tok[i] >= '0' && tok[i] <= '9';

		if (!digit)
			letter = true;
		else if (d == NULL) {
			d = tok + i;
			for (n = 0; i + n < ntok && tok[i + n] >= '0' && tok[i + n] <= '9'; n++)
				;
		}
	}
	*n_r = n;
	return letter ? d : NULL;
}

/* Passes the parent's tokens on, with offsets moved from the piece to the text. */
struct shift_ctx {
	struct out_ctx	*out;
	int		 base;
};

static int
shift_token(void *p, int tflags, const char *tok, int ntok, int start, int end)
{
	struct shift_ctx *s = p;
	const char *d;
	int rc, nd;

	rc = out_token(s->out, tflags, tok, ntok, start + s->base, end + s->base);
	if (rc != SQLITE_OK || !s->out->document || (tflags & FTS5_TOKEN_COLOCATED) ||
	    (d = digit_run(tok, ntok, &nd)) == NULL)
		return rc;
	return out_token(s->out, FTS5_TOKEN_COLOCATED, d, nd, start + s->base, end + s->base);
}

static int
cjk_create(void *api_p, const char **argv, int argc, Fts5Tokenizer **out)
{
	fts5_api *api = api_p;
	struct cjk_tok *t;
	void *parent_data = NULL;
	const char *parent = argc > 0 ? argv[0] : "unicode61";
	int rc;

	t = sqlite3_malloc(sizeof(*t));
	if (t == NULL)
		return SQLITE_NOMEM;
	memset(t, 0, sizeof(*t));
	rc = api->xFindTokenizer(api, parent, &parent_data, &t->parent);
	if (rc == SQLITE_OK)
		rc = t->parent.xCreate(parent_data, argc > 0 ? argv + 1 : NULL,
		    argc > 0 ? argc - 1 : 0, &t->parent_tok);
	if (rc != SQLITE_OK) {
		sqlite3_free(t);
		return rc;
	}
	*out = (Fts5Tokenizer *)t;
	return SQLITE_OK;
}

static void
cjk_delete(Fts5Tokenizer *p)
{
	struct cjk_tok *t = (struct cjk_tok *)p;

	if (t == NULL)
		return;
	if (t->parent_tok != NULL)
		t->parent.xDelete(t->parent_tok);
	sqlite3_free(t);
}

/* Bigrams of the CJK run [start, end) of text (at least one character). */
static int
emit_run(const char *text, int start, int end, void *ctx,
    int (*token)(void *, int, const char *, int, int, int))
{
	const unsigned char *u = (const unsigned char *)text;
	uint32_t cp;
	int a = start, b, c, rc;

	b = a + utf8_next(u + a, end - a, &cp);
	if (b >= end)	/* a run of one character: the unigram */
		return token(ctx, 0, text + a, b - a, a, b);
	while (b < end) {
		c = b + utf8_next(u + b, end - b, &cp);
		rc = token(ctx, 0, text + a, c - a, a, c);
		if (rc != SQLITE_OK)
			return rc;
		a = b;
		b = c;
	}
	return SQLITE_OK;
}

/* CJK runs to bigrams, the rest to the parent; tokens to out. */
static int
cjk_split(struct cjk_tok *t, struct out_ctx *out, int flags, const char *text, int ntext)
{
	const unsigned char *u = (const unsigned char *)text;
	struct shift_ctx shift = { .out = out };
	int i = 0, seg = 0, rc = SQLITE_OK;

	/*
	 * seg is where the current segment began; a segment ends where CJK-ness
	 * changes.  The non-CJK segments go to the parent whole, so its word
	 * boundaries (and porter's stemming) are exactly what they would be
	 * without us.
	 */
	while (i < ntext && rc == SQLITE_OK) {
		uint32_t cp;
		int len;
		bool cjk;

		if (u[i] < 0x80) {	/* never CJK: skip the run */
			i += (int)mb_utf8_ascii_run(text + i, (size_t)(ntext - i));
			continue;
		}
		len = utf8_next(u + i, ntext - i, &cp);
		cjk = mb_utf8_is_cjk(cp);
		if (!cjk) {
			i += len;
			continue;
		}
		if (i > seg) {
			shift.base = seg;
			rc = t->parent.xTokenize(t->parent_tok, &shift, flags, text + seg,
			    i - seg, shift_token);
			if (rc != SQLITE_OK)
				break;
		}
		seg = i;
		while (i < ntext && mb_utf8_is_cjk(cp)) {
			i += len;
			if (i < ntext)
				len = utf8_next(u + i, ntext - i, &cp);
		}
		rc = emit_run(text, seg, i, out, out_cb);
		seg = i;
	}
	if (rc == SQLITE_OK && ntext > seg) {
		shift.base = seg;
		rc = t->parent.xTokenize(t->parent_tok, &shift, flags, text + seg, ntext - seg,
		    shift_token);
	}
	return rc;
}

static int
cjk_tokenize(Fts5Tokenizer *p, void *ctx, int flags, const char *text, int ntext,
    int (*token)(void *, int, const char *, int, int, int))
{
	struct out_ctx out = { .ctx = ctx, .token = token,
	    .document = (flags & FTS5_TOKENIZE_DOCUMENT) != 0 };
	char *folded;
	size_t nfolded;
	uint32_t *map;
	int rc;

	if ((flags & FTS5_TOKENIZE_AUX) && ntext > 0)
		atomic_fetch_add_explicit(&aux_bytes, (uint64_t)ntext, memory_order_relaxed);
	/*
	 * A raw term (MB_FTS_RAW_TERM): one token, the index's word as it is.
	 * Porter's stem of a stem is not always itself (spambay: spambai), so
	 * a word read from the index could not be matched by its text.
	 */
	if ((flags & FTS5_TOKENIZE_QUERY) && ntext > 1 && text[0] == MB_FTS_RAW_TERM)
		return token(ctx, 0, text + 1, ntext - 1, 0, ntext);
	if (ntext <= 0 || !mb_utf8_fold(text, (size_t)ntext, &folded, &nfolded, &map))
		return cjk_split((struct cjk_tok *)p, &out, flags, text, ntext);
	if (nfolded > INT32_MAX) {
		free(folded);
		free(map);
		return SQLITE_TOOBIG;
	}
	out.map = map;
	rc = cjk_split((struct cjk_tok *)p, &out, flags, folded, (int)nfolded);
	free(folded);
	free(map);
	return rc;
}

int
mb_fts_raw_term(struct mb_buf *b, const char *term, size_t len)
{
	int rc = mb_buf_addc(b, '"') | mb_buf_addc(b, MB_FTS_RAW_TERM);

	for (size_t i = 0; rc == 0 && i < len; i++)
		rc = (term[i] == '"' ? mb_buf_addc(b, '"') : 0) | mb_buf_addc(b, term[i]);
	return rc == 0 && mb_buf_addc(b, '"') == 0 ? 0 : -1;
}

uint64_t
mb_index_snippet_bytes(void)
{
	return atomic_load_explicit(&aux_bytes, memory_order_relaxed);
}

fts5_api *
mb_fts5_api(sqlite3 *db)
{
	fts5_api *api = NULL;
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_pointer(st, 1, &api, "fts5_api_ptr", NULL);
	sqlite3_step(st);
	sqlite3_finalize(st);
	return api;
}

/* The tokens of one text, for mb_fts_single_token(). */
struct single {
	char	*first;		/* owned: the first token */
	int	 n;		/* tokens, colocated ones aside */
	bool	 colocated;
};

static int
single_token(void *ctx, int flags, const char *tok, int n, int start, int end)
{
	struct single *s = ctx;

	(void)start;
	(void)end;
	if (flags & FTS5_TOKEN_COLOCATED)
		s->colocated = true;
	else if (s->n++ == 0)
		s->first = mb_xstrndup(tok, (size_t)n);
	return SQLITE_OK;
}

char *
mb_fts_single_token(fts5_tokenizer *tk, Fts5Tokenizer *t, const char *text, int flags)
{
	struct single s = { 0 };
	int rc = tk->xTokenize(t, &s, flags, text, (int)strlen(text), single_token);

	if (rc == SQLITE_OK && s.n == 1 && !s.colocated)
		return s.first;
	free(s.first);
	return NULL;
}

int
mb_fts_tokenizer(sqlite3 *db, fts5_tokenizer *tk, Fts5Tokenizer **t)
{
	static const char *const args[] = { "porter", "unicode61", "remove_diacritics", "2" };
	fts5_api *api = mb_fts5_api(db);
	void *ud = NULL;

	*t = NULL;
	if (api == NULL || api->xFindTokenizer(api, "mb_cjk", &ud, tk) != SQLITE_OK ||
	    tk->xCreate(ud, (const char **)args, (int)MB_ARRAY_LEN(args), t) != SQLITE_OK)
		return -1;
	return 0;
}

int
mb_fts_cjk_register(sqlite3 *db, struct mb_err *err)
{
	static fts5_tokenizer methods = {
		.xCreate = cjk_create,
		.xDelete = cjk_delete,
		.xTokenize = cjk_tokenize,
	};
	fts5_api *api = mb_fts5_api(db);
	int rc;

	if (api == NULL || api->iVersion < 2)
		return mb_err_set(err, MB_E_INTERNAL, "index: this SQLite has no FTS5");
	rc = api->xCreateTokenizer(api, "mb_cjk", api, &methods, NULL);
	if (rc != SQLITE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "index: registering mb_cjk: %s",
		    sqlite3_errstr(rc));
	return 0;
}
