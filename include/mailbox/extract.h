/*
 * Attachment text extraction (libmailbox/sync/extract*.c): the bytes of an
 * attachment in, readable UTF-8 text or the reason there is none out.
 * Attachments are hostile input: only syncd's fetch workers call this, every
 * input and output is capped, and the formats parsed by large libraries (PDF,
 * OOXML, OpenDocument) run in a child process under RLIMIT_CPU and RLIMIT_AS.
 * docs/attachments.md says why each limit is what it is.  Part of
 * mailbox_sync: mcpd never links it.
 */
#ifndef MAILBOX_EXTRACT_H
#define MAILBOX_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>

#include "mailbox/buf.h"
#include "mailbox/err.h"
#include "mailbox/msg.h"

/* The families of types, as EXTRACT_TYPES names them. */
enum mb_extract_type {
	MB_EXTRACT_TEXT = 1 << 0,	/* "text": text/plain, text/csv, text/markdown, any text/ */
	MB_EXTRACT_HTML = 1 << 1,	/* "html": text/html, application/xhtml+xml */
	MB_EXTRACT_CALENDAR = 1 << 2,	/* "calendar": text/calendar, application/ics */
	MB_EXTRACT_PDF = 1 << 3,	/* "pdf": application/pdf */
	MB_EXTRACT_OFFICE = 1 << 4,	/* "office": DOCX, XLSX, PPTX, ODT, ODS, ODP */
};
#define MB_EXTRACT_ALL	0x1fu

/*
 * The limits of one extraction.  Every field is unsigned so a settings
 * table (mailbox/conf.h, MB_CONF_UINT) can fill it in place.
 */
struct mb_extract_limits {
	char		*types;		/* comma list of the names above, "off", or NULL: all */
	unsigned	 max_input;	/* bytes of one attachment; larger ones are refused */
	unsigned	 max_chars;	/* characters of text kept per attachment */
	unsigned	 cpu_seconds;	/* RLIMIT_CPU of the child */
	unsigned	 memory_mb;	/* RLIMIT_AS of the child, MiB */
	unsigned	 zip_max_mb;	/* total uncompressed MiB of a zip container */
	unsigned	 zip_max_ratio;	/* uncompressed / compressed, per entry and in total */
	unsigned	 zip_max_entries;
	unsigned	 max_depth;	/* XML element nesting followed */
};
#define MB_EXTRACT_LIMITS_DEFAULT { .types = NULL, .max_input = 20u << 20, \
	.max_chars = 200000, .cpu_seconds = 10, .memory_mb = 512, .zip_max_mb = 100, \
	.zip_max_ratio = 100, .zip_max_entries = 10000, .max_depth = 64 }

/* Text of all attachments of one message together, in bytes: the row must fit a frame. */
#define MB_EXTRACT_MSG_MAX	(2u << 20)

/*
 * Parse a types setting (see struct mb_extract_limits) into enum
 * mb_extract_type bits (0: off).  -1 with err (MB_E_CONFIG, naming the
 * word) on an unknown name.
 */
int	mb_extract_types_parse(const char *s, unsigned *types_r, struct mb_err *err);

/*
 * The outcome of one extraction: text (UTF-8, no NUL or control characters
 * but tab and newline) when status starts with "ok", else status says why
 * there is none, starting with one word: "skipped" (a type not extracted,
 * or extraction off), "refused" (over a limit), "encrypted", "empty" (the
 * document holds no text, e.g. a scanned PDF) or "failed" (unreadable,
 * crashed, out of time or memory).
 */
struct mb_extract_out {
	struct mb_buf	 text;
	char		 status[160];
};

/*
 * Extract one attachment's bytes (data, len; borrowed) of MIME type type
 * (lower case; NULL: application/octet-stream), filename (may be NULL: it
 * names the type when the MIME type is generic) and charset (a text
 * part's declared charset, may be NULL).  sandbox: run every format in a
 * child under the limits (false: only PDF and office documents, the others
 * are linear-time code the worker already runs on bodies).  Never fails:
 * out is always filled; the caller releases out->text.
 */
void	mb_extract(const struct mb_extract_limits *lim, const char *type, const char *filename,
	    const char *charset, const void *data, size_t len, bool sandbox,
	    struct mb_extract_out *out);

/*
 * Extract every attachment of msg that still holds its bytes, setting
 * a->text, a->text_len and a->text_status (all owned by msg).  data_dir
 * (may be NULL) keeps each outcome beside the blob, as
 * DATA_DIR/blobs/<sha256>.txt, so the same bytes are extracted once;
 * a->sha256 is filled.
 * Text beyond MB_EXTRACT_MSG_MAX for the whole message is refused.
 */
void	mb_extract_message(const struct mb_extract_limits *lim, const char *data_dir,
	    struct mb_msg *msg);

/*
 * The format entry points, in this process, without the child: for the
 * fuzzers and tests.  One signature for all (the child runs any of them;
 * charset is ignored by the formats that declare their own): each appends
 * text to out->text (initialised by the caller) and returns 0, or returns
 * -1 with out->status set.
 */
typedef int mb_extract_fn(const struct mb_extract_limits *lim, const char *charset,
    const void *data, size_t len, struct mb_extract_out *out);
mb_extract_fn	mb_extract_text, mb_extract_html, mb_extract_calendar, mb_extract_pdf,
		mb_extract_office;

#endif
