/*
 * The Mailbox interface (include/mailbox/imap.h) over libetpan 1.9.4.  This
 * is the only file in the tree that includes libetpan; docs/imap.md explains
 * the choices and lists the library's flaws that shape them (§n there):
 *
 * - Debian's libetpan never verifies a certificate: the chain and host name
 *   are checked here with GnuTLS after the handshake and before LOGIN.
 * - A server closing mid-literal makes libetpan spin forever (its literal
 *   loop reads 0 bytes at end of file and asks again): the stream's read is
 *   wrapped so end of file is an error at once (eof_guard), and a watchdog
 *   thread per connection cancels the stream past the caller's deadline.
 * - After PARSE/PROTOCOL/STREAM/FATAL the stream is desynchronised: the
 *   session is marked dead and every later call fails until it is closed.
 * - COMPRESS, ESEARCH and SEARCH MODSEQ break the session: never used.
 *
 * Over 600 lines on purpose: libetpan is kept to exactly one source file, so
 * that replacing the IMAP client is a change to this file and not a refactor.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <libetpan/libetpan.h>
#include <openssl/evp.h>

#include "mailbox/buf.h"
#include "mailbox/imap.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/mutf7.h"
#include "mailbox/util.h"

#define IMAP_DEFAULT_TIMEOUT_S	60
#define IMAP_LOG_DATA_MAX	200	/* bytes of a received chunk shown at debug level */
#define IMAP_KEYWORDS_MAX	(64u * 1024)

/*
 * The stream's low driver with its read wrapped (eof_guard_read): drv comes
 * first, so the mailstream_low's driver pointer leads back to orig.
 */
struct eof_guard {
	mailstream_low_driver		 drv;
	const mailstream_low_driver	*orig;
	bool				 eof;	/* the server closed the connection */
};

struct mb_imap {
	mailimap	*etpan;		/* owned */
	char		*host;		/* owned; for messages */
	char		*password;	/* owned copy, wiped on close; only for scrubbing replies */
	unsigned	 timeout_s;
	bool		 dead;		/* stream desynchronised or cancelled: only close works */
	bool		 condstore;	/* server advertises CONDSTORE (ENABLEd when it can) */
	bool		 qresync;	/* the server confirmed ENABLE QRESYNC */
	bool		 sel_modseq;	/* the examined folder sent HIGHESTMODSEQ: fetch MODSEQ */
	bool		 selected;

	/* The watchdog (docs/imap.md §7.3); everything below is under wd_lock. */
	pthread_t	 wd_thread;
	bool		 wd_started;
	pthread_mutex_t	 wd_lock;
	pthread_cond_t	 wd_cond;
	long long	 deadline_ms;	/* mb_now_ms() clock; 0: none */
	bool		 busy;		/* inside a libetpan call */
	bool		 stop;
	bool		 cancelled;	/* the watchdog fired: the stream is dead */
	mailstream	*armed;		/* the stream the watchdog may cancel; NULL: none yet */

	struct eof_guard guard;		/* installed once TLS is set up */
};

/* ---------------------------------------------------------------- end of file */

/*
 * read(2) returning 0 is end of file, but libetpan's literal parser treats
 * a 0-byte read as "nothing yet" and loops on it at full CPU until the
 * deadline.  Report it as a stream error instead: the command fails at once
 * with MAILIMAP_ERROR_STREAM.
 */
static ssize_t
eof_guard_read(mailstream_low *s, void *buf, size_t count)
{
	struct eof_guard *g = (struct eof_guard *)s->driver;
	ssize_t n;

	if (g->eof)
		return -1;
	n = g->orig->mailstream_read(s, buf, count);
	if (n == 0 && count > 0) {
		g->eof = true;
		return -1;
	}
	return n;
}

/* Wrap the session's current low stream (after STARTTLS replaced it, if it did). */
static void
eof_guard_install(struct mb_imap *c)
{
	mailstream_low *low = c->etpan->imap_stream ? c->etpan->imap_stream->low : NULL;

	if (low == NULL || low->driver == &c->guard.drv)
		return;
	c->guard.orig = low->driver;
	c->guard.drv = *low->driver;
	c->guard.drv.mailstream_read = eof_guard_read;
	c->guard.eof = false;
	low->driver = &c->guard.drv;
}

/* ---------------------------------------------------------------- watchdog */

static void *
watchdog_main(void *arg)
{
	struct mb_imap *c = arg;

	pthread_mutex_lock(&c->wd_lock);
	while (!c->stop) {
		long long now = mb_now_ms();

		if (c->busy && c->deadline_ms != 0 && !c->cancelled && c->armed != NULL) {
			if (now >= c->deadline_ms) {
				/* A blocked read returns MAILIMAP_ERROR_STREAM; the
				 * cancel pipe stays readable, so a spinning literal
				 * read ends too. */
				mailstream_cancel(c->armed);
				c->cancelled = true;
				continue;
			}
			struct timespec ts;
			long long ms = c->deadline_ms - now;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)(ms / 1000);
			ts.tv_nsec += (long)(ms % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&c->wd_cond, &c->wd_lock, &ts);
		} else
			pthread_cond_wait(&c->wd_cond, &c->wd_lock);
	}
	pthread_mutex_unlock(&c->wd_lock);
	return NULL;
}

static int
watchdog_start(struct mb_imap *c)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&c->wd_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* mb_now_ms()'s clock */
	pthread_cond_init(&c->wd_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&c->wd_thread, NULL, watchdog_main, c) != 0)
		return -1;
	c->wd_started = true;
	return 0;
}

static void
watchdog_stop(struct mb_imap *c)
{
	if (!c->wd_started)
		return;
	pthread_mutex_lock(&c->wd_lock);
	c->stop = true;
	pthread_cond_signal(&c->wd_cond);
	pthread_mutex_unlock(&c->wd_lock);
	pthread_join(c->wd_thread, NULL);
	pthread_cond_destroy(&c->wd_cond);
	pthread_mutex_destroy(&c->wd_lock);
	c->wd_started = false;
}

/* Let the watchdog cancel the session's stream (once it exists). */
static void
watchdog_arm(struct mb_imap *c)
{
	pthread_mutex_lock(&c->wd_lock);
	c->armed = c->etpan->imap_stream;
	pthread_cond_signal(&c->wd_cond);
	pthread_mutex_unlock(&c->wd_lock);
}

static void
call_begin(struct mb_imap *c)
{
	pthread_mutex_lock(&c->wd_lock);
	c->busy = true;
	pthread_cond_signal(&c->wd_cond);
	pthread_mutex_unlock(&c->wd_lock);
}

static void
call_end(struct mb_imap *c)
{
	pthread_mutex_lock(&c->wd_lock);
	c->busy = false;
	pthread_mutex_unlock(&c->wd_lock);
}

static bool
deadline_passed(struct mb_imap *c)
{
	bool passed;

	pthread_mutex_lock(&c->wd_lock);
	passed = c->cancelled || (c->deadline_ms != 0 && mb_now_ms() >= c->deadline_ms);
	pthread_mutex_unlock(&c->wd_lock);
	return passed;
}

static bool
was_cancelled(struct mb_imap *c)
{
	bool r;

	pthread_mutex_lock(&c->wd_lock);
	r = c->cancelled;
	pthread_mutex_unlock(&c->wd_lock);
	return r;
}

void
mb_imap_set_deadline(struct mb_imap *imap, long long deadline_ms)
{
	pthread_mutex_lock(&imap->wd_lock);
	imap->deadline_ms = deadline_ms;
	pthread_cond_signal(&imap->wd_cond);
	pthread_mutex_unlock(&imap->wd_lock);
}

/* ------------------------------------------------------------------ errors */

/*
 * Copy peer text into out for an error message: printable ASCII only, and
 * the password (should a server ever echo it) replaced.  The logger scrubs
 * lines, but err->msg may travel elsewhere first.
 */
static void
peer_text(const struct mb_imap *c, const char *in, char *out, size_t outlen)
{
	struct mb_buf b = MB_BUF_INIT(outlen > 1 ? outlen - 1 : 0);
	size_t plen = c->password ? strlen(c->password) : 0;

	if (in == NULL)
		in = "";
	while (*in) {
		if (plen >= 3 && strncmp(in, c->password, plen) == 0) {
			mb_buf_adds(&b, "<hidden>");
			in += plen;
			continue;
		}
		unsigned char ch = (unsigned char)*in++;

		if (mb_buf_addc(&b, ch >= 0x20 && ch < 0x7f ? (char)ch : '?') == -1)
			break;
	}
	snprintf(out, outlen, "%s", b.data);
	mb_buf_release(&b);
	/* Its quoted and base64 forms too (a server echoing the LOGIN line). */
	mb_log_scrub(out, outlen);
}

static bool
is_session_fatal(int r)
{
	return r == MAILIMAP_ERROR_STREAM || r == MAILIMAP_ERROR_PARSE ||
	    r == MAILIMAP_ERROR_PROTOCOL || r == MAILIMAP_ERROR_FATAL ||
	    r == MAILIMAP_ERROR_MEMORY || r == MAILIMAP_ERROR_SSL;
}

/*
 * Turn a libetpan result into an mb_err.  Errors that leave the stream in
 * an unknown state mark the session dead; a tagged NO does not.
 */
static int
etpan_fail(struct mb_imap *c, int r, const char *what, struct mb_err *err)
{
	char text[160];

	peer_text(c, c->etpan ? c->etpan->imap_response : NULL, text, sizeof(text));
	if (is_session_fatal(r) || was_cancelled(c))
		c->dead = true;
	if (was_cancelled(c))
		return mb_err_set(err, MB_E_TEMP, "%s: %s: deadline passed, connection cancelled",
		    c->host, what);
	if (r == MAILIMAP_ERROR_STREAM && c->guard.eof)
		return mb_err_set(err, MB_E_TEMP, "%s: %s: the server closed the connection",
		    c->host, what);
	switch (r) {
	case MAILIMAP_ERROR_STREAM:
		return mb_err_set(err, MB_E_TEMP, "%s: %s: connection lost or timed out", c->host,
		    what);
	case MAILIMAP_ERROR_FATAL:
		return mb_err_set(err, MB_E_TEMP, "%s: %s: server ended the session (BYE %s)",
		    c->host, what, text);
	case MAILIMAP_ERROR_PARSE:
		return mb_err_set(err, MB_E_PROTO, "%s: %s: unparsable server response", c->host,
		    what);
	case MAILIMAP_ERROR_PROTOCOL:
		return mb_err_set(err, MB_E_PROTO, "%s: %s: protocol error (BAD or out-of-step reply)%s%s",
		    c->host, what, *text ? ": " : "", text);
	case MAILIMAP_ERROR_MEMORY:
		return mb_err_set(err, MB_E_INTERNAL, "%s: %s: out of memory", c->host, what);
	case MAILIMAP_ERROR_SSL:
		return mb_err_set(err, MB_E_PROTO, "%s: %s: TLS handshake failed", c->host, what);
	case MAILIMAP_ERROR_CONNECTION_REFUSED:
		return mb_err_set(err, MB_E_TEMP, "%s: %s: cannot connect", c->host, what);
	case MAILIMAP_ERROR_BAD_STATE:
		return mb_err_set(err, MB_E_INTERNAL, "%s: %s: command in the wrong state", c->host,
		    what);
	default:	/* a tagged NO: the session is still fine */
		return mb_err_set(err, MB_E_TEMP, "%s: %s refused: %s", c->host, what, text);
	}
}

static int
check_usable(struct mb_imap *c, const char *what, struct mb_err *err)
{
	if (c->dead)
		return mb_err_set(err, MB_E_PROTO, "%s: %s: session unusable after an earlier error",
		    c->host, what);
	if (deadline_passed(c))
		return mb_err_set(err, MB_E_TEMP, "%s: %s: deadline passed", c->host, what);
	return 0;
}

/* ----------------------------------------------------------------- logging */

static void
etpan_log(mailimap *s, int type, const char *str, size_t size, void *ctx)
{
	const char *dir;

	switch (type) {
	case MAILSTREAM_LOG_TYPE_DATA_SENT_PRIVATE:
		mb_log_debug("imap >>> <private: %zu bytes>", size);
		return;
	case MAILSTREAM_LOG_TYPE_DATA_SENT:
		dir = ">>>";
		break;
	case MAILSTREAM_LOG_TYPE_DATA_RECEIVED:
		dir = "<<<";
		break;
	case MAILSTREAM_LOG_TYPE_ERROR_PARSE:
		dir = "parse error at";
		break;
	case MAILSTREAM_LOG_TYPE_ERROR_RECEIVED:
		mb_log_debug("imap: read error");
		return;
	case MAILSTREAM_LOG_TYPE_ERROR_SENT:
		mb_log_debug("imap: write error");
		return;
	default:
		return;
	}
	if (str == NULL)
		return;
	/* Bodies arrive through here too: show the start, count the rest. */
	if (size > IMAP_LOG_DATA_MAX)
		mb_log_debug("imap %s %.*s... (%zu bytes)", dir, IMAP_LOG_DATA_MAX, str, size);
	else
		mb_log_debug("imap %s %.*s", dir, (int)size, str);
}

/* ------------------------------------------------------------- TLS checks */

static bool
host_is_ip(const char *host)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* Loopback by its literal form only: a name that resolves there is not enough. */
static bool
host_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

static void
sni_cb(struct mailstream_ssl_context *ctx, void *data)
{
	const char *host = data;

	/* RFC 6066: no SNI for address literals. */
	if (!host_is_ip(host))
		mailstream_ssl_set_server_name(ctx, (char *)host);
}

/*
 * Verify the peer's chain against the system trust store plus ca_file, for
 * host and the TLS server purpose (docs/imap.md §7.1).  No credential has been
 * sent when this runs.
 */
static int
verify_peer(struct mb_imap *c, const char *host, const char *ca_file, struct mb_err *err)
{
	carray *chain = mailstream_get_certificate_chain(c->etpan->imap_stream);
	gnutls_x509_trust_list_t tl = NULL;
	gnutls_x509_crt_t *crt = NULL;
	unsigned n = 0, status = 0, i;
	int r = -1, gr;

	if (chain == NULL || carray_count(chain) == 0) {
		mb_err_set(err, MB_E_PROTO, "%s: no server certificate", host);
		goto out;
	}
	n = carray_count(chain);
	crt = mb_xcalloc(n, sizeof(*crt));
	for (i = 0; i < n; i++) {
		MMAPString *der = carray_get(chain, i);
		gnutls_datum_t d = { (unsigned char *)der->str, (unsigned)der->len };

		if (gnutls_x509_crt_init(&crt[i]) < 0 ||
		    gnutls_x509_crt_import(crt[i], &d, GNUTLS_X509_FMT_DER) < 0) {
			mb_err_set(err, MB_E_PROTO, "%s: unreadable server certificate", host);
			goto out;
		}
	}
	if (gnutls_x509_trust_list_init(&tl, 0) < 0) {
		mb_err_set(err, MB_E_INTERNAL, "gnutls trust list");
		goto out;
	}
	gr = gnutls_x509_trust_list_add_system_trust(tl, 0, 0);
	if (gr < 0)
		mb_log_debug("imap: no system trust store (%s)", gnutls_strerror(gr));
	if (ca_file != NULL) {
		gr = gnutls_x509_trust_list_add_trust_file(tl, ca_file, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
		if (gr <= 0) {
			mb_err_set(err, MB_E_CONFIG, "CA file '%s': %s", ca_file,
			    gr < 0 ? gnutls_strerror(gr) : "no certificate in it");
			goto out;
		}
	}
	gnutls_typed_vdata_st vd[2] = {
		{ .type = GNUTLS_DT_DNS_HOSTNAME, .data = (unsigned char *)host, .size = 0 },
		{ .type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER,
		  .size = 0 },
	};
	gr = gnutls_x509_trust_list_verify_crt2(tl, crt, n, vd, 2, 0, &status, NULL);
	if (gr < 0 || status != 0) {
		gnutls_datum_t why = { NULL, 0 };

		if (gr >= 0)
			gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
		mb_err_set(err, MB_E_PROTO, "%s: server certificate not trusted: %s", host,
		    gr < 0 ? gnutls_strerror(gr) : why.data ? (const char *)why.data : "?");
		gnutls_free(why.data);
		goto out;
	}
	r = 0;
out:
	if (crt != NULL) {
		for (i = 0; i < n; i++)
			if (crt[i] != NULL)
				gnutls_x509_crt_deinit(crt[i]);
		free(crt);
	}
	if (tl != NULL)
		gnutls_x509_trust_list_deinit(tl, 1);
	if (chain != NULL)
		mailstream_certificate_chain_free(chain);
	return r;
}

/* ------------------------------------------------------------- connecting */

static int
refresh_capabilities(struct mb_imap *c, struct mb_err *err)
{
	struct mailimap_capability_data *cd = NULL;
	int r;

	call_begin(c);
	r = mailimap_capability(c->etpan, &cd);
	call_end(c);
	if (cd != NULL)
		mailimap_capability_data_free(cd);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, "CAPABILITY", err);
	return 0;
}

/* Did the ENABLE reply name cap? */
static bool
enabled(const struct mailimap_capability_data *res, const char *cap)
{
	for (clistiter *it = res && res->cap_list ? clist_begin(res->cap_list) : NULL; it;
	    it = clist_next(it)) {
		const struct mailimap_capability *ca = clist_content(it);

		if (ca != NULL && ca->cap_type == MAILIMAP_CAPABILITY_NAME &&
		    ca->cap_data.cap_name != NULL && strcasecmp(ca->cap_data.cap_name, cap) == 0)
			return true;
	}
	return false;
}

/*
 * ENABLE CONDSTORE, and QRESYNC with it when the caller wants VANISHED: one
 * round trip either way.  QRESYNC is asked for only by the scheduler, since
 * it changes how the server reports expunges for the rest of the session.
 */
static int
enable_condstore(struct mb_imap *c, bool want_qresync, struct mb_err *err)
{
	struct mailimap_capability_data *req, *res = NULL;
	bool qresync;
	clist *l;
	int r;

	if (!mailimap_has_extension(c->etpan, "CONDSTORE"))
		return 0;
	c->condstore = true;
	if (!mailimap_has_extension(c->etpan, "ENABLE"))
		return 0;	/* EXAMINE (CONDSTORE) turns it on per folder */
	qresync = want_qresync && mailimap_has_extension(c->etpan, "QRESYNC");
	l = clist_new();
	clist_append(l, mailimap_capability_new(MAILIMAP_CAPABILITY_NAME, NULL,
	    mb_xstrdup("CONDSTORE")));
	if (qresync)
		clist_append(l, mailimap_capability_new(MAILIMAP_CAPABILITY_NAME, NULL,
		    mb_xstrdup("QRESYNC")));
	req = mailimap_capability_data_new(l);
	call_begin(c);
	r = mailimap_enable(c->etpan, req, &res);
	call_end(c);
	mailimap_capability_data_free(req);
	/* VANISHED may be asked for only once the server said QRESYNC is on. */
	c->qresync = qresync && r == MAILIMAP_NO_ERROR && enabled(res, "QRESYNC");
	if (res != NULL)
		mailimap_capability_data_free(res);
	/* What counts is whether HIGHESTMODSEQ arrives on EXAMINE, not this reply. */
	if (r != MAILIMAP_NO_ERROR && is_session_fatal(r))
		return etpan_fail(c, r, "ENABLE CONDSTORE", err);
	return 0;
}

/*
 * A refused login's error, from the tagged NO's text and RFC 5530 code, both
 * sanitised (peer_text).  what names the command ("LOGIN", "AUTHENTICATE
 * XOAUTH2").
 */
static int
login_refused(struct mb_imap *c, const struct mb_imap_conf *conf, const char *what,
    struct mb_err *err)
{
	char text[160], code[48];

	peer_text(c, c->etpan->imap_response, text, sizeof(text));
	peer_text(c, c->etpan->imap_response_info ? c->etpan->imap_response_info->rsp_atom : NULL,
	    code, sizeof(code));
	/* RFC 5530: UNAVAILABLE is the server's trouble, not the password. */
	if (strcasecmp(code, "UNAVAILABLE") == 0)
		return mb_err_set(err, MB_E_TEMP, "%s: login temporarily unavailable: %s", c->host,
		    text);
	return mb_err_set(err, MB_E_AUTH, "%s: %s refused for user '%s'%s%s%s: %s", c->host,
	    what, conf->user, *code ? " [" : "", code, *code ? "]" : "", text);
}

/*
 * SASL with an initial response (RFC 4959 SASL-IR), for the OAuth
 * mechanisms.  libetpan 1.9.4 has mailimap_oauth2_authenticate for XOAUTH2
 * only, and it frees the base64 credential without wiping it; this one
 * function does both mechanisms from libetpan's public pieces, the same way:
 * the command goes out with the stream's privacy off, so the debug dialogue
 * shows "<private: N bytes>" (DATA_SENT_PRIVATE), then one line is read: a
 * continuation is the server's error report (RFC 7628 §3.2.3), answered
 * with the dummy response ("AQ==", i.e. %x01, for OAUTHBEARER; an empty line
 * for XOAUTH2) so that the tagged NO follows.
 */
static int
sasl_ir(struct mb_imap *c, const char *mech, const char *ir, size_t ir_len,
    const char *dummy, struct mb_err *err)
{
	struct mb_buf line = MB_BUF_INIT(SIZE_MAX);
	struct mailimap_response *rsp = NULL;
	size_t b64_len = 4 * ((ir_len + 2) / 3) + 1;
	unsigned char *b64 = mb_xmalloc(b64_len);
	const char *got;
	int r, n, state;

	n = EVP_EncodeBlock(b64, (const unsigned char *)ir, (int)ir_len);
	mb_buf_addf(&line, "AUTHENTICATE %s %.*s\r\n", mech, n, (const char *)b64);
	mb_freezero(b64, b64_len);
	call_begin(c);
	mailstream_set_privacy(c->etpan->imap_stream, 0);
	r = mailimap_send_current_tag(c->etpan);
	if (r == MAILIMAP_NO_ERROR &&
	    (mailstream_write(c->etpan->imap_stream, line.data, line.len) != (ssize_t)line.len ||
	    mailstream_flush(c->etpan->imap_stream) == -1))
		r = MAILIMAP_ERROR_STREAM;
	mailstream_set_privacy(c->etpan->imap_stream, 1);
	explicit_bzero(line.data, line.len);
	mb_buf_release(&line);
	if (r == MAILIMAP_NO_ERROR && (got = mailimap_read_line(c->etpan)) == NULL)
		r = MAILIMAP_ERROR_STREAM;
	if (r == MAILIMAP_NO_ERROR && got[0] == '+') {
		if (mailstream_write(c->etpan->imap_stream, dummy, strlen(dummy)) !=
		    (ssize_t)strlen(dummy) || mailstream_write(c->etpan->imap_stream, "\r\n", 2) != 2 ||
		    mailstream_flush(c->etpan->imap_stream) == -1)
			r = MAILIMAP_ERROR_STREAM;
	}
	/* The line read stays in the session's buffer: the parser starts there
	 * and reads the rest (after a continuation, the tagged answer). */
	if (r == MAILIMAP_NO_ERROR)
		r = mailimap_parse_response(c->etpan, &rsp);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, mech, err);
	state = rsp->rsp_resp_done->rsp_type == MAILIMAP_RESP_DONE_TYPE_TAGGED ?
	    rsp->rsp_resp_done->rsp_data.rsp_tagged->rsp_cond_state->rsp_type : -1;
	mailimap_response_free(rsp);
	if (state != MAILIMAP_RESP_COND_STATE_OK)
		return 1;	/* refused: the caller words it */
	c->etpan->imap_state = MAILIMAP_STATE_AUTHENTICATED;
	return 0;
}

/*
 * OAuth 2.0 login: OAUTHBEARER (RFC 7628) where offered, else XOAUTH2
 * (Google's and Microsoft's older twin); conf->password is the access token.
 */
static int
login_oauth2(struct mb_imap *c, const struct mb_imap_conf *conf, struct mb_err *err)
{
	struct mb_buf ir = MB_BUF_INIT(SIZE_MAX);
	const char *mech;
	int r;

	if (mailimap_has_authentication(c->etpan, "OAUTHBEARER")) {
		mech = "OAUTHBEARER";
		/* The authzid is a saslname: ',' and '=' would need escaping;
		 * such a user goes without it (the server takes the token's). */
		if (strpbrk(conf->user, ",=") != NULL)
			mb_buf_addf(&ir, "n,,\001auth=Bearer %s\001\001", conf->password);
		else
			mb_buf_addf(&ir, "n,a=%s,\001auth=Bearer %s\001\001", conf->user,
			    conf->password);
	} else if (mailimap_has_authentication(c->etpan, "XOAUTH2")) {
		mech = "XOAUTH2";
		mb_buf_addf(&ir, "user=%s\001auth=Bearer %s\001\001", conf->user, conf->password);
	} else {
		return mb_err_set(err, MB_E_CONFIG, "%s: IMAP_AUTH=oauth2, but the server offers "
		    "neither AUTH=OAUTHBEARER nor AUTH=XOAUTH2", c->host);
	}
	mb_log_debug("imap: logging in with AUTHENTICATE %s", mech);
	r = sasl_ir(c, mech, ir.data, ir.len, strcmp(mech, "OAUTHBEARER") == 0 ? "AQ==" : "",
	    err);
	explicit_bzero(ir.data, ir.len);
	mb_buf_release(&ir);
	if (r == 1)
		return login_refused(c, conf, mech[0] == 'O' ? "AUTHENTICATE OAUTHBEARER" :
		    "AUTHENTICATE XOAUTH2", err);
	return r;
}

static int
login(struct mb_imap *c, const struct mb_imap_conf *conf, struct mb_err *err)
{
	int r;

	if (conf->auth == MB_IMAP_AUTH_OAUTH2)
		return login_oauth2(c, conf, err);
	if (mailimap_has_extension(c->etpan, "LOGINDISABLED"))
		return mb_err_set(err, MB_E_CONFIG,
		    "%s: server disables LOGIN (LOGINDISABLED); only LOGIN is implemented", c->host);
	call_begin(c);
	r = mailimap_login(c->etpan, conf->user, conf->password);
	call_end(c);
	if (r == MAILIMAP_NO_ERROR)
		return 0;
	if (r != MAILIMAP_ERROR_LOGIN)
		return etpan_fail(c, r, "LOGIN", err);
	return login_refused(c, conf, "login", err);
}

int
mb_imap_connect(const struct mb_imap_conf *conf, struct mb_imap **imap_r, struct mb_err *err)
{
	struct mb_imap *c;
	int r;

	*imap_r = NULL;
	if (conf->host == NULL || *conf->host == '\0')
		return mb_err_set(err, MB_E_CONFIG, "IMAP host not set");
	if (conf->port == 0 || conf->port > 65535)
		return mb_err_set(err, MB_E_CONFIG, "IMAP port %u out of range", conf->port);
	if (conf->user == NULL || *conf->user == '\0' || conf->password == NULL)
		return mb_err_set(err, MB_E_CONFIG, "IMAP user or password not set");
	if (conf->tls == MB_IMAP_TLS_NONE && !host_is_loopback(conf->host))
		return mb_err_set(err, MB_E_CONFIG,
		    "plaintext IMAP to '%s' refused: only loopback may go without TLS", conf->host);
	/* Before a single byte is sent, so every later line is scrubbed; if the
	 * logger cannot hide it, do not send it. */
	if ((conf->auth == MB_IMAP_AUTH_OAUTH2 ? mb_log_add_token(conf->user, conf->password) :
	    mb_log_add_secret(conf->user, conf->password)) == -1)
		return mb_err_set(err, MB_E_INTERNAL, "logger secret table full: not logging in");

	c = mb_xcalloc(1, sizeof(*c));
	c->host = mb_xstrdup(conf->host);
	c->password = mb_xstrdup(conf->password);
	c->timeout_s = conf->timeout_s ? conf->timeout_s : IMAP_DEFAULT_TIMEOUT_S;
	c->etpan = mailimap_new(0, NULL);
	if (c->etpan == NULL) {
		free(c->host);
		mb_freezero(c->password, strlen(c->password));
		free(c);
		return mb_err_set(err, MB_E_INTERNAL, "mailimap_new failed");
	}
	if (watchdog_start(c) == -1) {
		mb_imap_close(&c);
		return mb_err_set(err, MB_E_INTERNAL, "cannot start the watchdog thread");
	}
	/* Applied when the stream is created: covers connect, handshake, reads. */
	mailimap_set_timeout(c->etpan, (time_t)c->timeout_s);
	if (mb_log_get_level() >= MB_LOG_DEBUG)
		mailimap_set_logger(c->etpan, etpan_log, c);

	call_begin(c);
	if (conf->tls == MB_IMAP_TLS_IMPLICIT)
		r = mailimap_ssl_connect_with_callback(c->etpan, conf->host, (uint16_t)conf->port,
		    sni_cb, c->host);
	else
		r = mailimap_socket_connect(c->etpan, conf->host, (uint16_t)conf->port);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR_NON_AUTHENTICATED && r != MAILIMAP_NO_ERROR_AUTHENTICATED) {
		c->dead = true;
		etpan_fail(c, r == MAILIMAP_ERROR_STREAM ? MAILIMAP_ERROR_CONNECTION_REFUSED : r,
		    "connect", err);
		goto fail;
	}
	watchdog_arm(c);
	if (conf->tls == MB_IMAP_TLS_STARTTLS) {
		if (r == MAILIMAP_NO_ERROR_AUTHENTICATED) {
			mb_err_set(err, MB_E_PROTO, "%s: PREAUTH greeting: cannot start TLS", c->host);
			goto fail;
		}
		if (!mailimap_has_extension(c->etpan, "STARTTLS") &&
		    (refresh_capabilities(c, err) == -1 ||
		    !mailimap_has_extension(c->etpan, "STARTTLS"))) {
			mb_err_set(err, MB_E_PROTO,
			    "%s: server does not offer STARTTLS; refusing to log in without TLS", c->host);
			goto fail;
		}
		call_begin(c);
		r = mailimap_socket_starttls_with_callback(c->etpan, sni_cb, c->host);
		call_end(c);
		if (r != MAILIMAP_NO_ERROR) {
			c->dead = true;
			etpan_fail(c, r, "STARTTLS", err);
			goto fail;
		}
	}
	eof_guard_install(c);
	if (conf->tls != MB_IMAP_TLS_NONE &&
	    verify_peer(c, conf->host, conf->ca_file, err) == -1)
		goto fail;
	/* The pre-TLS list may have been forged; the greeting's may be partial. */
	if (conf->tls == MB_IMAP_TLS_STARTTLS && refresh_capabilities(c, err) == -1)
		goto fail;
	if (r != MAILIMAP_NO_ERROR_AUTHENTICATED && login(c, conf, err) == -1)
		goto fail;
	if (refresh_capabilities(c, err) == -1 || enable_condstore(c, conf->qresync, err) == -1)
		goto fail;
	*imap_r = c;
	return 0;
fail:
	mb_imap_close(&c);
	return -1;
}

void
mb_imap_close(struct mb_imap **imapp)
{
	struct mb_imap *c = *imapp;

	if (c == NULL)
		return;
	*imapp = NULL;
	if (!c->dead && c->etpan->imap_stream != NULL && c->wd_started && !deadline_passed(c)) {
		long long until = mb_now_ms() + 5000;

		pthread_mutex_lock(&c->wd_lock);
		if (c->deadline_ms == 0 || c->deadline_ms > until)
			c->deadline_ms = until;
		pthread_mutex_unlock(&c->wd_lock);
		/* Not mailimap_logout(): it closes the stream inside the call,
		 * under the watchdog's feet.  The stream is closed below,
		 * once the watchdog has stopped. */
		call_begin(c);
		(void)mailimap_custom_command(c->etpan, "LOGOUT");
		call_end(c);
	}
	watchdog_stop(c);
	/* mailimap_free() would send its own LOGOUT on an open stream, even a
	 * dead one, and wait for the reply: close the stream first. */
	if (c->etpan->imap_stream != NULL) {
		mailstream_close(c->etpan->imap_stream);
		c->etpan->imap_stream = NULL;
	}
	mailimap_free(c->etpan);
	free(c->host);
	if (c->password != NULL)
		mb_freezero(c->password, strlen(c->password));
	free(c);
}

bool
mb_imap_qresync(struct mb_imap *imap)
{
	return imap->qresync;
}

bool
mb_imap_has_capability(struct mb_imap *imap, const char *name)
{
	if (strncasecmp(name, "AUTH=", 5) == 0)
		return mailimap_has_authentication(imap->etpan, name + 5) != 0;
	return mailimap_has_extension(imap->etpan, (char *)name) != 0;
}

/* -------------------------------------------------------------------- LIST */

static const char *
special_use_role(const char *flag)
{
	static const char *roles[] = {
		"\\All", "\\Archive", "\\Drafts", "\\Flagged", "\\Junk", "\\Sent", "\\Trash",
		"\\Important",
	};

	if (*flag == '\\')	/* libetpan strips it; accept it either way */
		flag++;
	for (size_t i = 0; i < MB_ARRAY_LEN(roles); i++)
		if (strcasecmp(flag, roles[i] + 1) == 0)
			return roles[i];
	return NULL;
}

int
mb_imap_list(struct mb_imap *imap, struct mb_imap_folder **folders_r, size_t *n_r,
    struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mb_imap_folder *v = NULL;
	clist *list = NULL;
	size_t n = 0;
	int r;

	*folders_r = NULL;
	*n_r = 0;
	if (check_usable(c, "LIST", err) == -1)
		return -1;
	call_begin(c);
	r = mailimap_list(c->etpan, "", "*", &list);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR) {
		if (list != NULL)
			mailimap_list_result_free(list);
		return etpan_fail(c, r, "LIST", err);
	}
	if (list != NULL)
		v = mb_xcalloc((size_t)clist_count(list) + 1, sizeof(*v));
	for (clistiter *it = list ? clist_begin(list) : NULL; it; it = clist_next(it)) {
		struct mailimap_mailbox_list *mb = clist_content(it);
		struct mb_imap_folder *f = &v[n];
		struct mb_err derr = { 0 };

		if (mb == NULL || mb->mb_name == NULL)
			continue;
		if (mb_mutf7_decode(mb->mb_name, &f->name, &derr) == -1) {
			mb_log_warnx("imap: folder name '%s' is not modified UTF-7; kept as sent",
			    mb->mb_name);
			f->name = mb_xstrdup(mb->mb_name);
		}
		f->selectable = true;
		if (mb->mb_flag != NULL) {
			if (mb->mb_flag->mbf_type == MAILIMAP_MBX_LIST_FLAGS_SFLAG &&
			    mb->mb_flag->mbf_sflag == MAILIMAP_MBX_LIST_SFLAG_NOSELECT)
				f->selectable = false;
			for (clistiter *o = mb->mb_flag->mbf_oflags ?
			    clist_begin(mb->mb_flag->mbf_oflags) : NULL; o; o = clist_next(o)) {
				struct mailimap_mbx_list_oflag *of = clist_content(o);
				const char *role;

				if (of == NULL || of->of_type != MAILIMAP_MBX_LIST_OFLAG_FLAG_EXT ||
				    of->of_flag_ext == NULL)
					continue;
				const char *fl = of->of_flag_ext + (*of->of_flag_ext == '\\');

				if (strcasecmp(fl, "NonExistent") == 0 ||
				    strcasecmp(fl, "Noselect") == 0)
					f->selectable = false;
				else if (f->role == NULL && (role = special_use_role(fl)) != NULL)
					f->role = mb_xstrdup(role);
			}
		}
		n++;
	}
	if (list != NULL)
		mailimap_list_result_free(list);
	*folders_r = v;
	*n_r = n;
	return 0;
}

void
mb_imap_folders_free(struct mb_imap_folder **foldersp, size_t n)
{
	struct mb_imap_folder *v = *foldersp;

	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].role);
	}
	free(v);
	*foldersp = NULL;
}

/* --------------------------------------------------------------- NAMESPACE */

int
mb_imap_namespace(struct mb_imap *imap, char **prefix_r, char *delim_r, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_namespace_data *ns = NULL;
	struct mailimap_namespace_info *info = NULL;
	int r;

	*prefix_r = NULL;
	*delim_r = 0;
	if (check_usable(c, "NAMESPACE", err) == -1)
		return -1;
	if (!mb_imap_has_capability(c, "NAMESPACE")) {
		*prefix_r = mb_xstrdup("");
		return 0;
	}
	call_begin(c);
	r = mailimap_namespace(c->etpan, &ns);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR) {
		if (ns != NULL)
			mailimap_namespace_data_free(ns);
		/* libetpan says EXTENSION for a tagged NO or BAD: the session is
		 * fine, and without a namespace the folders sit at the top. */
		if (r == MAILIMAP_ERROR_EXTENSION && !was_cancelled(c)) {
			mb_log_warnx("imap: %s: NAMESPACE refused; folders taken to sit at the top",
			    c->host);
			*prefix_r = mb_xstrdup("");
			return 0;
		}
		return etpan_fail(c, r, "NAMESPACE", err);
	}
	if (ns != NULL && ns->ns_personal != NULL && ns->ns_personal->ns_data_list != NULL &&
	    clist_begin(ns->ns_personal->ns_data_list) != NULL)
		info = clist_content(clist_begin(ns->ns_personal->ns_data_list));
	if (info != NULL && info->ns_prefix != NULL) {
		struct mb_err derr = { 0 };

		if (mb_mutf7_decode(info->ns_prefix, prefix_r, &derr) == -1)
			*prefix_r = mb_xstrdup(info->ns_prefix);
		*delim_r = info->ns_delimiter;
	} else
		*prefix_r = mb_xstrdup("");
	if (ns != NULL)
		mailimap_namespace_data_free(ns);
	return 0;
}

/* ----------------------------------------------------------------- EXAMINE */

static int
status_uidnext(struct mb_imap *c, const char *mb, uint32_t *uidnext_r, struct mb_err *err)
{
	struct mailimap_status_att_list *sal = mailimap_status_att_list_new_empty();
	struct mailimap_mailbox_data_status *st = NULL;
	int r;

	*uidnext_r = 0;
	mailimap_status_att_list_add(sal, MAILIMAP_STATUS_ATT_UIDNEXT);
	call_begin(c);
	r = mailimap_status(c->etpan, mb, sal, &st);
	call_end(c);
	mailimap_status_att_list_free(sal);
	if (r != MAILIMAP_NO_ERROR) {
		if (st != NULL)
			mailimap_mailbox_data_status_free(st);
		return etpan_fail(c, r, "STATUS", err);
	}
	/* st_info_list may be NULL (a bare "* STATUS x ()"). */
	for (clistiter *it = st && st->st_info_list ? clist_begin(st->st_info_list) : NULL; it;
	    it = clist_next(it)) {
		struct mailimap_status_info *si = clist_content(it);

		if (si->st_att == MAILIMAP_STATUS_ATT_UIDNEXT)
			*uidnext_r = si->st_value;
	}
	if (st != NULL)
		mailimap_mailbox_data_status_free(st);
	return 0;
}

static int	folder_open(struct mb_imap *c, const char *folder, bool readwrite,
		    struct mb_imap_status *st_r, struct mb_err *err);

int
mb_imap_examine(struct mb_imap *imap, const char *folder, struct mb_imap_status *st_r,
    struct mb_err *err)
{
	return folder_open(imap, folder, false, st_r, err);
}

int
mb_imap_select(struct mb_imap *imap, const char *folder, struct mb_imap_status *st_r,
    struct mb_err *err)
{
	return folder_open(imap, folder, true, st_r, err);
}

static int
folder_open(struct mb_imap *imap, const char *folder, bool readwrite,
    struct mb_imap_status *st_r, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_selection_info *si;
	uint64_t hms = 0;
	char *mb = NULL;
	int r;

	memset(st_r, 0, sizeof(*st_r));
	if (check_usable(c, readwrite ? "SELECT" : "EXAMINE", err) == -1)
		return -1;
	if (mb_mutf7_encode(folder, &mb, err) == -1)
		return -1;
	c->selected = false;
	c->sel_modseq = false;
	call_begin(c);
	if (readwrite)
		r = c->condstore ? mailimap_select_condstore(c->etpan, mb, &hms) :
		    mailimap_select(c->etpan, mb);
	else if (c->condstore)
		r = mailimap_examine_condstore(c->etpan, mb, &hms);
	else
		r = mailimap_examine(c->etpan, mb);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR) {
		free(mb);
		if (r == MAILIMAP_ERROR_EXAMINE || r == MAILIMAP_ERROR_SELECT) {
			char text[160];

			peer_text(c, c->etpan->imap_response, text, sizeof(text));
			return mb_err_set(err, MB_E_NOTFOUND, "%s: folder '%s': %s", c->host, folder,
			    text);
		}
		return etpan_fail(c, r, readwrite ? "SELECT" : "EXAMINE", err);
	}
	si = c->etpan->imap_selection_info;
	if (si == NULL || si->sel_uidvalidity == 0) {
		free(mb);
		return mb_err_set(err, MB_E_PROTO, "%s: folder '%s': no UIDVALIDITY in the reply",
		    c->host, folder);
	}
	st_r->uidvalidity = si->sel_uidvalidity;
	st_r->uidnext = si->sel_uidnext;
	st_r->exists = si->sel_exists;
	st_r->highestmodseq = hms;
	if (st_r->uidnext == 0 && status_uidnext(c, mb, &st_r->uidnext, err) == -1) {
		free(mb);
		return -1;
	}
	free(mb);
	c->selected = true;
	c->sel_modseq = hms != 0;
	return 0;
}

int
mb_imap_noop(struct mb_imap *imap, struct mb_imap_status *st_r, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_selection_info *si;
	int r;

	memset(st_r, 0, sizeof(*st_r));
	if (check_usable(c, "NOOP", err) == -1)
		return -1;
	if (!c->selected)
		return mb_err_set(err, MB_E_INVALID, "NOOP without an examined folder");
	call_begin(c);
	r = mailimap_noop(c->etpan);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, "NOOP", err);
	/* libetpan keeps the untagged EXISTS and [UIDVALIDITY] of any reply here. */
	si = c->etpan->imap_selection_info;
	if (si == NULL || si->sel_uidvalidity == 0)
		return mb_err_set(err, MB_E_PROTO, "%s: NOOP: no folder selected any more",
		    c->host);
	st_r->uidvalidity = si->sel_uidvalidity;
	st_r->uidnext = si->sel_uidnext;
	st_r->exists = si->sel_exists;
	return 0;
}

/* ------------------------------------------------------------------ SEARCH */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int
mb_imap_uids_above(struct mb_imap *imap, uint32_t above, uint32_t **uids_r, size_t *n_r,
    struct mb_err *err)
{
	return mb_imap_uids_since(imap, above, NULL, uids_r, n_r, err);
}

int
mb_imap_uids_since(struct mb_imap *imap, uint32_t above, const struct mb_imap_day *since,
    uint32_t **uids_r, size_t *n_r, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_search_key *key;
	clist *res = NULL;
	uint32_t *v;
	size_t n = 0;
	int r;

	*uids_r = NULL;
	*n_r = 0;
	if (check_usable(c, "UID SEARCH", err) == -1)
		return -1;
	if (!c->selected)
		return mb_err_set(err, MB_E_INVALID, "UID SEARCH without an examined folder");
	if (above == UINT32_MAX) {
		*uids_r = mb_xmalloc(sizeof(uint32_t));
		return 0;
	}
	/* Plain UID SEARCH, never ESEARCH (libetpan cannot parse it). */
	key = mailimap_search_key_new_uid(mailimap_set_new_interval(above + 1, 0));
	if (since != NULL) {
		clist *both = clist_new();

		clist_append(both, key);
		clist_append(both, mailimap_search_key_new_since(mailimap_date_new(since->day,
		    since->month, since->year)));
		key = mailimap_search_key_new_multiple(both);
	}
	call_begin(c);
	r = mailimap_uid_search(c->etpan, NULL, key, &res);
	call_end(c);
	mailimap_search_key_free(key);
	if (r != MAILIMAP_NO_ERROR) {
		if (res != NULL)
			mailimap_search_result_free(res);
		return etpan_fail(c, r, "UID SEARCH", err);
	}
	v = mb_xcalloc((res ? (size_t)clist_count(res) : 0) + 1, sizeof(*v));
	for (clistiter *it = res ? clist_begin(res) : NULL; it; it = clist_next(it)) {
		uint32_t uid = *(uint32_t *)clist_content(it);

		/* "n:*" always matches the highest UID, even when it is < n. */
		if (uid > above)
			v[n++] = uid;
	}
	if (res != NULL)
		mailimap_search_result_free(res);
	qsort(v, n, sizeof(*v), cmp_u32);
	size_t u = 0;

	for (size_t i = 0; i < n; i++)	/* a server may repeat one */
		if (u == 0 || v[u - 1] != v[i])
			v[u++] = v[i];
	*uids_r = v;
	*n_r = u;
	return 0;
}

/* ------------------------------------------------------------------- FETCH */

struct uid_size {
	uint32_t	uid;
	uint64_t	size;
};

struct fetch {
	struct mb_imap		*c;
	uint32_t		 first, last;
	int			 pass;		/* 1: UID RFC822.SIZE; 2: the messages; 3: one UID */
	bool			 headers_only;	/* pass 2: this run is BODY.PEEK[HEADER] */
	uint64_t		 one_cap;	/* pass 3: a longer body is over the cap */
	bool			 over_cap;	/* pass 3: it was, and was not delivered */
	struct uid_size		*v;		/* pass 1 result */
	size_t			 n, cap;
	mb_imap_message_cb	 cb;
	void			*ctx;
	struct mb_err		*err;
	bool			 stopped;	/* the callback said stop */
	uint32_t		 stop_uid;
	struct mb_buf		 kw;
	size_t			 delivered;
};

static int64_t
date_time_to_unix(const struct mailimap_date_time *dt)
{
	struct tm tm = { 0 };
	int zone = dt->dt_zone, off;

	tm.tm_year = dt->dt_year - 1900;
	tm.tm_mon = dt->dt_month - 1;
	tm.tm_mday = dt->dt_day;
	tm.tm_hour = dt->dt_hour;
	tm.tm_min = dt->dt_min;
	tm.tm_sec = dt->dt_sec;
	/* dt_zone is +-HHMM as a number: -0530 is -530. */
	off = (zone / 100) * 3600 + (zone % 100) * 60;
	return (int64_t)timegm(&tm) - off;
}

/* Flags into *flags, keywords and unknown system flags appended to kw. */
static void
add_flags(struct mb_buf *kw, struct mailimap_msg_att_dynamic *dyn, unsigned *flags)
{
	for (clistiter *it = dyn && dyn->att_list ? clist_begin(dyn->att_list) : NULL; it;
	    it = clist_next(it)) {
		struct mailimap_flag_fetch *ff = clist_content(it);
		const char *word = NULL;

		if (ff == NULL || ff->fl_type != MAILIMAP_FLAG_FETCH_OTHER || ff->fl_flag == NULL)
			continue;	/* \Recent is per session: not a stored flag */
		switch (ff->fl_flag->fl_type) {
		case MAILIMAP_FLAG_SEEN:	*flags |= MB_FLAG_SEEN; break;
		case MAILIMAP_FLAG_ANSWERED:	*flags |= MB_FLAG_ANSWERED; break;
		case MAILIMAP_FLAG_FLAGGED:	*flags |= MB_FLAG_FLAGGED; break;
		case MAILIMAP_FLAG_DELETED:	*flags |= MB_FLAG_DELETED; break;
		case MAILIMAP_FLAG_DRAFT:	*flags |= MB_FLAG_DRAFT; break;
		case MAILIMAP_FLAG_KEYWORD:	word = ff->fl_flag->fl_data.fl_keyword; break;
		case MAILIMAP_FLAG_EXTENSION:	word = ff->fl_flag->fl_data.fl_extension; break;
		default: break;
		}
		if (word == NULL || *word == '\0')
			continue;
		if (kw->len > 0)
			mb_buf_addc(kw, ' ');
		if (ff->fl_flag->fl_type == MAILIMAP_FLAG_EXTENSION)
			mb_buf_addc(kw, '\\');	/* an unknown system flag */
		mb_buf_adds(kw, word);
	}
}

/* What every FETCH answer here may carry, whatever else was asked. */
struct att_common {
	uint32_t	uid;
	unsigned	flags;		/* enum mb_flag bits; keywords go to a buffer */
	uint64_t	modseq;		/* 0: none sent */
	bool		has_uid;
	bool		has_flags;
};

/* Take a UID, FLAGS or MODSEQ item into a (keywords into kw): false for any other. */
static bool
att_common(const struct mailimap_msg_att_item *item, struct mb_buf *kw, struct att_common *a)
{
	const struct mailimap_extension_data *ext;

	switch (item->att_type) {
	case MAILIMAP_MSG_ATT_ITEM_DYNAMIC:
		add_flags(kw, item->att_data.att_dyn, &a->flags);
		a->has_flags = true;
		return true;
	case MAILIMAP_MSG_ATT_ITEM_STATIC:
		if (item->att_data.att_static->att_type != MAILIMAP_MSG_ATT_UID)
			return false;
		a->uid = item->att_data.att_static->att_data.att_uid;
		a->has_uid = true;
		return true;
	case MAILIMAP_MSG_ATT_ITEM_EXTENSION:
		ext = item->att_data.att_extension_data;
		if (ext != NULL && ext->ext_extension != NULL &&
		    ext->ext_extension->ext_id == MAILIMAP_EXTENSION_CONDSTORE &&
		    ext->ext_type == MAILIMAP_CONDSTORE_TYPE_FETCH_DATA && ext->ext_data != NULL)
			a->modseq = ((const struct mailimap_condstore_fetch_mod_resp *)
			    ext->ext_data)->cs_modseq_value;
		return true;
	default:
		return false;
	}
}

/*
 * libetpan calls this once per FETCH response while the command runs, and
 * frees att afterwards: the body bytes are borrowed for the callback only,
 * never copied (and never free()d: they belong to an MMAPString).
 */
static void
on_msg_att(struct mailimap_msg_att *att, void *arg)
{
	struct fetch *f = arg;
	struct mb_imap_message m = { 0 };
	struct att_common a = { 0 };
	bool has_size = false, has_body = false;

	if (att == NULL || att->att_list == NULL || f->stopped)
		return;
	mb_buf_reset(&f->kw);
	for (clistiter *it = clist_begin(att->att_list); it; it = clist_next(it)) {
		struct mailimap_msg_att_item *item = clist_content(it);

		if (att_common(item, &f->kw, &a))
			continue;
		if (item->att_type == MAILIMAP_MSG_ATT_ITEM_STATIC) {
			struct mailimap_msg_att_static *st = item->att_data.att_static;

			switch (st->att_type) {
			case MAILIMAP_MSG_ATT_RFC822_SIZE:
				m.size = st->att_data.att_rfc822_size;
				has_size = true;
				break;
			case MAILIMAP_MSG_ATT_INTERNALDATE:
				if (st->att_data.att_internal_date != NULL)
					m.internaldate = date_time_to_unix(
					    st->att_data.att_internal_date);
				break;
			case MAILIMAP_MSG_ATT_BODY_SECTION:
				if (st->att_data.att_body_section != NULL) {
					m.raw = st->att_data.att_body_section->sec_body_part;
					m.raw_len = st->att_data.att_body_section->sec_length;
					has_body = true;
				}
				break;
			default:
				break;
			}
		}
	}
	m.uid = a.uid;
	m.flags = a.flags;
	m.modseq = a.modseq;
	/* Unsolicited FETCH (a flag change elsewhere) carries no UID or body. */
	if (!a.has_uid || m.uid < f->first || m.uid > f->last)
		return;
	if (f->pass == 1) {
		if (!has_size)
			return;
		if (f->n == f->cap) {
			f->cap = f->cap ? f->cap * 2 : 128;
			f->v = mb_xrealloc(f->v, f->cap * sizeof(*f->v));
		}
		f->v[f->n].uid = m.uid;
		f->v[f->n].size = m.size;
		f->n++;
		return;
	}
	if (!has_body)
		return;
	if (f->pass == 3 && m.raw_len > f->one_cap) {
		f->over_cap = true;	/* cut at cap + 1 octets: its header comes next */
		return;
	}
	if (m.raw == NULL)
		m.raw = "";	/* an empty literal or NIL */
	m.keywords = f->kw.data;
	m.headers_only = f->headers_only;
	f->delivered++;
	if (f->cb(&m, f->ctx) != 0) {
		f->stopped = true;
		f->stop_uid = m.uid;
	}
}

/* Both progress callbacks must be set, or libetpan ignores the handler. */
static void
on_progress(size_t current, size_t maximum, void *ctx)
{
}

static int
uid_fetch(struct fetch *f, uint32_t first, uint32_t last, struct mailimap_fetch_type *ft,
    struct mb_err *err)
{
	struct mb_imap *c = f->c;
	struct mailimap_set *set = mailimap_set_new_interval(first, last);
	clist *res = NULL;
	int r;

	mailimap_set_progress_callback(c->etpan, on_progress, on_progress, f);
	mailimap_set_msg_att_handler(c->etpan, on_msg_att, f);
	call_begin(c);
	r = mailimap_uid_fetch(c->etpan, set, ft, &res);
	call_end(c);
	mailimap_set_msg_att_handler(c->etpan, NULL, NULL);
	mailimap_set_progress_callback(c->etpan, NULL, NULL, NULL);
	mailimap_set_free(set);
	if (res != NULL)
		mailimap_fetch_list_free(res);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, "UID FETCH", err);
	return 0;
}

/* The message's attributes and its body: the header, the whole, or (upto > 0) its first upto octets. */
static struct mailimap_fetch_type *
message_fetch_type(struct mb_imap *c, bool headers_only, uint32_t upto)
{
	struct mailimap_fetch_type *ft = mailimap_fetch_type_new_fetch_att_list_empty();
	struct mailimap_section *sec = headers_only ? mailimap_section_new_header() :
	    mailimap_section_new(NULL);

	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_uid());
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_flags());
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_internaldate());
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_rfc822_size());
	if (c->sel_modseq)
		mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_modseq());
	/* PEEK, always: the read path never sets \Seen. */
	mailimap_fetch_type_new_fetch_att_list_add(ft, upto > 0 ?
	    mailimap_fetch_att_new_body_peek_section_partial(sec, 0, upto) :
	    mailimap_fetch_att_new_body_peek_section(sec));
	return ft;
}

static int
fetch_run(struct fetch *f, uint32_t first, uint32_t last, bool headers_only, struct mb_err *err)
{
	struct mailimap_fetch_type *ft = message_fetch_type(f->c, headers_only, 0);
	int r;

	f->pass = 2;
	f->headers_only = headers_only;
	r = uid_fetch(f, first, last, ft, err);
	mailimap_fetch_type_free(ft);
	return r;
}

/*
 * One UID under a cap (a push's range): one round trip where the sizes
 * first take two.  The body is asked up to size_cap + 1 octets
 * (BODY.PEEK[]<0.N>): a literal of at most size_cap octets is the whole
 * message; a longer one (the cut, or all of it from a server that ignores
 * the partial) is over the cap, and its header is fetched next, as the
 * two passes would.  Decided by the octets received, not by RFC822.SIZE.
 * What a message over the cap costs more: size_cap + 1 octets read and
 * dropped, for one message at most.
 */
static int
fetch_one(struct fetch *f, uint32_t uid, uint64_t size_cap, struct mb_err *err)
{
	struct mailimap_fetch_type *ft = message_fetch_type(f->c, false, (uint32_t)(size_cap + 1));
	int r;

	f->pass = 3;
	f->one_cap = size_cap;
	f->headers_only = false;
	r = uid_fetch(f, uid, uid, ft, err);
	mailimap_fetch_type_free(ft);
	if (r == 0 && f->over_cap && !f->stopped)
		r = fetch_run(f, uid, uid, true, err);
	return r;
}

static int
cmp_uid_size(const void *a, const void *b)
{
	const struct uid_size *x = a, *y = b;

	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* A UID FETCH of first:last can be sent: a live session, an examined folder, a sane range. */
static int
fetch_usable(struct mb_imap *c, uint32_t first, uint32_t last, struct mb_err *err)
{
	if (check_usable(c, "UID FETCH", err) == -1)
		return -1;
	if (!c->selected)
		return mb_err_set(err, MB_E_INVALID, "UID FETCH without an examined folder");
	if (first == 0 || first > last)
		return mb_err_set(err, MB_E_INVALID, "bad UID range %" PRIu32 ":%" PRIu32, first,
		    last);
	return 0;
}

int
mb_imap_fetch_range(struct mb_imap *imap, uint32_t first, uint32_t last, uint64_t size_cap,
    mb_imap_message_cb cb, void *ctx, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct fetch f = { .c = c, .first = first, .last = last, .cb = cb, .ctx = ctx,
	    .err = err, .kw = MB_BUF_INIT(IMAP_KEYWORDS_MAX) };
	int r = 0;

	if (fetch_usable(c, first, last, err) == -1)
		return -1;
	if (size_cap == UINT64_MAX) {	/* no cap: one round trip */
		r = fetch_run(&f, first, last, false, err);
		goto out;
	}
	if (first == last && size_cap < UINT32_MAX) {	/* one UID: one round trip too */
		r = fetch_one(&f, first, size_cap, err);
		goto out;
	}
	/*
	 * Sizes first (small: ~20 bytes a message), then the messages in runs
	 * of consecutive UIDs on the same side of the cap: normally one run,
	 * so two round trips per range, and callbacks stay in UID order.
	 * The interval of a run holds no other UID: UIDs only grow.
	 */
	struct mailimap_fetch_type *ft = mailimap_fetch_type_new_fetch_att_list_empty();

	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_uid());
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_rfc822_size());
	f.pass = 1;
	r = uid_fetch(&f, first, last, ft, err);
	mailimap_fetch_type_free(ft);
	if (r == -1)
		goto out;
	qsort(f.v, f.n, sizeof(*f.v), cmp_uid_size);
	for (size_t i = 0; i < f.n && !f.stopped && r == 0;) {
		bool big = f.v[i].size > size_cap;
		size_t j = i;

		while (j + 1 < f.n && (f.v[j + 1].size > size_cap) == big)
			j++;
		r = fetch_run(&f, f.v[i].uid, f.v[j].uid, big, err);
		i = j + 1;
	}
out:
	if (r == 0 && f.stopped)
		r = mb_err_set(err, MB_E_INTERNAL, "message callback failed at UID %" PRIu32,
		    f.stop_uid);
	mb_buf_release(&f.kw);
	free(f.v);
	return r;
}

/* ------------------------------------------------------------ flag changes */

struct changes {
	const struct mb_imap_changes	*cb;
	uint32_t			 first, last;
	struct mb_buf			 kw;
	bool				 stopped;	/* a callback said stop */
};

/* As on_msg_att, for UID FLAGS [MODSEQ] responses: handed over, never kept. */
static void
on_flags_att(struct mailimap_msg_att *att, void *arg)
{
	struct changes *ch = arg;
	struct att_common a = { 0 };
	struct mb_imap_flags m;

	if (att == NULL || att->att_list == NULL || ch->stopped)
		return;
	mb_buf_reset(&ch->kw);
	for (clistiter *it = clist_begin(att->att_list); it; it = clist_next(it))
		(void)att_common(clist_content(it), &ch->kw, &a);
	/* A FETCH without a UID (an unsolicited one) cannot be placed. */
	if (!a.has_uid || !a.has_flags || a.uid < ch->first || a.uid > ch->last)
		return;
	m = (struct mb_imap_flags){ .uid = a.uid, .flags = a.flags, .keywords = ch->kw.data,
	    .modseq = a.modseq };
	if (ch->cb->flags(&m, ch->cb->ctx) != 0)
		ch->stopped = true;
}

/* Hand each interval of a VANISHED set to the callback; '*' (0) is the top. */
static int
report_vanished(struct changes *ch, const struct mailimap_qresync_vanished *v)
{
	if (v == NULL || v->qr_known_uids == NULL || v->qr_known_uids->set_list == NULL)
		return 0;
	for (clistiter *it = clist_begin(v->qr_known_uids->set_list); it; it = clist_next(it)) {
		const struct mailimap_set_item *si = clist_content(it);
		uint32_t a = si->set_first ? si->set_first : UINT32_MAX;
		uint32_t b = si->set_last ? si->set_last : UINT32_MAX;

		if (ch->cb->vanished(a < b ? a : b, a < b ? b : a, ch->cb->ctx) != 0)
			return -1;
	}
	return 0;
}

/*
 * libetpan hands back the first VANISHED of the reply; any other (an
 * unsolicited one for an expunge during the command) stays in the
 * session's response info: report those too.
 */
static int
report_other_vanished(struct mb_imap *c, struct changes *ch)
{
	struct mailimap_response_info *ri = c->etpan->imap_response_info;

	for (clistiter *it = ri && ri->rsp_extension_list ? clist_begin(ri->rsp_extension_list) :
	    NULL; it; it = clist_next(it)) {
		struct mailimap_extension_data *e = clist_content(it);

		if (e != NULL && e->ext_extension != NULL &&
		    e->ext_extension->ext_id == MAILIMAP_EXTENSION_QRESYNC &&
		    e->ext_type == MAILIMAP_QRESYNC_TYPE_VANISHED &&
		    report_vanished(ch, e->ext_data) == -1)
			return -1;
	}
	return 0;
}

/*
 * The UID FETCH itself over set (taken over): plain, CHANGEDSINCE, or
 * CHANGEDSINCE with VANISHED.
 */
static int
changes_fetch(struct mb_imap *c, struct changes *ch, struct mailimap_set *set, uint64_t since,
    struct mailimap_qresync_vanished **van_r)
{
	struct mailimap_fetch_type *ft = mailimap_fetch_type_new_fetch_att_list_empty();
	clist *res = NULL;
	int r;

	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_uid());
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_flags());
	mailimap_set_progress_callback(c->etpan, on_progress, on_progress, ch);
	mailimap_set_msg_att_handler(c->etpan, on_flags_att, ch);
	call_begin(c);
	if (since == 0)
		r = mailimap_uid_fetch(c->etpan, set, ft, &res);
	else if (ch->cb->vanished != NULL)
		r = mailimap_uid_fetch_qresync(c->etpan, set, ft, since, &res, van_r);
	else
		r = mailimap_uid_fetch_changedsince(c->etpan, set, ft, since, &res);
	call_end(c);
	mailimap_set_msg_att_handler(c->etpan, NULL, NULL);
	mailimap_set_progress_callback(c->etpan, NULL, NULL, NULL);
	mailimap_fetch_type_free(ft);
	mailimap_set_free(set);
	if (res != NULL)
		mailimap_fetch_list_free(res);
	return r;
}

int
mb_imap_fetch_changes(struct mb_imap *imap, uint32_t first, uint32_t last, uint64_t since,
    const struct mb_imap_changes *cb, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct changes ch = { .cb = cb, .first = first, .last = last,
	    .kw = MB_BUF_INIT(IMAP_KEYWORDS_MAX) };
	struct mailimap_qresync_vanished *van = NULL;
	int r;

	if (fetch_usable(c, first, last, err) == -1)
		return -1;
	if (since != 0 && !c->sel_modseq)
		return mb_err_set(err, MB_E_INVALID, "CHANGEDSINCE in a folder without HIGHESTMODSEQ");
	/* VANISHED without QRESYNC on is a BAD, and a BAD kills the session. */
	if (cb->vanished != NULL && (since == 0 || !c->qresync))
		return mb_err_set(err, MB_E_INVALID, "VANISHED needs CHANGEDSINCE and QRESYNC");
	r = changes_fetch(c, &ch, mailimap_set_new_interval(first, last), since, &van);
	if (r != MAILIMAP_NO_ERROR) {
		/* Not van: on a tagged NO libetpan has freed it already (and left
		 * the pointer set); on other errors it was never set. */
		mb_buf_release(&ch.kw);
		return etpan_fail(c, r, "UID FETCH", err);
	}
	r = 0;
	if (!ch.stopped && cb->vanished != NULL &&
	    (report_vanished(&ch, van) == -1 || report_other_vanished(c, &ch) == -1))
		ch.stopped = true;
	if (van != NULL)
		mailimap_qresync_vanished_free(van);
	mb_buf_release(&ch.kw);
	if (ch.stopped)
		r = mb_err_set(err, MB_E_INTERNAL, "flag change callback failed");
	return r;
}

int
mb_imap_fetch_flag_set(struct mb_imap *imap, const struct mb_imap_uidrun *runs, size_t n,
    const struct mb_imap_changes *cb, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct changes ch = { .cb = cb, .kw = MB_BUF_INIT(IMAP_KEYWORDS_MAX) };
	struct mailimap_set *set;
	int r;

	if (n == 0 || cb->vanished != NULL)
		return mb_err_set(err, MB_E_INVALID, "flag fetch: no UID set, or VANISHED asked");
	for (size_t i = 0; i < n; i++)
		if (runs[i].first > runs[i].last || (i > 0 && runs[i].first <= runs[i - 1].last))
			return mb_err_set(err, MB_E_INVALID, "flag fetch: bad UID set at run %zu", i);
	if (fetch_usable(c, runs[0].first, runs[n - 1].last, err) == -1)
		return -1;
	/* Answers outside first:last (unsolicited) are not handed over; the
	 * caller's set is exact, so one between two runs is merely current. */
	ch.first = runs[0].first;
	ch.last = runs[n - 1].last;
	set = mailimap_set_new_empty();
	for (size_t i = 0; i < n; i++)
		if (mailimap_set_add_interval(set, runs[i].first, runs[i].last) !=
		    MAILIMAP_NO_ERROR) {
			mailimap_set_free(set);
			mb_buf_release(&ch.kw);
			return mb_err_set(err, MB_E_INTERNAL, "flag fetch: out of memory");
		}
	r = changes_fetch(c, &ch, set, 0, NULL);
	mb_buf_release(&ch.kw);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, "UID FETCH", err);
	if (ch.stopped)
		return mb_err_set(err, MB_E_INTERNAL, "flag change callback failed");
	return 0;
}

/* ------------------------------------------------------------------ writes */

/*
 * The write calls (syncd's write process only).  Each names exactly one UID
 * of the SELECTed folder; nothing here ever sends a bare EXPUNGE.
 */

static struct mailimap_flag_list *
flag_list(unsigned bits)
{
	struct mailimap_flag_list *fl = mailimap_flag_list_new_empty();

	if (bits & MB_FLAG_SEEN)
		mailimap_flag_list_add(fl, mailimap_flag_new_seen());
	if (bits & MB_FLAG_ANSWERED)
		mailimap_flag_list_add(fl, mailimap_flag_new_answered());
	if (bits & MB_FLAG_FLAGGED)
		mailimap_flag_list_add(fl, mailimap_flag_new_flagged());
	if (bits & MB_FLAG_DELETED)
		mailimap_flag_list_add(fl, mailimap_flag_new_deleted());
	if (bits & MB_FLAG_DRAFT)
		mailimap_flag_list_add(fl, mailimap_flag_new_draft());
	return fl;
}

/* One UID STORE uid +FLAGS.SILENT or -FLAGS.SILENT of fl (taken over). */
static int
store_list(struct mb_imap *c, uint32_t uid, struct mailimap_flag_list *fl, bool add,
    struct mb_err *err)
{
	struct mailimap_set *set;
	struct mailimap_store_att_flags *sa;
	int r;

	set = mailimap_set_new_single(uid);
	sa = add ? mailimap_store_att_flags_new_add_flags_silent(fl) :
	    mailimap_store_att_flags_new_remove_flags_silent(fl);
	call_begin(c);
	r = mailimap_uid_store(c->etpan, set, sa);
	call_end(c);
	mailimap_store_att_flags_free(sa);
	mailimap_set_free(set);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, "UID STORE", err);
	return 0;
}

static int
store_one(struct mb_imap *c, uint32_t uid, unsigned bits, bool add, struct mb_err *err)
{
	return bits == 0 ? 0 : store_list(c, uid, flag_list(bits), add, err);
}

int
mb_imap_store_flags(struct mb_imap *imap, uint32_t uid, unsigned add, unsigned remove,
    struct mb_err *err)
{
	if (check_usable(imap, "UID STORE", err) == -1)
		return -1;
	if (!imap->selected)
		return mb_err_set(err, MB_E_INVALID, "UID STORE without a selected folder");
	if (store_one(imap, uid, add, true, err) == -1)
		return -1;
	return store_one(imap, uid, remove, false, err);
}

bool
mb_imap_keyword_permanent(struct mb_imap *imap, const char *kw)
{
	struct mailimap_selection_info *si;

	if (imap == NULL || !imap->selected || imap->etpan == NULL)
		return false;
	si = imap->etpan->imap_selection_info;
	if (si == NULL || si->sel_perm_flags == NULL)
		return si != NULL;	/* no PERMANENTFLAGS: all are (RFC 3501, 7.1) */
	for (clistiter *it = clist_begin(si->sel_perm_flags); it; it = clist_next(it)) {
		struct mailimap_flag_perm *fp = clist_content(it);

		if (fp == NULL)
			continue;
		if (fp->fl_type == MAILIMAP_FLAG_PERM_ALL)
			return true;
		if (fp->fl_type == MAILIMAP_FLAG_PERM_FLAG && fp->fl_flag != NULL &&
		    fp->fl_flag->fl_type == MAILIMAP_FLAG_KEYWORD &&
		    strcasecmp(fp->fl_flag->fl_data.fl_keyword, kw) == 0)
			return true;
	}
	return false;
}

/* One UID STORE of keywords: added (+FLAGS.SILENT) or removed (-FLAGS.SILENT). */
static int
store_keywords_one(struct mb_imap *c, uint32_t uid, const char *const *kw, size_t n, bool add,
    struct mb_err *err)
{
	struct mailimap_flag_list *fl;

	if (n == 0)
		return 0;
	fl = mailimap_flag_list_new_empty();
	for (size_t i = 0; i < n; i++)
		mailimap_flag_list_add(fl, mailimap_flag_new_flag_keyword(mb_xstrdup(kw[i])));
	return store_list(c, uid, fl, add, err);
}

int
mb_imap_store_keywords(struct mb_imap *imap, uint32_t uid, const char *const *add,
    size_t n_add, const char *const *remove, size_t n_remove, struct mb_err *err)
{
	if (check_usable(imap, "UID STORE", err) == -1)
		return -1;
	if (!imap->selected)
		return mb_err_set(err, MB_E_INVALID, "UID STORE without a selected folder");
	if (store_keywords_one(imap, uid, add, n_add, true, err) == -1)
		return -1;
	return store_keywords_one(imap, uid, remove, n_remove, false, err);
}

int
mb_imap_fetch_flags(struct mb_imap *imap, uint32_t uid, unsigned *flags_r, bool *found_r,
    struct mb_err *err)
{
	return mb_imap_fetch_keywords(imap, uid, flags_r, NULL, found_r, err);
}

int
mb_imap_fetch_keywords(struct mb_imap *imap, uint32_t uid, unsigned *flags_r,
    char **keywords_r, bool *found_r, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_fetch_type *ft;
	struct mailimap_set *set;
	struct fetch f = { .c = c, .kw = MB_BUF_INIT(IMAP_KEYWORDS_MAX) };
	clist *res = NULL;
	int r;

	*flags_r = 0;
	*found_r = false;
	if (keywords_r != NULL)
		*keywords_r = NULL;
	if (check_usable(c, "UID FETCH", err) == -1)
		return -1;
	if (!c->selected)
		return mb_err_set(err, MB_E_INVALID, "UID FETCH without a selected folder");
	ft = mailimap_fetch_type_new_fetch_att_list_empty();
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_uid());
	mailimap_fetch_type_new_fetch_att_list_add(ft, mailimap_fetch_att_new_flags());
	set = mailimap_set_new_single(uid);
	call_begin(c);
	r = mailimap_uid_fetch(c->etpan, set, ft, &res);
	call_end(c);
	mailimap_set_free(set);
	mailimap_fetch_type_free(ft);
	if (r != MAILIMAP_NO_ERROR) {
		if (res != NULL)
			mailimap_fetch_list_free(res);
		mb_buf_release(&f.kw);
		return etpan_fail(c, r, "UID FETCH", err);
	}
	for (clistiter *it = res ? clist_begin(res) : NULL; it; it = clist_next(it)) {
		struct mailimap_msg_att *att = clist_content(it);
		struct mailimap_msg_att_dynamic *dyn = NULL;
		bool match = false;

		for (clistiter *i2 = att && att->att_list ? clist_begin(att->att_list) : NULL; i2;
		    i2 = clist_next(i2)) {
			struct mailimap_msg_att_item *item = clist_content(i2);

			if (item->att_type == MAILIMAP_MSG_ATT_ITEM_DYNAMIC)
				dyn = item->att_data.att_dyn;
			else if (item->att_type == MAILIMAP_MSG_ATT_ITEM_STATIC &&
			    item->att_data.att_static->att_type == MAILIMAP_MSG_ATT_UID &&
			    item->att_data.att_static->att_data.att_uid == uid)
				match = true;
		}
		if (match && dyn != NULL) {
			add_flags(&f.kw, dyn, flags_r);
			*found_r = true;
		}
	}
	if (res != NULL)
		mailimap_fetch_list_free(res);
	if (keywords_r != NULL && *found_r)
		*keywords_r = mb_xstrdup(f.kw.data != NULL ? f.kw.data : "");
	mb_buf_release(&f.kw);
	return 0;
}

/* The single UID a COPYUID/APPENDUID set names, or 0. */
static uint32_t
set_single(struct mailimap_set *s)
{
	struct mailimap_set_item *it;

	if (s == NULL || s->set_list == NULL || clist_count(s->set_list) != 1)
		return 0;
	it = clist_content(clist_begin(s->set_list));
	return it->set_first == it->set_last ? it->set_first : 0;
}

int
mb_imap_move(struct mb_imap *imap, uint32_t uid, const char *dest, bool allow_move,
    struct mb_imap_moved *r_out, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_set *set, *src = NULL, *dst = NULL;
	uint32_t uidv = 0;
	char *mb = NULL;
	int r;

	memset(r_out, 0, sizeof(*r_out));
	if (check_usable(c, "UID MOVE", err) == -1)
		return -1;
	if (!c->selected)
		return mb_err_set(err, MB_E_INVALID, "UID MOVE without a selected folder");
	if (!mailimap_has_extension(c->etpan, "UIDPLUS"))
		return mb_err_set(err, MB_E_CONFIG,
		    "%s: the server does not offer UIDPLUS, so a move cannot name the new UID "
		    "or expunge only this message; refused", c->host);
	if (mb_mutf7_encode(dest, &mb, err) == -1)
		return -1;
	set = mailimap_set_new_single(uid);
	if (allow_move && mailimap_has_extension(c->etpan, "MOVE")) {
		r_out->used_move = true;
		call_begin(c);
		r = mailimap_uidplus_uid_move(c->etpan, set, mb, &uidv, &src, &dst);
		call_end(c);
		if (r != MAILIMAP_NO_ERROR) {
			mailimap_set_free(set);
			free(mb);
			return etpan_fail(c, r, "UID MOVE", err);
		}
	} else {
		call_begin(c);
		r = mailimap_uidplus_uid_copy(c->etpan, set, mb, &uidv, &src, &dst);
		call_end(c);
		if (r != MAILIMAP_NO_ERROR) {
			mailimap_set_free(set);
			free(mb);
			return etpan_fail(c, r, "UID COPY", err);
		}
		r_out->copied = true;
		r_out->dest_uidvalidity = uidv;
		r_out->dest_uid = set_single(dst);
		if (store_one(c, uid, MB_FLAG_DELETED, true, err) == -1) {
			mailimap_set_free(set);
			free(mb);
			goto out;
		}
		r_out->marked_deleted = true;
		call_begin(c);
		r = mailimap_uid_expunge(c->etpan, set);	/* this one UID, never a bare EXPUNGE */
		call_end(c);
		if (r != MAILIMAP_NO_ERROR) {
			mailimap_set_free(set);
			free(mb);
			etpan_fail(c, r, "UID EXPUNGE", err);
			goto out;
		}
	}
	mailimap_set_free(set);
	free(mb);
	r_out->dest_uidvalidity = uidv;
	r_out->dest_uid = set_single(dst);
	r = 0;
	goto done;
out:
	r = -1;
done:
	if (src != NULL)
		mailimap_set_free(src);
	if (dst != NULL)
		mailimap_set_free(dst);
	return r;
}

int
mb_imap_append(struct mb_imap *imap, const char *folder, const char *raw, size_t len,
    unsigned flags, struct mb_imap_appended *r_out, struct mb_err *err)
{
	struct mb_imap *c = imap;
	struct mailimap_flag_list *fl;
	uint32_t uidv = 0, uid = 0;
	char *mb = NULL;
	int r;

	memset(r_out, 0, sizeof(*r_out));
	if (check_usable(c, "APPEND", err) == -1)
		return -1;
	if (mb_mutf7_encode(folder, &mb, err) == -1)
		return -1;
	fl = flag_list(flags);
	call_begin(c);
	/* Without UIDPLUS the server sends no APPENDUID and both stay 0. */
	r = mailimap_uidplus_append(c->etpan, mb, fl, NULL, raw, len, &uidv, &uid);
	call_end(c);
	mailimap_flag_list_free(fl);
	free(mb);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r, "APPEND", err);
	r_out->uidvalidity = uidv;
	r_out->uid = uid;
	return 0;
}

/* -------------------------------------------------------------------- IDLE */

/*
 * IDLE (RFC 2177) for syncd's watcher.  libetpan's mailimap_idle() sends
 * IDLE and waits for the continuation, and mailimap_idle_done() sends DONE
 * and parses up to the tagged reply; both are used as they are.  What
 * libetpan lacks is a way to read what the server sends *while* idling
 * without ending the IDLE: mailimap_idle_done() is the only reader.  Ending
 * IDLE on every line would cost a round trip each time Dovecot says "* OK
 * Still here" (every two minutes), so mb_imap_idle_read() reads one line
 * with mailimap_read_line() and classifies it here.  Untagged lines during
 * IDLE are simple (EXISTS, EXPUNGE, VANISHED, FETCH of flags, OK); a line
 * ending in a literal is not expected, and desynchronises the session (it
 * is marked dead, and the watcher reconnects).
 */

int
mb_imap_idle_start(struct mb_imap *imap, struct mb_err *err)
{
	struct mb_imap *c = imap;
	int r, fd, on = 1, idle_s = 300, intvl_s = 30, cnt = 4;

	if (check_usable(c, "IDLE", err) == -1)
		return -1;
	if (!c->selected)
		return mb_err_set(err, MB_E_INVALID, "IDLE without an examined folder");
	if (!mailimap_has_idle(c->etpan))
		return mb_err_set(err, MB_E_CONFIG, "%s: server does not offer IDLE", c->host);
	/* A peer that vanished without a FIN is noticed in about 7 minutes
	 * without any IMAP traffic (300 s idle, then 4 probes 30 s apart). */
	fd = mailimap_idle_get_fd(c->etpan);
	if (fd >= 0) {
		(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl_s, sizeof(intvl_s));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	}
	call_begin(c);
	r = mailimap_idle(c->etpan);
	call_end(c);
	if (r == MAILIMAP_NO_ERROR)
		return 0;
	if (r == MAILIMAP_ERROR_STREAM || was_cancelled(c))
		return etpan_fail(c, r, "IDLE", err);
	/* A tagged BAD or NO instead of the continuation: the server will not
	 * idle.  libetpan has read the reply; the session is not trusted further. */
	{
		char text[160];

		peer_text(c, c->etpan->imap_response, text, sizeof(text));
		c->dead = true;
		return mb_err_set(err, MB_E_CONFIG, "%s: IDLE refused%s%s", c->host,
		    *text ? ": " : "", text);
	}
}

int
mb_imap_idle_fd(struct mb_imap *imap)
{
	if (imap->dead || imap->etpan->imap_stream == NULL)
		return -1;
	return mailimap_idle_get_fd(imap->etpan);
}

bool
mb_imap_idle_buffered(struct mb_imap *imap)
{
	return !imap->dead && imap->etpan->imap_stream != NULL &&
	    imap->etpan->imap_stream->read_buffer_len > 0;
}

int
mb_imap_notify_set(struct mb_imap *imap, const char *const *others, size_t n,
    struct mb_err *err)
{
	struct mb_imap *c = imap;
	static const char events[] = "(MessageNew MessageExpunge FlagChange)";
	struct mb_buf cmd = MB_BUF_INIT(64 * 1024);
	char text[160];
	int r, bad = 0;

	if (check_usable(c, "NOTIFY", err) == -1)
		return -1;
	if (!mailimap_has_extension(c->etpan, "NOTIFY"))
		return mb_err_set(err, MB_E_CONFIG, "%s: server does not offer NOTIFY", c->host);
	bad |= mb_buf_adds(&cmd, "NOTIFY SET (selected ");
	bad |= mb_buf_adds(&cmd, events);
	bad |= mb_buf_adds(&cmd, ")");
	if (n > 0) {
		bad |= mb_buf_adds(&cmd, " (mailboxes");
		for (size_t i = 0; i < n; i++) {
			char *mb = NULL;

			if (mb_mutf7_encode(others[i], &mb, err) == -1) {
				mb_buf_release(&cmd);
				return -1;
			}
			bad |= mb_buf_adds(&cmd, " \"");
			for (const char *p = mb; *p; p++) {
				if (*p == '"' || *p == '\\')
					bad |= mb_buf_addc(&cmd, '\\');
				bad |= mb_buf_addc(&cmd, *p);
			}
			bad |= mb_buf_adds(&cmd, "\"");
			free(mb);
		}
		bad |= mb_buf_adds(&cmd, " ");
		bad |= mb_buf_adds(&cmd, events);
		bad |= mb_buf_adds(&cmd, ")");
	}
	if (bad) {
		mb_buf_release(&cmd);
		return mb_err_set(err, MB_E_INVALID, "NOTIFY: too many folders for one command");
	}
	/* libetpan has no NOTIFY: sent as a custom command, answered OK or not. */
	call_begin(c);
	r = mailimap_custom_command(c->etpan, cmd.data);
	call_end(c);
	mb_buf_release(&cmd);
	if (r == MAILIMAP_NO_ERROR)
		return 0;
	if (is_session_fatal(r) || was_cancelled(c))
		return etpan_fail(c, r, "NOTIFY", err);
	peer_text(c, c->etpan->imap_response, text, sizeof(text));
	return mb_err_set(err, MB_E_CONFIG, "%s: NOTIFY refused%s%s", c->host, *text ? ": " : "",
	    text);
}

/* The mailbox of "* STATUS name (...)": a quoted string or an atom, decoded. */
static char *
status_mailbox(const char *p)
{
	struct mb_buf b = MB_BUF_INIT(4096);
	struct mb_err err = { 0 };
	char *utf8 = NULL;

	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			mb_buf_addc(&b, *p);
		}
	} else
		while (*p && *p != ' ' && *p != '(')
			mb_buf_addc(&b, *p++);
	if (mb_mutf7_decode(b.data, &utf8, &err) == -1)
		utf8 = NULL;
	mb_buf_release(&b);
	return utf8;
}

/* "* <n> WORD", "* WORD ...": the number (0 if none) and the word. */
static enum mb_imap_idle_event
idle_classify(const char *line, uint32_t *n_r)
{
	const char *p = line + 2;
	unsigned long n = 0;
	char *end;

	*n_r = 0;
	if (*p >= '0' && *p <= '9') {
		n = strtoul(p, &end, 10);
		p = end;
		while (*p == ' ')
			p++;
		*n_r = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
		if (strncasecmp(p, "EXISTS", 6) == 0)
			return MB_IMAP_IDLE_EXISTS;
		if (strncasecmp(p, "EXPUNGE", 7) == 0)
			return MB_IMAP_IDLE_EXPUNGE;
		if (strncasecmp(p, "FETCH", 5) == 0)
			return MB_IMAP_IDLE_FLAGS;
		return MB_IMAP_IDLE_NOTHING;	/* RECENT */
	}
	if (strncasecmp(p, "VANISHED", 8) == 0)
		return MB_IMAP_IDLE_EXPUNGE;
	if (strncasecmp(p, "STATUS ", 7) == 0)
		return MB_IMAP_IDLE_STATUS;
	if (strncasecmp(p, "BYE", 3) == 0)
		return MB_IMAP_IDLE_ENDED;
	return MB_IMAP_IDLE_NOTHING;	/* OK Still here, FLAGS, CAPABILITY... */
}

int
mb_imap_idle_read(struct mb_imap *imap, enum mb_imap_idle_event *ev_r, uint32_t *n_r,
    char **mailbox_r, struct mb_err *err)
{
	struct mb_imap *c = imap;
	char text[160];
	char *line;
	size_t len;

	*ev_r = MB_IMAP_IDLE_NOTHING;
	*n_r = 0;
	*mailbox_r = NULL;
	if (check_usable(c, "IDLE", err) == -1)
		return -1;
	call_begin(c);
	line = mailimap_read_line(c->etpan);
	call_end(c);
	if (line == NULL)
		return etpan_fail(c, MAILIMAP_ERROR_STREAM, "IDLE", err);
	len = strlen(line);
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	if (len > 0 && line[len - 1] == '}') {
		c->dead = true;
		return mb_err_set(err, MB_E_PROTO, "%s: IDLE: a literal in an untagged response",
		    c->host);
	}
	if (strncmp(line, "* ", 2) == 0) {
		*ev_r = idle_classify(line, n_r);
		if (*ev_r == MB_IMAP_IDLE_STATUS &&
		    (*mailbox_r = status_mailbox(line + 9)) == NULL)
			*ev_r = MB_IMAP_IDLE_NOTHING;	/* a name that does not decode: no folder of ours */
		if (*ev_r == MB_IMAP_IDLE_ENDED) {
			peer_text(c, line, text, sizeof(text));
			c->dead = true;
			return mb_err_set(err, MB_E_TEMP, "%s: server ended the session (%s)", c->host,
			    text);
		}
		return 0;
	}
	if (line[0] == '+')
		return 0;
	/* A tagged reply: the server ended the IDLE itself (RFC 2177 allows it). */
	*ev_r = MB_IMAP_IDLE_ENDED;
	return 0;
}

int
mb_imap_idle_done(struct mb_imap *imap, struct mb_err *err)
{
	struct mb_imap *c = imap;
	int r;

	if (check_usable(c, "DONE", err) == -1)
		return -1;
	call_begin(c);
	r = mailimap_idle_done(c->etpan);
	call_end(c);
	if (r != MAILIMAP_NO_ERROR)
		return etpan_fail(c, r == MAILIMAP_ERROR_EXTENSION ? MAILIMAP_ERROR_PROTOCOL : r,
		    "DONE", err);
	return 0;
}
