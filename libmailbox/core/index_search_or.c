/*
 * An OR of words ranked in parts (docs/index.md, "An OR of words").
 *
 * `invoice OR receipt` scores a row by the sum of each word's BM25 term,
 * and the block walk (index_search_blocks.c) bounds a block by the sum of
 * the words' fronts there.  That needs a front for each word, which syncd
 * keeps only for the words in many rows (rank_terms); a word without one
 * could be at its best anywhere.  So, as for a prefix's rarer words
 * (index_search_prefix.c), the rows that hold a word without bounds are
 * ranked first, in full, by two statements: those that hold a bounded word
 * too ("(rare) AND (bounded)", every word of the row a phrase of the
 * statement), then the rest ("(rare)", skipping those).  The walk then
 * reads "(bounded)" a range at a time, skipping the first statement's
 * rows: what it reads holds no rarer word.  A query's NOT is kept in each
 * statement, so no part gives a row the query does not match.
 *
 * Each statement's phrases are some of the query's, so a row is scored
 * with the query's own statistics, each phrase's hits put in the query's
 * slot for it and the others 0 (struct idx_rank_parts): the sum bm25()
 * makes for the whole query, in its order, bit for bit.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mailbox/util.h"

#include "index-private.h"
#include "search-private.h"

/*
 * The quoted phrases of match, as query.c writes them (a doubled quote
 * inside is one), into start and len (quotes included, at most max);
 * their number, or -1 when a quote is unbalanced or there are more.
 */
static int
phrase_spans(const char *match, const char **start, size_t *len, int max)
{
	int n = 0;

	for (const char *p = match; *p != '\0'; p++) {
		const char *s = p;

		if (*p != '"')
			continue;
		if ((p = idx_match_phrase_end(s)) == NULL || n == max)
			return -1;
		start[n] = s;
		len[n] = (size_t)(p - s) + 1;
		n++;
	}
	return n;
}

/*
 * Append "(a OR b ...)" of the phrases first..last - 1 whose rare flag is
 * want_rare (rare NULL: all of them) to b, each one's slot to slot after
 * the *n_r there; b has no cap, so appends cannot fail.
 */
static void
or_group(struct mb_buf *b, const char *const *start, const size_t *len, const bool *rare,
    int first, int last, bool want_rare, int *slot, int *n_r)
{
	int n = 0;

	(void)mb_buf_addc(b, '(');
	for (int i = first; i < last; i++) {
		if (rare != NULL && rare[i] != want_rare)
			continue;
		if (n++ > 0)
			(void)mb_buf_adds(b, " OR ");
		(void)mb_buf_add(b, start[i], len[i]);
		slot[(*n_r)++] = i;
	}
	(void)mb_buf_addc(b, ')');
}

/*
 * Append " NOT (...)" of the phrases from n_pos on (none: nothing) to b,
 * their slots to slot after the *n_r there: a part's rows are the
 * query's, none holding a negated phrase.
 */
static void
not_group(struct mb_buf *b, const char *const *start, const size_t *len, int n_pos,
    int n_ph, int *slot, int *n_r)
{
	if (n_pos == n_ph)
		return;
	(void)mb_buf_adds(b, " NOT ");
	or_group(b, start, len, NULL, n_pos, n_ph, false, slot, n_r);
}

int
idx_or_parts_make(const char *match, const bool *rare, int n_pos, int n_ph,
    struct idx_or_parts *o)
{
	const char *start[IDX_RANK_PHRASES];
	size_t len[IDX_RANK_PHRASES];
	struct mb_buf b;
	int n_rare_only = 0;

	memset(o, 0, sizeof(*o));
	if (n_ph > IDX_RANK_PHRASES || n_pos > n_ph ||
	    phrase_spans(match, start, len, IDX_RANK_PHRASES) != n_ph)
		return -1;
	mb_buf_init(&b, SIZE_MAX);
	or_group(&b, start, len, rare, 0, n_pos, false, o->bounded_slot, &o->n_bounded);
	not_group(&b, start, len, n_pos, n_ph, o->bounded_slot, &o->n_bounded);
	o->bounded = mb_buf_detach(&b, NULL);
	or_group(&b, start, len, rare, 0, n_pos, true, o->rare_slot, &n_rare_only);
	if (n_rare_only > 0 && o->n_bounded > 0) {
		/* "(rare) AND (bounded) NOT (negated)", then "(rare) NOT (negated)" */
		struct mb_buf rare_part;

		mb_buf_init(&rare_part, SIZE_MAX);
		(void)mb_buf_add(&rare_part, b.data, b.len);
		memcpy(o->both_slot, o->rare_slot, (size_t)n_rare_only * sizeof(*o->both_slot));
		o->n_both = n_rare_only;
		(void)mb_buf_adds(&b, " AND ");
		or_group(&b, start, len, rare, 0, n_pos, false, o->both_slot, &o->n_both);
		not_group(&b, start, len, n_pos, n_ph, o->both_slot, &o->n_both);
		o->both = mb_buf_detach(&b, NULL);
		o->n_rare = n_rare_only;
		not_group(&rare_part, start, len, n_pos, n_ph, o->rare_slot, &o->n_rare);
		o->rare = mb_buf_detach(&rare_part, NULL);
		mb_buf_release(&rare_part);
	}
	mb_buf_release(&b);
	return 0;
}

void
idx_or_parts_release(struct idx_or_parts *o)
{
	free(o->bounded);
	free(o->rare);
	free(o->both);
	memset(o, 0, sizeof(*o));
}

int
idx_or_rank_rare(struct mb_index *idx, const struct idx_or_parts *o,
    const struct idx_rank_stats *stats, const struct idx_rank_filters *filters,
    struct idx_rank_set *set, struct idx_ids *both, struct mb_err *err)
{
	struct idx_rank_parts part = { .stats = stats, .slot = o->both_slot,
	    .n_slot = o->n_both };
	int rc;

	if (o->rare == NULL)
		return 0;	/* every word is bounded */
	/* the rows with a bounded word too: their ids are the walk's to skip */
	set->floor.parts = &part;
	set->seen = both;
	rc = idx_rank_statement(idx, o->both, filters, set, err);
	set->seen = NULL;
	if (rc == 0) {
		idx_ids_sort(both);
		part = (struct idx_rank_parts){ .stats = stats, .slot = o->rare_slot,
		    .n_slot = o->n_rare, .skip = both->ids, .n_skip = both->n };
		rc = idx_rank_statement(idx, o->rare, filters, set, err);
	}
	set->floor.parts = NULL;
	return rc;
}
