/*
 * Packed text (docs/index.md, "Packed text"): messages.body (a message's
 * normalised text) and messages.att_text (its attachments' text, the copy
 * FTS5 indexes) hold either TEXT or, when that is smaller by enough to
 * matter, a zstd frame of it (a BLOB).  Bodies were two fifths of an index
 * and compress about 2:1 at zstd's fastest level, at about 11 us a message
 * to pack and 2 to unpack (docs/benchmarks.md, "Packed bodies").
 *
 *	mb_text(value)
 *		the text of a stored value: TEXT is itself, a BLOB is unpacked,
 *		NULL stays NULL.  Every reader of the two columns goes through
 *		it, FTS5 included (through the view messages_fts_content,
 *		migration 0016), so a damaged frame is an error, never text.
 *	mb_text_pack(text)
 *		the value to store for text: the frame when packing pays, else
 *		text itself (the writer's stage and attachment join, and
 *		migration 0016 for the rows of an older index).
 *
 * The writer packs in SQL (the body as it is staged, the attachments' text
 * as it is joined).  The functions keep their zstd contexts in the
 * connection's function data, used by one thread at a time, as the
 * connection is.  Both are registered DETERMINISTIC and INNOCUOUS: they are
 * called from a view and from triggers, and depend on their argument alone.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <zstd.h>

#include "mailbox/err.h"
#include "mailbox/util.h"

#include "index-private.h"

/*
 * A text shorter than this stays TEXT: a frame's header and checksum cost
 * about 13 bytes, and a short text hardly compresses.  A packed text must
 * also save an eighth, or the text is kept.
 */
#define TEXT_PACK_MIN		128
#define TEXT_PACK_LEVEL		1	/* zstd's fastest: 2.0:1 on mail, 11 us a message */

_Thread_local uint64_t idx_text_unpacked;

/* The contexts of one connection's SQL functions. */
struct text_codec {
	ZSTD_CCtx	*pack;		/* owned; NULL until first used */
	ZSTD_DCtx	*unpack;	/* owned; NULL until first used */
};

static ZSTD_CCtx *
pack_context_new(void)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();

	if (c == NULL)
		abort();	/* out of memory, as mb_xmalloc() */
	/* the checksum: a damaged frame is refused instead of served as text */
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, TEXT_PACK_LEVEL);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	return c;
}

/*
 * Pack text with c: true and *packed_r (owned by the caller: free()) when
 * the frame saves at least an eighth; false, *packed_r NULL, when the text
 * should be stored as it is.
 */
static bool
pack_with(ZSTD_CCtx *c, const char *text, size_t len, void **packed_r, size_t *packed_len_r)
{
	size_t cap, n;
	void *out;

	*packed_r = NULL;
	*packed_len_r = 0;
	if (len < TEXT_PACK_MIN)
		return false;
	cap = ZSTD_compressBound(len);
	out = mb_xmalloc(cap);
	n = ZSTD_compress2(c, out, cap, text, len);
	if (ZSTD_isError(n) || n > len - len / 8) {
		free(out);
		return false;
	}
	*packed_r = out;
	*packed_len_r = n;
	return true;
}


/*
 * The text of frame (n bytes) into *text_r (owned by the caller: free();
 * NUL-terminated) and *len_r; -1 when it is not a whole, intact frame of at
 * most max bytes.  The bytes come back as they went in (a NUL included).
 */
static int
unpack_with(ZSTD_DCtx *d, const void *frame, size_t n, unsigned long long max, char **text_r,
    size_t *len_r)
{
	unsigned long long size = ZSTD_getFrameContentSize(frame, n);
	size_t got;
	char *text;

	*text_r = NULL;
	if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
	    size > max)
		return -1;
	text = mb_xmalloc((size_t)size + 1);
	idx_text_unpacked++;
	got = ZSTD_decompressDCtx(d, text, (size_t)size, frame, n);
	if (ZSTD_isError(got) || got != size) {
		free(text);
		return -1;
	}
	text[got] = '\0';
	*text_r = text;
	*len_r = got;
	return 0;
}

/* mb_text(value) */
static void
unpack_sql(sqlite3_context *ctx, int n_val, sqlite3_value **val)
{
	struct text_codec *codec = sqlite3_user_data(ctx);
	char *text;
	size_t len;

	(void)n_val;
	if (sqlite3_value_type(val[0]) != SQLITE_BLOB) {
		sqlite3_result_value(ctx, val[0]);
		return;
	}
	if (codec->unpack == NULL && (codec->unpack = ZSTD_createDCtx()) == NULL) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	/* a frame of anything larger was never a value this database could hold */
	if (unpack_with(codec->unpack, sqlite3_value_blob(val[0]),
	    (size_t)sqlite3_value_bytes(val[0]), (unsigned long long)sqlite3_limit(
	    sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1), &text, &len) == -1) {
		sqlite3_result_error(ctx, "mb_text: a stored text is damaged "
		    "(not a whole zstd frame of text): run syncd --rebuild", -1);
		return;
	}
	sqlite3_result_text64(ctx, text, len, free, SQLITE_UTF8);
}

/* mb_text_pack(text) */
static void
pack_sql(sqlite3_context *ctx, int n_val, sqlite3_value **val)
{
	struct text_codec *codec = sqlite3_user_data(ctx);
	const char *text;
	void *packed;
	size_t len;

	(void)n_val;
	if (sqlite3_value_type(val[0]) != SQLITE_TEXT) {
		sqlite3_result_value(ctx, val[0]);	/* packed already, or NULL */
		return;
	}
	text = (const char *)sqlite3_value_text(val[0]);
	len = (size_t)sqlite3_value_bytes(val[0]);
	if (codec->pack == NULL)
		codec->pack = pack_context_new();
	if (text != NULL && pack_with(codec->pack, text, len, &packed, &len))
		sqlite3_result_blob64(ctx, packed, len, free);
	else
		sqlite3_result_value(ctx, val[0]);
}

static void
text_codec_free(void *p)
{
	struct text_codec *codec = p;

	ZSTD_freeCCtx(codec->pack);
	ZSTD_freeDCtx(codec->unpack);
	free(codec);
}

int
mb_text_register(sqlite3 *db, struct mb_err *err)
{
	const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
	struct text_codec *codec = mb_xcalloc(1, sizeof(*codec));
	int rc;

	/* mb_text owns the contexts: the connection frees them once, with it */
	rc = sqlite3_create_function_v2(db, "mb_text", 1, flags, codec, unpack_sql, NULL, NULL,
	    text_codec_free);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function_v2(db, "mb_text_pack", 1, flags, codec, pack_sql,
		    NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "index: registering mb_text: %s",
		    sqlite3_errstr(rc));
	return 0;
}
