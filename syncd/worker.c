/*
 * A fetch worker: a forked process with one IMAP connection, taking one UID
 * range at a time from the scheduler over its socketpair.  The session keeps
 * its folder examined (read-only) from range to range: EXAMINE costs a
 * server time in proportion to the folder's size (Dovecot reads the whole
 * index), so one per range made a backfill's server work grow with the
 * square of the folder.  Before each range the worker checks that the
 * range's UIDVALIDITY is the session's, re-EXAMINEs only to switch folder or
 * to settle a mismatch, and sends a NOOP (a sync point: new mail shows up as
 * EXISTS) when the range reaches above the UIDNEXT the session saw.  Then it
 * fetches the range with BODY.PEEK (the Mailbox interface has no other way),
 * normalises each message, extracts its attachments' text (mailbox/extract.h:
 * the attachments are hostile, so this is the only process that parses them),
 * stores attachment bytes as content-addressed blobs, and streams one ROW frame per message, then RANGE_DONE.
 *
 * Any IMAP error leaves the session unusable, so the worker reports it
 * (FAIL) and exits; the scheduler starts a fresh one.  It never touches the
 * index, and it dies with its parent (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "mailbox/extract.h"
#include "mailbox/log.h"
#include "mailbox/mime.h"
#include "syncd.h"

#define FROM_SCHEDULER	MB_IPC_BIT(MB_IPC_RANGE)
#define TRIM_BODY	(256u << 10)	/* a row that does not fit a frame is cut to this */
#define TRIM_LIST	64
/*
 * A session idle this long is asked a NOOP before its next range even when
 * the range holds no new UID; a NOOP that fails (the session was dropped:
 * a server's idle timeout, `doveadm kick`) is answered by one fresh login
 * before the range is failed.  The scheduler keeps workers SYNC_PUSH_KEEP
 * seconds after a push (pool.c); within a tick ranges follow each other
 * without a pause.
 */
#define SESSION_STALE_MS	5000

int
sd_blob_store(const char *data_dir, const void *data, size_t len, char sha256_r[65],
    struct mb_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char dir[4096], path[4200], tmp[4200];
	struct stat st;
	const char *p = data;
	size_t off = 0;
	int fd;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return mb_err_set(err, MB_E_INTERNAL, "blob: sha256 failed");
	for (unsigned i = 0; i < 32; i++)
		snprintf(sha256_r + 2 * i, 3, "%02x", md[i]);
	snprintf(dir, sizeof(dir), "%s/blobs/%.2s", data_dir, sha256_r);
	snprintf(path, sizeof(path), "%s/%s", dir, sha256_r + 2);
	/* Content-addressed: the same name is the same bytes.  Touched so the blob
	 * collection (attach.c) leaves it; gone meanwhile: written anew. */
	if (stat(path, &st) == 0 && (size_t)st.st_size == len &&
	    utimensat(AT_FDCWD, path, NULL, 0) == 0)
		return 0;
	if (mkdir(dir, 0750) == -1 && errno != EEXIST)
		return mb_err_set(err, MB_E_TEMP, "blob: mkdir %s: %s", dir, strerror(errno));
	snprintf(tmp, sizeof(tmp), "%s/.tmp.XXXXXX", dir);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd == -1)
		return mb_err_set(err, MB_E_TEMP, "blob: %s: %s", tmp, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			goto fail;
		off += (size_t)w;
	}
	if (fchmod(fd, 0640) == -1 || fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto fail;
	return 0;
fail:
	mb_err_set(err, MB_E_TEMP, "blob: %s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	unlink(tmp);
	return -1;
}

struct fetch_ctx {
	const struct sd_worker_args	*a;
	struct mb_ipc_conn		*conn;
	uint32_t			 range_id;
	int64_t				 folder_id;
	uint32_t			 uidvalidity;
	uint32_t			 sent;
	struct mb_err			*err;
};

/*
 * The kill hook (docs/syncd.md): with SYNCD_TEST_WORKER_STOP_FILE set, the
 * worker that removes that file first stops itself (SIGSTOP) once it has
 * sent SD_TEST_STOP_ROWS rows of a range, so a test kills a worker that is
 * certainly mid-range, holding rows the scheduler has and must not write.
 * One worker stops, once: the file is gone for the others and the retry.
 */
#define SD_TEST_STOP_ROWS	10

static void
test_stop_hook(uint32_t sent)
{
	const char *path;

	if (sent == SD_TEST_STOP_ROWS && (path = getenv("SYNCD_TEST_WORKER_STOP_FILE")) != NULL &&
	    unlink(path) == 0)
		(void)raise(SIGSTOP);
}

/* Cut a row that would not fit in a frame: shorter body, fewer lists. */
static void
trim_msg(struct mb_msg *m)
{
	if (m->body_len > TRIM_BODY) {
		size_t n = TRIM_BODY;

		while (n > 0 && ((unsigned char)m->body[n] & 0xc0) == 0x80)
			n--;	/* not inside a UTF-8 character */
		m->body[n] = '\0';
		m->body_len = n;
		m->body_truncated = true;
	}
	for (size_t i = TRIM_LIST; i < m->n_references; i++)
		free(m->references[i]);
	if (m->n_references > TRIM_LIST)
		m->n_references = TRIM_LIST;
	if (m->n_attachments > TRIM_LIST) {
		for (size_t i = TRIM_LIST; i < m->n_attachments; i++) {
			free(m->attachments[i].filename);
			free(m->attachments[i].mime_type);
			free(m->attachments[i].content_id);
			free(m->attachments[i].data);
		}
		m->n_attachments = TRIM_LIST;
	}
	if (m->parse_error == NULL)
		m->parse_error = mb_xstrdup("row too large: body and lists trimmed");
}

static int
send_row(struct fetch_ctx *x, const struct mb_index_row *row)
{
	struct mb_ipc_out o;

	mb_ipc_out_begin(&o, MB_IPC_ROW, x->range_id);
	mb_ipc_put_row(&o, row);
	if (mb_ipc_out_finish(&o, x->err) == -1) {
		mb_ipc_out_release(&o);
		return -1;
	}
	return mb_ipc_send(x->conn, &o, x->err);
}

static int
on_message(const struct mb_imap_message *m, void *ctx)
{
	struct fetch_ctx *x = ctx;
	struct mb_mime_opts opts = MB_MIME_OPTS_DEFAULT;
	struct mb_msg *msg = NULL;
	struct mb_err perr = { 0 };
	struct mb_index_row row = { 0 };
	int r;

	if (mb_mime_parse(m->raw, m->raw_len, &opts, &msg, &perr) == -1) {
		/* Never fail a message: index what the IMAP layer told us. */
		msg = mb_msg_new();
		msg->parse_error = mb_xstrdup(perr.msg);
	}
	mb_extract_message(&x->a->conf->extract, x->a->conf->data_dir, msg);
	for (size_t i = 0; i < msg->n_attachments; i++) {
		struct mb_attachment *att = &msg->attachments[i];

		if (att->data == NULL)
			continue;
		if (sd_blob_store(x->a->conf->data_dir, att->data, att->size, att->sha256,
		    x->err) == -1) {
			mb_msg_free(&msg);
			return -1;
		}
		free(att->data);
		att->data = NULL;
	}
	row.folder_id = x->folder_id;
	row.uidvalidity = x->uidvalidity;
	row.uid = m->uid;
	row.flags = m->flags;
	row.keywords = m->keywords;
	row.internaldate = m->internaldate;
	row.size = m->size;
	row.modseq = m->modseq;
	row.headers_only = m->headers_only;
	row.msg = msg;
	r = send_row(x, &row);
	if (r == -1 && x->err->code == MB_E_INVALID) {
		mb_log_warnx("UID %u: row larger than a frame; trimmed", m->uid);
		mb_err_clear(x->err);
		trim_msg(msg);
		r = send_row(x, &row);
	}
	mb_msg_free(&msg);
	if (r == 0)
		test_stop_hook(++x->sent);
	return r;
}

static void
send_simple(struct mb_ipc_conn *conn, enum mb_ipc_type type, uint32_t id, enum mb_errcode code,
    const char *msg, uint32_t count)
{
	struct mb_ipc_out o;
	struct mb_err err = { 0 };

	mb_ipc_out_begin(&o, type, id);
	if (type == MB_IPC_FAIL) {
		mb_ipc_put_u32(&o, (uint32_t)code);
		mb_ipc_put_str(&o, msg);
	} else if (type == MB_IPC_RANGE_DONE)
		mb_ipc_put_u32(&o, count);
	if (mb_ipc_out_finish(&o, &err) == -1 || mb_ipc_send(conn, &o, &err) == -1) {
		mb_ipc_out_release(&o);
		_exit(1);	/* the scheduler is gone or we are broken: nothing to report to */
	}
}

/* What the worker's session has examined, kept from range to range. */
struct session {
	char		*folder;	/* owned; NULL: nothing examined */
	uint32_t	 uidvalidity;
	uint32_t	 uidnext;	/* at the EXAMINE: the session has seen every UID below */
	long long	 idle_since_ms;	/* the end of its last range */
};

static void
session_forget(struct session *s)
{
	free(s->folder);
	memset(s, 0, sizeof(*s));
}

/*
 * Have folder examined with the range's uidvalidity and every UID up to
 * last visible.  0: go on and fetch; 1: refused, FAIL sent, the session is
 * still usable; 2: the session was dropped since its last range (its NOOP
 * failed; nothing sent: the caller logs in again, once); -1: FAIL sent, the
 * session is unusable.
 */
static int
session_ready(struct session *s, struct mb_imap *imap, struct mb_ipc_conn *conn,
    uint32_t range_id, const char *folder, uint32_t uidvalidity, uint32_t last)
{
	struct mb_imap_status st = { 0 };
	struct mb_err err = { 0 };
	char msg[128];
	bool same = s->folder != NULL && strcmp(s->folder, folder) == 0 &&
	    s->uidvalidity == uidvalidity;
	bool stale = s->folder != NULL && mb_now_ms() - s->idle_since_ms >= SESSION_STALE_MS;

	if (same && last < s->uidnext && !stale)
		return 0;	/* every UID of the range existed at the EXAMINE */
	if (same || stale) {
		/* Mail may have arrived since, and an idle session may be gone: a
		 * NOOP makes the one visible and proves the other. */
		if (mb_imap_noop(imap, &st, &err) == -1) {
			session_forget(s);
			mb_log_info("session gone since its last range (%s); logging in again",
			    err.msg);
			return 2;
		}
		if (same && st.uidvalidity == uidvalidity)
			return 0;
		/* Another folder, or the server says this one changed under the session. */
	}
	/* Another folder, a uidvalidity to settle, or nothing examined yet. */
	session_forget(s);
	if (mb_imap_examine(imap, folder, &st, &err) == -1) {
		/* A refused EXAMINE leaves nothing examined (RFC 3501 6.3.1). */
		send_simple(conn, MB_IPC_FAIL, range_id, err.code, err.msg, 0);
		return err.code == MB_E_NOTFOUND ? 1 : -1;
	}
	s->folder = mb_xstrdup(folder);
	s->uidvalidity = st.uidvalidity;
	s->uidnext = st.uidnext;
	if (st.uidvalidity != uidvalidity) {
		snprintf(msg, sizeof(msg), "uidvalidity is now %u", st.uidvalidity);
		send_simple(conn, MB_IPC_FAIL, range_id, MB_E_INVALID, msg, 0);
		return 1;
	}
	return 0;
}

/* The worker's login with the credential it was forked with: mb_imap_connect's. */
static int
worker_login(const struct sd_worker_args *a, struct mb_imap **imap_r, struct mb_err *err)
{
	struct mb_imap_conf c;

	sd_imap_conf(a->conf, a->password, &c);
	return mb_imap_connect(&c, imap_r, err);
}

/*
 * A fresh session in place of *imap, which was found dropped while idle:
 * 0, or -1 with FAIL sent for the range (the server refused or is gone).
 */
static int
session_renew(const struct sd_worker_args *a, struct mb_imap **imap, struct mb_ipc_conn *conn,
    uint32_t range_id, long long deadline)
{
	struct mb_err err = { 0 };

	mb_imap_close(imap);
	if (worker_login(a, imap, &err) == -1) {
		send_simple(conn, MB_IPC_FAIL, range_id, err.code == MB_OK ? MB_E_TEMP : err.code,
		    err.msg, 0);
		return -1;
	}
	mb_imap_set_deadline(*imap, deadline);
	return 0;
}

/*
 * One range on *imap (replaced when it was dropped while idle).  Returns 0
 * to go on, -1 when the session is unusable (the failure has been
 * reported; the caller exits).
 */
static int
do_range(const struct sd_worker_args *a, struct session *s, struct mb_imap **imap_p,
    struct mb_ipc_conn *conn, struct mb_ipc_frame *f)
{
	struct mb_imap *imap;
	struct mb_err err = { 0 };
	struct fetch_ctx x = { a, conn, f->hdr.id, 0, 0, 0, &err };
	uint32_t first, last;
	long long deadline;
	char *folder;
	int r;

	x.folder_id = (int64_t)mb_ipc_get_u64(&f->cur);
	folder = mb_ipc_get_strdup(&f->cur);
	x.uidvalidity = mb_ipc_get_u32(&f->cur);
	first = mb_ipc_get_u32(&f->cur);
	last = mb_ipc_get_u32(&f->cur);
	deadline = (long long)mb_ipc_get_u64(&f->cur);
	if (mb_ipc_end(&f->cur, &err) == -1 || folder == NULL || first > last) {
		free(folder);
		_exit(1);	/* the scheduler does not send bad frames: something is badly off */
	}
	mb_imap_set_deadline(*imap_p, deadline);
	r = session_ready(s, *imap_p, conn, x.range_id, folder, x.uidvalidity, last);
	if (r == 2) {
		r = session_renew(a, imap_p, conn, x.range_id, deadline) == -1 ? -1 :
		    session_ready(s, *imap_p, conn, x.range_id, folder, x.uidvalidity, last);
	}
	imap = *imap_p;
	s->idle_since_ms = mb_now_ms();
	if (r != 0) {
		free(folder);
		return r == 1 ? 0 : -1;
	}
	if (mb_imap_fetch_range(imap, first, last, a->conf->sync_max_message_size, on_message, &x,
	    &err) == -1) {
		mb_log_debug("folder '%s' UIDs %u:%u: %s", folder, first, last, err.msg);
		send_simple(conn, MB_IPC_FAIL, x.range_id, err.code == MB_OK ? MB_E_TEMP : err.code,
		    err.msg, 0);
		free(folder);
		return -1;
	}
	mb_imap_set_deadline(imap, 0);
	s->idle_since_ms = mb_now_ms();
	send_simple(conn, MB_IPC_RANGE_DONE, x.range_id, MB_OK, NULL, x.sent);
	free(folder);
	return 0;
}

void
sd_worker_main(const struct sd_worker_args *a)
{
	static char procname[32];
	struct mb_imap *imap = NULL;
	struct session sess = { 0 };
	struct mb_ipc_conn conn;
	struct mb_err err = { 0 };

	sd_proc_child_setup(a->parent);
	snprintf(procname, sizeof(procname), "syncd/worker[%u]", a->slot);
	mb_log_init(procname, sd_conf_log_level(a->conf));
	mb_mime_global_init();
	mb_ipc_conn_init(&conn, a->fd, FROM_SCHEDULER);

	if (worker_login(a, &imap, &err) == -1) {
		send_simple(&conn, MB_IPC_FAIL, 0, err.code, err.msg, 0);
		_exit(0);
	}
	send_simple(&conn, MB_IPC_READY, 0, MB_OK, NULL, 0);
	for (;;) {
		struct mb_ipc_frame f;
		ssize_t n;
		int r;

		while ((r = mb_ipc_next(&conn, &f, &err)) == 1)
			if (do_range(a, &sess, &imap, &conn, &f) == -1) {
				mb_imap_close(&imap);
				_exit(0);
			}
		if (r == -1)
			_exit(1);
		n = mb_ipc_read(&conn, &err);
		if (n <= 0) {
			/* The scheduler closed the channel (or is gone): log out and leave. */
			mb_imap_close(&imap);
			_exit(0);
		}
	}
}
