/*
 * libFuzzer target for mcpd's JSON-RPC request path: parse, classify,
 * session checks, dispatch, tools and resources, against a tiny real index
 * built once at start-up.  The first input byte picks the session (none, a
 * 2025-11-25 one, a 2025-03-26 one that accepts batches) and the MCP headers
 * (none, or those of a 2026-07-28 or a 2025 request); the rest is the POST
 * body.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mailbox/index.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"
#include "mcpd.h"
#include "support_index.h"

static struct mcp_config conf;
static struct mcp_server srv;
static char sid_new[2 * MCP_SESSION_ID_BYTES + 1], sid_old[2 * MCP_SESSION_ID_BYTES + 1];

static void
put(struct mb_index *idx, int64_t folder, uint32_t uid, const char *subject, const char *body,
    const char *mid, const char *irt)
{
	struct mb_test_msg t = { .subject = subject, .body = body,
	    .date = 1700000000 + uid * 86400, .internaldate = 1700000000 + uid,
	    .flags = uid % 2 ? MB_FLAG_SEEN : 0, .message_id = mid, .in_reply_to = irt };

	mb_test_put(idx, folder, uid, &t);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char dir[] = "/tmp/fuzz_jsonrpc.XXXXXX";
	static char path[64];
	struct mb_index *idx = NULL;
	struct mb_err err = { 0 };
	int64_t inbox;

	mb_log_init("fuzz_jsonrpc", MB_LOG_ERR);
	if (mkdtemp(dir) == NULL)
		mb_fatal("mkdtemp");
	snprintf(path, sizeof(path), "%s/index.db", dir);
	if (mb_index_open(path, MB_INDEX_RW, &idx, &err) == -1 ||
	    mb_index_folder_ensure(idx, "INBOX", NULL, &inbox, &err) == -1)
		mb_fatalx("fuzz setup: %s", err.msg);
	mb_test_folder_examined(idx, "INBOX");
	put(idx, inbox, 1, "Budget review", "quarterly budget numbers", "a@x", NULL);
	put(idx, inbox, 2, "Re: Budget review", "looks good, pangolin", "b@x", "a@x");
	put(idx, inbox, 3, "会議の予定", "会議は月曜日です", "c@x", NULL);
	mb_index_close(&idx);

	memset(&conf, 0, sizeof(conf));
	conf.index_path = path;
	conf.max_sessions = 16;
	if (mcp_server_init(&srv, &conf, &err) == -1)
		mb_fatalx("fuzz setup: %s", err.msg);
	if (mcp_session_create(srv.sessions, MCP_PROTO_2025_11_25, NULL, NULL, sid_new, sizeof(sid_new)) == -1 ||
	    mcp_session_create(srv.sessions, MCP_PROTO_2025_03_26, NULL, NULL, sid_old, sizeof(sid_old)) == -1)
		mb_fatalx("fuzz setup: sessions");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_post post;

	if (size == 0 || size > MCP_MAX_BODY)
		return 0;
	memset(&post, 0, sizeof(post));
	post.session_id = data[0] % 3 == 0 ? NULL : data[0] % 3 == 1 ? sid_new : sid_old;
	/* the MCP headers: none, a 2026-07-28 request's, or a 2025 one's */
	switch (data[0] / 3 % 4) {
	case 1:
		post.proto_header = MCP_PROTO_2026_07_28;
		break;
	case 2:
		post.proto_header = MCP_PROTO_2026_07_28;
		post.method_header = "tools/call";
		post.name_header = data[0] & 128 ? "=?base64?c2VhcmNoX21lc3NhZ2Vz?=" :
		    "search_messages";
		break;
	case 3:
		post.proto_header = MCP_PROTO_2025_11_25;
		break;
	}
	mcp_rpc_post(&srv, (const char *)data + 1, size - 1, &post);
	/* every answer is a valid HTTP status with a body only where one belongs */
	if (post.status < 200 || post.status > 599 || (post.status == 202 && post.body != NULL))
		abort();
	free(post.body);
	/* a session the input created must not crowd out the fixed ones */
	mcp_session_touch(srv.sessions, sid_new, NULL);
	mcp_session_touch(srv.sessions, sid_old, NULL);
	return 0;
}
