/*
 * imap_probe: drive the Mailbox interface (include/mailbox/imap.h) from a
 * shell test, one subcommand per run, results as simple lines on stdout.
 *
 *   imap_probe [options] login
 *   imap_probe [options] list
 *   imap_probe [options] examine FOLDER
 *   imap_probe [options] uids FOLDER ABOVE
 *   imap_probe [options] fetch FOLDER FIRST LAST
 *   imap_probe [options] bench FOLDER BATCH
 *
 * Options: --host H --port N --tls implicit|starttls|none --user U
 * --password-file F (the password is never taken from argv) --ca-file F
 * --timeout S --deadline-ms N (relative, for the command after connect)
 * --size-cap N --out-dir D (fetch: write each message to D/<uid>.eml)
 * --debug (log the IMAP dialogue at debug level).
 *
 * Errors print "error <class>: <message>" on stdout and exit 2; after a
 * failed command (not a failed connect) the probe tries LIST on the same
 * handle and prints "after error: list ok" or "after error: error ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mailbox/buf.h"
#include "mailbox/err.h"
#include "mailbox/imap.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

struct opts {
	struct mb_imap_conf	 conf;
	const char		*password_file;
	long long		 deadline_ms;
	uint64_t		 size_cap;
	const char		*out_dir;
	int			 debug;
};

static _Noreturn void
usage(void)
{
	fprintf(stderr, "usage: imap_probe [--host H] [--port N] [--tls implicit|starttls|none] "
	    "[--user U] [--password-file F] [--ca-file F] [--timeout S] [--deadline-ms N] "
	    "[--size-cap N] [--out-dir D] [--debug] login|list|examine|uids|fetch|bench ...\n");
	exit(1);
}

static _Noreturn void
fail(const struct mb_err *err)
{
	printf("error %s: %s\n", mb_errcode_name(err->code), err->msg);
	fflush(stdout);
	exit(2);
}

static char *
read_password(const char *path)
{
	struct mb_buf b = MB_BUF_INIT(4096);
	char chunk[512];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1) {
		fprintf(stderr, "imap_probe: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n <= 0 || mb_buf_add(&b, chunk, (size_t)n) == -1)
			break;
	}
	explicit_bzero(chunk, sizeof(chunk));
	close(fd);
	while (b.len > 0 && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
		b.data[--b.len] = '\0';
	return mb_buf_detach(&b, NULL);
}

static unsigned long long
num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		usage();
	return v;
}

static void
flags_str(unsigned flags, char *out, size_t n)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ MB_FLAG_SEEN, "\\Seen" }, { MB_FLAG_ANSWERED, "\\Answered" },
		{ MB_FLAG_FLAGGED, "\\Flagged" }, { MB_FLAG_DELETED, "\\Deleted" },
		{ MB_FLAG_DRAFT, "\\Draft" },
	};
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < MB_ARRAY_LEN(names); i++)
		if (flags & names[i].bit)
			len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "",
			    names[i].name);
	if (len == 0)
		snprintf(out, n, "-");
}

struct fetch_state {
	const struct opts	*o;
	size_t			 n;
	uint64_t		 bytes;
	int			 quiet;
};

static int
on_message(const struct mb_imap_message *m, void *arg)
{
	struct fetch_state *s = arg;
	char flags[96];

	s->n++;
	s->bytes += m->raw_len;
	if (s->quiet)
		return 0;
	flags_str(m->flags, flags, sizeof(flags));
	printf("msg uid=%" PRIu32 " size=%" PRIu64 " raw_len=%zu headers_only=%d flags=%s "
	    "keywords=%s modseq=%" PRIu64 " internaldate=%" PRId64 "\n", m->uid, m->size,
	    m->raw_len, m->headers_only, flags, *m->keywords ? m->keywords : "-", m->modseq,
	    m->internaldate);
	if (s->o->out_dir != NULL) {
		char path[4096];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%" PRIu32 ".eml", s->o->out_dir, m->uid);
		fp = fopen(path, "wb");
		if (fp == NULL || fwrite(m->raw, 1, m->raw_len, fp) != m->raw_len ||
		    fclose(fp) != 0) {
			fprintf(stderr, "imap_probe: %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static long
peak_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

int
main(int argc, char **argv)
{
	struct opts o = { .conf = { .host = "127.0.0.1", .port = 993,
	    .tls = MB_IMAP_TLS_IMPLICIT, .timeout_s = 10 }, .size_cap = UINT64_MAX };
	struct mb_err err = { 0 };
	struct mb_imap *imap = NULL;
	char *password = NULL;
	int i;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(opt, "--debug") == 0) {
			o.debug = 1;
			continue;
		}
		if (val == NULL)
			usage();
		i++;
		if (strcmp(opt, "--host") == 0)
			o.conf.host = val;
		else if (strcmp(opt, "--port") == 0)
			o.conf.port = (unsigned)num(val);
		else if (strcmp(opt, "--tls") == 0)
			o.conf.tls = strcmp(val, "implicit") == 0 ? MB_IMAP_TLS_IMPLICIT :
			    strcmp(val, "starttls") == 0 ? MB_IMAP_TLS_STARTTLS :
			    strcmp(val, "none") == 0 ? MB_IMAP_TLS_NONE : (usage(), 0);
		else if (strcmp(opt, "--user") == 0)
			o.conf.user = val;
		else if (strcmp(opt, "--password-file") == 0)
			o.password_file = val;
		else if (strcmp(opt, "--ca-file") == 0)
			o.conf.ca_file = val;
		else if (strcmp(opt, "--timeout") == 0)
			o.conf.timeout_s = (unsigned)num(val);
		else if (strcmp(opt, "--deadline-ms") == 0)
			o.deadline_ms = (long long)num(val);
		else if (strcmp(opt, "--size-cap") == 0)
			o.size_cap = num(val);
		else if (strcmp(opt, "--out-dir") == 0)
			o.out_dir = val;
		else
			usage();
	}
	if (i >= argc || o.password_file == NULL || o.conf.user == NULL)
		usage();
	mb_log_init("imap_probe", o.debug ? MB_LOG_DEBUG : MB_LOG_INFO);
	password = read_password(o.password_file);
	o.conf.password = password;

	const char *cmd = argv[i++];
	int nargs = argc - i;
	long long t0 = mb_now_ms();

	if (mb_imap_connect(&o.conf, &imap, &err) == -1) {
		mb_freezero(password, strlen(password));
		fail(&err);
	}
	if (o.deadline_ms > 0)
		mb_imap_set_deadline(imap, mb_now_ms() + o.deadline_ms);

	if (strcmp(cmd, "login") == 0 && nargs == 0) {
		printf("ok condstore=%d\n", mb_imap_has_capability(imap, "CONDSTORE"));
	} else if (strcmp(cmd, "list") == 0 && nargs == 0) {
		struct mb_imap_folder *f = NULL;
		size_t n = 0;

		if (mb_imap_list(imap, &f, &n, &err) == -1)
			goto error;
		for (size_t k = 0; k < n; k++)
			printf("folder\t%s\t%s\t%d\n", f[k].name, f[k].role ? f[k].role : "-",
			    f[k].selectable);
		mb_imap_folders_free(&f, n);
	} else if (strcmp(cmd, "examine") == 0 && nargs == 1) {
		struct mb_imap_status st;

		if (mb_imap_examine(imap, argv[i], &st, &err) == -1)
			goto error;
		printf("uidvalidity %" PRIu32 "\nuidnext %" PRIu32 "\nexists %" PRIu32
		    "\nhighestmodseq %" PRIu64 "\n", st.uidvalidity, st.uidnext, st.exists,
		    st.highestmodseq);
	} else if (strcmp(cmd, "uids") == 0 && nargs == 2) {
		struct mb_imap_status st;
		uint32_t *uids = NULL;
		size_t n = 0;

		if (mb_imap_examine(imap, argv[i], &st, &err) == -1 ||
		    mb_imap_uids_above(imap, (uint32_t)num(argv[i + 1]), &uids, &n, &err) == -1)
			goto error;
		printf("uids %zu:", n);
		for (size_t k = 0; k < n; k++)
			printf(" %" PRIu32, uids[k]);
		printf("\n");
		free(uids);
	} else if (strcmp(cmd, "fetch") == 0 && nargs == 3) {
		struct mb_imap_status st;
		struct fetch_state s = { .o = &o };

		if (mb_imap_examine(imap, argv[i], &st, &err) == -1 ||
		    mb_imap_fetch_range(imap, (uint32_t)num(argv[i + 1]), (uint32_t)num(argv[i + 2]),
		    o.size_cap, on_message, &s, &err) == -1)
			goto error;
		printf("fetched %zu\n", s.n);
	} else if (strcmp(cmd, "bench") == 0 && nargs == 2) {
		struct mb_imap_status st;
		struct fetch_state s = { .o = &o, .quiet = 1 };
		uint32_t batch = (uint32_t)num(argv[i + 1]);
		long long start;

		if (batch == 0)
			usage();
		if (mb_imap_examine(imap, argv[i], &st, &err) == -1)
			goto error;
		start = mb_now_ms();
		for (uint32_t first = 1; first < st.uidnext; first += batch)
			if (mb_imap_fetch_range(imap, first, first + batch - 1, o.size_cap, on_message,
			    &s, &err) == -1)
				goto error;
		long long ms = mb_now_ms() - start;

		printf("bench messages=%zu bytes=%" PRIu64 " ms=%lld msgs_per_s=%.0f "
		    "peak_rss_kb=%ld\n", s.n, s.bytes, ms, ms > 0 ? s.n * 1000.0 / (double)ms : 0.0,
		    peak_rss_kb());
	} else {
		mb_imap_close(&imap);
		usage();
	}
	mb_imap_close(&imap);
	mb_freezero(password, strlen(password));
	mb_log_clear_secrets();
	fprintf(stderr, "imap_probe: %s took %lld ms\n", cmd, mb_now_ms() - t0);
	return 0;
error:
	fprintf(stderr, "imap_probe: %s failed after %lld ms\n", cmd, mb_now_ms() - t0);
	/* Is the handle still usable?  A tagged NO leaves it so; anything that
	 * desynchronised the stream must make every later call fail at once. */
	{
		struct mb_err err2 = { 0 };
		struct mb_imap_folder *f = NULL;
		size_t n = 0;

		if (mb_imap_list(imap, &f, &n, &err2) == 0)
			printf("after error: list ok\n");
		else
			printf("after error: error %s: %s\n", mb_errcode_name(err2.code), err2.msg);
		mb_imap_folders_free(&f, n);
	}
	mb_imap_close(&imap);
	mb_freezero(password, strlen(password));
	fail(&err);
}
