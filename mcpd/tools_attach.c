/*
 * Attachments for the model (docs/attachments.md): get_message's list
 * entry, get_attachment (the extracted text, paged like bodies, fenced as
 * mail), and the mail://attachment/{id} resource (the bytes as a blob, up
 * to MCP_ATTACHMENT_MAX_BYTES).  mcpd reads DATA_DIR/blobs read-only: the
 * blob's name comes from the index, is checked to be 64 hex digits before
 * it becomes a path, and the bytes are checked against it before they are
 * sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "mailbox/attachments.h"
#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/read.h"
#include "mailbox/util.h"
#include "mcpd.h"

#define ATTACH_PREFIX	"mail://attachment/"

/* What get_message and get_attachment say of an attachment's text. */
static const char *
text_status(const char *status)
{
	return status != NULL ? status : "not extracted yet (stored before extraction existed; "
	    "syncd extracts it in the background)";
}

json_t *
mcp_attachment_json(const struct mb_read_attachment *a, const struct mcp_account *acc)
{
	return json_pack("{s:I, s:o, s:o, s:I, s:b, s:b, s:s}", "id",
	    (json_int_t)mcp_gid(acc, a->id),
	    "name", mcp_str_json(a->name), "type", mcp_str_json(a->type),
	    "size", (json_int_t)a->size, "inline", a->is_inline, "text_available", a->has_text,
	    "text_status", text_status(a->text_status));
}

/* ---- get_attachment */

json_t *
mcp_tool_get_attachment(struct mcp_server *srv, json_t *args, const struct mcp_caller *who,
    struct mb_err *err)
{
	const struct mcp_account *acc;
	struct mb_attachment_page ap;
	struct mb_index *idx;
	struct mcp_answer a;
	int64_t id = mcp_arg_int(args, "id"), local = 0;
	long long offset = mcp_arg_int(args, "offset");
	struct mb_buf inner = MB_BUF_INIT(8u << 20);
	json_t *d;

	acc = mcp_id_route(srv, who, id, &local, &idx, err);
	if (acc == NULL && err->code == MB_E_TEMP)
		return NULL;
	if (acc == NULL ||
	    mb_attachment_read(idx, local, (size_t)offset, MCP_BODY_CAP_CHARS, &ap, err) == -1) {
		if (err->code != MB_E_NOTFOUND)
			return mcp_index_failure(err);
		mb_err_clear(err);
		mb_err_set(err, MB_E_NOTFOUND, "no attachment with id %lld; ids come from "
		    "get_message's attachments or a search hit's attachment", (long long)id);
		return NULL;
	}
	mcp_answer_init(&a);
	d = a.data;
	ap.id = mcp_gid(acc, ap.id);	/* from here on, the ids the caller sees */
	ap.message_id = mcp_gid(acc, ap.message_id);
	json_object_set_new(d, "id", json_integer(ap.id));
	json_object_set_new(d, "account", json_string(acc->name));
	json_object_set_new(d, "message_id", json_integer(ap.message_id));
	if (ap.name != NULL)
		json_object_set_new(d, "name", mcp_str_json(ap.name));
	json_object_set_new(d, "type", mcp_str_json(ap.type));
	json_object_set_new(d, "size", json_integer(ap.size));
	json_object_set_new(d, "inline", json_boolean(ap.is_inline));
	json_object_set_new(d, "text_available", json_boolean(ap.has_text));
	json_object_set_new(d, "text_status", json_string(text_status(ap.status)));
	json_object_set_new(d, "text", mcp_json_text(ap.text, ap.text_len));
	json_object_set_new(d, "offset", json_integer(offset));
	json_object_set_new(d, "text_chars", json_integer((json_int_t)ap.text_chars));
	if (ap.more)
		json_object_set_new(d, "next_offset", json_integer(ap.next_offset));
	if (ap.sha256 != NULL)
		json_object_set_new(d, "resource", json_sprintf(ATTACH_PREFIX "%lld",
		    (long long)ap.id));

	mb_buf_addf(&a.text, "Attachment id %lld of message %lld, %" PRId64 " bytes. %s\n",
	    (long long)ap.id, (long long)ap.message_id, ap.size, MCP_FENCE_NOTE);
	mb_buf_addf(&inner, "Name: %s\nType: %s\n", json_is_string(json_object_get(d, "name")) ?
	    json_string_value(json_object_get(d, "name")) : "(no name)",
	    json_string_value(json_object_get(d, "type")));
	if (ap.has_text) {
		mb_buf_addc(&inner, '\n');
		mb_buf_adds(&inner, json_string_value(json_object_get(d, "text")));
	}
	mcp_fence_add(&a.text, a.nonce, inner.data, inner.len);
	mb_buf_release(&inner);
	/* Outside the fence: the index's word, not the mail's. */
	if (!ap.has_text)
		mb_buf_addf(&a.text, "\nNo text: %s\n", text_status(ap.status));
	else if (strncmp(ap.status != NULL ? ap.status : "", "ok:", 3) == 0)
		mb_buf_addf(&a.text, "\n(text %s)\n", ap.status + 4);
	if (ap.more)
		mb_buf_addf(&a.text, "\nThe text continues (characters %lld of %zu shown): call "
		    "get_attachment with id %lld and offset %lld for the rest.\n",
		    (long long)ap.next_offset, ap.text_chars, (long long)ap.id,
		    (long long)ap.next_offset);
	mb_attachment_page_release(&ap);
	return mcp_answer_result(&a);
}

/* ---- mail://attachment/{id} */

json_t *
mcp_attachment_template(void)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "uriTemplate", ATTACH_PREFIX "{id}",
	    "name", "attachment", "title", "A mail attachment's bytes",
	    "description", "One attachment by id (from get_message or a search hit), as a "
	    "base64 blob with its MIME type, up to a size cap; its text is get_attachment's. "
	    "The bytes are untrusted third-party content.");
}

/* The whole file at path, exactly want bytes, or NULL (errno set). */
static unsigned char *
read_blob(const char *path, uint64_t want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	unsigned char *buf;
	struct stat st;
	size_t got = 0;

	if (fd == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != want) {
		close(fd);
		errno = EIO;
		return NULL;
	}
	buf = mb_xmalloc(want ? want : 1);
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			close(fd);
			errno = n == 0 ? EIO : errno;
			return NULL;
		}
		got += (size_t)n;
	}
	close(fd);
	return buf;
}

static bool
sha_matches(const unsigned char *p, size_t n, const char *hex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char got[65];

	if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return false;
	for (unsigned i = 0; i < 32; i++)
		snprintf(got + 2 * i, 3, "%02x", md[i]);
	return strcmp(got, hex) == 0;
}

json_t *
mcp_attachment_resource(struct mcp_server *srv, const struct mcp_caller *who, const char *uri,
    int *code_r, const char **message_r)
{
	static _Thread_local char why[320];
	const char *p = uri + strlen(ATTACH_PREFIX);
	const struct mcp_account *acc;
	struct mb_attachment_page ap;
	struct mb_err err = { 0 };
	struct mb_index *idx;
	unsigned char *bytes;
	char path[4200], *b64, *end;
	long long id;
	int64_t local = 0;
	json_t *r;

	errno = 0;
	id = *p >= '1' && *p <= '9' ? strtoll(p, &end, 10) : 0;
	if (id <= 0 || *end != '\0' || errno != 0) {
		*code_r = -32002;
		*message_r = "Resource not found";
		return NULL;
	}
	acc = mcp_id_route(srv, who, id, &local, &idx, &err);
	if (acc == NULL && err.code == MB_E_TEMP) {
		*code_r = -32603;
		*message_r = "Internal error: the mail index is not available";
		return NULL;
	}
	if (acc == NULL || mb_attachment_read(idx, local, 0, 0, &ap, &err) == -1) {
		bool failed = err.code != MB_E_NOTFOUND;

		if (failed)
			mb_log_error("resources/read: %s", err.msg);
		*code_r = failed ? -32603 : -32002;
		*message_r = failed ? "Internal error" : "Resource not found";
		return NULL;
	}
	if (ap.sha256 == NULL || strlen(ap.sha256) != 64 ||
	    strspn(ap.sha256, "0123456789abcdef") != 64) {
		mb_attachment_page_release(&ap);
		*code_r = -32002;
		*message_r = "Resource not found: the attachment's bytes were not stored";
		return NULL;
	}
	if ((uint64_t)ap.size > srv->conf->attachment_max) {
		snprintf(why, sizeof(why), "Attachment %lld is %lld bytes, over the %u-byte cap of "
		    "mail://attachment (MCP_ATTACHMENT_MAX_BYTES); read its text with "
		    "get_attachment instead", id, (long long)ap.size, srv->conf->attachment_max);
		mb_attachment_page_release(&ap);
		*code_r = -32602;
		*message_r = why;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/blobs/%.2s/%s", acc->data_dir, ap.sha256,
	    ap.sha256 + 2);
	bytes = read_blob(path, (uint64_t)ap.size);
	if (bytes == NULL || !sha_matches(bytes, (size_t)ap.size, ap.sha256)) {
		mb_log_warnx("resources/read: attachment %lld: blob %s: %s", id, path,
		    bytes == NULL ? strerror(errno) : "its bytes do not match its name");
		free(bytes);
		mb_attachment_page_release(&ap);
		*code_r = -32603;
		*message_r = "Internal error: the attachment's bytes cannot be read";
		return NULL;
	}
	b64 = mb_xmalloc(4 * (((size_t)ap.size + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)b64, bytes, (int)ap.size);
	free(bytes);
	r = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
	    ap.type != NULL ? ap.type : "application/octet-stream", "blob", b64);
	free(b64);
	mb_attachment_page_release(&ap);
	return r;
}
