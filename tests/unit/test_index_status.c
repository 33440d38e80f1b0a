/*
 * What syncd --status reads (libmailbox/core/index_status.c): per folder
 * the rows under its current UIDVALIDITY and its queued ranges, the dead
 * letters newest first with their total, all through a read-only handle next
 * to the writer; and --rebuild's reset, which keeps the write audit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/index.h"
#include "mailbox/index_audit.h"
#include "mailbox/index_queue.h"
#include "mailbox/index_status.h"

#include "support_index.h"

/* INBOX: 3 rows under uidvalidity 1, two ranges queued; Archive: no state yet. */
static void
fill(struct mb_test_index *t, int64_t *archive_r)
{
	struct mb_folder_state st = { 0 };
	struct mb_test_msg m = { .subject = "s", .body = "b" };
	struct mb_err err = { 0 };
	bool added;

	for (uint32_t uid = 1; uid <= 3; uid++)
		mb_test_put(t->idx, t->inbox, uid, &m);
	assert_int_equal(mb_index_folder_get(t->idx, "INBOX", &st, &err), 0);
	st.uidvalidity = 1;
	st.uidnext = 4;
	st.watermark = 3;
	st.last_sync = 1700000000;
	assert_int_equal(mb_index_folder_update(t->idx, &st, &err), 0);
	mb_folder_state_release(&st);
	assert_int_equal(mb_index_queue_add(t->idx, t->inbox, 1, 4, 10, &added, &err), 0);
	assert_int_equal(mb_index_queue_add(t->idx, t->inbox, 1, 11, 20, &added, &err), 0);
	assert_int_equal(mb_index_folder_ensure(t->idx, "Archive", NULL, archive_r, &err), 0);
}

static void
folders_count_current_rows_and_queued_ranges(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_test_msg m = { .subject = "old", .body = "b" };
	struct mb_status_folder *f;
	struct mb_index *ro = NULL;
	struct mb_err err = { 0 };
	int64_t archive;
	size_t n;

	fill(t, &archive);
	/* A row under another uidvalidity than its folder's now is not counted. */
	mb_test_put(t->idx, archive, 1, &m);
	if (mb_index_open(t->path, MB_INDEX_RO, &ro, &err) == -1)
		fail_msg("open ro: %s", err.msg);
	assert_int_equal(mb_index_status_folders(ro, &f, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].name, "Archive");	/* by name */
	assert_int_equal(f[0].uidvalidity, 0);
	assert_int_equal(f[0].indexed, 0);	/* its row is under 1, the folder at 0 */
	assert_int_equal(f[0].queued, 0);
	assert_int_equal(f[0].last_sync, 0);
	assert_string_equal(f[1].name, "INBOX");
	assert_int_equal(f[1].uidvalidity, 1);
	assert_int_equal(f[1].uidnext, 4);
	assert_int_equal(f[1].watermark, 3);
	assert_int_equal(f[1].last_sync, 1700000000);
	assert_int_equal(f[1].indexed, 3);
	assert_int_equal(f[1].queued, 2);
	mb_status_folders_free(&f, n);
	assert_null(f);
	mb_index_close(&ro);
}

static void
dead_letters_newest_first_with_total(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_dead_letter *d;
	struct mb_err err = { 0 };
	uint64_t total;
	size_t n;

	for (uint32_t i = 0; i < 3; i++) {
		struct mb_queue_range r = { 0 };
		bool added, dead;

		assert_int_equal(mb_index_queue_add(t->idx, t->inbox, 1, i * 10 + 1, i * 10 + 10,
		    &added, &err), 0);
		assert_int_equal(mb_index_queue_take(t->idx, 1700000000, 0, NULL, 0, &r, &err), 1);
		assert_int_equal(mb_index_queue_fail(t->idx, &r, i == 2 ? NULL : "boom", 1, 10,
		    1700000000 + i, &dead, &err), 0);
		assert_true(dead);
		mb_queue_range_release(&r);
	}
	assert_int_equal(mb_index_dead_letters(t->idx, 2, &d, &n, &total, &err), 0);
	assert_int_equal(total, 3);
	assert_int_equal(n, 2);
	assert_int_equal(d[0].first, 21);
	assert_null(d[0].last_error);
	assert_int_equal(d[0].failed_at, 1700000002);
	assert_int_equal(d[1].first, 11);
	assert_string_equal(d[1].last_error, "boom");
	mb_dead_letters_free(&d, n);
	assert_int_equal(mb_index_dead_letters(t->idx, 0, &d, &n, &total, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
}

static void
reset_empties_all_but_the_audit(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_audit_request rq = { .at = 1, .tool = "flag_message", .arguments = "{}" };
	struct mb_status_folder *f;
	struct mb_err err = { 0 };
	int64_t archive, id;
	unsigned depth;
	int64_t next;
	size_t n;

	fill(t, &archive);
	assert_int_equal(mb_index_audit_begin(t->idx, &rq, &id, &err), 0);
	assert_int_equal(mb_index_reset(t->idx, &err), 0);
	assert_int_equal(mb_index_status_folders(t->idx, &f, &n, &err), 0);
	assert_int_equal(n, 0);
	mb_status_folders_free(&f, n);
	assert_int_equal(mb_index_queue_depth(t->idx, &depth, &next, &err), 0);
	assert_int_equal(depth, 0);
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM messages"), 0);
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM messages_fts"), 0);
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM write_log"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(folders_count_current_rows_and_queued_ranges),
		MB_TEST_INDEX(dead_letters_newest_first_with_total),
		MB_TEST_INDEX(reset_empties_all_but_the_audit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
