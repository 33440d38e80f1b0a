/*
 * The body of every extractor fuzzer (fuzz_extract_<format>.c): one entry
 * point of mailbox/extract.h, in this process (no child, so libFuzzer sees
 * every edge and every crash), on arbitrary bytes under the default
 * limits.  It must give valid UTF-8 within the output cap, or a status.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mailbox/extract.h"
#include "mailbox/mime.h"
#include "mailbox/utf8.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_EXTRACT(fn, charset)						\
int										\
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)			\
{										\
	static int init;							\
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;		\
	struct mb_extract_out out;						\
										\
	if (!init++)								\
		mb_mime_global_init();						\
	lim.max_chars = 20000;							\
	lim.zip_max_mb = 16;							\
	mb_buf_init(&out.text, (size_t)lim.max_chars * 4 + 64);			\
	snprintf(out.status, sizeof(out.status), "ok");				\
	if (fn(&lim, charset, data, size, &out) == 0) {				\
		if (!mb_utf8_valid(out.text.data, out.text.len) ||		\
		    out.text.len > out.text.max)				\
			__builtin_trap();					\
	} else if (out.status[0] == '\0' || strcmp(out.status, "ok") == 0)	\
		__builtin_trap();	/* a failure always says why */		\
	mb_buf_release(&out.text);						\
	return 0;								\
}
