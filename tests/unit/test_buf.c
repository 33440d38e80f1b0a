/*
 * Growable, capped buffers (include/mailbox/buf.h): what is appended is
 * there, NUL-terminated, whether it fit the room already made or needed
 * more; an append past the cap fails with EMSGSIZE and leaves the buffer
 * as it was, even when the room already made would hold it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/buf.h"

static void
buf_formats_into_room_and_past_it(void **state)
{
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	char big[300];

	assert_int_equal(mb_buf_addf(&b, "id %d", 7), 0);		/* no room yet */
	assert_string_equal(b.data, "id 7");
	assert_int_equal(mb_buf_addf(&b, " | %s | %lld", "INBOX", 12345678901LL), 0);	/* in the room */
	assert_string_equal(b.data, "id 7 | INBOX | 12345678901");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(mb_buf_addf(&b, "<%s>", big), 0);	/* more than the room */
	assert_int_equal(b.len, 26 + 301);
	assert_int_equal(strlen(b.data), b.len);
	assert_memory_equal(b.data, "id 7 | INBOX | 12345678901<xxx", 30);
	assert_string_equal(b.data + b.len - 2, "x>");
	assert_int_equal(mb_buf_addf(&b, "%s", ""), 0);
	assert_int_equal(strlen(b.data), b.len);
	mb_buf_release(&b);
}

static void
buf_cap_holds_with_room_to_spare(void **state)
{
	struct mb_buf b = MB_BUF_INIT(10);

	assert_int_equal(mb_buf_adds(&b, "12345"), 0);		/* room for 63 now, cap 10 */
	errno = 0;
	assert_int_equal(mb_buf_addf(&b, "%s", "678901"), -1);	/* fits the room, not the cap */
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.data, "12345");
	assert_int_equal(mb_buf_addf(&b, "%d", 67890), 0);	/* exactly to the cap */
	assert_string_equal(b.data, "1234567890");
	errno = 0;
	assert_int_equal(mb_buf_addc(&b, 'x'), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_string_equal(b.data, "1234567890");
	mb_buf_release(&b);
}

static void
buf_adds_a_char_at_a_time(void **state)
{
	struct mb_buf b = MB_BUF_INIT(200);

	for (int i = 0; i < 200; i++)
		assert_int_equal(mb_buf_addc(&b, (char)('a' + i % 26)), 0);
	assert_int_equal(b.len, 200);
	assert_int_equal(strlen(b.data), 200);
	assert_memory_equal(b.data + 26, "abc", 3);
	assert_int_equal(mb_buf_addc(&b, 'z'), -1);
	assert_int_equal(b.len, 200);
	mb_buf_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buf_formats_into_room_and_past_it),
		cmocka_unit_test(buf_cap_holds_with_room_to_spare),
		cmocka_unit_test(buf_adds_a_char_at_a_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
