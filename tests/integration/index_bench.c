/*
 * index_bench: insert synthetic messages into a fresh index in batches, as
 * syncd's writer does, and report messages per second and bytes per message.
 *
 *	index_bench [-n messages] [-b body_bytes] [-c cjk_percent] [-B batch]
 *	    [-p] [-x] [-k] dir
 *
 * -p replaces the mb_cjk tokenizer with plain 'porter unicode61
 * remove_diacritics 2' (to measure what mb_cjk costs); -x drops the FTS
 * triggers (to measure what full text costs at all); -k keeps dir/index.db.
 * The text is deterministic (a fixed-seed PRNG over a Zipf-like vocabulary),
 * so two runs index the same bytes.  Prints one line of key=value pairs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/index.h"
#include "mailbox/index_raw.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#define VOCAB	20000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static char	*vocab[VOCAB];

/* CPU time of this process in ms: the machine is shared, wall time is noise. */
static long long
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Pseudo-words, 2..11 letters; low indexes drawn far more often (Zipf-like). */
static void
make_vocab(void)
{
	static const char letters[] = "etaoinshrdlucmfwypvbgkjqxz";

	for (int i = 0; i < VOCAB; i++) {
		int len = 2 + (int)(rnd() % 10);
		char *w = mb_xmalloc((size_t)len + 1);

		for (int j = 0; j < len; j++)
			w[j] = letters[rnd() % (j % 3 == 0 ? 26 : 12)];
		w[len] = '\0';
		vocab[i] = w;
	}
}

static const char *
word(void)
{
	/* The square of a uniform draw skews towards the start of the list. */
	double u = (double)(rnd() % 1000000) / 1000000.0;

	return vocab[(int)(u * u * u * (VOCAB - 1))];
}

static const char *const cjk_words[] = {
	"会議", "月曜日", "予定", "資料", "確認", "お願いします", "ありがとうございます",
	"見積もり", "打ち合わせ", "来週", "プロジェクト", "報告書", "회의", "일정", "확인",
	"项目", "报告", "明天", "请", "东京", "大阪",
};

static void
fill_body(struct mb_buf *b, size_t bytes, bool cjk)
{
	mb_buf_reset(b);
	while (b->len < bytes) {
		/* CJK text as written: no spaces, a 、 or 。 now and then. */
		if (cjk && rnd() % 3 != 0) {
			mb_buf_adds(b, cjk_words[rnd() % MB_ARRAY_LEN(cjk_words)]);
			if (rnd() % 4 == 0)
				mb_buf_adds(b, rnd() % 2 ? "、" : "。");
			continue;
		}
		mb_buf_adds(b, word());
		mb_buf_addc(b, rnd() % 12 == 0 ? '\n' : ' ');
	}
}

static struct mb_msg *
make_msg(uint32_t i, size_t body_bytes, bool cjk, struct mb_buf *tmp)
{
	struct mb_msg *m = mb_msg_new();
	char id[64];

	mb_buf_reset(tmp);
	for (int w = 0; w < 3 + (int)(rnd() % 6); w++)
		mb_buf_addf(tmp, "%s%s", w ? " " : "", word());
	m->subject = mb_xstrdup(tmp->data);
	m->from.name = mb_xstrdup(word());
	m->from.addr = mb_xstrdup("sender@example.org");
	m->to = mb_xcalloc(2, sizeof(*m->to));
	m->to[0].name = mb_xstrdup(word());
	m->to[0].addr = mb_xstrdup("me@example.org");
	m->to[1].addr = mb_xstrdup("list@lists.example.org");
	m->n_to = 2;
	m->has_date = true;
	m->date = 1500000000 + (int64_t)i * 600;
	snprintf(id, sizeof(id), "%u.bench@example.org", i);
	m->message_id = mb_xstrdup(id);
	if (i > 0 && rnd() % 2 == 0) {	/* half are replies to a recent message */
		snprintf(id, sizeof(id), "%u.bench@example.org", i - 1 - rnd() % (i < 20 ? i : 20));
		m->in_reply_to = mb_xstrdup(id);
		m->references = mb_xcalloc(1, sizeof(char *));
		m->references[0] = mb_xstrdup(id);
		m->n_references = 1;
	}
	free(m->body);
	fill_body(tmp, body_bytes / 2 + rnd() % (body_bytes + 1), cjk);
	m->body = mb_buf_detach(tmp, &m->body_len);
	return m;
}

static const char no_fts[] =
	"DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_update;"
	" DROP TRIGGER messages_fts_delete;";

static const char plain_fts[] =
	"DROP TABLE messages_fts;"
	"CREATE VIRTUAL TABLE messages_fts USING fts5(subject, from_text, recipients, body,"
	" content='messages', content_rowid='id',"
	" tokenize='porter unicode61 remove_diacritics 2');";

int
main(int argc, char **argv)
{
	struct mb_err err = { 0 };
	struct mb_index *idx = NULL;
	struct mb_buf path = MB_BUF_INIT(4096), tmp = MB_BUF_INIT(1 << 24);
	size_t n = 20000, body = 1500, batch = 100, cjk_pct = 0;
	bool plain = false, keep = false, nofts = false;
	uint64_t text_bytes = 0;
	int64_t folder;
	struct stat sb;
	long long t0, t1;
	int c;

	for (;;) {
		c = getopt(argc, argv, "n:b:c:B:pxk");
		if (c == -1)
			break;
		switch (c) {
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'b': body = strtoul(optarg, NULL, 10); break;
		case 'c': cjk_pct = strtoul(optarg, NULL, 10); break;
		case 'B': batch = strtoul(optarg, NULL, 10); break;
		case 'p': plain = true; break;
		case 'k': keep = true; break;
		case 'x': nofts = true; break;
		default:
			fprintf(stderr, "usage: index_bench [-n N] [-b bytes] [-c cjk%%] [-B batch]"
			    " [-p] [-x] [-k] dir\n");
			return 2;
		}
	}
	if (optind != argc - 1 || batch == 0) {
		fprintf(stderr, "index_bench: need one directory\n");
		return 2;
	}
	mb_buf_addf(&path, "%s/index.db", argv[optind]);
	unlink(path.data);
	if (mb_index_open(path.data, MB_INDEX_RW, &idx, &err) == -1 ||
	    mb_index_folder_ensure(idx, "INBOX", NULL, &folder, &err) == -1) {
		fprintf(stderr, "index_bench: %s\n", err.msg);
		return 1;
	}
	if (plain && sqlite3_exec(mb_index_db(idx), plain_fts, NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "index_bench: %s\n", sqlite3_errmsg(mb_index_db(idx)));
		return 1;
	}
	if (nofts && sqlite3_exec(mb_index_db(idx), no_fts, NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "index_bench: %s\n", sqlite3_errmsg(mb_index_db(idx)));
		return 1;
	}
	make_vocab();

	struct mb_index_row *rows = mb_xcalloc(batch, sizeof(*rows));
	struct mb_msg **msgs = mb_xcalloc(batch, sizeof(*msgs));
	long long gen_ms = 0, gen_cpu = 0, c0, c1;

	t0 = mb_now_ms();
	c0 = cpu_ms();
	for (size_t done = 0; done < n; ) {
		size_t k = n - done < batch ? n - done : batch;
		long long g = mb_now_ms(), gc = cpu_ms();

		for (size_t i = 0; i < k; i++) {
			uint32_t uid = (uint32_t)(done + i + 1);

			msgs[i] = make_msg(uid, body, rnd() % 100 < cjk_pct, &tmp);
			text_bytes += msgs[i]->body_len + strlen(msgs[i]->subject);
			rows[i] = (struct mb_index_row){ .folder_id = folder, .uidvalidity = 1,
			    .uid = uid, .flags = MB_FLAG_SEEN, .size = msgs[i]->body_len + 800,
			    .internaldate = msgs[i]->date, .msg = msgs[i] };
		}
		gen_ms += mb_now_ms() - g;
		gen_cpu += cpu_ms() - gc;
		if (mb_index_upsert_batch(idx, rows, k, &err) == -1) {
			fprintf(stderr, "index_bench: %s\n", err.msg);
			return 1;
		}
		for (size_t i = 0; i < k; i++)
			mb_msg_free(&msgs[i]);
		done += k;
	}
	t1 = mb_now_ms();
	c1 = cpu_ms();
	/* Checkpoint so the file holds everything, then measure it. */
	sqlite3_exec(mb_index_db(idx), "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	mb_index_close(&idx);
	if (stat(path.data, &sb) == -1) {
		fprintf(stderr, "index_bench: %s: %s\n", path.data, strerror(errno));
		return 1;
	}
	double secs = (double)(t1 - t0 - gen_ms) / 1000.0;
	double cpu = (double)(c1 - c0 - gen_cpu) / 1000.0;
	printf("messages=%zu tokenizer=%s cjk_percent=%zu text_bytes_per_msg=%.0f"
	    " wall_seconds=%.2f cpu_seconds=%.2f msgs_per_cpu_second=%.0f db_bytes=%lld"
	    " bytes_per_msg=%.0f\n",
	    n, nofts ? "none" : plain ? "porter" : "mb_cjk", cjk_pct,
	    (double)text_bytes / (double)n, secs, cpu, cpu > 0 ? (double)n / cpu : 0.0,
	    (long long)sb.st_size,
	    (double)sb.st_size / (double)n);
	if (!keep)
		unlink(path.data);
	for (int i = 0; i < VOCAB; i++)
		free(vocab[i]);
	free(rows);
	free(msgs);
	mb_buf_release(&path);
	mb_buf_release(&tmp);
	return 0;
}
