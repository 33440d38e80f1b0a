/* libFuzzer: the MIME normaliser on arbitrary bytes never crashes or leaks. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mailbox/mime.h"
#include "mailbox/utf8.h"

int	LLVMFuzzerInitialize(int *argc, char ***argv);
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mb_mime_global_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A small cap and depth so the fuzzer reaches the limits too. */
	struct mb_mime_opts o = { .body_cap = 4096, .max_depth = 8,
	    .keep_attachment_data = (size & 1) != 0 };
	struct mb_msg *m = NULL;
	struct mb_err err = { 0 };

	if (mb_mime_parse((const char *)data, size, &o, &m, &err) == 0) {
		if (m->body == NULL || strlen(m->body) != m->body_len ||
		    !mb_utf8_valid(m->body, m->body_len))
			__builtin_trap();
		mb_msg_free(&m);
	}
	return 0;
}
