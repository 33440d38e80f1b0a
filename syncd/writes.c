/*
 * The writes (docs/writes.md).  A request from the control socket gets a
 * write_log row ('pending') before anything is tried; the checks (message
 * indexed, its folder's UIDVALIDITY unchanged, the flags allowed, a
 * destination known) run against the index; then a forked write process
 * (writeproc.c) with its own IMAP connection SELECTs the folder and does
 * the one write, under a deadline, while the main loop keeps serving.  Its
 * answer is applied to the index here, in the main loop, so it lands in the
 * single writer's transaction order; the write_log row is completed in the
 * same transaction.  The reply goes back to control.c as a value
 * (writes.h): the client is control.c's, the job is this file's.
 *
 * Over 600 lines on purpose: the checks, the job's lifetime and the
 * applying of the answer all work on struct sd_wjob, which stays private
 * to this file so no other module can touch a write in flight.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "mailbox/buf.h"
#include "mailbox/compose.h"
#include "mailbox/index_audit.h"
#include "mailbox/index_writes.h"
#include "mailbox/json.h"
#include "mailbox/labels.h"
#include "mailbox/log.h"
#include "mailbox/mime.h"
#include "mailbox/msg.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "syncd.h"
#include "writes.h"

#define ALLOWED_FLAGS	(MB_FLAG_SEEN | MB_FLAG_FLAGGED | MB_FLAG_ANSWERED)

/* One write in flight: a forked process with its own IMAP connection. */
struct sd_wjob {
	unsigned		 token;		/* the client's, from control.c */
	pid_t			 pid;		/* 0: none */
	struct mb_ipc_conn	 conn;		/* to the write process */
	long long		 deadline_ms;
	uint32_t		 req_id;
	struct mb_ctl_request	 rq;
	uid_t			 peer_uid;
	int64_t			 log_id;
	/* the message as indexed when the write was accepted */
	int64_t			 folder_id;
	char			*folder;	/* owned */
	uint32_t		 uidvalidity, uid;
	char			*keywords;	/* owned; may be NULL */
	uint64_t		 modseq;
	int64_t			 dest_id;	/* move, draft: the destination folder's row */
	char			*dest;		/* owned; move, draft: its name */
	uint32_t		 dest_uidvalidity;
	char			*raw;		/* owned; draft: the message appended */
	size_t			 raw_len;
	int64_t			 draft_id;	/* draft: its row once indexed; 0 before */
};

/* writes.c's state: the jobs in flight, by token. */
struct sd_writes {
	struct sd_wjob		*jobs[SD_WRITES_MAX];	/* owned; NULL: none */
};

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
	else if (rq->op == MB_CTL_LABEL) {
		mb_buf_adds(&b, "\"add\":");
		json_strs(&b, rq->labels_add, rq->n_labels_add);
		mb_buf_adds(&b, ",\"remove\":");
		json_strs(&b, rq->labels_remove, rq->n_labels_remove);
	}
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
	(void)sd_writer_flush(sd, false, &ferr);
	if (mb_index_audit_begin(sd->idx, &ar, &id, &err) == -1) {
		mb_log_error("write_log: %s", err.msg);
		id = 0;
	}
	free(args);
	return id;
}

/*
 * detail (may be NULL) with the IMAP password hidden in every wire form
 * (mb_log_scrub), in buf: server text reaches write_log and the client's
 * answer, and a server may echo the LOGIN line.  Returns buf, or NULL.
 */
static const char *
scrubbed(const char *detail, char *buf, size_t len)
{
	if (detail == NULL)
		return NULL;
	snprintf(buf, len, "%s", detail);
	mb_log_scrub(buf, len);
	return buf;
}

/* Fill in the message's place (once known) and, when outcome is set, finish the row. */
static void
log_update(struct sd *sd, const struct sd_wjob *j, const char *outcome, const char *detail)
{
	/* A draft without APPENDUID has no UID; a draft's row names the
	 * draft, once it is indexed. */
	bool placed = j->folder != NULL && j->uid != 0;
	char clean[MB_CTL_DETAIL_MAX + 1];
	struct mb_audit_update u = { .folder = j->folder,
	    .uidvalidity = placed ? j->uidvalidity : 0, .uid = placed ? j->uid : 0,
	    .outcome = outcome, .detail = scrubbed(detail, clean, sizeof(clean)),
	    .message_id = j->draft_id };
	struct mb_err ferr = { 0 }, err = { 0 };

	if (j->log_id == 0)
		return;
	(void)sd_writer_flush(sd, false, &ferr);	/* as in log_begin: not inside the writer's group */
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
		/*
		 * No number in the words: this id is the index's own, which a
		 * client of an mcpd serving several accounts never sees (its
		 * ids carry the account); the reply's id field says which.
		 */
		if (err.code == MB_E_NOTFOUND)
			snprintf(buf, len, "no such message in the index (it may have been "
			    "deleted or moved since it was read)");
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
	if (t.folder_absent) {
		snprintf(buf, len, "stale id: folder '%s' is %s; nothing was changed; search again",
		    j->folder, t.folder_left_out ? "no longer synced (left out of SYNC_FOLDERS)" :
		    "no longer on the server (deleted or renamed)");
		return -1;
	}
	if (j->uidvalidity != folder_uidv) {
		snprintf(buf, len, "stale id: folder '%s' has UIDVALIDITY %u now, the message was "
		    "indexed under %u; search again", j->folder, folder_uidv, j->uidvalidity);
		return -1;
	}
	return 0;
}

/*
 * Whether move_message must not go to folder name: one whose role is \Junk
 * or \Trash, or whose last name part is a Junk, Spam or Trash name.
 * Servers purge those on their own schedule, and the way to the bin is
 * trash_message.  The refusal is in buf.
 */
static bool
purging_folder(struct sd *sd, const char *name, char *buf, size_t len)
{
	static const char *const names[] = { "Junk", "Spam", "Junk E-mail", "Junk Email",
	    "Bulk Mail", "Trash", "Bin", "Deleted Items", "Deleted Messages" };
	struct mb_folder_state st;
	struct mb_err err = { 0 };
	const char *leaf = name, *p;
	bool junk = false, trash = false;

	for (p = name; *p != '\0'; p++)
		if (*p == '/' || *p == '.')
			leaf = p + 1;
	if (mb_index_folder_get(sd->idx, name, &st, &err) == 0) {
		junk = st.role != NULL && strcasecmp(st.role, "\\Junk") == 0;
		trash = st.role != NULL && strcasecmp(st.role, "\\Trash") == 0;
		mb_folder_state_release(&st);
	}
	for (size_t i = 0; i < MB_ARRAY_LEN(names) && !junk && !trash; i++)
		if (strcasecmp(leaf, names[i]) == 0) {
			junk = i < 5;
			trash = i >= 5;
		}
	if (junk)
		snprintf(buf, len, "'%s' is a junk folder (servers purge it and filters learn "
		    "from what lands there); move_message does not move mail there", name);
	else if (trash)
		snprintf(buf, len, "'%s' is the trash; use trash_message to move a message "
		    "there", name);
	return junk || trash;
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
	if (j->rq.op == MB_CTL_MOVE && purging_folder(sd, j->dest, buf, len))
		return -1;
	return 0;
}

/*
 * label_message's labels: each an IMAP atom without a backslash (a system
 * flag is flag_message's), none both added and removed.  Checked here, not
 * in the decoder, so the refusal is logged like every other.
 */
static int
check_labels(const struct mb_ctl_request *rq, char *buf, size_t len)
{
	for (uint32_t k = 0; k < 2; k++) {
		char **v = k == 0 ? rq->labels_add : rq->labels_remove;
		uint32_t n = k == 0 ? rq->n_labels_add : rq->n_labels_remove;

		for (uint32_t i = 0; i < n; i++)
			if (!mb_label_valid(v[i], MB_CTL_LABEL_MAX)) {
				snprintf(buf, len, "'%.*s' cannot be a label: a label is 1 to %d "
				    "printable ASCII characters without spaces or any of "
				    "( ) { %% * \" \\ ] (system flags such as \\Seen are "
				    "flag_message's)", (int)mb_utf8_boundary(v[i], strlen(v[i]),
				    200), v[i], MB_CTL_LABEL_MAX);
				return -1;
			}
	}
	for (uint32_t i = 0; i < rq->n_labels_add; i++)
		for (uint32_t k = 0; k < rq->n_labels_remove; k++)
			if (strcasecmp(rq->labels_add[i], rq->labels_remove[k]) == 0) {
				snprintf(buf, len, "'%s' is both added and removed", rq->labels_add[i]);
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

/* ------------------------------------------------------------ the parent */

/* Free j; a write process still running is left to proc.c's reaping. */
static void
job_free(struct sd_wjob *j)
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
	free(j);
}

/* j is over: out of the table, freed. */
static void
job_end(struct sd *sd, struct sd_wjob *j)
{
	if (sd->writes != NULL && j->token < SD_WRITES_MAX && sd->writes->jobs[j->token] == j)
		sd->writes->jobs[j->token] = NULL;
	job_free(j);
}

void
sd_write_reply_release(struct sd_write_reply *r)
{
	mb_ctl_reply_release(&r->rp);
}

/* Log the write's outcome and make its reply (*out, for control.c to send). */
static void
finish(struct sd_wjob *j, uint32_t outcome, const char *detail, int64_t msg_id,
    unsigned flags, const char *folder, struct sd_write_reply *out)
{
	char clean[MB_CTL_DETAIL_MAX + 1];

	detail = scrubbed(detail, clean, sizeof(clean));
	*out = (struct sd_write_reply){ .token = j->token, .req_id = j->req_id,
	    .rp = { .outcome = outcome, .detail = mb_xstrdup(detail), .message_id = msg_id,
	    .flags = flags, .folder = folder ? mb_xstrdup(folder) : NULL, .log_id = j->log_id } };

	if (outcome != MB_CTL_OK)
		mb_log_warnx("write %lld: %s of message %lld for %s (uid %ld): %s: %s",
		    (long long)j->log_id, mb_ctl_op_name(j->rq.op), (long long)j->rq.message_id,
		    j->rq.who, (long)j->peer_uid, mb_ctl_outcome_name(outcome), detail);
	else
		mb_log_info("write %lld: %s of message %lld for %s (uid %ld): %s",
		    (long long)j->log_id, mb_ctl_op_name(j->rq.op), (long long)j->rq.message_id,
		    j->rq.who, (long)j->peer_uid, detail);
}

int
sd_write_start(struct sd *sd, unsigned token, uid_t peer, uint32_t req_id,
    struct mb_ctl_request *rq, struct sd_write_reply *now)
{
	struct sd_wjob *j = mb_xcalloc(1, sizeof(*j));
	struct mb_err err = { 0 };
	char why[600];
	const char *cred;
	pid_t pid;
	int fd;

	j->token = token;
	j->rq = *rq;
	memset(rq, 0, sizeof(*rq));
	j->req_id = req_id;
	j->peer_uid = peer;
	j->log_id = log_begin(sd, &j->rq, peer);	/* before anything is tried */
	if (j->log_id == 0) {
		finish(j, MB_CTL_FAILED, "the audit log cannot be written; nothing was tried", 0, 0,
		    NULL, now);
		job_free(j);
		return 0;
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
	if (j->rq.op == MB_CTL_LABEL && check_labels(&j->rq, why, sizeof(why)) == -1)
		goto refuse;
	if (j->rq.op != MB_CTL_FLAG && j->rq.op != MB_CTL_LABEL &&
	    check_dest(sd, j, why, sizeof(why)) == -1)
		goto refuse;
	if (j->rq.op == MB_CTL_DRAFT && compose_draft(sd, j, why, sizeof(why)) == -1)
		goto refuse;
	j->deadline_ms = mb_now_ms() + 1000LL * sd->conf->write_timeout;
	if ((cred = sd_credential(sd, &err)) == NULL) {
		snprintf(why, sizeof(why), "%s", err.msg);
		goto failed;
	}
	/* The child holds nothing but its socket (proc.c); it is reaped there. */
	if ((pid = sd_proc_fork(&sd->proc, "write process", NULL, NULL, &fd, &err)) == -1) {
		snprintf(why, sizeof(why), "%s", err.msg);
		goto failed;
	}
	if (pid == 0) {
		struct sd_write_order o = { .op = j->rq.op, .add = j->rq.add,
		    .remove = j->rq.remove, .folder = j->folder, .uidvalidity = j->uidvalidity,
		    .uid = j->uid, .dest = j->dest, .raw = j->raw, .raw_len = j->raw_len,
		    .deadline_ms = j->deadline_ms,
		    .labels_add = (const char *const *)j->rq.labels_add,
		    .n_labels_add = j->rq.n_labels_add,
		    .labels_remove = (const char *const *)j->rq.labels_remove,
		    .n_labels_remove = j->rq.n_labels_remove };

		sd_write_process(sd->conf, cred, &o, fd);
	}
	j->pid = pid;
	mb_ipc_conn_init(&j->conn, fd, MB_IPC_BIT(MB_IPC_WRITE_RESULT));
	if (sd->writes == NULL)
		sd->writes = mb_xcalloc(1, sizeof(*sd->writes));
	sd->writes->jobs[token] = j;
	return 1;
refuse:
	log_update(sd, j, "refused", why);
	finish(j, MB_CTL_REFUSED, why, j->rq.message_id, 0, j->folder, now);
	job_free(j);
	return 0;
failed:
	log_update(sd, j, "failed", why);
	finish(j, MB_CTL_FAILED, why, j->rq.message_id, 0, j->folder, now);
	job_free(j);
	return 0;
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
job_done(struct sd *sd, struct sd_wjob *j, const struct mb_ctl_result *res,
    struct sd_write_reply *out)
{
	uint32_t outcome = res->outcome, uidv = res->uidvalidity, uid = res->uid;
	unsigned flags = res->flags;
	const char *detail = res->detail;
	/* label_message: the keywords the verifying fetch saw replace the index's */
	const char *kw = j->rq.op == MB_CTL_LABEL && res->keywords_known ? res->keywords : NULL;
	struct mb_err err = { 0 };
	int64_t new_id = j->rq.message_id;
	const char *where = j->folder;
	char buf[800];

	if (sd_begin(sd, &err) == -1)
		goto index_fail;
	if (outcome == MB_CTL_OK && (j->rq.op == MB_CTL_FLAG || kw != NULL)) {
		if (mb_index_update_flags(sd->idx, j->folder_id, j->uidvalidity, j->uid, flags,
		    kw != NULL ? kw : j->keywords, j->modseq, &err) == -1 &&
		    err.code != MB_E_NOTFOUND)
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
	finish(j, outcome, detail, new_id, flags, where, out);
	out->rp.keywords = kw != NULL ? mb_xstrdup(kw) : NULL;
	return;
rollback:
	mb_index_rollback(sd->idx);
index_fail:
	snprintf(buf, sizeof(buf), "%.400s, but the index could not be updated (%s); the next "
	    "tick catches up", detail, err.msg);
	log_update(sd, j, mb_ctl_outcome_name(outcome), buf);
	finish(j, outcome, buf, new_id, flags, where, out);
	out->rp.keywords = kw != NULL ? mb_xstrdup(kw) : NULL;
}

/* The write process's answer, or its end: 1 and *out when j is over (freed), 0: more to come. */
static int
job_input(struct sd *sd, struct sd_wjob *j, struct sd_write_reply *out)
{
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	ssize_t n;
	int r;

	n = mb_ipc_read(&j->conn, &err);
	if (n == -1 && errno == EAGAIN && err.code == 0)
		return 0;
	r = n == -1 ? -1 : mb_ipc_next(&j->conn, &f, &err);
	if (r == 1) {
		static struct mb_ctl_result res;	/* 5 KiB: off the stack */

		if (mb_ctl_get_result(&f.cur, &res, &err) == 0)
			job_done(sd, j, &res, out);
		else {
			log_update(sd, j, "failed", "the write process sent a malformed answer");
			finish(j, MB_CTL_FAILED, "internal error", j->rq.message_id, 0, NULL, out);
		}
	} else if (r == 0 && n != 0)
		return 0;	/* more to come */
	else {
		log_update(sd, j, "failed", "the write process ended without an answer; the "
		    "mailbox may or may not have changed: check it");
		finish(j, MB_CTL_FAILED, "the write process ended without an answer",
		    j->rq.message_id, 0, NULL, out);
	}
	kill(j->pid, SIGKILL);	/* it has said all it will; proc.c reaps it */
	job_end(sd, j);
	return 1;
}

/* Past its deadline, or syncd is stopping: kill it; j is freed, *out its reply. */
static void
job_expire(struct sd *sd, struct sd_wjob *j, struct sd_write_reply *out)
{
	kill(j->pid, SIGKILL);
	log_update(sd, j, "failed", sd->tick.quit ? "syncd stopped before the write answered; "
	    "the mailbox may or may not have changed" : "deadline passed (SYNC_WRITE_TIMEOUT); the "
	    "mailbox may or may not have changed");
	finish(j, MB_CTL_FAILED, "the write did not finish in time; it may or may not have "
	    "happened: check the message", j->rq.message_id, 0, NULL, out);
	job_end(sd, j);
}

bool
sd_write_busy(const struct sd *sd, unsigned token)
{
	return sd->writes != NULL && token < SD_WRITES_MAX && sd->writes->jobs[token] != NULL;
}

bool
sd_writes_in_flight(const struct sd *sd)
{
	for (size_t i = 0; sd->writes != NULL && i < SD_WRITES_MAX; i++)
		if (sd->writes->jobs[i] != NULL)
			return true;
	return false;
}

nfds_t
sd_writes_pollfds(const struct sd *sd, struct pollfd *pfd)
{
	nfds_t n = 0;

	for (size_t i = 0; sd->writes != NULL && i < SD_WRITES_MAX; i++)
		if (sd->writes->jobs[i] != NULL)
			pfd[n++] = (struct pollfd){ .fd = sd->writes->jobs[i]->conn.fd,
			    .events = POLLIN };
	return n;
}

size_t
sd_writes_dispatch(struct sd *sd, const struct pollfd *pfd, nfds_t n,
    struct sd_write_reply *out)
{
	size_t n_out = 0;

	if (sd->writes == NULL)
		return 0;
	for (nfds_t k = 0; k < n; k++) {
		if (pfd[k].revents == 0)
			continue;
		for (size_t i = 0; i < SD_WRITES_MAX; i++) {
			struct sd_wjob *j = sd->writes->jobs[i];

			if (j == NULL || j->conn.fd != pfd[k].fd)
				continue;
			n_out += (size_t)job_input(sd, j, &out[n_out]);
			break;
		}
	}
	for (size_t i = 0; i < SD_WRITES_MAX; i++) {
		struct sd_wjob *j = sd->writes->jobs[i];

		if (j != NULL && mb_now_ms() >= j->deadline_ms)
			job_expire(sd, j, &out[n_out++]);
	}
	return n_out;
}

int
sd_writes_timeout(const struct sd *sd)
{
	long long best = -1, now = mb_now_ms();

	for (size_t i = 0; sd->writes != NULL && i < SD_WRITES_MAX; i++) {
		const struct sd_wjob *j = sd->writes->jobs[i];
		long long left;

		if (j == NULL)
			continue;
		left = j->deadline_ms > now ? j->deadline_ms - now : 0;
		if (best < 0 || left < best)
			best = left;
	}
	return best < 0 ? -1 : (int)(best > 60000 ? 60000 : best);
}

size_t
sd_writes_stop(struct sd *sd, struct sd_write_reply *out)
{
	size_t n_out = 0;

	if (sd->writes == NULL)
		return 0;
	for (size_t i = 0; i < SD_WRITES_MAX; i++)
		if (sd->writes->jobs[i] != NULL)
			job_expire(sd, sd->writes->jobs[i], &out[n_out++]);	/* logged as failed */
	free(sd->writes);
	sd->writes = NULL;
	return n_out;
}
