/* SPDX-License-Identifier: MIT */
/*
 * size.c - the file's two sizes: the gate that every change of the
 * backing file's size and every direct write that may extend it pass,
 * and the cut of what a failed write's extension left past the size
 * (the undo itself: size_undo.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "size.h"
#include "reserve.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "inode.h"
#include "dirty.h"
#include "inode_folios.h"
#include "sys.h"
#include "io/io.h"

/*
 * The backing file is size long without asking: it is at least
 * disk_size_lb long, and nothing can have made it longer than a size on a
 * block boundary: direct writes end on blocks at or below it (a block
 * tail only lies past an unaligned size), no write-through growth ahead,
 * no failed extension left past it (eof_stale, a run of extensions still
 * open), no extending write in flight.
 */
static bool size_known_exact(struct wtio_inode *inode, int64_t size)
{
	return !(size & (int64_t)(inode->block_size - 1)) &&
	       atomic_load(&inode->disk_size_lb) == size &&
	       !atomic_load(&inode->size_ahead) &&
	       !atomic_load(&inode->eof_stale) &&
	       !atomic_load(&inode->nr_dio_extending) &&
	       atomic_load(&inode->tail_guard) == INT64_MAX;
}

/*
 * The backing file's size, asking the kernel for the size alone. An
 * fstat asks for the timestamps too, and on a filesystem with multigrain
 * timestamps (XFS, tmpfs, ext4 since 6.13) a query of the ctime obliges
 * the next write to take a fine-grained time and log a timestamp update:
 * the next io_uring direct write fails its NOWAIT try and goes to an
 * io-wq worker, and every DSYNC extending write paid one more inode
 * transaction. Nobody sees the times wtio would read here, so the kernel
 * need not make the next change visible.
 */
int wtio_backing_size(int fd, int64_t *size)
{
	struct stat st;

#if defined(SYS_statx) && defined(STATX_SIZE)
	struct statx stx;

	if (wtio_sys_syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_SIZE,
			     &stx) == 0 && (stx.stx_mask & STATX_SIZE)) {
		*size = (int64_t)stx.stx_size;
		return 0;
	}
	/* An old kernel or a seccomp filter refuses statx: fstat works. */
#endif
	if (wtio_sys_fstat(fd, &st) < 0)
		return -errno;
	*size = (int64_t)st.st_size;
	return 0;
}

int wtio_inode_sync_size(struct wtio_inode *inode, bool wait_io)
{
	int64_t size = wtio_inode_size(inode);
	int64_t disk;
	int ret;

	/* A small file written whole, once, needs no size query per close. */
	if (size_known_exact(inode, size))
		return 0;
	ret = wtio_backing_size(inode->fd, &disk);
	if (ret)
		return ret;
	atomic_store(&inode->size_ahead, 0);
	if (disk == size)
		return 0;
	/* A shrink waits out extending direct writes as a growth does: one
	 * completing after the ftruncate would leave the file longer than
	 * the size just set, past disk_size_lb's promise. */
	return wtio_inode_set_disk_size(inode, size, wait_io);
}

/*
 * XFS sizes a file with ftruncate by reading the old size, then waiting
 * for direct I/O, then zeroing from the old size to the new one through
 * its page cache: a direct write that extended the file while it waited
 * is zeroed (found as 1 MiB of zeros where an ioend had written). So no
 * write that may move the end is in flight while the size grows.
 *
 * The gate counts the size changes in progress, waiting ones included:
 * several run at once under a shared i_rwsem (DSYNC writers, fsync), and
 * while one waits in cond_wait another may finish. Were the gate a flag,
 * that one would lower it under the waiter: extending writes would pass
 * again, and the last one's end, seeing no gate, would not wake it.
 */
int wtio_inode_set_disk_size(struct wtio_inode *inode, int64_t size,
			     bool wait_io)
{
	int ret = 0;

	pthread_mutex_lock(&inode->extend_lock);
	if (size < atomic_load(&inode->disk_size_lb))
		atomic_store(&inode->disk_size_lb, size);
	atomic_fetch_add(&inode->extend_gate, 1);
	while (wait_io && atomic_load(&inode->nr_dio_extending))
		pthread_cond_wait(&inode->extend_cond, &inode->extend_lock);
	/* A caller that cannot wait (a completion thread) changes nothing
	 * while an extending write is in flight: the size stays as the
	 * direct writes leave it until fsync or close make it exact. The
	 * gate was raised first, so a write that counted itself after this
	 * load sees the gate and waits (the pairing in dio_write_begin). */
	if (!wait_io && atomic_load(&inode->nr_dio_extending))
		ret = -EAGAIN;
	else
		ret = wtio_io_set_size(&inode->ctx->io, inode->fd, size);
	if (!ret) {
		atomic_store(&inode->disk_size_lb, size);
		/* Nothing lies past the new size: give back what was
		 * reserved there for appends (reserve.c). */
		wtio_reserve_clamp(inode, size);
	}
	if (atomic_fetch_sub(&inode->extend_gate, 1) == 1)
		pthread_cond_broadcast(&inode->extend_cond);
	pthread_mutex_unlock(&inode->extend_lock);
	return ret == -EAGAIN ? 0 : ret;
}

bool wtio_inode_dio_write_begin(struct wtio_inode *inode, int64_t off,
				int64_t len, void (*reap_own)(void *),
				void *arg)
{
	/* Inside the file's known size: cannot move its end. */
	if (off + len <= atomic_load_explicit(&inode->disk_size_lb,
					      memory_order_acquire))
		return false;
	for (;;) {
		/* Paired with set_disk_size: it raises the gate, then reads
		 * the count; we raise the count, then read the gate. */
		atomic_fetch_add(&inode->nr_dio_extending, 1);
		if (!atomic_load(&inode->extend_gate))
			return true;
		wtio_inode_dio_write_end(inode, true, off, 0);
		/* The size change waits for our own writes in flight too. */
		if (reap_own)
			reap_own(arg);
		pthread_mutex_lock(&inode->extend_lock);
		while (atomic_load(&inode->extend_gate))
			pthread_cond_wait(&inode->extend_cond,
					  &inode->extend_lock);
		pthread_mutex_unlock(&inode->extend_lock);
	}
}

void wtio_inode_dio_write_end(struct wtio_inode *inode, bool extending,
			      int64_t off, ssize_t res)
{
	int64_t end = off + (res > 0 ? res : 0);
	int64_t lb = atomic_load_explicit(&inode->disk_size_lb,
					  memory_order_relaxed);

	/* A completed extending write leaves the file at least this long:
	 * no size change ran while it was in flight (they wait for it). A
	 * write that began inside the bound must not raise it: a shrink may
	 * have cut the file under it since, and a bound above the real end
	 * would let a later extending write skip the gate while the size
	 * grows, to have its bytes zeroed by XFS. */
	while (extending && res > 0 && end > lb &&
	       !atomic_compare_exchange_weak(&inode->disk_size_lb, &lb, end))
		;
	if (!extending)
		return;
	if (atomic_fetch_sub(&inode->nr_dio_extending, 1) == 1 &&
	    atomic_load(&inode->extend_gate)) {
		pthread_mutex_lock(&inode->extend_lock);
		pthread_cond_broadcast(&inode->extend_cond);
		pthread_mutex_unlock(&inode->extend_lock);
	}
}

/* Cut a folio at size: drop it when it lies wholly past, else zero its
 * tail and forget dirty blocks past the size. */
static void truncate_one(struct wtio_inode *inode, struct wtio_folio *f,
			 void *arg)
{
	int64_t size = *(int64_t *)arg;
	uint32_t fs = inode->folio_size;
	int64_t start = (int64_t)atomic_load(&f->index) * fs;
	uint32_t from;

	if (start >= size) {
		wtio_folio_cancel_dirty(inode, f);
		wtio_folio_remove(f);
		return;
	}
	from = (uint32_t)(size - start);
	memset(f->data + from, 0, fs - from);
	/* Blocks wholly past the size are zeros now, exactly what the disk
	 * reads past EOF, so they need no write. */
	wtio_ifs_dirty_set(f, f->ifs_dirty & ~wtio_ifs_mask(inode,
			(from + inode->block_size - 1) & ~(inode->block_size - 1),
			fs));
	if (!f->ifs_dirty && wtio_folio_test(f, FOLIO_DIRTY))
		wtio_folio_cancel_dirty(inode, f);
}

void wtio_inode_cut_cache(struct wtio_inode *inode, int64_t size)
{
	wtio_inode_for_each_folio(inode,
				  (uint64_t)size >> inode->folio_shift,
				  truncate_one, &size);
}

int wtio_inode_cut_disk(struct wtio_inode *inode, bool wait_io)
{
	struct wtio_io_req req = { .op = WTIO_IO_FDATASYNC, .fd = inode->fd };
	int64_t size = wtio_inode_size(inode);
	int64_t disk;
	ssize_t res;
	int ret;

	/* Longer on purpose with the size ahead; nothing to cut if not
	 * longer; a completion thread cannot wait for extending writes. */
	if (atomic_load(&inode->size_ahead) ||
	    (!wait_io && atomic_load(&inode->nr_dio_extending)))
		return 0;
	ret = wtio_backing_size(inode->fd, &disk);
	if (ret)
		return ret;
	if (disk <= size)
		return 0;
	ret = wtio_inode_set_disk_size(inode, size, wait_io);
	if (ret)
		return ret;
	/* Durable: a failed DSYNC write's landed part would come back
	 * after a crash. */
	res = wtio_io_sync(&inode->ctx->io, &req);
	return res < 0 ? (int)res : 0;
}

void wtio_inode_cut_pending(struct wtio_inode *inode)
{
	if (!atomic_load(&inode->eof_stale) ||
	    pthread_rwlock_tryrdlock(&inode->i_rwsem))
		return;
	/* A failure leaves it to the next extension, as for the undo. */
	wtio_inode_cut_disk(inode, false);
	pthread_rwlock_unlock(&inode->i_rwsem);
}

/*
 * Before i_size moves up (a write past it or a truncate up; exclusive
 * lock held): a failed extending write whose size was put back from a
 * completion thread, which may not wait for locks, left its blocks in the
 * cache past i_size and maybe on disk past it. Cut both at i_size now, so
 * that what becomes part of the file there reads as zeros.
 */
int wtio_inode_prepare_extend(struct wtio_inode *inode, bool nowait)
{
	int64_t size;
	int ret;

	if (!atomic_load(&inode->eof_stale))
		return 0;
	if (nowait)
		return -EAGAIN;
	atomic_store(&inode->eof_stale, false);
	size = wtio_inode_size(inode);
	wtio_inode_cut_cache(inode, size);
	atomic_store(&inode->size_ahead, 0);
	ret = wtio_inode_cut_disk(inode, true);
	if (!ret)
		ret = wtio_inode_set_disk_size(inode, size, true);
	if (ret)
		atomic_store(&inode->eof_stale, true);
	return ret;
}
