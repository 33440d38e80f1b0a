/*
 * bench_extract: what attachment extraction costs (docs/benchmarks.md,
 * "Attachment extraction").
 *
 *   bench_extract CORPUS_DIR [DOCS_DIR [INDEX_PATH]]
 *
 * 1. Every message under CORPUS_DIR (the SpamAssassin corpus: few
 *    attachments) is normalised as a worker does, with extraction off and
 *    then on (mb_extract_message without the cache, so every attachment is
 *    extracted): the CPU time of this process plus its reaped children
 *    (the sandbox), best of 3 passes each.
 * 2. Every file of DOCS_DIR (PDF and DOCX made by the caller) is extracted
 *    as a worker would, sandboxed: MB/s of input per CPU second, and the
 *    largest RSS of one extraction child (ru_maxrss of the reaped children).
 * 3. With INDEX_PATH (a fresh file), one message per document, its text as
 *    the attachment's, is upserted into an index: its bytes per message,
 *    against the same messages without the text.
 * Prints markdown table rows.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/extract.h"
#include "mailbox/index.h"
#include "mailbox/mime.h"
#include "mailbox/util.h"

struct files {
	char	**data;
	size_t	 *len;
	char	**name;
	size_t	  n, bytes;
};

static void
load(struct files *f, const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d == NULL) {
		perror(dir);
		exit(1);
	}
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;
		FILE *fp;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) == -1)
			continue;
		if (S_ISDIR(st.st_mode)) {
			load(f, path, suffix);
			continue;
		}
		if (suffix != NULL && (strlen(de->d_name) < strlen(suffix) ||
		    strcmp(de->d_name + strlen(de->d_name) - strlen(suffix), suffix) != 0))
			continue;
		if ((fp = fopen(path, "rb")) == NULL)
			continue;
		f->data = mb_xrealloc(f->data, (f->n + 1) * sizeof(char *));
		f->len = mb_xrealloc(f->len, (f->n + 1) * sizeof(size_t));
		f->name = mb_xrealloc(f->name, (f->n + 1) * sizeof(char *));
		f->data[f->n] = mb_xmalloc((size_t)st.st_size + 1);
		f->len[f->n] = fread(f->data[f->n], 1, (size_t)st.st_size, fp);
		f->name[f->n] = mb_xstrdup(de->d_name);
		f->bytes += f->len[f->n];
		f->n++;
		fclose(fp);
	}
	closedir(d);
}

/* CPU seconds of this process and its reaped children so far. */
static double
cpu_now(void)
{
	struct rusage s, c;

	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	return (double)(s.ru_utime.tv_sec + s.ru_stime.tv_sec + c.ru_utime.tv_sec +
	    c.ru_stime.tv_sec) + (s.ru_utime.tv_usec + s.ru_stime.tv_usec + c.ru_utime.tv_usec +
	    c.ru_stime.tv_usec) / 1e6;
}

static double
corpus_pass(const struct files *f, bool extract, size_t *atts_r, size_t *text_r)
{
	struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
	double t0 = cpu_now();

	*atts_r = *text_r = 0;
	for (size_t i = 0; i < f->n; i++) {
		struct mb_mime_opts o = MB_MIME_OPTS_DEFAULT;
		struct mb_msg *m = NULL;
		struct mb_err err = { 0 };

		if (mb_mime_parse(f->data[i], f->len[i], &o, &m, &err) == -1)
			continue;
		if (extract)
			mb_extract_message(&lim, NULL, m);
		for (size_t j = 0; j < m->n_attachments; j++) {
			(*atts_r)++;
			*text_r += m->attachments[j].text_len;
		}
		mb_msg_free(&m);
	}
	return cpu_now() - t0;
}

/* Bytes per message of an index of one message per document (with or without its text). */
static double
index_bytes(const char *path, const struct files *docs, char **texts, bool with_text)
{
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	int64_t fid = 0;
	struct stat st;
	char wal[4200];

	unlink(path);
	if (mb_index_open(path, MB_INDEX_RW, &idx, &err) == -1 ||
	    mb_index_folder_ensure(idx, "INBOX", NULL, &fid, &err) == -1) {
		fprintf(stderr, "index: %s\n", err.msg);
		exit(1);
	}
	for (size_t i = 0; i < docs->n; i++) {
		struct mb_msg *m = mb_msg_new();
		struct mb_index_row row = { .folder_id = fid, .uidvalidity = 1,
		    .uid = (uint32_t)i + 1, .msg = m };

		free(m->body);
		m->body = mb_xstrdup("See the attached document.");
		m->body_len = strlen(m->body);
		m->subject = mb_xstrdup("the document");
		m->attachments = mb_xcalloc(1, sizeof(*m->attachments));
		m->n_attachments = 1;
		m->attachments[0].filename = mb_xstrdup(docs->name[i]);
		m->attachments[0].mime_type = mb_xstrdup("application/pdf");
		m->attachments[0].size = docs->len[i];
		if (with_text && texts[i] != NULL) {
			m->attachments[0].text = mb_xstrdup(texts[i]);
			m->attachments[0].text_len = strlen(texts[i]);
			m->attachments[0].text_status = mb_xstrdup("ok");
		}
		if (mb_index_upsert_batch(idx, &row, 1, &err) == -1) {
			fprintf(stderr, "index: %s\n", err.msg);
			exit(1);
		}
		mb_msg_free(&m);
	}
	mb_index_close(&idx);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	if (stat(path, &st) == -1)
		return 0;
	return (double)st.st_size / (double)docs->n;
}

int
main(int argc, char **argv)
{
	struct files corpus = { 0 }, docs = { 0 };
	double off = 1e9, on = 1e9;
	size_t atts = 0, text = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_extract CORPUS_DIR [DOCS_DIR]\n");
		return 2;
	}
	mb_mime_global_init();
	load(&corpus, argv[1], NULL);
	for (int r = 0; r < 3; r++) {
		double a = corpus_pass(&corpus, false, &atts, &text);
		double b = corpus_pass(&corpus, true, &atts, &text);

		off = a < off ? a : off;
		on = b < on ? b : on;
	}
	printf("| SpamAssassin, %zu messages, %zu attachments (%zu bytes of text) | normalise "
	    "%.2f s CPU | normalise + extract %.2f s CPU | extraction +%.1f %% |\n", corpus.n,
	    atts, text, off, on, 100.0 * (on - off) / off);
	if (argc > 2) {
		struct mb_extract_limits lim = MB_EXTRACT_LIMITS_DEFAULT;
		struct rusage c;
		size_t out = 0, ok = 0;
		char **texts;
		double t0;

		load(&docs, argv[2], NULL);
		texts = mb_xcalloc(docs.n ? docs.n : 1, sizeof(char *));
		t0 = cpu_now();
		for (size_t i = 0; i < docs.n; i++) {
			struct mb_extract_out o;
			const char *type = strstr(docs.name[i], ".pdf") ? "application/pdf" :
			    "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

			mb_extract(&lim, type, docs.name[i], NULL, docs.data[i], docs.len[i], false,
			    &o);
			ok += strncmp(o.status, "ok", 2) == 0;
			out += o.text.len;
			if (strncmp(o.status, "ok", 2) == 0)
				texts[i] = mb_buf_detach(&o.text, NULL);
			mb_buf_release(&o.text);
		}
		t0 = cpu_now() - t0;
		getrusage(RUSAGE_CHILDREN, &c);
		printf("| %zu documents, %.1f MB (%zu with text, %.1f MB of text) | %.2f s CPU | "
		    "%.1f MB/s of input per CPU second | largest child RSS %ld MiB |\n", docs.n,
		    docs.bytes / 1e6, ok, out / 1e6, t0, docs.bytes / 1e6 / t0, c.ru_maxrss / 1024);
		if (argc > 3) {
			double without = index_bytes(argv[3], &docs, texts, false);
			double with = index_bytes(argv[3], &docs, texts, true);

			printf("| index, %zu messages of one document each | %.0f bytes/message "
			    "without the text | %.0f bytes/message with it | text %.0f bytes/message "
			    "(stored twice: attachments and messages.att_text, plus FTS) |\n", docs.n,
			    without, with, out / (double)docs.n);
		}
		for (size_t i = 0; i < docs.n; i++)
			free(texts[i]);
		free(texts);
	}
	return 0;
}
