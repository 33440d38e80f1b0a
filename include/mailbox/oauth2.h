/*
 * An OAuth 2.0 client for IMAP login (syncd only; libmailbox/sync/oauth2.c):
 * the refresh-token grant (RFC 6749 §6) and the device authorization grant
 * (RFC 8628), over libcurl, answers parsed with jansson.  No global state and
 * no log line carries a token: the caller registers each token with
 * mb_log_add_token() (this module does so for every token it receives), and
 * error messages hold the server's error code and a sanitised description,
 * never a request or an answer body.
 */
#ifndef MAILBOX_OAUTH2_H
#define MAILBOX_OAUTH2_H

#include <stddef.h>
#include <stdint.h>

#include "mailbox/err.h"

struct mb_oauth2_client {
	const char	*token_url;	/* borrowed; https, or http to loopback */
	const char	*client_id;	/* borrowed */
	const char	*client_secret;	/* borrowed; NULL: a public client */
	const char	*scope;		/* borrowed; NULL or "": not sent on refresh */
	const char	*user;		/* borrowed; the IMAP user, for the SASL log forms */
	unsigned	 timeout_s;	/* whole request; 0: 30 s */
};

struct mb_oauth2_token {
	char	*access_token;	/* owned; wiped by mb_oauth2_token_release() */
	char	*refresh_token;	/* owned; NULL: the server did not send a new one */
	int64_t	 expires_in;	/* seconds from the answer; 0: the server did not say */
};
void	mb_oauth2_token_release(struct mb_oauth2_token *tok);	/* wipes; idempotent */

/*
 * POST grant_type=refresh_token to the token endpoint.  On success *tok_r is
 * the caller's (mb_oauth2_token_release).  Errors: MB_E_AUTH when the server
 * refuses the grant (invalid_grant: the refresh token was revoked or expired;
 * invalid_client...), MB_E_TEMP for the network, a timeout or a 5xx,
 * MB_E_PROTO for an answer that is not a token, MB_E_CONFIG for a bad URL.
 */
int	mb_oauth2_refresh(const struct mb_oauth2_client *c, const char *refresh_token,
	    struct mb_oauth2_token *tok_r, struct mb_err *err);

/*
 * Parse a token endpoint's answer (HTTP status, body of len bytes, not
 * NUL-terminated): the token on 200, the server's error otherwise, classed as
 * mb_oauth2_refresh says.  Tokens must be printable ASCII without spaces (a
 * SASL string cannot carry anything else).  Exposed for tests and the fuzzer.
 */
int	mb_oauth2_parse_token(long status, const char *body, size_t len,
	    struct mb_oauth2_token *tok_r, struct mb_err *err);

struct mb_oauth2_device {
	char	*device_code;			/* owned; a secret of the poll */
	char	*user_code;			/* owned; for the user */
	char	*verification_uri;		/* owned */
	char	*verification_uri_complete;	/* owned; NULL: the server sent none */
	unsigned interval;			/* seconds between polls (default 5) */
	unsigned expires_in;			/* seconds the codes live */
};
void	mb_oauth2_device_release(struct mb_oauth2_device *d);	/* idempotent */

/*
 * RFC 8628 §3.1: POST client_id (and scope) to device_url.  *d_r is the
 * caller's (mb_oauth2_device_release).  Errors as mb_oauth2_refresh.
 */
int	mb_oauth2_device_start(const struct mb_oauth2_client *c, const char *device_url,
	    struct mb_oauth2_device *d_r, struct mb_err *err);
int	mb_oauth2_parse_device(long status, const char *body, size_t len,
	    struct mb_oauth2_device *d_r, struct mb_err *err);

enum mb_oauth2_poll {
	MB_OAUTH2_DONE,		/* *tok_r holds the tokens */
	MB_OAUTH2_PENDING,	/* authorization_pending: ask again after the interval */
	MB_OAUTH2_SLOW_DOWN,	/* slow_down: add 5 s to the interval (RFC 8628 §3.5) */
};
/*
 * RFC 8628 §3.4: one poll of the token endpoint with the device code.
 * Returns an enum mb_oauth2_poll, or -1 with err: MB_E_AUTH for
 * access_denied or expired_token (the user said no, or took too long), else
 * as mb_oauth2_refresh.
 */
int	mb_oauth2_device_poll(const struct mb_oauth2_client *c, const char *device_code,
	    struct mb_oauth2_token *tok_r, struct mb_err *err);

#endif
