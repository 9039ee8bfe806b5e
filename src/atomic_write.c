/* SPDX-License-Identifier: MIT */
/*
 * atomic_write.c - untorn buffered writes (WTIO_ATOMIC).
 *
 * The range goes to disk as one RWF_ATOMIC direct write from a single
 * contiguous bounce buffer (folios are not contiguous in memory, and most
 * devices allow one segment per atomic write), so no folio boundary,
 * stripe cut or writeback pass can split it. In the cache the copy is
 * made under the exclusive file lock, so readers (shared lock, and the
 * folio lock on hits) see all old or all new.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iov_iter.h"
#include "wtio_internal.h"

int wtio_atomic_check(struct wtio_inode *inode, off_t off, size_t len)
{
	const struct wtio_geometry *g = &inode->geo;

	if (!g->atomic_unit_max)
		return -EOPNOTSUPP;
	if (len & (len - 1) || len < g->atomic_unit_min ||
	    len > g->atomic_unit_max || off % (off_t)len)
		return -EINVAL;
	return 0;
}

/* The folios of [off, off + len): locked in turn, written, and left
 * under writeback with a reference in v[] until the I/O ends. */
static int atomic_copy(struct wtio_file *file, const char *bounce, off_t off,
		       size_t len, unsigned int flags, struct wtio_folio **v,
		       int *nr)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	bool nowait = flags & WTIO_NOWAIT;
	size_t done = 0;
	int ret = 0;

	*nr = 0;
	while (done < len) {
		struct wtio_span sp = wtio_span_at(ctx, off, len, done);
		uint64_t index = sp.index;
		uint32_t from = sp.from, to = sp.to;
		struct wtio_folio *f;

		ret = wtio_folio_get_stable(inode, index, nowait, &f);
		if (ret)
			break;
		ret = wtio_write_prepare_blocks(inode, f, from, to,
						wtio_inode_size(inode), nowait);
		if (ret) {
			wtio_folio_unlock(f);
			wtio_folio_put(ctx, f);
			break;
		}
		memcpy(f->data + from, bounce + done, to - from);
		wtio_ifs_set_uptodate(inode, f, wtio_ifs_mask(inode, from, to));
		/* Dirty blocks inside the range now hold the atomic data,
		 * which the atomic I/O writes: a flusher must not write them
		 * separately (a failed atomic write must leave none of it). */
		f->ifs_dirty &= ~wtio_ifs_mask(inode, from, to);
		if (!f->ifs_dirty && wtio_folio_test(f, FOLIO_DIRTY))
			wtio_folio_cancel_dirty(inode, f);
		wtio_folio_mark_dropbehind(f, flags & WTIO_DONTCACHE);
		/* Under writeback, the folio is stable: an overlapping
		 * write waits for the atomic I/O, so the disk sees the
		 * writes in the cache's order. Dirty blocks of the folio
		 * outside the range stay dirty for the flushers. */
		wtio_folio_set_writeback(inode, f);
		wtio_folio_unlock(f);
		v[(*nr)++] = f;
		done += to - from;
	}
	return ret;
}

/* The atomic I/O is over: end writeback, and on failure make readers go
 * to the disk for the range, which holds all old data. */
static void atomic_end(struct wtio_inode *inode, struct wtio_folio **v,
		       int nr, off_t off, size_t len, int error)
{
	struct wtio_ctx *ctx = inode->ctx;
	int i;

	for (i = 0; i < nr; i++) {
		struct wtio_folio *f = v[i];

		if (error) {
			int64_t base = (int64_t)atomic_load(&f->index) <<
				       ctx->folio_shift;
			int64_t from = off > base ? off - base : 0;
			int64_t to = off + (int64_t)len - base;

			if (to > ctx->folio_size)
				to = ctx->folio_size;
			wtio_folio_clear_flag(f, FOLIO_UPTODATE);
			atomic_fetch_and(&f->ifs_uptodate,
				~wtio_ifs_mask(inode, (uint32_t)from,
					       (uint32_t)to));
		}
		wtio_folio_finish_writeback(inode, f);
		if (!error && wtio_folio_test(f, FOLIO_DROPBEHIND))
			wtio_folio_drop_behind(ctx, f);
		wtio_folio_put(ctx, f);
	}
	wtio_cache_wake_space(ctx);
}

ssize_t wtio_atomic_write(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	size_t len = 0, align = inode->geo.dio_mem_align;
	struct wtio_iov_iter it;
	struct wtio_folio **v;
	struct iovec bv;
	char *bounce;
	int nr = 0, ret;
	bool extending;
	ssize_t res;

	/* The shape was checked with the other arguments (api.c). */
	len = wtio_iov_length(iov, iovcnt);
	if (align < 4096)
		align = 4096;
	bounce = aligned_alloc(align, len);
	v = calloc((len >> ctx->folio_shift) + 2, sizeof(*v));
	if (!bounce || !v) {
		free(bounce);
		free(v);
		return -ENOMEM;
	}
	wtio_iter_init(&it, iov, iovcnt);
	wtio_iter_copy(&it, bounce, len, false);

	ret = wtio_rwsem_lock(inode, false, flags & WTIO_NOWAIT);
	if (ret)
		goto out_free;
	/* Write-back data already dirty in the range's folios goes to disk
	 * first: a dirty block only partly covered by the range (blocks can
	 * be larger than the range) must not lose its other bytes, and a
	 * failed atomic write, which sends readers to the disk, must find
	 * the acknowledged data there. Nobody can dirty the range again
	 * while we hold the file lock exclusively. */
	ret = wtio_writeback_range(inode, off, off + (off_t)len, WB_SYNC, 0, 0);
	if (ret) {
		pthread_rwlock_unlock(&inode->i_rwsem);
		goto out_free;
	}
	ret = atomic_copy(file, bounce, off, len, flags, v, &nr);
	extending = !ret && off + (int64_t)len > wtio_inode_size(inode);
	if (extending)
		atomic_store(&inode->i_size, off + (int64_t)len);
	pthread_rwlock_unlock(&inode->i_rwsem);
	if (ret) {
		/* Nothing reached the disk; what was copied is invalidated
		 * so that the range reads back all old. */
		atomic_end(inode, v, nr, off, len, ret);
		goto out_free;
	}

	bv.iov_base = bounce;
	bv.iov_len = len;
	struct wtio_io_req req = {
		.op = WTIO_IO_WRITE, .fd = inode->fd, .off = off,
		.iov = &bv, .iovcnt = 1,
		.rw_flags = RWF_ATOMIC | ((flags & WTIO_DSYNC) ? RWF_DSYNC : 0),
	};
	bool ext = wtio_inode_dio_write_begin(inode, off, (int64_t)len, NULL,
					      NULL);

	res = wtio_io_sync(&ctx->io, &req);
	wtio_inode_dio_write_end(inode, ext, off, res);
	wtio_stat_add(ctx, write_ios, 1);
	/* All or nothing: a short atomic write is not one. */
	ret = res < 0 ? (int)res : ((size_t)res != len ? -EIO : 0);
	if (ret) {
		wtio_inode_record_error(inode, ret);
		wtio_stat_add(ctx, wb_errors, 1);
	} else {
		wtio_stat_add(ctx, bytes_written, len);
		wtio_stat_add(ctx, atomic_writes, 1);
	}
	atomic_end(inode, v, nr, off, len, ret);
	if (!ret && extending && (flags & WTIO_DSYNC))
		ret = wtio_dsync_finish(inode, off + (int64_t)len, false);
out_free:
	free(bounce);
	free(v);
	return ret ? ret : (ssize_t)len;
}
