/*
 * One message into a test index, for the unit tests and fuzz_jsonrpc that
 * search a small real index (mb_index_upsert on a file under mkdtemp).
 */
#ifndef MB_TEST_SUPPORT_INDEX_H
#define MB_TEST_SUPPORT_INDEX_H

#include <stdint.h>

struct mb_index;

struct mb_test_msg {
	const char	*subject;
	const char	*from;		/* an address; NULL: alice@example.com */
	const char	*body;
	int64_t		 date;		/* the Date header, unix seconds; 0: none */
	int64_t		 internaldate;
	unsigned	 flags;		/* enum mb_flag bits */
	const char	*message_id;	/* NULL: none; likewise in_reply_to */
	const char	*in_reply_to;
};

/* Upsert t as folder's uid (UIDVALIDITY 1); t is borrowed.  Exits on failure. */
void	mb_test_put(struct mb_index *idx, int64_t folder, uint32_t uid,
	    const struct mb_test_msg *t);

/* Remove dir and everything under it (a test index's mkdtemp directory). */
void	mb_test_rmtree(const char *dir);

#endif
