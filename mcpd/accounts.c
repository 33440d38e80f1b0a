/*
 * Several accounts in one mcpd (docs/mcpd.md, "Accounts"): the account
 * table from the settings (ACCOUNTS and ACCOUNT_<NAME>_*; one account named
 * "default", number 0, without them), the id format that keeps the ids of
 * different indexes apart, and who may read and write which account.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/util.h"
#include "mcpd.h"

/* ---- the settings */

/* "ACCOUNT_WORK_INDEX" for ("work", "INDEX"). */
static void
account_key(char *out, size_t size, const char *name, const char *what)
{
	size_t n = (size_t)snprintf(out, size, "ACCOUNT_%s_%s", name, what);

	for (size_t i = 8; i < n && i < size; i++)
		out[i] = (char)toupper((unsigned char)out[i]);
}

/* lookup(key), with an empty value counting as unset (as mb_conf_load() does). */
static const char *
setting(const char *(*lookup)(const char *), const char *key)
{
	const char *v = lookup(key);

	return v != NULL && *v != '\0' ? v : NULL;
}

bool
mcp_account_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > MCP_ACCOUNT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* An absolute path setting into *out (owned); -1 + err naming key. */
static int
path_setting(const char *(*lookup)(const char *), const char *key, bool required,
    char **out, struct mb_err *err)
{
	const char *v = setting(lookup, key);

	*out = NULL;
	if (v == NULL)
		return required ? mb_err_set(err, MB_E_CONFIG, "%s: required (an absolute path)",
		    key) : 0;
	if (v[0] != '/')
		return mb_err_set(err, MB_E_CONFIG, "%s: must be an absolute path", key);
	*out = mb_xstrdup(v);
	return 0;
}

/* The account number setting (0..MCP_ACCOUNT_NUMBER_MAX, decimal digits only). */
static int
number_setting(const char *(*lookup)(const char *), const char *key, unsigned *out,
    struct mb_err *err)
{
	const char *v = setting(lookup, key);
	unsigned long n = 0;
	size_t i;

	if (v == NULL)
		return mb_err_set(err, MB_E_CONFIG, "%s: required (the account's id prefix, "
		    "0..%d, never changed once ids were handed out)", key, MCP_ACCOUNT_NUMBER_MAX);
	for (i = 0; v[i] != '\0' && i < 5 && isdigit((unsigned char)v[i]); i++)
		n = n * 10 + (unsigned long)(v[i] - '0');
	if (i == 0 || v[i] != '\0' || n > MCP_ACCOUNT_NUMBER_MAX)
		return mb_err_set(err, MB_E_CONFIG, "%s: must be a whole number from 0 to %d, "
		    "got '%.40s'", key, MCP_ACCOUNT_NUMBER_MAX, v);
	*out = (unsigned)n;
	return 0;
}

/*
 * A subject list setting (comma-separated) into *out: NULL for unset or a
 * "*" among them (everyone), else an owned NULL-terminated array.
 */
static int
subjects_setting(const char *(*lookup)(const char *), const char *key, bool *set_r,
    char ***out, struct mb_err *err)
{
	const char *v = setting(lookup, key);
	char **list;

	*out = NULL;
	*set_r = v != NULL;
	if (v == NULL)
		return 0;
	list = mcp_split_list(v);
	if (list[0] == NULL) {
		mcp_free_list(&list);
		return mb_err_set(err, MB_E_CONFIG, "%s: names no subject (unset it, or '*' for "
		    "every authenticated caller)", key);
	}
	for (size_t i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], "*") == 0) {
			mcp_free_list(&list);
			return 0;
		}
	*out = list;
	return 0;
}

/* The directory of path (an absolute file path), owned. */
static char *
dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash == path ? mb_xstrdup("/") : mb_xstrndup(path, (size_t)(slash - path));
}

/* Account a (name set) from its ACCOUNT_<NAME>_* settings; -1 + err. */
static int
account_load(struct mcp_account *a, const char *(*lookup)(const char *), struct mb_err *err)
{
	char key[64];
	bool set;

	account_key(key, sizeof(key), a->name, "NUMBER");
	if (number_setting(lookup, key, &a->number, err) == -1)
		return -1;
	account_key(key, sizeof(key), a->name, "INDEX");
	if (path_setting(lookup, key, true, &a->index_path, err) == -1)
		return -1;
	a->data_dir = dir_of(a->index_path);
	account_key(key, sizeof(key), a->name, "SYNCD_SOCKET");
	if (path_setting(lookup, key, false, &a->syncd_socket, err) == -1)
		return -1;
	account_key(key, sizeof(key), a->name, "READERS");
	if (subjects_setting(lookup, key, &set, &a->readers, err) == -1)
		return -1;
	account_key(key, sizeof(key), a->name, "WRITERS");
	if (subjects_setting(lookup, key, &a->writers_set, &a->writers, err) == -1)
		return -1;
	return 0;
}

void
mcp_accounts_default(struct mcp_config *c)
{
	struct mcp_account *a;

	c->accounts = a = mb_xcalloc(1, sizeof(*a));
	c->n_accounts = 1;
	memcpy(a->name, "default", sizeof("default"));
	a->index_path = c->index_path ? mb_xstrdup(c->index_path) : NULL;
	a->data_dir = c->data_dir ? mb_xstrdup(c->data_dir) : NULL;
	a->syncd_socket = c->syncd_socket ? mb_xstrdup(c->syncd_socket) : NULL;
}

int
mcp_accounts_load(struct mcp_config *c, const char *(*lookup)(const char *),
    struct mb_err *err)
{
	const char *v = setting(lookup, "ACCOUNTS");
	char **names;
	size_t n;

	if (v == NULL) {
		mcp_accounts_default(c);
		return 0;
	}
	names = mcp_split_list(v);
	for (n = 0; names[n] != NULL; n++)
		;
	if (n == 0 || n > MCP_ACCOUNTS_MAX) {
		mcp_free_list(&names);
		return mb_err_set(err, MB_E_CONFIG, "ACCOUNTS: name 1 to %d accounts, "
		    "comma-separated", MCP_ACCOUNTS_MAX);
	}
	/* the names first, so that a misspelt list is said before its keys */
	for (size_t i = 0; i < n && err->code == MB_OK; i++) {
		if (!mcp_account_name_ok(names[i], strlen(names[i])))
			mb_err_set(err, MB_E_CONFIG, "ACCOUNTS: '%.40s' is not an account name "
			    "(1-%d of a-z, 0-9 and _)", names[i], MCP_ACCOUNT_NAME_MAX);
		for (size_t k = 0; k < i && err->code == MB_OK; k++)
			if (strcmp(names[k], names[i]) == 0)
				mb_err_set(err, MB_E_CONFIG, "ACCOUNTS: '%s' is named twice", names[i]);
	}
	c->accounts = mb_xcalloc(n, sizeof(*c->accounts));
	for (size_t i = 0; i < n && err->code == MB_OK; i++) {
		struct mcp_account *a = &c->accounts[i];

		memcpy(a->name, names[i], strlen(names[i]) + 1);
		c->n_accounts = i + 1;
		if (account_load(a, lookup, err) == -1)
			break;
		for (size_t k = 0; k < i; k++)
			if (c->accounts[k].number == a->number) {
				char key[64];

				account_key(key, sizeof(key), a->name, "NUMBER");
				mb_err_set(err, MB_E_CONFIG, "%s: %u is account %s's number too; each "
				    "account needs its own", key, a->number, c->accounts[k].name);
			}
	}
	mcp_free_list(&names);
	for (size_t i = 0; n > 1 && i < c->n_accounts; i++)
		snprintf(c->accounts[i].tag, sizeof(c->accounts[i].tag), " (account %s)",
		    c->accounts[i].name);
	return err->code == MB_OK ? 0 : -1;
}

void
mcp_accounts_release(struct mcp_config *c)
{
	for (size_t i = 0; i < c->n_accounts; i++) {
		struct mcp_account *a = &c->accounts[i];

		free(a->index_path);
		free(a->data_dir);
		free(a->syncd_socket);
		mcp_free_list(&a->readers);
		mcp_free_list(&a->writers);
	}
	free(c->accounts);
	c->accounts = NULL;
	c->n_accounts = 0;
}

/* ---- ids */

int64_t
mcp_gid(const struct mcp_account *a, int64_t local)
{
	if (MB_NEVER(local < 0 || local >= MCP_ACCOUNT_ID_BASE))
		return 0;	/* an index past 10^12 rows: shown as no id, never as another's */
	return (int64_t)a->number * MCP_ACCOUNT_ID_BASE + local;
}

int
mcp_id_split(int64_t gid, unsigned *number_r, int64_t *local_r)
{
	if (gid <= 0 || gid / MCP_ACCOUNT_ID_BASE > MCP_ACCOUNT_NUMBER_MAX ||
	    gid % MCP_ACCOUNT_ID_BASE == 0)
		return -1;
	*number_r = (unsigned)(gid / MCP_ACCOUNT_ID_BASE);
	*local_r = gid % MCP_ACCOUNT_ID_BASE;
	return 0;
}

int
mcp_account_of(const struct mcp_config *c, const struct mcp_caller *who, int64_t gid,
    int64_t *local_r)
{
	unsigned number;

	if (mcp_id_split(gid, &number, local_r) == -1)
		return -1;
	for (size_t i = 0; i < c->n_accounts; i++)
		if (c->accounts[i].number == number)
			return (mcp_may_read(c, who) >> i & 1) ? (int)i : -1;
	return -1;
}

/* ---- access */

static bool
listed(char *const *list, const char *subject)
{
	if (list == NULL)
		return true;	/* unset or '*': every authenticated caller */
	for (size_t i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], subject) == 0)
			return true;
	return false;
}

uint64_t
mcp_may_read(const struct mcp_config *c, const struct mcp_caller *who)
{
	uint64_t set = 0;

	for (size_t i = 0; i < c->n_accounts; i++)
		if (who->owner == NULL || listed(c->accounts[i].readers, who->owner))
			set |= UINT64_C(1) << i;
	return set;
}

uint64_t
mcp_may_write(const struct mcp_config *c, const struct mcp_caller *who)
{
	uint64_t set = 0, readable = mcp_may_read(c, who);

	if (c->read_only || !who->may_write)
		return 0;
	for (size_t i = 0; i < c->n_accounts; i++) {
		const struct mcp_account *a = &c->accounts[i];

		/* writing takes reading: an id the caller cannot read does not exist for it */
		if ((readable >> i & 1) && (who->owner == NULL ||
		    listed(a->writers_set ? a->writers : a->readers, who->owner)))
			set |= UINT64_C(1) << i;
	}
	return set;
}

void
mcp_accounts_text(const struct mcp_config *c, uint64_t set, struct mb_buf *b)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n_accounts; i++)
		if (set >> i & 1)
			mb_buf_addf(b, "%s%s", n++ ? ", " : "", c->accounts[i].name);
	if (n == 0)
		mb_buf_adds(b, "none");
}

/* "no account named ...; this caller's accounts: a, b" into err. */
static int
not_yours(const struct mcp_config *c, uint64_t readable, const char *name,
    struct mb_err *err)
{
	struct mb_buf b = MB_BUF_INIT(4096);

	mcp_accounts_text(c, readable, &b);
	mb_err_set(err, MB_E_INVALID, "no account named \"%.40s\" is open to this caller; "
	    "its accounts: %s (list_accounts)", name, b.data);
	mb_buf_release(&b);
	return -1;
}

int
mcp_accounts_named(const struct mcp_config *c, const struct mcp_caller *who,
    const char *names, uint64_t *set_r, struct mb_err *err)
{
	uint64_t readable = mcp_may_read(c, who);
	const char *p = names;

	*set_r = readable;
	if (names == NULL)
		return 0;
	*set_r = 0;
	while (*p != '\0') {
		size_t len = strcspn(p, " ,");
		size_t i;

		for (i = 0; i < c->n_accounts; i++)
			if (strlen(c->accounts[i].name) == len &&
			    memcmp(c->accounts[i].name, p, len) == 0)
				break;
		if (i == c->n_accounts || !(readable >> i & 1)) {
			char name[MCP_ACCOUNT_NAME_MAX + 1];

			snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len :
			    sizeof(name) - 1), p);
			return not_yours(c, readable, name, err);
		}
		*set_r |= UINT64_C(1) << i;
		p += len;
		p += strspn(p, " ,");
	}
	return 0;
}

int
mcp_account_arg(const struct mcp_config *c, const struct mcp_caller *who, json_t *args,
    uint64_t *set_r, struct mb_err *err)
{
	const char *name = mcp_arg_str(args, "account");

	if (name != NULL && *name == '\0')
		name = NULL;
	return mcp_accounts_named(c, who, name, set_r, err);
}

/* ---- routing */

const struct mcp_account *
mcp_id_route(struct mcp_server *srv, const struct mcp_caller *who, int64_t gid,
    int64_t *local_r, struct mb_index **idx_r, struct mb_err *err)
{
	int i = mcp_account_of(srv->conf, who, gid, local_r);

	*idx_r = NULL;
	if (i < 0) {
		mb_err_set(err, MB_E_NOTFOUND, "not found");
		return NULL;
	}
	if ((*idx_r = mcp_account_index(srv, (size_t)i, err)) == NULL) {
		mcp_index_unavailable(err);
		return NULL;
	}
	return &srv->conf->accounts[i];
}

int
mcp_each_account(struct mcp_server *srv, uint64_t set,
    int (*fn)(struct mcp_server *, const struct mcp_account *, struct mb_index *, void *,
    struct mb_err *), void *ctx, struct mb_err *err)
{
	for (size_t i = 0; i < srv->conf->n_accounts; i++) {
		struct mb_index *idx;

		if (!(set >> i & 1))
			continue;
		if ((idx = mcp_account_index(srv, i, err)) == NULL) {
			mcp_index_unavailable(err);
			return -1;
		}
		if (fn(srv, &srv->conf->accounts[i], idx, ctx, err) == -1)
			return -1;
	}
	return 0;
}
