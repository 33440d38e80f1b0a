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
 * difference makes syncd list UIDs.  Sync still never changes the mailbox:
 * UID FETCH (UID FLAGS) and UID SEARCH on an EXAMINEd folder.
 */
#include <stdlib.h>
#include <string.h>

#include "mailbox/log.h"
#include "syncd.h"

/* Without CONDSTORE, a full flag rescan every this many daemon ticks (daily
 * at the default SYNC_INTERVAL) or when the folder's UIDNEXT moved. */
#define SD_FLAG_RESCAN_TICKS	24

struct recon {
	struct sd			*sd;
	const struct mb_folder_state	*st;
	struct mb_err			*err;
	const uint32_t			*have;	/* rescan: indexed uids, ascending */
	bool				*seen;	/* rescan: have[i] was in the answer */
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

/* A full rescan answers for every message: mark it present, update it if it changed. */
static int
on_rescanned(const struct mb_imap_flags *m, void *ctx)
{
	struct recon *r = ctx;
	const uint32_t *p = bsearch(&m->uid, r->have, r->n_have, sizeof(*r->have), cmp_uid);

	if (p == NULL)
		return 0;	/* not indexed (yet): the gap search fetches it whole */
	r->seen[p - r->have] = true;
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
 * No usable mod-sequence: every indexed message's flags, one UID FETCH
 * 1:top (UID FLAGS), about 40 bytes a message; an indexed UID missing from
 * the answer has been expunged.
 */
static int
rescan(struct recon *r, struct mb_imap *imap, uint32_t top, struct mb_err *err)
{
	struct mb_imap_changes cb = { .flags = on_rescanned, .ctx = r };
	uint32_t *have, *gone;
	size_t n_have, n_gone = 0;
	int rc = -1;

	if (mb_index_uids(r->sd->idx, r->st->id, r->st->uidvalidity, 1, top, &have, &n_have,
	    err) == -1)
		return -1;
	r->have = have;
	r->n_have = n_have;
	r->seen = mb_xcalloc(n_have ? n_have : 1, sizeof(*r->seen));
	if (mb_imap_fetch_changes(imap, 1, top, 0, &cb, err) == -1)
		goto out;
	gone = have;	/* compacted in place: the absent ones */
	for (size_t i = 0; i < n_have; i++)
		if (!r->seen[i])
			gone[n_gone++] = have[i];
	if (delete_uids(r, gone, n_gone) == -1)
		goto out;
	log_result(r, "full flag rescan");
	rc = 0;
out:
	free(r->seen);
	free(have);
	r->seen = NULL;
	r->have = NULL;
	return rc;
}

/* Without a mod-sequence nothing proves a folder unchanged: rescan on a budget. */
static bool
rescan_due(const struct sd *sd, const struct mb_folder_state *st,
    const struct mb_imap_status *ex)
{
	if (ex->highestmodseq != 0)
		return true;	/* mod-sequences just became usable: once, then CHANGEDSINCE */
	return ex->uidnext != st->uidnext || sd->tick.ticks % SD_FLAG_RESCAN_TICKS == 0;
}

int
sd_reconcile_flags(struct sd *sd, struct mb_imap *imap, const struct mb_folder_state *st,
    const struct mb_imap_status *ex, struct mb_err *err)
{
	struct recon r = { .sd = sd, .st = st, .err = err };
	/* A HIGHESTMODSEQ that went down (a restored server) proves nothing. */
	bool modseq = ex->highestmodseq != 0 && st->highestmodseq != 0 &&
	    ex->highestmodseq >= st->highestmodseq;
	uint64_t rows;
	uint32_t top;

	if (modseq && ex->highestmodseq == st->highestmodseq)
		return 0;	/* the quiet tick: nothing changed, nothing asked */
	if (!modseq && !rescan_due(sd, st, ex))
		return 0;
	if (mb_index_uid_count(sd->idx, st->id, st->uidvalidity, 1, UINT32_MAX, &rows, &top,
	    err) == -1)
		return -1;
	if (rows == 0)
		return 0;	/* nothing indexed to reconcile */
	return modseq ? changes_since(&r, imap, top, err) : rescan(&r, imap, top, err);
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
