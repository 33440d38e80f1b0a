/* JSON string literals: see include/mailbox/json.h. */
#include "mailbox/buf.h"
#include "mailbox/json.h"

int
mb_json_quote(struct mb_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, run = 0;

	if (mb_buf_addc(b, '"') == -1)
		return -1;
	/* Runs that need no escape (most of a mail body) are copied whole. */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0 };
		const char *e = esc;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		}
		if (mb_buf_add(b, s + run, i - run) == -1 || mb_buf_adds(b, e) == -1)
			return -1;
		run = i + 1;
	}
	if (mb_buf_add(b, s + run, len - run) == -1)
		return -1;
	return mb_buf_addc(b, '"');
}
