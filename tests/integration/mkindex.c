/*
 * mkindex: build a test index from .eml fixtures, the way syncd would store
 * them (mb_mime_parse, then mb_index_upsert, or for --corpus mb_index_stage and
 * mb_index_flush), without IMAP.
 *
 *   mkindex INDEX DIR [--synthetic N | --bench N | --corpus CORPUS N [FIRST]]
 *
 * DIR holds one subdirectory per folder (INBOX, Sent, ...), each with .eml
 * files taken in name order as UIDs 1, 2, ...; the letters after the last
 * ',' in a name are flags (S seen, F flagged, A answered, D draft).
 * --synthetic N adds N generated messages in folder "Bulk" (for paging);
 * the first has a body of over 26,000 characters.  --bench N adds N
 * messages in folder "Bench" whose words follow a Zipf law over a 20,000
 * word vocabulary, about 2 KB each, closer to real mail for timing searches.
 * --corpus CORPUS N adds N messages in folder "Corpus": the .txt files under
 * CORPUS (the SpamAssassin corpus from scripts/deps) parsed in name order and
 * cloned round-robin with fresh Message-IDs until there are N.  With FIRST,
 * the clones FIRST .. FIRST+N-1 of that same sequence (UIDs from 1): two
 * indexes made with FIRST 0 and FIRST N hold the two halves of the one made
 * with 2N, message for message (scripts/bench-accounts).
 * Last, every complete chunk of 2,048 ids gets its ranking bounds, as syncd
 * builds them after its commits, and the full-text index is merged into one
 * segment, as syncd merges it once it has caught up.
 */
#include <dirent.h>
#include <stdint.h>
#include <strings.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/mime.h"
#include "mailbox/util.h"

static int
cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir (not starting with '.'); caller frees. */
static char **
list_dir(const char *dir, size_t *n_r)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t n = 0;

	if (d == NULL) {
		perror(dir);
		exit(1);
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		v = mb_xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = mb_xstrdup(e->d_name);
	}
	closedir(d);
	if (n > 1)	/* v is NULL for an empty directory */
		qsort(v, n, sizeof(*v), cmp);
	*n_r = n;
	return v;
}

static unsigned
name_flags(const char *name)
{
	const char *c = strrchr(name, ','), *dot = strrchr(name, '.');
	unsigned f = 0;

	for (const char *p = c ? c + 1 : dot; c && p < dot; p++)
		f |= *p == 'S' ? MB_FLAG_SEEN : *p == 'F' ? MB_FLAG_FLAGGED :
		    *p == 'A' ? MB_FLAG_ANSWERED : *p == 'D' ? MB_FLAG_DRAFT : 0;
	return f;
}

static const char *
role_of(const char *folder)
{
	if (strcmp(folder, "Sent") == 0)
		return "\\Sent";
	if (strcmp(folder, "Trash") == 0)
		return "\\Trash";
	if (strcmp(folder, "Archive") == 0)
		return "\\Archive";
	return NULL;
}

static char *
slurp(const char *path, size_t *len_r)
{
	FILE *f = fopen(path, "rb");
	struct mb_buf b = MB_BUF_INIT(64u << 20);
	char chunk[8192];
	size_t n;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		mb_buf_add(&b, chunk, n);
	fclose(f);
	return mb_buf_detach(&b, len_r);
}

static void
finish_folder(struct mb_index *idx, const char *name, uint32_t next)
{
	struct mb_folder_state st;
	struct mb_err err = { 0 };

	if (mb_index_folder_get(idx, name, &st, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	st.uidvalidity = 1;
	st.uidnext = next;
	st.watermark = next - 1;
	st.last_sync = (int64_t)time(NULL);
	if (mb_index_folder_update(idx, &st, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	mb_folder_state_release(&st);
}

/* Give m the body, index it as UID uid of folder, and free it (exits on failure). */
static void
put_synthetic(struct mb_index *idx, int64_t folder, uint32_t uid, unsigned flags,
    struct mb_msg *m, struct mb_buf *body)
{
	struct mb_index_row row = { .folder_id = folder, .uidvalidity = 1, .uid = uid,
	    .flags = flags };
	struct mb_err err = { 0 };

	free(m->body);
	m->body_len = body->len;
	m->body = mb_buf_detach(body, NULL);
	row.internaldate = m->date;
	row.size = m->body_len;
	row.msg = m;
	if (mb_index_upsert(idx, &row, NULL, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	mb_msg_free(&m);
}

static void
synthetic(struct mb_index *idx, unsigned n)
{
	static const char *const words[] = { "alpha", "report", "quarterly", "meeting",
	    "invoice", "travel", "garden", "project", "summary", "delta", "orange", "river",
	    "mountain", "schedule", "update", "review", "coffee", "design", "market", "policy" };
	struct mb_err err = { 0 };
	int64_t folder;
	unsigned seed = 12345;

	if (mb_index_folder_ensure(idx, "Bulk", NULL, &folder, &err) == -1 ||
	    mb_index_begin(idx, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	for (unsigned i = 0; i < n; i++) {
		struct mb_msg *m = mb_msg_new();
		struct mb_buf body = MB_BUF_INIT(1u << 20);
		char s[128];

		snprintf(s, sizeof(s), "Bulk report %u %s", i, words[i % 20]);
		m->subject = mb_xstrdup(s);
		snprintf(s, sizeof(s), "sender%u@bulk.example", i % 50);
		m->from.addr = mb_xstrdup(s);
		m->from.name = mb_xstrdup("Bulk Sender");
		m->has_date = true;
		m->date = 1600000000 + (int64_t)i * 3600;
		if (i == 0) {
			/* over 26,000 characters, multibyte ones included, and a word at the end */
			while (body.len < 30000)
				mb_buf_adds(&body, "Longbody text with é and 会議 repeated. ");
			mb_buf_adds(&body, "tailword zyzzyva");
		} else {
			for (unsigned w = 0; w < 300; w++) {
				seed = seed * 1103515245u + 12345u;
				mb_buf_addf(&body, "%s ", words[(seed >> 16) % 20]);
			}
		}
		put_synthetic(idx, folder, i + 1, (i % 3) ? MB_FLAG_SEEN : 0, m, &body);
	}
	if (mb_index_commit(idx, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	finish_folder(idx, "Bulk", n + 1);
}

/* Word number r (0-based) of the benchmark vocabulary: pronounceable, distinct. */
static void
bench_word(unsigned r, struct mb_buf *out)
{
	static const char *const syl[] = { "ka", "lo", "mi", "ne", "ru", "ta", "shi", "po",
	    "va", "de", "gri", "mon", "sel", "tor", "bu", "fen", "qua", "zi", "hal", "ber" };

	do {
		mb_buf_adds(out, syl[r % 20]);
		r /= 20;
	} while (r > 0);
}

static void
bench(struct mb_index *idx, unsigned n)
{
	enum { VOCAB = 20000 };
	static double cdf[VOCAB];
	struct mb_err err = { 0 };
	int64_t folder;
	double sum = 0;
	unsigned seed = 777;

	for (unsigned i = 0; i < VOCAB; i++)
		cdf[i] = (sum += 1.0 / (i + 1));
	if (mb_index_folder_ensure(idx, "Bench", NULL, &folder, &err) == -1 ||
	    mb_index_begin(idx, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	for (unsigned i = 0; i < n; i++) {
		struct mb_msg *m = mb_msg_new();
		struct mb_buf body = MB_BUF_INIT(1u << 20), subj = MB_BUF_INIT(4096);
		char s[64];

		for (unsigned w = 0; w < 330; w++) {
			unsigned lo = 0, hi = VOCAB - 1;
			double x;

			seed = seed * 1103515245u + 12345u;
			x = (double)((seed >> 8) & 0xffffff) / 16777216.0 * sum;
			while (lo < hi) {	/* first rank whose cdf reaches x */
				unsigned mid = (lo + hi) / 2;

				if (cdf[mid] < x)
					lo = mid + 1;
				else
					hi = mid;
			}
			bench_word(lo, w < 6 ? &subj : &body);
			mb_buf_addc(w < 6 ? &subj : &body, ' ');
		}
		m->subject = mb_buf_detach(&subj, NULL);
		snprintf(s, sizeof(s), "person%u@bench.example", i % 300);
		m->from.addr = mb_xstrdup(s);
		m->has_date = true;
		m->date = 1500000000 + (int64_t)i * 1800;
		put_synthetic(idx, folder, i + 1, (i % 4) ? MB_FLAG_SEEN : 0, m, &body);
	}
	if (mb_index_commit(idx, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	finish_folder(idx, "Bench", n + 1);
}

/* The .txt files under dir, recursively, appended to *v (sorted per directory). */
static void
corpus_files(const char *dir, char ***v, size_t *n)
{
	size_t k;
	char **names = list_dir(dir, &k);

	for (size_t i = 0; i < k; i++) {
		char path[4096];
		struct stat st;
		size_t len = strlen(names[i]);

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			corpus_files(path, v, n);
		else if (len > 4 && strcmp(names[i] + len - 4, ".txt") == 0) {
			*v = mb_xrealloc(*v, (*n + 1) * sizeof(**v));
			(*v)[(*n)++] = mb_xstrdup(path);
		}
		free(names[i]);
	}
	free(names);
}

/* raw with its Message-ID replaced by a fresh one; caller frees. */
static char *
clone_message(const char *raw, size_t len, size_t serial, size_t *len_r)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX);
	const char *p = raw, *end = raw + len;
	int skipping = 0;

	mb_buf_addf(&b, "Message-ID: <clone-%zu@bench.imap-mcp>\n", serial);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (p[0] == '\n' || (p[0] == '\r' && p + 1 < end && p[1] == '\n')) {
			mb_buf_add(&b, p, (size_t)(end - p));
			break;
		}
		if (p[0] != ' ' && p[0] != '\t')
			skipping = (size_t)(end - p) >= 11 && strncasecmp(p, "Message-ID:", 11) == 0;
		if (!skipping)
			mb_buf_add(&b, p, (size_t)(next - p));
		p = next;
	}
	return mb_buf_detach(&b, len_r);
}

/*
 * The corpus is written as syncd's writer writes a backfill: rows staged,
 * then one statement and one commit per group of this many (SD_TXN_ROWS),
 * so that FTS5 writes one segment per group and the index has the shape a
 * backfill gives it.
 */
#define MKINDEX_TXN_ROWS	1000

static void
corpus(struct mb_index *idx, const char *dir, unsigned first, unsigned n)
{
	struct mb_mime_opts opts = MB_MIME_OPTS_DEFAULT;
	struct mb_err err = { 0 };
	char **files = NULL;
	size_t nf = 0;
	int64_t folder;

	opts.keep_attachment_data = false;
	corpus_files(dir, &files, &nf);
	if (nf == 0) {
		fprintf(stderr, "mkindex: no .txt messages under %s (run scripts/deps)\n", dir);
		exit(1);
	}
	if (mb_index_folder_ensure(idx, "Corpus", NULL, &folder, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		exit(1);
	}
	for (unsigned k = 0; k < n; k++) {
		unsigned i = first + k;	/* the clone's place in the sequence */
		struct mb_msg *m = NULL;
		struct mb_index_row row = { 0 };
		size_t len, clen;
		char *raw = slurp(files[i % nf], &len);
		char *c = clone_message(raw, len, i, &clen);

		if (k % MKINDEX_TXN_ROWS == 0 && mb_index_begin(idx, &err) == -1)
			goto fail;
		if (mb_mime_parse(c, clen, &opts, &m, &err) == -1) {
			fprintf(stderr, "mkindex: %s: %s\n", files[i % nf], err.msg);
			exit(1);
		}
		row.folder_id = folder;
		row.uidvalidity = 1;
		row.uid = k + 1;
		row.flags = (i % 4) ? MB_FLAG_SEEN : 0;
		row.internaldate = m->has_date ? m->date : 0;
		row.size = clen;
		row.msg = m;
		if (mb_index_stage(idx, &row, 1, &err) == -1)
			goto fail;
		mb_msg_free(&m);
		free(c);
		free(raw);
		if ((k % MKINDEX_TXN_ROWS == MKINDEX_TXN_ROWS - 1 || k + 1 == n) &&
		    (mb_index_flush(idx, &err) == -1 || mb_index_commit(idx, &err) == -1))
			goto fail;
	}
	for (size_t i = 0; i < nf; i++)
		free(files[i]);
	free(files);
	finish_folder(idx, "Corpus", n + 1);
	return;
fail:
	fprintf(stderr, "mkindex: %s\n", err.msg);
	exit(1);
}

int
main(int argc, char **argv)
{
	struct mb_mime_opts opts = MB_MIME_OPTS_DEFAULT;
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	char **folders;
	size_t nf, built = 0;

	if (argc != 3 && !(argc == 5 && (strcmp(argv[3], "--synthetic") == 0 ||
	    strcmp(argv[3], "--bench") == 0)) &&
	    !((argc == 6 || argc == 7) && strcmp(argv[3], "--corpus") == 0)) {
		fprintf(stderr, "usage: mkindex INDEX DIR [--synthetic N | --bench N | "
		    "--corpus CORPUS N [FIRST]]\n");
		return 2;
	}
	mb_mime_global_init();
	opts.keep_attachment_data = false;
	if (mb_index_open(argv[1], MB_INDEX_RW, &idx, &err) == -1) {
		fprintf(stderr, "mkindex: %s\n", err.msg);
		return 1;
	}
	folders = list_dir(argv[2], &nf);
	for (size_t i = 0; i < nf; i++) {
		char path[4096];
		char **files;
		size_t n;
		int64_t folder;
		uint32_t uid = 0;

		snprintf(path, sizeof(path), "%s/%s", argv[2], folders[i]);
		files = list_dir(path, &n);
		if (mb_index_folder_ensure(idx, folders[i], role_of(folders[i]), &folder, &err) == -1) {
			fprintf(stderr, "mkindex: %s\n", err.msg);
			return 1;
		}
		for (size_t j = 0; j < n; j++) {
			struct mb_msg *m = NULL;
			struct mb_index_row row = { 0 };
			size_t len;
			char *raw;

			snprintf(path, sizeof(path), "%s/%s/%s", argv[2], folders[i], files[j]);
			raw = slurp(path, &len);
			if (mb_mime_parse(raw, len, &opts, &m, &err) == -1) {
				fprintf(stderr, "mkindex: %s: %s\n", path, err.msg);
				return 1;
			}
			row.folder_id = folder;
			row.uidvalidity = 1;
			row.uid = ++uid;
			row.flags = name_flags(files[j]);
			row.internaldate = m->has_date ? m->date : 0;
			row.size = len;
			row.msg = m;
			if (mb_index_upsert(idx, &row, NULL, &err) == -1) {
				fprintf(stderr, "mkindex: %s: %s\n", path, err.msg);
				return 1;
			}
			mb_msg_free(&m);
			free(raw);
			free(files[j]);
		}
		free(files);
		finish_folder(idx, folders[i], uid + 1);
		free(folders[i]);
	}
	free(folders);
	if (argc == 5 && strcmp(argv[3], "--synthetic") == 0)
		synthetic(idx, (unsigned)strtoul(argv[4], NULL, 10));
	else if (argc >= 6)
		corpus(idx, argv[4], argc == 7 ? (unsigned)strtoul(argv[6], NULL, 10) : 0,
		    (unsigned)strtoul(argv[5], NULL, 10));
	else if (argc == 5)
		bench(idx, (unsigned)strtoul(argv[4], NULL, 10));
	/*
	 * The ranking's block bounds, as syncd leaves them once it has caught
	 * up (it builds them after each commit): without them a benchmark of
	 * this index would measure searches that read every match.
	 */
	if (mb_index_rank_build(idx, 1, SIZE_MAX, &built, &err) == -1) {
		fprintf(stderr, "mkindex: ranking bounds: %s\n", err.msg);
		return 1;
	}
	/* and its full-text index in one segment, as syncd merges it then */
	if (mb_index_fts_merge(idx, &err) == -1) {
		fprintf(stderr, "mkindex: full-text merge: %s\n", err.msg);
		return 1;
	}
	mb_index_close(&idx);
	return 0;
}
