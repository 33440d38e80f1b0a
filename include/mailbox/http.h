/*
 * What the daemons' libcurl clients share (mcpd's JWKS fetch, syncd's OAuth
 * token requests): a capped body sink and one way to set a handle up.
 */
#ifndef MAILBOX_HTTP_H
#define MAILBOX_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "mailbox/buf.h"

struct mb_http_sink {
	struct mb_buf	 body;		/* MB_BUF_INIT(the cap) */
	bool		 toobig;	/* the answer passed the cap */
};

/* CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA a struct mb_http_sink:
 * appends, or fails the transfer (returns 0) past the body's cap. */
size_t	mb_http_sink_write(char *p, size_t size, size_t n, void *sink);

/*
 * A curl handle for one request to url, as both daemons want it: only url's
 * own scheme (https, or http), no redirects, no signals, "Accept:
 * application/json", the answer into sink (capped at its body's max) and
 * curl's message into errbuf (CURL_ERROR_SIZE bytes).  *hdrs_r is the
 * caller's (curl_slist_free_all after curl_easy_cleanup).  NULL when curl
 * cannot make a handle.
 */
CURL	*mb_http_new(const char *url, struct mb_http_sink *sink, char *errbuf,
	    struct curl_slist **hdrs_r);

#endif
