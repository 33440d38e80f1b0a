/*
 * IPC framing: see include/mailbox/ipc.h.
 *
 * Every integer is put and got byte by byte through memcpy of one scalar, in
 * host order: both ends run on this host, and no struct layout (padding,
 * alignment) ever reaches the wire.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mailbox/ipc.h"
#include "mailbox/msg.h"

/* ---- the read cursor */

static const uint8_t *
cur_take(struct mb_ipc_cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return p;
}

uint32_t
mb_ipc_get_u32(struct mb_ipc_cur *c)
{
	const uint8_t *p = cur_take(c, sizeof(uint32_t));
	uint32_t v = 0;

	if (p != NULL)
		memcpy(&v, p, sizeof(v));
	return v;
}

uint64_t
mb_ipc_get_u64(struct mb_ipc_cur *c)
{
	const uint8_t *p = cur_take(c, sizeof(uint64_t));
	uint64_t v = 0;

	if (p != NULL)
		memcpy(&v, p, sizeof(v));
	return v;
}

bool
mb_ipc_get_bool(struct mb_ipc_cur *c)
{
	const uint8_t *p = cur_take(c, 1);

	if (p == NULL)
		return false;
	if (*p > 1)
		c->bad = true;
	return *p == 1;
}

const void *
mb_ipc_get_bytes(struct mb_ipc_cur *c, size_t *len_r)
{
	uint32_t len = mb_ipc_get_u32(c);
	const uint8_t *p = cur_take(c, len);

	*len_r = p ? len : 0;
	return p;
}

char *
mb_ipc_get_strdup(struct mb_ipc_cur *c)
{
	const char *p;
	size_t len;

	if (!mb_ipc_get_bool(c))
		return NULL;
	p = mb_ipc_get_bytes(c, &len);
	if (p == NULL)
		return NULL;
	if (memchr(p, '\0', len) != NULL) {	/* C strings end at NUL: no smuggled tails */
		c->bad = true;
		return NULL;
	}
	return mb_xstrndup(p, len);
}

int
mb_ipc_end(const struct mb_ipc_cur *c, struct mb_err *err)
{
	if (c->bad)
		return mb_err_set(err, MB_E_PROTO, "ipc: truncated or malformed payload");
	if (c->p != c->end)
		return mb_err_set(err, MB_E_PROTO, "ipc: %zu trailing bytes in payload",
		    (size_t)(c->end - c->p));
	return 0;
}

/* ---- building a frame */

void
mb_ipc_out_begin(struct mb_ipc_out *o, enum mb_ipc_type type, uint32_t id)
{
	uint32_t hdr[4] = { (uint32_t)type, 0, id, MB_IPC_VERSION };

	mb_buf_init(&o->buf, MB_IPC_MAX);
	o->bad = false;
	for (size_t i = 0; i < 4; i++)
		mb_ipc_put_u32(o, hdr[i]);
}

static void
out_add(struct mb_ipc_out *o, const void *p, size_t n)
{
	if (!o->bad && mb_buf_add(&o->buf, p, n) == -1)
		o->bad = true;
}

void
mb_ipc_put_u32(struct mb_ipc_out *o, uint32_t v)
{
	out_add(o, &v, sizeof(v));
}

void
mb_ipc_put_u64(struct mb_ipc_out *o, uint64_t v)
{
	out_add(o, &v, sizeof(v));
}

void
mb_ipc_put_bool(struct mb_ipc_out *o, bool v)
{
	uint8_t b = v ? 1 : 0;

	out_add(o, &b, 1);
}

void
mb_ipc_put_bytes(struct mb_ipc_out *o, const void *p, size_t len)
{
	if (len > MB_IPC_MAX) {
		o->bad = true;
		return;
	}
	mb_ipc_put_u32(o, (uint32_t)len);
	out_add(o, p, len);
}

void
mb_ipc_put_str(struct mb_ipc_out *o, const char *s)
{
	mb_ipc_put_bool(o, s != NULL);
	if (s != NULL)
		mb_ipc_put_bytes(o, s, strlen(s));
}

int
mb_ipc_out_finish(struct mb_ipc_out *o, struct mb_err *err)
{
	uint32_t len = (uint32_t)o->buf.len;

	if (o->bad || o->buf.len < MB_IPC_HDR_LEN)
		return mb_err_set(err, MB_E_INVALID, "ipc: frame larger than %u bytes", MB_IPC_MAX);
	memcpy(o->buf.data + 4, &len, sizeof(len));
	return 0;
}

void
mb_ipc_out_release(struct mb_ipc_out *o)
{
	mb_buf_release(&o->buf);
	o->bad = true;
}

/* ---- a connection */

void
mb_ipc_conn_init(struct mb_ipc_conn *c, int fd, uint32_t allowed)
{
	c->fd = fd;
	c->allowed = allowed;
	/* One frame plus one read's worth of the next. */
	mb_buf_init(&c->in, MB_IPC_MAX + 65536);
	c->in_off = 0;
	mb_buf_init(&c->out, MB_IPC_QUEUE_MAX);
	c->out_off = 0;
}

void
mb_ipc_conn_release(struct mb_ipc_conn *c)
{
	mb_buf_release(&c->in);
	mb_buf_release(&c->out);
	c->in_off = c->out_off = 0;
}

/* Drop consumed input so the buffer does not grow without bound. */
static void
in_compact(struct mb_ipc_conn *c)
{
	if (c->in_off == 0)
		return;
	memmove(c->in.data, c->in.data + c->in_off, c->in.len - c->in_off);
	mb_buf_truncate(&c->in, c->in.len - c->in_off);
	c->in_off = 0;
}

int
mb_ipc_feed(struct mb_ipc_conn *c, const void *p, size_t n, struct mb_err *err)
{
	in_compact(c);
	if (mb_buf_add(&c->in, p, n) == -1)
		return mb_err_set(err, MB_E_PROTO, "ipc: peer sent more than a frame can hold");
	return 0;
}

ssize_t
mb_ipc_read(struct mb_ipc_conn *c, struct mb_err *err)
{
	char chunk[65536];
	ssize_t r;

	/* One read per call: the caller polls again, so one peer cannot keep us here. */
	do
		r = read(c->fd, chunk, sizeof(chunk));
	while (r == -1 && errno == EINTR);
	if (r == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -1;
		return mb_err_set(err, MB_E_TEMP, "ipc: read: %s", strerror(errno));
	}
	if (r > 0 && mb_ipc_feed(c, chunk, (size_t)r, err) == -1)
		return -1;
	return r;
}

int
mb_ipc_next(struct mb_ipc_conn *c, struct mb_ipc_frame *f, struct mb_err *err)
{
	const uint8_t *p = (const uint8_t *)c->in.data + c->in_off;
	size_t avail = c->in.len - c->in_off;
	struct mb_ipc_cur hc = { p, p + MB_IPC_HDR_LEN, false };

	if (avail < MB_IPC_HDR_LEN)
		return 0;
	f->hdr.type = mb_ipc_get_u32(&hc);
	f->hdr.len = mb_ipc_get_u32(&hc);
	f->hdr.id = mb_ipc_get_u32(&hc);
	f->hdr.version = mb_ipc_get_u32(&hc);
	/* The order is the contract: version, then bounds, then the type table. */
	if (f->hdr.version != MB_IPC_VERSION)
		return mb_err_set(err, MB_E_PROTO, "ipc: version %u, expected %u",
		    f->hdr.version, MB_IPC_VERSION);
	if (f->hdr.len < MB_IPC_HDR_LEN || f->hdr.len > MB_IPC_MAX)
		return mb_err_set(err, MB_E_PROTO, "ipc: frame length %u out of bounds", f->hdr.len);
	if (f->hdr.type >= MB_IPC_TYPE_MAX || (c->allowed & MB_IPC_BIT(f->hdr.type)) == 0)
		return mb_err_set(err, MB_E_PROTO, "ipc: frame type %u not allowed on this channel",
		    f->hdr.type);
	if (avail < f->hdr.len)
		return 0;
	f->cur.p = p + MB_IPC_HDR_LEN;
	f->cur.end = p + f->hdr.len;
	f->cur.bad = false;
	c->in_off += f->hdr.len;
	return 1;
}

bool
mb_ipc_pending_input(const struct mb_ipc_conn *c)
{
	return c->in.len > c->in_off;
}

int
mb_ipc_queue(struct mb_ipc_conn *c, struct mb_ipc_out *o, struct mb_err *err)
{
	int r = 0;

	if (o->bad) {
		mb_ipc_out_release(o);
		return mb_err_set(err, MB_E_INVALID, "ipc: queueing an unfinished frame");
	}
	if (c->out_off > 0 && c->out_off == c->out.len) {
		mb_buf_reset(&c->out);
		c->out_off = 0;
	}
	if (mb_buf_add(&c->out, o->buf.data, o->buf.len) == -1)
		r = mb_err_set(err, MB_E_TEMP, "ipc: peer is not reading (%zu bytes queued)",
		    c->out.len - c->out_off);
	mb_ipc_out_release(o);
	return r;
}

int
mb_ipc_flush(struct mb_ipc_conn *c, struct mb_err *err)
{
	while (c->out_off < c->out.len) {
		ssize_t w = write(c->fd, c->out.data + c->out_off, c->out.len - c->out_off);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w == -1)
			return mb_err_set(err, MB_E_TEMP, "ipc: write: %s", strerror(errno));
		c->out_off += (size_t)w;
	}
	mb_buf_reset(&c->out);
	c->out_off = 0;
	return 0;
}

bool
mb_ipc_want_write(const struct mb_ipc_conn *c)
{
	return c->out_off < c->out.len;
}

int
mb_ipc_send(struct mb_ipc_conn *c, struct mb_ipc_out *o, struct mb_err *err)
{
	if (mb_ipc_queue(c, o, err) == -1)
		return -1;
	while (mb_ipc_want_write(c))
		if (mb_ipc_flush(c, err) == -1)
			return -1;
	return 0;
}

/* ---- a message row */

static void
put_addr(struct mb_ipc_out *o, const struct mb_addr *a)
{
	mb_ipc_put_str(o, a->name);
	mb_ipc_put_str(o, a->addr);
	mb_ipc_put_str(o, a->group);
}

static void
put_addrs(struct mb_ipc_out *o, const struct mb_addr *a, size_t n)
{
	mb_ipc_put_u32(o, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		put_addr(o, &a[i]);
}

static void
put_ids(struct mb_ipc_out *o, char *const *ids, size_t n)
{
	mb_ipc_put_u32(o, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		mb_ipc_put_str(o, ids[i]);
}

void
mb_ipc_put_row(struct mb_ipc_out *o, const struct mb_index_row *row)
{
	const struct mb_msg *m = row->msg;

	mb_ipc_put_u64(o, (uint64_t)row->folder_id);
	mb_ipc_put_u32(o, row->uidvalidity);
	mb_ipc_put_u32(o, row->uid);
	mb_ipc_put_u32(o, row->flags);
	mb_ipc_put_str(o, row->keywords);
	mb_ipc_put_u64(o, (uint64_t)row->internaldate);
	mb_ipc_put_u64(o, row->size);
	mb_ipc_put_u64(o, row->modseq);
	mb_ipc_put_bool(o, row->headers_only);

	mb_ipc_put_str(o, m->subject);
	put_addr(o, &m->from);
	put_addrs(o, m->to, m->n_to);
	put_addrs(o, m->cc, m->n_cc);
	mb_ipc_put_bool(o, m->has_date);
	mb_ipc_put_u64(o, (uint64_t)m->date);
	mb_ipc_put_str(o, m->message_id);
	mb_ipc_put_str(o, m->in_reply_to);
	put_ids(o, m->parents, m->n_parents);
	put_ids(o, m->references, m->n_references);
	mb_ipc_put_str(o, m->list_id);
	mb_ipc_put_bytes(o, m->body, m->body_len);
	mb_ipc_put_bool(o, m->body_truncated);
	mb_ipc_put_bool(o, m->body_from_html);
	mb_ipc_put_u32(o, (uint32_t)m->n_attachments);
	for (size_t i = 0; i < m->n_attachments; i++) {
		const struct mb_attachment *a = &m->attachments[i];

		mb_ipc_put_str(o, a->filename);
		mb_ipc_put_str(o, a->mime_type);
		mb_ipc_put_str(o, a->content_id);
		mb_ipc_put_bool(o, a->is_inline);
		mb_ipc_put_u64(o, a->size);
		mb_ipc_put_str(o, a->sha256);
		mb_ipc_put_bytes(o, a->text != NULL ? a->text : "", a->text != NULL ? a->text_len : 0);
		mb_ipc_put_str(o, a->text_status);
	}
	mb_ipc_put_str(o, m->parse_error);
}

/*
 * An array count read off the wire: every element takes at least min_each
 * bytes, so a count the remaining payload cannot hold is refused before
 * anything is allocated.
 */
static size_t
get_count(struct mb_ipc_cur *c, size_t min_each)
{
	uint32_t n = mb_ipc_get_u32(c);

	if (c->bad || (uint64_t)n * min_each > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		return 0;
	}
	return n;
}

static void
get_addr(struct mb_ipc_cur *c, struct mb_addr *a)
{
	a->name = mb_ipc_get_strdup(c);
	a->addr = mb_ipc_get_strdup(c);
	a->group = mb_ipc_get_strdup(c);
}

static struct mb_addr *
get_addrs(struct mb_ipc_cur *c, size_t *n_r)
{
	size_t n = get_count(c, 3);
	struct mb_addr *a;

	*n_r = 0;
	if (n == 0)
		return NULL;
	a = mb_xcalloc(n, sizeof(*a));
	for (size_t i = 0; i < n && !c->bad; i++) {
		get_addr(c, &a[i]);
		*n_r = i + 1;
	}
	return a;
}

/* An array of ids (no holes: a NULL among them makes the frame bad); n_r set. */
static char **
get_ids(struct mb_ipc_cur *c, size_t *n_r)
{
	size_t n = get_count(c, 1);
	char **v;

	*n_r = 0;
	if (n == 0)
		return NULL;
	v = mb_xcalloc(n, sizeof(char *));
	for (size_t i = 0; i < n && !c->bad; i++) {
		v[i] = mb_ipc_get_strdup(c);
		*n_r = i + 1;
		if (v[i] == NULL)
			c->bad = true;
	}
	return v;
}

int
mb_ipc_get_row(struct mb_ipc_cur *c, struct mb_ipc_row *r, struct mb_err *err)
{
	struct mb_index_row *row = &r->row;
	struct mb_msg *m;
	const char *body, *text;
	size_t body_len, text_len, n;
	char *sha;

	memset(r, 0, sizeof(*r));
	m = r->msg = mb_msg_new();
	row->folder_id = (int64_t)mb_ipc_get_u64(c);
	row->uidvalidity = mb_ipc_get_u32(c);
	row->uid = mb_ipc_get_u32(c);
	row->flags = mb_ipc_get_u32(c);
	r->keywords = mb_ipc_get_strdup(c);
	row->internaldate = (int64_t)mb_ipc_get_u64(c);
	row->size = mb_ipc_get_u64(c);
	row->modseq = mb_ipc_get_u64(c);
	row->headers_only = mb_ipc_get_bool(c);

	m->subject = mb_ipc_get_strdup(c);
	get_addr(c, &m->from);
	m->to = get_addrs(c, &m->n_to);
	m->cc = get_addrs(c, &m->n_cc);
	m->has_date = mb_ipc_get_bool(c);
	m->date = (int64_t)mb_ipc_get_u64(c);
	m->message_id = mb_ipc_get_strdup(c);
	m->in_reply_to = mb_ipc_get_strdup(c);
	m->parents = get_ids(c, &m->n_parents);
	m->references = get_ids(c, &m->n_references);
	m->list_id = mb_ipc_get_strdup(c);
	body = mb_ipc_get_bytes(c, &body_len);
	if (body != NULL) {
		if (memchr(body, '\0', body_len) != NULL)
			c->bad = true;
		free(m->body);
		m->body = mb_xstrndup(body, body_len);
		m->body_len = body_len;
	}
	m->body_truncated = mb_ipc_get_bool(c);
	m->body_from_html = mb_ipc_get_bool(c);
	n = get_count(c, 16);
	if (n > 0) {
		m->attachments = mb_xcalloc(n, sizeof(*m->attachments));
		for (size_t i = 0; i < n && !c->bad; i++) {
			struct mb_attachment *a = &m->attachments[i];

			m->n_attachments = i + 1;
			a->filename = mb_ipc_get_strdup(c);
			a->mime_type = mb_ipc_get_strdup(c);
			a->content_id = mb_ipc_get_strdup(c);
			a->is_inline = mb_ipc_get_bool(c);
			a->size = mb_ipc_get_u64(c);
			sha = mb_ipc_get_strdup(c);
			if (a->mime_type == NULL || sha == NULL || strlen(sha) >= sizeof(a->sha256) ||
			    strspn(sha, "0123456789abcdef") != strlen(sha))
				c->bad = true;
			else
				memcpy(a->sha256, sha, strlen(sha) + 1);
			free(sha);
			text = mb_ipc_get_bytes(c, &text_len);
			if (text != NULL && memchr(text, '\0', text_len) != NULL)
				c->bad = true;	/* the index stores text, never a NUL */
			else if (text != NULL && text_len > 0) {
				a->text = mb_xstrndup(text, text_len);
				a->text_len = text_len;
			}
			a->text_status = mb_ipc_get_strdup(c);
		}
	}
	m->parse_error = mb_ipc_get_strdup(c);
	if (mb_ipc_end(c, err) == -1) {
		mb_ipc_row_release(r);
		return -1;
	}
	row->msg = m;
	row->keywords = r->keywords;
	return 0;
}

void
mb_ipc_row_release(struct mb_ipc_row *r)
{
	mb_msg_free(&r->msg);
	free(r->keywords);
	r->keywords = NULL;
	r->row.msg = NULL;
	r->row.keywords = NULL;
}
