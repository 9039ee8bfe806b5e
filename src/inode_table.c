/* SPDX-License-Identifier: MIT */

/*
 * inode_table.c - the context's table of open inodes: at open the inode
 * of a descriptor is found, or set up (geometry, size limit) outside the
 * table's lock, or found (a closed one kept with its cache included,
 * inode_keep.c); when its last user is gone it is freed once no
 * completion uses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inode_table.h"
#include "geometry_cache.h"
#include "inode_keep.h"
#include "inode_folios.h"
#include "flush_queue.h"
#include "reserve.h"
#include "folio.h"
#include "folio_size.h"
#include "ctx.h"
#include "inode.h"
#include "inode_slots.h"
#include "sys.h"

static int inode_setup_geometry(struct wtio_ctx *ctx, struct wtio_inode *inode,
				const struct wtio_file_stat *st)
{
	wtio_geometry_probe_cached(inode->fd, st, &inode->geo,
				   &inode->max_bytes);
	if (ctx->cfg.stripe_unit) {
		inode->geo.stripe_unit = ctx->cfg.stripe_unit;
		inode->geo.stripe_width = ctx->cfg.stripe_width ?
			ctx->cfg.stripe_width : ctx->cfg.stripe_unit;
		inode->geo.stripe_source = "config";
	}
	if (ctx->cfg.flags & WTIO_CONFIG_NO_STRIPE_ALIGN) {
		inode->geo.stripe_unit = 0;
		inode->geo.stripe_width = 0;
		inode->geo.stripe_source = "none";
	}
	return wtio_inode_set_shape(inode, ctx->folio_size, true);
}

/*
 * The file lock prefers writers, as the kernel's i_rwsem is fair to
 * them: glibc's default prefers readers, and readers that overlap one
 * another without a gap (misses in a small cache) kept a writer or a
 * truncate out for ever. Nothing takes it shared twice in one thread
 * (that would now wait behind a queued writer).
 */
static void wtio_inode_rwsem_init(struct wtio_inode *inode)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&inode->i_rwsem, &attr);
	pthread_rwlockattr_destroy(&attr);
}


static struct wtio_inode *inode_new(struct wtio_ctx *ctx, int fd,
				    const struct wtio_file_stat *st,
				    bool writable)
{
	struct wtio_inode *inode = calloc(1, sizeof(*inode));

	if (!inode) {
		errno = ENOMEM;
		return NULL;
	}
	inode->ctx = ctx;
	inode->fd = fd;
	inode->fd_writable = writable;
	inode->dev = st->dev;
	inode->ino = st->ino;
	atomic_store(&inode->i_size, st->size);
	atomic_store(&inode->disk_size_lb, st->size);
	atomic_store(&inode->tail_guard, INT64_MAX);
	atomic_store(&inode->tail_pending, -1);
	if (inode_setup_geometry(ctx, inode, st)) {
		free(inode);
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Blocks go to disk whole (read-modify-write at block_size, which
	 * large folios make up to 16 KiB): a block crossing the filesystem's
	 * limit could never be written back, so the limit wtio enforces is
	 * the last whole block below it. */
	inode->max_bytes &= ~(int64_t)(inode->block_size - 1);
	/* A file already past that limit (XFS and tmpfs allow up to 2^63 - 1)
	 * is not taken: its end could be neither written nor sought to under
	 * the one limit wtio keeps (wtio_file_max_size). */
	if (st->size > inode->max_bytes) {
		free(inode);
		errno = EFBIG;
		return NULL;
	}
	/* Empty and without blocks: no preallocation past EOF either. */
	if (st->size == 0 && st->blocks == 0)
		wtio_reserve_init_empty(inode);
	wtio_inode_rwsem_init(inode);
	pthread_mutex_init(&inode->i_pages_lock, NULL);
	pthread_mutex_init(&inode->dirty_lock, NULL);
	pthread_mutex_init(&inode->wb_list_lock, NULL);
	pthread_mutex_init(&inode->extend_lock, NULL);
	pthread_mutex_init(&inode->tail_lock, NULL);
	pthread_cond_init(&inode->extend_cond, NULL);
	pthread_mutex_init(&inode->io_lock, NULL);
	pthread_cond_init(&inode->io_cond, NULL);
	return inode;
}

/* Free an inode's locks and memory; its descriptor is the caller's. */
static void inode_destroy(struct wtio_inode *inode)
{
	pthread_mutex_destroy(&inode->io_lock);
	pthread_cond_destroy(&inode->io_cond);
	pthread_rwlock_destroy(&inode->i_rwsem);
	pthread_mutex_destroy(&inode->i_pages_lock);
	pthread_mutex_destroy(&inode->dirty_lock);
	pthread_mutex_destroy(&inode->wb_list_lock);
	pthread_mutex_destroy(&inode->extend_lock);
	pthread_mutex_destroy(&inode->tail_lock);
	pthread_cond_destroy(&inode->extend_cond);
	wtio_reserve_free(inode);	/* also freed by wtio_ctx_crash */
	wtio_slots_free(inode);
	free(inode);
}

void wtio_inode_free(struct wtio_inode *inode)
{
	pthread_mutex_lock(&inode->io_lock);
	while (atomic_load_explicit(&inode->io_refs, memory_order_acquire))
		pthread_cond_wait(&inode->io_cond, &inode->io_lock);
	pthread_mutex_unlock(&inode->io_lock);
	wtio_sys_close(inode->fd);
	inode_destroy(inode);
}

static struct wtio_inode **inode_bucket(struct wtio_ctx *ctx, dev_t dev,
					ino_t ino)
{
	uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32)) *
		     0x9e3779b97f4a7c15ull;

	return &ctx->inode_hash[h >> 52 & (WTIO_INODE_HASH - 1)];
}

void wtio_inode_evict(struct wtio_inode *inode)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_inode **pp;

	/* Drop first: it waits for every I/O, whose completion may queue
	 * the inode for the flushers again. */
	wtio_inode_drop_cache(inode);
	wtio_writeback_detach_inode(inode);
	/* Space preallocated for appends past the end goes back, before
	 * an open can set the file up again and write there (and under the
	 * file lock, which a full filesystem's trim of others takes). */
	wtio_rwsem_lock(inode, false, false);
	wtio_reserve_release(inode);
	wtio_rwsem_unlock(inode);
	pthread_mutex_lock(&ctx->inodes_lock);
	if (inode->prev)
		inode->prev->next = inode->next;
	else
		ctx->inodes = inode->next;
	if (inode->next)
		inode->next->prev = inode->prev;
	pp = inode_bucket(ctx, inode->dev, inode->ino);
	while (*pp != inode)
		pp = &(*pp)->hash_next;
	*pp = inode->hash_next;
	atomic_fetch_add_explicit(&ctx->nr_evicted, 1, memory_order_release);
	pthread_cond_broadcast(&ctx->kept_cond);
	pthread_mutex_unlock(&ctx->inodes_lock);
	wtio_inode_free(inode);
}

/* The context's inode of (dev, ino), or NULL. One leaving the table
 * (evicted after its last close) is waited for: its cache may hold what
 * the disk does not have yet. inodes_lock held. */
static struct wtio_inode *inode_find(struct wtio_ctx *ctx, dev_t dev,
				     ino_t ino)
{
	struct wtio_inode *inode;

again:
	for (inode = *inode_bucket(ctx, dev, ino); inode;
	     inode = inode->hash_next)
		if (inode->dev == dev && inode->ino == ino) {
			if (inode->evicting) {
				wtio_keep_wait_evicted_locked(ctx);
				goto again;
			}
			return inode;
		}
	return NULL;
}

/* One more handle of an inode already set up; fd goes, once it gave
 * the inode write access if the inode lacked it (dup3 swaps the
 * descriptor atomically under I/O already submitted on the old one).
 * inodes_lock held. */
static void inode_share(struct wtio_inode *inode, int fd, bool writable)
{
	if (writable && !inode->fd_writable &&
	    wtio_sys_dup3(fd, inode->fd, O_CLOEXEC) >= 0)
		inode->fd_writable = true;
	wtio_sys_close(fd);
	wtio_keep_revive_locked(inode->ctx, inode);
	inode->refs++;
}

/* Find or create the inode for an open descriptor; consumes fd. */
int wtio_inode_get(struct wtio_ctx *ctx, int fd, bool writable,
		   struct wtio_inode **inodep)
{
	struct wtio_inode *inode, *fresh;
	struct wtio_file_stat st;
	uint64_t evicted;
	int ret;

again:
	/* An inode of this file that leaves the table from here on (its
	 * last close, or a kept one evicted) may still be writing its data
	 * back and fixing the size as we stat: read before the statx, and
	 * compared under the lock below, where nothing can leave. */
	evicted = atomic_load_explicit(&ctx->nr_evicted, memory_order_acquire);
	/* One statx: the identity, the size and the file's own geometry. */
	ret = wtio_geometry_stat(fd, &st);
	if (ret) {
		wtio_sys_close(fd);
		return ret;
	}
	if (!S_ISREG(st.mode)) {
		wtio_sys_close(fd);
		return S_ISDIR(st.mode) ? -EISDIR : -EINVAL;
	}
	pthread_mutex_lock(&ctx->inodes_lock);
	inode = inode_find(ctx, st.dev, st.ino);
	if (inode) {
		inode_share(inode, fd, writable);
		goto out;
	}
	/* A new inode is set up outside the lock: its probes are system
	 * calls, and every open and last close of the context takes it. */
	pthread_mutex_unlock(&ctx->inodes_lock);
	fresh = inode_new(ctx, fd, &st, writable);
	if (!fresh) {
		/* -ENOMEM, -EOPNOTSUPP (no usable geometry), or -EFBIG
		 * (the file is past wtio's largest size). */
		int err = -errno;

		wtio_sys_close(fd);
		return err;
	}
	pthread_mutex_lock(&ctx->inodes_lock);
	/* Another open of the file may have set it up meanwhile: a file
	 * has one inode, one cache, in a context. */
	inode = inode_find(ctx, st.dev, st.ino);
	if (inode) {
		inode_destroy(fresh);
		inode_share(inode, fd, writable);
		goto out;
	}
	/* An inode left since the statx: the size it gave may be one the
	 * leaving inode's write-back has changed since. Stat again. */
	if (atomic_load_explicit(&ctx->nr_evicted, memory_order_relaxed) !=
	    evicted) {
		pthread_mutex_unlock(&ctx->inodes_lock);
		inode_destroy(fresh);
		goto again;
	}
	inode = fresh;
	inode->refs = 1;
	inode->prev = NULL;
	inode->next = ctx->inodes;
	if (ctx->inodes)
		ctx->inodes->prev = inode;
	ctx->inodes = inode;
	inode->hash_next = *inode_bucket(ctx, st.dev, st.ino);
	*inode_bucket(ctx, st.dev, st.ino) = inode;
out:
	ctx->nr_files++;
	pthread_mutex_unlock(&ctx->inodes_lock);
	*inodep = inode;
	return 0;
}
