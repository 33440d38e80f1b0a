/* UTF-8 helpers shared by the normaliser (syncd) and the answers (mcpd). */
#ifndef MAILBOX_UTF8_H
#define MAILBOX_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool	mb_utf8_valid(const char *s, size_t len);

/*
 * The number of bytes at the start of s (len bytes) below 0x80: its ASCII
 * run, read eight bytes at a time (mail's text is mostly ASCII, and the
 * index's tokenizer looks at every byte twice before SQLite's does).
 */
size_t	mb_utf8_ascii_run(const char *s, size_t len);

/*
 * Decode one code point at s (len bytes available).  Returns its length in
 * bytes (1..4) and sets *cp_r, or returns 0 on an invalid or truncated
 * sequence.
 */
size_t	mb_utf8_decode(const char *s, size_t len, uint32_t *cp_r);

/* Encode cp into out (room for 4 bytes); returns the length, 0 if invalid. */
size_t	mb_utf8_encode(uint32_t cp, char out[4]);

/*
 * The largest n <= max such that s[0..n) ends on a character boundary of the
 * valid UTF-8 string s (len bytes).  Never splits a character.
 */
size_t	mb_utf8_boundary(const char *s, size_t len, size_t max);

/*
 * Number of characters (code points) in the valid UTF-8 string s: the bytes
 * that are not continuation bytes (10xxxxxx).  In invalid text, a stray
 * lead or ASCII byte counts as one and a stray continuation byte as none.
 */
size_t	mb_utf8_count(const char *s, size_t len);

/*
 * Byte offset of character number nchars (clamped to len).  A character is
 * the byte at the offset and the continuation bytes that follow it, so in
 * invalid text each stray byte (even a continuation byte at s[0]) counts as
 * one character.
 */
size_t	mb_utf8_offset(const char *s, size_t len, size_t nchars);

/*
 * Characters written without spaces between words, which the index stores
 * as overlapping bigrams (docs/index.md): Han (with 々 〆 〇 and the
 * Hangzhou numerals), Hiragana, Katakana (with the halfwidth forms and the
 * phonetic extensions), Bopomofo and Hangul (syllables and Jamo).
 * Punctuation (、。「」・) is not.  The one table both the FTS5 tokenizer
 * and the query compiler use, so a query is split the way the text was.
 */
bool	mb_utf8_is_cjk(uint32_t cp);

/*
 * Characters that exist to hide text from a human reader, or that a reader
 * does not see inside a word (so they would split it for search): zero-width
 * (U+200B..U+200D, U+2060, U+FEFF, U+180E Mongolian vowel separator), the
 * soft hyphen U+00AD, the invisible operators U+2061..U+2064, bidi marks and
 * controls (U+200E, U+200F, U+061C, U+202A..U+202E, U+2066..U+2069) and the
 * tag block (U+E0000..U+E007F).
 */
bool	mb_utf8_is_invisible(uint32_t cp);

/*
 * Strip invisible characters in place from the UTF-8 string s (len bytes),
 * and replace invalid bytes with U+FFFD only where that fits (otherwise they
 * are dropped).  Returns the new length; s stays NUL-terminated if it was.
 */
size_t	mb_utf8_strip_invisible(char *s, size_t len);

/*
 * Unicode normalisation (libmailbox/core/utf8_norm.c, GLib's normaliser;
 * docs/normaliser.md "Unicode forms").  Both take len bytes of UTF-8.
 *
 * mb_utf8_nfc: s in NFC, appended to out (what the index stores).  Text
 * that is not valid UTF-8 is appended unchanged.  Returns 0, or -1 when out
 * is full.
 */
struct mb_buf;
int	mb_utf8_nfc(const char *s, size_t len, struct mb_buf *out);

/*
 * mb_utf8_fold: the search form of s, the same for indexed text and for
 * queries (the tokenizer calls it on both): NFKC, character cluster by
 * cluster (a character and the combining marks after it), so ligatures,
 * full-width forms, circled digits and NFD text become their plain NFC
 * spelling.  Returns false when folding changes nothing (all ASCII, or every
 * cluster already folded): then nothing is allocated.  Otherwise true with
 * *out_r (out_len_r bytes, NUL-terminated) and *map_r: for byte i of the
 * output, map[2i] and map[2i+1] are the start and end offsets in s of the
 * cluster it came from.  Both are the caller's to free(3).  An invalid byte
 * is its own cluster, copied.
 */
bool	mb_utf8_fold(const char *s, size_t len, char **out_r, size_t *out_len_r,
	    uint32_t **map_r);

#endif
