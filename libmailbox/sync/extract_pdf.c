/*
 * PDF through poppler-glib: every page's text in reading order (poppler's
 * text output, the same as pdftotext's), pages separated by a blank line,
 * until max_chars.  Why poppler and not MuPDF: docs/attachments.md ("PDF").
 * Runs only in the extraction child (extract_sandbox.c).
 */
#include <poppler.h>

#include <string.h>

#include "extract-private.h"

int
mb_extract_pdf(const struct mb_extract_limits *lim, const char *charset, const void *data,
    size_t len, struct mb_extract_out *out)
{
	GBytes *bytes = g_bytes_new_static(data, len);
	GError *gerr = NULL;
	PopplerDocument *doc;
	int pages, full = 0;

	doc = poppler_document_new_from_bytes(bytes, NULL, &gerr);
	g_bytes_unref(bytes);
	if (doc == NULL) {
		int r;

		if (gerr != NULL && gerr->domain == POPPLER_ERROR &&
		    gerr->code == POPPLER_ERROR_ENCRYPTED)
			r = ex_fail(out, "encrypted: the PDF needs a password");
		else
			r = ex_fail(out, "failed: not a readable PDF (%s)",
			    gerr != NULL ? gerr->message : "no reason given");
		if (gerr != NULL)
			g_error_free(gerr);
		return r;
	}
	pages = poppler_document_get_n_pages(doc);
	for (int i = 0; i < pages && !full; i++) {
		PopplerPage *page = poppler_document_get_page(doc, i);
		char *t;

		if (page == NULL)
			continue;
		t = poppler_page_get_text(page);
		if (t != NULL && *t != '\0') {
			if (out->text.len > 0)
				full = ex_adds(out, "\n\n");
			if (!full)
				full = ex_adds(out, t);
		}
		g_free(t);
		g_object_unref(page);
	}
	g_object_unref(doc);
	return 0;
}
