/*
 * A reader's mapping of the index, past SQLite's cap on mappings.
 *
 * mcpd reads the index through a shared mapping (mb_index_set_mmap): a
 * search touches many pages once, and copying each with pread() was a
 * quarter of its CPU.  But SQLite caps every mapping at
 * SQLITE_MAX_MMAP_SIZE, fixed when SQLite is built, whatever PRAGMA
 * mmap_size asks: Debian's is 0x7fff0000 bytes, just under 2 GiB.  An index
 * passes 2 GiB near 550,000 messages, and every page past it was read with
 * pread(), a system call and a copy each: at 1,000,000 messages (3.7 GB)
 * 56% of the full-text index's pages and all of the block bounds
 * (docs/benchmarks.md, "The whole index mapped").
 *
 * So a read-only connection opens the index through a VFS of its own,
 * IDX_MAP_VFS, which passes every call to the default VFS except the
 * pager's two for mapped pages, xFetch and xUnfetch, and the file control
 * that sizes the mapping.  It answers those from a mapping of its own, as
 * large as PRAGMA mmap_size asked (mb_index_set_mmap: SQLite passes the
 * size on as it is, and the unix VFS is what caps it):
 *
 * - The pager fetches pages only while PRAGMA mmap_size is above 0, and
 *   only a page in the database file that its read transaction's snapshot
 *   holds there, not in the WAL.
 * - The mapping is made at the first fetch, of the whole limit, and kept
 *   until the connection closes (map_unfetch says why).  It serves the
 *   pages the file held when last measured: at the first fetch and
 *   whenever the pager says the file may have changed (another process's
 *   commit).  A page past that is read with xRead, as before.
 *
 * The mapping needs a descriptor of the file, and SQLite does not lend its
 * own.  Closing a second descriptor of a file drops every POSIX lock the
 * process holds on it, SQLite's included, so the descriptors opened here
 * are never closed: one per file (device and inode) for the life of the
 * process, shared by its connections, at most IDX_MAP_FILES.  A reader
 * opens one index file per account.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "index-private.h"

#define IDX_MAP_FILES	64	/* index files one process maps, at most */

/* One open file of a connection through IDX_MAP_VFS. */
struct map_file {
	sqlite3_file	 base;		/* pMethods: &map_io; NULL when the open failed */
	sqlite3_file	*real;		/* the default VFS's file: the bytes after this one */
	int		 fd;		/* map_fd()'s: -1 when this file is not mapped here */
	sqlite3_int64	 max;		/* bytes to map at most: PRAGMA mmap_size's, uncapped */
	unsigned char	*map;		/* the mapping, or NULL */
	sqlite3_int64	 map_len;	/* the mapping's length: max, past the file's end */
	sqlite3_int64	 file_len;	/* of it, what the file held when last measured */
	int		 n_out;		/* pages lent to the pager, not given back yet */
};

_Thread_local uint64_t idx_maps_made;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs map_vfs;
static pthread_once_t map_once = PTHREAD_ONCE_INIT;
static bool map_ready;

/* The descriptors map_fd() opened: never closed (above). */
static struct {
	pthread_mutex_t	mu;
	size_t		n;
	struct {
		dev_t	dev;
		ino_t	ino;
		int	fd;
	}		files[IDX_MAP_FILES];
} fds = { .mu = PTHREAD_MUTEX_INITIALIZER };

/*
 * A read-only descriptor of path, the file st says it was (stat()ed before
 * SQLite opened it): the process's one for that file, opened on first use.
 * -1 when the file is no longer the one stat()ed, or none can be had.
 */
static int
map_fd(const char *path, const struct stat *st)
{
	struct stat now;
	int fd = -1;

	if (stat(path, &now) == -1 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    !S_ISREG(now.st_mode))
		return -1;	/* replaced while SQLite opened it: not provably the same file */
	pthread_mutex_lock(&fds.mu);
	for (size_t i = 0; i < fds.n && fd == -1; i++)
		if (fds.files[i].dev == st->st_dev && fds.files[i].ino == st->st_ino)
			fd = fds.files[i].fd;
	if (fd == -1 && fds.n < IDX_MAP_FILES) {
		int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		if (f >= 0) {
			/* kept whatever file it is: closing it could drop SQLite's locks */
			bool known = fstat(f, &now) == 0;

			fds.files[fds.n].dev = known ? now.st_dev : 0;
			fds.files[fds.n].ino = known ? now.st_ino : 0;
			fds.files[fds.n++].fd = f;
			if (known && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
				fd = f;
		}
	}
	pthread_mutex_unlock(&fds.mu);
	return fd;
}

static void
map_drop(struct map_file *mf)
{
	if (mf->map != NULL)
		munmap(mf->map, (size_t)mf->map_len);
	mf->map = NULL;
	mf->map_len = 0;
	mf->file_len = 0;
}

/* How much of the file the mapping may serve: the file's length now, within the mapping. */
static void
map_measure(struct map_file *mf)
{
	struct stat st;

	mf->file_len = 0;
	if (mf->map != NULL && fstat(mf->fd, &st) == 0)
		mf->file_len = st.st_size < mf->map_len ? (sqlite3_int64)st.st_size : mf->map_len;
}

/*
 * Map the whole limit, past the file's end: a page past the end is never
 * served (map_measure), and when the file grows the mapping already holds
 * its new pages.
 */
static void
map_make(struct map_file *mf)
{
	sqlite3_int64 len = mf->max, os_page = sysconf(_SC_PAGESIZE);
	void *p;

	if ((uint64_t)len > SIZE_MAX / 4)
		len = (sqlite3_int64)(SIZE_MAX / 4);	/* a 32-bit address space */
	if (os_page > 0)
		len -= len % os_page;
	if (len <= 0)
		return;
	p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, mf->fd, 0);
	if (p == MAP_FAILED) {
		mf->max = 0;	/* no address space: pages are read until the PRAGMA asks again */
		return;
	}
	mf->map = p;
	mf->map_len = len;
	idx_maps_made++;
	map_measure(mf);
}

static int
map_fetch(sqlite3_file *file, sqlite3_int64 off, int amt, void **pp)
{
	struct map_file *mf = (struct map_file *)file;

	*pp = NULL;
	if (mf->fd < 0)
		return mf->real->pMethods->xFetch(mf->real, off, amt, pp);
	if (mf->max <= 0)
		return SQLITE_OK;
	if (mf->map == NULL && mf->n_out == 0)
		map_make(mf);
	if (mf->map != NULL && off >= 0 && amt >= 0 && off + amt <= mf->file_len) {
		*pp = mf->map + off;
		mf->n_out++;
	}
	return SQLITE_OK;
}

/*
 * xUnfetch(0, NULL) says the file may have changed size.  The unix VFS
 * unmaps it then, and maps it again at the next fetch: after every commit
 * of another process, the next search's pages were faulted in afresh and
 * the mapping's page tables torn down (docs/benchmarks.md).  On Linux a
 * shared mapping stays the file's as it grows and shrinks (a page cut off
 * is unmapped by the kernel, a page added is there to fault in), so this
 * VFS keeps it and only measures the file again: pages past its end are
 * not served, and the pager asks for none (its snapshot's pages are in the
 * file or in the WAL).
 */
static int
map_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
	struct map_file *mf = (struct map_file *)file;

	if (mf->fd < 0)
		return mf->real->pMethods->xUnfetch(mf->real, off, p);
	if (p != NULL)
		mf->n_out--;
	else
		map_measure(mf);
	return SQLITE_OK;
}

/*
 * The pager passes PRAGMA mmap_size's value as it is: the unix VFS is what
 * caps it (unixFileControl), and this one does not.  The PRAGMA reads the
 * limit back with -1.
 */
static int
map_file_control(sqlite3_file *file, int op, void *arg)
{
	struct map_file *mf = (struct map_file *)file;
	sqlite3_int64 *v = arg, old;

	if (op == IDX_FCNTL_MAP_LEN && mf->fd >= 0) {
		*v = mf->file_len;
		return SQLITE_OK;
	}
	if (op != SQLITE_FCNTL_MMAP_SIZE || mf->fd < 0)
		return mf->real->pMethods->xFileControl(mf->real, op, arg);
	old = mf->max;
	if (*v >= 0) {
		mf->max = *v;
		if (mf->n_out == 0)
			map_drop(mf);	/* the next fetch maps to the new limit */
	}
	*v = old;
	return SQLITE_OK;
}

static int
map_close(sqlite3_file *file)
{
	struct map_file *mf = (struct map_file *)file;

	map_drop(mf);
	return mf->real->pMethods->xClose(mf->real);
}

/*
 * The rest pass through.  A write or a truncation (never through a
 * read-only main database, which is all that is mapped here) would change
 * the file under the mapping: it is dropped first, as the unix VFS does.
 */
static int
map_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
	struct map_file *mf = (struct map_file *)file;

	return mf->real->pMethods->xRead(mf->real, buf, amt, off);
}

static int
map_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
	struct map_file *mf = (struct map_file *)file;

	if (mf->n_out == 0)
		map_drop(mf);
	return mf->real->pMethods->xWrite(mf->real, buf, amt, off);
}

static int
map_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct map_file *mf = (struct map_file *)file;

	if (mf->n_out == 0)
		map_drop(mf);
	return mf->real->pMethods->xTruncate(mf->real, size);
}

static int
map_sync(sqlite3_file *file, int flags)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xSync(real, flags);
}

static int
map_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xFileSize(real, size);
}

static int
map_lock(sqlite3_file *file, int lock)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xLock(real, lock);
}

static int
map_unlock(sqlite3_file *file, int lock)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xUnlock(real, lock);
}

static int
map_reserved(sqlite3_file *file, int *out)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xCheckReservedLock(real, out);
}

static int
map_sector(sqlite3_file *file)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xSectorSize(real);
}

static int
map_device(sqlite3_file *file)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xDeviceCharacteristics(real);
}

static int
map_shm_map(sqlite3_file *file, int pg, int pgsz, int extend, void volatile **pp)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xShmMap(real, pg, pgsz, extend, pp);
}

static int
map_shm_lock(sqlite3_file *file, int off, int n, int flags)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xShmLock(real, off, n, flags);
}

static void
map_shm_barrier(sqlite3_file *file)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	real->pMethods->xShmBarrier(real);
}

static int
map_shm_unmap(sqlite3_file *file, int del)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xShmUnmap(real, del);
}

static const sqlite3_io_methods map_io = {
	.iVersion = 3,
	.xClose = map_close,
	.xRead = map_read,
	.xWrite = map_write,
	.xTruncate = map_truncate,
	.xSync = map_sync,
	.xFileSize = map_file_size,
	.xLock = map_lock,
	.xUnlock = map_unlock,
	.xCheckReservedLock = map_reserved,
	.xFileControl = map_file_control,
	.xSectorSize = map_sector,
	.xDeviceCharacteristics = map_device,
	.xShmMap = map_shm_map,
	.xShmLock = map_shm_lock,
	.xShmBarrier = map_shm_barrier,
	.xShmUnmap = map_shm_unmap,
	.xFetch = map_fetch,
	.xUnfetch = map_unfetch,
};

static int
map_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
	struct map_file *mf = (struct map_file *)file;
	bool mapped = name != NULL && (flags & SQLITE_OPEN_MAIN_DB) &&
	    (flags & SQLITE_OPEN_READONLY);
	struct stat st;
	int rc;

	(void)vfs;
	memset(mf, 0, sizeof(*mf));
	mf->fd = -1;
	mf->real = (sqlite3_file *)(mf + 1);
	if (mapped && stat(name, &st) == -1)
		mapped = false;
	rc = real_vfs->xOpen(real_vfs, name, mf->real, flags, out_flags);
	if (rc != SQLITE_OK) {
		if (mf->real->pMethods != NULL)
			mf->real->pMethods->xClose(mf->real);
		return rc;	/* base.pMethods stays NULL: SQLite will not close it */
	}
	if (mapped)
		mf->fd = map_fd(name, &st);
	mf->base.pMethods = &map_io;
	return SQLITE_OK;
}

/*
 * The default VFS's other methods serve as they are: the unix VFS's ignore
 * the VFS they are given but for its mxPathname, which the copy keeps.
 */
static void
map_register(void)
{
	real_vfs = sqlite3_vfs_find(NULL);
	if (real_vfs == NULL || real_vfs->iVersion < 2)
		return;
	map_vfs = *real_vfs;
	map_vfs.pNext = NULL;
	map_vfs.zName = IDX_MAP_VFS;
	map_vfs.szOsFile = (int)sizeof(struct map_file) + real_vfs->szOsFile;
	map_vfs.xOpen = map_open;
	map_ready = sqlite3_vfs_register(&map_vfs, 0) == SQLITE_OK;
}

const char *
idx_map_vfs(void)
{
	pthread_once(&map_once, map_register);
	return map_ready ? IDX_MAP_VFS : NULL;
}

int64_t
idx_map_len(struct mb_index *idx)
{
	sqlite3_int64 len = 0;

	if (sqlite3_file_control(idx->db, "main", IDX_FCNTL_MAP_LEN, &len) != SQLITE_OK)
		return -1;
	return len;
}
