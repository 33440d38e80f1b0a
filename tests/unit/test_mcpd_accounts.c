/*
 * Several accounts in one mcpd (mcpd/accounts.c, docs/mcpd.md "Accounts"):
 * the settings (good ones, and bad ones refused naming the key), the id
 * format at its edges, who may read and write what, and, over two real
 * indexes, that a caller of one account finds nothing of the other by id,
 * resource, account: or cursor, while a caller of both gets one merged search.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mailbox/index.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"
#include "mcpd.h"
#include "support_env.h"
#include "support_index.h"

static int
load(const char *const *env, struct mcp_config *c, struct mb_err *err)
{
	mb_test_env_use(env);
	return mcp_config_load(c, mb_test_env_lookup, err);
}

/* ---- settings */

static void
without_accounts_the_one_index_is_default_number_0(void **state)
{
	static const char *const env[] = { "MCP_INDEX=/srv/a/index.db", "DATA_DIR=/srv/a",
	    "SYNCD_SOCKET=/run/x.sock", NULL };
	struct mcp_config c;
	struct mb_err err = { 0 };

	(void)state;
	assert_int_equal(load(env, &c, &err), 0);
	assert_int_equal(c.n_accounts, 1);
	assert_string_equal(c.accounts[0].name, "default");
	assert_int_equal(c.accounts[0].number, 0);
	assert_string_equal(c.accounts[0].index_path, "/srv/a/index.db");
	assert_string_equal(c.accounts[0].data_dir, "/srv/a");
	assert_string_equal(c.accounts[0].syncd_socket, "/run/x.sock");
	assert_string_equal(c.accounts[0].tag, "");	/* answers read as before */
	mcp_config_release(&c);
}

static void
accounts_are_read_with_their_keys(void **state)
{
	static const char *const env[] = { "ACCOUNTS= work , home_2", "ACCOUNT_WORK_NUMBER=0",
	    "ACCOUNT_WORK_INDEX=/var/lib/imap-mcp/work/index.db",
	    "ACCOUNT_WORK_SYNCD_SOCKET=/run/imap-mcp/work/control.sock",
	    "ACCOUNT_WORK_READERS=alice, bob", "ACCOUNT_WORK_WRITERS=alice",
	    "ACCOUNT_HOME_2_NUMBER=9006", "ACCOUNT_HOME_2_INDEX=/srv/home/index.db",
	    "ACCOUNT_HOME_2_READERS=*", NULL };
	struct mcp_config c;
	struct mb_err err = { 0 };

	(void)state;
	assert_int_equal(load(env, &c, &err), 0);
	assert_int_equal(c.n_accounts, 2);
	assert_string_equal(c.accounts[0].name, "work");
	assert_string_equal(c.accounts[0].data_dir, "/var/lib/imap-mcp/work");
	assert_string_equal(c.accounts[0].readers[1], "bob");
	assert_true(c.accounts[0].writers_set);
	assert_string_equal(c.accounts[0].tag, " (account work)");
	assert_string_equal(c.accounts[1].name, "home_2");
	assert_int_equal(c.accounts[1].number, 9006);
	assert_null(c.accounts[1].syncd_socket);	/* read-only */
	assert_null(c.accounts[1].readers);		/* '*': everyone */
	mcp_config_release(&c);
}

static void
bad_account_settings_name_the_key(void **state)
{
	static const struct {
		const char	*env[6];
		const char	*says;
	} bad[] = {
		{ { "ACCOUNTS=Work", NULL }, "ACCOUNTS: 'Work' is not an account name" },
		{ { "ACCOUNTS=a,,a", NULL }, "'a' is named twice" },
		{ { "ACCOUNTS= , ", NULL }, "ACCOUNTS: name 1 to" },
		{ { "ACCOUNTS=abcdefghijklmnopqrstuvwxyz0123456", NULL }, "not an account name" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_INDEX=/x/i.db", NULL }, "ACCOUNT_A_NUMBER: required" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=9007", "ACCOUNT_A_INDEX=/x/i.db", NULL },
		    "ACCOUNT_A_NUMBER: must be a whole number from 0 to 9006" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=-1", "ACCOUNT_A_INDEX=/x/i.db", NULL },
		    "ACCOUNT_A_NUMBER" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=1x", "ACCOUNT_A_INDEX=/x/i.db", NULL },
		    "ACCOUNT_A_NUMBER" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=1", NULL }, "ACCOUNT_A_INDEX: required" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=1", "ACCOUNT_A_INDEX=x/i.db", NULL },
		    "ACCOUNT_A_INDEX: must be an absolute path" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=1", "ACCOUNT_A_INDEX=/x/i.db",
		    "ACCOUNT_A_SYNCD_SOCKET=run/s", NULL }, "ACCOUNT_A_SYNCD_SOCKET" },
		{ { "ACCOUNTS=a", "ACCOUNT_A_NUMBER=1", "ACCOUNT_A_INDEX=/x/i.db",
		    "ACCOUNT_A_READERS= , ", NULL }, "ACCOUNT_A_READERS: names no subject" },
		{ { "ACCOUNTS=a,b", "ACCOUNT_A_NUMBER=1", "ACCOUNT_A_INDEX=/x/i.db",
		    "ACCOUNT_B_NUMBER=1", "ACCOUNT_B_INDEX=/y/i.db", NULL },
		    "ACCOUNT_B_NUMBER: 1 is account a's number too" },
	};
	struct mcp_config c;

	(void)state;
	for (size_t i = 0; i < MB_ARRAY_LEN(bad); i++) {
		struct mb_err err = { 0 };

		assert_int_equal(load(bad[i].env, &c, &err), -1);
		assert_int_equal(err.code, MB_E_CONFIG);
		if (strstr(err.msg, bad[i].says) == NULL)
			fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, bad[i].says);
	}
}

/* ---- ids */

static void
ids_carry_the_account_number(void **state)
{
	struct mcp_account a0 = { .number = 0 }, a9006 = { .number = 9006 };
	unsigned number;
	int64_t local;

	(void)state;
	assert_int_equal(mcp_gid(&a0, 42), 42);	/* account 0: the index's own ids */
	assert_int_equal(mcp_gid(&a9006, 1), INT64_C(9006000000000001));
	/* the largest id still an exact JSON number */
	assert_true(mcp_gid(&a9006, MCP_ACCOUNT_ID_BASE - 1) < (INT64_C(1) << 53));
	assert_int_equal(mcp_id_split(42, &number, &local), 0);
	assert_int_equal(number, 0);
	assert_int_equal(local, 42);
	assert_int_equal(mcp_id_split(INT64_C(9006999999999999), &number, &local), 0);
	assert_int_equal(number, 9006);
	assert_int_equal(local, MCP_ACCOUNT_ID_BASE - 1);
	assert_int_equal(mcp_id_split(INT64_C(3000000000007), &number, &local), 0);
	assert_int_equal(number, 3);
	assert_int_equal(local, 7);
	/* not an id: none, negative, an account's local 0, past the last account */
	assert_int_equal(mcp_id_split(0, &number, &local), -1);
	assert_int_equal(mcp_id_split(-5, &number, &local), -1);
	assert_int_equal(mcp_id_split(MCP_ACCOUNT_ID_BASE, &number, &local), -1);
	assert_int_equal(mcp_id_split(INT64_C(9007000000000001), &number, &local), -1);
	assert_int_equal(mcp_id_split(INT64_MAX, &number, &local), -1);
}

/* ---- access */

static const char *const two[] = { "ACCOUNTS=work,home", "ACCOUNT_WORK_NUMBER=0",
    "ACCOUNT_WORK_INDEX=/w/index.db", "ACCOUNT_WORK_SYNCD_SOCKET=/w/s",
    "ACCOUNT_WORK_READERS=alice,bob", "ACCOUNT_WORK_WRITERS=alice",
    "ACCOUNT_HOME_NUMBER=7", "ACCOUNT_HOME_INDEX=/h/index.db", "ACCOUNT_HOME_READERS=bob",
    NULL };

static void
readers_and_writers_decide_per_subject(void **state)
{
	const struct mcp_caller alice = { .owner = "alice", .may_write = true };
	const struct mcp_caller alice_ro = { .owner = "alice", .may_write = false };
	const struct mcp_caller bob = { .owner = "bob", .may_write = true };
	const struct mcp_caller eve = { .owner = "eve", .may_write = true };
	const struct mcp_caller local = { .owner = NULL, .may_write = true };
	struct mcp_config c;
	struct mb_err err = { 0 };
	uint64_t set;
	int64_t id;

	(void)state;
	assert_int_equal(load(two, &c, &err), 0);
	assert_int_equal(mcp_may_read(&c, &alice), 1);
	assert_int_equal(mcp_may_write(&c, &alice), 1);
	assert_int_equal(mcp_may_write(&c, &alice_ro), 0);	/* the token lacks the scope */
	assert_int_equal(mcp_may_read(&c, &bob), 3);
	assert_int_equal(mcp_may_write(&c, &bob), 2);	/* work: WRITERS alice; home: READERS */
	assert_int_equal(mcp_may_read(&c, &eve), 0);
	assert_int_equal(mcp_may_read(&c, &local), 3);	/* MCP_AUTH=none: every account */
	assert_int_equal(mcp_may_write(&c, &local), 3);
	/* an id of an account the caller may not read is no id at all */
	assert_int_equal(mcp_account_of(&c, &alice, 5, &id), 0);
	assert_int_equal(id, 5);
	assert_int_equal(mcp_account_of(&c, &alice, INT64_C(7000000000005), &id), -1);
	assert_int_equal(mcp_account_of(&c, &bob, INT64_C(7000000000005), &id), 1);
	assert_int_equal(mcp_account_of(&c, &bob, INT64_C(8000000000005), &id), -1);
	/* account: names, and the account argument */
	assert_int_equal(mcp_accounts_named(&c, &bob, "home", &set, &err), 0);
	assert_int_equal(set, 2);
	assert_int_equal(mcp_accounts_named(&c, &bob, NULL, &set, &err), 0);
	assert_int_equal(set, 3);
	assert_int_equal(mcp_accounts_named(&c, &alice, "work home", &set, &err), -1);
	assert_non_null(strstr(err.msg, "no account named \"home\""));
	assert_non_null(strstr(err.msg, "its accounts: work"));
	c.read_only = true;
	assert_int_equal(mcp_may_write(&c, &bob), 0);
	mcp_config_release(&c);
}

/* ---- two real indexes behind one server */

struct two_fixture {
	char		 dir[64];
	char		 env_work[128], env_home[128];
	const char	*env[12];
	struct mcp_config conf;
	struct mcp_server srv;
};

/* An index at path with n messages of that subject and body, a minute apart. */
static void
add_mail(const char *path, const char *subject, const char *body, int n)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	int64_t folder;

	if (mb_index_open(path, MB_INDEX_RW, &idx, &err) == -1 ||
	    mb_index_folder_ensure(idx, "INBOX", NULL, &folder, &err) == -1 ||
	    mb_index_begin(idx, &err) == -1)
		fail_msg("index: %s", err.msg);
	mb_test_folder_examined(idx, "INBOX");
	for (int i = 0; i < n; i++) {
		struct mb_test_msg t = { .subject = subject, .body = body,
		    .date = 1700000000 + i * 60 };

		mb_test_put(idx, folder, (uint32_t)i + 1, &t);
	}
	if (mb_index_commit(idx, &err) == -1)
		fail_msg("index: %s", err.msg);
	mb_index_close(&idx);
}

static int
two_setup(void **state)
{
	struct two_fixture *f = mb_xcalloc(1, sizeof(*f));
	char work[96], home[96];
	struct mb_err err = { 0 };
	size_t k = 0;

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_mcpd_accounts.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(work, sizeof(work), "%s/work.db", f->dir);
	snprintf(home, sizeof(home), "%s/home.db", f->dir);
	add_mail(work, "budget review", "the quarterly budget for work", 30);
	add_mail(home, "budget holiday", "the budget for the summer holiday", 30);
	snprintf(f->env_work, sizeof(f->env_work), "ACCOUNT_WORK_INDEX=%s", work);
	snprintf(f->env_home, sizeof(f->env_home), "ACCOUNT_HOME_INDEX=%s", home);
	f->env[k++] = "ACCOUNTS=work,home";
	f->env[k++] = "ACCOUNT_WORK_NUMBER=0";
	f->env[k++] = f->env_work;
	f->env[k++] = "ACCOUNT_WORK_READERS=alice,bob";
	f->env[k++] = "ACCOUNT_HOME_NUMBER=3";
	f->env[k++] = f->env_home;
	f->env[k++] = "ACCOUNT_HOME_READERS=bob";
	f->env[k++] = "MCP_RATE_LIMIT=0";
	f->env[k] = NULL;
	assert_int_equal(load(f->env, &f->conf, &err), 0);
	assert_int_equal(mcp_server_init(&f->srv, &f->conf, &err), 0);
	*state = f;
	return 0;
}

static int
two_teardown(void **state)
{
	struct two_fixture *f = *state;

	mcp_server_close_index(&f->srv);
	mcp_server_release(&f->srv);
	mcp_config_release(&f->conf);
	mb_test_rmtree(f->dir);
	free(f);
	return 0;
}

/* Call a tool; the structuredContent (new reference), and *is_error_r. */
static json_t *
call(struct two_fixture *f, const char *owner, const char *tool, json_t *args, bool *error_r,
    char **text_r)
{
	const struct mcp_caller who = { .owner = owner, .may_write = true };
	struct mb_err err = { 0 };
	json_t *r = mcp_tools_call(&f->srv, tool, args, &who, &err), *d;

	assert_non_null(r);
	*error_r = json_is_true(json_object_get(r, "isError"));
	if (text_r != NULL)
		*text_r = mb_xstrdup(json_string_value(json_object_get(json_array_get(
		    json_object_get(r, "content"), 0), "text")));
	d = json_incref(json_object_get(r, "structuredContent"));
	json_decref(r);
	json_decref(args);
	return d;
}

static void
a_caller_of_both_gets_one_ranking(void **state)
{
	struct two_fixture *f = *state;
	json_t *d, *h;
	size_t i, work = 0, home = 0;
	bool error;
	char *cursor;

	d = call(f, "bob", "search_messages", json_pack("{s:s, s:i}", "query", "budget",
	    "limit", 50), &error, NULL);
	assert_false(error);
	assert_int_equal(json_integer_value(json_object_get(d, "total")), 60);
	json_array_foreach(json_object_get(d, "results"), i, h) {
		const char *acc = json_string_value(json_object_get(h, "account"));
		json_int_t id = json_integer_value(json_object_get(h, "id"));

		if (strcmp(acc, "work") == 0) {
			work++;
			assert_true(id < MCP_ACCOUNT_ID_BASE);
		} else {
			home++;
			assert_string_equal(acc, "home");
			assert_true(id > 3 * MCP_ACCOUNT_ID_BASE && id < 4 * MCP_ACCOUNT_ID_BASE);
		}
	}
	assert_true(work > 0 && home > 0 && work + home == 50);
	cursor = mb_xstrdup(json_string_value(json_object_get(d, "next_cursor")));
	json_decref(d);
	/* the next page holds the other ten, none seen before */
	d = call(f, "bob", "search_messages", json_pack("{s:s, s:i, s:s}", "query", "budget",
	    "limit", 50, "cursor", cursor), &error, NULL);
	assert_false(error);
	assert_int_equal(json_array_size(json_object_get(d, "results")), 10);
	assert_null(json_object_get(d, "next_cursor"));
	json_decref(d);
	/* alice may not read home: bob's cursor is refused to her */
	d = call(f, "alice", "search_messages", json_pack("{s:s, s:i, s:s}", "query", "budget",
	    "limit", 50, "cursor", cursor), &error, NULL);
	assert_true(error);
	json_decref(d);
	free(cursor);
	/* account: narrows to one */
	d = call(f, "bob", "search_messages", json_pack("{s:s}", "query", "budget account:home"),
	    &error, NULL);
	assert_int_equal(json_integer_value(json_object_get(d, "total")), 30);
	json_decref(d);
}

static void
a_caller_of_one_finds_nothing_of_the_other(void **state)
{
	struct two_fixture *f = *state;
	json_t *d, *h, *params, *r;
	json_int_t home_id, home_thread;
	const struct mcp_caller alice = { .owner = "alice" };
	struct mb_err err = { 0 };
	int code = 0;
	size_t at;
	const char *msg = NULL;
	char *text, uri[64];
	bool error;

	d = call(f, "bob", "search_messages", json_pack("{s:s}", "query", "holiday"), &error,
	    NULL);
	h = json_array_get(json_object_get(d, "results"), 0);
	home_id = json_integer_value(json_object_get(h, "id"));
	home_thread = json_integer_value(json_object_get(h, "thread_id"));
	json_decref(d);
	assert_true(home_id > 3 * MCP_ACCOUNT_ID_BASE);
	/* bob reads it */
	d = call(f, "bob", "get_message", json_pack("{s:I}", "id", home_id), &error, NULL);
	assert_false(error);
	assert_string_equal(json_string_value(json_object_get(d, "account")), "home");
	json_decref(d);
	/* alice: as if it did not exist, by message, thread, search and resource */
	d = call(f, "alice", "get_message", json_pack("{s:I}", "id", home_id), &error, &text);
	assert_true(error);
	assert_non_null(strstr(text, "no message with id"));
	free(text);
	json_decref(d);
	d = call(f, "alice", "get_message", json_pack("{s:I}", "id", INT64_C(5000000000001)),
	    &error, &text);	/* an account that is not configured: the same words */
	assert_true(error);
	assert_non_null(strstr(text, "no message with id"));
	free(text);
	json_decref(d);
	d = call(f, "alice", "get_thread", json_pack("{s:I}", "id", home_thread), &error, NULL);
	assert_true(error);
	json_decref(d);
	d = call(f, "alice", "search_messages", json_pack("{s:s}", "query", "holiday"), &error,
	    NULL);
	assert_false(error);
	assert_int_equal(json_integer_value(json_object_get(d, "total")), 0);
	json_decref(d);
	d = call(f, "alice", "search_messages", json_pack("{s:s}", "query", "budget account:home"),
	    &error, &text);
	assert_true(error);
	assert_non_null(strstr(text, "its accounts: work"));
	free(text);
	json_decref(d);
	snprintf(uri, sizeof(uri), "thread:%lld budget", (long long)home_thread);
	d = call(f, "alice", "search_messages", json_pack("{s:s}", "query", uri), &error, NULL);
	assert_int_equal(json_integer_value(json_object_get(d, "total")), 0);
	json_decref(d);
	/* count_messages routes thread:N the same way */
	d = call(f, "alice", "count_messages", json_pack("{s:s, s:s}", "query", uri, "group_by",
	    "folder"), &error, NULL);
	assert_false(error);
	assert_int_equal(json_integer_value(json_object_get(d, "total")), 0);
	json_decref(d);
	d = call(f, "bob", "count_messages", json_pack("{s:s, s:s}", "query", uri, "group_by",
	    "folder"), &error, NULL);
	assert_int_equal(json_integer_value(json_object_get(d, "total")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(d, "results"), 0), "account")), "home");
	json_decref(d);
	snprintf(uri, sizeof(uri), "mail://message/%lld", (long long)home_id);
	params = json_pack("{s:s}", "uri", uri);
	r = mcp_resources_read(&f->srv, &alice, params, &code, &msg);
	assert_null(r);
	assert_int_equal(code, -32002);
	json_decref(params);
	/* and resources/list and list_accounts show only work */
	r = mcp_resources_list(&f->srv, &alice, NULL, &code, &msg);
	assert_non_null(r);
	json_array_foreach(json_object_get(r, "resources"), at, h)
		assert_true(strtoll(json_string_value(json_object_get(h, "uri")) + 15, NULL, 10) <
		    MCP_ACCOUNT_ID_BASE);
	json_decref(r);
	d = call(f, "alice", "list_accounts", NULL, &error, NULL);
	assert_int_equal(json_array_size(json_object_get(d, "accounts")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(d, "accounts"), 0), "name")), "work");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(d, "accounts"), 0), "messages")), 30);
	json_decref(d);
	(void)err;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(without_accounts_the_one_index_is_default_number_0),
		cmocka_unit_test(accounts_are_read_with_their_keys),
		cmocka_unit_test(bad_account_settings_name_the_key),
		cmocka_unit_test(ids_carry_the_account_number),
		cmocka_unit_test(readers_and_writers_decide_per_subject),
		cmocka_unit_test_setup_teardown(a_caller_of_both_gets_one_ranking, two_setup,
		    two_teardown),
		cmocka_unit_test_setup_teardown(a_caller_of_one_finds_nothing_of_the_other,
		    two_setup, two_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
