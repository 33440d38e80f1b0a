/*
 * Roles by name for servers without SPECIAL-USE (mb_imap_roles_by_name):
 * what trash_message and create_draft aim at on Courier's INBOX.Trash.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mailbox/imap.h"
#include "mailbox/util.h"

static struct mb_imap_folder *
folders(const char *const *spec, size_t n)
{
	struct mb_imap_folder *v = calloc(n, sizeof(*v));

	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		/* "name" or "name=\\Role" (a SPECIAL-USE role) or "!name" (\Noselect) */
		const char *eq = strchr(spec[i], '=');
		const char *s = spec[i] + (spec[i][0] == '!');

		v[i].selectable = spec[i][0] != '!';
		v[i].name = eq ? strndup(s, (size_t)(eq - s)) : strdup(s);
		v[i].role = eq ? strdup(eq + 1) : NULL;
	}
	return v;
}

static const char *
role_of(const struct mb_imap_folder *v, size_t n, const char *name, bool *by_name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0) {
			*by_name = v[i].role_by_name;
			return v[i].role;
		}
	fail_msg("no folder %s", name);
	return NULL;
}

static void
courier_namespace_roles_by_name(void **state)
{
	static const char *const spec[] = {
		"INBOX", "INBOX.Projects.Trash", "INBOX.Deleted Items", "INBOX.trash",
		"INBOX.Sent Items", "INBOX.Sent Messages", "INBOX.DRAFTS", "INBOX.Spam",
		"Junk", "!INBOX.Archive",
	};
	size_t n = MB_ARRAY_LEN(spec);
	struct mb_imap_folder *v = folders(spec, n);
	bool by;

	(void)state;
	mb_imap_roles_by_name(v, n, "INBOX.");
	/* Trash is preferred over Deleted Items, case-insensitive; one per role. */
	assert_string_equal(role_of(v, n, "INBOX.trash", &by), "\\Trash");
	assert_true(by);
	assert_null(role_of(v, n, "INBOX.Deleted Items", &by));
	assert_null(role_of(v, n, "INBOX.Projects.Trash", &by));	/* not at the top */
	assert_string_equal(role_of(v, n, "INBOX.Sent Items", &by), "\\Sent");
	assert_null(role_of(v, n, "INBOX.Sent Messages", &by));
	assert_string_equal(role_of(v, n, "INBOX.DRAFTS", &by), "\\Drafts");
	assert_string_equal(role_of(v, n, "INBOX.Spam", &by), "\\Junk");
	assert_null(role_of(v, n, "Junk", &by));		/* outside the namespace */
	assert_null(role_of(v, n, "INBOX.Archive", &by));	/* not selectable */
	assert_null(role_of(v, n, "INBOX", &by));
	mb_imap_folders_free(&v, n);
}

static void
special_use_wins(void **state)
{
	static const char *const spec[] = {
		"INBOX", "Trash", "Bin=\\Trash", "Sent=\\Archive", "Sent Items", "Drafts",
	};
	size_t n = MB_ARRAY_LEN(spec);
	struct mb_imap_folder *v = folders(spec, n);
	bool by;

	(void)state;
	mb_imap_roles_by_name(v, n, "");
	assert_null(role_of(v, n, "Trash", &by));		/* Bin has \Trash already */
	assert_string_equal(role_of(v, n, "Bin", &by), "\\Trash");
	assert_false(by);
	/* Sent keeps its SPECIAL-USE role; the next Sent name gets \Sent. */
	assert_string_equal(role_of(v, n, "Sent", &by), "\\Archive");
	assert_false(by);
	assert_string_equal(role_of(v, n, "Sent Items", &by), "\\Sent");
	assert_true(by);
	assert_string_equal(role_of(v, n, "Drafts", &by), "\\Drafts");
	mb_imap_folders_free(&v, n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(courier_namespace_roles_by_name),
		cmocka_unit_test(special_use_wins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
