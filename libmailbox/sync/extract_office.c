/*
 * Office documents -- OOXML (DOCX, XLSX, PPTX) and OpenDocument (ODT, ODS,
 * ODP) -- are zip files of XML: libzip opens the container, libxml2's
 * streaming reader walks the XML, and this file only says which elements
 * hold text.  The container is hostile: before anything is inflated the
 * entry count, the total uncompressed size and the compression ratio are
 * checked against the limits (a zip bomb is refused, not inflated), every
 * read is bounded by the bytes actually inflated (a lying size header
 * cannot get past the cap), XML nesting is bounded, entities are never
 * expanded and nothing is fetched from the network.  Embedded documents
 * (a zip inside the zip) are not opened: nesting stops at one level.
 * Runs only in the extraction child (extract_sandbox.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlreader.h>
#include <zip.h>

#include "mailbox/util.h"

#include "extract-private.h"

#define RATIO_FLOOR	(1u << 20)	/* entries smaller than this may compress any amount */

struct office {
	const struct mb_extract_limits	*lim;
	zip_t				*z;
	uint64_t			 inflated;	/* bytes read so far, all entries */
	struct mb_extract_out		*out;
	int				 full;	/* the text buffer is full */
};

/* Check the container before inflating anything.  0, or -1 with the status set. */
static int
office_check(struct office *o, uint64_t packed)
{
	zip_int64_t n = zip_get_num_entries(o->z, 0);
	uint64_t total = 0, cap = (uint64_t)o->lim->zip_max_mb << 20;

	if (n < 0 || (uint64_t)n > o->lim->zip_max_entries)
		return ex_fail(o->out, "refused: %lld entries in the zip, over the %u allowed "
		    "(EXTRACT_ZIP_MAX_ENTRIES)", (long long)n, o->lim->zip_max_entries);
	for (zip_int64_t i = 0; i < n; i++) {
		zip_stat_t st;

		zip_stat_init(&st);
		if (zip_stat_index(o->z, (zip_uint64_t)i, 0, &st) == -1)
			return ex_fail(o->out, "failed: a zip entry cannot be read");
		if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
		    st.encryption_method != ZIP_EM_NONE)
			return ex_fail(o->out, "encrypted: the document's entries are encrypted");
		if (!(st.valid & ZIP_STAT_SIZE))
			continue;
		total += st.size;
		if (total > cap)
			return ex_fail(o->out, "refused: over %u MiB uncompressed, a zip bomb "
			    "(EXTRACT_ZIP_MAX_MB)", o->lim->zip_max_mb);
		if ((st.valid & ZIP_STAT_COMP_SIZE) && st.size > RATIO_FLOOR &&
		    st.size / (st.comp_size ? st.comp_size : 1) > o->lim->zip_max_ratio)
			return ex_fail(o->out, "refused: an entry inflates %llu times, a zip bomb "
			    "(EXTRACT_ZIP_MAX_RATIO is %u)", (unsigned long long)(st.size /
			    (st.comp_size ? st.comp_size : 1)), o->lim->zip_max_ratio);
	}
	if (total > RATIO_FLOOR && total / (packed ? packed : 1) > o->lim->zip_max_ratio)
		return ex_fail(o->out, "refused: the document inflates %llu times, a zip bomb "
		    "(EXTRACT_ZIP_MAX_RATIO is %u)", (unsigned long long)(total / packed),
		    o->lim->zip_max_ratio);
	return 0;
}

/*
 * Entry name inflated into a new buffer (*len_r bytes, NUL-terminated, the
 * caller frees), bounded by what the budget has left.  NULL when there is
 * no such entry; NULL with the status set when it fails or is too large.
 */
static char *
office_read(struct office *o, const char *name, size_t *len_r, bool *bad_r)
{
	uint64_t cap = (uint64_t)o->lim->zip_max_mb << 20;
	zip_int64_t idx = zip_name_locate(o->z, name, 0);
	struct mb_buf b;
	zip_file_t *f;
	char chunk[16384];
	zip_int64_t n;

	*bad_r = false;
	if (idx < 0)
		return NULL;
	f = zip_fopen_index(o->z, (zip_uint64_t)idx, 0);
	if (f == NULL) {
		*bad_r = true;
		ex_fail(o->out, "failed: the entry %s cannot be opened", name);
		return NULL;
	}
	mb_buf_init(&b, cap + 1);
	while ((n = zip_fread(f, chunk, sizeof(chunk))) > 0) {
		o->inflated += (uint64_t)n;
		if (o->inflated > cap || mb_buf_add(&b, chunk, (size_t)n) == -1) {
			n = -2;
			break;
		}
	}
	zip_fclose(f);
	if (n < 0) {
		*bad_r = true;
		mb_buf_release(&b);
		if (n == -2)
			ex_fail(o->out, "refused: over %u MiB uncompressed, a zip bomb "
			    "(EXTRACT_ZIP_MAX_MB)", o->lim->zip_max_mb);
		else
			ex_fail(o->out, "failed: the entry %s is damaged", name);
		return NULL;
	}
	return mb_buf_detach(&b, len_r);
}

/* ---- the XML walk */

/* What one kind of document keeps from its XML. */
struct xml_rules {
	const char	*text_in;	/* local name of the text elements; NULL: all text */
	const char	*para;		/* |-separated local names whose end is a line break */
	const char	*tab;		/* names that are a tab (empty, or at their end) */
	const char	*brk;		/* empty elements that are a line break */
	const char	*space;		/* empty elements that are a space (ODF text:s) */
	const char	*title;		/* an element whose attribute title_attr heads a section */
	const char	*title_attr;
	const char	*title_label;
};

static bool
in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p != NULL && *p != '\0';) {
		size_t l = strcspn(p, "|");

		if (l == n && strncmp(p, name, n) == 0)
			return true;
		p += l;
		if (*p == '|')
			p++;
	}
	return false;
}

static void
put(struct office *o, const char *s)
{
	if (!o->full)
		o->full = ex_adds(o->out, s);
}

/* A reader that never fetches anything and never expands an entity. */
static xmlTextReaderPtr
xml_open(const char *xml, size_t len)
{
	return xmlReaderForMemory(xml, (int)len, NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
	    XML_PARSE_NOWARNING);
}

/*
 * The next node of rd, its type and local name ("" for none): 1, or 0 at
 * the end, or -1 with the status set (damaged XML, or nested deeper than
 * the limit).
 */
static int
xml_next(struct office *o, xmlTextReaderPtr rd, int *type_r, const char **name_r)
{
	int rc = xmlTextReaderRead(rd);

	/* set on every path: gcc -O3 cannot see that ex_fail() returns -1 (-Wmaybe-uninitialized) */
	*type_r = 0;
	*name_r = "";
	if (rc == -1)
		return ex_fail(o->out, "failed: the document's XML is damaged");
	if (rc != 1)
		return 0;
	if (xmlTextReaderDepth(rd) > (int)o->lim->max_depth)
		return ex_fail(o->out, "refused: the XML nests deeper than %u elements "
		    "(EXTRACT_MAX_DEPTH)", o->lim->max_depth);
	*type_r = xmlTextReaderNodeType(rd);
	*name_r = (const char *)xmlTextReaderConstLocalName(rd);
	if (*name_r == NULL)
		*name_r = "";
	return 1;
}

/*
 * Walk one XML document.  0, or -1 with the status set (nesting too deep,
 * or not XML).
 */
static int
xml_walk(struct office *o, const char *xml, size_t len, const struct xml_rules *r)
{
	xmlTextReaderPtr rd = xml_open(xml, len);
	int rc = 0, in_text = 0, type;
	const char *name;

	if (rd == NULL)
		return ex_fail(o->out, "failed: the document's XML cannot be read");
	while (!o->full && (rc = xml_next(o, rd, &type, &name)) == 1) {
		if (type == XML_READER_TYPE_ELEMENT) {
			bool empty = xmlTextReaderIsEmptyElement(rd);

			if (r->text_in != NULL && strcmp(name, r->text_in) == 0 && !empty)
				in_text++;
			if (r->title != NULL && strcmp(name, r->title) == 0) {
				xmlChar *t = xmlTextReaderGetAttribute(rd,
				    (const xmlChar *)r->title_attr);

				if (t != NULL) {
					if (o->out->text.len > 0)
						put(o, "\n\n");
					put(o, r->title_label);
					put(o, (const char *)t);
					put(o, "\n");
					xmlFree(t);
				}
			}
			if (empty && in_list(r->tab, name))
				put(o, "\t");
			else if (empty && in_list(r->brk, name))
				put(o, "\n");
			else if (empty && in_list(r->space, name))
				put(o, " ");
		} else if (type == XML_READER_TYPE_END_ELEMENT) {
			if (r->text_in != NULL && strcmp(name, r->text_in) == 0 && in_text > 0)
				in_text--;
			if (in_list(r->para, name))
				put(o, "\n");
			else if (in_list(r->tab, name))
				put(o, "\t");
		} else if ((type == XML_READER_TYPE_TEXT ||
		    type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE ||
		    type == XML_READER_TYPE_CDATA) && (r->text_in == NULL || in_text > 0)) {
			const char *v = (const char *)xmlTextReaderConstValue(rd);

			if (v != NULL)
				put(o, v);
		}
	}
	xmlFreeTextReader(rd);
	return rc == -1 ? -1 : 0;
}

/* Read entry name and walk it; a missing entry is fine (0) unless required. */
static int
office_part(struct office *o, const char *name, const struct xml_rules *r, bool required)
{
	size_t len;
	bool bad;
	char *xml = office_read(o, name, &len, &bad);
	int ret;

	if (xml == NULL)
		return bad || required ? (bad ? -1 : ex_fail(o->out, "failed: no %s", name)) : 0;
	ret = xml_walk(o, xml, len, r);
	free(xml);
	return ret;
}

/* Numbered parts: ppt/slides/slide1.xml, slide2.xml ... until one is missing. */
static int
office_numbered(struct office *o, const char *prefix, const char *label,
    const struct xml_rules *r)
{
	char name[64];

	for (unsigned i = 1; i <= o->lim->zip_max_entries && !o->full; i++) {
		snprintf(name, sizeof(name), "%s%u.xml", prefix, i);
		if (zip_name_locate(o->z, name, 0) < 0)
			break;
		if (label != NULL) {
			char head[64];

			snprintf(head, sizeof(head), "%s%s %u\n", o->out->text.len > 0 ? "\n\n" : "",
			    label, i);
			put(o, head);
		}
		if (office_part(o, name, r, true) == -1)
			return -1;
	}
	return 0;
}

/* ---- XLSX: cells refer to shared strings by index */

struct xlsx {
	char	**strings;
	size_t	  n, cap;
};

static void
xlsx_release(struct xlsx *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->strings[i]);
	free(x->strings);
}

static int
xlsx_strings(struct office *o, struct xlsx *x)
{
	size_t len;
	bool bad;
	char *xml = office_read(o, "xl/sharedStrings.xml", &len, &bad);
	xmlTextReaderPtr rd;
	struct mb_buf cur = MB_BUF_INIT(1u << 20);
	int rc = 0, in_t = 0, in_rph = 0, type;
	const char *name;

	if (xml == NULL)
		return bad ? -1 : 0;
	rd = xml_open(xml, len);
	while (rd != NULL && (rc = xml_next(o, rd, &type, &name)) == 1) {
		if (type == XML_READER_TYPE_ELEMENT && !xmlTextReaderIsEmptyElement(rd)) {
			if (strcmp(name, "si") == 0)
				mb_buf_reset(&cur);
			else if (strcmp(name, "t") == 0)
				in_t++;
			else if (strcmp(name, "rPh") == 0)
				in_rph++;
		} else if (type == XML_READER_TYPE_END_ELEMENT) {
			if (strcmp(name, "t") == 0 && in_t > 0)
				in_t--;
			else if (strcmp(name, "rPh") == 0 && in_rph > 0)
				in_rph--;
			else if (strcmp(name, "si") == 0) {
				if (x->n == x->cap) {
					x->cap = x->cap ? 2 * x->cap : 64;
					x->strings = mb_xrealloc(x->strings, x->cap * sizeof(char *));
				}
				x->strings[x->n++] = mb_xstrdup(cur.data);
			}
		} else if ((type == XML_READER_TYPE_TEXT ||
		    type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE) && in_t > 0 && in_rph == 0) {
			const char *v = (const char *)xmlTextReaderConstValue(rd);

			if (v != NULL)
				(void)mb_buf_adds(&cur, v);
		}
	}
	if (rd != NULL)
		xmlFreeTextReader(rd);
	mb_buf_release(&cur);
	free(xml);
	return rc == -1 ? -1 : 0;
}

/* One worksheet: a row per line, cells separated by tabs. */
static int
xlsx_sheet(struct office *o, const struct xlsx *x, const char *xml, size_t len)
{
	xmlTextReaderPtr rd = xml_open(xml, len);
	struct mb_buf v = MB_BUF_INIT(1u << 20);
	bool shared = false, in_v = false, first = true;
	int rc = 0, type;
	const char *name;

	if (rd == NULL)
		return ex_fail(o->out, "failed: a worksheet's XML cannot be read");
	while (!o->full && (rc = xml_next(o, rd, &type, &name)) == 1) {
		if (type == XML_READER_TYPE_ELEMENT) {
			if (strcmp(name, "c") == 0) {
				xmlChar *t = xmlTextReaderGetAttribute(rd, (const xmlChar *)"t");

				shared = t != NULL && strcmp((const char *)t, "s") == 0;
				xmlFree(t);
				mb_buf_reset(&v);
			} else if (strcmp(name, "v") == 0 || strcmp(name, "t") == 0)
				in_v = !xmlTextReaderIsEmptyElement(rd);
			else if (strcmp(name, "row") == 0)
				first = true;
		} else if (type == XML_READER_TYPE_END_ELEMENT) {
			if (strcmp(name, "v") == 0 || strcmp(name, "t") == 0)
				in_v = false;
			else if (strcmp(name, "c") == 0 && v.len > 0) {
				const char *s = v.data;

				if (shared) {
					char *end;
					unsigned long k = strtoul(v.data, &end, 10);

					s = *end == '\0' && k < x->n ? x->strings[k] : "";
				}
				if (!first)
					put(o, "\t");
				put(o, s);
				first = false;
			} else if (strcmp(name, "row") == 0)
				put(o, "\n");
		} else if (type == XML_READER_TYPE_TEXT && in_v) {
			const char *t = (const char *)xmlTextReaderConstValue(rd);

			if (t != NULL)
				(void)mb_buf_adds(&v, t);
		}
	}
	xmlFreeTextReader(rd);
	mb_buf_release(&v);
	return rc == -1 ? -1 : 0;
}

/* The sheets in workbook order, each headed by its name. */
static int
office_xlsx(struct office *o)
{
	struct xlsx x = { 0 };
	size_t len;
	bool bad;
	char *wb = office_read(o, "xl/workbook.xml", &len, &bad);
	char **names = NULL;
	size_t n_names = 0;
	int ret = 0;

	if (wb == NULL)
		return bad ? -1 : ex_fail(o->out, "failed: no xl/workbook.xml");
	/* Sheet names: <sheet name="..."/> in order (sheetN.xml is the N-th). */
	{
		xmlTextReaderPtr rd = xml_open(wb, len);
		const char *name;
		int type;

		while (rd != NULL && (ret = xml_next(o, rd, &type, &name)) == 1) {
			if (type == XML_READER_TYPE_ELEMENT && strcmp(name, "sheet") == 0 && n_names < o->lim->zip_max_entries) {
				xmlChar *t = xmlTextReaderGetAttribute(rd, (const xmlChar *)"name");

				names = mb_xrealloc(names, (n_names + 1) * sizeof(char *));
				names[n_names++] = mb_xstrdup(t != NULL ? (const char *)t : "");
				xmlFree(t);
			}
		}
		if (rd != NULL)
			xmlFreeTextReader(rd);
		ret = ret == -1 ? -1 : 0;
	}
	free(wb);
	if (ret == 0 && xlsx_strings(o, &x) == -1)
		ret = -1;
	for (unsigned i = 1; ret == 0 && i <= o->lim->zip_max_entries && !o->full; i++) {
		char part[64];
		char *xml;

		snprintf(part, sizeof(part), "xl/worksheets/sheet%u.xml", i);
		xml = office_read(o, part, &len, &bad);
		if (xml == NULL) {
			ret = bad ? -1 : 0;
			break;
		}
		if (o->out->text.len > 0)
			put(o, "\n");
		put(o, "Sheet: ");
		put(o, i <= n_names ? names[i - 1] : part);
		put(o, "\n");
		ret = xlsx_sheet(o, &x, xml, len);
		free(xml);
	}
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	xlsx_release(&x);
	return ret;
}

/* ---- which document */

static const struct xml_rules docx_rules = { .text_in = "t", .para = "p|tr", .tab = "tab|tc",
    .brk = "br|cr" };
static const struct xml_rules pptx_rules = { .text_in = "t", .para = "p", .brk = "br" };
static const struct xml_rules odf_rules = { .para = "p|h|table-row|list-item", .tab =
    "tab|table-cell", .brk = "line-break", .space = "s", .title = "table", .title_attr =
    "table:name", .title_label = "Sheet: " };

int
mb_extract_office(const struct mb_extract_limits *lim, const char *charset, const void *data,
    size_t len, struct mb_extract_out *out)
{
	static const unsigned char cfb[] = { 0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1 };
	struct office o = { .lim = lim, .out = out };
	zip_error_t ze;
	zip_source_t *src;
	int ret;

	if (len >= sizeof(cfb) && memcmp(data, cfb, sizeof(cfb)) == 0)
		return ex_fail(out, "encrypted: a password-protected (or legacy binary) Office "
		    "document");
	zip_error_init(&ze);
	src = zip_source_buffer_create(data, len, 0, &ze);
	if (src == NULL) {
		zip_error_fini(&ze);
		return ex_fail(out, "failed: cannot read the document");
	}
	o.z = zip_open_from_source(src, ZIP_RDONLY, &ze);
	if (o.z == NULL) {
		zip_source_free(src);
		zip_error_fini(&ze);
		return ex_fail(out, "failed: not a zip container (damaged or not an Office "
		    "document)");
	}
	zip_error_fini(&ze);
	ret = office_check(&o, len);
	if (ret == 0 && zip_name_locate(o.z, "word/document.xml", 0) >= 0)
		ret = office_part(&o, "word/document.xml", &docx_rules, true);
	else if (ret == 0 && zip_name_locate(o.z, "xl/workbook.xml", 0) >= 0)
		ret = office_xlsx(&o);
	else if (ret == 0 && zip_name_locate(o.z, "ppt/slides/slide1.xml", 0) >= 0)
		ret = office_numbered(&o, "ppt/slides/slide", "Slide", &pptx_rules);
	else if (ret == 0 && zip_name_locate(o.z, "content.xml", 0) >= 0) {
		size_t ml;
		bool bad;
		char *mf = office_read(&o, "META-INF/manifest.xml", &ml, &bad);

		if (mf != NULL && strstr(mf, "encryption-data") != NULL)
			ret = ex_fail(out, "encrypted: the document needs a password");
		else
			ret = office_part(&o, "content.xml", &odf_rules, true);
		free(mf);
	} else if (ret == 0)
		ret = ex_fail(out, "skipped: a zip file, not an Office document");
	zip_discard(o.z);
	return ret;
}
