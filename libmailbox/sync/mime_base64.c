/*
 * base64 parts decoded with their last group kept: see mime-private.h.
 */
#include "mime-private.h"

/*
 * GMime's decoder keeps an incomplete last group in its state and never
 * emits it, so a body whose "=" padding was stripped lost up to two bytes.
 * We count the significant characters as GMime does (the alphabet and "=";
 * the count wraps at a multiple of 4, so its remainder stays right) and,
 * when the input ends two or three short of a group, finish it with the
 * padding it lacks.  A lone sextet holds no whole byte.
 */
void
mb_mime_base64_bytes(GMimeDataWrapper *dw, GByteArray *ba)
{
	GMimeStream *in = g_mime_data_wrapper_get_stream(dw);
	GMimeEncoding st;
	char buf[4096];
	unsigned char out[4096];
	unsigned nsig = 0;
	ssize_t n;

	if (in == NULL)
		return;
	g_mime_encoding_init_decode(&st, GMIME_CONTENT_ENCODING_BASE64);
	g_mime_stream_reset(in);
	while ((n = g_mime_stream_read(in, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)buf[i];

			if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=')
				nsig++;
		}
		g_byte_array_append(ba, out, (guint)g_mime_encoding_step(&st, buf,
		    (size_t)n, (char *)out));
	}
	if (nsig % 4 >= 2)
		g_byte_array_append(ba, out, (guint)g_mime_encoding_step(&st, "==",
		    4 - nsig % 4, (char *)out));
	g_mime_stream_reset(in);
}
