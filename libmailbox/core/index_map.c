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
 *   for the life of the process (map_unfetch says why), one per file,
 *   shared by the process's connections to it: mcpd's threads each have a
 *   connection, and a page one of them faulted in is mapped for all.  A
 *   connection serves the pages the file held when it last measured it:
 *   at its first fetch and whenever the pager says the file may have
 *   changed (another process's commit).  A page past that is read with
 *   xRead, as before.
 *
 * The mapping needs a descriptor of the file, and SQLite does not lend its
 * own.  Closing a second descriptor of a file drops every POSIX lock the
 * process holds on it, SQLite's included, so the descriptors opened here
 * are never closed either: one per file (device and inode), at most
 * IDX_MAP_FILES.  A reader opens one index file per account.
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

/* One file the process maps: its descriptor and mapping, both kept until the process exits. */
struct map_shared {
	dev_t		 dev;
	ino_t		 ino;
	int		 fd;
	unsigned char	*map;		/* NULL until a connection first fetches a page */
	sqlite3_int64	 map_len;	/* the first fetch's limit, past the file's end */
};

/* One open file of a connection through IDX_MAP_VFS. */
struct map_file {
	sqlite3_file	 base;		/* pMethods: &map_io; NULL when the open failed */
	sqlite3_file	*real;		/* the default VFS's file: the bytes after this one */
	struct map_shared *sh;		/* the file's, or NULL when it is not mapped here */
	sqlite3_int64	 max;		/* bytes to map at most: PRAGMA mmap_size's, uncapped */
	unsigned char	*map;		/* sh's mapping, once this connection fetched, or NULL */
	sqlite3_int64	 map_len;	/* of it, what max lets this connection serve */
	sqlite3_int64	 file_len;	/* of that, what the file held when last measured */
	int		 n_out;		/* pages lent to the pager, not given back yet */
};

_Thread_local uint64_t idx_maps_made;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs map_vfs;
static pthread_once_t map_once = PTHREAD_ONCE_INIT;
static bool map_ready;

/* The files map_shared_of() opened: never closed, never unmapped (above). */
static struct {
	pthread_mutex_t		mu;
	size_t			n;
	struct map_shared	files[IDX_MAP_FILES];
} shared = { .mu = PTHREAD_MUTEX_INITIALIZER };

/*
 * The process's entry for path, the file st says it was (stat()ed before
 * SQLite opened it), its descriptor opened on first use.  NULL when the
 * file is no longer the one stat()ed, or no descriptor can be had.
 */
static struct map_shared *
map_shared_of(const char *path, const struct stat *st)
{
	struct map_shared *sh = NULL;
	struct stat now;

	if (stat(path, &now) == -1 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    !S_ISREG(now.st_mode))
		return NULL;	/* replaced while SQLite opened it: not provably the same file */
	pthread_mutex_lock(&shared.mu);
	for (size_t i = 0; i < shared.n && sh == NULL; i++)
		if (shared.files[i].dev == st->st_dev && shared.files[i].ino == st->st_ino)
			sh = &shared.files[i];
	if (sh == NULL && shared.n < IDX_MAP_FILES) {
		int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		if (f >= 0) {
			/* kept whatever file it is: closing it could drop SQLite's locks */
			struct map_shared *e = &shared.files[shared.n++];
			bool known = fstat(f, &now) == 0;

			e->dev = known ? now.st_dev : 0;
			e->ino = known ? now.st_ino : 0;
			e->fd = f;
			if (known && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
				sh = e;
		}
	}
	pthread_mutex_unlock(&shared.mu);
	return sh;
}

/* How much of the file the connection may serve: the file's length now, within its share. */
static void
map_measure(struct map_file *mf)
{
	struct stat st;

	mf->file_len = 0;
	if (mf->map != NULL && fstat(mf->sh->fd, &st) == 0)
		mf->file_len = st.st_size < mf->map_len ? (sqlite3_int64)st.st_size : mf->map_len;
}

/*
 * The file's mapping, made by the first connection to fetch: of its whole
 * limit, past the file's end, so that when the file grows the mapping
 * already holds the new pages (a page past the end is never served:
 * map_measure).  A connection asking for more than that first limit serves
 * only the first.
 */
static void
map_make(struct map_file *mf)
{
	sqlite3_int64 len = mf->max, os_page = sysconf(_SC_PAGESIZE);
	struct map_shared *sh = mf->sh;

	if ((uint64_t)len > SIZE_MAX / 4)
		len = (sqlite3_int64)(SIZE_MAX / 4);	/* a 32-bit address space */
	if (os_page > 0)
		len -= len % os_page;
	if (len <= 0)
		return;
	pthread_mutex_lock(&shared.mu);
	if (sh->map == NULL) {
		void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, sh->fd, 0);

		if (p != MAP_FAILED) {
			sh->map = p;
			sh->map_len = len;
			idx_maps_made++;
		}
	}
	if (sh->map != NULL) {
		mf->map = sh->map;
		mf->map_len = len < sh->map_len ? len : sh->map_len;
	} else
		mf->max = 0;	/* no address space: pages are read until the PRAGMA asks again */
	pthread_mutex_unlock(&shared.mu);
	map_measure(mf);
}

/* The connection stops serving pages mapped; the file's mapping stays. */
static void
map_release(struct map_file *mf)
{
	mf->map = NULL;
	mf->map_len = 0;
	mf->file_len = 0;
}

static int
map_fetch(sqlite3_file *file, sqlite3_int64 off, int amt, void **pp)
{
	struct map_file *mf = (struct map_file *)file;

	*pp = NULL;
	if (mf->sh == NULL)
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

	if (mf->sh == NULL)
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

	if (op == IDX_FCNTL_MAP_LEN && mf->sh != NULL) {
		*v = mf->file_len;
		return SQLITE_OK;
	}
	if (op != SQLITE_FCNTL_MMAP_SIZE || mf->sh == NULL)
		return mf->real->pMethods->xFileControl(mf->real, op, arg);
	old = mf->max;
	if (*v >= 0) {
		mf->max = *v;
		if (mf->n_out == 0)
			map_release(mf);	/* the next fetch maps to the new limit */
	}
	*v = old;
	return SQLITE_OK;
}

/* The file's mapping and descriptor outlive the connection (above). */
static int
map_close(sqlite3_file *file)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xClose(real);
}

/*
 * The rest pass through.  Only a read-only main database is mapped here,
 * and nothing is written through it.
 */
static int
map_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xRead(real, buf, amt, off);
}

static int
map_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xWrite(real, buf, amt, off);
}

static int
map_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	sqlite3_file *real = ((struct map_file *)file)->real;

	return real->pMethods->xTruncate(real, size);
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
		mf->sh = map_shared_of(name, &st);
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
