/*
 * find_contacts over the index (mailbox/overview.h): the people in From,
 * To and Cc, from contact_stats and contact_names (migration 0011), the
 * summary rows triggers keep beside message_addrs: one row per contact and
 * folder generation, so everyone is ranked from a few thousand rows instead
 * of a walk of every address of every message.  Those rows are joined to
 * folders and tested with IDX_CURRENT, like messages, so an old generation
 * or a hidden folder never counts.
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
 * Each contact's counts over its current rows: received_from, sent_to,
 * messages naming them, first and last dates.  The summary holds no own
 * address (the triggers skip them); the test here keeps a stale row out in
 * the moment between a change of the account's addresses and its rebuild,
 * which share one transaction, so never in practice.  With a fragment (?1,
 * lower-cased) only the addresses that contain it, or one of whose names
 * does, are counted, but with all their rows.
 */
#define CONTACTS_SELECT \
	"SELECT c.addr, sum(c.received), sum(c.sent), sum(c.n), min(c.first_date), " \
	"max(c.last_date) " \
	"FROM contact_stats AS c JOIN folders AS f ON f.id = c.folder_id " \
	"WHERE " IDX_CURRENT("c", "f") " AND c.addr NOT IN " OWN " "
#define CONTACTS_ORDER \
	"GROUP BY c.addr ORDER BY sum(c.received) + sum(c.sent) DESC, sum(c.n) DESC, c.addr " \
	"LIMIT ?2 OFFSET ?3"
static const char contacts_sql[] = CONTACTS_SELECT CONTACTS_ORDER;
static const char contacts_sql_like[] = CONTACTS_SELECT
	"AND c.addr IN (SELECT addr FROM contact_stats WHERE instr(addr, ?1) > 0 "
	"UNION SELECT addr FROM contact_names WHERE instr(lower(name), ?1) > 0) " CONTACTS_ORDER;

/* The names shown beside an address, most used first. */
static const char names_sql[] =
	"SELECT c.name FROM contact_names AS c JOIN folders AS f ON f.id = c.folder_id "
	"WHERE c.addr = ?1 AND " IDX_CURRENT("c", "f") " "
	"GROUP BY c.name ORDER BY sum(c.n) DESC, c.name LIMIT ?2";

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
