/*
 * Reconciliation: what the user did to already indexed mail in another
 * client (read, flagged, deleted, moved) reaches the index on the next tick
 * (docs/syncd.md "Flags and expunges").  Runs in the scheduler's session
 * inside the folder's enumeration transaction, so the changes, the new
 * HIGHESTMODSEQ and the watermark are committed together or not at all: a
 * crash at any point leaves the old HIGHESTMODSEQ recorded, and the next
 * tick asks again for everything since it.
 *
 * The quiet tick stays quiet.  With CONDSTORE an unchanged HIGHESTMODSEQ
 * proves nothing changed, and expunges are checked by counting (EXISTS
 * against the rows the index has), which costs no command; only a
 * difference makes syncd list UIDs.  Without CONDSTORE nothing proves it,
 * so each tick asks for the flags of a window of each folder, within
 * SYNC_FLAG_BUDGET messages over all folders, the window's place kept in
 * folders.flag_cursor so that runs of --once go round the folder too.  Sync still never changes the mailbox:
 * UID FETCH (UID FLAGS) and UID SEARCH on an EXAMINEd folder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/log.h"
#include "syncd.h"

/*
 * Runs of UIDs in one flag window's UID FETCH, then the window ends early:
 * about 22 bytes each, so the command stays under 5 KB (RFC 7162 asks
 * clients for lines of at most 8,192 octets).
 */
#define SD_FLAG_RUNS_MAX	200

struct recon {
	struct sd			*sd;
	const struct mb_folder_state	*st;
	struct mb_err			*err;
	const uint32_t			*have;	/* rescan: indexed uids, ascending */
	uint8_t				*mark;	/* rescan: have[i] is WIN_ASKED, WIN_SEEN or 0 */
	size_t				 n_have;
	unsigned			 changed;
	unsigned			 deleted;
};

static int
update_one(struct recon *r, const struct mb_imap_flags *m)
{
	bool changed;

	if (mb_index_update_flags_changed(r->sd->idx, r->st->id, r->st->uidvalidity, m->uid,
	    m->flags, m->keywords, m->modseq, &changed, r->err) == -1)
		return -1;
	r->changed += changed;
	return 0;
}

/* CHANGEDSINCE: only changed messages come back; new mail (not indexed yet) is skipped. */
static int
on_changed(const struct mb_imap_flags *m, void *ctx)
{
	return update_one(ctx, m);
}

static int
delete_uids(struct recon *r, const uint32_t *uids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (mb_index_delete(r->sd->idx, r->st->id, r->st->uidvalidity, uids[i], r->err) == -1)
			return -1;
		r->deleted++;
	}
	return 0;
}

/*
 * VANISHED (EARLIER) names intervals, which may be wide and may cover UIDs
 * that never existed: delete the indexed rows inside, never loop over the
 * interval itself.
 */
static int
on_vanished(uint32_t first, uint32_t last, void *ctx)
{
	struct recon *r = ctx;
	uint32_t *uids;
	size_t n;
	int rc;

	if (mb_index_uids(r->sd->idx, r->st->id, r->st->uidvalidity, first, last, &uids, &n,
	    r->err) == -1)
		return -1;
	rc = delete_uids(r, uids, n);
	free(uids);
	return rc;
}

static int
cmp_uid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum { WIN_ASKED = 1, WIN_SEEN = 2 };

/* A rescan answers for every message asked: mark it present, update it if it changed. */
static int
on_rescanned(const struct mb_imap_flags *m, void *ctx)
{
	struct recon *r = ctx;
	const uint32_t *p = bsearch(&m->uid, r->have, r->n_have, sizeof(*r->have), cmp_uid);

	if (p == NULL || r->mark[p - r->have] == 0)
		return 0;	/* not indexed (yet: fetched whole by a worker) or not asked */
	r->mark[p - r->have] = WIN_SEEN;
	return update_one(r, m);
}

static void
log_result(const struct recon *r, const char *how)
{
	if (r->changed == 0 && r->deleted == 0) {
		mb_log_debug("folder '%s': %s: nothing changed", r->st->name, how);
		return;
	}
	mb_log_info("folder '%s': %s: flags of %u message%s updated, %u expunged message%s "
	    "removed", r->st->name, how, r->changed, r->changed == 1 ? "" : "s", r->deleted,
	    r->deleted == 1 ? "" : "s");
}

static int
changes_since(struct recon *r, struct mb_imap *imap, uint32_t top, struct mb_err *err)
{
	struct mb_imap_changes cb = { .flags = on_changed, .ctx = r };

	/* QRESYNC: expunges since then come with the answer (VANISHED). */
	if (mb_imap_qresync(imap))
		cb.vanished = on_vanished;
	if (mb_imap_fetch_changes(imap, 1, top, r->st->highestmodseq, &cb, err) == -1)
		return -1;
	log_result(r, cb.vanished ? "changes since the last tick (CHANGEDSINCE, VANISHED)" :
	    "changes since the last tick (CHANGEDSINCE)");
	return 0;
}

/*
 * The runs of a window: take UIDs of have[] in the order the scan covers
 * them (from index p0 on, wrapping to 0), at most take of them, marking
 * each WIN_ASKED.  Neighbours in have[] share a run when no UID lies between
 * them, or when the UIDs between are at or below the watermark (every
 * server UID there is indexed, so they are expunged ones and cost nothing)
 * and SYNC_SINCE is not set (then older mail sits between).  More than
 * SD_FLAG_RUNS_MAX runs end the window early.  whole: one run over all
 * (the rescan when mod-sequences become usable must miss none; answers for
 * UIDs not indexed are skipped).  Returns the UIDs taken; *last_r the index
 * of the last one.
 */
static size_t
window_runs(struct recon *r, size_t p0, size_t take, bool dated, bool whole,
    struct mb_imap_uidrun *runs, size_t *n_runs_r, size_t *last_r)
{
	const uint32_t *h = r->have;
	size_t taken = 0, n_runs = 0, prev = 0;

	for (size_t k = 0; k < take; k++) {
		size_t i = (p0 + k) % r->n_have;
		bool joins = k > 0 && i == prev + 1 && (whole || h[i] == h[prev] + 1 ||
		    (!dated && h[i] - 1 <= r->st->watermark));

		if (joins)
			runs[n_runs - 1].last = h[i];
		else if (n_runs == SD_FLAG_RUNS_MAX)
			break;
		else
			runs[n_runs++] = (struct mb_imap_uidrun){ h[i], h[i] };
		r->mark[i] = WIN_ASKED;
		prev = i;
		taken++;
	}
	*n_runs_r = n_runs;
	*last_r = prev;
	return taken;
}

static int
cmp_run(const void *a, const void *b)
{
	const struct mb_imap_uidrun *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * No usable mod-sequence: the flags of a window of at most budget indexed
 * messages, one UID FETCH <set> (UID FLAGS), about 40 bytes a message.  The
 * window starts above st->flag_cursor and wraps to the first UID, so over
 * ticks every message is asked in turn; with a budget of the folder's size
 * or more it is the whole folder, every tick.  An indexed UID asked and
 * missing from the answer has been expunged.  *used_r: the UIDs asked.
 */
static int
rescan(struct recon *r, struct mb_imap *imap, struct mb_folder_state *st, uint64_t budget,
    uint64_t *used_r, struct mb_err *err)
{
	struct mb_imap_changes cb = { .flags = on_rescanned, .ctx = r };
	struct mb_imap_uidrun *runs;
	struct mb_imap_day since;
	uint32_t *have, *gone, cursor;
	size_t n_have, n_gone = 0, p0 = 0, take, taken, n_runs, last;
	bool whole = budget == UINT64_MAX;
	char how[128];
	int rc = -1;

	if (budget == 0)
		return 0;
	if (mb_index_uids(r->sd->idx, st->id, st->uidvalidity, 1, UINT32_MAX, &have, &n_have,
	    err) == -1)
		return -1;
	if (n_have == 0) {
		st->flag_cursor = 0;
		free(have);
		return 0;
	}
	/* From above the cursor (0 after a whole pass: from the first UID); a
	 * window cut short by SD_FLAG_RUNS_MAX goes on from where it stopped
	 * even when the whole folder is within the budget. */
	take = budget >= n_have ? n_have : (size_t)budget;
	while (!whole && p0 < n_have && have[p0] <= st->flag_cursor)
		p0++;
	if (p0 == n_have)
		p0 = 0;
	r->have = have;
	r->n_have = n_have;
	r->mark = mb_xcalloc(n_have, sizeof(*r->mark));
	runs = mb_xcalloc(SD_FLAG_RUNS_MAX, sizeof(*runs));
	taken = window_runs(r, p0, take, sd_conf_since(r->sd->conf, &since), whole, runs,
	    &n_runs, &last);
	qsort(runs, n_runs, sizeof(*runs), cmp_run);
	if (mb_imap_fetch_flag_set(imap, runs, n_runs, &cb, err) == -1)
		goto out;
	/* The next window starts above the last UID asked; after the top, at 1. */
	cursor = last == n_have - 1 ? 0 : have[last];
	gone = have;	/* compacted in place: the asked ones that did not answer */
	for (size_t i = 0; i < n_have; i++)
		if (r->mark[i] == WIN_ASKED)
			gone[n_gone++] = have[i];
	if (delete_uids(r, gone, n_gone) == -1)
		goto out;
	st->flag_cursor = cursor;
	*used_r = taken;
	if (taken == n_have)
		snprintf(how, sizeof(how), "full flag rescan");
	else
		snprintf(how, sizeof(how), "flag window of %zu of %zu messages, next from UID %u",
		    taken, n_have, st->flag_cursor + 1);
	log_result(r, how);
	rc = 0;
out:
	free(runs);
	free(r->mark);
	free(have);
	r->mark = NULL;
	r->have = NULL;
	return rc;
}

uint64_t
sd_flag_share(uint64_t left, const uint64_t *demand, size_t n)
{
	uint64_t *d, rem = left, level = UINT64_MAX;

	if (n == 0)
		return 0;
	d = mb_xcalloc(n, sizeof(*d));
	memcpy(d, demand, n * sizeof(*d));
	qsort(d, n, sizeof(*d), cmp_u64);
	/* Water-filling: the smaller demands are met whole while an equal
	 * part of what remains covers them; the rest get that part. */
	for (size_t k = 0; k < n; k++) {
		if (d[k] <= rem / (n - k)) {
			rem -= d[k];
			continue;
		}
		level = (rem + (n - k) - 1) / (n - k);
		break;
	}
	free(d);
	level = level < demand[0] ? level : demand[0];
	return level < left ? level : left;
}

uint64_t
sd_reconcile_demand(struct sd *sd, const char *name, bool condstore)
{
	struct mb_folder_state st = { 0 };
	struct mb_err err = { 0 };
	uint64_t rows = 0;
	uint32_t top;

	if (mb_index_folder_get(sd->idx, name, &st, &err) == 0 && st.uidvalidity != 0 &&
	    (!condstore || st.highestmodseq == 0) && mb_index_uid_count(sd->idx, st.id, st.uidvalidity, 1,
	    UINT32_MAX, &rows, &top, &err) == -1)
		rows = 0;
	mb_folder_state_release(&st);
	return rows;
}

int
sd_reconcile_flags(struct sd *sd, struct mb_imap *imap, struct mb_folder_state *st,
    const struct mb_imap_status *ex, uint64_t budget, uint64_t *used_r, struct mb_err *err)
{
	struct recon r = { .sd = sd, .st = st, .err = err };
	/* A HIGHESTMODSEQ that went down (a restored server) proves nothing. */
	bool modseq = ex->highestmodseq != 0 && st->highestmodseq != 0 &&
	    ex->highestmodseq >= st->highestmodseq;
	uint64_t rows;
	uint32_t top;

	*used_r = 0;
	if (modseq && ex->highestmodseq == st->highestmodseq)
		return 0;	/* the quiet tick: nothing changed, nothing asked */
	/* Without mod-sequences nothing proves a folder unchanged: a window. */
	if (!modseq && ex->highestmodseq == 0)
		return rescan(&r, imap, st, budget, used_r, err);
	/* Mod-sequences just became usable: every flag once (the whole folder,
	 * beyond the budget: it happens once), then CHANGEDSINCE. */
	if (mb_index_uid_count(sd->idx, st->id, st->uidvalidity, 1, UINT32_MAX, &rows, &top,
	    err) == -1)
		return -1;
	if (rows == 0)
		return 0;	/* nothing indexed to reconcile */
	if (modseq)
		return changes_since(&r, imap, top, err);
	return rescan(&r, imap, st, UINT64_MAX, used_r, err);
}

/*
 * Merge the server's UIDs with the indexed ones at or below wm: delete the
 * rows the server no longer has; *missing_r is the lowest server UID the
 * index lacks (0: none).
 */
static int
merge_listing(struct recon *r, const uint32_t *srv, size_t n_srv, const uint32_t *idx,
    size_t n_idx, uint32_t wm, uint32_t *missing_r)
{
	size_t i = 0, j = 0;

	*missing_r = 0;
	while (j < n_idx) {
		if (i < n_srv && srv[i] <= wm && srv[i] < idx[j]) {
			if (*missing_r == 0)
				*missing_r = srv[i];
			i++;
		} else if (i < n_srv && srv[i] == idx[j]) {
			i++;
			j++;
		} else {
			if (delete_uids(r, &idx[j], 1) == -1)
				return -1;
			j++;
		}
	}
	if (*missing_r == 0 && i < n_srv && srv[i] <= wm)
		*missing_r = srv[i];
	return 0;
}

int
sd_reconcile_expunges(struct sd *sd, struct mb_imap *imap, struct mb_folder_state *st,
    uint32_t exists, size_t above_wm, struct mb_err *err)
{
	struct recon r = { .sd = sd, .st = st, .err = err };
	uint32_t *srv = NULL, *idx = NULL, max, missing;
	size_t n_srv, n_idx;
	uint64_t rows, expect = exists >= above_wm ? exists - above_wm : 0;
	struct mb_imap_day since;
	bool dated = sd_conf_since(sd->conf, &since);
	int rc = -1;

	if (st->watermark == 0)
		return 0;
	/* Every server UID at or below the watermark is indexed, so the rows
	 * there exceed the server's count by exactly the expunged ones. */
	if (mb_index_uid_count(sd->idx, st->id, st->uidvalidity, 1, st->watermark, &rows, &max,
	    err) == -1)
		return -1;
	/* With SYNC_SINCE, EXISTS counts mail older than the day too: the count
	 * cannot tell, so the listing (of the day on) is the check. */
	if (rows == expect && !dated)
		return 0;	/* no command: the quiet tick stays quiet */
	mb_log_debug("folder '%s': %llu rows at or below UID %u, the server has %llu there: "
	    "listing UIDs", st->name, (unsigned long long)rows, st->watermark,
	    (unsigned long long)expect);
	if (mb_imap_uids_since(imap, 0, dated ? &since : NULL, &srv, &n_srv, err) == -1 ||
	    mb_index_uids(sd->idx, st->id, st->uidvalidity, 1, st->watermark, &idx, &n_idx,
	    err) == -1 ||
	    merge_listing(&r, srv, n_srv, idx, n_idx, st->watermark, &missing) == -1)
		goto out;
	log_result(&r, "expunge check");
	rc = 0;
	if (missing != 0) {
		/* Not what the watermark promises: fetch again from there. */
		mb_log_warnx("folder '%s': UID %u is in the mailbox but not in the index; "
		    "watermark %u -> %u", st->name, missing, st->watermark, missing - 1);
		st->watermark = missing - 1;
		rc = 1;
	}
out:
	free(srv);
	free(idx);
	return rc;
}
