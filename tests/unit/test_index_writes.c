/*
 * The index side of the writes (libmailbox/core/index_writes.c): the
 * message a request names and whether its id is stale, the destination by
 * name, by \Trash role, and Drafts by role or else by name, a reply's
 * original, and a moved message's row, which keeps its text and id.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mailbox/index.h"
#include "mailbox/index_writes.h"
#include "mailbox/msg.h"

#include "support_index.h"

static void
set_uidvalidity(struct mb_test_index *t, const char *folder, uint32_t uidv)
{
	struct mb_folder_state st = { 0 };
	struct mb_err err = { 0 };

	assert_int_equal(mb_index_folder_get(t->idx, folder, &st, &err), 0);
	st.uidvalidity = uidv;
	assert_int_equal(mb_index_folder_update(t->idx, &st, &err), 0);
	mb_folder_state_release(&st);
}

/* The row id of folder uid (UIDVALIDITY 1), 0 when none is indexed. */
static int64_t
row_id(struct mb_test_index *t, int64_t folder, uint32_t uid)
{
	struct mb_err err = { 0 };
	int64_t id = -1;

	assert_int_equal(mb_index_message_find(t->idx, folder, 1, uid, &id, &err), 0);
	return id;
}

static void
target_names_the_message_and_its_folder_now(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_test_msg m = { .subject = "Hello", .body = "text" };
	struct mb_write_target w;
	struct mb_err err = { 0 };
	int64_t id;

	mb_test_put(t->idx, t->inbox, 5, &m);
	set_uidvalidity(t, "INBOX", 1);
	id = row_id(t, t->inbox, 5);
	assert_true(id > 0);
	assert_int_equal(mb_index_write_target(t->idx, id, &w, &err), 0);
	assert_int_equal(w.folder_id, t->inbox);
	assert_string_equal(w.folder, "INBOX");
	assert_int_equal(w.uidvalidity, 1);
	assert_int_equal(w.uid, 5);
	assert_null(w.keywords);
	assert_int_equal(w.folder_uidvalidity, 1);
	mb_write_target_release(&w);
	/* The folder moved on to a new UIDVALIDITY: the id is stale. */
	set_uidvalidity(t, "INBOX", 2);
	assert_int_equal(mb_index_write_target(t->idx, id, &w, &err), 0);
	assert_int_equal(w.folder_uidvalidity, 2);
	mb_write_target_release(&w);
	assert_int_equal(mb_index_write_target(t->idx, id + 100, &w, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_null(w.folder);
}

static void
dest_by_name_trash_role_and_drafts(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_err err = { 0 };
	int64_t archive, trash, drafts_name, drafts_role, id;
	uint32_t uidv;
	char *name;

	assert_int_equal(mb_index_folder_ensure(t->idx, "Archive", NULL, &archive, &err), 0);
	set_uidvalidity(t, "Archive", 9);
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_NAME, "Archive", &id, &name,
	    &uidv, &err), 0);
	assert_int_equal(id, archive);
	assert_string_equal(name, "Archive");
	assert_int_equal(uidv, 9);
	free(name);
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_NAME, "archive", &id, &name,
	    &uidv, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_null(name);
	mb_err_clear(&err);

	/* No \Trash role: no destination, whatever the names. */
	assert_int_equal(mb_index_folder_ensure(t->idx, "Trash", NULL, &id, &err), 0);
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_TRASH, NULL, &id, &name,
	    &uidv, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	mb_err_clear(&err);
	assert_int_equal(mb_index_folder_ensure(t->idx, "Deleted Items", "\\Trash", &trash, &err),
	    0);
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_TRASH, NULL, &id, &name,
	    &uidv, &err), 0);
	assert_int_equal(id, trash);
	assert_string_equal(name, "Deleted Items");
	free(name);

	/* Drafts: a folder named so will do, one with the role is preferred. */
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_DRAFTS, NULL, &id, &name,
	    &uidv, &err), -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	mb_err_clear(&err);
	assert_int_equal(mb_index_folder_ensure(t->idx, "Drafts", NULL, &drafts_name, &err), 0);
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_DRAFTS, NULL, &id, &name,
	    &uidv, &err), 0);
	assert_int_equal(id, drafts_name);
	free(name);
	assert_int_equal(mb_index_folder_ensure(t->idx, "Entwürfe", "\\Drafts", &drafts_role,
	    &err), 0);
	assert_int_equal(mb_index_write_dest(t->idx, MB_WRITE_DEST_DRAFTS, NULL, &id, &name,
	    &uidv, &err), 0);
	assert_int_equal(id, drafts_role);
	free(name);
}

static void
original_for_a_reply(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_test_msg m = { .subject = "Plans", .body = "text", .message_id = "a@x" };
	struct mb_err err = { 0 };
	char *mid, *refs, *subject;
	int64_t id;

	mb_test_put(t->idx, t->inbox, 1, &m);
	id = row_id(t, t->inbox, 1);
	assert_int_equal(mb_index_write_original(t->idx, id, &mid, &refs, &subject, &err), 0);
	assert_string_equal(mid, "a@x");
	assert_string_equal(subject, "Plans");
	free(mid);
	free(refs);
	free(subject);
	assert_int_equal(mb_index_write_original(t->idx, id + 1, &mid, &refs, &subject, &err),
	    -1);
	assert_int_equal(err.code, MB_E_NOTFOUND);
	assert_null(mid);
	assert_null(subject);
}

static void
moved_row_keeps_its_id_and_loses_deleted(void **state)
{
	struct mb_test_index *t = *state;
	struct mb_test_msg m = { .subject = "Invoice", .body = "quarterly numbers",
	    .flags = MB_FLAG_SEEN | MB_FLAG_DELETED };
	struct mb_write_target w;
	struct mb_err err = { 0 };
	int64_t archive, id, found;

	assert_int_equal(mb_index_folder_ensure(t->idx, "Archive", NULL, &archive, &err), 0);
	mb_test_put(t->idx, t->inbox, 3, &m);
	id = row_id(t, t->inbox, 3);
	assert_int_equal(row_id(t, archive, 40), 0);	/* nothing there yet */
	assert_int_equal(mb_index_message_rekey(t->idx, id, archive, 1, 40, &err), 0);
	assert_int_equal(row_id(t, t->inbox, 3), 0);
	assert_int_equal(mb_index_message_find(t->idx, archive, 1, 40, &found, &err), 0);
	assert_int_equal(found, id);
	assert_int_equal(mb_index_write_target(t->idx, id, &w, &err), 0);
	assert_string_equal(w.folder, "Archive");
	assert_int_equal(w.uid, 40);
	mb_write_target_release(&w);
	assert_int_equal(mb_test_index_int(t, "SELECT flags FROM messages"), MB_FLAG_SEEN);
	assert_int_equal(mb_test_index_int(t, "SELECT count(*) FROM messages_fts "
	    "WHERE messages_fts MATCH 'quarterly'"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		MB_TEST_INDEX(target_names_the_message_and_its_folder_now),
		MB_TEST_INDEX(dest_by_name_trash_role_and_drafts),
		MB_TEST_INDEX(original_for_a_reply),
		MB_TEST_INDEX(moved_row_keeps_its_id_and_loses_deleted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
