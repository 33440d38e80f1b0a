/*
 * The search engine (libmailbox/core/index_search.c): a compiled query
 * (mailbox/query.h) in, one page of hits out, as plain C data.  Text terms
 * are ranked with BM25 (subject over sender over recipients over body), ties
 * newest first then highest id, exactly over every match (docs/index.md,
 * "Ranking"); a query of filters alone lists its mail newest first.  Each hit
 * carries a snippet with the matched words in **bold**.  docs/mcpd.md,
 * "Performance", says why it is built the way it is.
 */
#ifndef MAILBOX_SEARCH_H
#define MAILBOX_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

#define MB_SEARCH_MAX_LIMIT	50	/* hits per page at most */
/*
 * Matches counted for a total, at most: counting reads an index entry per
 * match, about 0.8 microseconds; 10,000 cost a common word 7 ms of CPU at
 * 100,000 messages, 1,000 cost it 0.8 ms (docs/benchmarks.md).
 */
#define MB_SEARCH_COUNT_CAP	1000

struct mb_index;
struct mb_query;

/*
 * The structured filters of a search, beside its query text: each narrows
 * the query, never widens it.  All borrowed; NULL or "" means not given.
 */
struct mb_search_filters {
	const char	*folder;	/* exact folder name */
	const char	*from;		/* a name or an address the sender must contain */
	const char	*since;		/* YYYY-MM-DD (UTC), inclusive */
	const char	*until;		/* YYYY-MM-DD (UTC), inclusive */
};

/*
 * Narrow q (compiled, or just initialised) by f.  Returns 0, or -1 with err
 * (MB_E_INVALID, naming the argument, in words a model can act on): a bad
 * date, a folder other than the query's folder:, a from with nothing
 * searchable.  q is the caller's to release either way.
 */
int	mb_search_narrow(struct mb_query *q, const struct mb_search_filters *f,
	    struct mb_err *err);

/*
 * A hash of everything in q that selects and orders hits (not the page):
 * a cursor made for one search carries it, so it is refused by another.
 * Stable for the life of the process only.
 */
uint64_t	mb_search_hash(const struct mb_query *q);

/* One hit.  Strings are owned by the page; NULL where the index has none. */
struct mb_search_hit {
	int64_t		 id;
	char		*folder;
	bool		 has_date;
	int64_t		 date;		/* the Date header, unix seconds, when has_date */
	bool		 has_received;
	int64_t		 received;	/* INTERNALDATE, when has_received */
	bool		 dated_by_header;	/* ordered by date (else by received) */
	/*
	 * What orders it: the score (BM25 with the column weights, lower is
	 * better; 0 for a query of filters alone), then the sort date (the
	 * date or received above, newest first, none last), then the id, highest
	 * first.  mcpd merges the pages of several indexes by the same order.
	 */
	double		 score;
	bool		 has_sort_date;
	int64_t		 sort_date;
	char		*message_id;	/* without <> */
	char		*from;		/* the From header as indexed for search */
	char		*from_name;	/* its display name */
	char		*from_addr;	/* its address */
	char		*to;		/* To then Cc, as indexed for search */
	char		*to_json;	/* To: [{"name":..,"addr":..,"group":..}, ...] */
	char		*subject;
	unsigned	 flags;		/* enum mb_flag bits */
	int64_t		 attachment_count;
	int64_t		 thread_id;
	char		**labels;	/* its IMAP keywords (mailbox/labels.h), n_labels */
	size_t		 n_labels;
	/*
	 * Where the query's words are, marked **like this** (cut with "…"),
	 * or for a query of filters alone the start of the body.  Not NUL-free
	 * in general: snippet_len bytes.  "" when there is none; NULL when
	 * the snippet from the index's positions gave none.
	 */
	char		*snippet;
	size_t		 snippet_len;
	/*
	 * When the query matched an attachment's text or file name: that
	 * attachment (att_id, its name), whether it was the name that matched,
	 * and a snippet of its text, marked as above.  att_id 0: no attachment
	 * matched (or the match was elsewhere in the message).
	 */
	int64_t		 att_id;
	char		*att_name;	/* NULL when the attachment has none */
	bool		 att_by_name;
	char		*att_snippet;	/* NULL when only the name matched */
};

/* One page of a search; mb_search_page_release() frees what it holds. */
struct mb_search_page {
	struct mb_search_hit	*hits;	/* owned; n of them, best first */
	size_t		 n;
	bool		 more;		/* a next page exists; it starts at next_offset */
	int64_t		 next_offset;	/* past the ids read, even if one was deleted since */
	/*
	 * How many messages match in all: exact when total_exact, else a lower
	 * bound (MB_SEARCH_COUNT_CAP: the count stopped there).  A query with
	 * words ranks every match, so its total is always exact.
	 */
	int64_t		 total;
	bool		 total_exact;
};

/*
 * Hits [offset, offset + limit) of q (not empty: mb_query_empty() false) on
 * idx, in one read transaction.  limit is 1..MB_SEARCH_MAX_LIMIT.  Returns
 * 0 with *page filled (the caller releases it, also after -1), or -1 with
 * err: MB_E_NOTFOUND when q names a folder that does not exist (or a role
 * no folder has, or from:me / to:me while no own address is recorded),
 * MB_E_INVALID for a bad limit or offset, else the index's error.
 */
int	mb_search_run(struct mb_index *idx, const struct mb_query *q, int64_t offset,
	    size_t limit, struct mb_search_page *page, struct mb_err *err);

void	mb_search_page_release(struct mb_search_page *page);	/* page becomes empty */

#endif
