/*
 * libFuzzer target for the draft composer (libmailbox/sync/compose.c): the
 * recipients, subject and body come from the model, so they are untrusted.
 * The input is split at NUL bytes into to, cc, subject, body and the
 * original's Message-ID, References and subject (a reply when the input
 * starts with 'R').  Whatever it is, a draft that is built must be clean on
 * the wire (CRLF only, an ASCII header) and carry no header the composer
 * did not write: no smuggled Bcc, no second Subject.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mailbox/compose.h"
#include "mailbox/mime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIELDS	7

/* Header lines named name (case-insensitive) in the header block of raw. */
static int
count_header(const char *raw, const char *name)
{
	size_t n = strlen(name);
	int count = 0;

	for (const char *p = raw; *p && !(p[0] == '\r' && p[1] == '\n'); ) {
		if (strncasecmp(p, name, n) == 0 && p[n] == ':')
			count++;
		p = strstr(p, "\r\n");
		if (p == NULL)
			break;
		p += 2;
	}
	return count;
}

static void
check_wire(const char *raw, size_t len)
{
	const char *eoh = strstr(raw, "\r\n\r\n");

	if (eoh == NULL || strlen(raw) != len)
		abort();
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)raw[i];

		if ((ch == '\n' && (i == 0 || raw[i - 1] != '\r')) ||
		    (ch == '\r' && raw[i + 1] != '\n') || (raw + i < eoh && ch >= 0x80))
			abort();
	}
	if (count_header(raw, "Bcc") != 0 || count_header(raw, "Subject") != 1 ||
	    count_header(raw, "To") > 1 || count_header(raw, "Message-Id") != 1)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	char *buf, *f[FIELDS] = { 0 };
	const char *to[1], *cc[1];
	struct mb_draft_original o;
	struct mb_draft d = { .to = to, .cc = cc, .date = 1764432000 };
	struct mb_err err = { 0 };
	struct mb_msg *m = NULL;
	char *raw = NULL, *id = NULL;
	size_t len, n = 0;

	if (!init++)
		mb_mime_global_init();
	if (size == 0 || size > 65536)
		return 0;
	buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (char *p = buf + 1; n < FIELDS; n++) {	/* byte 0 picks reply or not */
		f[n] = p;
		p += strlen(p);
		if (p >= buf + size)
			break;
		p++;
	}
	for (size_t i = n + 1; i < FIELDS; i++)
		f[i] = "";
	to[0] = f[0];
	cc[0] = f[1];
	d.n_to = *f[0] ? 1 : 0;
	d.n_cc = *f[1] ? 1 : 0;
	d.subject = f[2];
	d.body = f[3];
	if (buf[0] == 'R') {
		o = (struct mb_draft_original){ .message_id = f[4], .refs = f[5], .subject = f[6] };
		d.reply_to = &o;
	}
	if (mb_compose_draft(&d, &raw, &len, &id, &err) == 0) {
		check_wire(raw, len);
		/* It reads back as mail, with the Message-ID it was given. */
		if (mb_mime_parse(raw, len, NULL, &m, &err) == -1 || m->message_id == NULL ||
		    strcmp(m->message_id, id) != 0)
			abort();
		mb_msg_free(&m);
	} else if (raw != NULL || id != NULL || err.code != MB_E_INVALID)
		abort();
	free(raw);
	free(id);
	free(buf);
	return 0;
}
