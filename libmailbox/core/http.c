/*
 * The capped body sink of the daemons' libcurl clients: include/mailbox/http.h.
 */
#include <strings.h>

#include "mailbox/http.h"

size_t
mb_http_sink_write(char *p, size_t size, size_t n, void *arg)
{
	struct mb_http_sink *s = arg;

	if (mb_buf_add(&s->body, p, size * n) == -1) {
		s->toobig = true;
		return 0;	/* makes curl fail the transfer */
	}
	return size * n;
}

CURL *
mb_http_new(const char *url, struct mb_http_sink *sink, char *errbuf, struct curl_slist **hdrs_r)
{
	CURL *h = curl_easy_init();

	*hdrs_r = NULL;
	if (h == NULL)
		return NULL;
	*hdrs_r = curl_slist_append(NULL, "Accept: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	/* A redirect could take a secret or a key fetch somewhere else. */
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, strncasecmp(url, "https:", 6) == 0 ?
	    "https" : "http");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)sink->body.max);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs_r);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mb_http_sink_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	return h;
}
