/*
 * syncd --status: what is indexed, what is queued, what failed, what was
 * written.  The index reads them (libmailbox/core/index_status.c,
 * index_queue.c, index_audit.c); this file prints.  --status opens the
 * index read-only, so it works next to a running daemon.  The watches are
 * not in the index (the scheduler alone knows them): it writes them to
 * DATA_DIR/watch.status (watch.c), read here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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

void
sd_status_print_watch(const char *data_dir, FILE *out)
{
	char path[4300], line[2048], when[32], last[32];
	long pid = 0;
	long long at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/watch.status", data_dir);
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(out, "\nwatch: none (no daemon running, or push off)\n");
		return;
	}
	if (fgets(line, sizeof(line), f) == NULL ||
	    sscanf(line, "syncd %ld %lld", &pid, &at) != 2) {
		fprintf(out, "\nwatch: %s is not readable\n", path);
		fclose(f);
		return;
	}
	fmt_time(when, sizeof(when), at);
	fprintf(out, "\nwatch (syncd pid %ld%s, as of %s):\n", pid,
	    kill((pid_t)pid, 0) == 0 || errno == EPERM ? "" : ", not running", when);
	fprintf(out, "  %-26s %-24s %-21s %-38s %s\n", "folder", "state", "since", "last event",
	    "reconnects");
	while (fgets(line, sizeof(line), f) != NULL) {
		char *fields[6], *p = line;
		size_t n = 0;

		line[strcspn(line, "\n")] = '\0';
		while (n < 6 && p != NULL) {
			fields[n++] = p;
			if ((p = strchr(p, '\t')) != NULL)
				*p++ = '\0';
		}
		if (n != 6)
			continue;
		fmt_time(when, sizeof(when), strtoll(fields[2], NULL, 10));
		fmt_time(last, sizeof(last), strtoll(fields[3], NULL, 10));
		fprintf(out, "  %-26s %-24s %-21s %-21s %-16s %s\n", fields[0], fields[1], when,
		    last, strcmp(fields[4], "-") == 0 ? "" : fields[4], fields[5]);
	}
	fclose(f);
}
