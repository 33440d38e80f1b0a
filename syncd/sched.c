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
#define SCHED_RUNS_MAX		8	/* ranges per bucket, then one over all its holes */
#define SCHED_NOOP_MS		10000	/* a kept session's NOOP: answered by then, or replaced */
/*
 * A kept session used this recently goes straight to its EXAMINE, without
 * a NOOP first; if the targeted sync fails on it (the server closed it,
 * `doveadm kick`), it is done again once on a new session.  Past this, a
 * session may have been dropped without a word (a NAT's idle timeout), and
 * the sync's first command would wait for SYNC_RANGE_TIMEOUT to learn it:
 * the NOOP learns it within SCHED_NOOP_MS.  A connection's NAT entry lives
 * minutes at least; a burst of mail is seconds apart.
 */
#define SCHED_KEPT_FRESH_MS	30000

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
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
 * Queue what one bucket lo:hi lacks: srv[0..n) are the server's UIDs in it,
 * ascending.  Only the UIDs the index does not hold are fetched, so one new
 * mail costs one body, not the bucket's: each run of missing UIDs (with no
 * indexed UID of the server's between them) is its own range; more than
 * SCHED_RUNS_MAX runs become one range from the first missing UID to the
 * last, which refetches the indexed ones between (an upsert: harmless).
 * One new mail at the top of a folder of 37 is the range 38:100.
 * Ranges depend only on the server and the index, so a range still queued
 * from the last tick is the same range again (INSERT OR IGNORE).
 * 1: the per-tick cap was reached.
 */
static int
queue_missing(struct sd *sd, const struct mb_folder_state *st, const uint32_t *srv, size_t n,
    uint32_t lo, uint32_t hi, struct mb_err *err)
{
	uint32_t first[SCHED_RUNS_MAX + 1], last[SCHED_RUNS_MAX + 1], *have = NULL;
	size_t n_have = 0, h = 0, runs = 0;
	bool in_run = false;

	if (mb_index_uids(sd->idx, st->id, st->uidvalidity, lo, hi, &have, &n_have, err) == -1)
		return -1;
	for (size_t i = 0; i < n; i++) {
		while (h < n_have && have[h] < srv[i])
			h++;
		if (h < n_have && have[h] == srv[i]) {
			in_run = false;
			continue;
		}
		if (!in_run && runs == SCHED_RUNS_MAX) {
			/* Too many holes: one range over all of them. */
			last[0] = srv[n - 1];
			for (size_t j = n; j-- > i;)
				if (!(bsearch(&srv[j], have, n_have, sizeof(*have), cmp_u32))) {
					last[0] = srv[j];
					break;
				}
			runs = 1;
			break;
		}
		if (!in_run)
			first[runs++] = srv[i];
		last[runs - 1] = srv[i];
		in_run = true;
	}
	/* A last run with nothing indexed above it extends to the bucket's end:
	 * mail that arrives before the worker's FETCH comes in with it (UIDs
	 * that do not exist cost nothing). */
	if (runs > 0 && last[runs - 1] == srv[n - 1] &&
	    (n_have == 0 || have[n_have - 1] < last[runs - 1]))
		last[runs - 1] = hi;
	free(have);
	for (size_t k = 0; k < runs; k++) {
		bool added;

		if (sd->mode != SD_BACKFILL && sd->sched.tick_queued >= sd->sched.folder_limit)
			return 1;	/* the folder's share of the per-tick cap: the rest waits */
		if (sd_queue_add(sd->idx, st->id, st->uidvalidity, first[k], last[k], &added,
		    err) == -1)
			return -1;
		if (added) {
			sd->sched.tick_queued++;
			mb_log_debug("folder '%s': queued %u:%u (bucket %u:%u: %zu in the mailbox, "
			    "%zu indexed)", st->name, first[k], last[k], lo, hi, n, n_have);
		}
	}
	return 0;
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
			size_t s0 = i;
			int r;

			while (i < n && (uids[i] - 1 - base) / R == k) {
				have++;
				i++;
			}
			/* Short, or holding the first gap (rows of expunged mail can
			 * make a count look whole while a UID is missing). */
			if (counts[k - k0] >= have && !(first_gap >= lo && first_gap <= hi))
				continue;
			if (hi > UINT32_MAX)
				hi = UINT32_MAX;
			r = queue_missing(sd, st, uids + s0, have, (uint32_t)lo, (uint32_t)hi, err);
			if (r != 0)
				return r;
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

/* Delete the rows of st's older UIDVALIDITY generations (none: a no-op). */
static int
purge_old(struct sd *sd, const struct mb_folder_state *st, struct mb_err *err)
{
	unsigned purged;

	if (mb_index_purge_generations(sd->idx, st->id, st->uidvalidity, &purged, err) == -1)
		return -1;
	if (purged > 0)
		mb_log_info("folder '%s': uidvalidity %u has converged; purged %u message%s of "
		    "older uidvalidities", st->name, st->uidvalidity, purged,
		    purged == 1 ? "" : "s");
	return 0;
}

/* One folder: EXAMINE, then maybe SEARCH and queue.  -1 only for session errors. */
static int
sync_folder(struct sd *sd, struct mb_imap *imap, const char *name, const char *role,
    bool role_by_name, bool *converged, struct mb_err *err)
{
	struct mb_folder_state st = { 0 };
	struct mb_imap_status ex = { 0 };
	struct mb_imap_day since;
	struct mb_err ferr = { 0 };
	uint32_t *uids = NULL, top, base, wm, first_gap;
	uint64_t flags = 0;
	size_t n = 0, above, counted;
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
	st.role_by_name = role != NULL && role_by_name;
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
	if (!same_v)
		st.flag_cursor = 0;
	if (same_v && sd_reconcile_flags(sd, imap, &st, &ex, sd->sched.flag_share, &flags,
	    err) == -1)
		goto out;
	sd->sched.flag_used += flags;
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
	if (mb_imap_uids_since(imap, base, sd_conf_since(sd->conf, &since) ? &since : NULL,
	    &uids, &n, err) == -1)
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
	/* The current generation has converged: older ones are not needed any more. */
	if (st.watermark >= top && purge_old(sd, &st, err) == -1)
		goto out;
	/*
	 * UIDs this tick listed above the watermark that EXISTS counted: the
	 * rest of EXISTS is below it.  Mail that came between the EXAMINE and
	 * the listing is above top (the EXAMINE's UIDNEXT - 1), listed but not
	 * counted; counted, it made the check find a row missing and list
	 * every UID of the folder (test_syncd_watch, idle_search_ahead).
	 */
	counted = 0;
	for (above = n; above > 0 && uids[above - 1] > st.watermark; above--)
		counted += uids[above - 1] <= top;
	lowered = same_v ? sd_reconcile_expunges(sd, imap, &st, ex.exists, counted, err) : 0;
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
 * longer configured: drop their queued ranges, hide them from every reader
 * at once (absent_ticks > 0) and purge them, rows and all, once
 * SD_ABSENT_PURGE_TICKS ticks in a row have not listed or not wanted them,
 * so one bad LIST (or a SYNC_FOLDERS edited by mistake) cannot wipe an
 * index; listed and wanted again before that, they are served again as
 * they were.  A folder left out of SYNC_FOLDERS is not synced any more, so
 * its rows would only grow stale: it is treated as gone.
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
		const struct mb_folder_state *k = &known[i];
		bool listed = false, wanted = false;
		const char *why;
		unsigned absent, purged;

		for (size_t j = 0; j < n && !listed; j++)
			listed = list[j].selectable && same_folder(k->name, list[j].name);
		for (size_t j = 0; j < n_want && !wanted; j++)
			wanted = same_folder(k->name, want[j]);
		if (!listed || !wanted)
			drop_queued(sd, k->id, k->name, 0);
		if (listed && wanted && k->absent_ticks == 0)
			continue;
		mb_err_clear(&err);
		if (mb_index_folder_presence(sd->idx, k->id, listed, wanted, &absent, &err) == -1) {
			mb_log_warnx("folder '%s': %s", k->name, err.msg);
			continue;
		}
		why = listed ? "left out of SYNC_FOLDERS" : "absent";
		if (listed && wanted)
			mb_log_info("folder '%s': listed again and synced; served again", k->name);
		else if (absent == 1 && listed)
			mb_log_warnx("folder '%s': no longer in SYNC_FOLDERS; hidden, and purged if "
			    "still left out after %u ticks", k->name, SD_ABSENT_PURGE_TICKS);
		else if (absent == 1)
			mb_log_warnx("folder '%s': no longer listed by the server; hidden, and "
			    "purged if still absent after %u ticks", k->name, SD_ABSENT_PURGE_TICKS);
		if ((listed && wanted) || absent < SD_ABSENT_PURGE_TICKS)
			continue;
		if (mb_index_purge_folder(sd->idx, k->id, &purged, &err) == -1)
			mb_log_warnx("folder '%s': purge: %s", k->name, err.msg);
		else
			mb_log_info("folder '%s': %s for %u ticks; purged with its %u indexed "
			    "message%s", k->name, why, absent, purged, purged == 1 ? "" : "s");
	}
	mb_folder_list_free(&known, n_known);
}

/*
 * Roles for the folders SPECIAL-USE left without one, by name inside the
 * personal namespace (docs/syncd.md "Roles without SPECIAL-USE"): Courier's
 * INBOX.Trash is the bin as Dovecot's \Trash is.
 */
static int
roles_by_name(struct mb_imap *imap, struct mb_imap_folder *list, size_t n, struct mb_err *err)
{
	char *prefix = NULL, delim;

	if (mb_imap_namespace(imap, &prefix, &delim, err) == -1)
		return -1;
	mb_imap_roles_by_name(list, n, prefix);
	for (size_t i = 0; i < n; i++)
		if (list[i].role_by_name)
			mb_log_debug("folder '%s': role %s by its name (no SPECIAL-USE role)",
			    list[i].name, list[i].role);
	free(prefix);
	return 0;
}

int
sd_sched_tick(struct sd *sd, struct mb_err *err)
{
	struct mb_imap *imap = NULL;
	struct mb_imap_folder *list = NULL;
	char **want = NULL;
	uint64_t *demand = NULL, *rest = NULL;
	size_t n_list = 0, n_want = 0, start;
	bool converged = true, capped = false;
	int r = -1;

	sd->sched.tick_queued = 0;
	sd->sched.flag_used = 0;
	sd->sched.tick_converged = false;
	/* A tick logs in afresh, and a push's kept session is closed first:
	 * one scheduler session at a time, against the server's limit. */
	sd_sched_release(sd);
	/* this session alone: VANISHED for the reconciliation */
	if (sd_connect(sd, true, &imap, err) == -1)
		return -1;
	mb_imap_set_deadline(imap, mb_now_ms() + 1000LL * sd->conf->sync_range_timeout);
	if (mb_imap_list(imap, &list, &n_list, err) == -1 ||
	    roles_by_name(imap, list, n_list, err) == -1)
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
	/* What each folder's flag window would take (servers without CONDSTORE). */
	demand = mb_xcalloc(n_want ? n_want : 1, sizeof(*demand));
	rest = mb_xcalloc(n_want ? n_want : 1, sizeof(*rest));
	for (size_t i = 0; i < n_want; i++)
		demand[i] = sd_reconcile_demand(sd, want[i], mb_imap_has_capability(imap,
		    "CONDSTORE"));
	/*
	 * The per-tick cap (SYNC_MAX_RANGES_PER_TICK) is shared: each folder may
	 * queue an equal part of what is left for it and the folders after it,
	 * so one folder's backfill does not hold the others back; what a folder
	 * leaves goes to those after it.  The order starts one folder later each
	 * tick, so the first place (the largest share) goes round.
	 */
	start = n_want > 0 ? sd->sched.rotate++ % n_want : 0;
	for (size_t o = 0; o < n_want; o++) {
		const struct mb_imap_folder *f = NULL;
		size_t i = (start + o) % n_want;
		unsigned left = sd->conf->sync_max_ranges > sd->sched.tick_queued ?
		    sd->conf->sync_max_ranges - sd->sched.tick_queued : 0;
		int fr;

		sd->sched.folder_limit = sd->sched.tick_queued +
		    (unsigned)((left + (n_want - o) - 1) / (n_want - o));
		/* SYNC_FLAG_BUDGET is shared max-min fair: small folders are asked
		 * whole, the large ones share the rest (each goes round by its
		 * cursor), and what a folder leaves goes to those after it. */
		for (size_t k = 0; k < n_want - o; k++)
			rest[k] = demand[(start + o + k) % n_want];
		sd->sched.flag_share = sd_flag_share(sd->conf->sync_flag_budget >
		    sd->sched.flag_used ? sd->conf->sync_flag_budget - sd->sched.flag_used : 0,
		    rest, n_want - o);

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
		fr = sync_folder(sd, imap, f->name, f->role, f->role_by_name, &converged, err);
		if (fr == -1) {
			mb_index_rollback(sd->idx);
			goto out;
		}
		if (sd_commit(sd, err) == -1)
			goto out;
		capped |= fr == 1;
	}
	if (capped)
		mb_log_info("queued %u ranges, the per-tick cap shared by the folders; the rest "
		    "waits for the next tick",
		    sd->sched.tick_queued);
	if (sd->sched.flag_used > 0)
		mb_log_info("flags of %llu indexed message%s asked without CONDSTORE "
		    "(SYNC_FLAG_BUDGET %u)", (unsigned long long)sd->sched.flag_used,
		    sd->sched.flag_used == 1 ? "" : "s", sd->conf->sync_flag_budget);
	sd->sched.tick_converged = converged && sd->sched.tick_queued == 0;
	sd_attach_tick(sd);
	r = 0;
out:
	mb_imap_folders_free(&list, n_list);
	sd_free_names(want, n_want);
	free(demand);
	free(rest);
	mb_imap_close(&imap);
	return r;
}

/*
 * The session of a targeted sync: the one the last push kept, if it still
 * answers a NOOP, else a new LOGIN; one kept less than SCHED_KEPT_FRESH_MS
 * ago without the NOOP (*unproven_r true: the caller syncs again on a new
 * session if the sync fails on it).  A kept session saves each push a
 * connection and a LOGIN, about four round trips to the server (more with
 * TLS; docs/benchmarks.md, "Push: the scheduler's session kept"), and
 * within a burst its NOOP too.  On success *imap_r is the caller's.
 */
static int
push_session(struct sd *sd, struct mb_imap **imap_r, bool *unproven_r, struct mb_err *err)
{
	struct mb_imap *kept = sd->sched.kept;
	struct mb_imap_status st = { 0 };
	struct mb_err nerr = { 0 };
	bool fresh = mb_now_ms() - sd->sched.kept_since_ms < SCHED_KEPT_FRESH_MS;

	*unproven_r = false;
	sd->sched.kept = NULL;
	sd->sched.kept_until_ms = 0;
	if (kept != NULL && fresh) {
		*imap_r = kept;
		*unproven_r = true;
		return 0;
	}
	if (kept != NULL) {
		mb_imap_set_deadline(kept, mb_now_ms() + SCHED_NOOP_MS);
		if (mb_imap_noop(kept, &st, &nerr) == 0) {
			*imap_r = kept;
			return 0;
		}
		mb_log_info("the last push's session is gone (%s); logging in again", nerr.msg);
		mb_imap_close(&kept);
	}
	return sd_connect(sd, true, imap_r, err);
}

void
sd_sched_release(struct sd *sd)
{
	mb_imap_close(&sd->sched.kept);
	sd->sched.kept_until_ms = 0;
}

int
sd_sched_kept_timeout(struct sd *sd)
{
	int left = sd_warm_left(sd->sched.kept_until_ms);	/* 0 while none is kept */

	if (left < 0 && sd->sched.kept != NULL) {
		mb_log_debug("the last push's session kept SYNC_PUSH_KEEP seconds: closing it");
		sd_sched_release(sd);
	}
	return left;
}

int
sd_sched_folder(struct sd *sd, const char *folder, struct mb_err *err)
{
	struct mb_folder_state known = { 0 };
	struct mb_imap *imap = NULL;
	struct mb_err ferr = { 0 };
	bool converged = true;
	char *role = NULL;
	bool role_by_name = false, unproven = false;
	uint64_t flag_used;
	unsigned queued;
	int r = -1, rc;

	sd->sched.tick_queued = 0;
	sd->sched.tick_converged = false;
	/* No LIST: the role is the one the last tick's LIST gave. */
	if (mb_index_folder_get(sd->idx, folder, &known, &ferr) == 0) {
		role = mb_xstrdup(known.role);
		role_by_name = known.role_by_name;
	}
	mb_folder_state_release(&known);
	if (push_session(sd, &imap, &unproven, err) == -1)
		goto out;
	sd->sched.targeted = true;
	/* One folder: the whole budget is its own. */
	sd->sched.flag_share = sd->conf->sync_flag_budget;
	if (sd_begin(sd, err) == -1)
		goto out;
	queued = sd->sched.tick_queued;
	flag_used = sd->sched.flag_used;
	rc = sync_folder(sd, imap, folder, role, role_by_name, &converged, err);
	if (rc == -1 && unproven) {
		/* the kept session unproven: gone since, most likely; once more on a new one */
		mb_index_rollback(sd->idx);
		mb_log_info("the last push's session is gone (%s); logging in again", err->msg);
		mb_err_clear(err);
		mb_imap_close(&imap);
		sd->sched.tick_queued = queued;
		sd->sched.flag_used = flag_used;
		if (sd_connect(sd, true, &imap, err) == -1 || sd_begin(sd, err) == -1)
			goto out;
		converged = true;
		rc = sync_folder(sd, imap, folder, role, role_by_name, &converged, err);
	}
	if (rc == -1) {
		mb_index_rollback(sd->idx);
		goto out;
	}
	if (sd_commit(sd, err) == -1)
		goto out;
	r = 0;
	/* Kept for the next push (SYNC_PUSH_KEEP); a session that failed is not. */
	if (!quit_requested(sd) && sd_push_keep_ms(sd) > 0) {
		sd->sched.kept = imap;
		sd->sched.kept_until_ms = mb_now_ms() + sd_push_keep_ms(sd);
		sd->sched.kept_since_ms = mb_now_ms();
		imap = NULL;
	}
out:
	sd->sched.targeted = false;
	free(role);
	mb_imap_close(&imap);
	return r;
}
