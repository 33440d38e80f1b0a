/*
 * mcpd's parts: configuration (config.c), the session map (session.c), the
 * JSON-RPC layer (rpc.c), the tools and resources (tools.c), fencing of mail
 * text (fence.c) and the HTTP transport (http.c).  main.c strings them
 * together; tests and the fuzzer link the parts directly.
 */
#ifndef MCPD_MCPD_H
#define MCPD_MCPD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "mailbox/err.h"
#include "mailbox/index.h"

#define MCP_MAX_BODY		(1u << 20)	/* request body cap: 413 past it */
#define MCP_MAX_JSON_DEPTH	64		/* deeper JSON is refused before parsing */
#define MCP_BODY_CAP_CHARS	16000		/* get_message body page, in characters */
#define MCP_PREVIEW_CHARS	800		/* get_thread preview */
#define MCP_THREAD_PAGE		50		/* get_thread messages per page */
#define MCP_RESOURCE_PAGE	50		/* resources/list items per page */
#define MCP_SESSION_ID_BYTES	16		/* random bytes, sent as 32 hex digits */

#define MCP_PROTO_2025_03_26	"2025-03-26"
#define MCP_PROTO_2025_06_18	"2025-06-18"
#define MCP_PROTO_2025_11_25	"2025-11-25"
#define MCP_PROTO_LATEST	MCP_PROTO_2025_11_25

/* ---- config.c */

struct mcp_config {
	/* the settings (config.c's table; owned strings) */
	char		*listen;	/* MCP_LISTEN: "host:port" or "unix:/path" */
	char		*index_path;	/* MCP_INDEX, else $DATA_DIR/index.db */
	char		*data_dir;	/* DATA_DIR */
	char		*origins_setting;	/* MCP_ALLOWED_ORIGINS, comma-separated */
	char		*hosts_setting;		/* MCP_ALLOWED_HOSTS, comma-separated */
	unsigned	 threads;	/* MCP_THREADS: libmicrohttpd pool size */
	unsigned	 max_connections;	/* MCP_MAX_CONNECTIONS */
	unsigned	 timeout;	/* MCP_TIMEOUT: idle seconds per connection */
	unsigned	 max_sessions;	/* MCP_MAX_SESSIONS */
	unsigned	 rate;		/* MCP_RATE_LIMIT: tool calls a second per session */
	char		*port_file;	/* MCP_PORT_FILE: write the bound port here */
	unsigned	 level_choice;	/* LOG_LEVEL, as an index into its choices */
	char		*syncd_socket;	/* SYNCD_SOCKET: the write tools' way to syncd */
	unsigned	 read_only_choice;	/* MCP_READ_ONLY, as an index into its choices */
	/* derived from them */
	bool		 listen_unix;
	char		*unix_path;	/* owned; when listen_unix */
	char		*host;		/* owned; the IP literal to bind (no brackets) */
	unsigned	 port;		/* 0: ephemeral */
	char		**allowed_origins;	/* owned, NULL-terminated; extra to the defaults */
	char		**allowed_hosts;	/* owned, NULL-terminated; extra to the defaults */
	int		 log_level;	/* enum mb_log_level */
	bool		 read_only;	/* MCP_READ_ONLY=1 (true, yes): no write tools at all */
};

/*
 * Load the configuration through lookup (getenv in main.c, a table in
 * tests).  Returns 0, or -1 with err (MB_E_CONFIG) naming the bad key.
 * conf is the caller's: release it with mcp_config_release().
 */
int	mcp_config_load(struct mcp_config *conf, const char *(*lookup)(const char *),
	    struct mb_err *err);
void	mcp_config_release(struct mcp_config *conf);

/* ---- session.c: a thin, mutex-protected map of live sessions */

struct mcp_sessions;

struct mcp_sessions	*mcp_sessions_new(unsigned max);	/* caller frees with _free */
void	mcp_sessions_free(struct mcp_sessions **sp);
/*
 * Create a session negotiated at version (a static string) for owner (the
 * token subject, copied; NULL without authentication); writes its id
 * (2*MCP_SESSION_ID_BYTES hex digits + NUL) into id_r.  Returns 0, or -1 when
 * the random source fails.  The least recently used session is evicted when
 * the map is full.  Every lookup below takes the owner too: a session made
 * under another subject is "not found".
 */
int	mcp_session_create(struct mcp_sessions *s, const char *version, const char *owner,
	    char *id_r, size_t id_size);
/* The negotiated version of a live session (static string), or NULL. */
const char	*mcp_session_touch(struct mcp_sessions *s, const char *id, const char *owner);
bool	mcp_session_delete(struct mcp_sessions *s, const char *id, const char *owner);
void	mcp_session_set_level(struct mcp_sessions *s, const char *id, const char *owner,
	    int level);
size_t	mcp_session_count(struct mcp_sessions *s);
/*
 * Tool-call rate limit (MCP: servers MUST rate-limit tool invocations): a
 * token bucket per session, per_second tokens a second, bursts of twice
 * that.  mcp_session_allow() takes a token; false when the bucket is empty.
 */
void	mcp_sessions_set_rate(struct mcp_sessions *s, unsigned per_second);
bool	mcp_session_allow(struct mcp_sessions *s, const char *id, const char *owner);

/* ---- the server: what every request handler shares */

struct mcp_auth;

struct mcp_server {
	const struct mcp_config	*conf;		/* borrowed */
	struct mcp_auth		*auth;		/* borrowed (auth.h); NULL: no checks (tests) */
	struct mcp_sessions	*sessions;	/* owned */
	unsigned char		 cursor_key[32];	/* HMAC key for cursors, random per process */
	pthread_key_t		 idx_key;	/* per-thread read-only index connection */
};

/* Set up srv around conf (borrowed; must outlive srv).  Returns 0 or -1 + err. */
int	mcp_server_init(struct mcp_server *srv, const struct mcp_config *conf,
	    struct mb_err *err);
void	mcp_server_release(struct mcp_server *srv);

/*
 * This thread's read-only connection to the index, opened on first use and
 * closed when the thread exits (or by mcp_server_close_index()).  NULL with
 * err when the index cannot be opened; the next call tries again.
 */
struct mb_index	*mcp_server_index(struct mcp_server *srv, struct mb_err *err);
void	mcp_server_close_index(struct mcp_server *srv);
/*
 * A prepared statement for sql on this thread's connection (after
 * mcp_server_index() succeeded), cached by the address of sql, which must be
 * a static string.  Borrowed: hand it back with mcp_server_stmt_done() (which
 * resets it), never finalize it.  NULL (logged) when it cannot be prepared.
 */
struct sqlite3_stmt;
struct sqlite3_stmt	*mcp_server_stmt(struct mcp_server *srv, const char *sql);
void	mcp_server_stmt_done(struct sqlite3_stmt *st);

/* ---- rpc.c: one HTTP POST body in, one HTTP answer out */

struct mcp_post {
	/* in */
	const char	*session_id;	/* Mcp-Session-Id header, or NULL */
	const char	*proto_header;	/* MCP-Protocol-Version header, or NULL (validated) */
	const char	*owner;		/* the token subject, or NULL (no authentication) */
	bool		 may_write;	/* the token has the write scope (always without auth) */
	/* out */
	int		 status;	/* HTTP status */
	char		*body;		/* owned; NULL: no body */
	bool		 sse;		/* body is a text/event-stream */
	char		 new_session[2 * MCP_SESSION_ID_BYTES + 1];	/* "" unless created */
};

/* Answer one POST.  body (len bytes) is untrusted; post->body is the caller's to free. */
void	mcp_rpc_post(struct mcp_server *srv, const char *body, size_t len, struct mcp_post *post);

/* True when v is one of the protocol versions we accept in the header. */
bool	mcp_proto_supported(const char *v);

/* A JSON-RPC error object with id (borrowed; NULL means null); caller owns it. */
json_t	*mcp_rpc_error(json_t *id, int code, const char *message);

/* Depth of the deepest array/object nesting in the JSON text, capped at limit + 1. */
size_t	mcp_json_depth(const char *s, size_t len, size_t limit);

/* ---- tools.c */

/* tools/list result (caller owns). */
/*
 * A tool execution error a model can act on (MCP: input validation included):
 * a CallToolResult with isError and the formatted text.  New reference.
 */
json_t	*mcp_tool_error(const char *fmt, ...) MB_PRINTF(1, 2);
/* Argument checks shared by the tools: -1 with msg (msgsize bytes) saying what is wrong. */
int	mcp_known_args(json_t *args, const char *const *names, char *msg, size_t msgsize);
int	mcp_id_arg(json_t *args, const char *key, bool required, int64_t *id_r, char *msg,
	    size_t msgsize);
json_t	*mcp_tools_list(void);
/*
 * tools/call: the CallToolResult for name with args (both borrowed), or NULL
 * with *code_r/-message when it is a protocol error (unknown tool: -32602).
 */
json_t	*mcp_tools_call(struct mcp_server *srv, const char *name, json_t *args, int *code_r,
	    const char **message_r);
/* resources/list, resources/templates/list, resources/read (same error convention). */
json_t	*mcp_resources_list(struct mcp_server *srv, json_t *params, int *code_r,
	    const char **message_r);
json_t	*mcp_resource_templates_list(void);
json_t	*mcp_resources_read(struct mcp_server *srv, json_t *params, int *code_r,
	    const char **message_r);
/* /healthz: JSON text (caller frees) and the HTTP status. */
char	*mcp_healthz(struct mcp_server *srv, int *status_r);

/* ---- tools_write.c: the write tools, forwarded to syncd (docs/writes.md) */

/* Append the write tools to a tools/list result (not for read-only or no write scope). */
void	mcp_tools_write_list(struct mcp_server *srv, json_t *list, bool may_write);
/* True when name is a write tool or list_recent_writes: mcp_tools_write_call answers it. */
bool	mcp_tools_write_is(const char *name);
json_t	*mcp_tools_write_call(struct mcp_server *srv, const char *name, json_t *args,
	    const char *owner, bool may_write);

/* ---- ctl_client.c: one request to syncd's control socket, blocking, with a timeout */

struct mb_ctl_request;
struct mb_ctl_reply;
int	mcp_ctl_call(const char *path, const struct mb_ctl_request *rq, unsigned timeout_s,
	    struct mb_ctl_reply *rp, struct mb_err *err);

/* ---- fence.c: mail text is untrusted */

struct mb_buf;

/* A fresh random nonce (24 hex digits + NUL) for one response. */
void	mcp_fence_nonce(char nonce[25]);
/* Append s (len bytes, mail text) to out inside the fence; neutralises fence tags in s. */
int	mcp_fence_add(struct mb_buf *out, const char *nonce, const char *s, size_t len);
/*
 * A JSON string from bytes that should be UTF-8: invalid sequences become
 * U+FFFD, so a malformed row never turns into a missing field.  NULL s → json null.
 */
json_t	*mcp_json_text(const char *s, size_t len);

/* Cursors: an opaque, HMAC-signed token carrying kind, offset and a query hash. */
char	*mcp_cursor_make(struct mcp_server *srv, char kind, int64_t offset, uint64_t qhash);
int	mcp_cursor_parse(struct mcp_server *srv, const char *cursor, char kind,
	    int64_t *offset_r, uint64_t *qhash_r);

/* ---- json_dump.c */

/*
 * json_dumps(j, JSON_COMPACT), the same bytes, faster for long strings.
 * The caller free(3)s the result; NULL when j is NULL.
 */
char	*mcp_json_dumps(json_t *j);

/* ---- http.c */

struct mcp_http;

/* Start listening as conf says; *port_r is the bound TCP port (0 on unix:). */
struct mcp_http	*mcp_http_start(struct mcp_server *srv, unsigned *port_r, struct mb_err *err);
void	mcp_http_stop(struct mcp_http **hp);

#endif
