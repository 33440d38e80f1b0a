/*
 * The account's own addresses (include/mailbox/account.h).  One small
 * table: syncd replaces it at start, mcpd reads it per request (it is a
 * handful of rows, and re-reading keeps a restarted syncd's settings live).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/account.h"
#include "mailbox/index.h"
#include "mailbox/util.h"

#include "index-private.h"

char *
mb_account_address_of(const char *value)
{
	const char *a, *b, *lt;
	char *out;

	if (value == NULL)
		return NULL;
	a = value;
	b = value + strlen(value);
	/* "Name <addr>": the last <...> is the address (a name may hold '<'). */
	if ((lt = strrchr(value, '<')) != NULL && strchr(lt, '>') != NULL) {
		a = lt + 1;
		b = strchr(lt, '>');
	}
	while (a < b && isspace((unsigned char)*a))
		a++;
	while (b > a && isspace((unsigned char)b[-1]))
		b--;
	if (memchr(a, '@', (size_t)(b - a)) == NULL)
		return NULL;
	out = mb_xstrndup(a, (size_t)(b - a));
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return out;
}

/*
 * The set as one string (sorted, space-separated; "" when empty) into
 * *set_r, owned by the caller: two of them compare the set before and
 * after a change.
 */
static int
address_set(struct mb_index *idx, char **set_r, struct mb_err *err)
{
	static const char sql[] = "SELECT coalesce(group_concat(address, ' '), '') FROM "
	    "(SELECT address FROM account_addresses ORDER BY address)";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	int rc;

	*set_r = NULL;
	if (st == NULL)
		return -1;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		*set_r = idx_col_text(st, 0, NULL);
	idx_stmt_done(st);
	if (rc != SQLITE_ROW || *set_r == NULL)
		return idx_sqlerr(idx, rc, "account addresses", err);
	return 0;
}

/*
 * The overview summaries hold what depends on the account's addresses (a
 * contact's sent_to, whether an address is a contact, a thread's turn;
 * migration 0011), computed when a row is written: after the set changes,
 * every row is computed again from the per-message rows, by the views the
 * migration's backfill uses.  About a second at 100,000 messages
 * (docs/benchmarks.md), paid only when the settings change.
 */
static int
rebuild_summaries(struct mb_index *idx, struct mb_err *err)
{
	static const char *const sql[] = {
		"DELETE FROM contact_stats",
		"DELETE FROM contact_names",
		"DELETE FROM thread_stats",
		"INSERT INTO contact_stats SELECT * FROM contact_stats_of",
		"INSERT INTO contact_names SELECT * FROM contact_names_of",
		"INSERT INTO thread_stats SELECT * FROM thread_stats_of",
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(sql); i++) {
		sqlite3_stmt *st = idx_stmt_sql(idx, sql[i], err);

		if (st == NULL || idx_step_done(idx, st, "rebuild overview summaries", err) == -1)
			return -1;
	}
	return 0;
}

int
mb_account_set_addresses(struct mb_index *idx, const struct mb_account_address *list,
    size_t n, struct mb_err *err)
{
	static const char clear_sql[] = "DELETE FROM account_addresses";
	static const char put_sql[] = "INSERT OR IGNORE INTO account_addresses(address, source) "
	    "VALUES (?1, ?2)";
	struct idx_unit u;
	sqlite3_stmt *st;
	char *before = NULL, *after = NULL;
	bool ok = false;

	if (idx_unit_begin(idx, &u, err) == -1)
		return -1;
	if (address_set(idx, &before, err) == -1 ||
	    (st = idx_stmt_sql(idx, clear_sql, err)) == NULL ||
	    idx_step_done(idx, st, "account addresses", err) == -1)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char *a = mb_account_address_of(list[i].address);
		int rc;

		if (a == NULL)
			continue;
		if ((st = idx_stmt_sql(idx, put_sql, err)) == NULL) {
			free(a);
			goto out;
		}
		idx_bind_text(st, 1, a);
		idx_bind_text(st, 2, list[i].source);
		rc = idx_step_done(idx, st, "account address", err);
		free(a);
		if (rc == -1)
			goto out;
	}
	if (address_set(idx, &after, err) == -1 ||
	    (strcmp(before, after) != 0 && rebuild_summaries(idx, err) == -1))
		goto out;
	ok = true;
out:
	free(before);
	free(after);
	/* Not ok: the unit is undone and err already says why. */
	return idx_unit_end(idx, &u, ok, err);
}

int
mb_account_addresses(struct mb_index *idx, char ***list_r, struct mb_err *err)
{
	static const char sql[] = "SELECT address FROM account_addresses ORDER BY address";
	sqlite3_stmt *st = idx_stmt_sql(idx, sql, err);
	char **list;
	size_t n = 0, cap = 4;
	int rc;

	*list_r = NULL;
	if (st == NULL)
		return -1;
	list = mb_xcalloc(cap + 1, sizeof(*list));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap *= 2;
			list = mb_xrealloc(list, (cap + 1) * sizeof(*list));
		}
		list[n++] = idx_col_text(st, 0, NULL);
		list[n] = NULL;
	}
	idx_stmt_done(st);
	if (rc != SQLITE_DONE) {
		mb_account_addresses_free(&list);
		return idx_sqlerr(idx, rc, "account addresses", err);
	}
	*list_r = list;
	return 0;
}

void
mb_account_addresses_free(char ***listp)
{
	char **l = *listp;

	if (l == NULL)
		return;
	for (size_t i = 0; l[i] != NULL; i++)
		free(l[i]);
	free(l);
	*listp = NULL;
}
