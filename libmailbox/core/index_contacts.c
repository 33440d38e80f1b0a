/*
 * find_contacts over the index (mailbox/overview.h): the people in From,
 * To and Cc, from message_addrs (migration 0007), which triggers keep beside
 * messages.  That table is ordered by address and carries copies of each
 * message's sender, date, folder and UIDVALIDITY, so a contact's counts are
 * one ordered walk of it, without reading a messages row; IDX_CURRENT is
 * tested on those copies, which the triggers rewrite whenever a row's key
 * changes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/overview.h"
#include "mailbox/util.h"

#include "index-private.h"

#define OWN	"(SELECT address FROM account_addresses)"

/*
 * Each contact's counts: received_from (rows as sender), sent_to (messages
 * from the account naming them in To or Cc), messages naming them, first
 * and last dates: one row per message and address (migration 0007), so
 * sums, not counts of distinct messages, which cost a sort per contact.  With a fragment (?1, lower-cased) only the addresses one
 * of whose rows contains it in the address or a name are counted, but with
 * all their rows.
 */
#define CONTACTS_SELECT \
	"SELECT a.addr, sum(a.role = 0) AS received, " \
	"sum(a.role > 0 AND a.sender IN " OWN ") AS sent, count(*) AS n, min(a.date), max(a.date) " \
	"FROM message_addrs AS a JOIN folders AS f ON f.id = a.folder_id " \
	"WHERE " IDX_CURRENT("a", "f") " AND a.addr NOT IN " OWN " "
#define CONTACTS_ORDER \
	"GROUP BY a.addr ORDER BY received + sent DESC, n DESC, a.addr LIMIT ?2 OFFSET ?3"
static const char contacts_sql[] = CONTACTS_SELECT CONTACTS_ORDER;
static const char contacts_sql_like[] = CONTACTS_SELECT
	"AND a.addr IN (SELECT addr FROM message_addrs WHERE instr(addr, ?1) > 0 "
	"OR instr(lower(name), ?1) > 0) " CONTACTS_ORDER;

/* The names shown beside an address, most used first. */
static const char names_sql[] =
	"SELECT a.name FROM message_addrs AS a JOIN folders AS f ON f.id = a.folder_id "
	"WHERE a.addr = ?1 AND a.name IS NOT NULL AND " IDX_CURRENT("a", "f") " "
	"GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT ?2";

static int
contact_names(struct mb_index *idx, struct mb_contact *c, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, names_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	sqlite3_bind_text(st, 1, c->address, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, MB_CONTACT_MAX_NAMES);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && c->n_names < MB_CONTACT_MAX_NAMES)
		c->names[c->n_names++] = idx_col_text(st, 0, NULL);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		idx_sqlerr(idx, rc, "contacts: names", err);
	idx_stmt_done(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

/* The fragment lower-cased (ASCII), as the addresses are stored; owned. */
static char *
fragment_key(const char *s)
{
	char *k = mb_xstrdup(s);

	for (char *p = k; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return k;
}

static int
contacts_rows(struct mb_index *idx, const char *key, int64_t offset, size_t limit,
    struct mb_contact_page *page, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt_sql(idx, key ? contacts_sql_like : contacts_sql, err);
	int rc;

	if (st == NULL)
		return -1;
	if (key)
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)limit + 1);
	sqlite3_bind_int64(st, 3, offset);
	page->list = mb_xcalloc(limit, sizeof(*page->list));
	while ((rc = idx_page_step(st, page->n, limit, &page->more)) == SQLITE_ROW) {
		struct mb_contact *c = &page->list[page->n++];

		c->address = idx_col_text(st, 0, NULL);
		c->received_from = sqlite3_column_int64(st, 1);
		c->sent_to = sqlite3_column_int64(st, 2);
		c->messages = sqlite3_column_int64(st, 3);
		c->has_dates = sqlite3_column_type(st, 4) != SQLITE_NULL;
		c->first_date = sqlite3_column_int64(st, 4);
		c->last_date = sqlite3_column_int64(st, 5);
	}
	if (rc != SQLITE_DONE)
		idx_sqlerr(idx, rc, "contacts", err);
	idx_stmt_done(st);
	page->next_offset = offset + (int64_t)page->n;
	for (size_t i = 0; rc == SQLITE_DONE && i < page->n; i++)
		if (contact_names(idx, &page->list[i], err) == -1)
			return -1;
	return rc == SQLITE_DONE ? 0 : -1;
}

int
mb_overview_contacts(struct mb_index *idx, const char *fragment, int64_t offset, size_t limit,
    struct mb_contact_page *page, struct mb_err *err)
{
	char *key = NULL;
	int rc;

	memset(page, 0, sizeof(*page));
	if (idx_page_check(offset, limit, MB_OVERVIEW_MAX_LIMIT, err) == -1)
		return -1;
	if (fragment && *fragment)
		key = fragment_key(fragment);
	if (idx_read_begin(idx, err) == -1) {
		free(key);
		return -1;
	}
	rc = contacts_rows(idx, key, offset, limit, page, err);
	idx_read_end(idx);
	free(key);
	return rc;
}

void
mb_contact_page_release(struct mb_contact_page *page)
{
	for (size_t i = 0; i < page->n; i++) {
		free(page->list[i].address);
		for (size_t j = 0; j < page->list[i].n_names; j++)
			free(page->list[i].names[j]);
	}
	free(page->list);
	memset(page, 0, sizeof(*page));
}
