/* format=flowed (RFC 3676) to plain lines: see mime-private.h. */
#include <string.h>

#include "mime-private.h"

int
mb_flowed_decode(const char *in, size_t len, bool delsp, struct mb_buf *out)
{
	const char *p = in, *end = in + len, *nl, *text;
	size_t depth, para_depth = 0, tlen;
	bool in_para = false, flowed;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		for (depth = 0, text = p; text < nl && *text == '>'; text++)
			depth++;
		if (text < nl && *text == ' ')
			text++;		/* space-stuffing (or the space after quotes) */
		tlen = (size_t)(nl - text);
		/* "-- " is the signature separator, never a soft break. */
		flowed = tlen > 0 && text[tlen - 1] == ' ' &&
		    !(tlen == 3 && memcmp(text, "-- ", 3) == 0);
		if (flowed && delsp)
			tlen--;
		if (in_para && depth != para_depth) {
			if (mb_buf_addc(out, '\n') == -1)
				return -1;
			in_para = false;
		}
		if (!in_para && depth > 0) {
			for (size_t i = 0; i < depth; i++)
				if (mb_buf_addc(out, '>') == -1)
					return -1;
			if (mb_buf_addc(out, ' ') == -1)
				return -1;
		}
		if (mb_buf_add(out, text, tlen) == -1)
			return -1;
		if (flowed) {
			in_para = true;
			para_depth = depth;
		} else {
			in_para = false;
			if (nl < end && mb_buf_addc(out, '\n') == -1)
				return -1;
		}
		p = nl < end ? nl + 1 : end;
	}
	return 0;
}
