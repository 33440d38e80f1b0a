/*
 * The enumeration half of a tick (docs/syncd.md "One tick", the steps up to
 * the fetch): one IMAP session, one LIST, one EXAMINE per folder, and a UID
 * SEARCH only for folders whose watermark is below the top.  What is missing
 * is found by comparing, bucket by bucket, the UIDs the server lists with
 * the rows the index holds, so a folder converges whatever happened before
 * (crashes, dead letters, out-of-order completion) and then goes quiet.
 *
 * This runs in the scheduler process and blocks on IMAP, each call bounded by
 * a deadline; signals are looked at between folders, so SIGTERM waits at
 * most one folder's enumeration.  Fetching bodies, the slow and hostile
 * part, happens only in workers.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mailbox/log.h"
#include "syncd.h"

#define SCHED_BUCKETS_AT_ONCE	1024

int
sd_split_folders(const char *spec, char ***names_r, size_t *n_r)
{
	char **names = NULL;
	size_t n = 0;
	const char *p = spec;

	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *b = p, *e = end;

		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > b) {
			names = mb_xrealloc(names, (n + 1) * sizeof(char *));
			names[n++] = mb_xstrndup(b, (size_t)(e - b));
		}
		p = comma ? comma + 1 : NULL;
	}
	*names_r = names;
	*n_r = n;
	return 0;
}

void
sd_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* INBOX is case-insensitive (RFC 3501 5.1); every other name is exact. */
static bool
same_folder(const char *a, const char *b)
{
	if (strcasecmp(a, "INBOX") == 0)
		return strcasecmp(b, "INBOX") == 0;
	return strcmp(a, b) == 0;
}

/* SIGTERM or SIGINT since the loop last looked (it acts on them after the tick). */
static bool
quit_requested(struct sd *sd)
{
	return (sd_proc_signals(&sd->proc) & SD_SIG_STOP) != 0 || sd->tick.quit;
}

/* Drop a folder's queued ranges (all, or of other uidvalidities), saying so. */
static void
drop_queued(struct sd *sd, int64_t folder_id, const char *name, uint32_t keep)
{
	struct mb_err err = { 0 };
	unsigned dropped = 0;

	if (sd_queue_drop_folder(sd->idx, folder_id, keep, &dropped, &err) == -1)
		mb_log_warnx("folder '%s': %s", name, err.msg);
	else if (dropped > 0)
		mb_log_info("folder '%s': dropped %u queued range%s", name, dropped,
		    dropped == 1 ? "" : "s");
}

/*
 * Queue the short buckets of one folder.  uids are the server's UIDs above
 * base (a multiple of the range size, at or below the watermark), so the
 * bucket straddling the watermark is compared whole.
 */
static int
queue_gaps(struct sd *sd, const struct mb_folder_state *st, uint32_t base, const uint32_t *uids,
    size_t n, uint32_t first_gap, struct mb_err *err)
{
	const uint64_t R = sd->conf->sync_range_size;
	uint32_t counts[SCHED_BUCKETS_AT_ONCE];
	size_t i = 0;

	while (i < n) {
		uint64_t k0 = (uids[i] - 1 - base) / R;
		uint64_t klast = (uids[n - 1] - 1 - base) / R;
		size_t span = (size_t)(klast - k0 + 1 < SCHED_BUCKETS_AT_ONCE ?
		    klast - k0 + 1 : SCHED_BUCKETS_AT_ONCE);

		if (mb_index_bucket_counts(sd->idx, st->id, st->uidvalidity,
		    (uint32_t)(base + 1 + k0 * R), (uint32_t)R, span, counts, err) == -1)
			return -1;
		while (i < n && (uids[i] - 1 - base) / R < k0 + span) {
			uint64_t k = (uids[i] - 1 - base) / R;
			uint64_t lo = base + 1 + k * R, hi = lo + R - 1;
			uint32_t have = 0;
			bool added;

			while (i < n && (uids[i] - 1 - base) / R == k) {
				have++;
				i++;
			}
			/* Short, or holding the first gap (rows of expunged mail can
			 * make a count look whole while a UID is missing). */
			if (counts[k - k0] >= have && !(first_gap >= lo && first_gap <= hi))
				continue;
			if (sd->mode != SD_BACKFILL && sd->sched.tick_queued >= sd->conf->sync_max_ranges)
				return 1;	/* the per-tick cap: the rest waits */
			if (hi > UINT32_MAX)
				hi = UINT32_MAX;
			if (sd_queue_add(sd->idx, st->id, st->uidvalidity, (uint32_t)lo,
			    (uint32_t)hi, &added, err) == -1)
				return -1;
			if (added) {
				sd->sched.tick_queued++;
				mb_log_debug("folder '%s': queued %u:%u (%u in the mailbox, %u "
				    "indexed)", st->name, (uint32_t)lo, (uint32_t)hi, have,
				    counts[k - k0]);
			}
		}
	}
	return 0;
}

/*
 * A targeted sync (push): queue the listed UIDs above the watermark, in
 * runs of at most a range's size, so a worker fetches only the new mail and
 * not the indexed messages sharing its bucket.  Holes further down are the
 * tick's to find.
 */
static int
queue_new(struct sd *sd, const struct mb_folder_state *st, const uint32_t *uids, size_t n,
    struct mb_err *err)
{
	size_t i = 0;

	while (i < n && uids[i] <= st->watermark)
		i++;
	while (i < n) {
		size_t j = i + sd->conf->sync_range_size - 1 < n ? i + sd->conf->sync_range_size - 1 :
		    n - 1;
		bool added;

		if (sd->sched.tick_queued >= sd->conf->sync_max_ranges)
			return 1;
		if (sd_queue_add(sd->idx, st->id, st->uidvalidity, uids[i], uids[j], &added,
		    err) == -1)
			return -1;
		if (added) {
			sd->sched.tick_queued++;
			mb_log_debug("folder '%s': queued new mail %u:%u", st->name, uids[i], uids[j]);
		}
		i = j + 1;
	}
	return 0;
}

/* One folder: EXAMINE, then maybe SEARCH and queue.  -1 only for session errors. */
static int
sync_folder(struct sd *sd, struct mb_imap *imap, const char *name, const char *role,
    bool *converged, struct mb_err *err)
{
	struct mb_folder_state st = { 0 };
	struct mb_imap_status ex = { 0 };
	struct mb_err ferr = { 0 };
	uint32_t *uids = NULL, top, base, wm, first_gap;
	size_t n = 0, above;
	int64_t id;
	int r = -1, capped = 0, lowered;
	bool same_v;

	mb_imap_set_deadline(imap, mb_now_ms() + 1000LL * sd->conf->sync_range_timeout);
	if (mb_index_folder_ensure(sd->idx, name, role, &id, err) == -1 ||
	    mb_index_folder_get(sd->idx, name, &st, err) == -1)
		return -1;
	/* This tick's LIST is the truth: a role the server no longer reports is
	 * cleared (saved below), or trash_message would aim at an old \Trash. */
	free(st.role);
	st.role = mb_xstrdup(role);
	if (mb_imap_examine(imap, name, &ex, &ferr) == -1) {
		if (ferr.code == MB_E_NOTFOUND) {
			/* Listed a moment ago, refused now: deleted or renamed under us. */
			mb_log_warnx("folder '%s': cannot be examined (%s); skipped", name, ferr.msg);
			drop_queued(sd, st.id, name, 0);
			r = 0;
		} else
			mb_err_set(err, ferr.code, "%s", ferr.msg);
		goto out;
	}
	same_v = st.uidvalidity == ex.uidvalidity;	/* false the first time, too */
	if (st.uidvalidity != 0 && !same_v) {
		mb_log_warnx("folder '%s': uidvalidity changed from %u to %u; re-indexing from "
		    "UID 1 (rows under %u stay)", name, st.uidvalidity, ex.uidvalidity,
		    st.uidvalidity);
		st.watermark = 0;
	}
	drop_queued(sd, st.id, name, ex.uidvalidity);	/* ranges of an old uidvalidity */
	/* Against the state the last tick recorded; the new HIGHESTMODSEQ is
	 * written below, in this same transaction as the changes. */
	if (same_v && sd_reconcile_flags(sd, imap, &st, &ex, err) == -1)
		goto out;
	st.uidvalidity = ex.uidvalidity;
	st.uidnext = ex.uidnext;
	st.highestmodseq = ex.highestmodseq;
	top = ex.uidnext > 0 ? ex.uidnext - 1 : 0;
	if (st.watermark >= top) {
		/* The quiet tick: nothing above the watermark, no SEARCH. */
		mb_log_debug("folder '%s': up to date at UID %u", name, st.watermark);
		goto save;
	}
	/* A targeted sync lists only what is above the watermark. */
	base = sd->sched.targeted ? st.watermark :
	    st.watermark - st.watermark % sd->conf->sync_range_size;
	if (mb_imap_uids_above(imap, base, &uids, &n, err) == -1)
		goto out;
	for (above = 0; above < n && uids[above] <= st.watermark; above++)
		;
	if (mb_index_watermark(sd->idx, st.id, st.uidvalidity, st.watermark, uids + above,
	    n - above, &wm, err) == -1)
		goto out;
	/* Every listed UID indexed: nothing exists between the last and UIDNEXT-1. */
	if (wm >= (n > 0 ? uids[n - 1] : st.watermark) && wm < top)
		wm = top;
	first_gap = wm < top ? wm + 1 : 0;
	if (wm > st.watermark)
		mb_log_debug("folder '%s': watermark %u -> %u", name, st.watermark, wm);
	st.watermark = wm;
	if (wm < top) {
		capped = sd->sched.targeted ? queue_new(sd, &st, uids, n, err) :
		    queue_gaps(sd, &st, base, uids, n, first_gap, err);
		if (capped == -1)
			goto out;
		*converged = false;
	}
save:
	/* UIDs this tick listed above the watermark: the rest of EXISTS is below it. */
	for (above = n; above > 0 && uids[above - 1] > st.watermark; above--)
		;
	lowered = same_v ? sd_reconcile_expunges(sd, imap, &st, ex.exists, n - above, err) : 0;
	if (lowered == -1)
		goto out;
	if (lowered == 1)
		*converged = false;
	st.last_sync = (int64_t)time(NULL);
	if (mb_index_folder_update(sd->idx, &st, err) == -1)
		goto out;
	sd_progress_note(&sd->progress, sd->idx, name, st.id, st.uidvalidity, ex.exists,
	    sd->tick.ticks == 1);
	r = capped;
out:
	free(uids);
	mb_folder_state_release(&st);
	return r;
}

/*
 * Folders the index knows that the server no longer lists, or that are no
 * longer configured: drop their queued ranges (their rows stay).
 */
static void
forget_unwanted(struct sd *sd, const struct mb_imap_folder *list, size_t n, char **want,
    size_t n_want)
{
	struct mb_folder_state *known = NULL;
	struct mb_err err = { 0 };
	size_t n_known = 0;

	if (mb_index_folder_list(sd->idx, &known, &n_known, &err) == -1) {
		mb_log_warnx("%s", err.msg);
		return;
	}
	for (size_t i = 0; i < n_known; i++) {
		bool listed = false, wanted = false;

		for (size_t j = 0; j < n && !listed; j++)
			listed = list[j].selectable && same_folder(known[i].name, list[j].name);
		for (size_t j = 0; j < n_want && !wanted; j++)
			wanted = same_folder(known[i].name, want[j]);
		if (!listed || !wanted)
			drop_queued(sd, known[i].id, known[i].name, 0);
	}
	mb_folder_list_free(&known, n_known);
}

int
sd_sched_tick(struct sd *sd, struct mb_err *err)
{
	struct mb_imap_conf c;
	struct mb_imap *imap = NULL;
	struct mb_imap_folder *list = NULL;
	char **want = NULL;
	size_t n_list = 0, n_want = 0;
	bool converged = true, capped = false;
	int r = -1;

	sd->sched.tick_queued = 0;
	sd->sched.tick_converged = false;
	sd_imap_conf(sd->conf, sd->password, &c);
	c.qresync = true;	/* this session alone: VANISHED for the reconciliation */
	if (mb_imap_connect(&c, &imap, err) == -1)
		return -1;
	mb_imap_set_deadline(imap, mb_now_ms() + 1000LL * sd->conf->sync_range_timeout);
	if (mb_imap_list(imap, &list, &n_list, err) == -1)
		goto out;
	if (sd->conf->sync_folders != NULL)
		sd_split_folders(sd->conf->sync_folders, &want, &n_want);
	else {
		for (size_t i = 0; i < n_list; i++) {
			if (!list[i].selectable)
				continue;
			want = mb_xrealloc(want, (n_want + 1) * sizeof(char *));
			want[n_want++] = mb_xstrdup(list[i].name);
		}
	}
	if (sd_begin(sd, err) == -1)
		goto out;
	forget_unwanted(sd, list, n_list, want, n_want);
	if (sd_commit(sd, err) == -1)
		goto out;
	for (size_t i = 0; i < n_want; i++) {
		const struct mb_imap_folder *f = NULL;
		int fr;

		if (quit_requested(sd)) {
			converged = false;
			break;
		}
		for (size_t j = 0; j < n_list && f == NULL; j++)
			if (same_folder(want[i], list[j].name))
				f = &list[j];
		if (f == NULL || !f->selectable) {
			struct mb_folder_state st = { 0 };
			struct mb_err ferr = { 0 };

			mb_log_warnx("folder '%s': %s upstream; skipped", want[i],
			    f ? "not selectable" : "not found");
			if (mb_index_folder_get(sd->idx, want[i], &st, &ferr) == 0)
				drop_queued(sd, st.id, want[i], 0);
			mb_folder_state_release(&st);
			continue;
		}
		/* One transaction per folder: its state and its new ranges together. */
		if (sd_begin(sd, err) == -1)
			goto out;
		fr = sync_folder(sd, imap, f->name, f->role, &converged, err);
		if (fr == -1) {
			mb_index_rollback(sd->idx);
			goto out;
		}
		if (sd_commit(sd, err) == -1)
			goto out;
		capped |= fr == 1;
	}
	if (capped)
		mb_log_info("queued %u ranges, the per-tick cap; the rest waits for the next tick",
		    sd->sched.tick_queued);
	sd->sched.tick_converged = converged && sd->sched.tick_queued == 0;
	sd_attach_tick(sd);
	r = 0;
out:
	mb_imap_folders_free(&list, n_list);
	sd_free_names(want, n_want);
	mb_imap_close(&imap);
	return r;
}

int
sd_sched_folder(struct sd *sd, const char *folder, struct mb_err *err)
{
	struct mb_folder_state known = { 0 };
	struct mb_imap_conf c;
	struct mb_imap *imap = NULL;
	struct mb_err ferr = { 0 };
	bool converged = true;
	char *role = NULL;
	int r = -1;

	sd->sched.tick_queued = 0;
	sd->sched.tick_converged = false;
	/* No LIST: the role is the one the last tick's LIST gave. */
	if (mb_index_folder_get(sd->idx, folder, &known, &ferr) == 0)
		role = mb_xstrdup(known.role);
	mb_folder_state_release(&known);
	sd_imap_conf(sd->conf, sd->password, &c);
	c.qresync = true;
	if (mb_imap_connect(&c, &imap, err) == -1)
		goto out;
	sd->sched.targeted = true;
	if (sd_begin(sd, err) == -1)
		goto out;
	if (sync_folder(sd, imap, folder, role, &converged, err) == -1) {
		mb_index_rollback(sd->idx);
		goto out;
	}
	if (sd_commit(sd, err) == -1)
		goto out;
	r = 0;
out:
	sd->sched.targeted = false;
	free(role);
	mb_imap_close(&imap);
	return r;
}
