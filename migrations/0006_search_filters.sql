-- 0006_search_filters: a narrow copy of the columns the search filters test
-- (docs/query.md), keyed by id.  A search with a word and a filter walks the
-- word's matches newest first and reads each match's row to test the filter;
-- a messages row holds its whole body, so those reads touch one page each,
-- about 2 microseconds a match (20 ms for a word in 10,000 messages of
-- 100,000).  This index holds the same few columns for some 80 bytes a
-- message, so the walk reads a few hundred pages instead
-- (docs/benchmarks.md "Query filters and totals" has both measurements and
-- the size).  index_search.c names it (INDEXED BY) where a query tests
-- only these columns.  sort_date (0004) is the date the filters test.
CREATE INDEX messages_search_filter ON messages(id, folder_id, uidvalidity, sort_date, flags,
	attachment_count, size, thread_id, keywords, from_addr, list_id);
