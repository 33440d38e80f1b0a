/*
 * The MIME normaliser: raw bytes in, struct mb_msg out.  See
 * include/mailbox/mime.h and docs/normaliser.md.
 *
 * GMime builds the tree (linear time, its own depth cap of 1024); we walk it
 * with an explicit stack in document order.  Text parts are decoded to UTF-8
 * (charset.c), cleaned and appended to one capped buffer; HTML goes through
 * mb_html_to_text(); everything else is an attachment.  Nothing here fails
 * the message: what cannot be read is noted in parse_error.
 *
 * Over 600 lines on purpose: the walk, the body buffer and the choice among
 * alternatives share struct walk and its scratch stream; the pieces that
 * need none of it live beside it (mime_base64.c, mime_envelope.c,
 * mime_placeholder.c, charset.c, flowed.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mailbox/html.h"
#include "mailbox/mime.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"
#include "mime-private.h"

#define MB_MIME_MAX_ATTACHMENTS	10000
#define MB_MIME_HTML_MIN	(1u << 20)	/* HTML bytes read at least ... */
#define MB_MIME_HTML_MAX	(64u << 20)	/* ... and at most */
static const char mb_trunc_marker[] = "\n[\xe2\x80\xa6 body truncated]";

enum walk_mode {
	WALK_BODY,	/* text parts become the body */
	WALK_ATTACH,	/* an alternative not chosen: only its attachments count */
};

struct frame {
	GMimeObject	*obj;
	unsigned	 depth;
	enum walk_mode	 mode;
};

struct walk {
	const struct mb_mime_opts	*opts;
	struct mb_msg	*msg;
	struct mb_buf	 body;		/* cleaned UTF-8, at most body_cap (+ slack) */
	bool		 truncated;
	bool		 any_plain, any_html;
	struct mb_buf	 errors;	/* "; "-joined parse errors */
	char		 hint[40];	/* charset of the Subject's encoded words */
	struct frame	*stack;
	size_t		 n_stack, cap_stack;
	size_t		 cap_att;
	GMimeStream	*scratch;	/* decoded bytes of the current part */
};

static void
walk_error(struct walk *w, const char *what)
{
	if (strstr(w->errors.data, what) != NULL)
		return;
	if (w->errors.len > 0)
		(void)mb_buf_adds(&w->errors, "; ");
	(void)mb_buf_adds(&w->errors, what);
}

static void
walk_push(struct walk *w, GMimeObject *obj, unsigned depth, enum walk_mode mode)
{
	if (obj == NULL)
		return;
	if (w->n_stack == w->cap_stack) {
		w->cap_stack = w->cap_stack ? w->cap_stack * 2 : 16;
		w->stack = mb_xrealloc(w->stack, w->cap_stack * sizeof(*w->stack));
	}
	w->stack[w->n_stack++] = (struct frame){ obj, depth, mode };
}

/*
 * Append UTF-8 text to the body, cleaned for a reader and an index: CRLF and
 * lone CR become LF, control characters other than tab and newline and the
 * invisible characters go, invalid bytes become U+FFFD.  Stops a little past
 * the cap; mb_mime_parse cuts at the cap itself, on a character boundary.
 */
static void
body_add(struct walk *w, const char *s, size_t len)
{
	struct mb_buf *b = &w->body;
	size_t limit = w->opts->body_cap + 8, i = 0, n, run;
	uint32_t cp;

	while (i < len) {
		if (b->len >= limit) {
			w->truncated = true;
			return;
		}
		/* Printable ASCII runs go in one copy. */
		for (run = i; run < len && run - i < limit - b->len &&
		    (((unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x7f) ||
		    s[run] == '\n' || s[run] == '\t'); run++)
			;
		if (run > i) {
			(void)mb_buf_add(b, s + i, run - i);
			i = run;
			continue;
		}
		if ((unsigned char)s[i] < 0x80) {
			if (s[i] == '\r' && !(i + 1 < len && s[i + 1] == '\n'))
				(void)mb_buf_addc(b, '\n');
			i++;	/* other controls and DEL are dropped */
			continue;
		}
		if ((n = mb_utf8_decode(s + i, len - i, &cp)) == 0) {
			(void)mb_buf_add(b, "\xef\xbf\xbd", 3);
			i++;
			continue;
		}
		if (!mb_utf8_is_invisible(cp) && !(cp >= 0x80 && cp < 0xa0))
			(void)mb_buf_add(b, s + i, n);
		i += n;
	}
}

/* Start a new part's text on a fresh paragraph. */
static void
body_separate(struct walk *w)
{
	struct mb_buf *b = &w->body;

	while (b->len > 0 && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == ' ' ||
	    b->data[b->len - 1] == '\t'))
		mb_buf_truncate(b, b->len - 1);
	if (b->len > 0)
		body_add(w, "\n\n", 2);
}

/*
 * The decoded (transfer encoding undone) bytes of part.  Borrowed: the array
 * is w->scratch's and the next part_bytes() call overwrites it.
 */
static GByteArray *
part_bytes(struct walk *w, GMimePart *part)
{
	GMimeDataWrapper *dw = g_mime_part_get_content(part);
	GByteArray *ba = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(w->scratch));

	g_byte_array_set_size(ba, 0);
	g_mime_stream_reset(w->scratch);
	if (dw != NULL && g_mime_data_wrapper_get_encoding(dw) == GMIME_CONTENT_ENCODING_BASE64)
		mb_mime_base64_bytes(dw, ba);
	else if (dw != NULL)
		(void)g_mime_data_wrapper_write_to_stream(dw, w->scratch);
	return ba;
}

/*
 * An HTML part with no charset parameter: look for <meta charset> early on.
 * Returns out (filled) or NULL; nothing is allocated.
 */
static const char *
html_sniff_charset(const char *s, size_t len, char *out, size_t outsz)
{
	size_t n = len < 2048 ? len : 2048, k = 0;
	const char *p;

	for (p = s; p + 8 < s + n; p++)
		if (strncasecmp(p, "charset=", 8) == 0)
			break;
	if (p + 8 >= s + n)
		return NULL;
	p += 8;
	while (p < s + n && (*p == '"' || *p == '\'' || *p == ' '))
		p++;
	while (p < s + n && k + 1 < outsz && (((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') ||
	    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == ':' || *p == '.'))
		out[k++] = *p++;
	out[k] = '\0';
	return k ? out : NULL;
}

/* Replace CRLF and lone CR by LF in place; returns the new length. */
static size_t
to_lf(char *s, size_t len)
{
	size_t r, w = 0;

	for (r = 0; r < len; r++) {
		if (s[r] == '\r') {
			s[w++] = '\n';
			if (r + 1 < len && s[r + 1] == '\n')
				r++;
		} else
			s[w++] = s[r];
	}
	return w;
}

/*
 * Text that declares no charset (or US-ASCII) yet is not ASCII and not
 * UTF-8: Japanese, Chinese and Korean mail of the early 2000s often did
 * this while labelling its Subject.  Read it in the Subject's charset when
 * every byte decodes in it; otherwise the caller's UTF-8/windows-1252 rule
 * applies.  Returns whether u was filled.
 */
static bool
undeclared_guess(struct walk *w, const char *cs, const char *data, size_t len, struct mb_buf *u)
{
	bool esc = memchr(data, 0x1b, len) != NULL;

	if (w->hint[0] == '\0' || (cs != NULL && *cs != '\0' && strcasecmp(cs, "us-ascii") != 0))
		return false;
	if (!esc && mb_utf8_valid(data, len))
		return false;
	if (mb_charset_try_utf8(w->hint, data, len, u) == 0)
		return true;
	/* A 7-bit Japanese Subject often heads an 8-bit Shift_JIS or EUC-JP body. */
	if (strncasecmp(w->hint, "iso-2022-jp", 11) == 0)
		return mb_charset_try_utf8("CP932", data, len, u) == 0 ||
		    mb_charset_try_utf8("EUC-JP", data, len, u) == 0;
	return false;
}

/*
 * The text of a text/plain or text/html part as UTF-8 with LF line ends,
 * into u (the caller's to release); *cut_r tells whether the input was
 * cut at the read cap.
 */
static void
part_utf8(struct walk *w, GMimeObject *obj, bool html, struct mb_buf *u, bool *cut_r)
{
	GByteArray *ba = part_bytes(w, GMIME_PART(obj));
	const char *cs = g_mime_object_get_content_type_parameter(obj, "charset");
	size_t len = ba->len, in_cap;
	const char *data = ba->data ? (const char *)ba->data : "";
	char sniffed[40];

	/* Read no more than can reach the cap: a 1 GB part costs what 1 MB does. */
	in_cap = html ? w->opts->body_cap * 16 : w->opts->body_cap * 4 + 4096;
	if (html && in_cap < MB_MIME_HTML_MIN)
		in_cap = MB_MIME_HTML_MIN;
	if (html && in_cap > MB_MIME_HTML_MAX)
		in_cap = MB_MIME_HTML_MAX;
	*cut_r = len > in_cap;
	if (len > in_cap)
		len = in_cap;
	if (html && (cs == NULL || *cs == '\0'))
		cs = html_sniff_charset(data, len, sniffed, sizeof(sniffed));
	if (!undeclared_guess(w, cs, data, len, u))
		(void)mb_charset_to_utf8(cs, data, len, u);
	u->len = to_lf(u->data, u->len);
}

/* A text/plain or text/html part that belongs to the body. */
static void
text_part(struct walk *w, GMimeObject *obj, bool html)
{
	const char *fmt = g_mime_object_get_content_type_parameter(obj, "format");
	const char *delsp = g_mime_object_get_content_type_parameter(obj, "delsp");
	struct mb_buf u = MB_BUF_INIT(SIZE_MAX / 2);
	bool cut;

	part_utf8(w, obj, html, &u, &cut);
	if (cut)
		w->truncated = true;
	body_separate(w);
	if (html) {
		size_t tlen;
		char *t = mb_html_to_text(u.data, u.len, &tlen);

		body_add(w, t, tlen);
		free(t);
		w->any_html = true;
	} else if (fmt != NULL && strcasecmp(fmt, "flowed") == 0) {
		struct mb_buf f = MB_BUF_INIT(SIZE_MAX / 2);

		(void)mb_flowed_decode(u.data, u.len, delsp != NULL &&
		    strcasecmp(delsp, "yes") == 0, &f);
		body_add(w, f.data, f.len);
		mb_buf_release(&f);
		w->any_plain = true;
	} else {
		body_add(w, u.data, u.len);
		w->any_plain = true;
	}
	mb_buf_release(&u);
}

/* A cleaned UTF-8 copy of a GMime string (lower-cased if asked), or NULL; caller frees. */
static char *
clean_dup(const char *s, bool lower)
{
	struct mb_buf b = MB_BUF_INIT(1u << 16);

	if (s == NULL || *s == '\0')
		return NULL;
	(void)mb_charset_to_utf8(NULL, s, strlen(s), &b);
	b.len = mb_utf8_strip_invisible(b.data, b.len);
	if (lower)
		for (size_t i = 0; i < b.len; i++)
			if (b.data[i] >= 'A' && b.data[i] <= 'Z')
				b.data[i] = (char)(b.data[i] - 'A' + 'a');
	return mb_buf_detach(&b, NULL);
}

static void
attachment(struct walk *w, GMimeObject *obj)
{
	struct mb_msg *m = w->msg;
	struct mb_attachment *a;
	GMimeContentType *ct = g_mime_object_get_content_type(obj);
	const char *disp = g_mime_object_get_disposition(obj);
	GByteArray *ba;
	char *type;

	if (m->n_attachments >= MB_MIME_MAX_ATTACHMENTS) {
		walk_error(w, "too many attachments: the rest skipped");
		return;
	}
	if (m->n_attachments == w->cap_att) {
		w->cap_att = w->cap_att ? w->cap_att * 2 : 4;
		m->attachments = mb_xrealloc(m->attachments, w->cap_att * sizeof(*a));
	}
	a = &m->attachments[m->n_attachments++];
	memset(a, 0, sizeof(*a));
	type = ct ? g_mime_content_type_get_mime_type(ct) : NULL;
	a->mime_type = clean_dup(type ? type : "application/octet-stream", true);
	g_free(type);
	a->content_id = clean_dup(g_mime_object_get_content_id(obj), false);
	a->charset = clean_dup(g_mime_object_get_content_type_parameter(obj, "charset"), true);
	a->is_inline = disp != NULL ? strcasecmp(disp, "inline") == 0 : a->content_id != NULL;
	if (GMIME_IS_PART(obj)) {
		const char *fn = g_mime_part_get_filename(GMIME_PART(obj));

		if (fn != NULL)
			a->filename = mb_rfc2047_decode(fn, strlen(fn));
		ba = part_bytes(w, GMIME_PART(obj));
	} else {
		/* message/rfc822 sent as an attachment: its bytes as they came. */
		GByteArray *sba = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(w->scratch));
		GMimeMessage *inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(obj));
		const char *fn = g_mime_object_get_content_disposition_parameter(obj, "filename");

		if (fn != NULL)
			a->filename = mb_rfc2047_decode(fn, strlen(fn));
		g_byte_array_set_size(sba, 0);
		g_mime_stream_reset(w->scratch);
		if (inner != NULL)
			(void)g_mime_object_write_to_stream(GMIME_OBJECT(inner), NULL, w->scratch);
		ba = sba;
	}
	if (a->filename != NULL && *a->filename == '\0') {
		free(a->filename);
		a->filename = NULL;
	}
	a->size = ba->len;
	if (w->opts->keep_attachment_data) {
		a->data = mb_xmalloc(ba->len ? ba->len : 1);
		if (ba->len > 0)
			memcpy(a->data, ba->data, ba->len);
	}
}

/* Whether a text part has anything but whitespace once decoded. */
static bool
part_has_text(struct walk *w, GMimePart *part)
{
	GByteArray *ba = part_bytes(w, part);

	for (size_t i = 0; i < ba->len; i++)
		if (ba->data[i] != ' ' && ba->data[i] != '\t' && ba->data[i] != '\r' &&
		    ba->data[i] != '\n')
			return true;
	return false;
}

/*
 * Whether the text/plain part plain is a placeholder for the HTML part html
 * (mb_mime_placeholder): only a short plain part is a candidate, and only
 * then is the HTML converted to measure it (once more when it wins).
 */
static bool
placeholder(struct walk *w, GMimeObject *plain, GMimeObject *html)
{
	struct mb_buf u = MB_BUF_INIT(SIZE_MAX / 2), h = MB_BUF_INIT(SIZE_MAX / 2);
	bool cut, r = false;
	size_t tlen;
	char *t;

	if (g_mime_part_get_content(GMIME_PART(plain)) == NULL)
		return false;
	part_utf8(w, plain, false, &u, &cut);
	if (u.len <= 2 * MB_MIME_PLACEHOLDER_MAX) {
		part_utf8(w, html, true, &h, &cut);
		t = mb_html_to_text(h.data, h.len, &tlen);
		r = mb_mime_placeholder(u.data, u.len, tlen);
		free(t);
	}
	mb_buf_release(&u);
	mb_buf_release(&h);
	return r;
}

/*
 * Which child of a multipart/alternative a reader is shown: plain text
 * first, unless it is empty (spam sends an empty text/plain beside the HTML
 * that carries the message) or only a placeholder for the HTML.
 */
static int
alternative_pick(struct walk *w, GMimeMultipart *mp)
{
	int best = -1, best_score = -1, html = -1, n = g_mime_multipart_get_count(mp);

	for (int i = 0; i < n; i++) {
		GMimeObject *c = g_mime_multipart_get_part(mp, i);
		GMimeContentType *ct = g_mime_object_get_content_type(c);
		int score = 0;

		if (GMIME_IS_MULTIPART(c))
			score = 2;
		else if (GMIME_IS_PART(c) && !g_mime_part_is_attachment(GMIME_PART(c)) && ct &&
		    g_mime_content_type_is_type(ct, "text", "plain"))
			score = part_has_text(w, GMIME_PART(c)) ? 3 : 0;
		else if (GMIME_IS_PART(c) && ct && g_mime_content_type_is_type(ct, "text", "html")) {
			score = 1;
			html = i;
		}
		if (score > best_score) {
			best = i;
			best_score = score;
		}
	}
	if (best_score == 3 && html >= 0 && placeholder(w, g_mime_multipart_get_part(mp, best),
	    g_mime_multipart_get_part(mp, html)))
		best = html;
	return best;
}

/* One "Name: value" line of the forwarded block, value decoded from RFC 2047. */
static void
forward_line(struct walk *w, const char *name, const char *value)
{
	char *s = mb_rfc2047_decode(value, strlen(value));

	body_add(w, name, strlen(name));
	body_add(w, s, strlen(s));
	body_add(w, "\n", 1);
	free(s);
}

/* The short block that introduces a forwarded message in the body. */
static void
forward_block(struct walk *w, GMimeMessage *inner)
{
	InternetAddressList *from = g_mime_message_get_from(inner);
	const char *subj = g_mime_object_get_header(GMIME_OBJECT(inner), "Subject");
	const char *date = g_mime_object_get_header(GMIME_OBJECT(inner), "Date");

	body_separate(w);
	body_add(w, "---------- Forwarded message ----------\n", 40);
	if (from != NULL && internet_address_list_length(from) > 0) {
		char *f = internet_address_list_to_string(from, NULL, FALSE);

		if (f != NULL)
			forward_line(w, "From: ", f);
		g_free(f);
	}
	if (date != NULL)
		forward_line(w, "Date: ", date);
	if (subj != NULL)
		forward_line(w, "Subject: ", subj);
	body_add(w, "\n", 1);
}

static void
visit(struct walk *w, struct frame f)
{
	GMimeObject *obj = f.obj;
	GMimeContentType *ct = g_mime_object_get_content_type(obj);

	if (f.depth > w->opts->max_depth) {
		walk_error(w, "MIME nesting too deep: inner parts skipped");
		return;
	}
	if (GMIME_IS_MULTIPART(obj)) {
		GMimeMultipart *mp = GMIME_MULTIPART(obj);
		int n = g_mime_multipart_get_count(mp), pick = -1;

		if (n == 0) {
			/* The boundary never appears: GMime leaves all text in the prologue. */
			const char *pro = g_mime_multipart_get_prologue(mp);

			walk_error(w, "boundary never appears");
			if (f.mode == WALK_BODY && pro != NULL) {
				struct mb_buf u = MB_BUF_INIT(SIZE_MAX / 2);
				size_t len = strlen(pro);

				if (len > w->opts->body_cap * 4 + 4096)
					len = w->opts->body_cap * 4 + 4096;
				(void)mb_charset_to_utf8(NULL, pro, len, &u);
				body_separate(w);
				body_add(w, u.data, u.len);
				mb_buf_release(&u);
				w->any_plain = true;
			}
			return;
		}
		if (ct && g_mime_content_type_is_type(ct, "multipart", "alternative") &&
		    f.mode == WALK_BODY)
			pick = alternative_pick(w, mp);
		/* Push in reverse so the first child is visited first. */
		for (int i = n - 1; i >= 0; i--)
			walk_push(w, g_mime_multipart_get_part(mp, i), f.depth + 1,
			    pick >= 0 && i != pick ? WALK_ATTACH : f.mode);
		return;
	}
	if (GMIME_IS_MESSAGE_PART(obj)) {
		GMimeMessage *inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(obj));
		const char *disp = g_mime_object_get_disposition(obj);

		if (disp != NULL && strcasecmp(disp, "attachment") == 0)
			attachment(w, obj);
		if (inner == NULL)
			return;
		if (f.mode == WALK_BODY)
			forward_block(w, inner);
		walk_push(w, g_mime_message_get_mime_part(inner), f.depth + 1, f.mode);
		return;
	}
	if (!GMIME_IS_PART(obj))
		return;
	if (!g_mime_part_is_attachment(GMIME_PART(obj)) &&
	    (ct == NULL || g_mime_content_type_is_type(ct, "text", "plain") ||
	    g_mime_content_type_is_type(ct, "text", "html"))) {
		if (f.mode == WALK_BODY)
			text_part(w, obj, ct != NULL && g_mime_content_type_is_type(ct, "text", "html"));
		return;
	}
	attachment(w, obj);
}

/* Mail that GMime cannot make a message of: the bytes are the text. */
static void
plain_fallback(struct walk *w, const char *raw, size_t len)
{
	struct mb_buf u = MB_BUF_INIT(SIZE_MAX / 2);

	if (len > w->opts->body_cap * 4 + 4096) {
		len = w->opts->body_cap * 4 + 4096;
		w->truncated = true;
	}
	(void)mb_charset_to_utf8(NULL, raw, len, &u);
	body_add(w, u.data, u.len);
	mb_buf_release(&u);
	w->any_plain = true;
	walk_error(w, "no MIME structure: parsed as plain text");
}

/* The body in NFC (docs/normaliser.md "Unicode forms"); ASCII is left as it is. */
static void
nfc(struct mb_buf *b)
{
	struct mb_buf n = MB_BUF_INIT(b->max);
	size_t i;

	for (i = 0; i < b->len && (unsigned char)b->data[i] < 0x80; i++)
		;
	if (i == b->len || mb_utf8_nfc(b->data, b->len, &n) == -1) {
		mb_buf_release(&n);
		return;
	}
	mb_buf_release(b);
	*b = n;
}

/* Trim, cap at a character boundary, and hand the body to the message. */
static void
body_finish(struct walk *w)
{
	struct mb_buf *b = &w->body;
	struct mb_msg *m = w->msg;
	size_t start = 0;

	while (b->len > 0 && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == ' ' ||
	    b->data[b->len - 1] == '\t'))
		mb_buf_truncate(b, b->len - 1);
	while (start < b->len && b->data[start] == '\n')
		start++;
	nfc(b);
	if (w->truncated || b->len > w->opts->body_cap) {
		mb_buf_truncate(b, mb_utf8_boundary(b->data, b->len, w->opts->body_cap));
		(void)mb_buf_adds(b, mb_trunc_marker);
		m->body_truncated = true;
	}
	free(m->body);
	if (start > 0) {
		m->body = mb_xstrndup(b->data + start, b->len - start);
		m->body_len = b->len - start;
		mb_buf_release(b);
	} else
		m->body = mb_buf_detach(b, &m->body_len);
	m->body_from_html = w->any_html && !w->any_plain;
}

int
mb_mime_parse(const char *raw, size_t len, const struct mb_mime_opts *opts,
    struct mb_msg **msg_r, struct mb_err *err)
{
	static const struct mb_mime_opts defaults = MB_MIME_OPTS_DEFAULT;
	struct walk w = { .opts = opts ? opts : &defaults };
	GMimeParserOptions *popts = mb_mime_parser_options();
	GMimeStream *s;
	GByteArray *ba;
	GMimeParser *p;
	GMimeMessage *m;
	const char *nl;

	*msg_r = NULL;
	if (raw == NULL && len > 0)
		return mb_err_set(err, MB_E_INVALID, "mime: no input");
	mb_mime_global_init();
	mb_buf_init(&w.body, SIZE_MAX / 2);
	mb_buf_init(&w.errors, 4096);
	w.msg = mb_msg_new();

	/* An mbox "From " separator line is not a header. */
	if (len >= 5 && memcmp(raw, "From ", 5) == 0) {
		nl = memchr(raw, '\n', len);
		len = nl ? len - (size_t)(nl + 1 - raw) : 0;
		raw = nl ? nl + 1 : raw + 5;
	}

	/*
	 * Wrap raw without copying it: the stream does not own the array, and
	 * every GMime object that could read it is gone before we return.
	 */
	ba = g_byte_array_new_take((guint8 *)(uintptr_t)(raw ? raw : ""), len);
	s = g_mime_stream_mem_new_with_byte_array(ba);
	g_mime_stream_mem_set_owner(GMIME_STREAM_MEM(s), FALSE);
	p = g_mime_parser_new_with_stream(s);
	m = g_mime_parser_construct_message(p, popts);
	w.scratch = g_mime_stream_mem_new();
	if (m == NULL || g_mime_object_get_header_list(GMIME_OBJECT(m)) == NULL ||
	    g_mime_header_list_get_count(g_mime_object_get_header_list(GMIME_OBJECT(m))) == 0) {
		plain_fallback(&w, raw ? raw : "", len);
	} else {
		mb_mime_envelope(m, popts, w.msg, w.hint, sizeof(w.hint));
		walk_push(&w, g_mime_message_get_mime_part(m), 0, WALK_BODY);
		while (w.n_stack > 0) {
			struct frame f = w.stack[--w.n_stack];

			visit(&w, f);
		}
	}
	body_finish(&w);
	if (w.msg->subject != NULL)
		w.msg->subject[mb_utf8_strip_invisible(w.msg->subject, strlen(w.msg->subject))] = '\0';
	if (w.errors.len > 0)
		w.msg->parse_error = mb_buf_detach(&w.errors, NULL);
	mb_buf_release(&w.errors);
	free(w.stack);
	if (m != NULL)
		g_object_unref(m);
	g_object_unref(p);
	g_object_unref(s);
	(void)g_byte_array_free(ba, FALSE);	/* the wrapper only: raw is the caller's */
	g_object_unref(w.scratch);
	*msg_r = w.msg;
	return 0;
}
