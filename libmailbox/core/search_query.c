/*
 * The query side of a search (include/mailbox/search.h): the structured
 * filters that narrow a compiled query, and the hash a cursor carries.
 * Neither touches the index.
 */
#include <stdint.h>
#include <string.h>

#include "mailbox/query.h"
#include "mailbox/search.h"
#include "mailbox/util.h"

#include "query-private.h"

int
mb_search_narrow(struct mb_query *q, const struct mb_search_filters *f, struct mb_err *err)
{
	int64_t t;

	if (f->folder && *f->folder) {
		if ((q->folder && strcmp(q->folder, f->folder) != 0) || q->role)
			return mb_err_set(err, MB_E_INVALID, "the folder argument and folder: in the "
			    "query differ; give one folder");
		if (!q->folder)
			q->folder = mb_xstrdup(f->folder);
	}
	if (f->since && *f->since) {
		if (mb_query_parse_date(f->since, strlen(f->since), &t) == -1)
			return mb_err_set(err, MB_E_INVALID,
			    "since must be a date written YYYY-MM-DD, got \"%.40s\"", f->since);
		q_dates_note(q, "since", f->since, strlen(f->since), false);
		if (t > q->since)
			q->since = t;
	}
	if (f->until && *f->until) {
		if (mb_query_parse_date(f->until, strlen(f->until), &t) == -1)
			return mb_err_set(err, MB_E_INVALID,
			    "until must be a date written YYYY-MM-DD, got \"%.40s\"", f->until);
		q_dates_note(q, "until", f->until, strlen(f->until), false);
		t += 86400;	/* until is inclusive: before the next day */
		if (t < q->until)
			q->until = t;
	}
	if (f->from && *f->from)
		return mb_query_and_from(q, f->from, strlen(f->from), err);
	return 0;
}

static uint64_t
fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *u = p;

	for (size_t i = 0; i < n; i++) {
		h ^= u[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t
mb_search_hash(const struct mb_query *q)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (q->match)
		h = fnv1a(h, q->match, strlen(q->match) + 1);
	h = fnv1a(h, "|", 1);
	if (q->folder)
		h = fnv1a(h, q->folder, strlen(q->folder) + 1);
	h = fnv1a(h, "|", 1);
	if (q->role)
		h = fnv1a(h, q->role, strlen(q->role) + 1);
	/* relative dates move with the clock: the cursor holds them as written */
	if (q->dates_relative)
		h = fnv1a(h, q->dates, strlen(q->dates) + 1);
	else {
		h = fnv1a(h, &q->since, sizeof(q->since));
		h = fnv1a(h, &q->until, sizeof(q->until));
	}
	h = fnv1a(h, &q->flags_set, sizeof(q->flags_set));
	h = fnv1a(h, &q->flags_clear, sizeof(q->flags_clear));
	h = fnv1a(h, &q->has_attachment, sizeof(q->has_attachment));
	h = fnv1a(h, &q->size_min, sizeof(q->size_min));
	h = fnv1a(h, &q->size_max, sizeof(q->size_max));
	h = fnv1a(h, &q->thread_id, sizeof(q->thread_id));
	h = fnv1a(h, &q->from_me, sizeof(q->from_me));
	h = fnv1a(h, &q->to_me, sizeof(q->to_me));
	h = fnv1a(h, q->msgid ? q->msgid : "", q->msgid ? strlen(q->msgid) + 1 : 1);
	h = fnv1a(h, q->list ? q->list : "", q->list ? strlen(q->list) + 1 : 1);
	h = fnv1a(h, q->labels ? q->labels : "", q->labels ? strlen(q->labels) + 1 : 1);
	h = fnv1a(h, q->accounts ? q->accounts : "", q->accounts ? strlen(q->accounts) + 1 : 1);
	return h;
}
