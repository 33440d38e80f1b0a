/*
 * The writes (docs/writes.md).  A request from the control socket gets a
 * write_log row ('pending') before anything is tried; the checks (message
 * indexed, its folder's UIDVALIDITY unchanged, the flags allowed, a
 * destination known) run against the index; then a forked write process
 * with its own IMAP connection SELECTs the folder and does the one write,
 * under a deadline, while the main loop keeps serving.  Its answer is
 * applied to the index here, in the main loop, so it lands in the single
 * writer's transaction order; the write_log row is completed in the same
 * transaction.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/buf.h"
#include "mailbox/compose.h"
#include "mailbox/index_audit.h"
#include "mailbox/index_writes.h"
#include "mailbox/json.h"
#include "mailbox/log.h"
#include "mailbox/mime.h"
#include "mailbox/msg.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "control.h"
#include "syncd.h"

#define ALLOWED_FLAGS	(MB_FLAG_SEEN | MB_FLAG_FLAGGED | MB_FLAG_ANSWERED)

/* ---------------------------------------------------------------- write_log */

static void
json_str(struct mb_buf *b, const char *s)
{
	(void)mb_json_quote(b, s, strlen(s));
}

static void
json_flags(struct mb_buf *b, unsigned bits)
{
	bool first = true;

	mb_buf_addc(b, '[');
	for (size_t i = 0; i < MB_FLAG_COUNT; i++) {
		if (!(bits & mb_flag_names[i].bit))
			continue;
		if (!first)
			mb_buf_addc(b, ',');
		json_str(b, mb_flag_names[i].imap);
		first = false;
	}
	mb_buf_addc(b, ']');
}

static void
json_strs(struct mb_buf *b, char *const *v, uint32_t n)
{
	mb_buf_addc(b, '[');
	for (uint32_t i = 0; i < n; i++) {
		if (i > 0)
			mb_buf_addc(b, ',');
		json_str(b, v[i]);
	}
	mb_buf_addc(b, ']');
}

/* A draft's arguments: the recipients and subject, and the body's size (not its text). */
static void
draft_arguments(struct mb_buf *b, const struct mb_ctl_request *rq)
{
	mb_buf_adds(b, "\"to\":");
	json_strs(b, rq->to, rq->n_to);
	mb_buf_adds(b, ",\"cc\":");
	json_strs(b, rq->cc, rq->n_cc);
	mb_buf_adds(b, ",\"subject\":");
	if (rq->subject != NULL)
		json_str(b, rq->subject);
	else
		mb_buf_adds(b, "null");
	mb_buf_addf(b, ",\"body_bytes\":%zu", strlen(rq->body));
	if (rq->message_id != 0)
		mb_buf_addf(b, ",\"in_reply_to_id\":%lld", (long long)rq->message_id);
}

static char *
arguments_json(const struct mb_ctl_request *rq)
{
	struct mb_buf b = MB_BUF_INIT(64 * 1024);
	char *s;

	mb_buf_adds(&b, "{");
	if (rq->op == MB_CTL_FLAG) {
		mb_buf_adds(&b, "\"add\":");
		json_flags(&b, rq->add);
		mb_buf_adds(&b, ",\"remove\":");
		json_flags(&b, rq->remove);
	} else if (rq->op == MB_CTL_MOVE) {
		mb_buf_adds(&b, "\"destination\":");
		json_str(&b, rq->dest);
	} else if (rq->op == MB_CTL_DRAFT)
		draft_arguments(&b, rq);
	mb_buf_adds(&b, "}");
	s = mb_xstrdup(b.data ? b.data : "{}");
	mb_buf_release(&b);
	return s;
}

static int64_t
log_begin(struct sd *sd, const struct mb_ctl_request *rq, uid_t peer)
{
	char *args = arguments_json(rq);
	struct mb_audit_request ar = { .at = (int64_t)time(NULL), .tool = mb_ctl_op_name(rq->op),
	    .requested_by = rq->who, .peer_uid = (int64_t)peer, .message_id = rq->message_id,
	    .arguments = args };
	int64_t id = 0;
	struct mb_err ferr = { 0 }, err = { 0 };

	/* The row must be durable before the write is tried: commit the
	 * writer's open group first, so this INSERT is its own transaction.
	 * A failed flush is logged by sd_writer_flush and ends the tick. */
	(void)sd_writer_flush(sd, &ferr);
	if (mb_index_audit_begin(sd->idx, &ar, &id, &err) == -1) {
		mb_log_error("write_log: %s", err.msg);
		id = 0;
	}
	free(args);
	return id;
}

/* Fill in the message's place (once known) and, when outcome is set, finish the row. */
static void
log_update(struct sd *sd, const struct sd_wjob *j, const char *outcome, const char *detail)
{
	/* A draft without APPENDUID has no UID; a draft's row names the
	 * draft, once it is indexed. */
	bool placed = j->folder != NULL && j->uid != 0;
	struct mb_audit_update u = { .folder = j->folder,
	    .uidvalidity = placed ? j->uidvalidity : 0, .uid = placed ? j->uid : 0,
	    .outcome = outcome, .detail = detail, .message_id = j->draft_id };
	struct mb_err ferr = { 0 }, err = { 0 };

	if (j->log_id == 0)
		return;
	(void)sd_writer_flush(sd, &ferr);	/* as in log_begin: not inside the writer's group */
	if (mb_index_audit_update(sd->idx, j->log_id, &u, &err) == -1)
		mb_log_error("write_log: %s", err.msg);
}

/* ------------------------------------------------------------------ checks */

/*
 * Find the message and its folder.  detail_r gets why it is refused (a
 * static string or a message in buf).
 */
static int
check_message(struct sd *sd, struct sd_wjob *j, char *buf, size_t len)
{
	struct mb_write_target t;
	struct mb_err err = { 0 };
	uint32_t folder_uidv;

	if (mb_index_write_target(sd->idx, j->rq.message_id, &t, &err) == -1) {
		if (err.code == MB_E_NOTFOUND)
			snprintf(buf, len, "no message with id %lld in the index",
			    (long long)j->rq.message_id);
		else
			snprintf(buf, len, "%s", err.msg);
		return -1;
	}
	j->folder_id = t.folder_id;
	j->folder = t.folder;		/* the strings change hands */
	j->uidvalidity = t.uidvalidity;
	j->uid = t.uid;
	j->keywords = t.keywords;
	j->modseq = t.modseq;
	folder_uidv = t.folder_uidvalidity;
	if (j->uidvalidity != folder_uidv) {
		snprintf(buf, len, "stale id: folder '%s' has UIDVALIDITY %u now, the message was "
		    "indexed under %u; search again", j->folder, folder_uidv, j->uidvalidity);
		return -1;
	}
	return 0;
}

static int
check_dest(struct sd *sd, struct sd_wjob *j, char *buf, size_t len)
{
	bool trash = j->rq.op == MB_CTL_TRASH, draft = j->rq.op == MB_CTL_DRAFT;
	struct mb_err err = { 0 };

	if (mb_index_write_dest(sd->idx, draft ? MB_WRITE_DEST_DRAFTS : trash ?
	    MB_WRITE_DEST_TRASH : MB_WRITE_DEST_NAME, j->rq.dest, &j->dest_id, &j->dest,
	    &j->dest_uidvalidity, &err) == -1) {
		if (err.code != MB_E_NOTFOUND)
			snprintf(buf, len, "%s", err.msg);
		else if (draft)
			snprintf(buf, len, "no folder has the \\Drafts special-use role and none is "
			    "named 'Drafts'; create_draft is refused");
		else if (trash)
			snprintf(buf, len, "no folder has the \\Trash special-use role; nothing is "
			    "ever deleted permanently, so trash_message is refused");
		else
			snprintf(buf, len, "no folder named '%s' in the index (list_folders names "
			    "them)", j->rq.dest);
		return -1;
	}
	if (!draft && j->dest_id == j->folder_id) {
		snprintf(buf, len, "the message is already in '%s'", j->dest);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ drafts */

/* DRAFT_FROM, else IMAP_USER when it is an address, else no From. */
static const char *
draft_from(const struct sd *sd)
{
	const struct sd_conf *c = sd->conf;

	if (c->draft_from != NULL && *c->draft_from != '\0')
		return c->draft_from;
	if (c->imap_user != NULL && strchr(c->imap_user, '@') != NULL)
		return c->imap_user;
	return NULL;
}

/* The draft's bytes (j->raw), from the request and, for a reply, the original as indexed. */
static int
compose_draft(struct sd *sd, struct sd_wjob *j, char *buf, size_t len)
{
	struct mb_draft_original o = { 0 };
	char *orig_id = NULL, *orig_refs = NULL, *orig_subject = NULL;
	struct mb_draft d = { .from = draft_from(sd), .to = (const char *const *)j->rq.to,
	    .n_to = j->rq.n_to, .cc = (const char *const *)j->rq.cc, .n_cc = j->rq.n_cc,
	    .subject = j->rq.subject, .body = j->rq.body, .date = time(NULL) };
	struct mb_err err = { 0 };
	char *message_id = NULL;
	int r;

	if (j->rq.message_id != 0) {	/* check_message found it a moment ago */
		if (mb_index_write_original(sd->idx, j->rq.message_id, &orig_id, &orig_refs,
		    &orig_subject, &err) == -1 && err.code != MB_E_NOTFOUND) {
			snprintf(buf, len, "%s", err.msg);
			return -1;
		}
		mb_err_clear(&err);
		o.message_id = orig_id;
		o.refs = orig_refs;
		o.subject = orig_subject;
		d.reply_to = &o;
	}
	r = mb_compose_draft(&d, &j->raw, &j->raw_len, &message_id, &err);
	free(orig_id);
	free(orig_refs);
	free(orig_subject);
	if (r == -1)
		snprintf(buf, len, "%s", err.msg);
	free(message_id);
	return r;
}

/*
 * Index the appended draft at once, normalised like synced mail, when the
 * server named it (APPENDUID) under the UIDVALIDITY the folder is indexed
 * with; otherwise the next tick finds it.  Inside the caller's transaction.
 */
static int
index_draft(struct sd *sd, struct sd_wjob *j, unsigned flags, uint32_t uidv, uint32_t uid,
    int64_t *new_id_r, struct mb_err *err)
{
	struct mb_msg *msg = NULL;
	struct mb_err perr = { 0 };
	struct mb_index_row row = { .folder_id = j->dest_id, .uidvalidity = uidv, .uid = uid,
	    .flags = flags, .internaldate = (int64_t)time(NULL), .size = j->raw_len };
	int r;

	*new_id_r = 0;
	free(j->folder);	/* from now on the log names the draft, not the original */
	j->folder = mb_xstrdup(j->dest);
	j->uidvalidity = uidv;
	j->uid = uid;
	if (uid == 0 || uidv == 0 || uidv != j->dest_uidvalidity)
		return 0;
	if (mb_mime_parse(j->raw, j->raw_len, NULL, &msg, &perr) == -1)
		return mb_err_set(err, perr.code, "%s", perr.msg);
	row.msg = msg;
	r = mb_index_upsert(sd->idx, &row, new_id_r, err);
	mb_msg_free(&msg);
	j->draft_id = r == 0 ? *new_id_r : 0;
	return r;
}

/* ---------------------------------------------------------- write process */

/* A result frame from the write process: outcome, detail, flags, COPYUID. */
static void
child_send(int fd, uint32_t outcome, const char *detail, unsigned flags, uint32_t uidv,
    uint32_t uid, bool used_move)
{
	struct mb_ipc_conn c;
	struct mb_ipc_out o;
	struct mb_err err = { 0 };
	struct mb_ctl_result r = { .outcome = outcome, .flags = flags, .uidvalidity = uidv,
	    .uid = uid, .used_move = used_move };

	snprintf(r.detail, sizeof(r.detail), "%.*s", (int)mb_utf8_boundary(detail,
	    strlen(detail), MB_CTL_DETAIL_MAX), detail);
	mb_ipc_conn_init(&c, fd, 0);
	if (mb_ctl_put_result(&o, &r, &err) == 0)
		mb_ipc_send(&c, &o, &err);
	else
		mb_ipc_out_release(&o);
	mb_ipc_conn_release(&c);
}

static _Noreturn void
child_main(struct sd *sd, struct sd_wjob *j, int fd)
{
	struct mb_imap_conf ic;
	struct mb_imap *imap = NULL;
	struct mb_imap_status st;
	struct mb_imap_moved mv = { 0 };
	struct mb_err err = { 0 };
	unsigned flags = 0;
	bool found = false, sent = false;
	sigset_t all;
	char detail[512];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	prctl(PR_SET_DUMPABLE, 0);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGINT, SIG_IGN);
	mb_log_init("syncd/write", mb_log_get_level());
	sd_imap_conf(sd, &ic);
	if (mb_imap_connect(&ic, &imap, &err) == -1)
		goto fail;
	mb_imap_set_deadline(imap, j->deadline_ms - 500);
	if (j->rq.op == MB_CTL_DRAFT) {
		struct mb_imap_appended ap;

		flags = MB_FLAG_DRAFT | MB_FLAG_SEEN;	/* what a mail client saves a draft with */
		sent = true;
		if (mb_imap_append(imap, j->dest, j->raw, j->raw_len, flags, &ap, &err) == -1)
			goto fail;
		if (ap.uid != 0)
			snprintf(detail, sizeof(detail), "draft saved in '%s' as UID %u; nothing was "
			    "sent", j->dest, ap.uid);
		else
			snprintf(detail, sizeof(detail), "draft saved in '%s'; nothing was sent (the "
			    "server named no UID, so the next sync tick indexes it)", j->dest);
		child_send(fd, MB_CTL_OK, detail, flags, ap.uidvalidity, ap.uid, false);
		mb_imap_close(&imap);
		_exit(0);
	}
	if (mb_imap_select(imap, j->folder, &st, &err) == -1)
		goto fail;
	if (st.uidvalidity != j->uidvalidity) {
		snprintf(detail, sizeof(detail), "stale id: folder '%s' has UIDVALIDITY %u upstream, "
		    "the message was indexed under %u", j->folder, st.uidvalidity, j->uidvalidity);
		child_send(fd, MB_CTL_REFUSED, detail, 0, 0, 0, false);
		mb_imap_close(&imap);
		_exit(0);
	}
	if (mb_imap_fetch_flags(imap, j->uid, &flags, &found, &err) == -1)
		goto fail;
	if (!found) {
		snprintf(detail, sizeof(detail), "UID %u is no longer in '%s' (expunged or moved "
		    "elsewhere)", j->uid, j->folder);
		child_send(fd, MB_CTL_REFUSED, detail, 0, 0, 0, false);
		mb_imap_close(&imap);
		_exit(0);
	}
	sent = true;	/* from here a failure may come after the server acted */
	if (j->rq.op == MB_CTL_FLAG) {
		if (mb_imap_store_flags(imap, j->uid, j->rq.add, j->rq.remove, &err) == -1)
			goto fail;
		/* Verified by an independent fetch, not by STORE's echo. */
		if (mb_imap_fetch_flags(imap, j->uid, &flags, &found, &err) == -1)
			goto fail;
		if (!found || (flags & j->rq.add) != j->rq.add || (flags & j->rq.remove) != 0) {
			child_send(fd, MB_CTL_FAILED, "the server did not apply the flags (checked "
			    "with UID FETCH FLAGS)", flags, 0, 0, false);
			mb_imap_close(&imap);
			_exit(0);
		}
		child_send(fd, MB_CTL_OK, "flags set and verified", flags, 0, 0, false);
	} else {
		if (mb_imap_move(imap, j->uid, j->dest, true, &mv, &err) == -1) {
			if (err.code != MB_E_CONFIG)
				goto fail;
			child_send(fd, MB_CTL_REFUSED, err.msg, 0, 0, 0, false);	/* no write sent */
			mb_imap_close(&imap);
			_exit(0);
		}
		snprintf(detail, sizeof(detail), "%s to '%s' as UID %u", mv.used_move ?
		    "UID MOVE" : "UID COPY + UID STORE \\Deleted + UID EXPUNGE", j->dest,
		    mv.dest_uid);
		child_send(fd, MB_CTL_OK, detail, flags, mv.dest_uidvalidity, mv.dest_uid,
		    mv.used_move);
	}
	mb_imap_close(&imap);
	_exit(0);
fail:
	/* A session lost or cancelled (the watchdog) after the write command
	 * went out leaves its effect unknown: the user must not read "failed"
	 * as "nothing happened". */
	snprintf(detail, sizeof(detail), "%s%s", err.msg, sent ? "; the mailbox may or may not "
	    "have changed: check it" : "");
	child_send(fd, MB_CTL_FAILED, detail, 0, 0, 0, false);
	mb_imap_close(&imap);
	_exit(0);
}

/* ------------------------------------------------------------ the parent */

void
sd_write_release(struct sd_wjob *j)
{
	mb_ctl_request_release(&j->rq);
	free(j->folder);
	free(j->keywords);
	free(j->dest);
	free(j->raw);
	if (j->pid != 0) {
		close(j->conn.fd);
		mb_ipc_conn_release(&j->conn);
	}
	memset(j, 0, sizeof(*j));
}

static void
finish(struct sd *sd, struct sd_client *cl, uint32_t outcome, const char *detail,
    int64_t msg_id, unsigned flags, const char *folder)
{
	struct sd_wjob *j = &cl->job;
	struct mb_ctl_reply rp = { .outcome = outcome, .detail = (char *)detail,
	    .message_id = msg_id, .flags = flags, .folder = (char *)folder,
	    .log_id = j->log_id };

	if (outcome != MB_CTL_OK)
		mb_log_warnx("write %lld: %s of message %lld for %s (uid %ld): %s: %s",
		    (long long)j->log_id, mb_ctl_op_name(j->rq.op), (long long)j->rq.message_id,
		    j->rq.who, (long)j->peer_uid, mb_ctl_outcome_name(outcome), detail);
	else
		mb_log_info("write %lld: %s of message %lld for %s (uid %ld): %s",
		    (long long)j->log_id, mb_ctl_op_name(j->rq.op), (long long)j->rq.message_id,
		    j->rq.who, (long)j->peer_uid, detail);
	sd_control_reply(cl, j->req_id, &rp);
}

void
sd_write_start(struct sd *sd, struct sd_client *cl, uint32_t req_id, struct mb_ctl_request *rq)
{
	struct sd_wjob *j = &cl->job;
	char why[600];
	int sv[2];
	pid_t pid;

	memset(j, 0, sizeof(*j));
	j->rq = *rq;
	memset(rq, 0, sizeof(*rq));
	j->req_id = req_id;
	j->peer_uid = cl->uid;
	j->log_id = log_begin(sd, &j->rq, cl->uid);	/* before anything is tried */
	if (j->log_id == 0) {
		finish(sd, cl, MB_CTL_FAILED, "the audit log cannot be written; nothing was tried",
		    0, 0, NULL);
		sd_write_release(j);
		return;
	}
	if (j->rq.op == MB_CTL_FLAG && ((j->rq.add | j->rq.remove) & ~ALLOWED_FLAGS)) {
		snprintf(why, sizeof(why), "only \\Seen, \\Flagged and \\Answered may be changed "
		    "(\\Deleted and \\Draft are refused)");
		goto refuse;
	}
	if (j->rq.op != MB_CTL_DRAFT || j->rq.message_id != 0) {	/* a draft: the original */
		if (check_message(sd, j, why, sizeof(why)) == -1)
			goto refuse;
		if (j->rq.op != MB_CTL_DRAFT)
			log_update(sd, j, NULL, NULL);
	}
	if (j->rq.op != MB_CTL_FLAG && check_dest(sd, j, why, sizeof(why)) == -1)
		goto refuse;
	if (j->rq.op == MB_CTL_DRAFT && compose_draft(sd, j, why, sizeof(why)) == -1)
		goto refuse;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(why, sizeof(why), "socketpair: %s", strerror(errno));
		goto failed;
	}
	j->deadline_ms = mb_now_ms() + 1000LL * sd->conf->write_timeout;
	fflush(NULL);
	if ((pid = fork()) == -1) {
		snprintf(why, sizeof(why), "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		goto failed;
	}
	if (pid == 0) {
		close(sv[0]);
		sd_control_child_close(sd);
		if (sd->sigfd >= 0)
			close(sd->sigfd);
		if (sd->lock_fd >= 0)
			close(sd->lock_fd);
		for (unsigned i = 0; sd->workers && i < sd->conf->sync_workers; i++)
			if (sd->workers[i].pid != 0)
				close(sd->workers[i].conn.fd);
		child_main(sd, j, sv[1]);
	}
	close(sv[1]);
	j->pid = pid;
	mb_ipc_conn_init(&j->conn, sv[0], MB_IPC_BIT(MB_IPC_WRITE_RESULT));
	return;
refuse:
	log_update(sd, j, "refused", why);
	finish(sd, cl, MB_CTL_REFUSED, why, j->rq.message_id, 0, j->folder);
	sd_write_release(j);
	return;
failed:
	log_update(sd, j, "failed", why);
	finish(sd, cl, MB_CTL_FAILED, why, j->rq.message_id, 0, j->folder);
	sd_write_release(j);
}

/* Move the row with the message (COPYUID), in the writer's order.  *new_id_r: the row now. */
static int
apply_move(struct sd *sd, struct sd_wjob *j, uint32_t uidv, uint32_t uid, int64_t *new_id_r,
    struct mb_err *err)
{
	int64_t existing = 0;

	*new_id_r = 0;
	if (uid == 0 || uidv == 0 || uidv != j->dest_uidvalidity)
		/* No COPYUID, or a destination not indexed under that UIDVALIDITY:
		 * drop the row; the next tick indexes the message where it is now. */
		return mb_index_delete(sd->idx, j->folder_id, j->uidvalidity, j->uid, err);
	if (mb_index_message_find(sd->idx, j->dest_id, uidv, uid, &existing, err) == -1)
		return -1;
	if (existing != 0) {	/* a tick indexed it first: keep that row, drop the old */
		*new_id_r = existing;
		return mb_index_delete(sd->idx, j->folder_id, j->uidvalidity, j->uid, err);
	}
	if (mb_index_message_rekey(sd->idx, j->rq.message_id, j->dest_id, uidv, uid, err) == -1)
		return -1;
	*new_id_r = j->rq.message_id;
	return 0;
}

static void
job_done(struct sd *sd, struct sd_client *cl, uint32_t outcome, const char *detail,
    unsigned flags, uint32_t uidv, uint32_t uid)
{
	struct sd_wjob *j = &cl->job;
	struct mb_err err = { 0 };
	int64_t new_id = j->rq.message_id;
	const char *where = j->folder;
	char buf[800];

	if (sd_begin(sd, &err) == -1)
		goto index_fail;
	if (outcome == MB_CTL_OK && j->rq.op == MB_CTL_FLAG) {
		if (mb_index_update_flags(sd->idx, j->folder_id, j->uidvalidity, j->uid, flags,
		    j->keywords, j->modseq, &err) == -1 && err.code != MB_E_NOTFOUND)
			goto rollback;
	} else if (outcome == MB_CTL_OK && j->rq.op == MB_CTL_DRAFT) {
		if (index_draft(sd, j, flags, uidv, uid, &new_id, &err) == -1)
			goto rollback;
		where = j->dest;
	} else if (outcome == MB_CTL_OK) {
		if (apply_move(sd, j, uidv, uid, &new_id, &err) == -1)
			goto rollback;
		where = j->dest;
	}
	log_update(sd, j, mb_ctl_outcome_name(outcome), detail);
	if (sd_commit(sd, &err) == -1)
		goto index_fail;
	finish(sd, cl, outcome, detail, new_id, flags, where);
	return;
rollback:
	mb_index_rollback(sd->idx);
index_fail:
	snprintf(buf, sizeof(buf), "%.400s, but the index could not be updated (%s); the next "
	    "tick catches up", detail, err.msg);
	log_update(sd, j, mb_ctl_outcome_name(outcome), buf);
	finish(sd, cl, outcome, buf, new_id, flags, where);
}

void
sd_write_input(struct sd *sd, struct sd_client *cl)
{
	struct sd_wjob *j = &cl->job;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	ssize_t n;
	int r;

	n = mb_ipc_read(&j->conn, &err);
	if (n == -1 && errno == EAGAIN && err.code == 0)
		return;
	r = n == -1 ? -1 : mb_ipc_next(&j->conn, &f, &err);
	if (r == 1) {
		struct mb_ctl_result res;

		if (mb_ctl_get_result(&f.cur, &res, &err) == 0)
			job_done(sd, cl, res.outcome, res.detail, res.flags, res.uidvalidity,
			    res.uid);
		else {
			log_update(sd, j, "failed", "the write process sent a malformed answer");
			finish(sd, cl, MB_CTL_FAILED, "internal error", j->rq.message_id, 0, NULL);
		}
	} else if (r == 0 && n != 0)
		return;	/* more to come */
	else {
		log_update(sd, j, "failed", "the write process ended without an answer; the "
		    "mailbox may or may not have changed: check it");
		finish(sd, cl, MB_CTL_FAILED, "the write process ended without an answer",
		    j->rq.message_id, 0, NULL);
	}
	kill(j->pid, SIGKILL);	/* it has said all it will; reaped by the SIGCHLD path */
	sd_write_release(j);
}

void
sd_write_expire(struct sd *sd, struct sd_client *cl)
{
	struct sd_wjob *j = &cl->job;

	kill(j->pid, SIGKILL);
	log_update(sd, j, "failed", sd->quit ? "syncd stopped before the write answered; the "
	    "mailbox may or may not have changed" : "deadline passed (SYNC_WRITE_TIMEOUT); the "
	    "mailbox may or may not have changed");
	finish(sd, cl, MB_CTL_FAILED, "the write did not finish in time; it may or may not have "
	    "happened: check the message", j->rq.message_id, 0, NULL);
	sd_write_release(j);
}
