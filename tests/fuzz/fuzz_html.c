/* libFuzzer: HTML to text on arbitrary bytes gives clean UTF-8, never a crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/html.h"
#include "mailbox/utf8.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len;
	char *t = mb_html_to_text((const char *)data, size, &len);

	if (t == NULL || strlen(t) != len || !mb_utf8_valid(t, len))
		__builtin_trap();
	free(t);
	return 0;
}
