/* JSON string literals: see include/mailbox/json.h. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/json.h"

/*
 * Whether one of the 8 bytes of w must be escaped: below 0x20, '"' or '\\'.
 * The classic word tests (a byte below n, a zero byte after an XOR): each
 * is exact as a yes or no, which is all this asks; bytes of 0x80 and up
 * (UTF-8) never count.  Mail text is mostly runs without escapes, and this
 * skips them 8 bytes a step instead of one.
 */
static inline bool
word_needs_escape(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');

	return (((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
	    ((backslash - ones) & ~backslash)) & highs;
}

static inline bool
byte_needs_escape(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\';
}

/* Append c's escape (c needs one) to b; -1 when b is full. */
static int
add_escape(struct mb_buf *b, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	char esc[7] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0 };
	const char *e = esc;

	switch (c) {
	case '"': e = "\\\""; break;
	case '\\': e = "\\\\"; break;
	case '\b': e = "\\b"; break;
	case '\f': e = "\\f"; break;
	case '\n': e = "\\n"; break;
	case '\r': e = "\\r"; break;
	case '\t': e = "\\t"; break;
	}
	return mb_buf_adds(b, e);
}

int
mb_json_quote(struct mb_buf *b, const char *s, size_t len)
{
	size_t i = 0, run = 0;	/* s[run..i) needs no escape and is not yet copied */

	if (mb_buf_addc(b, '"') == -1)
		return -1;
	while (i < len) {
		uint64_t w;
		size_t end = len;	/* the bytes to look at one by one: a flagged word, or the tail */

		if (len - i >= sizeof(w)) {
			memcpy(&w, s + i, sizeof(w));
			if (!word_needs_escape(w)) {
				i += sizeof(w);
				continue;
			}
			end = i + sizeof(w);
		}
		for (; i < end; i++) {
			if (!byte_needs_escape((unsigned char)s[i]))
				continue;
			if (mb_buf_add(b, s + run, i - run) == -1 ||
			    add_escape(b, (unsigned char)s[i]) == -1)
				return -1;
			run = i + 1;
		}
	}
	if (mb_buf_add(b, s + run, len - run) == -1)
		return -1;
	return mb_buf_addc(b, '"');
}
