/*
 * auth_check: mcpd's authorization decision on the command line, for
 * tests/integration/test_auth.sh.  Reads the MCP_* settings from the
 * environment (as mcpd does), then one request per line on stdin, and
 * answers each on one stdout line:
 *
 *	<token>			Authorization: Bearer <token>
 *	@header <value>		the header with exactly this value
 *	@noauth			no header at all
 *	@scope <s>		later requests need scope s ("-": the read scope)
 *	@advance <n>		move the clock n seconds ahead (the JWKS cache's
 *				and the token checks' clock)
 *	@stats			"fetches=N failures=M" of the JWKS cache
 *	@metadata		the RFC 9728 document and its URL
 *	@parallel <n> <token>	n threads check the token at once, as
 *				libmicrohttpd's pool would: "parallel allow=A deny=D"
 *
 *	allow status=200 sub=<sub> client_id=<id|-> scope=<s> write=<0|1>
 *	deny status=<401|403|503> www-authenticate=<value|-> reason=<why>
 *
 * The key set is fetched over HTTP by the real jwks.c, on first use.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "mailbox/log.h"

static long long clock_offset;

static time_t
test_clock(void)
{
	return time(NULL) + (time_t)clock_offset;
}

static const char *
env(const char *name)
{
	return getenv(name);
}

static void
answer(struct mcp_auth *auth, const char *value, const char *scope)
{
	struct mcp_auth_result r;

	mcp_auth_check(auth, value, scope, &r);
	if (r.status == 200)
		printf("allow status=200 sub=%s client_id=%s scope=%s write=%d\n",
		    r.sub ? r.sub : "-", r.client_id ? r.client_id : "-",
		    r.scope ? r.scope : "-", r.may_write);
	else
		printf("deny status=%u www-authenticate=%s reason=%s\n", r.status,
		    r.www_authenticate ? r.www_authenticate : "-", r.reason);
	mcp_auth_result_release(&r);
}

struct par {
	struct mcp_auth	*auth;
	const char	*value;
	unsigned	 status;
};

static void *
par_run(void *arg)
{
	struct par *p = arg;
	struct mcp_auth_result r;

	mcp_auth_check(p->auth, p->value, NULL, &r);
	p->status = r.status;
	mcp_auth_result_release(&r);
	return NULL;
}

/* n threads released together on one token. */
static void
parallel(struct mcp_auth *auth, const char *arg)
{
	struct par p[32];
	pthread_t t[32];
	char *end, *value;
	long n = strtol(arg, &end, 10);
	size_t len;
	int i, allow = 0;

	if (n < 1 || n > 32 || *end != ' ') {
		printf("parallel: bad count\n");
		return;
	}
	len = strlen(end + 1) + 8;
	value = malloc(len);
	snprintf(value, len, "Bearer %s", end + 1);
	for (i = 0; i < n; i++) {
		p[i] = (struct par){ .auth = auth, .value = value };
		pthread_create(&t[i], NULL, par_run, &p[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		allow += p[i].status == 200;
	}
	printf("parallel allow=%d deny=%d\n", allow, (int)n - allow);
	free(value);
}

int
main(void)
{
	struct mcp_auth_conf conf;
	struct mcp_auth *auth = NULL;
	struct mb_err err = { 0 };
	char *line = NULL, *scope = NULL, *doc, *end;
	size_t cap = 0;
	ssize_t n;
	unsigned fetches, failures;

	mb_log_init("auth_check", MB_LOG_DEBUG);
	if (mcp_auth_conf_load(&conf, env, &err) == -1) {
		fprintf(stderr, "auth_check: %s\n", err.msg);
		mcp_auth_conf_release(&conf);
		return 2;
	}
	conf.now = test_clock;
	if (mcp_auth_new(&conf, &auth, &err) == -1) {
		fprintf(stderr, "auth_check: %s\n", err.msg);
		mcp_auth_conf_release(&conf);
		return 2;
	}
	mcp_auth_conf_release(&conf);
	while ((n = getline(&line, &cap, stdin)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (strcmp(line, "@noauth") == 0) {
			answer(auth, NULL, scope);
		} else if (strncmp(line, "@header ", 8) == 0) {
			answer(auth, line + 8, scope);
		} else if (strncmp(line, "@scope ", 7) == 0) {
			free(scope);
			scope = strcmp(line + 7, "-") == 0 ? NULL : strdup(line + 7);
			printf("scope %s\n", scope ? scope : "-");
		} else if (strncmp(line, "@advance ", 9) == 0) {
			clock_offset += strtoll(line + 9, &end, 10);
			printf("clock +%lld\n", clock_offset);
		} else if (strcmp(line, "@stats") == 0) {
			mcp_auth_jwks_stats(auth, &fetches, &failures);
			printf("fetches=%u failures=%u\n", fetches, failures);
		} else if (strncmp(line, "@parallel ", 10) == 0) {
			parallel(auth, line + 10);
		} else if (strcmp(line, "@metadata") == 0) {
			doc = mcp_auth_metadata_json(auth);
			printf("%s %s\n", mcp_auth_metadata_url(auth), doc);
			free(doc);
		} else {
			size_t len = strlen("Bearer ") + strlen(line) + 1;
			char *value = malloc(len);

			snprintf(value, len, "Bearer %s", line);
			answer(auth, value, scope);
			free(value);
		}
		fflush(stdout);
	}
	free(line);
	free(scope);
	mcp_auth_free(&auth);
	return 0;
}
