/*
 * The write audit (libmailbox/core/index_audit.c): a request is recorded
 * 'pending' with what is known, filled in and finished later without losing
 * what an earlier update said, and read back newest first with the columns
 * that were never set told apart from zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_audit.h"

#include "support_index.h"

static int64_t
begin(struct mb_test_index *t, const char *tool, int64_t message_id)
{
	struct mb_audit_request rq = { .at = 1700000000, .tool = tool, .requested_by = "alice",
	    .peer_uid = 0, .message_id = message_id, .arguments = "{\"add\":[]}" };
	struct mb_err err = { 0 };
	int64_t id = 0;

	if (mb_index_audit_begin(t->idx, &rq, &id, &err) == -1)
		fail_msg("begin: %s", err.msg);
	assert_true(id > 0);
	return id;
}

static void
pending_row_then_finished(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_audit_update place = { .folder = "INBOX", .uidvalidity = 7, .uid = 42 };
	struct mb_audit_update done = { .outcome = "ok", .detail = "flags set and verified" };
	struct mb_audit_entry *e;
	struct mb_err err = { 0 };
	int64_t id = begin(t, "flag_message", 5);
	size_t n;

	assert_int_equal(mb_index_audit_recent(t->idx, 10, &e, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(e[0].id, id);
	assert_int_equal(e[0].at, 1700000000);
	assert_string_equal(e[0].tool, "flag_message");
	assert_string_equal(e[0].requested_by, "alice");
	assert_int_equal(e[0].peer_uid, 0);	/* root is uid 0, not "none" */
	assert_int_equal(e[0].message_id, 5);
	assert_null(e[0].folder);
	assert_int_equal(e[0].uidvalidity, -1);
	assert_int_equal(e[0].uid, -1);
	assert_string_equal(e[0].arguments, "{\"add\":[]}");
	assert_string_equal(e[0].outcome, "pending");
	assert_null(e[0].detail);
	mb_audit_list_free(&e, n);
	assert_null(e);

	assert_int_equal(mb_index_audit_update(t->idx, id, &place, &err), 0);
	assert_int_equal(mb_index_audit_update(t->idx, id, &done, &err), 0);
	assert_int_equal(mb_index_audit_recent(t->idx, 10, &e, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].folder, "INBOX");	/* kept by the second update */
	assert_int_equal(e[0].uidvalidity, 7);
	assert_int_equal(e[0].uid, 42);
	assert_int_equal(e[0].message_id, 5);
	assert_string_equal(e[0].outcome, "ok");
	assert_string_equal(e[0].detail, "flags set and verified");
	mb_audit_list_free(&e, n);
}

static void
a_draft_row_names_the_draft_later(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_audit_update u = { .folder = "Drafts", .uidvalidity = 3, .uid = 9,
	    .outcome = "ok", .message_id = 77 };
	struct mb_audit_entry *e;
	struct mb_err err = { 0 };
	int64_t id = begin(t, "create_draft", 0);
	size_t n;

	assert_int_equal(mb_index_audit_recent(t->idx, 1, &e, &n, &err), 0);
	assert_int_equal(e[0].message_id, -1);	/* a new draft names no message */
	mb_audit_list_free(&e, n);
	assert_int_equal(mb_index_audit_update(t->idx, id, &u, &err), 0);
	assert_int_equal(mb_index_audit_recent(t->idx, 1, &e, &n, &err), 0);
	assert_int_equal(e[0].message_id, 77);
	assert_string_equal(e[0].folder, "Drafts");
	mb_audit_list_free(&e, n);
}

static void
recent_is_newest_first_and_limited(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_audit_entry *e;
	struct mb_err err = { 0 };
	int64_t ids[4];
	size_t n;

	for (size_t i = 0; i < 4; i++)
		ids[i] = begin(t, "move_message", (int64_t)i + 1);
	assert_int_equal(mb_index_audit_recent(t->idx, 3, &e, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(e[0].id, ids[3]);
	assert_int_equal(e[1].id, ids[2]);
	assert_int_equal(e[2].id, ids[1]);
	mb_audit_list_free(&e, n);
	assert_int_equal(mb_index_audit_recent(t->idx, 0, &e, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_non_null(e);
	mb_audit_list_free(&e, n);
}

static void
bad_outcome_is_refused(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_audit_update u = { .outcome = "maybe" };
	struct mb_err err = { 0 };
	int64_t id = begin(t, "trash_message", 1);

	assert_int_equal(mb_index_audit_update(t->idx, id, &u, &err), -1);
	assert_int_equal(err.code, MB_E_INVALID);
}

static void
busy_database_is_temporary(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_audit_request rq = { .at = 1, .tool = "flag_message", .arguments = "{}" };
	struct mb_audit_update u = { .outcome = "failed" };
	struct mb_audit_entry *e;
	struct mb_err err = { 0 };
	int64_t id = begin(t, "flag_message", 1), id2;
	struct sqlite3 *other = mb_test_index_lock(t);
	size_t n;

	assert_int_equal(mb_index_audit_begin(t->idx, &rq, &id2, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	assert_int_equal(mb_index_audit_update(t->idx, id, &u, &err), -1);
	assert_int_equal(err.code, MB_E_TEMP);
	mb_err_clear(&err);
	/* A reader is not blocked by the writer (WAL). */
	assert_int_equal(mb_index_audit_recent(t->idx, 5, &e, &n, &err), 0);
	assert_int_equal(n, 1);
	mb_audit_list_free(&e, n);
	mb_test_index_unlock(&other);
	assert_int_equal(mb_index_audit_update(t->idx, id, &u, &err), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(pending_row_then_finished),
		MB_TEST_INDEX(a_draft_row_names_the_draft_later),
		MB_TEST_INDEX(recent_is_newest_first_and_limited),
		MB_TEST_INDEX(bad_outcome_is_refused),
		MB_TEST_INDEX(busy_database_is_temporary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
