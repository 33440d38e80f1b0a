/*
 * index_ro_open: open an index read-only, as mcpd does, and print its
 * message count ("messages=N"), or the error and exit 1.
 *
 *	index_ro_open path
 */
#include <stdio.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/index_raw.h"

int
main(int argc, char **argv)
{
	struct mb_err err = { 0 };
	struct mb_index *idx = NULL;
	sqlite3_stmt *st = NULL;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: index_ro_open path\n");
		return 2;
	}
	if (mb_index_open(argv[1], MB_INDEX_RO, &idx, &err) == -1) {
		fprintf(stderr, "index_ro_open: %s\n", err.msg);
		return 1;
	}
	rc = sqlite3_prepare_v2(mb_index_db(idx), "SELECT count(*) FROM messages", -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		printf("messages=%lld\n", (long long)sqlite3_column_int64(st, 0));
	else
		fprintf(stderr, "index_ro_open: %s\n", sqlite3_errmsg(mb_index_db(idx)));
	sqlite3_finalize(st);
	mb_index_close(&idx);
	return 0;
}
