/*
 * The session map: id -> negotiated protocol version, and the rate-limit
 * buckets of the callers.  Sessions carry no authority (a session id is never
 * a credential: docs/auth.md); they exist so a client's later requests know
 * which protocol version it negotiated, and so an ended session answers 404.
 *
 * Limits are per caller, not per session (docs/mcpd.md: limits): a caller is
 * the token subject with OAuth, the peer address without.  Its requests take
 * from one bucket however many sessions it opens (or none, 2026-07-28), and
 * it holds at most per_caller sessions: a new one past that evicts the
 * caller's own least recently used session, and a full map evicts within the
 * creating caller first, so a flood of initialize calls costs only the
 * flooder its sessions.  Flat arrays under one mutex: both are small and
 * every operation is a short scan.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "mailbox/util.h"
#include "mcpd.h"

struct mcp_session {
	char		 id[2 * MCP_SESSION_ID_BYTES + 1];
	const char	*version;	/* static string */
	char		*owner;		/* owned; the token subject that made it, or NULL */
	char		*caller;	/* owned; whose limits it counts under */
	long long	 last_used_ms;
	int		 level;		/* logging/setLevel, enum mb_log_level */
};

/* One caller's token bucket of requests. */
struct mcp_bucket {
	char		*caller;	/* owned */
	double		 tokens;
	long long	 refill_ms;	/* when tokens was last topped up */
	long long	 last_used_ms;
};

struct mcp_sessions {
	pthread_mutex_t		 lock;
	struct mcp_session	*v;
	size_t			 n, max;
	size_t			 per_caller;	/* sessions one caller may hold */
	struct mcp_bucket	*b;		/* as many as max: the LRU one is dropped */
	size_t			 nb;
	unsigned		 rate;	/* requests per second per caller; 0: unlimited */
};

struct mcp_sessions *
mcp_sessions_new(unsigned max)
{
	struct mcp_sessions *s = mb_xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	s->max = max ? max : 1;
	s->per_caller = s->max;
	s->v = mb_xcalloc(s->max, sizeof(*s->v));
	s->b = mb_xcalloc(s->max, sizeof(*s->b));
	return s;
}

void
mcp_sessions_free(struct mcp_sessions **sp)
{
	struct mcp_sessions *s = *sp;

	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].owner);
		free(s->v[i].caller);
	}
	for (size_t i = 0; i < s->nb; i++)
		free(s->b[i].caller);
	pthread_mutex_destroy(&s->lock);
	free(s->v);
	free(s->b);
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

/* Remove session i.  Called with the lock held. */
static void
drop(struct mcp_sessions *s, size_t i)
{
	free(s->v[i].owner);
	free(s->v[i].caller);
	s->v[i] = s->v[--s->n];
}

/*
 * Make room for one more session of caller: past per_caller, or with the map
 * full and the caller holding any, its own least recently used session goes;
 * a full map and a caller holding none: the least recently used of all.
 * Lock held.
 */
static void
make_room(struct mcp_sessions *s, const char *caller)
{
	size_t held = 0, own = 0, lru = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->v[i].caller, caller) != 0)
			continue;
		if (held++ == 0 || s->v[i].last_used_ms < s->v[own].last_used_ms)
			own = i;
	}
	if (held >= s->per_caller || (held > 0 && s->n == s->max)) {
		drop(s, own);
		return;
	}
	if (s->n < s->max)
		return;
	for (size_t i = 1; i < s->n; i++)
		if (s->v[i].last_used_ms < s->v[lru].last_used_ms)
			lru = i;
	drop(s, lru);
}

void
mcp_sessions_set_per_caller(struct mcp_sessions *s, unsigned max)
{
	pthread_mutex_lock(&s->lock);
	s->per_caller = max == 0 || max > s->max ? s->max : max;
	pthread_mutex_unlock(&s->lock);
}

int
mcp_session_create(struct mcp_sessions *s, const char *version, const char *owner,
    const char *caller, char *id_r, size_t id_size)
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
	if (caller == NULL)
		caller = "";
	pthread_mutex_lock(&s->lock);
	make_room(s, caller);
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	memcpy(e->id, id_r, sizeof(e->id));
	e->version = version;
	e->owner = mb_xstrdup(owner);
	e->caller = mb_xstrdup(caller);
	e->last_used_ms = mb_now_ms();
	e->level = 6;
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

/* caller's bucket, made full when missing (the least recently used one goes).  Lock held. */
static struct mcp_bucket *
bucket(struct mcp_sessions *s, const char *caller, long long now)
{
	struct mcp_bucket *e;
	size_t lru = 0;

	for (size_t i = 0; i < s->nb; i++)
		if (strcmp(s->b[i].caller, caller) == 0)
			return &s->b[i];
	if (s->nb == s->max) {
		for (size_t i = 1; i < s->nb; i++)
			if (s->b[i].last_used_ms < s->b[lru].last_used_ms)
				lru = i;
		free(s->b[lru].caller);
		s->b[lru] = s->b[--s->nb];
	}
	e = &s->b[s->nb++];
	e->caller = mb_xstrdup(caller);
	e->tokens = 2.0 * s->rate;	/* the burst */
	e->refill_ms = now;
	return e;
}

bool
mcp_session_allow(struct mcp_sessions *s, const char *caller)
{
	struct mcp_bucket *e;
	long long now;
	bool ok = true;

	pthread_mutex_lock(&s->lock);
	if (s->rate > 0) {
		now = mb_now_ms();
		e = bucket(s, caller ? caller : "", now);
		e->last_used_ms = now;
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
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}
