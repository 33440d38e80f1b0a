/* Process-wide set-up of the MIME library (GMime 3). */
#include <gmime/gmime.h>

#include "mailbox/mime.h"

void
mb_mime_global_init(void)
{
	static int done;

	if (done++)
		return;
	g_mime_init();
}
