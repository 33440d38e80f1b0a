/*
 * Logging: see include/mailbox/log.h.  Each line is formatted into a buffer,
 * scrubbed of every registered secret form, escaped, and written with one
 * write(2), so lines from several processes never interleave.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"

#define LOG_LINE_MAX	4096	/* longer lines are cut, never split */
#define LOG_NEEDLES_MAX	128
/* OAuth tokens are replaced for the life of the process (a daemon refreshes
 * its access token hourly, and a rotating server replaces the refresh token
 * each time): the forms of the last few are kept, older ones wiped, so the
 * table never fills.  Four covers an access and a refresh token, current and
 * previous. */
#define LOG_TOKENS_KEPT	4
#define LOG_TOKEN_FORMS	14	/* needles one token can add */

static const char	*log_procname = "imap-mcp";
static enum mb_log_level log_level = MB_LOG_INFO;
static bool		 log_prefix_priority = true;

struct needle {
	char		*s;	/* owned; wiped on clear */
	size_t		 len;
	unsigned	 token;	/* 0: kept for good; else the token's generation */
};
static struct needle	log_needles[LOG_NEEDLES_MAX];
static size_t		log_n_needles;
static unsigned		log_token_gen;	/* generation of the newest mb_log_add_token() */
static unsigned		log_adding;	/* the generation add_needle() stamps */

void
mb_log_init(const char *procname, enum mb_log_level level)
{
	log_procname = procname;
	log_level = level;
	/* journald reads "<N>" priority prefixes; a person at a terminal does not want them. */
	log_prefix_priority = !isatty(STDERR_FILENO);
}

void
mb_log_set_level(enum mb_log_level level)
{
	log_level = level;
}

enum mb_log_level
mb_log_get_level(void)
{
	return log_level;
}

int
mb_log_level_parse(const char *s, enum mb_log_level *level_r)
{
	static const struct { const char *name; enum mb_log_level level; } names[] = {
		{ "error", MB_LOG_ERR }, { "warning", MB_LOG_WARNING }, { "warn", MB_LOG_WARNING },
		{ "info", MB_LOG_INFO }, { "debug", MB_LOG_DEBUG },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(names); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*level_r = names[i].level;
			return 0;
		}
	return -1;
}

static void
add_needle(const void *p, size_t len)
{
	if (len < 3 || log_n_needles == LOG_NEEDLES_MAX)
		return;	/* a 1-2 byte needle would mangle every line; such a secret is no secret */
	for (size_t i = 0; i < log_n_needles; i++)
		if (log_needles[i].len == len && memcmp(log_needles[i].s, p, len) == 0)
			return;
	log_needles[log_n_needles].s = mb_xmalloc(len);
	memcpy(log_needles[log_n_needles].s, p, len);
	log_needles[log_n_needles].len = len;
	log_needles[log_n_needles].token = log_adding;
	log_n_needles++;
}

/* base64 of p[0..len) as a needle, and the same without '=' padding. */
static void
add_base64_needle(const unsigned char *p, size_t len)
{
	size_t outlen = 4 * ((len + 2) / 3) + 1;
	unsigned char *out = mb_xmalloc(outlen);
	int n = EVP_EncodeBlock(out, p, (int)len);

	if (n > 0) {
		add_needle(out, (size_t)n);
		while (n > 0 && out[n - 1] == '=')
			n--;
		add_needle(out, (size_t)n);
	}
	mb_freezero(out, outlen);
}

/* The forms a password or token takes in LOGIN and AUTHENTICATE PLAIN. */
static void
add_secret_forms(const char *user, const char *secret)
{
	size_t slen = strlen(secret), ulen = user ? strlen(user) : 0;
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX);

	add_needle(secret, slen);
	/* The IMAP quoted-string form escapes '\\' and '"'. */
	for (const char *p = secret; *p; p++) {
		if (*p == '\\' || *p == '"')
			mb_buf_addc(&b, '\\');
		mb_buf_addc(&b, *p);
	}
	add_needle(b.data, b.len);
	explicit_bzero(b.data, b.len);
	mb_buf_reset(&b);
	add_base64_needle((const unsigned char *)secret, slen);	/* AUTH=LOGIN */
	/* AUTH=PLAIN: authzid NUL authcid NUL password, authzid empty or the user. */
	for (int with_authzid = 0; with_authzid < 2 && user; with_authzid++) {
		mb_buf_reset(&b);
		if (with_authzid)
			mb_buf_add(&b, user, ulen);
		mb_buf_addc(&b, '\0');
		mb_buf_add(&b, user, ulen);
		mb_buf_addc(&b, '\0');
		mb_buf_add(&b, secret, slen);
		add_base64_needle((const unsigned char *)b.data, b.len);
		explicit_bzero(b.data, b.len);
	}
	mb_buf_release(&b);
}

int
mb_log_add_secret(const char *user, const char *secret)
{
	int r = log_n_needles + 8 > LOG_NEEDLES_MAX ? -1 : 0;

	log_adding = 0;
	add_secret_forms(user, secret);
	return r;
}

/* Wipe the needles of tokens older than the LOG_TOKENS_KEPT newest. */
static void
drop_old_tokens(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < log_n_needles; i++) {
		struct needle *n = &log_needles[i];

		if (n->token != 0 && n->token + LOG_TOKENS_KEPT <= log_token_gen) {
			mb_freezero(n->s, n->len);
			continue;
		}
		log_needles[kept++] = *n;
	}
	for (size_t i = kept; i < log_n_needles; i++)
		log_needles[i] = (struct needle){ 0 };
	log_n_needles = kept;
}

int
mb_log_add_token(const char *user, const char *token)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX);
	int r;

	log_adding = ++log_token_gen;
	drop_old_tokens();
	r = log_n_needles + LOG_TOKEN_FORMS > LOG_NEEDLES_MAX ? -1 : 0;
	add_secret_forms(user, token);
	if (user != NULL) {
		/* SASL XOAUTH2 (Google's, Microsoft's) and OAUTHBEARER (RFC 7628),
		 * the latter with and without the authzid; whole initial responses,
		 * as they are base64'd on the wire. */
		mb_buf_addf(&b, "user=%s\001auth=Bearer %s\001\001", user, token);
		add_base64_needle((const unsigned char *)b.data, b.len);
		explicit_bzero(b.data, b.len);
		mb_buf_reset(&b);
		mb_buf_addf(&b, "n,a=%s,\001auth=Bearer %s\001\001", user, token);
		add_base64_needle((const unsigned char *)b.data, b.len);
		explicit_bzero(b.data, b.len);
		mb_buf_reset(&b);
	}
	mb_buf_addf(&b, "n,,\001auth=Bearer %s\001\001", token);
	add_base64_needle((const unsigned char *)b.data, b.len);
	explicit_bzero(b.data, b.len);
	mb_buf_release(&b);
	log_adding = 0;
	return r;
}

void
mb_log_clear_secrets(void)
{
	for (size_t i = 0; i < log_n_needles; i++) {
		mb_freezero(log_needles[i].s, log_needles[i].len);
		log_needles[i] = (struct needle){ 0 };
	}
	log_n_needles = 0;
	log_token_gen = 0;
}

/* Replace every needle in b with "<hidden>", longest first is not needed:
 * each replacement removes the whole needle, and shorter forms are scanned
 * again over the result. */
static void
scrub(struct mb_buf *b)
{
	for (size_t i = 0; i < log_n_needles; i++) {
		const struct needle *n = &log_needles[i];
		char *hit;

		while ((hit = memmem(b->data, b->len, n->s, n->len)) != NULL) {
			static const char mask[] = "<hidden>";
			size_t off = (size_t)(hit - b->data), tail = b->len - off - n->len;
			struct mb_buf out = MB_BUF_INIT(SIZE_MAX);

			mb_buf_add(&out, b->data, off);
			mb_buf_add(&out, mask, sizeof(mask) - 1);
			mb_buf_add(&out, hit + n->len, tail);
			explicit_bzero(b->data, b->len);
			mb_buf_release(b);
			*b = out;
			b->max = LOG_LINE_MAX * 2;
		}
	}
}

void
mb_log_scrub(char *s, size_t size)
{
	struct mb_buf b = MB_BUF_INIT(SIZE_MAX);

	if (s == NULL || size == 0 || log_n_needles == 0)
		return;
	mb_buf_adds(&b, s);
	scrub(&b);
	snprintf(s, size, "%s", b.data ? b.data : "");
	explicit_bzero(b.data, b.len);
	mb_buf_release(&b);
}

static void vlog(enum mb_log_level level, int errnum, const char *fmt, va_list ap)
    MB_PRINTF(3, 0);

static void
vlog(enum mb_log_level level, int errnum, const char *fmt, va_list ap)
{
	struct mb_buf msg = MB_BUF_INIT(SIZE_MAX), line = MB_BUF_INIT(LOG_LINE_MAX * 2);

	if (level > log_level)
		return;
	mb_buf_vaddf(&msg, fmt, ap);
	if (errnum)
		mb_buf_addf(&msg, ": %s", strerror(errnum));
	scrub(&msg);
	if (log_prefix_priority)
		mb_buf_addf(&line, "<%d>", (int)level);
	mb_buf_addf(&line, "%s: ", log_procname);
	/* Peers put text in our lines (server replies, mail headers): escape
	 * control characters so one event stays one line. */
	for (size_t i = 0; i < msg.len && line.len < LOG_LINE_MAX; i++) {
		unsigned char c = (unsigned char)msg.data[i];

		if (c < 0x20 || c == 0x7f)
			mb_buf_addf(&line, "\\x%02x", c);
		else
			mb_buf_addc(&line, (char)c);
	}
	if (line.len >= LOG_LINE_MAX)
		mb_buf_adds(&line, "...");
	mb_buf_addc(&line, '\n');
	(void)!write(STDERR_FILENO, line.data, line.len);
	explicit_bzero(msg.data, msg.len);
	mb_buf_release(&msg);
	mb_buf_release(&line);
}

#define LOG_FN(fn, level, with_errno)				\
void								\
fn(const char *fmt, ...)					\
{								\
	int saved = errno;					\
	va_list ap;						\
								\
	va_start(ap, fmt);					\
	vlog(level, with_errno ? saved : 0, fmt, ap);		\
	va_end(ap);						\
	errno = saved;						\
}

LOG_FN(mb_log_warn, MB_LOG_WARNING, 1)
LOG_FN(mb_log_warnx, MB_LOG_WARNING, 0)
LOG_FN(mb_log_error, MB_LOG_ERR, 0)
LOG_FN(mb_log_info, MB_LOG_INFO, 0)
LOG_FN(mb_log_debug, MB_LOG_DEBUG, 0)

void
mb_fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(MB_LOG_ERR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
mb_fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(MB_LOG_ERR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
