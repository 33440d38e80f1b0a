/*
 * The filters of the query language (include/mailbox/query.h): each field
 * that is not text narrows struct mb_query, which index_search.c turns into
 * bound SQL values.  Nothing here builds SQL or FTS5 text.  docs/query.md is
 * the user's table of these fields.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mailbox/buf.h"
#include "mailbox/msg.h"
#include "mailbox/query.h"
#include "mailbox/util.h"

#include "query-private.h"

#define SHOWN(vlen)	((int)((vlen) > 40 ? 40 : (vlen)))	/* how much of a value an error quotes */

static bool
is_word(const char *v, size_t vlen, const char *w)
{
	return strlen(w) == vlen && strncasecmp(v, w, vlen) == 0;
}

/* ---- dates */

static bool
leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* n digits of s as a number, or -1 when one is not a digit. */
static int
digits(const char *s, size_t n)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static int64_t
utc_day(int y, int m, int d)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = m - 1;
	tm.tm_mday = d;
	return (int64_t)timegm(&tm);
}

int
mb_query_parse_date(const char *s, size_t len, int64_t *t_r)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, m, d;

	if (len != 10 || s[4] != '-' || s[7] != '-')
		return -1;
	y = digits(s, 4);
	m = digits(s + 5, 2);
	d = digits(s + 8, 2);
	if (y < 1970 || m < 1 || m > 12 || d < 1 ||
	    d > mdays[m - 1] + (m == 2 && leap(y) ? 1 : 0))
		return -1;
	*t_r = utc_day(y, m, d);
	return 0;
}

/*
 * The local midnight days after (or, negative, before) the day of now, in
 * the server's time zone (TZ): mktime() normalises the day of the month and
 * knows daylight saving time.
 */
static int64_t
local_midnight(int64_t now, int days)
{
	time_t t = (time_t)now;
	struct tm tm;

	localtime_r(&t, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mday += days;
	tm.tm_isdst = -1;
	return (int64_t)mktime(&tm);
}

/*
 * A day, month or year (YYYY-MM-DD, YYYY-MM, YYYY: UTC; today, yesterday:
 * local) as the time span [*start_r, *end_r).  Returns -1 for anything else.
 */
static int
date_span(const struct mb_query *q, const char *v, size_t vlen, int64_t *start_r,
    int64_t *end_r)
{
	int y, m;

	if (is_word(v, vlen, "today") || is_word(v, vlen, "yesterday")) {
		int back = vlen == 5 ? 0 : -1;

		*start_r = local_midnight(q->now, back);
		*end_r = local_midnight(q->now, back + 1);
		return 0;
	}
	if (vlen == 10) {
		if (mb_query_parse_date(v, vlen, start_r) == -1)
			return -1;
		*end_r = *start_r + 86400;
		return 0;
	}
	y = vlen >= 4 ? digits(v, 4) : -1;
	if (y < 1970)
		return -1;
	if (vlen == 4) {
		*start_r = utc_day(y, 1, 1);
		*end_r = utc_day(y + 1, 1, 1);
		return 0;
	}
	if (vlen != 7 || v[4] != '-' || (m = digits(v + 5, 2)) < 1 || m > 12)
		return -1;
	*start_r = utc_day(y, m, 1);
	*end_r = m == 12 ? utc_day(y + 1, 1, 1) : utc_day(y, m + 1, 1);
	return 0;
}

/* Narrow q to [since, until): every date filter goes through here. */
static void
narrow_dates(struct mb_query *q, int64_t since, int64_t until)
{
	if (since > q->since)
		q->since = since;
	if (until < q->until)
		q->until = until;
}

/* date:SPAN, date:A..B, date:..B, date:A.. */
static int
date_filter(struct mb_query *q, const char *v, size_t vlen, struct mb_err *err)
{
	const char *dots = memmem(v, vlen, "..", 2);
	int64_t a0, a1, b0, b1;

	if (dots == NULL) {
		if (date_span(q, v, vlen, &a0, &a1) == -1)
			goto bad;
		narrow_dates(q, a0, a1);
		return 0;
	}
	{
		size_t la = (size_t)(dots - v), lb = vlen - la - 2;

		if ((la == 0 && lb == 0) || (la > 0 && date_span(q, v, la, &a0, &a1) == -1) ||
		    (lb > 0 && date_span(q, dots + 2, lb, &b0, &b1) == -1))
			goto bad;
		narrow_dates(q, la > 0 ? a0 : INT64_MIN, lb > 0 ? b1 : INT64_MAX);
		return 0;
	}
bad:
	return mb_err_set(err, MB_E_INVALID, "date: wants a day, month or year (date:2024-03-01, "
	    "date:2024-03, date:2024, date:today, date:yesterday) or a range of them "
	    "(date:2024-03-01..2024-03-31, date:..2023, date:2024..), got '%.*s'", SHOWN(vlen), v);
}

/* newer_than:/older_than: N followed by d, w, m or y, back from q->now (local time). */
static int
relative_filter(struct mb_query *q, bool newer, const char *name, const char *v, size_t vlen,
    struct mb_err *err)
{
	int n = vlen >= 2 && vlen <= 6 ? digits(v, vlen - 1) : -1;
	char unit = vlen > 0 ? (char)tolower((unsigned char)v[vlen - 1]) : 0;
	time_t t = (time_t)q->now;
	struct tm tm;
	int64_t at;

	if (n < 0 || strchr("dwmy", unit) == NULL || unit == '\0')
		return mb_err_set(err, MB_E_INVALID, "%s: wants a number and a unit: d (days), "
		    "w (weeks), m (months) or y (years), e.g. %s:7d or %s:1y; got '%.*s'", name,
		    name, name, SHOWN(vlen), v);
	localtime_r(&t, &tm);
	if (unit == 'd')
		tm.tm_mday -= n;
	else if (unit == 'w')
		tm.tm_mday -= 7 * n;
	else if (unit == 'm')
		tm.tm_mon -= n;
	else
		tm.tm_year -= n;
	tm.tm_isdst = -1;
	at = (int64_t)mktime(&tm);
	narrow_dates(q, newer ? at : INT64_MIN, newer ? INT64_MAX : at);
	return 0;
}

/* after:/before: a day (or month, year, today, yesterday): its start. */
static int
bound_filter(struct mb_query *q, bool after, const char *name, const char *v, size_t vlen,
    struct mb_err *err)
{
	int64_t start, end;

	if (date_span(q, v, vlen, &start, &end) == -1)
		return mb_err_set(err, MB_E_INVALID,
		    "%s: wants a date written YYYY-MM-DD (e.g. %s:2024-01-31; also YYYY-MM, "
		    "YYYY, today, yesterday), got '%.*s'", name, name, SHOWN(vlen), v);
	narrow_dates(q, after ? start : INT64_MIN, after ? INT64_MAX : start);
	return 0;
}

/* ---- sizes */

/* 5000, 10K, 5M, 1G (1K = 1024; a trailing B allowed) into *n_r; -1 for anything else. */
static int
parse_size(const char *v, size_t vlen, int64_t *n_r)
{
	int64_t n = 0, mult = 1;
	size_t i = 0;

	for (; i < vlen && isdigit((unsigned char)v[i]); i++) {
		if (i == 12)
			return -1;	/* past a terabyte: no message is that big */
		n = n * 10 + (v[i] - '0');
	}
	if (i == 0)
		return -1;
	if (i < vlen) {
		switch (tolower((unsigned char)v[i])) {
		case 'k': mult = 1024; i++; break;
		case 'm': mult = 1024 * 1024; i++; break;
		case 'g': mult = 1024 * 1024 * 1024; i++; break;
		default: break;
		}
	}
	if (i < vlen && tolower((unsigned char)v[i]) == 'b')
		i++;
	if (i != vlen)
		return -1;
	*n_r = n * mult;
	return 0;
}

static void
narrow_size(struct mb_query *q, int64_t min, int64_t max)
{
	if (min >= 0 && min > q->size_min)
		q->size_min = min;
	if (max >= 0 && (q->size_max < 0 || max < q->size_max))
		q->size_max = max;
}

/* size:N (at least N), size:A..B (inclusive), larger:N (over N), smaller:N (under N). */
static int
size_filter(struct mb_query *q, enum q_field f, const char *name, const char *v, size_t vlen,
    struct mb_err *err)
{
	int64_t a = -1, b = -1;
	const char *dots = f == QF_SIZE ? memmem(v, vlen, "..", 2) : NULL;

	if (dots != NULL) {
		size_t la = (size_t)(dots - v), lb = vlen - la - 2;

		if ((la == 0 && lb == 0) || (la > 0 && parse_size(v, la, &a) == -1) ||
		    (lb > 0 && parse_size(dots + 2, lb, &b) == -1))
			goto bad;
		narrow_size(q, a, b >= 0 ? b + 1 : -1);
		return 0;
	}
	if (parse_size(v, vlen, &a) == -1)
		goto bad;
	if (f == QF_SIZE)
		narrow_size(q, a, -1);
	else if (f == QF_LARGER)
		narrow_size(q, a + 1, -1);
	else
		narrow_size(q, -1, a);
	return 0;
bad:
	return mb_err_set(err, MB_E_INVALID, "%s: wants a size in bytes, K, M or G (e.g. "
	    "%s:10K, %s:5M%s), got '%.*s'", name, name, name,
	    f == QF_SIZE ? ", size:1M..5M" : "", SHOWN(vlen), v);
}

/* ---- the rest */

/* Set *slot to v once; a second, different value is a contradiction. */
static int
set_once(char **slot, const char *v, size_t vlen, const char *name, struct mb_err *err)
{
	if (*slot != NULL && (strlen(*slot) != vlen || memcmp(*slot, v, vlen) != 0))
		return mb_err_set(err, MB_E_INVALID, "two different %s: values given; a message "
		    "has only one", name);
	if (*slot == NULL)
		*slot = mb_xstrndup(v, vlen);
	return 0;
}

/* The special-use role an in: value names (in:inbox is the folder INBOX). */
static const struct {
	const char	*word;
	const char	*role;
} roles[] = {
	{ "sent", "\\Sent" }, { "drafts", "\\Drafts" }, { "draft", "\\Drafts" },
	{ "trash", "\\Trash" }, { "junk", "\\Junk" }, { "spam", "\\Junk" },
	{ "archive", "\\Archive" }, { "all", "\\All" },
};

static int
folder_filter(struct mb_query *q, enum q_field f, const char *name, const char *v,
    size_t vlen, bool neg, struct mb_err *err)
{
	const char *role = NULL;

	if (neg)
		return mb_err_set(err, MB_E_INVALID,
		    "%s: cannot be negated; name the folder to search instead", name);
	if (f == QF_IN && is_word(v, vlen, "inbox")) {
		v = "INBOX";
		vlen = 5;
	}
	for (size_t i = 0; f == QF_IN && i < MB_ARRAY_LEN(roles); i++)
		if (is_word(v, vlen, roles[i].word))
			role = roles[i].role;
	if ((role ? q->folder != NULL : q->role != NULL) ||
	    (role ? q->role != NULL && strcmp(q->role, role) != 0 :
	    q->folder != NULL && (strlen(q->folder) != vlen || memcmp(q->folder, v, vlen) != 0)))
		return mb_err_set(err, MB_E_INVALID,
		    "two different folders given; a search covers one folder or all");
	if (role != NULL && q->role == NULL)
		q->role = mb_xstrdup(role);
	if (role == NULL && q->folder == NULL)
		q->folder = mb_xstrndup(v, vlen);
	return 0;
}

static int
id_filter(struct mb_query *q, const char *name, const char *v, size_t vlen,
    struct mb_err *err)
{
	if (vlen >= 2 && v[0] == '<' && v[vlen - 1] == '>') {
		v++;
		vlen -= 2;
	}
	if (vlen == 0 || vlen > 998 || memchr(v, ' ', vlen) != NULL)
		return mb_err_set(err, MB_E_INVALID, "%s: wants a Message-ID, e.g. "
		    "%s:<1234@example.com> (the brackets are optional)", name, name);
	return set_once(&q->msgid, v, vlen, name, err);
}

static int
thread_filter(struct mb_query *q, const char *v, size_t vlen, struct mb_err *err)
{
	int64_t n = 0;

	for (size_t i = 0; i < vlen; i++) {
		if (!isdigit((unsigned char)v[i]) || i == 16) {
			n = 0;
			break;
		}
		n = n * 10 + (v[i] - '0');
	}
	if (n <= 0)
		return mb_err_set(err, MB_E_INVALID, "thread: wants a thread_id as search hits "
		    "give it (a positive number), got '%.*s'", SHOWN(vlen), v);
	if (q->thread_id != 0 && q->thread_id != n)
		return mb_err_set(err, MB_E_INVALID, "two different thread: values given; a "
		    "message is in one thread");
	q->thread_id = n;
	return 0;
}

static int
list_filter(struct mb_query *q, const char *v, size_t vlen, struct mb_err *err)
{
	char *lower = mb_xstrndup(v, vlen);
	int rc;

	for (char *p = lower; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	rc = set_once(&q->list, lower, vlen, "list", err);
	free(lower);
	return rc;
}

/*
 * account: adds the name to q->accounts (space-separated, each once).  A
 * name is 1-32 of [a-z0-9_]; capitals are folded, as mcpd's ACCOUNTS
 * names are lower case.  Whether the account exists is the caller's word.
 */
static int
account_filter(struct mb_query *q, const char *v, size_t vlen, struct mb_err *err)
{
	struct mb_buf b = MB_BUF_INIT(MB_QUERY_MAX_LEN + 64);
	char name[33];
	const char *p;

	if (vlen > 32)
		goto bad;
	for (size_t i = 0; i < vlen; i++) {
		char c = (char)tolower((unsigned char)v[i]);

		if (!(isdigit((unsigned char)c) || (c >= 'a' && c <= 'z') || c == '_'))
			goto bad;
		name[i] = c;
	}
	name[vlen] = '\0';
	for (p = q->accounts; p != NULL && *p; p += strcspn(p, " "), p += *p == ' ')
		if (strncmp(p, name, vlen) == 0 && (p[vlen] == ' ' || p[vlen] == '\0'))
			return 0;	/* named twice: once is enough */
	if ((q->accounts && (mb_buf_adds(&b, q->accounts) == -1 || mb_buf_addc(&b, ' ') == -1)) ||
	    mb_buf_adds(&b, name) == -1) {
		mb_buf_release(&b);
		return mb_err_set(err, MB_E_INTERNAL, "query: out of buffer space");
	}
	free(q->accounts);
	q->accounts = mb_buf_detach(&b, NULL);
	return 0;
bad:
	return mb_err_set(err, MB_E_INVALID, "account: wants an account name (1-32 letters, "
	    "digits or _; list_accounts names them), got '%.*s'", SHOWN(vlen), v);
}

/* label: appends "+x" (or "-x") to q->labels, the argument of mb_labels_test(). */
static int
label_filter(struct mb_query *q, const char *name, const char *v, size_t vlen, bool neg,
    struct mb_err *err)
{
	struct mb_buf b = MB_BUF_INIT(MB_QUERY_MAX_LEN * 2 + 16);
	size_t n = 0;

	if (v[0] == '\\' || memchr(v, ' ', vlen) != NULL)
		return mb_err_set(err, MB_E_INVALID, "%s: wants one IMAP keyword, without spaces "
		    "or a leading backslash (system flags are is: filters: is:flagged, is:draft)",
		    name);
	for (const char *p = q->labels; p != NULL && *p; p++)
		n += *p == ' ';
	if (q->labels != NULL && n + 1 >= MB_QUERY_MAX_LABELS)
		return mb_err_set(err, MB_E_INVALID, "too many label: filters (at most %d)",
		    MB_QUERY_MAX_LABELS);
	if ((q->labels && (mb_buf_adds(&b, q->labels) == -1 || mb_buf_addc(&b, ' ') == -1)) ||
	    mb_buf_addc(&b, neg ? '-' : '+') == -1 || mb_buf_add(&b, v, vlen) == -1) {
		mb_buf_release(&b);
		return mb_err_set(err, MB_E_INTERNAL, "query: out of buffer space");
	}
	free(q->labels);
	q->labels = mb_buf_detach(&b, NULL);
	return 0;
}

static int
has_filter(struct mb_query *q, const char *v, size_t vlen, bool neg, struct mb_err *err)
{
	if (!is_word(v, vlen, "attachment") && !is_word(v, vlen, "attachments"))
		return mb_err_set(err, MB_E_INVALID,
		    "unknown has: value '%.*s'; the only one is has:attachment", SHOWN(vlen), v);
	if (q->has_attachment != -1 && q->has_attachment != !neg)
		return mb_err_set(err, MB_E_INVALID,
		    "has:attachment and -has:attachment contradict each other");
	q->has_attachment = !neg;
	return 0;
}

static const struct {
	const char	*word;
	unsigned	 bit;
	bool		 set;
} is_words[] = {
	{ "unread", MB_FLAG_SEEN, false }, { "read", MB_FLAG_SEEN, true },
	{ "flagged", MB_FLAG_FLAGGED, true }, { "starred", MB_FLAG_FLAGGED, true },
	{ "answered", MB_FLAG_ANSWERED, true }, { "replied", MB_FLAG_ANSWERED, true },
	{ "draft", MB_FLAG_DRAFT, true },
};

static int
is_filter(struct mb_query *q, const char *v, size_t vlen, bool neg, struct mb_err *err)
{
	size_t i;
	bool set;

	for (i = 0; i < MB_ARRAY_LEN(is_words) && !is_word(v, vlen, is_words[i].word); i++)
		;
	if (i == MB_ARRAY_LEN(is_words))
		return mb_err_set(err, MB_E_INVALID, "unknown is: value '%.*s'; use is:unread, "
		    "is:read, is:flagged (is:starred), is:answered (is:replied) or is:draft",
		    SHOWN(vlen), v);
	set = is_words[i].set != neg;
	if (set)
		q->flags_set |= is_words[i].bit;
	else
		q->flags_clear |= is_words[i].bit;
	if (q->flags_set & q->flags_clear)
		return mb_err_set(err, MB_E_INVALID,
		    "contradictory is: filters (e.g. is:read with is:unread)");
	return 0;
}

static int
me_filter(int *slot, const char *name, bool neg, struct mb_err *err)
{
	if (*slot != -1 && *slot != !neg)
		return mb_err_set(err, MB_E_INVALID, "%s:me and -%s:me contradict each other",
		    name, name);
	*slot = !neg;
	return 0;
}

/* An example for "needs a value". */
static const char *
example(enum q_field f)
{
	switch (f) {
	case QF_FOLDER: return "folder:INBOX";
	case QF_IN: return "in:sent";
	case QF_DATE: return "date:2024-03";
	case QF_NEWER: case QF_OLDER: return "newer_than:7d";
	case QF_SIZE: case QF_LARGER: case QF_SMALLER: return "larger:5M";
	case QF_ID: return "id:1234@example.com";
	case QF_THREAD: return "thread:42";
	case QF_LIST: return "list:lists.example.org";
	case QF_ACCOUNT: return "account:work";
	case QF_LABEL: return "label:project-x";
	case QF_HAS: return "has:attachment";
	case QF_IS: return "is:unread";
	default: return "after:2024-01-31";
	}
}

void
q_dates_note(struct mb_query *q, const char *name, const char *v, size_t vlen, bool relative)
{
	struct mb_buf b = MB_BUF_INIT(MB_QUERY_MAX_LEN * 4 + 64);

	if ((q->dates != NULL && (mb_buf_adds(&b, q->dates) == -1 || mb_buf_addc(&b, ' ') == -1)) ||
	    mb_buf_addf(&b, "%s:", name) == -1 || mb_buf_add(&b, v, vlen) == -1) {
		mb_buf_release(&b);
		return;	/* over the bound of any real query: the hash is weaker, no more */
	}
	free(q->dates);
	q->dates = mb_buf_detach(&b, NULL);
	q->dates_relative |= relative;
}

int
q_filter_apply(struct mb_query *q, enum q_field f, const char *name, const char *v,
    size_t vlen, bool neg, struct mb_err *err)
{
	if (vlen == 0)
		return mb_err_set(err, MB_E_INVALID, "%s: needs a value, e.g. %s", name,
		    example(f));
	if (neg && f != QF_LABEL && f != QF_HAS && f != QF_IS && f != QF_FROM_ME &&
	    f != QF_TO_ME && f != QF_FOLDER && f != QF_IN) {
		const char *instead = f == QF_AFTER ? "use before: instead" :
		    f == QF_BEFORE ? "use after: instead" :
		    f == QF_NEWER ? "use older_than: instead" :
		    f == QF_OLDER ? "use newer_than: instead" :
		    f == QF_LARGER ? "use smaller: instead" :
		    f == QF_SMALLER ? "use larger: instead" :
		    f == QF_DATE ? "use before: or after: instead" :
		    f == QF_SIZE ? "use smaller: instead" :
		    f == QF_ACCOUNT ? "name the accounts to search instead" :
		    "search for what you want instead";

		return mb_err_set(err, MB_E_INVALID, "%s: cannot be negated; %s", name, instead);
	}
	if (q->now == 0)
		q->now = (int64_t)time(NULL);
	switch (f) {
	case QF_FOLDER:
	case QF_IN:
		return folder_filter(q, f, name, v, vlen, neg, err);
	case QF_AFTER:
	case QF_BEFORE:
	case QF_DATE:
	case QF_NEWER:
	case QF_OLDER:
		/* today and yesterday are relative too: their day is the clock's */
		q_dates_note(q, name, v, vlen, f == QF_NEWER || f == QF_OLDER ||
		    memmem(v, vlen, "day", 3) != NULL);
		if (f == QF_DATE)
			return date_filter(q, v, vlen, err);
		if (f == QF_NEWER || f == QF_OLDER)
			return relative_filter(q, f == QF_NEWER, name, v, vlen, err);
		return bound_filter(q, f == QF_AFTER, name, v, vlen, err);
	case QF_SIZE:
	case QF_LARGER:
	case QF_SMALLER:
		return size_filter(q, f, name, v, vlen, err);
	case QF_ID:
		return id_filter(q, name, v, vlen, err);
	case QF_THREAD:
		return thread_filter(q, v, vlen, err);
	case QF_LIST:
		return list_filter(q, v, vlen, err);
	case QF_LABEL:
		return label_filter(q, name, v, vlen, neg, err);
	case QF_ACCOUNT:
		return account_filter(q, v, vlen, err);
	case QF_HAS:
		return has_filter(q, v, vlen, neg, err);
	case QF_IS:
		return is_filter(q, v, vlen, neg, err);
	case QF_FROM_ME:
		return me_filter(&q->from_me, "from", neg, err);
	case QF_TO_ME:
		return me_filter(&q->to_me, "to", neg, err);
	default:
		return mb_err_set(err, MB_E_INTERNAL, "query: field %d is not a filter", (int)f);
	}
}
