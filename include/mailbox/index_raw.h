/*
 * The raw SQLite connection behind an index handle, for tests and
 * benchmarks that check an index from outside (row counts, EXPLAIN, a
 * second connection's view).  Neither daemon includes this header: every
 * statement they need is a function of an index module (docs/architecture.md),
 * and tests/integration/test_layering.sh fails a daemon object that calls
 * mb_index_db() or any sqlite3_* function.
 */
#ifndef MAILBOX_INDEX_RAW_H
#define MAILBOX_INDEX_RAW_H

#include "mailbox/index.h"

struct sqlite3;

/* The connection, borrowed: valid until mb_index_close(). */
struct sqlite3	*mb_index_db(struct mb_index *idx);

#endif
