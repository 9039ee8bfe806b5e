/* SPDX-License-Identifier: MIT */
/* file.c - a handle's life: open (O_TRUNC included), truncate, close
 * (the inode kept with its cache after it: inode_keep.c, inode_evict.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "file.h"
#include "fsize_limit.h"
#include "reserve.h"
#include "ctx.h"
#include "inode.h"
#include "dontcache_stream.h"
#include "size.h"
#include "flush_queue.h"
#include "sync.h"
#include "writeback.h"
#include "inode_table.h"
#include "inode_keep.h"
#include "inode_evict.h"
#include "errseq.h"
#include "sys.h"

#define WTIO_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_DSYNC | \
			 O_SYNC | O_CLOEXEC | O_NOATIME | O_DIRECT | O_LARGEFILE)

/* A handle: a closed one again, or a new one. Every handle stays on
 * ctx->all_files until the context goes, so that a closed (or, after a
 * simulated crash, an abandoned) handle is never freed memory. */
static struct wtio_file *file_alloc(struct wtio_ctx *ctx)
{
	struct wtio_file *file;

	pthread_mutex_lock(&ctx->inodes_lock);
	file = ctx->dead_files;
	if (file) {
		ctx->dead_files = file->next_dead;
	} else {
		file = calloc(1, sizeof(*file));
		if (file) {
			file->next_all = ctx->all_files;
			ctx->all_files = file;
		}
	}
	pthread_mutex_unlock(&ctx->inodes_lock);
	return file;
}

/* Give back a handle that never became live. */
static void file_free(struct wtio_ctx *ctx, struct wtio_file *file)
{
	pthread_mutex_lock(&ctx->inodes_lock);
	file->next_dead = ctx->dead_files;
	ctx->dead_files = file;
	pthread_mutex_unlock(&ctx->inodes_lock);
}

/*
 * The backing descriptor, or -1 with errno. *rw: whether it is
 * read-write (the read-only fallback is not), known without asking.
 */
static int open_backing(const char *path, int oflags, int base, mode_t mode,
			bool writable, bool *created, bool *rw)
{
	int fd = -1;

	*created = false;
	*rw = true;
	/* O_TRUNC truncates nothing in a file its open creates (the kernel
	 * skips it), but our ftruncate would still cost the filesystem a
	 * transaction for the times: the creation alone is asked first. */
	if ((oflags & (O_CREAT | O_EXCL | O_TRUNC)) == (O_CREAT | O_TRUNC)) {
		fd = wtio_sys_open(path, base | O_EXCL, mode);
		*created = fd >= 0;
	}
	/* The cache is shared by every handle: the backing descriptor must
	 * be able to write back whoever dirtied it, so prefer read-write. */
	if (fd < 0)
		fd = wtio_sys_open(path, base, mode);
	if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS) &&
	    !writable) {
		fd = wtio_sys_open(path, (oflags & O_NOATIME) | O_RDONLY |
				   O_DIRECT | O_CLOEXEC);
		*rw = false;
	}
	return fd;
}

int wtio_file_open(struct wtio_ctx *ctx, const char *path, int oflags,
		   mode_t mode, unsigned int default_flags,
		   struct wtio_file **filep)
{
	int acc = oflags & O_ACCMODE;
	bool writable = acc != O_RDONLY;
	int base = (oflags & (O_CREAT | O_EXCL | O_NOATIME)) | O_RDWR |
		   O_DIRECT | O_CLOEXEC;
	struct wtio_inode *inode = NULL;
	struct wtio_file *file;
	bool created = false;
	int fd = -1, ret;

	if ((oflags & ~WTIO_OPEN_FLAGS) || acc == O_ACCMODE)
		return -EINVAL;
	if ((oflags & O_TRUNC) && !writable)
		return -EINVAL;
	for (;;) {
		fd = open_backing(path, oflags, base, mode, writable, &created,
				  &writable);
		/* Closed files kept with their cache hold descriptors: the
		 * oldest goes before an open fails for want of one. */
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE) ||
		    !wtio_evict_oldest(ctx))
			break;
	}
	if (fd < 0)
		return errno == EINVAL ? -EOPNOTSUPP : -errno;

	file = file_alloc(ctx);
	if (!file) {
		wtio_sys_close(fd);
		return -ENOMEM;
	}
	ret = wtio_inode_get(ctx, fd, writable, &inode);
	if (ret) {
		file_free(ctx, file);
		return ret;
	}
	file->ctx = ctx;
	file->inode = inode;
	file->oflags = oflags;
	file->next_dead = NULL;
	atomic_store(&file->ra_next, 0);
	atomic_store(&file->ra_window, 0);
	atomic_store(&file->dc_next, -1);
	atomic_store(&file->dc_run, -1);
	file->default_flags = default_flags;
	if (oflags & (O_DSYNC | O_SYNC))
		file->default_flags |= WTIO_DSYNC;
	atomic_store(&file->err_seen, wtio_errseq_sample(inode));
	atomic_store(&file->magic, WTIO_FILE_MAGIC);
	if ((oflags & O_TRUNC) && !created) {
		ret = wtio_file_truncate(file, 0);
		if (ret) {
			wtio_file_close(file);
			return ret;
		}
	}
	*filep = file;
	return 0;
}

/*
 * The block holding an unaligned new end, while dirty, is written back
 * whole later, by a flusher after the size is set: the backing file would
 * grow past it again (a block tail of zeros) until fsync or close. So it
 * is written now (wtio_inode_settle_end_block), and the backing file
 * keeps the size once truncate returns; an I/O error leaves the block
 * dirty and failed: fsync retries it, reports the error and fixes the
 * size.
 */
int wtio_file_truncate(struct wtio_file *file, off_t length)
{
	struct wtio_inode *inode = file->inode;
	int64_t size = length;
	int ret = 0;

	if (length < 0)
		return -EINVAL;
	if ((file->oflags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	/* As ftruncate: past the filesystem's limit is -EFBIG, and nothing
	 * changes. */
	if (length > inode->max_bytes)
		return -EFBIG;
	/* ulimit -f, as inode_newsize_ok: growing past it is -EFBIG and
	 * SIGXFSZ (checked before the file lock: the signal's write-back
	 * takes it). */
	if (length > wtio_inode_size(inode)) {
		ret = wtio_fsize_check_grow(inode, length);
		if (ret)
			return ret;
	}
	wtio_rwsem_lock(inode, false, false);
	/* It decides the size: no extension in flight is undone after. */
	wtio_inode_tail_reset(inode);
	ret = wtio_inode_prepare_extend(inode, false);
	if (ret) {
		wtio_rwsem_unlock(inode);
		return ret;
	}
	if (size < wtio_inode_size(inode)) {
		wtio_inode_cut_cache(inode, size);
	} else if (size > wtio_inode_size(inode)) {
		/* The chunk reserved ahead of appends would lie inside the
		 * file, allocated for zeros the kernel's truncate leaves as
		 * a hole (dd conv=sparse ends so): give it back. */
		wtio_reserve_clamp(inode, wtio_inode_size(inode));
		/* The block holding the old end, if dirty, is written now,
		 * while its I/O stops at the end's filesystem block: it
		 * leaves a hole past that, as the kernel's truncate does. */
		wtio_inode_settle_tail(inode, INT64_MAX, size, false);
	}
	wtio_inode_settle_end_block(inode, size);
	atomic_store(&inode->size_ahead, 0);
	ret = wtio_inode_set_disk_size(inode, size, true);
	/* The cache is authoritative even if the backing file refused: the
	 * size is fixed again at fsync and close. */
	if (!ret || size < wtio_inode_size(inode))
		atomic_store(&inode->i_size, size);
	wtio_rwsem_unlock(inode);
	return ret;
}

/*
 * Under WTIO_CONFIG_KEEP_CLOSED a closed file's dirty data is written
 * back later, by the flushers (which then make its size exact, sync.c)
 * or when it leaves the cache (inode_evict.c). A clean one has its size
 * made exact now: nothing else would visit it, and a flusher's write of
 * a block tail while it was open may have left the backing file longer.
 */
static int close_writable(struct wtio_inode *inode, bool keep)
{
	bool clean;

	if (keep) {
		pthread_mutex_lock(&inode->dirty_lock);
		clean = !inode->nr_dirty && !atomic_load(&inode->nr_writeback);
		pthread_mutex_unlock(&inode->dirty_lock);
		if (!clean)
			return 0;
	}
	/* As fsync, without the flush. */
	return wtio_make_durable(inode, 0, -1, 0);
}

/* Dirty data left after close's own write-back failed. */
static bool close_left_dirty(struct wtio_inode *inode)
{
	bool dirty;

	pthread_mutex_lock(&inode->dirty_lock);
	dirty = inode->nr_dirty != 0;
	pthread_mutex_unlock(&inode->dirty_lock);
	return dirty;
}

int wtio_file_close(struct wtio_file *file)
{
	struct wtio_ctx *ctx = file->ctx;
	struct wtio_inode *inode = file->inode;
	bool keep = ctx->cfg.flags & WTIO_CONFIG_KEEP_CLOSED;
	struct wtio_inode *victim = NULL;
	uint32_t write_inodes = 0;
	int ret = 0, err;

	atomic_store(&file->magic, WTIO_FILE_DEAD);
	/* A DONTCACHE stream's last part starts now, not when it expires. */
	wtio_dc_stream_end(file, -1);
	if ((file->oflags & O_ACCMODE) != O_RDONLY)
		ret = close_writable(inode, keep);
	/* Data its failed write-back gave back dirty stays cached, as a
	 * kept inode's: a reopen reads it and its fsync retries it, and
	 * leaving the cache retries it once more (the context's error if
	 * that fails too, inode_evict.c). Evicted now, it would be lost
	 * to a transient error, with the size on disk already covering
	 * it: a reopen would read zeros. */
	if (ret && !keep && close_left_dirty(inode))
		keep = true;
	err = wtio_file_check_error(file);
	if (err)
		ret = err;

	pthread_mutex_lock(&ctx->inodes_lock);
	if (--inode->refs == 0) {
		if (keep) {
			victim = wtio_keep_locked(ctx, inode, &write_inodes);
		} else {
			inode->evicting = true;
			victim = inode;
		}
	}
	ctx->nr_files--;
	file->next_dead = ctx->dead_files;
	ctx->dead_files = file;
	pthread_mutex_unlock(&ctx->inodes_lock);

	if (write_inodes && ctx->wb_kick)
		wtio_writeback_kick_inodes(ctx, write_inodes);
	if (victim == inode && !keep)
		wtio_inode_evict(inode);
	else if (victim)
		wtio_evict_kept(victim);
	return ret;
}
