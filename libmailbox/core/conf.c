/*
 * Typed configuration tables: see include/mailbox/conf.h.
 *
 * The file format is the one .env.example uses, so the same file serves
 * `syncd --config FILE` and a shell or systemd EnvironmentFile:
 *
 *	# comment
 *	KEY=value			trailing " # comment" dropped, blanks trimmed
 *	KEY="value with \"quotes\""	backslash escapes \" and \\ only
 *	KEY='literal value'
 *	export KEY=value		"export " is accepted and ignored
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mailbox/buf.h"
#include "mailbox/conf.h"

#define CONF_FILE_MAX		(1u << 20)	/* a config file is small */
#define CONF_PASSWORD_MAX	8192	/* a Microsoft refresh token is ~2 KB */

static char **
str_slot(const struct mb_conf_key *k, void *conf)
{
	return (char **)((char *)conf + k->offset);
}

static unsigned *
uint_slot(const struct mb_conf_key *k, void *conf)
{
	return (unsigned *)((char *)conf + k->offset);
}

int
mb_conf_parse_uint(const char *s, unsigned long long min, unsigned long long max,
    unsigned long long *v_r)
{
	unsigned long long v;
	char *end;

	/* strtoull accepts leading blanks, a sign and "-1" (as ULLONG_MAX): refuse them first. */
	if (s == NULL || !isdigit((unsigned char)s[0])) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE) {
		return -1;
	}
	if (end == s || *end != '\0') {
		errno = EINVAL;
		return -1;
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*v_r = v;
	return 0;
}

/* Store text as key k's value; err names where it came from on failure. */
static int
conf_set(const struct mb_conf_key *k, void *conf, const char *value, const char *where,
    struct mb_err *err)
{
	unsigned long long v;
	unsigned long long max = k->max;

	switch (k->type) {
	case MB_CONF_PATH:
		if (value[0] != '/')
			return mb_err_set(err, MB_E_CONFIG,
			    "%s%s: must be an absolute path", where, k->name);
		/* FALLTHROUGH */
	case MB_CONF_STR:
		free(*str_slot(k, conf));
		*str_slot(k, conf) = mb_xstrdup(value);
		return 0;
	case MB_CONF_UINT:
		if (max > UINT32_MAX)
			max = UINT32_MAX;
		if (mb_conf_parse_uint(value, k->min, max, &v) == -1) {
			if (k->flags & MB_CF_SECRET)
				return mb_err_set(err, MB_E_CONFIG, "%s%s: not a number in %llu..%llu",
				    where, k->name, k->min, max);
			return mb_err_set(err, MB_E_CONFIG, "%s%s: '%.64s' is not a number in %llu..%llu",
			    where, k->name, value, k->min, max);
		}
		*uint_slot(k, conf) = (unsigned)v;
		return 0;
	case MB_CONF_ENUM:
		for (unsigned i = 0; k->choices && k->choices[i]; i++)
			if (strcasecmp(value, k->choices[i]) == 0) {
				*uint_slot(k, conf) = i;
				return 0;
			}
		{
			struct mb_buf b = MB_BUF_INIT(200);

			for (unsigned i = 0; k->choices && k->choices[i]; i++)
				mb_buf_addf(&b, "%s%s", i ? "|" : "", k->choices[i]);
			mb_err_set(err, MB_E_CONFIG, "%s%s: '%.64s' is not one of %s", where, k->name,
			    (k->flags & MB_CF_SECRET) ? "<hidden>" : value, b.data);
			mb_buf_release(&b);
		}
		return -1;
	}
	return mb_err_set(err, MB_E_INTERNAL, "%s: unknown key type", k->name);
}

static const struct mb_conf_key *
conf_find(const struct mb_conf_key *keys, size_t n, const char *name, size_t *i_r)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i].name, name) == 0) {
			*i_r = i;
			return &keys[i];
		}
	return NULL;
}

/* Read all of a (small) file into *text_r; the caller frees it. */
static int
read_small_file(const char *path, size_t max, struct mb_buf *out, struct mb_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	char chunk[4096];
	ssize_t r;

	if (fd == -1)
		return mb_err_set(err, MB_E_CONFIG, "%s: %s", path, strerror(errno));
	mb_buf_init(out, max);
	while ((r = read(fd, chunk, sizeof(chunk))) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 || mb_buf_add(out, chunk, (size_t)r) == -1) {
			int e = errno;

			explicit_bzero(chunk, sizeof(chunk));
			close(fd);
			return mb_err_set(err, MB_E_CONFIG, "%s: %s", path,
			    e == EMSGSIZE ? "file too large" : strerror(e));
		}
	}
	explicit_bzero(chunk, sizeof(chunk));
	close(fd);
	return 0;
}

/*
 * Parse the value part of one line (after '='), in place.  Returns the value
 * (a pointer into line) or NULL with *why_r set.
 */
static char *
parse_value(char *v, const char **why_r)
{
	char *end, *w;

	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '"' || *v == '\'') {
		char q = *v++;

		for (w = end = v; *end && *end != q; end++) {
			if (q == '"' && *end == '\\' && (end[1] == '"' || end[1] == '\\'))
				end++;
			*w++ = *end;
		}
		if (*end != q) {
			*why_r = "unterminated quote";
			return NULL;
		}
		for (end++; *end == ' ' || *end == '\t'; end++)
			;
		if (*end != '\0' && *end != '#') {
			*why_r = "text after the closing quote";
			return NULL;
		}
		*w = '\0';
		return v;
	}
	/* Unquoted: a '#' after a blank starts a comment, as in a shell. */
	for (end = v; *end; end++)
		if (*end == '#' && (end == v || end[-1] == ' ' || end[-1] == '\t'))
			break;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*end = '\0';
	return v;
}

static int
conf_load_file(const struct mb_conf_key *keys, size_t n, void *conf, const char *file,
    enum mb_conf_source *src, struct mb_err *err)
{
	struct mb_buf text;
	bool *seen = mb_xcalloc(n, sizeof(bool));
	char *line, *next;
	unsigned lineno = 0;
	int r = 0;

	if (read_small_file(file, CONF_FILE_MAX, &text, err) == -1) {
		free(seen);
		return -1;
	}
	if (memchr(text.data, '\0', text.len) != NULL) {
		r = mb_err_set(err, MB_E_CONFIG, "%s: NUL byte in file", file);
		text.len = 0;
	}
	for (line = text.data; line != NULL && r == 0; line = next) {
		char *eq, *name, *value, *p, where[300];
		const char *why = NULL;
		const struct mb_conf_key *k;
		size_t i;

		lineno++;
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		for (name = line; *name == ' ' || *name == '\t'; name++)
			;
		if (*name == '#' || *name == '\0' || strcmp(name, "\r") == 0)
			continue;
		if (strncmp(name, "export ", 7) == 0)
			for (name += 7; *name == ' '; name++)
				;
		eq = strchr(name, '=');
		if (eq == NULL) {
			r = mb_err_set(err, MB_E_CONFIG, "%s:%u: expected KEY=VALUE", file, lineno);
			break;
		}
		for (p = eq; p > name && (p[-1] == ' ' || p[-1] == '\t'); p--)
			;
		*p = '\0';
		snprintf(where, sizeof(where), "%s:%u: ", file, lineno);
		k = conf_find(keys, n, name, &i);
		if (k == NULL) {
			r = mb_err_set(err, MB_E_CONFIG, "%sunknown key %.64s", where, name);
			break;
		}
		if (seen[i]) {
			r = mb_err_set(err, MB_E_CONFIG, "%s%s: set twice in the file", where, k->name);
			break;
		}
		seen[i] = true;
		value = parse_value(eq + 1, &why);
		if (value == NULL) {
			r = mb_err_set(err, MB_E_CONFIG, "%s%s: %s", where, k->name, why);
			break;
		}
		if (*value == '\0')
			continue;	/* KEY= means "use the default" */
		r = conf_set(k, conf, value, where, err);
		if (r == 0 && src != NULL)
			src[i] = MB_CONF_FROM_FILE;
	}
	explicit_bzero(text.data, text.len);
	mb_buf_release(&text);
	free(seen);
	return r;
}

int
mb_conf_load(const struct mb_conf_key *keys, size_t n, void *conf, const char *file,
    const char *(*lookup)(const char *name), enum mb_conf_source *sources_r,
    struct mb_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (sources_r != NULL)
			sources_r[i] = MB_CONF_UNSET;
		if (keys[i].def == NULL)
			continue;
		if (conf_set(&keys[i], conf, keys[i].def, "default of ", err) == -1)
			return -1;
		if (sources_r != NULL)
			sources_r[i] = MB_CONF_FROM_DEFAULT;
	}
	if (file != NULL && conf_load_file(keys, n, conf, file, sources_r, err) == -1)
		return -1;
	for (size_t i = 0; lookup != NULL && i < n; i++) {
		const char *v = lookup(keys[i].name);

		if (v == NULL || *v == '\0')
			continue;
		if (conf_set(&keys[i], conf, v, "environment: ", err) == -1)
			return -1;
		if (sources_r != NULL)
			sources_r[i] = MB_CONF_FROM_ENV;
	}
	for (size_t i = 0; i < n; i++) {
		bool unset = (keys[i].type == MB_CONF_STR || keys[i].type == MB_CONF_PATH) &&
		    *str_slot(&keys[i], conf) == NULL;

		if ((keys[i].flags & MB_CF_REQUIRED) && unset)
			return mb_err_set(err, MB_E_CONFIG, "%s: required setting is missing",
			    keys[i].name);
	}
	return 0;
}

void
mb_conf_release(const struct mb_conf_key *keys, size_t n, void *conf)
{
	for (size_t i = 0; i < n; i++) {
		char **s;

		if (keys[i].type != MB_CONF_STR && keys[i].type != MB_CONF_PATH)
			continue;
		s = str_slot(&keys[i], conf);
		if (*s != NULL)
			mb_freezero(*s, strlen(*s));
		*s = NULL;
	}
}

void
mb_conf_print(const struct mb_conf_key *keys, size_t n, const void *conf,
    const enum mb_conf_source *sources, FILE *out)
{
	static const char *const from[] = { "default", "file", "environment", "unset" };

	for (size_t i = 0; i < n; i++) {
		const struct mb_conf_key *k = &keys[i];
		void *c = (void *)(uintptr_t)conf;
		const char *src = sources ? from[sources[i]] : NULL;
		bool secret = (k->flags & MB_CF_SECRET) != 0;

		switch (k->type) {
		case MB_CONF_STR:
		case MB_CONF_PATH:
			if (*str_slot(k, c) == NULL)
				fprintf(out, "#%s=", k->name);
			else
				fprintf(out, "%s=%s", k->name, secret ? "<hidden>" : *str_slot(k, c));
			break;
		case MB_CONF_UINT:
			if (secret)
				fprintf(out, "%s=<hidden>", k->name);
			else
				fprintf(out, "%s=%u", k->name, *uint_slot(k, c));
			break;
		case MB_CONF_ENUM:
			fprintf(out, "%s=%s", k->name, secret ? "<hidden>" :
			    k->choices[*uint_slot(k, c)]);
			break;
		}
		if (src != NULL)
			fprintf(out, "\t# %s%s%s", src, k->help ? ": " : "", k->help ? k->help : "");
		fputc('\n', out);
	}
}

int
mb_conf_read_secret(const char *file, const char *creds_dir, const char *cred,
    const char *setting, char **pw_r, struct mb_err *err)
{
	const char *what = strcmp(cred, "imap-password") == 0 ? "password file" : "secret file";
	char path[4096];
	struct stat st;
	char buf[CONF_PASSWORD_MAX + 1];
	size_t len = 0;
	int fd, r = -1;

	*pw_r = NULL;
	if (file != NULL)
		snprintf(path, sizeof(path), "%s", file);
	else if (creds_dir != NULL && *creds_dir != '\0')
		snprintf(path, sizeof(path), "%s/%s", creds_dir, cred);
	else
		return mb_err_set(err, MB_E_CONFIG, "%s: required setting is missing (or run under "
		    "systemd with LoadCredential=%s:...)", setting, cred);

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd == -1)
		return mb_err_set(err, MB_E_CONFIG, "%s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) == -1) {
		mb_err_set(err, MB_E_CONFIG, "%s %s: %s", what, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		mb_err_set(err, MB_E_CONFIG, "%s %s: not a regular file", what, path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		mb_err_set(err, MB_E_CONFIG, "%s %s: mode %04o lets group or others "
		    "read it; chmod 600 it", what, path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	/* One fixed buffer, wiped: a growing buffer would leave copies behind in freed memory. */
	for (;;) {
		ssize_t got = read(fd, buf + len, sizeof(buf) - len);

		if (got == -1 && errno == EINTR)
			continue;
		if (got == -1) {
			mb_err_set(err, MB_E_CONFIG, "%s %s: %s", what, path, strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len == sizeof(buf)) {
			mb_err_set(err, MB_E_CONFIG, "%s %s: longer than %d bytes", what, path,
			    CONF_PASSWORD_MAX);
			goto out;
		}
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	if (len == 0 || memchr(buf, '\0', len) != NULL || memchr(buf, '\n', len) != NULL) {
		mb_err_set(err, MB_E_CONFIG, "%s %s: %s", what, path, len == 0 ?
		    "empty" : "holds more than one line or a NUL byte");
		goto out;
	}
	*pw_r = mb_xstrndup(buf, len);
	r = 0;
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return r;
}

int
mb_conf_read_password(const char *file, const char *creds_dir, char **pw_r,
    struct mb_err *err)
{
	return mb_conf_read_secret(file, creds_dir, "imap-password", "IMAP_PASSWORD_FILE", pw_r,
	    err);
}

void
mb_conf_password_free(char **pwp)
{
	if (*pwp == NULL)
		return;
	mb_freezero(*pwp, strlen(*pwp));
	*pwp = NULL;
}
