#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox/index.h"
#include "mailbox/log.h"
#include "mailbox/msg.h"
#include "mailbox/util.h"

#include "support_index.h"

void
mb_test_put(struct mb_index *idx, int64_t folder, uint32_t uid, const struct mb_test_msg *t)
{
	struct mb_msg *m = mb_msg_new();
	struct mb_index_row row = { .folder_id = folder, .uidvalidity = 1, .uid = uid,
	    .flags = t->flags, .internaldate = t->internaldate, .size = 100, .msg = m };
	struct mb_err err = { 0 };

	m->subject = mb_xstrdup(t->subject);
	m->from.addr = mb_xstrdup(t->from ? t->from : "alice@example.com");
	free(m->body);
	m->body = mb_xstrdup(t->body);
	m->body_len = strlen(t->body);
	m->has_date = t->date != 0;
	m->date = t->date;
	m->message_id = mb_xstrdup(t->message_id);
	m->in_reply_to = mb_xstrdup(t->in_reply_to);
	if (mb_index_upsert(idx, &row, NULL, &err) == -1)
		mb_fatalx("test index: %s", err.msg);
	mb_msg_free(&m);
}

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void
mb_test_rmtree(const char *dir)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}
