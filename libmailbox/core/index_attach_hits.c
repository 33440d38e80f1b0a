/*
 * Which attachment a search hit matched, and a snippet of its text
 * (idx_attachment_hits; docs/attachments.md, "Snippets").  The cost per hit
 * is bounded whatever the attachments' length:
 *
 *  1. Where: FTS5's position lists say whether the match is in the text
 *     (att_text) or the file names (att_names), and the token offset of the
 *     first match in the text (mb_hit_offset, fts_hits.c: no tokenizing).
 *  2. Which bytes: att_text is the attachments' texts in MIME order joined
 *     by a blank line, so the byte lengths of the texts (sqlite3_blob_bytes:
 *     nothing read) place every attachment in it, and the token offset, as a
 *     fraction of the column's tokens, gives an estimate of the byte offset.
 *  3. A window of WINDOW_BYTES either side of the estimate is read (the blob
 *     API reads those bytes alone) and searched for the query's words
 *     literally (mb_query_find, as the body excerpts do); the first found is
 *     the excerpt, words marked, and its attachment is the one named.
 *  4. When no word is there literally (a stemmed or accent-folded form, or
 *     an estimate far off in text of very uneven density), MARK_BYTES either
 *     side of the estimate go through the index's own tokenizer, which marks
 *     stemmed and folded forms too (mb_fts_mark); if that marks nothing
 *     either, the hit names the attachment at the estimate and shows its text
 *     there unmarked.
 *
 * A match in the file names only is named by a literal or tokenized match
 * of a file name.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "search-private.h"

#define WINDOW_BYTES	(16 * 1024)	/* searched literally, either side of the estimate */
#define MARK_BYTES	512		/* tokenized, either side, when nothing is literal */
#define EXCERPT_CHARS	160		/* the body excerpts' size */
#define MAX_TEXTS	64		/* attachments with text placed per hit */

#define WHERE_COLS \
	"SELECT mb_hit_offset(messages_fts, 5), mb_column_tokens(messages_fts, 5)," \
	" mb_hit_offset(messages_fts, 4), rowid FROM messages_fts WHERE messages_fts MATCH ?1 "
/* One hit's: a seek in each word's doclist. */
static const char where_sql[] = WHERE_COLS "AND rowid = ?2";
/*
 * Every hit's (?4 to ?53: the ids, ?2 and ?3 the lowest and highest), in
 * one read (idx_bind_page_ids), for a prefix: a statement a hit merged its
 * words' doclists once for each hit with attachments (`spam*
 * has:attachment`, 20 such hits, 86 ms at 100,000 messages against 7.6
 * for `spam*`).
 */
static const char where_ids_sql[] = WHERE_COLS "AND rowid >= ?2 AND rowid <= ?3 AND +rowid IN ("
	"?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
	"?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, "
	"?39, ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51, ?52, ?53)";
static_assert(IDX_PAGE_IDS_MAX == 50, "where_ids_sql lists IDX_PAGE_IDS_MAX ids");
/* In the order IDX_STAGE_ATT_COLS and mb_attachment_set_text join them into att_text. */
static const char texts_sql[] =
	"SELECT id, filename FROM attachments WHERE message_id = ?1"
	" AND extracted_text IS NOT NULL ORDER BY ordinal";
static const char names_sql[] =
	"SELECT id, filename FROM attachments WHERE message_id = ?1"
	" AND filename IS NOT NULL ORDER BY ordinal";

/* One attachment's text, placed in att_text. */
struct placed {
	int64_t	 id;
	char	*name;		/* owned; NULL: none */
	size_t	 start;		/* byte offset in att_text */
	size_t	 len;		/* bytes */
};

struct hit_texts {
	struct placed	 v[MAX_TEXTS];
	size_t		 n;
	sqlite3_blob	*blob;	/* on attachments.extracted_text */
};

static void
texts_release(struct hit_texts *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	sqlite3_blob_close(t->blob);
	memset(t, 0, sizeof(*t));
}

/* Place the texts of message msg_id's attachments (their lengths only are read). */
static int
texts_place(struct mb_index *idx, int64_t msg_id, struct hit_texts *t, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, texts_sql, err);
	size_t at = 0;
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, msg_id);
	while (t->n < MAX_TEXTS && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct placed *p = &t->v[t->n];
		int64_t id = sqlite3_column_int64(st, 0);

		rc = t->blob == NULL ? sqlite3_blob_open(idx->db, "main", "attachments",
		    "extracted_text", id, 0, &t->blob) : sqlite3_blob_reopen(t->blob, id);
		if (rc != SQLITE_OK)
			break;
		p->id = id;
		p->name = idx_col_text(st, 1, NULL);
		p->start = at;
		p->len = (size_t)sqlite3_blob_bytes(t->blob);
		at += p->len + 2;	/* the blank line between two texts */
		t->n++;
	}
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE && rc != SQLITE_OK)
		return idx_sqlerr(idx, rc, "search: attachment texts", err);
	return 0;
}

/*
 * Read bytes [from, to) of text i into b, cut to whole UTF-8 characters;
 * *from_r: the offset of b's first byte in that text.
 */
static int
texts_read(struct hit_texts *t, size_t i, size_t from, size_t to, struct mb_buf *b,
    size_t *from_r)
{
	char buf[2 * WINDOW_BYTES];
	size_t n = to - from, s = 0;

	if (to > t->v[i].len || from >= to || n > sizeof(buf) ||
	    sqlite3_blob_reopen(t->blob, t->v[i].id) != SQLITE_OK ||
	    sqlite3_blob_read(t->blob, buf, (int)n, (int)from) != SQLITE_OK)
		return -1;
	while (s < n && ((unsigned char)buf[s] & 0xc0) == 0x80)
		s++;	/* the tail of a character cut by from */
	if (to < t->v[i].len) {	/* the head of a character cut by to */
		size_t e = n;

		while (e > s && ((unsigned char)buf[e - 1] & 0xc0) == 0x80)
			e--;
		if (e > s && ((unsigned char)buf[e - 1] & 0x80) != 0)
			e--;
		n = e;
	}
	mb_buf_reset(b);
	*from_r = from + s;
	return mb_buf_add(b, buf + s, n - s);
}

#define ELLIPSIS	"\xe2\x80\xa6"

/*
 * The snippet of piece, which starts at byte from of a text of text_len
 * bytes: the literal excerpt around its first word of q, or with
 * by_tokenizer the whole piece marked by the index's tokenizer (unmarked
 * when even that finds nothing); "…" wherever the text goes on.  NULL when
 * a literal excerpt finds no word.  The caller frees it.
 */
static char *
excerpt(struct mb_index *idx, const struct mb_query *q, const struct mb_buf *piece,
    size_t from, size_t text_len, bool by_tokenizer)
{
	struct mb_buf ex = MB_BUF_INIT(8 * 1024), out = MB_BUF_INIT(8 * 1024);
	bool cut_before = from > 0, cut_after = from + piece->len < text_len;
	size_t a = 0, b = piece->len;

	if (by_tokenizer) {
		/* the excerpts' size in bytes of Latin text; else the middle, unmarked */
		if (mb_fts_mark(idx->db, q, piece->data, piece->len, EXCERPT_CHARS, &ex, &a,
		    &b) == -1) {
			mb_buf_reset(&ex);
			a = piece->len > EXCERPT_CHARS ? (piece->len - EXCERPT_CHARS) / 2 : 0;
			b = a + EXCERPT_CHARS < piece->len ? a + EXCERPT_CHARS : piece->len;
			while (a < b && ((unsigned char)piece->data[a] & 0xc0) == 0x80)
				a++;
			while (b < piece->len && ((unsigned char)piece->data[b] & 0xc0) == 0x80)
				b++;
			(void)mb_buf_add(&ex, piece->data + a, b - a);
		}
		cut_before = from + a > 0;
		cut_after = from + b < text_len;
	} else if (mb_query_excerpt(q, piece->data, piece->len, EXCERPT_CHARS, &ex) == -1) {
		mb_buf_release(&ex);
		return NULL;
	}
	if (cut_before && strncmp(ex.data, ELLIPSIS, strlen(ELLIPSIS)) != 0)
		(void)mb_buf_adds(&out, ELLIPSIS);
	(void)mb_buf_add(&out, ex.data, ex.len);
	if (cut_after && (ex.len < strlen(ELLIPSIS) ||
	    strcmp(ex.data + ex.len - strlen(ELLIPSIS), ELLIPSIS) != 0))
		(void)mb_buf_adds(&out, ELLIPSIS);
	mb_buf_release(&ex);
	return mb_buf_detach(&out, NULL);
}

/* The hit's attachment and snippet from the text column, its first match at token tok of ntok. */
static int
by_text(struct mb_index *idx, const struct mb_query *q, int64_t tok, int64_t ntok,
    struct mb_search_hit *h, struct mb_err *err)
{
	struct hit_texts t = { .n = 0 };
	struct mb_buf piece = MB_BUF_INIT(2 * WINDOW_BYTES);
	size_t total, est, lo, hi, from, at, near = 0;

	if (texts_place(idx, h->id, &t, err) == -1) {
		texts_release(&t);
		return -1;
	}
	if (t.n == 0)
		goto out;
	total = t.v[t.n - 1].start + t.v[t.n - 1].len;
	est = ntok > 0 && tok < ntok ? (size_t)((double)tok / (double)ntok * (double)total) : 0;
	lo = est > WINDOW_BYTES ? est - WINDOW_BYTES : 0;
	hi = est + WINDOW_BYTES < total ? est + WINDOW_BYTES : total;
	/* literally, in each text the window overlaps, in order */
	for (size_t i = 0; i < t.n && h->att_id == 0; i++) {
		const struct placed *p = &t.v[i];
		size_t a = lo > p->start ? lo - p->start : 0;
		size_t b = hi < p->start + p->len ? hi - p->start : p->len;

		if (est >= p->start)
			near = i;
		if (a >= b || texts_read(&t, i, a, b, &piece, &from) == -1 ||
		    mb_query_find(q, piece.data, piece.len, &at) == -1)
			continue;
		h->att_snippet = excerpt(idx, q, &piece, from, p->len, false);
		if (h->att_snippet == NULL)
			continue;
		h->att_id = p->id;
		h->att_name = p->name != NULL ? mb_xstrdup(p->name) : NULL;
	}
	if (h->att_id == 0) {	/* the tokenizer, near the estimate */
		const struct placed *p = &t.v[near];
		size_t e = est > p->start ? est - p->start : 0, a, b;

		e = e < p->len ? e : p->len;
		a = e > MARK_BYTES ? e - MARK_BYTES : 0;
		b = e + MARK_BYTES < p->len ? e + MARK_BYTES : p->len;
		if (a < b && texts_read(&t, near, a, b, &piece, &from) == 0)
			h->att_snippet = excerpt(idx, q, &piece, from, p->len, true);
		h->att_id = p->id;
		h->att_name = p->name != NULL ? mb_xstrdup(p->name) : NULL;
	}
out:
	mb_buf_release(&piece);
	texts_release(&t);
	return 0;
}

/* The hit's attachment from the file names: the first a word of q names. */
static int
by_name(struct mb_index *idx, const struct mb_query *q, struct mb_search_hit *h,
    struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, names_sql, err);
	int64_t only = 0, n = 0;
	char *only_name = NULL;
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, h->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1), at, to;
		struct mb_buf mark = MB_BUF_INIT(4096);
		bool hit;

		if (name == NULL)
			continue;
		hit = mb_query_find(q, name, len, &at) == 0 ||
		    mb_fts_mark(idx->db, q, name, len, len, &mark, &at, &to) == 0;
		mb_buf_release(&mark);
		if (n++ == 0) {
			only = sqlite3_column_int64(st, 0);
			only_name = mb_xstrdup(name);
		}
		if (hit) {
			h->att_id = sqlite3_column_int64(st, 0);
			h->att_name = mb_xstrdup(name);
			break;
		}
	}
	idx_stmt_done(st);
	if (h->att_id == 0 && n == 1) {	/* one name, and the names matched: that one */
		h->att_id = only;
		h->att_name = only_name;
		only_name = NULL;
	}
	free(only_name);
	h->att_by_name = h->att_id != 0;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "search: attachment names", err);
	return 0;
}

_Thread_local uint64_t idx_attachment_reads;

/* Where a hit matched in its attachments. */
struct hit_where {
	bool	in_text, in_names;
	int64_t	tok, ntok;	/* the first match's token in the text, of the text's tokens */
};

/* A where_sql or where_ids_sql row into w[i], where ids[i] (of n) is its id. */
static void
where_take(sqlite3_stmt *st, const int64_t *ids, size_t n, struct hit_where *w)
{
	int64_t id = sqlite3_column_int64(st, 3);

	for (size_t i = 0; i < n; i++)
		if (ids[i] == id) {
			w[i].in_text = sqlite3_column_type(st, 0) != SQLITE_NULL;
			w[i].tok = sqlite3_column_int64(st, 0);
			w[i].ntok = sqlite3_column_int64(st, 1);
			w[i].in_names = sqlite3_column_type(st, 2) != SQLITE_NULL;
		}
}

/*
 * Where each of the n hits with attachments (ids, at most IDX_PAGE_IDS_MAX)
 * matched, into w (n): one read of them all for a prefix, else a seek for
 * each (for a prefix too when words, its words, are given: FTS5 merges a
 * prefix's doclists whole for the one read, and seeks a word's).  Not the snippets' choice (index_search.c): that weighs the page's
 * count of matches, which with a filter is what passed it, capped, not the
 * word's rows, and a walk over a frequent word's span costs milliseconds
 * where a seek a hit costs tens of microseconds (`the has:attachment`, a
 * fifth of 100,000 messages with attachments: 10 ms a search with seeks,
 * 17 with the walk).
 */
static int
where_of_hits(struct mb_index *idx, const struct mb_query *q, const char *words,
    const int64_t *ids, size_t n, struct hit_where *w, struct mb_err *err)
{
	bool each = words != NULL || idx_match_plain(q->match);
	sqlite3_stmt *st;
	int rc = SQLITE_DONE;

	if (n == 0)
		return 0;
	if ((st = idx_stmt_sql(idx, each ? where_sql : where_ids_sql, err)) == NULL)
		return -1;
	for (size_t i = 0; i < (each ? n : 1) && (rc == SQLITE_DONE || rc == SQLITE_ROW); i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, words != NULL ? words : q->match, -1, SQLITE_STATIC);
		if (each)
			sqlite3_bind_int64(st, 2, ids[i]);
		else
			idx_bind_page_ids(st, 2, 4, ids, n);
		idx_attachment_reads++;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			where_take(st, ids, n, w);
	}
	idx_stmt_done(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlerr(idx, rc, "search: attachment matches", err);
}

int
idx_attachment_hits(struct mb_index *idx, const struct mb_query *q, const char *words,
    struct mb_search_hit *hits, size_t n, struct mb_err *err)
{
	struct mb_search_hit *with[IDX_PAGE_IDS_MAX];
	int64_t ids[IDX_PAGE_IDS_MAX];
	struct hit_where w[IDX_PAGE_IDS_MAX] = { 0 };
	size_t n_with = 0;

	/* a page holds at most MB_SEARCH_MAX_LIMIT hits, no more than IDX_PAGE_IDS_MAX */
	for (size_t i = 0; i < n && n_with < IDX_PAGE_IDS_MAX; i++)
		if (hits[i].attachment_count > 0) {
			with[n_with] = &hits[i];
			ids[n_with++] = hits[i].id;
		}
	if (where_of_hits(idx, q, words, ids, n_with, w, err) == -1)
		return -1;
	for (size_t i = 0; i < n_with; i++) {
		struct mb_search_hit *h = with[i];

		if (w[i].in_text && by_text(idx, q, w[i].tok, w[i].ntok, h, err) == -1)
			return -1;
		if (h->att_id == 0 && w[i].in_names && by_name(idx, q, h, err) == -1)
			return -1;
	}
	return 0;
}
