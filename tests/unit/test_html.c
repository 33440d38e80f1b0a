/*
 * HTML to text: a reader's view of the mail.  What a reader cannot see is
 * gone, what they can see survives with its line structure, and hostile
 * input (deep nesting, huge documents, bad bytes) costs bounded time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support_cpu.h"

#include "mailbox/buf.h"
#include "mailbox/html.h"
#include "mailbox/util.h"

/* The text of html; the caller frees. */
static char *
text(const char *html)
{
	size_t len;
	char *t = mb_html_to_text(html, strlen(html), &len);

	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	return t;
}

static void
expect(const char *html, const char *want)
{
	char *t = text(html);

	if (strcmp(t, want) != 0)
		fail_msg("html %s\n  gave [%s]\n  want [%s]", html, t, want);
	free(t);
}

static void
html_drops_script_style_head_and_template(void **state)
{
	expect("<html><head><title>Title</title><style>p{color:red}</style></head>"
	    "<body>Hello<script>alert('x')</script> <template>tmpl</template>world</body></html>",
	    "Hello world");
}

static void
html_zero_width_reference_is_stripped(void **state)
{
	expect("<p>pass&#8203;word and pay&#x200D;pal&#65279;</p>", "password and paypal");
}

static void
html_soft_hyphen_and_marks_are_stripped(void **state)
{
	expect("<p>pass&shy;word, pass\xc2\xadword, &lrm;left&rlm; &#x61C;x&#x180E;y&#x2062;z</p>",
	    "password, password, left xyz");
}

static void
html_bidi_and_tag_references_are_stripped(void **state)
{
	expect("<p>invoice&#x202E;fdp.exe&#x202C; &#xE0041;&#xE0042;ok</p>",
	    "invoicefdp.exe ok");
}

static void
html_display_none_is_dropped(void **state)
{
	expect("<div>a<div style=\"display:none\">x</div>b</div>", "ab");
	expect("a<span style=\"DISPLAY : None !important\">x</span>b", "ab");
	expect("a<span style=\"color:red; display: none;\">x</span>b", "ab");
	expect("a<span style=\"display:inline\">x</span>b", "axb");
}

static void
html_aria_hidden_is_dropped(void **state)
{
	expect("a<span aria-hidden=\"true\">x</span>b", "ab");
	expect("a<span aria-hidden=\" TRUE \">x</span>b", "ab");
	expect("a<span aria-hidden=\"false\">x</span>b", "axb");
}

static void
html_font_size_zero_is_dropped(void **state)
{
	expect("a<span style=\"font-size:0\">x</span>b", "ab");
	expect("a<span style=\"font-size: 0px\">x</span>b", "ab");
	expect("a<span style=\"font-size:0em\">x</span>b", "ab");
	expect("a<span style=\"FONT-SIZE:0.0PT !important\">x</span>b", "ab");
	expect("a<span style=\"font-size:10px\">x</span>b", "axb");
	expect("a<span style=\"font-size:0.5em\">x</span>b", "axb");
}

static void
html_visibility_hidden_is_dropped(void **state)
{
	expect("a<span style=\"visibility:hidden\">x</span>b", "ab");
	expect("a<span style=\"visibility: visible\">x</span>b", "axb");
}

static void
html_hidden_attribute_is_dropped(void **state)
{
	expect("a<p hidden>x</p>b", "a\n\nb");
	expect("a<span hidden=\"hidden\">x</span>b", "ab");
}

static void
html_opacity_zero_is_dropped(void **state)
{
	expect("a<span style=\"opacity:0\">x</span>b", "ab");
	expect("a<span style=\"opacity:0.0\">x</span>b", "ab");
	expect("a<span style=\"opacity:0.5\">x</span>b", "axb");
}

static void
html_style_parser_cases(void **state)
{
	static const struct { const char *style; bool hides; } cases[] = {
		{ "display:none", true }, { " Display : NONE ", true },
		{ "display:none!important", true }, { "color:red;;display:none", true },
		{ "display:block", false }, { "font-size:0", true }, { "font-size:00.00rem", true },
		{ "font-size:1px", false }, { "font-size:0.1px", false }, { "opacity:0%", true },
		{ "visibility:collapse", true }, { "max-height:0;overflow:hidden", true },
		{ "max-height:0", false }, { "", false }, { "display", false },
		{ "font-family:none", false },
	};

	for (size_t i = 0; i < MB_ARRAY_LEN(cases); i++)
		if (mb_html_style_hides(cases[i].style) != cases[i].hides)
			fail_msg("style \"%s\": want %d", cases[i].style, cases[i].hides);
}

/* The message's own <style> rules hide by class, id, element and compounds of them. */
static void
html_style_block_rules_hide_by_class_id_and_element(void **state)
{
	(void)state;
	expect("<style>.x{display:none}</style><p>shown</p><p class=\"a x\">hidden</p>", "shown");
	expect("<style>#pre { visibility: hidden }</style><div id=\"pre\">preview</div>real",
	    "real");
	expect("<style>span{font-size:0px}</style>keep<span>gone</span>", "keep");
	expect("<style>.ph{max-height:0;overflow:hidden}</style><div class=\"ph\">teaser</div>"
	    "body", "body");
	expect("<style>div.t.u#v { display:none !important }</style>"
	    "<div class=\"t u\" id=\"v\">all three</div><div class=\"t\">one</div>", "one");
	/* a selector list: each simple selector counts */
	expect("<style>.a, td.b, #c {display:none}</style><p class=\"a\">1</p><p class=\"b\">2</p>"
	    "<p id=\"c\">3</p>", "2");
	/* class names in quirks mode: case ignored */
	expect("<style>.Hide{display:none}</style><p class=\"hide\">x</p>y", "y");
	/* comments and HTML comment marks inside style text are skipped */
	expect("<style><!-- /* .x{display:none} */ .y{display:none} --></style>"
	    "<p class=\"x\">x</p><p class=\"y\">y</p>", "x");
	/* several style blocks, in head and body */
	expect("<html><head><style>.h{display:none}</style></head><body><style>.b{display:none}"
	    "</style><p class=\"h\">1</p><p class=\"b\">2</p>3</body></html>", "3");
}

/* What is not a simple hiding rule is left alone: the text shows, as before. */
static void
html_style_block_rules_that_do_not_apply(void **state)
{
	(void)state;
	/* @media rules are for another screen */
	expect("<style>@media only screen and (max-width:480px){.m{display:none}}</style>"
	    "<p class=\"m\">desktop text</p>", "desktop text");
	/* combinators, pseudo-classes and attribute selectors are not matched */
	expect("<style>div .x{display:none} a:hover{display:none} [title]{display:none}</style>"
	    "<div><p class=\"x\">kept</p></div><p title=\"t\">also</p>", "kept\n\nalso");
	/* a later rule that shows again wins, and so does an inline display */
	expect("<style>.x{display:none} .x{display:block}</style><p class=\"x\">back</p>", "back");
	expect("<style>.x{display:none}</style><p class=\"x\" style=\"display:block\">inline</p>",
	    "inline");
	/* a rule that does not hide */
	expect("<style>.x{color:red}</style><p class=\"x\">red</p>", "red");
	/* a block left open is closed at the end of its own <style>, as browsers do */
	expect("<style>.x{display:none</style><p class=\"x\">?</p>ok", "ok");
	expect("<style>.x{color:red</style><style>.y{display:none}</style><p class=\"y\">y</p>z",
	    "z");
}

static void
html_blocks_make_line_breaks(void **state)
{
	expect("one<br>two<br/>three", "one\ntwo\nthree");
	expect("<p>para one</p><p>para two</p>", "para one\n\npara two");
	expect("<div>a</div><div>b</div>", "a\nb");
	expect("<ul><li>x</li><li>y</li></ul>", "x\ny");
	expect("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc");
	expect("<h1>Title</h1>text", "Title\n\ntext");
}

static void
html_whitespace_collapses_like_a_browser(void **state)
{
	expect("  lots   of\n\n\t spaces  ", "lots of spaces");
	expect("<b>bold</b> <i>italic</i>", "bold italic");
	expect("a&nbsp;&nbsp;b", "a b");
	expect("<pre>keep\n  this</pre>", "keep\n  this");
}

static void
html_link_keeps_text_and_url_once(void **state)
{
	expect("<a href=\"https://example.com/x\">click here</a>",
	    "click here <https://example.com/x>");
	expect("<a href=\"https://example.com/\">https://example.com/</a>", "https://example.com/");
	expect("<a href=\"https://example.com/\">example.com</a>", "example.com");
	expect("<a href=\"mailto:bob@example.com\">bob@example.com</a>", "bob@example.com");
	expect("<a href=\"javascript:alert(1)\">js</a>", "js");
	expect("<a href=\" JavaScript:alert(1)\">js</a>", "js");
	expect("<a href=\"#top\">top</a>", "top");
	expect("<a href=\"https://example.com/i\"><img src=x></a>", "<https://example.com/i>");
	expect("<div style=\"display:none\"><a href=\"https://evil.example/\">x</a></div>ok", "ok");
}

static void
html_text_after_closing_html_is_kept(void **state)
{
	/* Mailing lists append their footer after the sender's </html>. */
	expect("<html><head><script>go()</script></head><body></body></html>\n"
	    "list footer: unsubscribe", "list footer: unsubscribe");
}

static void
html_character_references_are_decoded(void **state)
{
	expect("caf&eacute; &#x20AC;5 &lt;tag&gt; &amp; &quot;q&quot;", "caf\xc3\xa9 \xe2\x82\xac" "5 <tag> & \"q\"");
}

static void
html_legacy_references_without_semicolon_are_decoded(void **state)
{
	/* The HTML5 legacy names work without ";", as in every browser. */
	expect("&copy 2026 AT&amp;T &amp Co &lt;b&gt &lt3 caf&eacute &COPY &nbspx",
	    "\xc2\xa9 2026 AT&T & Co <b> <3 caf\xc3\xa9 \xc2\xa9 x");
	/* Longest legacy prefix: &notit; is "not" then "it;"; &copyright is (c)right. */
	expect("&notit; &notin; &copyright &ampx", "\xc2\xacit; \xe2\x88\x89 \xc2\xa9right &x");
	/* HTML5 names with ";" that begin with a legacy name keep their own meaning. */
	expect("&ltimes; &copysr; &notinE;", "\xe2\x8b\x89 \xe2\x84\x97 \xe2\x8b\xb9\xcc\xb8");
	/* Not a legacy name, a reference that was escaped, a comment: left as they are. */
	expect("&foo &copyx&#59; &amp;copy<!-- &copy -->", "&foo \xc2\xa9x; &copy");
	/* Attribute values are not rewritten: the link keeps its query string. */
	expect("<a href=\"https://example.com/?a=1&copy=2&lt\">link</a>",
	    "link <https://example.com/?a=1&copy=2&lt>");
}

static void
html_bad_bytes_and_nul_do_not_stop_the_text(void **state)
{
	const char in[] = "<p>before\xff\xfe middle\0after</p>";
	size_t len;
	char *t = mb_html_to_text(in, sizeof(in) - 1, &len);

	assert_non_null(strstr(t, "before"));
	assert_non_null(strstr(t, "after"));
	free(t);
}

static void
html_meta_charset_does_not_garble_utf8(void **state)
{
	expect("<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xc3\xa9</body></html>",
	    "caf\xc3\xa9");
}

static void
html_empty_and_textless_input_give_empty_string(void **state)
{
	size_t len = 99;
	char *t = mb_html_to_text("", 0, &len);

	assert_string_equal(t, "");
	assert_int_equal(len, 0);
	free(t);
	expect("<html><body><img src=x></body></html>", "");
	expect("if 1 < 2 and 3 > 2", "if 1 < 2 and 3 > 2");
}

static void
html_deep_nesting_is_linear_and_keeps_text(void **state)
{
	struct mb_buf b = MB_BUF_INIT(64u << 20);
	long long t0;
	char *t;

	for (int i = 0; i < 50000; i++)
		assert_int_equal(mb_buf_adds(&b, "<div><span>"), 0);
	assert_int_equal(mb_buf_adds(&b, "deep text"), 0);
	t0 = mb_test_cpu_ms();
	t = mb_html_to_text(b.data, b.len, NULL);
	print_message("50,000-level nested HTML (%zu bytes): %lld ms\n", b.len, mb_test_cpu_ms() - t0);
	assert_non_null(strstr(t, "deep text"));
	assert_true(mb_test_cpu_ms() - t0 < 20000);
	free(t);
	mb_buf_release(&b);
}

static void
html_huge_document_is_linear(void **state)
{
	struct mb_buf b = MB_BUF_INIT(64u << 20);
	long long t0;
	size_t len;
	char *t;

	/* 8 MB: one long line of text, then many small paragraphs. */
	for (int i = 0; i < 100000; i++)
		assert_int_equal(mb_buf_adds(&b, "word word word word "), 0);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(mb_buf_adds(&b, "<p>para <b>x</b></p>\n"), 0);
	t0 = mb_test_cpu_ms();
	t = mb_html_to_text(b.data, b.len, &len);
	print_message("%zu bytes of HTML: %lld ms\n", b.len, mb_test_cpu_ms() - t0);
	assert_true(len > 2000000);
	assert_true(mb_test_cpu_ms() - t0 < 30000);
	free(t);
	mb_buf_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(html_drops_script_style_head_and_template),
		cmocka_unit_test(html_style_block_rules_hide_by_class_id_and_element),
		cmocka_unit_test(html_style_block_rules_that_do_not_apply),
		cmocka_unit_test(html_zero_width_reference_is_stripped),
		cmocka_unit_test(html_bidi_and_tag_references_are_stripped),
		cmocka_unit_test(html_soft_hyphen_and_marks_are_stripped),
		cmocka_unit_test(html_display_none_is_dropped),
		cmocka_unit_test(html_aria_hidden_is_dropped),
		cmocka_unit_test(html_font_size_zero_is_dropped),
		cmocka_unit_test(html_visibility_hidden_is_dropped),
		cmocka_unit_test(html_hidden_attribute_is_dropped),
		cmocka_unit_test(html_opacity_zero_is_dropped),
		cmocka_unit_test(html_style_parser_cases),
		cmocka_unit_test(html_blocks_make_line_breaks),
		cmocka_unit_test(html_whitespace_collapses_like_a_browser),
		cmocka_unit_test(html_link_keeps_text_and_url_once),
		cmocka_unit_test(html_text_after_closing_html_is_kept),
		cmocka_unit_test(html_character_references_are_decoded),
		cmocka_unit_test(html_legacy_references_without_semicolon_are_decoded),
		cmocka_unit_test(html_bad_bytes_and_nul_do_not_stop_the_text),
		cmocka_unit_test(html_meta_charset_does_not_garble_utf8),
		cmocka_unit_test(html_empty_and_textless_input_give_empty_string),
		cmocka_unit_test(html_deep_nesting_is_linear_and_keeps_text),
		cmocka_unit_test(html_huge_document_is_linear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
