/*
 * What a tool answers: a text block for the model, with every string from
 * mail inside the fence (fence.c), and the same facts as data in
 * structuredContent; and the one place where a handler's struct mb_err
 * becomes the tool error the client reads.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mailbox/buf.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/labels.h"
#include "mcpd.h"

void
mcp_answer_init(struct mcp_answer *a)
{
	mb_buf_init(&a->text, 8u << 20);
	a->data = json_object();
	mcp_fence_nonce(a->nonce);
}

json_t *
mcp_answer_result(struct mcp_answer *a)
{
	json_t *r = json_pack("{s:[{s:s, s:s%}], s:o, s:b}", "content", "type", "text", "text",
	    a->text.data, a->text.len, "structuredContent", a->data, "isError", 0);

	mb_buf_release(&a->text);
	a->data = NULL;
	return r;
}

json_t *
mcp_add_message_links(json_t *result, json_t *items)
{
	json_t *content = json_object_get(result, "content"), *it;
	size_t i;

	json_array_foreach(items, i, it) {
		json_int_t id = json_integer_value(json_object_get(it, "id"));
		char uri[64], name[48];

		if (id <= 0)
			continue;
		snprintf(uri, sizeof(uri), "mail://message/%" JSON_INTEGER_FORMAT, id);
		/* no subject here: mail text goes inside the fence only */
		snprintf(name, sizeof(name), "message %" JSON_INTEGER_FORMAT, id);
		json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:s}", "type",
		    "resource_link", "uri", uri, "name", name, "mimeType", "text/plain"));
	}
	return result;
}

void
mcp_json_drop_nulls(json_t *j)
{
	const char *k;
	json_t *v;
	void *tmp;
	size_t i;

	if (json_is_object(j)) {
		json_object_foreach_safe(j, tmp, k, v) {
			if (json_is_null(v))
				json_object_del(j, k);
			else
				mcp_json_drop_nulls(v);
		}
	} else if (json_is_array(j))
		json_array_foreach(j, i, v)
			mcp_json_drop_nulls(v);
}

void
mcp_answer_release(struct mcp_answer *a)
{
	mb_buf_release(&a->text);
	json_decref(a->data);
	a->data = NULL;
}

json_t *
mcp_tool_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", msg,
	    "isError", 1);
}

json_t *
mcp_tool_failure(const char *tool, const struct mb_err *err)
{
	switch (err->code) {
	case MB_E_INVALID:
	case MB_E_AUTH:
		return mcp_tool_error("%s", err->msg);
	case MB_E_NOTFOUND:
		return mcp_tool_error("%s", err->msg[0] ? err->msg : "not found");
	case MB_E_TEMP:
		/* the handler's text is for the client (whether to retry, too: a write
		 * may have happened); the cause is logged where it was met */
		return mcp_tool_error("temporarily unavailable%s%s", err->msg[0] ? ": " :
		    ", retry later", err->msg);
	default:
		/* SQLite's and the library's words, paths included, stay in the log */
		mb_log_error("%s: %s: %s", tool, mb_errcode_name(err->code),
		    err->msg[0] ? err->msg : "failed without a message");
		return mcp_tool_error("internal error; see the server log");
	}
}

json_t *
mcp_index_unavailable(struct mb_err *err)
{
	mb_log_warnx("index unavailable: %s", err->msg);
	mb_err_clear(err);
	mb_err_set(err, MB_E_TEMP, "the mail index is not available right now (it may not "
	    "have been built yet); try again later");
	return NULL;
}

void
mcp_iso_date(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "%lld", (long long)t);
}

json_t *
mcp_flag_list(unsigned flags)
{
	json_t *a = json_array();

	/* the public words (include/mailbox/msg.h): "unread" when not seen */
	for (size_t i = 0; i < MB_FLAG_COUNT; i++) {
		const struct mb_flag_name *f = &mb_flag_names[i];

		if (flags & f->bit)
			json_array_append_new(a, json_string(f->word));
		else if (f->unset_word != NULL)
			json_array_append_new(a, json_string(f->unset_word));
	}
	return a;
}

json_t *
mcp_label_list(const char *keywords)
{
	json_t *a = json_array();
	size_t n;
	char **labels = mb_labels_split(keywords, &n);

	/* the one split search uses too: same labels in hits and messages */
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, mcp_str_json(labels[i]));
	mb_labels_free(labels, n);
	return a;
}

void
mcp_add_flags_text(struct mb_buf *b, json_t *flags)
{
	size_t i;
	json_t *f;

	json_array_foreach(flags, i, f)
		mb_buf_addf(b, "%s%s", i ? ", " : "", json_string_value(f));
}

void
mcp_add_fenced_fields(struct mcp_answer *a, json_t *obj, const char *const *keys,
    const char *const *labels, size_t n)
{
	struct mb_buf inner = MB_BUF_INIT(8u << 20);

	for (size_t i = 0; i < n; i++) {
		json_t *v = json_object_get(obj, keys[i]);

		if (json_is_string(v))
			mb_buf_addf(&inner, "%s: %s\n", labels[i], json_string_value(v));
	}
	mcp_fence_add(&a->text, a->nonce, inner.data, inner.len);
	mb_buf_release(&inner);
}

/* ---- values from the index */

/*
 * The index failed (err from libmailbox): MB_E_INTERNAL with its words
 * (logged, not sent), whatever class the index gave, so the client reads
 * "internal error" as for any failed read.  NULL.
 */
json_t *
mcp_index_failure(struct mb_err *err)
{
	char why[sizeof(err->msg)];

	memcpy(why, err->msg, sizeof(why));
	mb_err_clear(err);
	mb_err_set(err, MB_E_INTERNAL, "%s", why);
	return NULL;
}

/* A string from the index (NULL: json null), repaired where it is not UTF-8. */
json_t *
mcp_str_json(const char *s)
{
	return s ? mcp_json_text(s, strlen(s)) : json_null();
}

json_t *
mcp_date_json(bool has_date, int64_t t)
{
	char d[32];

	if (!has_date)
		return json_null();
	mcp_iso_date(t, d);
	return json_string(d);
}

/* ---- addresses */

/* The answer's array and display string for v[0..n). */
static json_t *
addrs_answer(const struct mb_addr *v, size_t n, json_t **display_r)
{
	struct mb_buf b = MB_BUF_INIT(1u << 20);
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		mcp_set_optional(o, "name", v[i].name);
		mcp_set_optional(o, "address", v[i].addr);
		mcp_set_optional(o, "group", v[i].group);
		if (json_object_size(o) > 0)
			json_array_append(arr, o);
		json_decref(o);
	}
	(void)mb_addr_list_format(&b, v, n);
	*display_r = b.len > 0 ? mcp_json_text(b.data, b.len) : json_null();
	mb_buf_release(&b);
	return arr;
}

/* A member of a stored address, or NULL when absent or empty. */
static char *
stored_member(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL && *s != '\0' ? (char *)s : NULL;
}

json_t *
mcp_addr_list_json(const char *stored, json_t **display_r)
{
	json_error_t e;
	json_t *arr = stored != NULL ? json_loads(stored, 0, &e) : NULL, *o, *r;
	struct mb_addr *v;
	size_t i, n = json_is_array(arr) ? json_array_size(arr) : 0;

	v = calloc(n ? n : 1, sizeof(*v));
	if (v == NULL)
		n = 0;
	for (i = 0; i < n; i++) {
		o = json_array_get(arr, i);
		/* Borrowed from arr, which outlives v. */
		v[i].name = stored_member(o, "name");
		v[i].addr = stored_member(o, "addr");
		v[i].group = stored_member(o, "group");
	}
	r = addrs_answer(v, n, display_r);
	free(v);
	json_decref(arr);
	return r;
}

json_t *
mcp_addr_one_json(const char *name, const char *addr, json_t **display_r)
{
	struct mb_addr a = { .name = (char *)name, .addr = (char *)addr };

	return addrs_answer(&a, name != NULL || addr != NULL ? 1 : 0, display_r);
}

void
mcp_set_optional(json_t *obj, const char *key, const char *s)
{
	if (s != NULL)
		json_object_set_new(obj, key, mcp_str_json(s));
}
