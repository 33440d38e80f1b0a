/*
 * The backfill's progress display: per folder, indexed of total, the rate
 * since the run started and an ETA.  On a terminal the block is redrawn in
 * place twice a second; otherwise a plain line per folder every ten seconds
 * (a log, or a pipe, gets no escape codes).  sched.c notes each folder's
 * total at its EXAMINE; loop.c asks for the redraws.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/log.h"
#include "syncd.h"

#define PROGRESS_TTY_MS		500
#define PROGRESS_PLAIN_MS	10000

void
sd_progress_init(struct sd_progress_state *ps, bool tty)
{
	memset(ps, 0, sizeof(*ps));
	ps->tty = tty;
}

void
sd_progress_note(struct sd_progress_state *ps, struct mb_index *idx, const char *name,
    int64_t folder_id, uint32_t uidvalidity, uint32_t total, bool first_tick)
{
	struct sd_progress *p = NULL;
	struct mb_err err = { 0 };
	uint64_t n = 0;

	for (size_t i = 0; i < ps->n_folders; i++)
		if (ps->folders[i].folder_id == folder_id)
			p = &ps->folders[i];
	if (p == NULL) {
		ps->folders = mb_xrealloc(ps->folders, (ps->n_folders + 1) * sizeof(*p));
		p = &ps->folders[ps->n_folders++];
		memset(p, 0, sizeof(*p));
		p->name = mb_xstrdup(name);
		p->folder_id = folder_id;
	}
	if (sd_count_rows(idx, folder_id, uidvalidity, &n, &err) == -1)
		mb_log_warnx("%s", err.msg);
	if (p->uidvalidity != uidvalidity || first_tick)
		p->at_start = n;
	p->uidvalidity = uidvalidity;
	p->total = total;
	p->indexed = n;
}

static void
fmt_duration(char *buf, size_t len, double s)
{
	long t = (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void
sd_progress_draw(struct sd_progress_state *ps, struct mb_index *idx, long long started_ms,
    bool force)
{
	long long now = mb_now_ms();
	double secs = (double)(now - started_ms) / 1000.0;
	struct mb_err err = { 0 };
	unsigned lines = 0;

	if (!force && now < ps->next_ms)
		return;
	ps->next_ms = now + (ps->tty ? PROGRESS_TTY_MS : PROGRESS_PLAIN_MS);
	if (ps->tty && ps->lines > 0)
		printf("\033[%uA", ps->lines);	/* back to the top of the block */
	for (size_t i = 0; i < ps->n_folders; i++) {
		struct sd_progress *p = &ps->folders[i];
		double rate, pct;
		char eta[32] = "-";

		if (sd_count_rows(idx, p->folder_id, p->uidvalidity, &p->indexed, &err) == -1)
			break;
		rate = secs > 0.5 ? (double)(p->indexed - p->at_start) / secs : 0;
		pct = p->total ? 100.0 * (double)p->indexed / p->total : 100.0;
		if (pct > 100.0)
			pct = 100.0;
		if (p->indexed >= p->total)
			snprintf(eta, sizeof(eta), "done");
		else if (rate > 0)
			fmt_duration(eta, sizeof(eta), (double)(p->total - p->indexed) / rate);
		if (ps->tty) {
			int bar = (int)(pct / 5), j;
			char b[21];

			for (j = 0; j < 20; j++)
				b[j] = j < bar ? '#' : '.';
			b[20] = '\0';
			printf("\r\033[K%-24.24s [%s] %7llu/%-7u %6.1f msg/s  ETA %s\n", p->name, b,
			    (unsigned long long)p->indexed, p->total, rate, eta);
		} else if (force || p->indexed != p->at_start || p->indexed < p->total)
			printf("backfill: %s: %llu of %u indexed, %.1f msg/s, ETA %s\n", p->name,
			    (unsigned long long)p->indexed, p->total, rate, eta);
		lines++;
	}
	ps->lines = lines;
	fflush(stdout);
}

void
sd_progress_say(struct sd_progress_state *ps, const char *line)
{
	printf("%s\n", line);
	ps->lines = 0;	/* the block is above this line now */
}

bool
sd_progress_any(const struct sd_progress_state *ps)
{
	return ps->n_folders > 0;
}

void
sd_progress_release(struct sd_progress_state *ps)
{
	for (size_t i = 0; i < ps->n_folders; i++)
		free(ps->folders[i].name);
	free(ps->folders);
	ps->folders = NULL;
	ps->n_folders = 0;
}
