/* Process-wide set-up of the MIME library (GMime 3) and its parser options. */
#include <gmime/gmime.h>

#include "mailbox/mime.h"
#include "mime-private.h"

static GMimeParserOptions *mb_popts;

void
mb_mime_global_init(void)
{
	/* Undeclared 8-bit header text: UTF-8 when it is valid, else windows-1252. */
	static const char *fallback[] = { "UTF-8", "windows-1252", NULL };
	static int done;

	if (done++)
		return;
	g_mime_init();
	mb_popts = g_mime_parser_options_new();
	g_mime_parser_options_set_fallback_charsets(mb_popts, fallback);
	g_mime_parser_options_set_address_compliance_mode(mb_popts, GMIME_RFC_COMPLIANCE_LOOSE);
	g_mime_parser_options_set_parameter_compliance_mode(mb_popts, GMIME_RFC_COMPLIANCE_LOOSE);
	/*
	 * GMime's loose RFC 2047 decoder is quadratic: a 56 KB Subject of broken
	 * "=?" words took 0.8 s, 700 KB took 146 s.  Strict is linear, and we
	 * decode Subject and filenames with our own lenient decoder anyway.
	 */
	g_mime_parser_options_set_rfc2047_compliance_mode(mb_popts, GMIME_RFC_COMPLIANCE_STRICT);
	g_mime_parser_options_set_allow_addresses_without_domain(mb_popts, TRUE);
}

GMimeParserOptions *
mb_mime_parser_options(void)
{
	mb_mime_global_init();
	return mb_popts;
}
