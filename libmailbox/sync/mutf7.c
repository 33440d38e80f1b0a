/*
 * Modified UTF-7 mailbox names: see include/mailbox/mutf7.h.
 *
 * iconv is called directly, not through libetpan's charconv, because
 * charconv never flushes the converter: the final shift of an encoded name
 * ("...&IKw-") would be lost.  The flush call (iconv with a NULL input) is
 * what writes it.
 */
#include <stdbool.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/util.h"
#include "mailbox/mutf7.h"
#include "mailbox/utf8.h"

#define MUTF7_NAME_MAX	(64u * 1024)	/* no sane mailbox name is longer */

/* Convert in (NUL-terminated) from one charset to another; 0 or -1. */
static int
convert(const char *to, const char *from, const char *in, char **out_r)
{
	iconv_t cd = iconv_open(to, from);
	size_t inleft = strlen(in), cap = inleft * 4 + 16, outleft;
	char *inp = (char *)in, *out, *outp;
	int r = 0;

	*out_r = NULL;
	if (cd == (iconv_t)-1)
		return -1;
	if (inleft > MUTF7_NAME_MAX) {
		iconv_close(cd);
		return -1;
	}
	out = mb_xmalloc(cap);
	outp = out;
	outleft = cap - 1;	/* room for the NUL */
	/* cap is 4x + 16: enough for either direction (UTF-8 -> mUTF-7 is at
	 * most 8/3 per byte plus shifts; mUTF-7 -> UTF-8 shrinks), so E2BIG
	 * cannot happen and one pass plus the flush does it. */
	if (iconv(cd, &inp, &inleft, &outp, &outleft) == (size_t)-1 ||
	    iconv(cd, NULL, NULL, &outp, &outleft) == (size_t)-1)
		r = -1;
	iconv_close(cd);
	if (r == -1) {
		free(out);
		return -1;
	}
	*outp = '\0';
	*out_r = out;
	return 0;
}

int
mb_mutf7_decode(const char *mutf7, char **utf8_r, struct mb_err *err)
{
	char *out;

	*utf8_r = NULL;
	if (convert("UTF-8", "UTF-7-IMAP", mutf7, &out) == -1)
		return mb_err_set(err, MB_E_PROTO, "mailbox name is not modified UTF-7");
	/*
	 * glibc accepts sloppy input (a shift never closed, ASCII inside a
	 * shift).  Only a canonical name round-trips, and only a name that
	 * round-trips can be EXAMINEd by its decoded form, so insist on it.
	 */
	char *again = NULL;

	if (!mb_utf8_valid(out, strlen(out)) ||
	    convert("UTF-7-IMAP", "UTF-8", out, &again) == -1 || strcmp(again, mutf7) != 0) {
		free(again);
		free(out);
		return mb_err_set(err, MB_E_PROTO, "mailbox name is not modified UTF-7");
	}
	free(again);
	*utf8_r = out;
	return 0;
}

int
mb_mutf7_encode(const char *utf8, char **mutf7_r, struct mb_err *err)
{
	*mutf7_r = NULL;
	if (!mb_utf8_valid(utf8, strlen(utf8)))
		return mb_err_set(err, MB_E_INVALID, "mailbox name is not UTF-8");
	if (convert("UTF-7-IMAP", "UTF-8", utf8, mutf7_r) == -1)
		return mb_err_set(err, MB_E_INVALID, "mailbox name cannot be encoded");
	return 0;
}
