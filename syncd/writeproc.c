/*
 * The write process (docs/writes.md, "One write"): forked by writes.c
 * through proc.c, so it holds nothing but its socket to the scheduler.  It
 * logs in on its own IMAP connection, SELECTs the folder (never EXAMINE),
 * checks the UIDVALIDITY again upstream and that the UID still exists,
 * does the one write, and sends one answer frame (MB_IPC_CTL_REPLY:
 * outcome, detail, flags, COPYUID/APPENDUID uidvalidity and uid, whether
 * UID MOVE was used).  The index is the scheduler's: the answer is applied
 * there (writes.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "mailbox/ctl.h"
#include "mailbox/labels.h"
#include "mailbox/log.h"
#include "mailbox/utf8.h"
#include "syncd.h"
#include "writes.h"

/*
 * A result frame from the write process: outcome, detail, flags, COPYUID,
 * and (label_message; NULL otherwise or when too long for the frame) the
 * keywords the verifying fetch saw.
 */
static void
child_send_kw(int fd, uint32_t outcome, const char *detail, unsigned flags, uint32_t uidv,
    uint32_t uid, bool used_move, const char *keywords)
{
	struct mb_ipc_conn c;
	struct mb_ipc_out o;
	struct mb_err err = { 0 };
	static struct mb_ctl_result r;	/* 5 KiB: off the stack */

	r = (struct mb_ctl_result){ .outcome = outcome, .flags = flags, .uidvalidity = uidv,
	    .uid = uid, .used_move = used_move };
	snprintf(r.detail, sizeof(r.detail), "%.*s", (int)mb_utf8_boundary(detail,
	    strlen(detail), MB_CTL_DETAIL_MAX), detail);
	if (keywords != NULL && strlen(keywords) <= MB_CTL_KEYWORDS_MAX) {
		r.keywords_known = true;
		memcpy(r.keywords, keywords, strlen(keywords) + 1);
	}
	mb_ipc_conn_init(&c, fd, 0);
	if (mb_ctl_put_result(&o, &r, &err) == 0)
		mb_ipc_send(&c, &o, &err);
	else
		mb_ipc_out_release(&o);
	mb_ipc_conn_release(&c);
}

static void
child_send(int fd, uint32_t outcome, const char *detail, unsigned flags, uint32_t uidv,
    uint32_t uid, bool used_move)
{
	child_send_kw(fd, outcome, detail, flags, uidv, uid, used_move, NULL);
}

/*
 * label_message in the SELECTed folder: every keyword to add must be one
 * its PERMANENTFLAGS allows (else refused, nothing sent), then UID STORE
 * and a verifying UID FETCH FLAGS.  Ends the process.
 */
static _Noreturn void
label_write(struct mb_imap **imapp, const struct sd_write_order *j, int fd)
{
	struct mb_err err = { 0 };
	char detail[512], *kw = NULL;
	unsigned flags = 0;
	bool found = false;

	for (uint32_t i = 0; i < j->n_labels_add; i++)
		if (!mb_imap_keyword_permanent(*imapp, j->labels_add[i])) {
			snprintf(detail, sizeof(detail), "the server does not keep the label '%s' "
			    "in '%s' (its PERMANENTFLAGS has neither that keyword nor \\*, so it "
			    "takes no custom labels there); nothing was changed",
			    j->labels_add[i], j->folder);
			child_send(fd, MB_CTL_REFUSED, detail, 0, 0, 0, false);
			goto out;
		}
	if (mb_imap_store_keywords(*imapp, j->uid, j->labels_add, j->n_labels_add,
	    j->labels_remove, j->n_labels_remove, &err) == -1 ||
	    mb_imap_fetch_keywords(*imapp, j->uid, &flags, &kw, &found, &err) == -1) {
		snprintf(detail, sizeof(detail), "%s; the labels may or may not have changed: "
		    "check them", err.msg);
		child_send(fd, MB_CTL_FAILED, detail, 0, 0, 0, false);
		goto out;
	}
	for (uint32_t i = 0; found && i < j->n_labels_add; i++)
		if (!mb_labels_has(kw, j->labels_add[i]))
			found = false;
	for (uint32_t i = 0; found && i < j->n_labels_remove; i++)
		if (mb_labels_has(kw, j->labels_remove[i]))
			found = false;
	if (!found)
		child_send_kw(fd, MB_CTL_FAILED, "the server did not apply the labels (checked "
		    "with UID FETCH FLAGS)", flags, 0, 0, false, kw);
	else
		child_send_kw(fd, MB_CTL_OK, "labels set and verified", flags, 0, 0, false, kw);
out:
	free(kw);
	mb_imap_close(imapp);
	_exit(0);
}

void
sd_write_process(const struct sd_conf *conf, const char *password,
    const struct sd_write_order *j, int fd)
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
	sd_imap_conf(conf, password, &ic);
	if (mb_imap_connect(&ic, &imap, &err) == -1)
		goto fail;
	mb_imap_set_deadline(imap, j->deadline_ms - 500);
	if (j->op == MB_CTL_DRAFT) {
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
	if (mb_imap_select(imap, j->folder, &st, &err) == -1) {
		if (err.code != MB_E_NOTFOUND)
			goto fail;
		/* The server's text names the folder in its own encoding (often
		 * as question marks); the index has its decoded name. */
		snprintf(detail, sizeof(detail), "folder '%s' no longer exists on the server "
		    "(deleted or renamed); nothing was changed; search again", j->folder);
		child_send(fd, MB_CTL_REFUSED, detail, 0, 0, 0, false);
		mb_imap_close(&imap);
		_exit(0);
	}
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
	if (j->op == MB_CTL_LABEL)
		label_write(&imap, j, fd);
	sent = true;	/* from here a failure may come after the server acted */
	if (j->op == MB_CTL_FLAG) {
		if (mb_imap_store_flags(imap, j->uid, j->add, j->remove, &err) == -1)
			goto fail;
		/* Verified by an independent fetch, not by STORE's echo. */
		if (mb_imap_fetch_flags(imap, j->uid, &flags, &found, &err) == -1)
			goto fail;
		if (!found || (flags & j->add) != j->add || (flags & j->remove) != 0) {
			child_send(fd, MB_CTL_FAILED, "the server did not apply the flags (checked "
			    "with UID FETCH FLAGS)", flags, 0, 0, false);
			mb_imap_close(&imap);
			_exit(0);
		}
		child_send(fd, MB_CTL_OK, "flags set and verified", flags, 0, 0, false);
	} else {
		if (mb_imap_move(imap, j->uid, j->dest, true, &mv, &err) == -1) {
			if (mv.copied) {
				char uid[32] = "";

				/* Say exactly where the message is now. */
				if (mv.dest_uid != 0)
					snprintf(uid, sizeof(uid), " as UID %u", mv.dest_uid);
				snprintf(detail, sizeof(detail), "copied to '%s'%s, but %s; the message "
				    "is now in both folders (in '%s' %s): check it", j->dest, uid,
				    err.msg, j->folder, mv.marked_deleted ?
				    "marked \\Deleted, not expunged" : "unchanged");
				child_send(fd, MB_CTL_FAILED, detail, 0, 0, 0, false);
				mb_imap_close(&imap);
				_exit(0);
			}
			if (err.code != MB_E_CONFIG)
				goto fail;
			child_send(fd, MB_CTL_REFUSED, err.msg, 0, 0, 0, false);	/* no write sent */
			mb_imap_close(&imap);
			_exit(0);
		}
		/* COPY + STORE + UID EXPUNGE all said OK: check that the source
		 * copy is really gone before saying "ok" (a server may keep it). */
		if (!mv.used_move) {
			unsigned left = 0;

			if (mb_imap_fetch_flags(imap, j->uid, &left, &found, &err) == -1)
				goto fail;
			if (found) {
				snprintf(detail, sizeof(detail), "copied to '%s' as UID %u, but UID %u "
				    "is still in '%s' after UID EXPUNGE (flags: %s): the message is "
				    "now in both folders: check it", j->dest, mv.dest_uid, j->uid,
				    j->folder, (left & MB_FLAG_DELETED) ? "\\Deleted" :
				    "not \\Deleted");
				child_send(fd, MB_CTL_FAILED, detail, 0, 0, 0, false);
				mb_imap_close(&imap);
				_exit(0);
			}
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
