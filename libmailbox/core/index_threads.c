/*
 * Thread ids, assigned when a message is upserted.
 *
 * thread_refs maps every id a message names (its Message-ID, In-Reply-To and
 * References) to a thread, whether or not a message with that id is indexed.
 * So the ids act as a union-find over the whole mailbox: a message joins the
 * thread of any id it names; two replies to a parent that was never fetched
 * meet at the parent's id; a message whose ids sit in two threads merges them
 * (the lower id survives, every row and ref of the other moves).  Subjects
 * play no part: "Re: hello" from strangers stays apart.  A message with no id
 * at all gets a thread of its own.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "mailbox/index.h"
#include "mailbox/util.h"

#include "index-private.h"

/*
 * References can be long (hundreds of ids on old mailing-list threads), but
 * the ones that matter for joining are the parent and the root; past this
 * many we keep the first (the root end) and the last ones.
 */
#define THREAD_IDS_MAX	128

struct idset {
	const char	*v[THREAD_IDS_MAX];	/* borrowed from the message */
	size_t		 n;
};

static void
idset_add(struct idset *s, const char *id)
{
	if (id == NULL || *id == '\0' || s->n == THREAD_IDS_MAX)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], id) == 0)
			return;
	s->v[s->n++] = id;
}

static void
collect_ids(struct idset *s, const struct mb_msg *m)
{
	size_t nref = m->n_references, from = 0;

	s->n = 0;
	idset_add(s, m->message_id);
	idset_add(s, m->in_reply_to);
	for (size_t i = 0; i < m->n_parents; i++)
		idset_add(s, m->parents[i]);
	/* Root first, then the newest ids: the ones a sibling most likely shares. */
	if (nref > 0)
		idset_add(s, m->references[0]);
	if (nref > THREAD_IDS_MAX - 3)
		from = nref - (THREAD_IDS_MAX - 3);
	for (size_t i = nref; i-- > from; )
		idset_add(s, m->references[i]);
}

static int
ref_get(struct mb_index *idx, const char *id, int64_t *tid_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, IDX_THREAD_REF_GET, err);
	int rc;

	if (st == NULL)
		return -1;
	idx_bind_text(st, 1, id);
	rc = sqlite3_step(st);
	*tid_r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	idx_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return idx_sqlerr(idx, rc, "thread lookup", err);
	return 0;
}

static int
thread_next(struct mb_index *idx, int64_t *tid_r, struct mb_err *err)
{
	sqlite3_stmt *st = idx_stmt(idx, IDX_THREAD_NEXT, err);
	int rc;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	*tid_r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	idx_stmt_done(st);
	if (rc != SQLITE_ROW)
		return idx_sqlerr(idx, rc, "new thread id", err);
	return 0;
}

/* Move every message (stored or staged) and ref of thread from into thread to. */
static int
thread_merge(struct mb_index *idx, int64_t to, int64_t from, struct mb_err *err)
{
	static const enum idx_stmt moves[] = { IDX_THREAD_MOVE_MSGS, IDX_THREAD_MOVE_REFS,
	    IDX_THREAD_MOVE_STAGE };

	for (size_t i = 0; i < MB_ARRAY_LEN(moves); i++) {
		sqlite3_stmt *st = idx_stmt(idx, moves[i], err);

		if (st == NULL)
			return -1;
		sqlite3_bind_int64(st, 1, to);
		sqlite3_bind_int64(st, 2, from);
		if (idx_step_done(idx, st, "thread merge", err) == -1)
			return -1;
	}
	return 0;
}

int
idx_thread_assign(struct mb_index *idx, const struct mb_msg *m, int64_t keep_tid,
    int64_t *tid_r, struct mb_err *err)
{
	struct idset ids;
	int64_t found[THREAD_IDS_MAX + 1];
	size_t nfound = 0;
	int64_t tid = 0;

	collect_ids(&ids, m);
	/* The row being replaced is this same message (same folder, uidvalidity, uid). */
	if (keep_tid > 0)
		found[nfound++] = keep_tid;
	for (size_t i = 0; i < ids.n; i++) {
		int64_t t;
		bool dup = false;

		if (ref_get(idx, ids.v[i], &t, err) == -1)
			return -1;
		if (t == 0)
			continue;
		for (size_t j = 0; j < nfound && !dup; j++)
			dup = found[j] == t;
		if (!dup)
			found[nfound++] = t;
	}

	if (nfound == 0) {
		if (thread_next(idx, &tid, err) == -1)
			return -1;
	} else {
		tid = found[0];
		for (size_t i = 1; i < nfound; i++)
			if (found[i] < tid)
				tid = found[i];
		for (size_t i = 0; i < nfound; i++)
			if (found[i] != tid && thread_merge(idx, tid, found[i], err) == -1)
				return -1;
	}

	for (size_t i = 0; i < ids.n; i++) {
		sqlite3_stmt *st = idx_stmt(idx, IDX_THREAD_REF_PUT, err);

		if (st == NULL)
			return -1;
		idx_bind_text(st, 1, ids.v[i]);
		sqlite3_bind_int64(st, 2, tid);
		if (idx_step_done(idx, st, "thread ref", err) == -1)
			return -1;
	}
	*tid_r = tid;
	return 0;
}
