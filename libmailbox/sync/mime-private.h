/*
 * Internals of the MIME normaliser, shared by mime.c (the tree walk),
 * mime_envelope.c (headers), charset.c (bytes to UTF-8), rfc2047.c (encoded
 * words), flowed.c (RFC 3676) and mime_base64.c (base64 parts).  Not
 * installed; tests use the public API.
 */
#ifndef MAILBOX_MIME_PRIVATE_H
#define MAILBOX_MIME_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include <gmime/gmime.h>

#include "mailbox/buf.h"
#include "mailbox/msg.h"

/*
 * Append the text in bytes [in, in+len), written in charset (a MIME charset
 * name; NULL or "" when none was declared), to out as UTF-8.  Never fails on
 * the data: an unknown charset, undeclared 8-bit text and invalid UTF-8 are
 * read as UTF-8 where valid and windows-1252 byte by byte elsewhere; bytes a
 * known charset cannot decode become U+FFFD.  Shift_JIS is read as CP932,
 * ISO-8859-1 and US-ASCII as windows-1252, GB2312 as GB18030 (supersets
 * that mail clients really write).  Returns -1 only when out hits its cap.
 * Keeps a few iconv descriptors open per thread between calls.
 */
int	mb_charset_to_utf8(const char *charset, const char *in, size_t len, struct mb_buf *out);

/*
 * Append in, read strictly as charset, to out: -1 (out unchanged) when the
 * label carries no information (see above), iconv does not know it, or a
 * byte does not decode.  Used to test a guess for undeclared text.
 */
int	mb_charset_try_utf8(const char *charset, const char *in, size_t len, struct mb_buf *out);

/*
 * Decode an unstructured header value (Subject, a filename): unfold, decode
 * RFC 2047 encoded words (adjacent words joined without the space between,
 * bytes of adjacent words in one charset decoded together so a character
 * split across words survives), and read raw 8-bit bytes as UTF-8 if valid,
 * else windows-1252.  Returns a NUL-terminated UTF-8 string the caller
 * free(3)s, with control characters and invisible characters removed and
 * whitespace runs collapsed to one space; never NULL.
 */
char	*mb_rfc2047_decode(const char *raw, size_t len);

/*
 * Append text/plain; format=flowed text (UTF-8, LF line ends) to out with
 * its soft line breaks joined (RFC 3676; delsp: DelSp=yes).  Quote depth is
 * kept as "> " prefixes; space-stuffing is removed.
 */
int	mb_flowed_decode(const char *in, size_t len, bool delsp, struct mb_buf *out);

/*
 * Fill the envelope of msg from the headers of m.  hint (hint_sz bytes)
 * receives the charset of the Subject's first encoded word, or "": the best
 * guess for body text that declares no charset.
 */
void	mb_mime_envelope(GMimeMessage *m, GMimeParserOptions *popts, struct mb_msg *msg,
	    char *hint, size_t hint_sz);

/*
 * Append the decoded bytes of dw, a base64 part, to ba.  Unlike GMime's own
 * decoding it keeps a last group whose "=" padding is missing (RFC 2045
 * 6.8: decode what is there).
 */
void	mb_mime_base64_bytes(GMimeDataWrapper *dw, GByteArray *ba);

/*
 * Whether a text/plain alternative is only a placeholder for its HTML
 * sibling (mime_placeholder.c): at most MB_MIME_PLACEHOLDER_MAX bytes once
 * trimmed, naming a browser, a web version or the like, beside HTML whose
 * text (html_text_len bytes) is at least three times as long and
 * MB_MIME_PLACEHOLDER_MORE bytes longer.
 */
#define MB_MIME_PLACEHOLDER_MAX		400
#define MB_MIME_PLACEHOLDER_MORE	200
bool	mb_mime_placeholder(const char *plain, size_t plain_len, size_t html_text_len);

/* The process-wide parser options (set up by mb_mime_global_init). */
GMimeParserOptions	*mb_mime_parser_options(void);

#endif
