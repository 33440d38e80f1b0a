/*
 * syncd --status: what is indexed, what is queued, what failed, what was
 * written.  The index reads them (libmailbox/core/index_status.c,
 * index_queue.c, index_audit.c); this file prints.  --status opens the
 * index read-only, so it works next to a running daemon.
 */
#include <stdio.h>
#include <time.h>

#include "mailbox/index_audit.h"
#include "mailbox/index_queue.h"
#include "mailbox/index_status.h"
#include "syncd.h"

#define STATUS_DEAD_LETTERS	10
#define STATUS_WRITES		5

static void
fmt_time(char *buf, size_t len, int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t == 0 || gmtime_r(&tt, &tm) == NULL)
		snprintf(buf, len, "never");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

static int
print_folders(struct mb_index *idx, FILE *out, struct mb_err *err)
{
	struct mb_status_folder *f;
	size_t n;

	if (mb_index_status_folders(idx, &f, &n, err) == -1)
		return -1;
	fprintf(out, "%-28s %10s %10s %10s %10s %6s  %s\n", "folder", "indexed", "uidnext",
	    "watermark", "uidvalid.", "queued", "last sync");
	for (size_t i = 0; i < n; i++) {
		char when[32];

		fmt_time(when, sizeof(when), f[i].last_sync);
		fprintf(out, "%-28s %10llu %10u %10u %10u %6llu  %s\n", f[i].name,
		    (unsigned long long)f[i].indexed, f[i].uidnext, f[i].watermark,
		    f[i].uidvalidity, (unsigned long long)f[i].queued, when);
	}
	mb_status_folders_free(&f, n);
	return 0;
}

static int
print_queue(struct mb_index *idx, FILE *out, struct mb_err *err)
{
	struct mb_dead_letter *d;
	unsigned depth;
	int64_t next;
	uint64_t total;
	size_t n;

	if (mb_index_queue_depth(idx, &depth, &next, err) == -1)
		return -1;
	fprintf(out, "\nqueue: %u range%s", depth, depth == 1 ? "" : "s");
	if (depth > 0) {
		char when[32];

		fmt_time(when, sizeof(when), next);
		fprintf(out, ", next due %s", next <= time(NULL) ? "now" : when);
	}
	fputc('\n', out);

	if (mb_index_dead_letters(idx, STATUS_DEAD_LETTERS, &d, &n, &total, err) == -1)
		return -1;
	fprintf(out, "dead letters: %llu\n", (unsigned long long)total);
	for (size_t i = 0; i < n; i++) {
		char when[32];

		fmt_time(when, sizeof(when), d[i].failed_at);
		fprintf(out, "  %s  folder '%s' uidvalidity %u UIDs %u:%u, %u attempts: %s\n",
		    when, d[i].folder, d[i].uidvalidity, d[i].first, d[i].last, d[i].attempts,
		    d[i].last_error ? d[i].last_error : "");
	}
	mb_dead_letters_free(&d, n);
	return 0;
}

static int
print_writes(struct mb_index *idx, FILE *out, struct mb_err *err)
{
	struct mb_audit_entry *w;
	size_t n;

	if (mb_index_audit_recent(idx, STATUS_WRITES, &w, &n, err) == -1)
		return -1;
	fprintf(out, "last writes:\n");
	for (size_t i = 0; i < n; i++) {
		char when[32];

		fmt_time(when, sizeof(when), w[i].at);
		fprintf(out, "  %s  %s by '%s' on '%s' UID %lld: %s\n", when, w[i].tool,
		    w[i].requested_by ? w[i].requested_by : "", w[i].folder ? w[i].folder : "",
		    (long long)(w[i].uid == -1 ? 0 : w[i].uid), w[i].outcome);
	}
	mb_audit_list_free(&w, n);
	return 0;
}

int
sd_status_print(struct mb_index *idx, FILE *out, struct mb_err *err)
{
	if (print_folders(idx, out, err) == -1 || print_queue(idx, out, err) == -1)
		return -1;
	return print_writes(idx, out, err);
}
