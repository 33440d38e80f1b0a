/*
 * Typed configuration tables, the one way both daemons read settings.  A daemon describes its settings in
 * a table of struct mb_conf_key; mb_conf_load() fills a struct of the
 * daemon's own type from, in rising precedence: the table's defaults, a
 * KEY=VALUE file (as .env.example), and a lookup function (getenv in main.c,
 * a table in tests).  libmailbox never calls getenv() itself.
 *
 * Unknown keys in the file, bad values and missing required keys are errors
 * whose message names the key (and the file and line, for the file).
 */
#ifndef MAILBOX_CONF_H
#define MAILBOX_CONF_H

#include <stddef.h>
#include <stdio.h>

#include "mailbox/err.h"

enum mb_conf_type {
	MB_CONF_STR,	/* char * (owned by the conf struct; NULL when unset) */
	MB_CONF_PATH,	/* char *, must be absolute */
	MB_CONF_UINT,	/* unsigned, decimal, within [min, max] */
	MB_CONF_ENUM,	/* unsigned: index of the value in choices (case-insensitive) */
};

enum {
	MB_CF_REQUIRED = 1 << 0,	/* missing or empty is an error */
	MB_CF_SECRET = 1 << 1,		/* printed as <hidden> */
};

struct mb_conf_key {
	const char		*name;
	enum mb_conf_type	 type;
	size_t			 offset;	/* offsetof(struct your_conf, field) */
	const char		*def;		/* default as text; NULL: none */
	unsigned long long	 min, max;	/* MB_CONF_UINT bounds, inclusive */
	unsigned		 flags;
	const char *const	*choices;	/* MB_CONF_ENUM: NULL-terminated */
	const char		*help;		/* one line for --check-config; may be NULL */
};

/* Where a key's effective value came from (for printing). */
enum mb_conf_source {
	MB_CONF_FROM_DEFAULT,
	MB_CONF_FROM_FILE,
	MB_CONF_FROM_ENV,
	MB_CONF_UNSET,
};

/*
 * Fill conf (a struct the table's offsets describe; zero it first) from the
 * defaults, then file (NULL: none; a missing file is an error), then
 * lookup(name) for every key in the table (NULL: none; an empty string counts
 * as unset).  sources_r, if not NULL, has room for n entries.  On error
 * returns -1 with err set (MB_E_CONFIG, naming the key) and conf may be
 * partly filled: release it with mb_conf_release() either way.
 */
int	mb_conf_load(const struct mb_conf_key *keys, size_t n, void *conf, const char *file,
	    const char *(*lookup)(const char *name), enum mb_conf_source *sources_r,
	    struct mb_err *err);

/* Free the strings the table's keys own in conf and zero them.  Idempotent. */
void	mb_conf_release(const struct mb_conf_key *keys, size_t n, void *conf);

/*
 * Print the effective settings, one KEY=VALUE line each, secrets as
 * <hidden>, unset keys commented out, each followed by where it came from.
 */
void	mb_conf_print(const struct mb_conf_key *keys, size_t n, const void *conf,
	    const enum mb_conf_source *sources, FILE *out);

/*
 * Parse an unsigned decimal number: digits only (no sign, no space, no
 * "0x"), within [min, max].  Returns 0, or -1 with errno EINVAL or ERANGE.
 */
int	mb_conf_parse_uint(const char *s, unsigned long long min, unsigned long long max,
	    unsigned long long *v_r);

/*
 * Read the IMAP password: from file when not NULL, else from
 * creds_dir/imap-password (systemd's $CREDENTIALS_DIRECTORY, passed in by
 * main.c; NULL: none).  The file must be a regular file that neither group
 * nor others can read, and not empty; one trailing newline (LF or CRLF) is
 * stripped.  On success *pw_r is the caller's: free it with
 * mb_conf_password_free(), which wipes it.  Errors are MB_E_CONFIG, and their
 * messages name the file, never its contents.
 */
int	mb_conf_read_password(const char *file, const char *creds_dir, char **pw_r,
	    struct mb_err *err);
/*
 * The same for another secret (an OAuth client secret, a refresh token):
 * from file, else creds_dir/cred; setting names the key in the error when
 * neither is there.  Free with mb_conf_password_free().
 */
int	mb_conf_read_secret(const char *file, const char *creds_dir, const char *cred,
	    const char *setting, char **s_r, struct mb_err *err);
void	mb_conf_password_free(char **pwp);	/* NULL-safe; wipes, frees, *pwp = NULL */

#endif
