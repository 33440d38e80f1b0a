/*
 * text/calendar (RFC 5545): an invitation as the text a reader of it needs
 * -- what (summary), who (organiser, attendees), when (start and end, with
 * their zone), where (location) and the description -- one event after
 * another.  Hand-written because only these few properties are read: the
 * lines are unfolded, split into name, parameters and value, and TEXT
 * values unescaped.  Everything else in the calendar is ignored.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mailbox/util.h"

#include "extract-private.h"
#include "mime-private.h"

struct ics_event {
	struct mb_buf	summary, organiser, attendees, start, end, location, description;
};

static void
event_init(struct ics_event *e)
{
	struct mb_buf *v[] = { &e->summary, &e->organiser, &e->attendees, &e->start, &e->end,
	    &e->location, &e->description };

	for (size_t i = 0; i < MB_ARRAY_LEN(v); i++)
		mb_buf_init(v[i], 64u << 10);
}

static void
event_release(struct ics_event *e)
{
	struct mb_buf *v[] = { &e->summary, &e->organiser, &e->attendees, &e->start, &e->end,
	    &e->location, &e->description };

	for (size_t i = 0; i < MB_ARRAY_LEN(v); i++)
		mb_buf_release(v[i]);
}

/* A TEXT value unescaped (\n, \N, \, \; \\) onto b. */
static void
add_text(struct mb_buf *b, const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = v[i];

		if (c == '\\' && i + 1 < n) {
			c = v[++i];
			if (c == 'n' || c == 'N')
				c = '\n';
		}
		(void)mb_buf_addc(b, c);
	}
}

/* The value of parameter name in params (n bytes), quotes removed, onto b. */
static bool
param(const char *params, size_t n, const char *name, struct mb_buf *b)
{
	size_t nl = strlen(name), i = 0;

	while (i < n) {
		size_t start = i, eq;
		bool q = false;

		while (i < n && (q || params[i] != ';')) {
			if (params[i] == '"')
				q = !q;
			i++;
		}
		eq = start;
		while (eq < i && params[eq] != '=')
			eq++;
		if (eq - start == nl && strncasecmp(params + start, name, nl) == 0 && eq < i) {
			const char *v = params + eq + 1;
			size_t vl = i - eq - 1;

			if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
				v++;
				vl -= 2;
			}
			(void)mb_buf_add(b, v, vl);
			return true;
		}
		i++;
	}
	return false;
}

/* "Name <addr>" of an ORGANIZER or ATTENDEE (CN parameter, mailto: value). */
static void
add_person(struct mb_buf *b, const char *params, size_t pl, const char *v, size_t vl)
{
	size_t before = b->len;

	if (b->len > 0)
		(void)mb_buf_adds(b, ", ");
	if (vl >= 7 && strncasecmp(v, "mailto:", 7) == 0) {
		v += 7;
		vl -= 7;
	}
	if (param(params, pl, "CN", b)) {
		(void)mb_buf_adds(b, " <");
		(void)mb_buf_add(b, v, vl);
		(void)mb_buf_addc(b, '>');
	} else
		(void)mb_buf_add(b, v, vl);
	if (b->len == before + (before > 0 ? 2 : 0))
		mb_buf_truncate(b, before);
}

/* A DATE or DATE-TIME as "YYYY-MM-DD HH:MM zone". */
static void
add_time(struct mb_buf *b, const char *params, size_t pl, const char *v, size_t vl)
{
	struct mb_buf tz = MB_BUF_INIT(256);

	if (vl >= 8 && strspn(v, "0123456789") >= 8) {
		(void)mb_buf_addf(b, "%.4s-%.2s-%.2s", v, v + 4, v + 6);
		if (vl >= 13 && v[8] == 'T' && strspn(v + 9, "0123456789") >= 4) {
			(void)mb_buf_addf(b, " %.2s:%.2s", v + 9, v + 11);
			if (v[vl - 1] == 'Z')
				(void)mb_buf_adds(b, " UTC");
			else if (param(params, pl, "TZID", &tz))
				(void)mb_buf_addf(b, " %s", tz.data);
			else
				(void)mb_buf_adds(b, " (floating local time)");
		} else
			(void)mb_buf_adds(b, " (all day)");
	} else
		(void)mb_buf_add(b, v, vl);
	mb_buf_release(&tz);
}

static void
emit(struct mb_extract_out *out, const char *method, struct ics_event *e)
{
	static const char *const labels[] = { "Organiser", "Attendees", "Start", "End",
	    "Location", "Description" };
	struct mb_buf *v[] = { &e->organiser, &e->attendees, &e->start, &e->end, &e->location,
	    &e->description };
	const char *what = strcasecmp(method, "REQUEST") == 0 ? "Invitation" :
	    strcasecmp(method, "CANCEL") == 0 ? "Cancelled" :
	    strcasecmp(method, "REPLY") == 0 ? "Reply" : "Event";

	if (out->text.len > 0)
		(void)ex_adds(out, "\n\n");
	(void)ex_adds(out, what);
	(void)ex_adds(out, ": ");
	(void)ex_add(out, e->summary.data, e->summary.len);
	for (size_t i = 0; i < MB_ARRAY_LEN(v); i++) {
		if (v[i]->len == 0)
			continue;
		(void)ex_adds(out, "\n");
		(void)ex_adds(out, labels[i]);
		(void)ex_adds(out, ": ");
		(void)ex_add(out, v[i]->data, v[i]->len);
	}
}

/* One unfolded content line: name;params:value. */
static void
line(const char *s, size_t n, bool *in_event, char *method, size_t msz, struct ics_event *e,
    struct mb_extract_out *out)
{
	size_t name_end = strcspn(s, ";:"), colon = name_end, pl = 0;
	const char *params = s + name_end, *v;
	bool q = false;
	size_t vl;

	if (name_end >= n)
		return;
	while (colon < n && (q || s[colon] != ':')) {
		if (s[colon] == '"')
			q = !q;
		colon++;
	}
	if (colon >= n)
		return;
	if (s[name_end] == ';') {
		params = s + name_end + 1;
		pl = colon - name_end - 1;
	}
	v = s + colon + 1;
	vl = n - colon - 1;
#define IS(w)	(name_end == strlen(w) && strncasecmp(s, w, name_end) == 0)
	if (IS("BEGIN") && vl == 6 && strncasecmp(v, "VEVENT", 6) == 0) {
		*in_event = true;
		event_release(e);
		event_init(e);
	} else if (IS("END") && vl == 6 && strncasecmp(v, "VEVENT", 6) == 0 && *in_event) {
		*in_event = false;
		emit(out, method, e);
	} else if (IS("METHOD") && !*in_event)
		snprintf(method, msz, "%.*s", (int)vl, v);
	else if (!*in_event)
		return;
	else if (IS("SUMMARY"))
		add_text(&e->summary, v, vl);
	else if (IS("LOCATION"))
		add_text(&e->location, v, vl);
	else if (IS("DESCRIPTION"))
		add_text(&e->description, v, vl);
	else if (IS("ORGANIZER"))
		add_person(&e->organiser, params, pl, v, vl);
	else if (IS("ATTENDEE"))
		add_person(&e->attendees, params, pl, v, vl);
	else if (IS("DTSTART"))
		add_time(&e->start, params, pl, v, vl);
	else if (IS("DTEND"))
		add_time(&e->end, params, pl, v, vl);
#undef IS
}

int
mb_extract_calendar(const struct mb_extract_limits *lim, const char *charset, const void *data,
    size_t len, struct mb_extract_out *out)
{
	struct mb_buf u, l;
	struct ics_event e;
	char method[32] = "";
	bool in_event = false;
	size_t i = 0;

	mb_buf_init(&u, len * 3 + 16);
	(void)mb_charset_to_utf8(charset != NULL ? charset : "utf-8", data, len, &u);
	mb_buf_init(&l, u.len + 1);
	event_init(&e);
	while (i < u.len) {
		size_t j = i;

		mb_buf_reset(&l);
		/* One logical line: a line break followed by a space or tab continues it. */
		for (;;) {
			size_t k = j;

			while (k < u.len && u.data[k] != '\n' && u.data[k] != '\r')
				k++;
			(void)mb_buf_add(&l, u.data + j, k - j);
			if (k < u.len && u.data[k] == '\r')
				k++;
			if (k < u.len && u.data[k] == '\n')
				k++;
			j = k;
			if (j < u.len && (u.data[j] == ' ' || u.data[j] == '\t'))
				j++;
			else
				break;
		}
		if (l.len > 0)
			line(l.data, l.len, &in_event, method, sizeof(method), &e, out);
		i = j;
	}
	event_release(&e);
	mb_buf_release(&l);
	mb_buf_release(&u);
	if (out->text.len == 0)
		return ex_fail(out, "empty: the calendar holds no event");
	return 0;
}
