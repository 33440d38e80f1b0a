/*
 * Attachment housekeeping, a bounded slice per tick (docs/attachments.md):
 *
 * Re-extraction: attachments stored before extraction existed (an upgraded
 * install: extract_status NULL) get their text from the blob already on
 * disk, without a re-sync.  Every format runs in the sandboxed child here
 * (this is the scheduler, not a worker), at most ATTACH_TICK_MAX a tick and
 * for at most ATTACH_TICK_MS, with progress in the log.
 *
 * Blob garbage collection: the blobs/xx directories in turn, at most
 * ATTACH_GC_FILES names looked at a tick (the next tick goes on).  A
 * blob no attachment row names (expunged mail, purged generations) and
 * older than ATTACH_GRACE_S is removed with its extraction cache.  Against
 * a worker storing the same sha256 at the same time: the worker touches an
 * existing blob before relying on it (sd_blob_store), and the removal is
 * rename-aside, check the mtime again, then unlink -- a blob touched after
 * the first look is put back, and a worker touching it after the rename
 * finds it gone and writes it anew.  The grace outlasts any range
 * (SYNC_RANGE_TIMEOUT) between a blob's write and its row's commit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/attachments.h"
#include "mailbox/extract.h"
#include "mailbox/log.h"
#include "mailbox/util.h"
#include "syncd.h"

#define ATTACH_TICK_MAX	500
#define ATTACH_TICK_MS	5000
#define ATTACH_GRACE_S	(2 * 3600)
#define ATTACH_GC_FILES	20000

/* The blob's bytes (exactly size), or NULL. */
static unsigned char *
blob_read(const char *path, size_t *len_r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	unsigned char *buf;
	size_t got = 0;

	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (fd != -1)
			close(fd);
		return NULL;
	}
	buf = mb_xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	*len_r = got;
	return buf;
}

static void
reextract(struct sd *sd)
{
	const struct mb_extract_limits *lim = &sd->conf->extract;
	long long until = mb_now_ms() + ATTACH_TICK_MS;
	struct mb_attachment_backlog *v = NULL;
	struct mb_err err = { 0 };
	unsigned types = MB_EXTRACT_ALL;
	int64_t left = 0;
	size_t n = 0, done = 0;

	if (mb_extract_types_parse(lim->types, &types, &err) == -1 || types == 0)
		return;	/* off: old rows stay "not tried", to be read when it is on */
	if (mb_attachment_backlog(sd->idx, sd->attach.after_id, ATTACH_TICK_MAX, &v, &n, &left,
	    &err) == -1) {
		mb_log_warnx("attachments: %s", err.msg);
		mb_attachment_backlog_free(&v, n);
		return;
	}
	if (n == 0)
		sd->attach.after_id = 0;	/* from the start next time: rows may have come back */
	for (size_t i = 0; i < n && mb_now_ms() < until; i++) {
		struct mb_extract_out out;
		char path[4300];
		unsigned char *data;
		size_t len = 0;

		sd->attach.after_id = v[i].id;
		snprintf(path, sizeof(path), "%s/blobs/%.2s/%s", sd->conf->data_dir, v[i].sha256,
		    v[i].sha256 + 2);
		data = blob_read(path, &len);
		if (data == NULL) {
			memset(&out, 0, sizeof(out));
			snprintf(out.status, sizeof(out.status), "failed: the stored bytes are gone");
		} else
			mb_extract(lim, v[i].type, v[i].name, NULL, data, len, true, &out);
		free(data);
		if (mb_attachment_set_text(sd->idx, v[i].id, strncmp(out.status, "ok", 2) == 0 ?
		    out.text.data : NULL, out.text.len, out.status, &err) == -1) {
			mb_log_warnx("attachments: %s", err.msg);
			mb_buf_release(&out.text);
			break;
		}
		mb_buf_release(&out.text);
		done++;
	}
	mb_attachment_backlog_free(&v, n);
	if (done > 0)
		mb_log_info("attachments: extracted %zu stored attachment(s); %lld left", done,
		    (long long)(left - (int64_t)done));
}

/* Remove blob path (of sha) if still unreferenced and untouched since st. */
static bool
blob_remove(struct sd *sd, const char *path, const char *sha, const struct stat *st)
{
	char aside[4700], cache[4700];
	struct mb_err err = { 0 };
	struct stat now;
	bool used;

	if (mb_attachment_blob_used(sd->idx, sha, &used, &err) == -1 || used)
		return false;
	snprintf(aside, sizeof(aside), "%s.gc", path);
	if (rename(path, aside) == -1)
		return false;
	if (stat(aside, &now) == 0 && (now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != st->st_mtim.tv_nsec)) {
		/* A worker touched it between the looks: it is wanted again. */
		if (link(aside, path) == 0 || errno == EEXIST)
			unlink(aside);
		return false;
	}
	unlink(aside);
	snprintf(cache, sizeof(cache), "%s.txt", path);
	unlink(cache);
	return true;
}

/* One blobs/xx directory; the names looked at are added to *seen. */
static size_t
collect_dir(struct sd *sd, unsigned slot, size_t *seen)
{
	char dir[4200], path[4600], sha[65];
	time_t cutoff = time(NULL) - ATTACH_GRACE_S;
	struct dirent *de;
	size_t removed = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/blobs/%02x", sd->conf->data_dir, slot);
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		size_t nl = strlen(name);
		struct stat st;

		(*seen)++;
		if (name[0] == '.') {
			/* A worker's temporary file left by a crash. */
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (strncmp(name, ".tmp.", 5) == 0 && lstat(path, &st) == 0 &&
			    st.st_mtime < cutoff)
				unlink(path);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (nl == 66 && strcmp(name + 62, ".txt") == 0) {
			/* A cache whose blob is gone. */
			char blob[4600];

			snprintf(blob, sizeof(blob), "%s/%.62s", dir, name);
			if (access(blob, F_OK) == -1 && errno == ENOENT && lstat(path, &st) == 0 &&
			    st.st_mtime < cutoff)
				unlink(path);
			continue;
		}
		if (nl != 62 || strspn(name, "0123456789abcdef") != 62)
			continue;
		if (lstat(path, &st) == -1 || !S_ISREG(st.st_mode) || st.st_mtime >= cutoff)
			continue;
		snprintf(sha, sizeof(sha), "%02x%.62s", slot, name);
		if (blob_remove(sd, path, sha, &st))
			removed++;
	}
	closedir(d);
	return removed;
}

static void
collect(struct sd *sd)
{
	size_t seen = 0, removed = 0;

	for (unsigned i = 0; i < 256 && seen < ATTACH_GC_FILES; i++)
		removed += collect_dir(sd, sd->attach.gc_slot++ & 0xff, &seen);
	if (removed > 0)
		mb_log_info("attachments: removed %zu blob(s) no message refers to", removed);
}

void
sd_attach_tick(struct sd *sd)
{
	reextract(sd);
	collect(sd);
}
