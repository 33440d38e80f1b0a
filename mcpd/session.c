/*
 * The session map: id -> negotiated protocol version.  Sessions carry no
 * authority (a session id is never a credential: docs/auth.md); they exist
 * so a client's later requests know which protocol version it negotiated,
 * and so an ended session answers 404.  A flat array under one mutex: the
 * map is small and every operation is a short scan.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "mailbox/util.h"
#include "mcpd.h"

/*
 * An entry with version NULL and no id is not a session: it is the rate-limit
 * bucket of one token subject's 2026-07-28 (sessionless) requests, kept in the
 * same map so the same bound and eviction apply.
 */
struct mcp_session {
	char		 id[2 * MCP_SESSION_ID_BYTES + 1];
	const char	*version;	/* static string; NULL: a sessionless bucket */
	char		*owner;		/* owned; the token subject that made it, or NULL */
	long long	 last_used_ms;
	int		 level;		/* logging/setLevel, enum mb_log_level */
	double		 tokens;	/* rate limit: a token bucket of tool calls */
	long long	 refill_ms;	/* when tokens was last topped up */
};

struct mcp_sessions {
	pthread_mutex_t		 lock;
	struct mcp_session	*v;
	size_t			 n, max;
	unsigned		 rate;	/* calls per second per session; 0: unlimited */
};

struct mcp_sessions *
mcp_sessions_new(unsigned max)
{
	struct mcp_sessions *s = mb_xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	s->max = max ? max : 1;
	s->v = mb_xcalloc(s->max, sizeof(*s->v));
	return s;
}

void
mcp_sessions_free(struct mcp_sessions **sp)
{
	struct mcp_sessions *s = *sp;

	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].owner);
	pthread_mutex_destroy(&s->lock);
	free(s->v);
	free(s);
	*sp = NULL;
}

/* Same owner: both NULL (no authentication) or the same subject. */
static bool
same_owner(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/*
 * Index of id, or -1; a session made under another token subject is not
 * found (MCP security best practices: bind sessions to the user, so a
 * leaked id is useless to anyone else).  Called with the lock held.
 */
static long
find(struct mcp_sessions *s, const char *id, const char *owner)
{
	size_t len = strlen(id);

	if (len != 2 * MCP_SESSION_ID_BYTES)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		if (CRYPTO_memcmp(s->v[i].id, id, len) == 0)
			return same_owner(s->v[i].owner, owner) ? (long)i : -1;
	return -1;
}

/* Remove entry i.  Called with the lock held. */
static void
drop(struct mcp_sessions *s, size_t i)
{
	free(s->v[i].owner);
	s->v[i] = s->v[--s->n];
}

/* A new entry, evicting the least recently used one when full.  Lock held. */
static struct mcp_session *
add(struct mcp_sessions *s, const char *version, const char *owner)
{
	struct mcp_session *e;

	if (s->n == s->max) {
		size_t lru = 0;

		for (size_t i = 1; i < s->n; i++)
			if (s->v[i].last_used_ms < s->v[lru].last_used_ms)
				lru = i;
		drop(s, lru);
	}
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	e->version = version;
	e->owner = mb_xstrdup(owner);
	e->last_used_ms = mb_now_ms();
	e->level = 6;
	e->tokens = 2.0 * s->rate;	/* the burst */
	e->refill_ms = e->last_used_ms;
	return e;
}

/* The sessionless bucket of owner, made when missing.  Lock held. */
static long
stateless_bucket(struct mcp_sessions *s, const char *owner)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].version == NULL && same_owner(s->v[i].owner, owner))
			return (long)i;
	add(s, NULL, owner);
	return (long)s->n - 1;
}

int
mcp_session_create(struct mcp_sessions *s, const char *version, const char *owner, char *id_r,
    size_t id_size)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[MCP_SESSION_ID_BYTES];
	struct mcp_session *e;
	size_t i;

	if (id_size < 2 * MCP_SESSION_ID_BYTES + 1 || RAND_bytes(raw, sizeof(raw)) != 1)
		return -1;
	for (i = 0; i < sizeof(raw); i++) {
		id_r[2 * i] = hex[raw[i] >> 4];
		id_r[2 * i + 1] = hex[raw[i] & 15];
	}
	id_r[2 * sizeof(raw)] = '\0';
	pthread_mutex_lock(&s->lock);
	e = add(s, version, owner);
	memcpy(e->id, id_r, sizeof(e->id));
	pthread_mutex_unlock(&s->lock);
	return 0;
}

const char *
mcp_session_touch(struct mcp_sessions *s, const char *id, const char *owner)
{
	const char *v = NULL;
	long i;

	pthread_mutex_lock(&s->lock);
	i = find(s, id, owner);
	if (i >= 0) {
		s->v[i].last_used_ms = mb_now_ms();
		v = s->v[i].version;
	}
	pthread_mutex_unlock(&s->lock);
	return v;
}

bool
mcp_session_delete(struct mcp_sessions *s, const char *id, const char *owner)
{
	long i;

	pthread_mutex_lock(&s->lock);
	i = find(s, id, owner);
	if (i >= 0)
		drop(s, (size_t)i);
	pthread_mutex_unlock(&s->lock);
	return i >= 0;
}

void
mcp_session_set_level(struct mcp_sessions *s, const char *id, const char *owner, int level)
{
	long i;

	pthread_mutex_lock(&s->lock);
	i = find(s, id, owner);
	if (i >= 0)
		s->v[i].level = level;
	pthread_mutex_unlock(&s->lock);
}

void
mcp_sessions_set_rate(struct mcp_sessions *s, unsigned per_second)
{
	pthread_mutex_lock(&s->lock);
	s->rate = per_second;
	pthread_mutex_unlock(&s->lock);
}

bool
mcp_session_allow(struct mcp_sessions *s, const char *id, const char *owner)
{
	bool ok = true;
	long i;

	pthread_mutex_lock(&s->lock);
	i = id == NULL ? (s->rate > 0 ? stateless_bucket(s, owner) : -1) : find(s, id, owner);
	if (i >= 0 && s->rate > 0) {
		s->v[i].last_used_ms = mb_now_ms();
		struct mcp_session *e = &s->v[i];
		long long now = mb_now_ms();

		e->tokens += (double)(now - e->refill_ms) * s->rate / 1000.0;
		if (e->tokens > 2.0 * s->rate)
			e->tokens = 2.0 * s->rate;
		e->refill_ms = now;
		if (e->tokens >= 1.0)
			e->tokens -= 1.0;
		else
			ok = false;
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

size_t
mcp_session_count(struct mcp_sessions *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->v[i].version != NULL;
	pthread_mutex_unlock(&s->lock);
	return n;
}
