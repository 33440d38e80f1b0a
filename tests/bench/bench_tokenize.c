/*
 * bench_tokenize: the index's tokenizer alone, on the text the writer gives
 * it (docs/benchmarks.md, "The tokenizer skips ASCII runs").
 *
 *   bench_tokenize CORPUS_DIR [ROUNDS]
 *
 * Parses every *.txt message under CORPUS_DIR (the SpamAssassin corpus from
 * npm) as syncd's workers do, then tokenizes each message's subject, sender,
 * recipients and body as indexed text, ROUNDS times (default 5), through
 * porter over unicode61 (SQLite's own, the floor) and through the index's
 * tokenizer (mb_cjk: the fold, the CJK split and the digit runs on top).
 * Prints the CPU time a message of each, the best round's, and a hash of
 * every token with its flags and offsets: a change that should not change
 * what the index holds must leave the hash as it was.
 */
#define _XOPEN_SOURCE 700	/* nftw */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "mailbox/buf.h"
#include "mailbox/err.h"
#include "mailbox/log.h"
#include "mailbox/mime.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#include "../../libmailbox/core/index-private.h"

/* Every column's text of every message, NUL-separated in one buffer. */
static struct mb_buf texts = MB_BUF_INIT(SIZE_MAX / 2);
static size_t messages;

struct tally {
	uint64_t	hash;	/* FNV-1a over each token, its flags and offsets */
	uint64_t	tokens;
};

static void
hash_bytes(struct tally *t, const void *p, size_t n)
{
	const unsigned char *u = p;

	for (size_t i = 0; i < n; i++) {
		t->hash ^= u[i];
		t->hash *= 1099511628211ULL;
	}
}

static int
on_token(void *ctx, int flags, const char *tok, int ntok, int start, int end)
{
	struct tally *t = ctx;
	int32_t nums[3] = { flags, start, end };

	hash_bytes(t, tok, (size_t)ntok);
	hash_bytes(t, nums, sizeof(nums));
	t->tokens++;
	return SQLITE_OK;
}

static void
add_text(const char *s)
{
	if (s != NULL && *s != '\0' && mb_buf_add(&texts, s, strlen(s) + 1) == -1)
		mb_fatalx("out of memory");
}

/*
 * The sender's and the recipients' column text as the index renders it
 * (index_messages.c): mb_addr_format() of From, and To then Cc as one list.
 */
static void
add_addrs(const struct mb_msg *m)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX / 2);

	if (mb_addr_format(&b, m->from.name, m->from.addr) == -1)
		mb_fatalx("out of memory");
	add_text(b.len > 0 ? b.data : NULL);
	mb_buf_reset(&b);
	if (mb_addr_list_format(&b, m->to, m->n_to) == -1 ||
	    (m->n_cc > 0 && b.len > 0 && mb_buf_adds(&b, ", ") == -1) ||
	    mb_addr_list_format(&b, m->cc, m->n_cc) == -1)
		mb_fatalx("out of memory");
	add_text(b.len > 0 ? b.data : NULL);
	mb_buf_release(&b);
}

/* nftw's callback: parse one *.txt message and keep its columns' text. */
static int
load_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct mb_mime_opts opts = MB_MIME_OPTS_DEFAULT;
	struct mb_msg *msg = NULL;
	struct mb_err err = { 0 };
	size_t n = strlen(path), len;
	char *raw;
	FILE *f;

	(void)ftw;
	if (type != FTW_F || n < 5 || strcmp(path + n - 4, ".txt") != 0)
		return 0;
	if ((f = fopen(path, "rb")) == NULL)
		return 0;
	raw = mb_xmalloc((size_t)st->st_size + 1);
	len = fread(raw, 1, (size_t)st->st_size, f);
	fclose(f);
	if (mb_mime_parse(raw, len, &opts, &msg, &err) == 0) {
		add_text(msg->subject);
		add_addrs(msg);
		add_text(msg->body);
		messages++;
	}
	mb_msg_free(&msg);
	free(raw);
	return 0;
}

/* One round over every text; the CPU seconds it took. */
static double
round_of(fts5_tokenizer *tk, Fts5Tokenizer *t, struct tally *tally)
{
	clock_t c0 = clock();	/* the process's CPU time */

	for (size_t at = 0; at < texts.len; at += strlen(texts.data + at) + 1)
		if (tk->xTokenize(t, tally, FTS5_TOKENIZE_DOCUMENT, texts.data + at,
		    (int)strlen(texts.data + at), on_token) != SQLITE_OK)
			mb_fatalx("tokenize failed");
	return (double)(clock() - c0) / CLOCKS_PER_SEC;
}

int
main(int argc, char **argv)
{
	static const char *porter_args[] = { "unicode61", "remove_diacritics", "2" };
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	struct mb_err err = { 0 };
	sqlite3 *db;
	fts5_api *api;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: bench_tokenize CORPUS_DIR [ROUNDS]\n");
		return 2;
	}
	mb_mime_global_init();
	if (nftw(argv[1], load_one, 16, FTW_PHYS) == -1 || messages == 0)
		mb_fatalx("no *.txt messages under %s", argv[1]);
	if (sqlite3_open(":memory:", &db) != SQLITE_OK || mb_fts_cjk_register(db, &err) == -1 ||
	    (api = mb_fts5_api(db)) == NULL)
		mb_fatalx("sqlite: %s", err.msg);
	printf("%zu messages, %.1f MB of text; CPU a message, the best of %d rounds\n\n",
	    messages, (double)texts.len / 1e6, rounds);
	printf("| tokenizer | µs a message | tokens | hash |\n|---|---|---|---|\n");
	for (int which = 0; which < 2; which++) {
		fts5_tokenizer tk;
		Fts5Tokenizer *t = NULL;
		void *ud = NULL;
		struct tally tally = { 0 };
		double best = 0;

		if (which == 0 ? api->xFindTokenizer(api, "porter", &ud, &tk) != SQLITE_OK ||
		    tk.xCreate(ud, porter_args, 3, &t) != SQLITE_OK :
		    mb_fts_tokenizer(db, &tk, &t) == -1)
			mb_fatalx("no tokenizer");
		for (int r = 0; r < rounds; r++) {
			struct tally one = { 1469598103934665603ULL, 0 };
			double s = round_of(&tk, t, &one);

			if (r == 0 || s < best)
				best = s;
			tally = one;
		}
		printf("| %s | %.1f | %llu | %016llx |\n",
		    which == 0 ? "porter unicode61 remove_diacritics 2" : "the index's (mb_cjk over those)",
		    best * 1e6 / (double)messages, (unsigned long long)tally.tokens,
		    (unsigned long long)tally.hash);
		tk.xDelete(t);
	}
	sqlite3_close(db);
	mb_buf_release(&texts);
	return 0;
}
