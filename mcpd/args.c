/*
 * Tool arguments, checked against the tool's inputSchema (mcpd/tools/<name>.json)
 * before its handler runs, so each argument is declared once, in the JSON.
 * Only the part of JSON Schema the definitions use is understood;
 * mcp_args_schema_ok() refuses a definition that needs more, at startup,
 * rather than letting an argument through unchecked.
 *
 * Not checked here, left to the handler or to syncd: string lengths (the
 * wire limits are in bytes, the schema's in characters) and the enum of an
 * array's items (flag_message passes \Deleted on to syncd, which refuses it
 * and writes the attempt to the audit log; docs/writes.md).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/buf.h"
#include "mcpd.h"

/* Every keyword a property may carry: the checked ones, and those only for the reader. */
static const char *const known_keywords[] = {
	"type", "enum", "minimum", "maximum", "default", "maxItems", "items",
	"description", "minLength", "maxLength",
};

static bool
is_keyword(const char *k)
{
	for (size_t i = 0; i < MB_ARRAY_LEN(known_keywords); i++)
		if (strcmp(k, known_keywords[i]) == 0)
			return true;
	return false;
}

static int
property_ok(const char *name, json_t *p, struct mb_err *err)
{
	const char *type = json_string_value(json_object_get(p, "type"));
	const char *k;
	json_t *v;

	if (!json_is_object(p) || type == NULL)
		return mb_err_set(err, MB_E_CONFIG, "property %s: no type", name);
	json_object_foreach(p, k, v)
		if (!is_keyword(k))
			return mb_err_set(err, MB_E_CONFIG, "property %s: keyword %s is not "
			    "checked (args.c)", name, k);
	if (strcmp(type, "array") == 0) {
		json_t *items = json_object_get(p, "items");

		if ((v = json_object_get(p, "maxItems")) != NULL && !json_is_integer(v))
			return mb_err_set(err, MB_E_CONFIG, "property %s: maxItems must be an "
			    "integer", name);
		if (!json_is_object(items) ||
		    !json_is_string(json_object_get(items, "type")) ||
		    strcmp(json_string_value(json_object_get(items, "type")), "string") != 0)
			return mb_err_set(err, MB_E_CONFIG, "property %s: only arrays of strings "
			    "are checked", name);
		return 0;
	}
	if (strcmp(type, "string") != 0 && strcmp(type, "integer") != 0 &&
	    strcmp(type, "boolean") != 0)
		return mb_err_set(err, MB_E_CONFIG, "property %s: type %s is not checked", name,
		    type);
	if ((v = json_object_get(p, "enum")) != NULL) {
		size_t i;
		json_t *c;

		if (!json_is_array(v) || json_array_size(v) == 0 || strcmp(type, "string") != 0)
			return mb_err_set(err, MB_E_CONFIG, "property %s: enum must list strings",
			    name);
		json_array_foreach(v, i, c)
			if (!json_is_string(c))
				return mb_err_set(err, MB_E_CONFIG, "property %s: enum must list "
				    "strings", name);
	}
	for (size_t i = 0; i < 3; i++) {
		static const char *const ints[] = { "minimum", "maximum", "default" };

		v = json_object_get(p, ints[i]);
		if (v != NULL && (strcmp(type, "integer") != 0 || !json_is_integer(v)))
			return mb_err_set(err, MB_E_CONFIG, "property %s: %s must be an integer "
			    "of an integer property", name, ints[i]);
	}
	return 0;
}

int
mcp_args_schema_ok(json_t *schema, struct mb_err *err)
{
	json_t *props = json_object_get(schema, "properties"), *p, *req;
	const char *name, *type = json_string_value(json_object_get(schema, "type"));
	size_t i;

	if (!json_is_object(props) || type == NULL || strcmp(type, "object") != 0)
		return mb_err_set(err, MB_E_CONFIG, "inputSchema is not an object schema with "
		    "properties");
	if (!json_is_false(json_object_get(schema, "additionalProperties")))
		return mb_err_set(err, MB_E_CONFIG, "inputSchema must say additionalProperties: "
		    "false (unknown arguments are refused)");
	json_object_foreach(props, name, p)
		if (property_ok(name, p, err) == -1)
			return -1;
	req = json_object_get(schema, "required");
	if (req != NULL && !json_is_array(req))
		return mb_err_set(err, MB_E_CONFIG, "required is not an array");
	json_array_foreach(req, i, p)
		if (!json_is_string(p) || json_object_get(props, json_string_value(p)) == NULL)
			return mb_err_set(err, MB_E_CONFIG, "required[%zu] is not a property", i);
	return 0;
}

static bool
required(json_t *schema, const char *name)
{
	size_t i;
	json_t *r;

	json_array_foreach(json_object_get(schema, "required"), i, r)
		if (strcmp(json_string_value(r), name) == 0)
			return true;
	return false;
}

/* An argument not in the schema: say which, and what the tool takes. */
static int
unknown_argument(json_t *props, const char *key, struct mb_err *err)
{
	struct mb_buf b = MB_BUF_INIT(sizeof(err->msg));
	const char *name;
	json_t *p;
	int n = 0;

	json_object_foreach(props, name, p)
		mb_buf_addf(&b, "%s%s", n++ ? ", " : "", name);
	mb_err_set(err, MB_E_INVALID, "unknown argument \"%.40s\"; this tool takes: %s", key,
	    n ? b.data : "no arguments");
	mb_buf_release(&b);
	return -1;
}

/* An integer as clients send them (5, 5.0, "5") into *out; -1 + err otherwise. */
static int
integer_value(const char *name, json_t *v, long long *out, struct mb_err *err)
{
	if (json_is_integer(v))
		*out = json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) > -0x1p63 &&
	    json_real_value(v) < 0x1p63 &&	/* a cast outside these is undefined */
	    json_real_value(v) == (double)(long long)json_real_value(v))
		*out = (long long)json_real_value(v);
	else if (json_is_string(v) && *json_string_value(v) != '\0') {
		char *end;

		errno = 0;
		*out = strtoll(json_string_value(v), &end, 10);
		if (*end != '\0' || errno != 0)
			return mb_err_set(err, MB_E_INVALID, "%s must be an integer, got \"%.40s\"",
			    name, json_string_value(v));
	} else
		return mb_err_set(err, MB_E_INVALID, "%s must be an integer", name);
	return 0;
}

/* One present argument v of property p into out (as the handler reads it). */
static int
check_one(const char *name, json_t *p, json_t *v, json_t *out, struct mb_err *err)
{
	const char *type = json_string_value(json_object_get(p, "type"));

	if (strcmp(type, "integer") == 0) {
		json_t *lo = json_object_get(p, "minimum"), *hi = json_object_get(p, "maximum");
		long long n = 0, min = lo ? json_integer_value(lo) : INT64_MIN;
		long long max = hi ? json_integer_value(hi) : INT64_MAX;

		if (integer_value(name, v, &n, err) == -1)
			return -1;
		if (n < min || n > max)
			return mb_err_set(err, MB_E_INVALID, "%s must be between %lld and %lld, "
			    "got %lld", name, min, max, n);
		json_object_set_new(out, name, json_integer(n));
		return 0;
	}
	if (strcmp(type, "boolean") == 0) {
		if (!json_is_boolean(v))
			return mb_err_set(err, MB_E_INVALID, "%s must be true or false", name);
	} else if (strcmp(type, "string") == 0) {
		json_t *e = json_object_get(p, "enum"), *c;
		size_t i;

		if (!json_is_string(v))
			return mb_err_set(err, MB_E_INVALID, "%s must be a string", name);
		json_array_foreach(e, i, c)
			if (json_equal(c, v))
				break;
		if (e != NULL && i == json_array_size(e)) {
			struct mb_buf b = MB_BUF_INIT(sizeof(err->msg));

			json_array_foreach(e, i, c)
				mb_buf_addf(&b, "%s%s", i ? ", " : "", json_string_value(c));
			mb_err_set(err, MB_E_INVALID, "%s must be one of %s, got \"%.40s\"", name,
			    b.data, json_string_value(v));
			mb_buf_release(&b);
			return -1;
		}
	} else {	/* an array of strings: mcp_args_schema_ok() allows nothing else */
		json_t *mx = json_object_get(p, "maxItems"), *s;
		const char *what = json_string_value(json_object_get(json_object_get(p, "items"),
		    "description"));
		size_t i;

		if (!json_is_array(v) || (mx && json_array_size(v) > (size_t)json_integer_value(mx)))
			return mx ? mb_err_set(err, MB_E_INVALID, "%s must be an array of at most "
			    "%" JSON_INTEGER_FORMAT " strings", name, json_integer_value(mx)) :
			    mb_err_set(err, MB_E_INVALID, "%s must be an array of strings", name);
		json_array_foreach(v, i, s)
			if (!json_is_string(s))
				return mb_err_set(err, MB_E_INVALID, "%s[%zu] must be a string%s%s",
				    name, i, what ? ": " : "", what ? what : "");
	}
	json_object_set(out, name, v);
	return 0;
}

json_t *
mcp_args_check(json_t *schema, json_t *args, struct mb_err *err)
{
	json_t *props = json_object_get(schema, "properties"), *out, *p, *v;
	const char *key;

	json_object_foreach(args, key, v)
		if (json_object_get(props, key) == NULL) {
			unknown_argument(props, key, err);
			return NULL;
		}
	out = json_object();
	json_object_foreach(props, key, p) {
		v = json_object_get(args, key);
		if (v == NULL || json_is_null(v)) {
			const char *what = json_string_value(json_object_get(p, "description"));

			if (required(schema, key)) {
				mb_err_set(err, MB_E_INVALID, "%s is required%s%s%s", key,
				    what ? " (" : "", what ? what : "", what ? ")" : "");
				json_decref(out);
				return NULL;
			}
			/*
			 * A copy, not a reference: the schema is shared by every
			 * thread, and jansson's json_incref() reads the count it
			 * then adds to atomically without a lock (ThreadSanitizer,
			 * tests/threads/mcpd_threads.sh).  A request owns what it
			 * builds.
			 */
			if ((v = json_object_get(p, "default")) != NULL)
				json_object_set_new(out, key, json_deep_copy(v));
			continue;
		}
		if (check_one(key, p, v, out, err) == -1) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

const char *
mcp_arg_str(json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}

int64_t
mcp_arg_int(json_t *args, const char *key)
{
	return json_integer_value(json_object_get(args, key));
}
