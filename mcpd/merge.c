/*
 * Pages of several accounts merged into one (docs/mcpd.md, "Accounts"):
 * each account's engine gives its page in its own order, and the merged page
 * takes the best next row of any account until it is full.  The next page
 * starts, in each account, past the rows taken from it, so a cursor carries
 * one offset per account (fence.c) and no account is read past what one
 * page needs.
 */
#include <stdlib.h>
#include <string.h>

#include "mailbox/query.h"
#include "mailbox/util.h"
#include "mcpd.h"

size_t
mcp_merge_take(struct mcp_merge_part *p, size_t n, size_t limit, mcp_merge_before_fn before,
    mcp_merge_take_fn take, void *ctx)
{
	size_t taken = 0;

	while (taken < limit) {
		struct mcp_merge_part *best = NULL;
		const void *best_row = NULL;

		for (size_t i = 0; i < n; i++) {
			const void *row;

			if (p[i].used >= p[i].n)
				continue;
			row = (const char *)p[i].rows + p[i].used * p[i].size;
			if (best == NULL || before(&p[i], row, best, best_row)) {
				best = &p[i];
				best_row = row;
			}
		}
		if (best == NULL)
			break;
		best->used++;
		take(best, best_row, ctx);
		taken++;
	}
	return taken;
}

bool
mcp_merge_next(const struct mcp_merge_part *p, size_t n, int64_t *next)
{
	bool more = false;

	for (size_t i = 0; i < n; i++) {
		/* a whole page taken: where its engine said; else just past what was taken */
		next[i] = p[i].used == p[i].n ? p[i].next_offset : p[i].offset + (int64_t)p[i].used;
		more |= p[i].used < p[i].n || p[i].more;
	}
	return more;
}

uint64_t
mcp_merge_hash(uint64_t h, uint64_t set)
{
	for (int i = 0; i < 8; i++) {
		h ^= (set >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

int
mcp_merge_accounts(struct mcp_server *srv, const struct mcp_caller *who, json_t *args,
    struct mb_query *q, uint64_t *set_r, uint64_t *hash_r, struct mb_err *err)
{
	uint64_t named;

	if (mcp_account_arg(srv->conf, who, args, set_r, err) == -1 ||
	    mcp_accounts_named(srv->conf, who, q ? q->accounts : NULL, &named, err) == -1)
		return -1;
	*set_r &= named;
	if (q != NULL && q->thread_id > 0) {
		/* thread:N names one account's thread: that account, its id there */
		int64_t local = 0;
		int i = mcp_account_of(srv->conf, who, q->thread_id, &local);

		*set_r &= i < 0 ? 0 : UINT64_C(1) << i;
		q->thread_id = i < 0 ? 1 : local;
	}
	*hash_r = mcp_merge_hash(mcp_merge_hash(*hash_r, mcp_may_read(srv->conf, who)), *set_r);
	return 0;
}

size_t
mcp_merge_parts(struct mcp_server *srv, uint64_t set, struct mcp_merge_part *p)
{
	size_t n = 0;

	for (size_t i = 0; i < srv->conf->n_accounts; i++)
		if (set >> i & 1) {
			memset(&p[n], 0, sizeof(p[n]));
			p[n++].acc = &srv->conf->accounts[i];
		}
	return n;
}

struct mb_index *
mcp_merge_index(struct mcp_server *srv, const struct mcp_merge_part *p, struct mb_err *err)
{
	struct mb_index *idx = mcp_account_index(srv, (size_t)(p->acc - srv->conf->accounts),
	    err);

	if (idx == NULL)
		mcp_index_unavailable(err);
	return idx;
}

void
mcp_merge_page(struct mcp_merge_part *p, const void *rows, size_t n, size_t size, bool more,
    int64_t next_offset)
{
	p->rows = rows;
	p->n = n;
	p->size = size;
	p->more = more;
	p->next_offset = next_offset;
}
