/*
 * Fuzz the worker -> syncd channel as syncd reads it: arbitrary bytes fed in
 * arbitrary chunks, every frame that passes the header checks decoded as
 * its type says.  Nothing may crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mailbox/ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mb_ipc_conn c;
	struct mb_ipc_frame f;
	struct mb_err err = { 0 };
	size_t off = 0;
	int r = 0;

	mb_ipc_conn_init(&c, -1, MB_IPC_BIT(MB_IPC_READY) | MB_IPC_BIT(MB_IPC_ROW) |
	    MB_IPC_BIT(MB_IPC_RANGE_DONE) | MB_IPC_BIT(MB_IPC_FAIL));
	/* The first byte picks a chunk size, so frames split at every offset. */
	size_t step = size ? (size_t)data[0] % 64 + 1 : 1;

	while (off < size && r >= 0) {
		size_t n = size - off < step ? size - off : step;

		if (mb_ipc_feed(&c, data + off, n, &err) == -1)
			break;
		off += n;
		while ((r = mb_ipc_next(&c, &f, &err)) == 1) {
			struct mb_ipc_row row;
			char *s;

			switch (f.hdr.type) {
			case MB_IPC_ROW:
				if (mb_ipc_get_row(&f.cur, &row, &err) == 0)
					mb_ipc_row_release(&row);
				break;
			case MB_IPC_FAIL:
				(void)mb_ipc_get_u32(&f.cur);
				s = mb_ipc_get_strdup(&f.cur);
				free(s);
				(void)mb_ipc_end(&f.cur, &err);
				break;
			case MB_IPC_RANGE_DONE:
				(void)mb_ipc_get_u32(&f.cur);
				(void)mb_ipc_end(&f.cur, &err);
				break;
			default:
				(void)mb_ipc_end(&f.cur, &err);
				break;
			}
			mb_err_clear(&err);
		}
	}
	mb_ipc_conn_release(&c);
	return 0;
}
