/*
 * fuzz_oauth2: the token endpoint's and the device endpoint's answers
 * (libmailbox/sync/oauth2.c) on arbitrary bytes, as a 200 and as an error
 * status, so both the token and the error paths are reached.  The seeds in
 * tests/fuzz/corpus/oauth2/ are real answers of oidc-provider, Google and
 * Microsoft (tokens replaced).
 */
#include <stddef.h>
#include <stdint.h>

#include "mailbox/log.h"
#include "mailbox/oauth2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = { 200, 400, 401, 503 };
	struct mb_oauth2_token tok;
	struct mb_oauth2_device dev;
	struct mb_err err = { 0 };
	long status = statuses[size % 4];

	mb_log_init("fuzz", MB_LOG_ERR);
	(void)mb_oauth2_parse_token(status, (const char *)data, size, &tok, &err);
	mb_oauth2_token_release(&tok);
	mb_err_clear(&err);
	(void)mb_oauth2_parse_device(200, (const char *)data, size, &dev, &err);
	mb_oauth2_device_release(&dev);
	/* Every token the parser saw was registered: forget them, or the table
	 * would only hold the last four anyway; this keeps runs independent. */
	mb_log_clear_secrets();
	return 0;
}
