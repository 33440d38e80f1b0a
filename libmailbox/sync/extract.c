/*
 * Attachment text extraction: which extractor a type goes to, the input
 * and output caps, the text cleaning every extractor's output goes
 * through, and the per-message loop with its cache beside the blobs (the
 * same bytes are extracted once).  The formats are in extract_text.c,
 * extract_html.c, extract_ics.c, extract_pdf.c and extract_office.c; the
 * child process in extract_sandbox.c.  docs/attachments.md has the why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "mailbox/extract.h"
#include "mailbox/utf8.h"
#include "mailbox/util.h"

#include "extract-private.h"

static const struct {
	const char	*name;
	unsigned	 bit;
} type_names[] = {
	{ "text", MB_EXTRACT_TEXT },
	{ "html", MB_EXTRACT_HTML },
	{ "calendar", MB_EXTRACT_CALENDAR },
	{ "pdf", MB_EXTRACT_PDF },
	{ "office", MB_EXTRACT_OFFICE },
};

int
mb_extract_types_parse(const char *s, unsigned *types_r, struct mb_err *err)
{
	unsigned types = 0;
	const char *p = s;

	*types_r = MB_EXTRACT_ALL;
	if (s == NULL || *s == '\0')
		return 0;
	if (strcasecmp(s, "off") == 0 || strcasecmp(s, "none") == 0) {
		*types_r = 0;
		return 0;
	}
	while (*p != '\0') {
		size_t n = strcspn(p, ", ");
		size_t i;

		for (i = 0; n > 0 && i < MB_ARRAY_LEN(type_names); i++)
			if (strlen(type_names[i].name) == n && strncasecmp(p, type_names[i].name, n) == 0)
				break;
		if (n > 0 && i == MB_ARRAY_LEN(type_names))
			return mb_err_set(err, MB_E_CONFIG, "EXTRACT_TYPES: unknown type '%.*s'; "
			    "the types are text, html, calendar, pdf, office (or off)", (int)n, p);
		if (n > 0)
			types |= type_names[i].bit;
		p += n;
		p += strspn(p, ", ");
	}
	*types_r = types;
	return 0;
}

int
ex_fail(struct mb_extract_out *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->status, sizeof(out->status), fmt, ap);
	va_end(ap);
	return -1;
}

/* Append n bytes of valid UTF-8: 0, or 1 once the buffer is full. */
static int
add_valid(struct mb_extract_out *out, const char *s, size_t n)
{
	size_t room = out->text.max > out->text.len ? out->text.max - out->text.len - 1 : 0;

	if (n > room) {
		(void)mb_buf_add(&out->text, s, mb_utf8_boundary(s, n, room));
		return 1;
	}
	return mb_buf_add(&out->text, s, n) == 0 ? 0 : 1;
}

/*
 * The libraries' "UTF-8" is not always UTF-8: poppler encodes the lone
 * surrogates a hostile ToUnicode CMap maps glyphs to (ED B8 8C).  Every
 * extractor writes through here, so each entry point keeps the promise of
 * extract.h: runs of valid sequences are kept, each invalid byte becomes
 * U+FFFD.
 */
int
ex_add(struct mb_extract_out *out, const char *s, size_t n)
{
	static const char repl[] = "\xef\xbf\xbd";
	size_t run = 0, r = 0, k;
	uint32_t cp;

	if (mb_utf8_valid(s, n))
		return add_valid(out, s, n);
	while (r < n) {
		k = mb_utf8_decode(s + r, n - r, &cp);
		if (k > 0) {
			r += k;
			continue;
		}
		if (add_valid(out, s + run, r - run) || add_valid(out, repl, sizeof(repl) - 1))
			return 1;
		run = ++r;
	}
	return add_valid(out, s + run, r - run);
}

int
ex_adds(struct mb_extract_out *out, const char *s)
{
	return ex_add(out, s, strlen(s));
}

/* ---- which extractor */

enum ex_kind { EX_NONE, EX_TEXT, EX_HTML, EX_CALENDAR, EX_PDF, EX_OFFICE };

static const struct {
	const char	*prefix;	/* of the MIME type; a trailing '.' or '/' matches a family */
	enum ex_kind	 kind;
} kind_types[] = {
	{ "text/html", EX_HTML },
	{ "application/xhtml+xml", EX_HTML },
	{ "text/calendar", EX_CALENDAR },
	{ "application/ics", EX_CALENDAR },
	{ "text/", EX_TEXT },
	{ "application/csv", EX_TEXT },
	{ "application/json", EX_TEXT },
	{ "application/pdf", EX_PDF },
	{ "application/x-pdf", EX_PDF },
	{ "application/vnd.openxmlformats-officedocument.", EX_OFFICE },
	{ "application/vnd.oasis.opendocument.", EX_OFFICE },
	{ "application/vnd.ms-word.document.macroenabled.12", EX_OFFICE },
	{ "application/vnd.ms-excel.sheet.macroenabled.12", EX_OFFICE },
	{ "application/vnd.ms-powerpoint.presentation.macroenabled.12", EX_OFFICE },
};

/* Names that say the type when the MIME type is generic (octet-stream, zip). */
static const struct {
	const char	*ext;
	enum ex_kind	 kind;
} kind_exts[] = {
	{ ".txt", EX_TEXT }, { ".csv", EX_TEXT }, { ".md", EX_TEXT }, { ".tsv", EX_TEXT },
	{ ".log", EX_TEXT }, { ".htm", EX_HTML }, { ".html", EX_HTML }, { ".ics", EX_CALENDAR },
	{ ".pdf", EX_PDF }, { ".docx", EX_OFFICE }, { ".xlsx", EX_OFFICE },
	{ ".pptx", EX_OFFICE }, { ".odt", EX_OFFICE }, { ".ods", EX_OFFICE },
	{ ".odp", EX_OFFICE },
};

static enum ex_kind
kind_of(const char *type, const char *filename)
{
	size_t fl = filename != NULL ? strlen(filename) : 0;

	if (type != NULL)
		for (size_t i = 0; i < MB_ARRAY_LEN(kind_types); i++)
			if (strncasecmp(type, kind_types[i].prefix, strlen(kind_types[i].prefix)) == 0)
				return kind_types[i].kind;
	if (type != NULL && strcasecmp(type, "application/octet-stream") != 0 &&
	    strcasecmp(type, "application/zip") != 0 &&
	    strcasecmp(type, "application/x-zip-compressed") != 0 &&
	    strcasecmp(type, "binary/octet-stream") != 0)
		return EX_NONE;
	for (size_t i = 0; i < MB_ARRAY_LEN(kind_exts); i++) {
		size_t el = strlen(kind_exts[i].ext);

		if (fl > el && strcasecmp(filename + fl - el, kind_exts[i].ext) == 0)
			return kind_exts[i].kind;
	}
	return EX_NONE;
}

static unsigned
kind_bit(enum ex_kind k)
{
	static const unsigned bits[] = { 0, MB_EXTRACT_TEXT, MB_EXTRACT_HTML, MB_EXTRACT_CALENDAR,
	    MB_EXTRACT_PDF, MB_EXTRACT_OFFICE };

	return bits[k];
}

/*
 * The text every extractor gives, made safe to index and show: CR LF and
 * CR become LF, other control characters and NUL a space, invisible
 * characters dropped, runs of blank lines cut to one, and at most
 * max_chars characters kept.
 */
static void
clean(const struct mb_extract_limits *lim, struct mb_extract_out *out)
{
	char *s = out->text.data;
	size_t n = out->text.len, w = 0, nl = 0, cut;

	for (size_t r = 0; r < n; r++) {
		unsigned char c = (unsigned char)s[r];

		if (c == '\r') {
			if (r + 1 < n && s[r + 1] == '\n')
				continue;
			c = '\n';
		} else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
			c = ' ';
		if (c == '\n' && ++nl > 2)
			continue;
		if (c != '\n')
			nl = 0;
		s[w++] = (char)c;
	}
	while (w > 0 && (s[w - 1] == '\n' || s[w - 1] == ' ' || s[w - 1] == '\t'))
		w--;
	w = mb_utf8_strip_invisible(s, w);
	mb_buf_truncate(&out->text, w);
	cut = mb_utf8_offset(s, w, lim->max_chars);
	if (cut < w) {
		mb_buf_truncate(&out->text, cut);
		snprintf(out->status, sizeof(out->status), "ok: cut at %u characters",
		    lim->max_chars);
	}
}

void
mb_extract(const struct mb_extract_limits *lim, const char *type, const char *filename,
    const char *charset, const void *data, size_t len, bool sandbox, struct mb_extract_out *out)
{
	struct mb_err err = { 0 };
	enum ex_kind k = kind_of(type, filename);
	unsigned types;
	int r;

	/* A UTF-8 character is at most 4 bytes; a little more for the cut. */
	mb_buf_init(&out->text, (size_t)lim->max_chars * 4 + 64);
	snprintf(out->status, sizeof(out->status), "ok");
	if (mb_extract_types_parse(lim->types, &types, &err) == -1 || types == 0) {
		snprintf(out->status, sizeof(out->status), "skipped: extraction is off");
		return;
	}
	if (k == EX_NONE || (types & kind_bit(k)) == 0) {
		snprintf(out->status, sizeof(out->status), "skipped: %s is not extracted",
		    type != NULL ? type : "application/octet-stream");
		return;
	}
	if (len > lim->max_input) {
		snprintf(out->status, sizeof(out->status), "refused: %zu bytes, over the %u-byte "
		    "input cap (EXTRACT_MAX_INPUT)", len, lim->max_input);
		return;
	}
	switch (k) {
	case EX_TEXT:
	case EX_HTML:
	case EX_CALENDAR:
		if (sandbox) {
			ex_sandbox(lim, k == EX_TEXT ? mb_extract_text : k == EX_HTML ?
			    mb_extract_html : mb_extract_calendar, charset, data, len, out);
			r = strncmp(out->status, "ok", 2) == 0 ? 0 : -1;
		} else if (k == EX_TEXT)
			r = mb_extract_text(lim, charset, data, len, out);
		else if (k == EX_HTML)
			r = mb_extract_html(lim, charset, data, len, out);
		else
			r = mb_extract_calendar(lim, charset, data, len, out);
		break;
	case EX_PDF:
	case EX_OFFICE:
		ex_sandbox(lim, k == EX_PDF ? mb_extract_pdf : mb_extract_office, charset, data, len,
		    out);
		r = strncmp(out->status, "ok", 2) == 0 ? 0 : -1;
		break;
	default:
		r = -1;
		break;
	}
	if (r == -1) {
		mb_buf_reset(&out->text);
		return;
	}
	clean(lim, out);
	if (out->text.len == 0)
		snprintf(out->status, sizeof(out->status), "empty: the document holds no text");
}

/* ---- the message loop and the cache beside the blobs */

static int
sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return -1;
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/*
 * The cache file's first line: the limits the outcome was reached under.
 * An outcome under other limits (a raised cap, a type switched on) is not
 * reused.
 */
static void
cache_tag(const struct mb_extract_limits *lim, char *tag, size_t sz)
{
	unsigned types = MB_EXTRACT_ALL;
	struct mb_err err = { 0 };

	(void)mb_extract_types_parse(lim->types, &types, &err);
	snprintf(tag, sz, "mb-extract 1 %x %u %u %u %u %u %u %u %u\n", types, lim->max_input,
	    lim->max_chars, lim->cpu_seconds, lim->memory_mb, lim->zip_max_mb,
	    lim->zip_max_ratio, lim->zip_max_entries, lim->max_depth);
}

static void
cache_path(const char *blob_dir, const char *sha, char *path, size_t sz)
{
	snprintf(path, sz, "%s/%.2s/%s.txt", blob_dir, sha, sha + 2);
}

/* 0 and out filled from the cache, or -1: not there (or not for these limits). */
static int
cache_get(const struct mb_extract_limits *lim, const char *blob_dir, const char *sha,
    struct mb_extract_out *out)
{
	char path[4200], tag[160], *buf, *nl1, *nl2;
	struct stat st;
	ssize_t n;
	size_t tl;
	int fd;

	cache_path(blob_dir, sha, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > (uint64_t)lim->max_chars * 4 + 512) {
		close(fd);
		return -1;
	}
	buf = mb_xmalloc((size_t)st.st_size + 1);
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	cache_tag(lim, tag, sizeof(tag));
	tl = strlen(tag);
	nl1 = (size_t)n >= tl && memcmp(buf, tag, tl) == 0 ? buf + tl - 1 : NULL;
	nl2 = nl1 != NULL ? memchr(nl1 + 1, '\n', (size_t)(buf + n - nl1 - 1)) : NULL;
	if (nl2 == NULL || (size_t)(nl2 - nl1 - 1) >= sizeof(out->status) ||
	    memchr(buf, '\0', (size_t)n) != NULL) {
		free(buf);
		return -1;
	}
	mb_buf_init(&out->text, (size_t)lim->max_chars * 4 + 64);
	memcpy(out->status, nl1 + 1, (size_t)(nl2 - nl1 - 1));
	out->status[nl2 - nl1 - 1] = '\0';
	(void)mb_buf_add(&out->text, nl2 + 1, (size_t)(buf + n - nl2 - 1));
	free(buf);
	return 0;
}

/* Best effort: a cache that cannot be written only costs a second extraction. */
static void
cache_put(const struct mb_extract_limits *lim, const char *blob_dir, const char *sha,
    const struct mb_extract_out *out)
{
	char dir[4200], path[4200], tmp[4300], tag[160];
	FILE *f;
	int fd;

	snprintf(dir, sizeof(dir), "%s/%.2s", blob_dir, sha);
	if (mkdir(blob_dir, 0750) == -1 && errno != EEXIST)
		return;
	if (mkdir(dir, 0750) == -1 && errno != EEXIST)
		return;
	cache_path(blob_dir, sha, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/.tmp.XXXXXX", dir);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd == -1)
		return;
	f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		unlink(tmp);
		return;
	}
	cache_tag(lim, tag, sizeof(tag));
	fputs(tag, f);
	fprintf(f, "%s\n", out->status);
	fwrite(out->text.data, 1, out->text.len, f);
	if (fchmod(fd, 0640) == -1 || fclose(f) != 0 || rename(tmp, path) == -1)
		unlink(tmp);
}

void
mb_extract_message(const struct mb_extract_limits *lim, const char *data_dir,
    struct mb_msg *msg)
{
	size_t budget = MB_EXTRACT_MSG_MAX;
	char dir[4096];
	const char *blob_dir = NULL;

	if (data_dir != NULL) {
		snprintf(dir, sizeof(dir), "%s/blobs", data_dir);
		blob_dir = dir;
	}

	for (size_t i = 0; i < msg->n_attachments; i++) {
		struct mb_attachment *a = &msg->attachments[i];
		struct mb_extract_out out;
		bool have = false;

		if (a->data == NULL || a->text_status != NULL)
			continue;
		if (a->sha256[0] == '\0' && sha256_hex(a->data, a->size, a->sha256) == -1)
			a->sha256[0] = '\0';
		if (blob_dir != NULL && a->sha256[0] != '\0' &&
		    cache_get(lim, blob_dir, a->sha256, &out) == 0)
			have = true;
		if (!have) {
			mb_extract(lim, a->mime_type, a->filename, a->charset, a->data, a->size,
			    false, &out);
			if (blob_dir != NULL && a->sha256[0] != '\0' &&
			    strncmp(out.status, "skipped", 7) != 0)
				cache_put(lim, blob_dir, a->sha256, &out);
		}
		if (out.text.len > budget) {
			size_t cut = mb_utf8_boundary(out.text.data, out.text.len, budget);

			mb_buf_truncate(&out.text, cut);
			snprintf(out.status, sizeof(out.status), cut > 0 ? "ok: cut at %zu bytes, "
			    "the message's text budget" : "refused: the message's other attachments "
			    "used its text budget of %zu bytes", cut > 0 ? cut : budget);
		}
		budget -= out.text.len;
		a->text_status = mb_xstrdup(out.status);
		if (strncmp(out.status, "ok", 2) == 0)
			a->text = mb_buf_detach(&out.text, &a->text_len);
		mb_buf_release(&out.text);
	}
}
