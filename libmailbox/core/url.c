/*
 * URLs the daemons fetch from (mcpd's JWKS and issuer metadata, syncd's
 * OAuth token endpoint): see include/mailbox/url.h.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mailbox/url.h"

bool
mb_host_is_loopback(const char *host, size_t len)
{
	char buf[64];
	struct in_addr a4;
	struct in6_addr a6;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, host, len);
	buf[len] = '\0';
	if (strcasecmp(buf, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, buf, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, buf, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return false;
}

int
mb_url_fetchable(const char *url, const char *what, struct mb_err *err)
{
	const char *auth, *end, *host, *hend;

	if (strncasecmp(url, "https://", 8) == 0)
		auth = url + 8;
	else if (strncasecmp(url, "http://", 7) == 0)
		auth = url + 7;
	else
		return mb_err_set(err, MB_E_CONFIG, "%s '%s' is not an https URL", what, url);
	end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', (size_t)(end - auth)) != NULL)
		return mb_err_set(err, MB_E_CONFIG, "%s: user info in the URL is not allowed", what);
	host = auth;
	if (*host == '[') {
		host++;
		hend = memchr(host, ']', (size_t)(end - host));
		if (hend == NULL)
			return mb_err_set(err, MB_E_CONFIG, "%s '%s': bad IPv6 literal", what, url);
	} else {
		hend = memchr(host, ':', (size_t)(end - host));
		if (hend == NULL)
			hend = end;
	}
	if (hend == host)
		return mb_err_set(err, MB_E_CONFIG, "%s '%s' has no host", what, url);
	if (url[4] == ':' && !mb_host_is_loopback(host, (size_t)(hend - host)))
		return mb_err_set(err, MB_E_CONFIG,
		    "%s '%s': plain http is only allowed to a loopback host; use https", what, url);
	return 0;
}
