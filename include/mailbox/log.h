/*
 * Logging to stderr, one write(2) per line, with journald priority prefixes
 * ("<3>"...), so systemd files each line at the right level.  Every line is
 * scrubbed of registered secrets in all the forms they could take on the
 * wire, and control characters from peers are escaped.
 */
#ifndef MAILBOX_LOG_H
#define MAILBOX_LOG_H

#include "mailbox/util.h"

enum mb_log_level {
	MB_LOG_ERR = 3,
	MB_LOG_WARNING = 4,
	MB_LOG_INFO = 6,
	MB_LOG_DEBUG = 7,
};

/* procname is borrowed and must outlive logging ("syncd", "syncd/worker[2]"). */
void	mb_log_init(const char *procname, enum mb_log_level level);
void	mb_log_set_level(enum mb_log_level level);
int	mb_log_level_parse(const char *s, enum mb_log_level *level_r);	/* "debug".."error" */
enum mb_log_level	mb_log_get_level(void);

void	mb_log_warn(const char *fmt, ...) MB_PRINTF(1, 2);	/* appends ": strerror(errno)" */
void	mb_log_warnx(const char *fmt, ...) MB_PRINTF(1, 2);
void	mb_log_error(const char *fmt, ...) MB_PRINTF(1, 2);
void	mb_log_info(const char *fmt, ...) MB_PRINTF(1, 2);
void	mb_log_debug(const char *fmt, ...) MB_PRINTF(1, 2);
_Noreturn void	mb_fatal(const char *fmt, ...) MB_PRINTF(1, 2);	/* + strerror, exit 1 */
_Noreturn void	mb_fatalx(const char *fmt, ...) MB_PRINTF(1, 2);

/*
 * Hide, in every later line: secret, its IMAP-quoted form, base64(secret)
 * (AUTH=LOGIN) and base64("\0user\0secret") (AUTH=PLAIN).  Copies what it
 * needs; user may be NULL.  Returns 0, or -1 when the table is full.
 */
int	mb_log_add_secret(const char *user, const char *secret);
/*
 * Hide an OAuth 2.0 token (access or refresh) in every later line: the forms
 * of mb_log_add_secret, plus base64 of the whole SASL initial response of
 * XOAUTH2 ("user=U^Aauth=Bearer T^A^A") and OAUTHBEARER ("n,a=U,^Aauth=Bearer
 * T^A^A", and "n,,..." without the authzid), padded and not.  Tokens are
 * replaced over a process's life: only the newest four stay registered (the
 * older ones are long expired), so the table never fills.  Copies what it
 * needs; user may be NULL.  Returns 0, or -1 when the table is full.
 */
int	mb_log_add_token(const char *user, const char *token);
/*
 * Replace, in the NUL-terminated string s (a buffer of size bytes), every
 * registered secret in every form above with "<hidden>", for text that
 * leaves the process by another way than a log line (an error in the
 * index, a write's answer).  The result is cut to size - 1 bytes.
 */
void	mb_log_scrub(char *s, size_t size);
/* Forget all secrets (wiping the copies). */
void	mb_log_clear_secrets(void);

#endif
