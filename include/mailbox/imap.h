/*
 * The internal Mailbox interface: everything in imap-mcp that talks to an
 * IMAP server goes through this header.  One source file implements it
 * (libmailbox/sync/imap_etpan.c, the only file that includes libetpan), so
 * swapping the IMAP client is a change to that file, not a refactor.
 *
 * The read path cannot change the mailbox: folders are opened with EXAMINE
 * and every fetch PEEKs; there is no call that fetches without PEEK.
 */
#ifndef MAILBOX_IMAP_H
#define MAILBOX_IMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_imap;

enum mb_imap_tls {
	MB_IMAP_TLS_IMPLICIT,	/* TLS from the first byte (993) */
	MB_IMAP_TLS_STARTTLS,	/* plaintext greeting, STARTTLS required before LOGIN */
	MB_IMAP_TLS_NONE,	/* plaintext: refused unless host is loopback */
};

enum mb_imap_auth {
	MB_IMAP_AUTH_PASSWORD,	/* LOGIN */
	MB_IMAP_AUTH_OAUTH2,	/* AUTHENTICATE OAUTHBEARER, else XOAUTH2 (SASL-IR) */
};

struct mb_imap_conf {
	const char		*host;		/* borrowed */
	unsigned		 port;
	enum mb_imap_tls	 tls;
	const char		*user;		/* borrowed */
	enum mb_imap_auth	 auth;
	const char		*password;	/* borrowed; the password, or with
						 * MB_IMAP_AUTH_OAUTH2 the access token;
						 * only the login path reads it */
	const char		*ca_file;	/* borrowed; extra trusted CAs (PEM); may be NULL */
	unsigned		 timeout_s;	/* connect and per-read inactivity timeout */
	bool			 qresync;	/* also ENABLE QRESYNC where offered (the
						 * scheduler: VANISHED); then the server
						 * reports expunges as VANISHED, not EXPUNGE */
};

/*
 * Connect, verify the certificate chain and host name (before any credential
 * is sent), log in, re-read capabilities, and ENABLE CONDSTORE where offered
 * (CONDSTORE QRESYNC when conf->qresync and the server has both).
 * Errors: MB_E_AUTH for a refused login (do not retry before the next tick),
 * MB_E_CONFIG for a refused setting (plaintext to a remote host), MB_E_PROTO
 * for a TLS verification failure or protocol error, MB_E_TEMP for network
 * failures.  On success *imap_r is the caller's (mb_imap_close).
 */
int	mb_imap_connect(const struct mb_imap_conf *conf, struct mb_imap **imap_r,
	    struct mb_err *err);
void	mb_imap_close(struct mb_imap **imapp);	/* NULL-safe; LOGOUT when healthy */

/* True when the server advertises the capability (case-insensitive). */
bool	mb_imap_has_capability(struct mb_imap *imap, const char *name);
/* True when the server confirmed ENABLE QRESYNC on this session. */
bool	mb_imap_qresync(struct mb_imap *imap);

struct mb_imap_folder {
	char	*name;		/* owned; UTF-8, decoded from modified UTF-7 */
	char	*role;		/* owned; RFC 6154 role ("\\Trash", "\\Sent"...) or NULL */
	bool	 role_by_name;	/* role found by mb_imap_roles_by_name, not SPECIAL-USE */
	bool	 selectable;	/* false for \Noselect / \NonExistent */
};
/* LIST "" "*" with special-use roles.  *folders_r is the caller's. */
int	mb_imap_list(struct mb_imap *imap, struct mb_imap_folder **folders_r, size_t *n_r,
	    struct mb_err *err);
void	mb_imap_folders_free(struct mb_imap_folder **foldersp, size_t n);

/*
 * The first personal namespace (RFC 2342 NAMESPACE): *prefix_r its prefix,
 * UTF-8 ("INBOX." on Courier, "" on most others), *delim_r its hierarchy
 * separator (0 when the server gave none).  A server without NAMESPACE, or
 * that answers NO, or lists no personal namespace, gives "" and 0: the
 * folders sit at the top.  *prefix_r is the caller's (free).
 */
int	mb_imap_namespace(struct mb_imap *imap, char **prefix_r, char *delim_r,
	    struct mb_err *err);

/*
 * Give roles by name to the folders of a server without SPECIAL-USE (or
 * with some roles missing): a selectable folder directly inside the
 * personal namespace (its name is prefix followed by one of the common
 * names, case-insensitive) gets that name's role when no folder has the
 * role yet.  The names, in order of preference: \Drafts: Drafts;
 * \Trash: Trash, Deleted Items, Deleted Messages; \Sent: Sent, Sent Items,
 * Sent Messages; \Junk: Junk, Spam; \Archive: Archive.  A role from
 * SPECIAL-USE always wins, a folder keeps the role it has, and each role
 * goes to one folder.  Those given a role here have role_by_name set.
 */
void	mb_imap_roles_by_name(struct mb_imap_folder *folders, size_t n, const char *prefix);

struct mb_imap_status {
	uint32_t	uidvalidity;
	uint32_t	uidnext;	/* from the EXAMINE reply, else asked with STATUS */
	uint32_t	exists;
	uint64_t	highestmodseq;	/* 0: the server sent none (no CONDSTORE) */
};
/* EXAMINE (read-only) the folder; MB_E_NOTFOUND when the server says NO. */
int	mb_imap_examine(struct mb_imap *imap, const char *folder, struct mb_imap_status *st_r,
	    struct mb_err *err);
/*
 * NOOP on the examined folder: a sync point, where the server reports what
 * changed since the last command (EXISTS for new mail, EXPUNGE), so a UID
 * FETCH that follows sees mail that arrived after the EXAMINE.  st_r gets
 * the folder as the session now knows it: uidvalidity and exists are
 * current; uidnext is the last one the server sent (servers seldom resend
 * it, so it may be stale); highestmodseq is 0.  MB_E_INVALID without an
 * examined folder; a BYE (e.g. the folder was deleted) or a lost connection
 * leaves the session unusable, as any other call.
 */
int	mb_imap_noop(struct mb_imap *imap, struct mb_imap_status *st_r, struct mb_err *err);

/*
 * UIDs of the examined folder that are > above, ascending (UID SEARCH UID
 * above+1:*, identifiers only).  *uids_r is the caller's (free).
 */
int	mb_imap_uids_above(struct mb_imap *imap, uint32_t above, uint32_t **uids_r, size_t *n_r,
	    struct mb_err *err);
/*
 * As mb_imap_uids_above, only messages whose INTERNALDATE is on or after the
 * day since (RFC 3501 SEARCH SINCE: the server's date, exact on every server
 * tried); since NULL is no date limit.
 */
struct mb_imap_day {
	int	year, month, day;	/* e.g. 2024, 1..12, 1..31 */
};
int	mb_imap_uids_since(struct mb_imap *imap, uint32_t above, const struct mb_imap_day *since,
	    uint32_t **uids_r, size_t *n_r, struct mb_err *err);

/* One fetched message, handed to the callback; everything is borrowed. */
struct mb_imap_message {
	uint32_t	 uid;
	unsigned	 flags;		/* enum mb_flag bits */
	const char	*keywords;	/* other flags, space-separated; "" when none */
	int64_t		 internaldate;	/* unix seconds */
	uint64_t	 size;		/* RFC822.SIZE */
	uint64_t	 modseq;	/* 0 without CONDSTORE */
	bool		 headers_only;	/* size > the cap: raw holds the header only */
	const char	*raw;		/* the message (or header) bytes, raw_len of them */
	size_t		 raw_len;
};
typedef int (*mb_imap_message_cb)(const struct mb_imap_message *m, void *ctx);

/*
 * UID FETCH first:last of the examined folder (UID FLAGS INTERNALDATE
 * RFC822.SIZE MODSEQ BODY.PEEK[]), calling cb once per message in UID order.
 * Messages whose RFC822.SIZE exceeds size_cap are fetched as
 * BODY.PEEK[HEADER] only and flagged headers_only: the sizes are fetched
 * first (UID RFC822.SIZE), then the messages in runs of consecutive UIDs on
 * one side of the cap, so usually two round trips per range.  A range of
 * one UID takes one: its body asked up to size_cap + 1 octets, a longer one
 * is over the cap and its header fetched next.  size_cap
 * UINT64_MAX means no cap and one round trip.  A callback returning -1
 * stops the fetch (MB_E_INTERNAL unless the callback set err).  Any
 * protocol, parse or stream error leaves the session unusable: close it.
 */
int	mb_imap_fetch_range(struct mb_imap *imap, uint32_t first, uint32_t last, uint64_t size_cap,
	    mb_imap_message_cb cb, void *ctx, struct mb_err *err);

/* One message's flags, handed to a callback; everything is borrowed. */
struct mb_imap_flags {
	uint32_t	 uid;
	unsigned	 flags;		/* enum mb_flag bits */
	const char	*keywords;	/* other flags, space-separated; "" when none */
	uint64_t	 modseq;	/* 0 when the server sent none */
};
struct mb_imap_changes {
	/* Once per message the server reports, in its order. */
	int	(*flags)(const struct mb_imap_flags *m, void *ctx);
	/* Once per interval of UIDs reported expunged (VANISHED, both kinds);
	 * last >= first.  NULL: VANISHED is not asked for. */
	int	(*vanished)(uint32_t first, uint32_t last, void *ctx);
	void	*ctx;
};
/*
 * Flag reconciliation of the examined folder (read-only: no body, no STORE):
 * UID FETCH first:last (UID FLAGS), narrowed by (CHANGEDSINCE since) when
 * since != 0 (only messages whose MODSEQ is above it; the folder must have
 * sent HIGHESTMODSEQ), and with VANISHED added when cb->vanished is set
 * (needs since != 0 and mb_imap_qresync(); MB_E_INVALID otherwise).
 * Responses are handed over as they are parsed, so memory does not grow with
 * the answer.  A callback returning -1 stops the calls (MB_E_INTERNAL unless
 * it set err); the session stays usable.  Other errors as mb_imap_fetch_range.
 */
int	mb_imap_fetch_changes(struct mb_imap *imap, uint32_t first, uint32_t last, uint64_t since,
	    const struct mb_imap_changes *cb, struct mb_err *err);

/* An interval of UIDs, first <= last. */
struct mb_imap_uidrun {
	uint32_t	first, last;
};
/*
 * The flags of the examined folder's messages in a set of UIDs: one UID FETCH
 * <set> (UID FLAGS), the set written from runs[0..n) (ascending, not
 * overlapping, 1 <= n), so the server answers for at most the UIDs named.
 * For servers without CONDSTORE, where a window of the folder is compared
 * each tick (docs/syncd.md "Flags and expunges").  cb->vanished must be
 * NULL.  Callbacks and errors as mb_imap_fetch_changes.
 */
int	mb_imap_fetch_flag_set(struct mb_imap *imap, const struct mb_imap_uidrun *runs, size_t n,
	    const struct mb_imap_changes *cb, struct mb_err *err);

/*
 * A hard deadline for the calls that follow (0 clears it), on mb_now_ms()'s
 * monotonic clock (e.g. mb_now_ms() + 120000): past it, a
 * watchdog cancels the stream and the blocked call fails with MB_E_TEMP.
 * Guards against a server that stalls or closes mid-literal, where
 * libetpan 1.9.4 would otherwise spin forever.
 */
void	mb_imap_set_deadline(struct mb_imap *imap, long long deadline_ms);

/*
 * ---- Writes (syncd's write process only; docs/writes.md).  Sync never calls
 * these: it EXAMINEs.  Each call names exactly one UID of the SELECTed folder,
 * or (APPEND) adds exactly one message.
 */

/* SELECT (read-write) the folder; as mb_imap_examine otherwise. */
int	mb_imap_select(struct mb_imap *imap, const char *folder, struct mb_imap_status *st_r,
	    struct mb_err *err);
/* UID STORE uid +FLAGS.SILENT (add), then -FLAGS.SILENT (remove); enum mb_flag bits. */
int	mb_imap_store_flags(struct mb_imap *imap, uint32_t uid, unsigned add, unsigned remove,
	    struct mb_err *err);
/*
 * Whether the SELECTed folder keeps keyword kw: its PERMANENTFLAGS names kw
 * (any case) or \*.  A SELECT answer without PERMANENTFLAGS says every
 * flag is permanent (RFC 3501, 7.1): true.  False without a selected folder.
 */
bool	mb_imap_keyword_permanent(struct mb_imap *imap, const char *kw);
/*
 * UID STORE uid +FLAGS.SILENT (add...), then -FLAGS.SILENT (remove...):
 * keywords (checked by the caller: mb_label_valid), n_add/n_remove of them.
 */
int	mb_imap_store_keywords(struct mb_imap *imap, uint32_t uid, const char *const *add,
	    size_t n_add, const char *const *remove, size_t n_remove, struct mb_err *err);
/*
 * UID FETCH uid (UID FLAGS) as mb_imap_fetch_flags, with the keywords too:
 * *keywords_r (space-separated, as messages.keywords stores them; "" for
 * none) is the caller's to free(), NULL when the UID is gone.
 */
int	mb_imap_fetch_keywords(struct mb_imap *imap, uint32_t uid, unsigned *flags_r,
	    char **keywords_r, bool *found_r, struct mb_err *err);
/* UID FETCH uid (UID FLAGS): *found_r false when the UID is gone. */
int	mb_imap_fetch_flags(struct mb_imap *imap, uint32_t uid, unsigned *flags_r, bool *found_r,
	    struct mb_err *err);

struct mb_imap_moved {
	uint32_t	dest_uidvalidity;	/* from COPYUID; 0 when the server sent none */
	uint32_t	dest_uid;		/* 0 when the server sent none */
	bool		used_move;		/* UID MOVE (else COPY + STORE \Deleted + UID EXPUNGE) */
	/* How far the COPY path got, also when it failed: the state it left. */
	bool		copied;			/* UID COPY succeeded: the message is in dest */
	bool		marked_deleted;		/* and UID STORE \Deleted succeeded on the source */
};
/*
 * Move one UID of the selected folder to dest: UID MOVE when the server has
 * MOVE (and allow_move), else UID COPY, UID STORE +FLAGS.SILENT (\Deleted) and
 * UID EXPUNGE of that UID (never a bare EXPUNGE).  UIDPLUS is required
 * (MB_E_CONFIG without it: nothing was sent).
 */
int	mb_imap_move(struct mb_imap *imap, uint32_t uid, const char *dest, bool allow_move,
	    struct mb_imap_moved *r, struct mb_err *err);

struct mb_imap_appended {
	uint32_t	uidvalidity;	/* from APPENDUID; 0 when the server sent none */
	uint32_t	uid;		/* 0 when the server sent none */
};
/*
 * APPEND the message (raw, len bytes, CRLF line endings) to folder with the
 * flags (enum mb_flag bits); no folder need be selected.  Without UIDPLUS the
 * append still happens and *r is zero: the next sync tick finds the message.
 */
int	mb_imap_append(struct mb_imap *imap, const char *folder, const char *raw, size_t len,
	    unsigned flags, struct mb_imap_appended *r, struct mb_err *err);

/*
 * ---- IDLE (RFC 2177): syncd's watcher (syncd/watchproc.c).  The session
 * has a folder examined; between mb_imap_idle_start() and
 * mb_imap_idle_done() (or an MB_IMAP_IDLE_ENDED) no other call may be made.
 */

enum mb_imap_idle_event {
	MB_IMAP_IDLE_NOTHING,	/* a line that changes nothing ("* OK Still here", RECENT) */
	MB_IMAP_IDLE_EXISTS,	/* n EXISTS: new mail (n is the new count) */
	MB_IMAP_IDLE_EXPUNGE,	/* n EXPUNGE, or VANISHED */
	MB_IMAP_IDLE_FLAGS,	/* n FETCH: flags changed */
	MB_IMAP_IDLE_ENDED,	/* a tagged reply: the server ended the IDLE; start again */
	MB_IMAP_IDLE_STATUS,	/* NOTIFY: STATUS of another mailbox (*mailbox_r): it changed */
};
/*
 * Send IDLE and wait for the continuation; also turns on TCP keepalive for
 * the connection.  MB_E_CONFIG when the server does not advertise IDLE
 * (nothing sent) or answers it with BAD or NO (the session is then unusable:
 * close it); MB_E_TEMP for a lost connection or a passed deadline.
 */
int	mb_imap_idle_start(struct mb_imap *imap, struct mb_err *err);
/*
 * NOTIFY (RFC 5465), before mb_imap_idle_start(): new mail, expunges and
 * flag changes of the examined folder, and of the folders others[0..n)
 * (UTF-8 names), are reported during IDLE; the others' as STATUS lines
 * (MB_IMAP_IDLE_STATUS).  MB_E_CONFIG when the server does not offer NOTIFY
 * (nothing sent) or refuses the command (the session stays usable).
 */
int	mb_imap_notify_set(struct mb_imap *imap, const char *const *others, size_t n,
	    struct mb_err *err);
/* The descriptor to poll for input while idling; -1 when the session is dead. */
int	mb_imap_idle_fd(struct mb_imap *imap);
/* True when input is already buffered (read it before polling again). */
bool	mb_imap_idle_buffered(struct mb_imap *imap);
/*
 * Read one line the server sent while idling (blocks until a whole line
 * arrived: call it when mb_imap_idle_fd() is readable or input is buffered,
 * with a deadline set) and say what it means; *n_r gets the line's number
 * (EXISTS, EXPUNGE, FETCH), else 0; *mailbox_r the mailbox of a STATUS
 * line (UTF-8; the caller frees it), else NULL.  A BYE is MB_E_TEMP and a
 * literal MB_E_PROTO; both leave the session unusable.
 */
int	mb_imap_idle_read(struct mb_imap *imap, enum mb_imap_idle_event *ev_r, uint32_t *n_r,
	    char **mailbox_r, struct mb_err *err);
/*
 * End the IDLE: send DONE and read up to the tagged reply (what arrives
 * before it is not reported: the caller looks at the folder afterwards).
 * Bounded by the deadline set with mb_imap_set_deadline(): a server that
 * does not answer is MB_E_TEMP and the session is unusable.
 */
int	mb_imap_idle_done(struct mb_imap *imap, struct mb_err *err);

#endif
