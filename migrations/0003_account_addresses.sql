-- 0003_account_addresses: the account's own addresses, so that mcpd (which
-- reads no syncd setting and holds no credential) can answer from:me, to:me
-- and "waiting on others".  syncd rewrites the set at every start from
-- IMAP_USER (when it is an address), DRAFT_FROM and MY_ADDRESSES
-- (docs/syncd.md "The account's own addresses").  Addresses are stored
-- lower-cased; source names the setting each came from.
CREATE TABLE account_addresses (
	address		TEXT PRIMARY KEY,
	source		TEXT NOT NULL
) WITHOUT ROWID;
