/* SPDX-License-Identifier: MIT */
/*
 * inode_table.c - the context's table of open inodes: at open the inode
 * of a descriptor is found, or set up (geometry, size limit); at the
 * last close it is freed once no completion uses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inode_table.h"
#include "reserve.h"
#include "folio.h"
#include "ctx.h"
#include "inode.h"
#include "sys.h"

#define WTIO_MAX_FILE_SIZE ((int64_t)1 << 62)

static uint32_t round_down_pow2(uint32_t v)
{
	return v ? 1u << (31 - __builtin_clz(v)) : 0;
}

static int inode_setup_geometry(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	uint32_t bs;

	wtio_geometry_probe(inode->fd, &inode->geo);
	bs = inode->geo.dio_offset_align;
	if (bs < 512)
		bs = 512;
	/* Per-block state at the filesystem's block size when the folio
	 * allows: a sub-block direct write is slow (XFS serialises it). */
	if (round_down_pow2(inode->geo.blksize) > bs)
		bs = round_down_pow2(inode->geo.blksize);
	if (bs > ctx->folio_size)
		bs = ctx->folio_size;
	if (bs < ctx->folio_size / WTIO_MAX_BLOCKS_PER_FOLIO)
		bs = ctx->folio_size / WTIO_MAX_BLOCKS_PER_FOLIO;
	if (bs < inode->geo.dio_offset_align || bs < inode->geo.dio_mem_align)
		return -EOPNOTSUPP;	/* folio smaller than a DIO block */
	inode->block_size = bs;
	inode->block_shift = (uint32_t)__builtin_ctz(bs);
	inode->blocks_per_folio = ctx->folio_size / bs;
	if (ctx->cfg.stripe_unit) {
		inode->geo.stripe_unit = ctx->cfg.stripe_unit;
		inode->geo.stripe_width = ctx->cfg.stripe_width ?
			ctx->cfg.stripe_width : ctx->cfg.stripe_unit;
		inode->geo.stripe_source = "config";
	}
	/* A stripe unit that is not whole blocks cannot be honoured. */
	if ((ctx->cfg.flags & WTIO_CONFIG_NO_STRIPE_ALIGN) ||
	    inode->geo.stripe_unit % bs) {
		inode->geo.stripe_unit = 0;
		inode->geo.stripe_width = 0;
		inode->geo.stripe_source = "none";
	}
	return 0;
}

/*
 * The largest size this file may have: the filesystem's s_maxbytes for
 * it (ext4 gives files without extents a smaller one). lseek(SEEK_SET)
 * accepts an offset up to exactly that and no further (vfs_setpos under
 * generic_file_llseek_size, with the limit the write checks use), so a
 * binary search finds it: about 63 lseeks, once per inode, on our own
 * descriptor, whose position no I/O uses (all of it is positional).
 * pathconf(_PC_FILESIZEBITS) cannot tell: it says 64 on ext4, whose
 * limit is 16 TiB - 4 KiB. A filesystem whose lseek refuses even 0 gets
 * wtio's own cap, 2^62, which also bounds the size arithmetic.
 */
static int64_t probe_max_bytes(int fd)
{
	int64_t lo = 0, hi = WTIO_MAX_FILE_SIZE;

	if (wtio_sys_lseek(fd, 0, SEEK_SET) != 0 ||
	    wtio_sys_lseek(fd, hi, SEEK_SET) == hi) {
		wtio_sys_lseek(fd, 0, SEEK_SET);
		return hi;
	}
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;

		if (wtio_sys_lseek(fd, mid, SEEK_SET) == mid)
			lo = mid;
		else
			hi = mid - 1;
	}
	wtio_sys_lseek(fd, 0, SEEK_SET);
	return lo;
}

static struct wtio_inode *inode_new(struct wtio_ctx *ctx, int fd,
				    const struct stat *st, bool writable)
{
	struct wtio_inode *inode = calloc(1, sizeof(*inode));

	if (!inode) {
		errno = ENOMEM;
		return NULL;
	}
	inode->ctx = ctx;
	inode->fd = fd;
	inode->fd_writable = writable;
	inode->dev = st->st_dev;
	inode->ino = st->st_ino;
	atomic_store(&inode->i_size, st->st_size);
	atomic_store(&inode->disk_size_lb, st->st_size);
	inode->max_bytes = probe_max_bytes(fd);
	atomic_store(&inode->tail_guard, INT64_MAX);
	if (inode_setup_geometry(ctx, inode)) {
		free(inode);
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Blocks go to disk whole (read-modify-write at block_size, which
	 * large folios make up to 16 KiB): a block crossing the filesystem's
	 * limit could never be written back, so the limit wtio enforces is
	 * the last whole block below it. */
	inode->max_bytes &= ~(int64_t)(inode->block_size - 1);
	pthread_rwlock_init(&inode->i_rwsem, NULL);
	pthread_mutex_init(&inode->i_pages_lock, NULL);
	pthread_mutex_init(&inode->dirty_lock, NULL);
	pthread_mutex_init(&inode->wb_list_lock, NULL);
	pthread_mutex_init(&inode->extend_lock, NULL);
	pthread_cond_init(&inode->extend_cond, NULL);
	pthread_mutex_init(&inode->io_lock, NULL);
	pthread_cond_init(&inode->io_cond, NULL);
	return inode;
}

void wtio_inode_free(struct wtio_inode *inode)
{
	pthread_mutex_lock(&inode->io_lock);
	while (inode->io_refs)
		pthread_cond_wait(&inode->io_cond, &inode->io_lock);
	pthread_mutex_unlock(&inode->io_lock);
	pthread_mutex_destroy(&inode->io_lock);
	pthread_cond_destroy(&inode->io_cond);
	wtio_sys_close(inode->fd);
	pthread_rwlock_destroy(&inode->i_rwsem);
	pthread_mutex_destroy(&inode->i_pages_lock);
	pthread_mutex_destroy(&inode->dirty_lock);
	pthread_mutex_destroy(&inode->wb_list_lock);
	pthread_mutex_destroy(&inode->extend_lock);
	pthread_cond_destroy(&inode->extend_cond);
	wtio_reserve_free(inode);	/* also freed by wtio_ctx_crash */
	free(inode);
}

/* Find or create the inode for an open descriptor; consumes fd. */
int wtio_inode_get(struct wtio_ctx *ctx, int fd, bool writable,
		   struct wtio_inode **inodep)
{
	struct wtio_inode *inode;
	struct stat st;

	if (wtio_sys_fstat(fd, &st) < 0) {
		int err = -errno;

		wtio_sys_close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		wtio_sys_close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	pthread_mutex_lock(&ctx->inodes_lock);
	for (inode = ctx->inodes; inode; inode = inode->next)
		if (inode->dev == st.st_dev && inode->ino == st.st_ino)
			break;
	if (inode) {
		/* dup3 swaps the descriptor atomically under I/O already
		 * submitted on the old one. */
		if (writable && !inode->fd_writable &&
		    wtio_sys_dup3(fd, inode->fd, O_CLOEXEC) >= 0)
			inode->fd_writable = true;
		wtio_sys_close(fd);
		inode->refs++;
	} else {
		inode = inode_new(ctx, fd, &st, writable);
		if (!inode) {
			/* -ENOMEM, or -EOPNOTSUPP: no usable geometry. */
			int err = -errno;

			pthread_mutex_unlock(&ctx->inodes_lock);
			wtio_sys_close(fd);
			return err;
		}
		inode->refs = 1;
		inode->next = ctx->inodes;
		ctx->inodes = inode;
	}
	ctx->nr_files++;
	pthread_mutex_unlock(&ctx->inodes_lock);
	*inodep = inode;
	return 0;
}
