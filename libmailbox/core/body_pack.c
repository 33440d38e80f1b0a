/*
 * Packed bodies (docs/index.md, "Packed bodies"): messages.body holds a
 * message's normalised text either as TEXT or, when that is smaller by
 * enough to matter, as a zstd frame (a BLOB).  Bodies were two fifths of an
 * index and compress about 2:1 at zstd's fastest level, at about 11 us a
 * message to pack and 2 to unpack (docs/benchmarks.md).
 *
 *	mb_body(body)
 *		the text of a messages.body value: TEXT is itself, a BLOB is
 *		unpacked, NULL stays NULL.  Every reader of messages.body goes
 *		through it, FTS5 included (through the view messages_fts_content,
 *		migration 0016), so a damaged frame is an error, never text.
 *	mb_body_pack(text)
 *		the value to store for text: the frame when packing pays, else
 *		text itself (migration 0016 packs the rows of an older index).
 *
 * The writer packs in C (idx_body_pack(), one compression context kept in
 * the index handle); the SQL functions keep their contexts in the
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
 * A body shorter than this stays TEXT: a frame's header and checksum cost
 * about 13 bytes, and a short text hardly compresses.  A packed body must
 * also save an eighth of the text, or the text is kept.
 */
#define BODY_PACK_MIN		128
#define BODY_PACK_LEVEL		1	/* zstd's fastest: 2.0:1 on mail, 11 us a message */
#define BODY_UNPACK_MAX		(64u << 20)	/* far above any body syncd stores (1 MiB cap) */

/* The contexts of one connection's SQL functions. */
struct body_codec {
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
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, BODY_PACK_LEVEL);
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
	if (len < BODY_PACK_MIN)
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

bool
idx_body_pack(struct mb_index *idx, const char *text, size_t len, void **packed_r,
    size_t *packed_len_r)
{
	if (idx->body_pack == NULL)
		idx->body_pack = pack_context_new();
	return pack_with(idx->body_pack, text, len, packed_r, packed_len_r);
}

void
idx_body_pack_free(struct mb_index *idx)
{
	ZSTD_freeCCtx(idx->body_pack);
	idx->body_pack = NULL;
}

/*
 * The text of frame (n bytes) into *text_r (owned by the caller: free();
 * NUL-terminated) and *len_r; -1 when it is not a whole, intact frame of at
 * most BODY_UNPACK_MAX bytes.
 */
static int
unpack_with(ZSTD_DCtx *d, const void *frame, size_t n, char **text_r, size_t *len_r)
{
	unsigned long long size = ZSTD_getFrameContentSize(frame, n);
	size_t got;
	char *text;

	*text_r = NULL;
	if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
	    size > BODY_UNPACK_MAX)
		return -1;
	text = mb_xmalloc((size_t)size + 1);
	got = ZSTD_decompressDCtx(d, text, (size_t)size, frame, n);
	if (ZSTD_isError(got) || got != size || memchr(text, '\0', got) != NULL) {
		free(text);
		return -1;
	}
	text[got] = '\0';
	*text_r = text;
	*len_r = got;
	return 0;
}

/* mb_body(body) */
static void
body_text(sqlite3_context *ctx, int n_val, sqlite3_value **val)
{
	struct body_codec *codec = sqlite3_user_data(ctx);
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
	if (unpack_with(codec->unpack, sqlite3_value_blob(val[0]),
	    (size_t)sqlite3_value_bytes(val[0]), &text, &len) == -1) {
		sqlite3_result_error(ctx, "mb_body: a stored body is damaged "
		    "(not a whole zstd frame of text): run syncd --rebuild", -1);
		return;
	}
	sqlite3_result_text64(ctx, text, len, free, SQLITE_UTF8);
}

/* mb_body_pack(text) */
static void
body_pack(sqlite3_context *ctx, int n_val, sqlite3_value **val)
{
	struct body_codec *codec = sqlite3_user_data(ctx);
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
body_codec_free(void *p)
{
	struct body_codec *codec = p;

	ZSTD_freeCCtx(codec->pack);
	ZSTD_freeDCtx(codec->unpack);
	free(codec);
}

int
mb_body_register(sqlite3 *db, struct mb_err *err)
{
	const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
	struct body_codec *codec = mb_xcalloc(1, sizeof(*codec));
	int rc;

	/* mb_body owns the contexts: the connection frees them once, with it */
	rc = sqlite3_create_function_v2(db, "mb_body", 1, flags, codec, body_text, NULL, NULL,
	    body_codec_free);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function_v2(db, "mb_body_pack", 1, flags, codec, body_pack,
		    NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return mb_err_set(err, MB_E_INTERNAL, "index: registering mb_body: %s",
		    sqlite3_errstr(rc));
	return 0;
}
