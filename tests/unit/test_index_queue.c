/*
 * The work queue and dead letters (libmailbox/core/index_queue.c) on a real
 * SQLite file: a range is queued once, taken oldest due first and never
 * twice while in flight, backs off on failure and ends in dead_letters, and
 * a busy database is a temporary error the caller retries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_queue.h"
#include "mailbox/index_status.h"

#include "support_index.h"

#define NOW	1700000000

static void
add(struct mb_test_index *t, uint32_t uidv, uint32_t first, uint32_t last)
{
	struct mb_err err = { 0 };
	bool added;

	if (mb_index_queue_add(t->idx, t->inbox, uidv, first, last, &added, &err) == -1)
		fail_msg("add %u:%u: %s", first, last, err.msg);
	assert_true(added);
}

/* Take at now, expecting a range; *r is the caller's. */
static void
take(struct mb_test_index *t, int64_t now, const int64_t *busy, size_t n_busy,
    struct mb_queue_range *r)
{
	struct mb_err err = { 0 };

	assert_int_equal(mb_index_queue_take(t->idx, now, 0, busy, n_busy, r, &err), 1);
}

static void
add_is_once_per_range(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_err err = { 0 };
	unsigned depth;
	int64_t next;
	bool added;

	add(t, 7, 1, 100);
	assert_int_equal(mb_index_queue_add(t->idx, t->inbox, 7, 1, 100, &added, &err), 0);
	assert_false(added);
	add(t, 7, 101, 200);
	assert_int_equal(mb_index_queue_depth(t->idx, &depth, &next, &err), 0);
	assert_int_equal(depth, 2);
	assert_int_equal(next, 0);	/* due at once */
}

static void
take_is_oldest_first_and_skips_busy(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_queue_range r = { 0 }, s = { 0 }, none = { 0 };
	struct mb_err err = { 0 };
	int64_t busy[2];

	add(t, 7, 1, 100);
	add(t, 7, 101, 200);
	take(t, NOW, NULL, 0, &r);
	assert_string_equal(r.folder, "INBOX");
	assert_int_equal(r.folder_id, t->inbox);
	assert_int_equal(r.uidvalidity, 7);
	assert_int_equal(r.first, 1);
	assert_int_equal(r.last, 100);
	assert_int_equal(r.attempts, 0);
	busy[0] = r.id;
	take(t, NOW, busy, 1, &s);
	assert_int_equal(s.first, 101);
	busy[1] = s.id;
	assert_int_equal(mb_index_queue_take(t->idx, NOW, 0, busy, 2, &none, &err), 0);
	assert_null(none.folder);
	/* Acked, a range is gone for good: only s is left, and s is busy. */
	assert_int_equal(mb_index_queue_ack(t->idx, r.id, &err), 0);
	assert_int_equal(mb_index_queue_take(t->idx, NOW, 0, busy + 1, 1, &none, &err), 0);
	mb_queue_range_release(&r);
	mb_queue_range_release(&s);
}

/* A fault that persists for ticks keeps one dead letter per range, up to date. */
static void
a_range_dead_lettered_again_keeps_one_row(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_queue_range r = { 0 };
	struct mb_dead_letter *d;
	struct mb_err err = { 0 };
	uint64_t total;
	size_t n;
	bool dead;

	for (int tick = 0; tick < 3; tick++) {
		add(t, 7, 1, 100);
		add(t, 7, 101, 200);
		for (int i = 0; i < 2; i++) {
			take(t, NOW + tick, NULL, 0, &r);
			assert_int_equal(mb_index_queue_fail(t->idx, &r, tick == 2 ? "closed" :
			    "timeout", 1, 10, NOW + 100 * tick, &dead, &err), 0);
			assert_true(dead);
			mb_queue_range_release(&r);
		}
	}
	assert_int_equal(mb_index_dead_letters(t->idx, 10, &d, &n, &total, &err), 0);
	assert_int_equal(total, 2);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(d[i].attempts, 3);
		assert_string_equal(d[i].last_error, "closed");
		assert_int_equal(d[i].failed_at, NOW + 200);
	}
	mb_dead_letters_free(&d, n);
}

static void
fail_backs_off_then_dead_letters(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_queue_range r = { 0 }, none = { 0 };
	struct mb_dead_letter *d;
	struct mb_err err = { 0 };
	unsigned depth;
	int64_t next;
	uint64_t total;
	size_t n;
	bool dead;

	add(t, 7, 1, 100);
	take(t, NOW, NULL, 0, &r);
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "timeout", 3, 10, NOW, &dead, &err), 0);
	assert_false(dead);
	mb_queue_range_release(&r);
	/* Not due before the backoff has passed. */
	assert_int_equal(mb_index_queue_take(t->idx, NOW + 9, 0, NULL, 0, &none, &err), 0);
	assert_int_equal(mb_index_queue_depth(t->idx, &depth, &next, &err), 0);
	assert_int_equal(depth, 1);
	assert_int_equal(next, NOW + 10);
	take(t, NOW + 10, NULL, 0, &r);
	assert_int_equal(r.attempts, 1);
	/* The second failure waits twice as long. */
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "timeout", 3, 10, NOW + 10, &dead, &err),
	    0);
	mb_queue_range_release(&r);
	assert_int_equal(mb_index_queue_take(t->idx, NOW + 29, 0, NULL, 0, &none, &err), 0);
	take(t, NOW + 30, NULL, 0, &r);
	assert_int_equal(r.attempts, 2);
	/* The third is the last: the range moves to the dead letters. */
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "parse error", 3, 10, NOW + 30, &dead,
	    &err), 0);
	assert_true(dead);
	mb_queue_range_release(&r);
	assert_int_equal(mb_index_queue_depth(t->idx, &depth, &next, &err), 0);
	assert_int_equal(depth, 0);
	assert_int_equal(mb_index_dead_letters(t->idx, 10, &d, &n, &total, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(total, 1);
	assert_string_equal(d[0].folder, "INBOX");
	assert_int_equal(d[0].uidvalidity, 7);
	assert_int_equal(d[0].first, 1);
	assert_int_equal(d[0].last, 100);
	assert_int_equal(d[0].attempts, 3);
	assert_string_equal(d[0].last_error, "parse error");
	assert_int_equal(d[0].failed_at, NOW + 30);
	mb_dead_letters_free(&d, n);
}

static void
backoff_is_capped_at_a_day(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_queue_range r = { 0 }, none = { 0 };
	struct mb_err err = { 0 };
	bool dead;

	add(t, 7, 1, 100);
	take(t, NOW, NULL, 0, &r);
	r.attempts = 40;	/* 60 s << 40 would be centuries */
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "x", 100, 60, NOW, &dead, &err), 0);
	mb_queue_range_release(&r);
	assert_int_equal(mb_index_queue_take(t->idx, NOW + 86399, 0, NULL, 0, &none, &err), 0);
	take(t, NOW + 86400, NULL, 0, &r);
	assert_int_equal(r.attempts, 41);
	mb_queue_range_release(&r);
}

static void
drop_folder_keeps_one_uidvalidity_or_none(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_queue_range r = { 0 };
	struct mb_err err = { 0 };
	unsigned dropped, depth;
	int64_t next;

	add(t, 7, 1, 100);
	add(t, 7, 101, 200);
	add(t, 8, 1, 100);
	assert_int_equal(mb_index_queue_drop_folder(t->idx, t->inbox, 8, &dropped, &err), 0);
	assert_int_equal(dropped, 2);
	take(t, NOW, NULL, 0, &r);
	assert_int_equal(r.uidvalidity, 8);
	mb_queue_range_release(&r);
	assert_int_equal(mb_index_queue_drop_folder(t->idx, t->inbox, 0, &dropped, &err), 0);
	assert_int_equal(dropped, 1);
	assert_int_equal(mb_index_queue_depth(t->idx, &depth, &next, &err), 0);
	assert_int_equal(depth, 0);
}

/* Another connection holds the write lock: every queue write is MB_E_TEMP, and works after. */
static void
busy_database_is_temporary(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_queue_range r = { 0 };
	struct mb_err err = { 0 };
	struct sqlite3 *other;
	unsigned dropped;
	bool added, dead;

	add(t, 7, 1, 100);
	take(t, NOW, NULL, 0, &r);
	other = mb_test_index_lock(t);
	assert_int_equal(mb_index_queue_add(t->idx, t->inbox, 7, 101, 200, &added, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	assert_int_equal(mb_index_queue_ack(t->idx, r.id, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "x", 5, 10, NOW, &dead, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "x", 1, 10, NOW, &dead, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	assert_int_equal(mb_index_queue_drop_folder(t->idx, t->inbox, 0, &dropped, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	mb_test_index_unlock(&other);

	/* The failed dead-lettering left nothing half done. */
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM dead_letters"), 0);
	assert_int_equal(mb_index_queue_add(t->idx, t->inbox, 7, 101, 200, &added, &err), 0);
	assert_true(added);
	assert_int_equal(mb_index_queue_fail(t->idx, &r, "x", 1, 10, NOW, &dead, &err), 0);
	assert_true(dead);
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM work_queue"), 1);
	mb_queue_range_release(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(add_is_once_per_range),
		MB_TEST_INDEX(take_is_oldest_first_and_skips_busy),
		MB_TEST_INDEX(fail_backs_off_then_dead_letters),
		MB_TEST_INDEX(a_range_dead_lettered_again_keeps_one_row),
		MB_TEST_INDEX(backoff_is_capped_at_a_day),
		MB_TEST_INDEX(drop_folder_keeps_one_uidvalidity_or_none),
		MB_TEST_INDEX(busy_database_is_temporary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
