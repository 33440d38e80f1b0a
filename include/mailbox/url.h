/*
 * Checks on a URL a daemon fetches secrets or keys from: https, or plain
 * http to a loopback host only (a test server, a local proxy).
 */
#ifndef MAILBOX_URL_H
#define MAILBOX_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "mailbox/err.h"

/*
 * Whether url is https, or http to a loopback host, with no user info.
 * Returns 0, or -1 with err set (MB_E_CONFIG) saying why not; what names the
 * setting.
 */
int	mb_url_fetchable(const char *url, const char *what, struct mb_err *err);

/* Whether host (a name, an IPv4 or IPv6 literal without brackets) is loopback. */
bool	mb_host_is_loopback(const char *host, size_t len);

#endif
