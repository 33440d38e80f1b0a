/*
 * The account's own addresses (table account_addresses): written by syncd
 * from its settings at start, read by mcpd for from:me, to:me and the
 * reply overviews.  Addresses are compared lower-cased.
 */
#ifndef MAILBOX_ACCOUNT_H
#define MAILBOX_ACCOUNT_H

#include <stddef.h>

#include "mailbox/err.h"

struct mb_index;

/* One address and the setting it came from ("IMAP_USER", "DRAFT_FROM", "MY_ADDRESSES"). */
struct mb_account_address {
	const char	*address;
	const char	*source;
};

/*
 * Replace the stored set with list[0..n) in one transaction (lower-cased;
 * duplicates keep the first source; entries without '@' are skipped).
 * When the set changes, the overview summaries that depend on it are
 * rebuilt in the same transaction (migration 0011).
 * syncd only (a read-write handle).  Returns 0, or -1 with err.
 */
int	mb_account_set_addresses(struct mb_index *idx, const struct mb_account_address *list,
	    size_t n, struct mb_err *err);

/*
 * The stored addresses, lower-cased, sorted, as an owned NULL-terminated
 * array (empty, never NULL, when none): free with mb_account_addresses_free().
 * Returns 0, or -1 with err.
 */
int	mb_account_addresses(struct mb_index *idx, char ***list_r, struct mb_err *err);
void	mb_account_addresses_free(char ***listp);	/* NULL-safe; sets *listp = NULL */

/*
 * The bare address inside a setting's value: "Name <a@x>" gives "a@x",
 * "a@x" gives itself; lower-cased, owned by the caller (free(3)).  NULL when
 * the value holds no address (no '@').
 */
char	*mb_account_address_of(const char *value);

#endif
