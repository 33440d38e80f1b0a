/* Error values: see include/mailbox/err.h. */
#include <stdarg.h>
#include <stdio.h>

#include "mailbox/err.h"

int
mb_err_set(struct mb_err *err, enum mb_errcode code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || err->code != MB_OK)	/* keep the root cause */
		return -1;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void
mb_err_clear(struct mb_err *err)
{
	err->code = MB_OK;
	err->msg[0] = '\0';
}

const char *
mb_errcode_name(enum mb_errcode code)
{
	switch (code) {
	case MB_OK:		return "ok";
	case MB_E_INVALID:	return "invalid";
	case MB_E_TEMP:		return "temporary";
	case MB_E_AUTH:		return "authentication";
	case MB_E_PROTO:	return "protocol";
	case MB_E_NOTFOUND:	return "not found";
	case MB_E_CONFIG:	return "configuration";
	case MB_E_INTERNAL:	return "internal";
	}
	return "unknown";
}
