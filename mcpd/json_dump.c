/*
 * The text of a response: what json_dumps(j, JSON_COMPACT) writes, byte for
 * byte, in under a third of the time.  An answer is mostly mail text (a search
 * page is some 20 KB: the fenced text block and the same fields again in
 * structuredContent), and jansson decodes every character of every string
 * and hands each run to a callback; this copies the runs that need no
 * escape whole (mb_json_quote(), include/mailbox/json.h).  jansson's strings
 * are valid UTF-8 already (json_string*() checks, mcp_json_text() repairs),
 * so bytes of 0x20 and up other than '"' and '\\' are copied as they are,
 * as jansson does without JSON_ENSURE_ASCII.  Objects keep their insertion
 * order, as jansson's do.  A real number, which no answer has, makes it hand
 * the whole value to json_dumps().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/json.h"
#include "mcpd.h"

static int	dump_value(struct mb_buf *b, json_t *j);

static int
dump_object(struct mb_buf *b, json_t *j)
{
	const char *key;
	json_t *v;
	bool first = true;

	if (mb_buf_addc(b, '{') == -1)
		return -1;
	json_object_foreach(j, key, v) {
		if ((!first && mb_buf_addc(b, ',') == -1) ||
		    mb_json_quote(b, key, strlen(key)) == -1 || mb_buf_addc(b, ':') == -1 ||
		    dump_value(b, v) == -1)
			return -1;
		first = false;
	}
	return mb_buf_addc(b, '}');
}

static int
dump_array(struct mb_buf *b, json_t *j)
{
	size_t i;
	json_t *v;

	if (mb_buf_addc(b, '[') == -1)
		return -1;
	json_array_foreach(j, i, v)
		if ((i > 0 && mb_buf_addc(b, ',') == -1) || dump_value(b, v) == -1)
			return -1;
	return mb_buf_addc(b, ']');
}

/* -1: a real (see above) or no memory. */
static int
dump_value(struct mb_buf *b, json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return dump_object(b, j);
	case JSON_ARRAY:
		return dump_array(b, j);
	case JSON_STRING:
		return mb_json_quote(b, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		return mb_buf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
	case JSON_TRUE:
		return mb_buf_adds(b, "true");
	case JSON_FALSE:
		return mb_buf_adds(b, "false");
	case JSON_NULL:
		return mb_buf_adds(b, "null");
	default:
		return -1;
	}
}

char *
mcp_json_dumps(json_t *j)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);

	if (j == NULL)
		return NULL;
	if (dump_value(&b, j) == -1) {
		mb_buf_release(&b);
		return json_dumps(j, JSON_COMPACT);
	}
	return mb_buf_detach(&b, NULL);
}
