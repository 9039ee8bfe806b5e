/* SPDX-License-Identifier: MIT */
/*
 * atomic_write.c - untorn buffered writes (WTIO_ATOMIC).
 *
 * The range goes to disk as one RWF_ATOMIC direct write from a single
 * contiguous bounce buffer (folios are not contiguous in memory, and most
 * devices allow one segment per atomic write), so no folio boundary,
 * stripe cut or writeback pass can split it.
 *
 * The I/O is issued from the bounce buffer before the cache is touched,
 * with the file lock held exclusive from the flush of the range's dirty
 * data to the update of its cached folios: readers (shared lock) see the
 * range all old before and all new after, and no folio is held for the
 * I/O, so an atomic write of any size the filesystem accepts works in a
 * cache of any size (it once kept every folio of the range under
 * writeback and waited for ever for one more folio than the cache had).
 * A failed I/O has changed nothing: not the cache, not the size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iov_iter.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "span.h"
#include "inode.h"
#include "reserve.h"
#include "size.h"
#include "write.h"
#include "write_iter.h"
#include "ioend.h"
#include "writeback.h"
#include "errseq.h"
#include "stats.h"

/* Rounds of flushing before the range is given up as unsettleable: each
 * round writes what is dirty in it, and nothing can dirty it again while
 * we hold the file lock exclusive, except an I/O already in flight that
 * fails and gives its blocks back (which the next round retries, and
 * reports if it fails again). */
#define ATOMIC_SETTLE_ROUNDS 8

/* Folios not cached are made for the new data only when the range takes
 * at most this fraction of the cache: a larger write would just evict
 * what others cached for folios that CLOCK takes back at once. */
#define ATOMIC_POPULATE_DIV 4

int wtio_atomic_check(struct wtio_inode *inode, off_t off, size_t len)
{
	const struct wtio_geometry *g = &inode->geo;

	/* The device's untorn unit, and a backend that passes RWF_ATOMIC. */
	if (!g->atomic_unit_max ||
	    !wtio_io_can(&inode->ctx->io, WTIO_IO_CAP_ATOMIC))
		return -EOPNOTSUPP;
	/* Nothing to write is 0, as the kernel's write of zero bytes
	 * returns before its untorn checks (support is checked first). */
	if (!len)
		return 0;
	if (len & (len - 1) || len < g->atomic_unit_min ||
	    len > g->atomic_unit_max || off % (off_t)len)
		return -EINVAL;
	return 0;
}

/*
 * Is the range settled for the atomic I/O: no folio of it under
 * writeback, and no dirty block that overlaps it? Such data would reach
 * the disk separately, before or after the atomic I/O, which must be the
 * last word on the range. Waits for writeback in flight (or -EAGAIN with
 * nowait). Returns 1 if settled, 0 if dirty data remains to be written,
 * or a negative errno.
 */
static int atomic_range_settled(struct wtio_inode *inode, off_t off,
				size_t len, bool nowait)
{
	struct wtio_ctx *ctx = inode->ctx;
	size_t done = 0;
	int settled = 1;

	while (done < len) {
		struct wtio_span sp = wtio_span_at(inode, off, len, done);
		struct wtio_folio *f = wtio_folio_lookup(inode, sp.index);

		done += sp.to - sp.from;
		if (!f)
			continue;
		for (;;) {
			if (wtio_folio_test(f, FOLIO_WRITEBACK)) {
				if (nowait) {
					settled = -EAGAIN;
					break;
				}
				wtio_folio_wait_writeback(f);
			}
			if (nowait) {
				if (!wtio_folio_trylock(f)) {
					settled = -EAGAIN;
					break;
				}
			} else {
				wtio_folio_lock(f);
			}
			/* ifs_dirty belongs to the I/O while WRITEBACK is
			 * set: look only when it is not. */
			if (!wtio_folio_test(f, FOLIO_WRITEBACK))
				break;
			wtio_folio_unlock(f);
		}
		if (settled < 0) {
			wtio_folio_put(ctx, f);
			return settled;
		}
		if (atomic_load(&f->inode) == inode &&
		    wtio_folio_test(f, FOLIO_DIRTY) &&
		    (f->ifs_dirty & wtio_ifs_mask(inode, sp.from, sp.to)))
			settled = 0;
		wtio_folio_unlock(f);
		wtio_folio_put(ctx, f);
		if (!settled && nowait)
			return -EAGAIN;
	}
	return settled;
}

/*
 * Write-back data already dirty in the range goes to disk first: a dirty
 * block only partly covered by the range (blocks can be larger than the
 * range) must not lose its other bytes, and a block the range covers must
 * not be written over the atomic data later. With nowait, -EAGAIN instead
 * of any flush or wait. File lock held exclusive.
 */
static int atomic_settle(struct wtio_inode *inode, off_t off, size_t len,
			 bool nowait)
{
	int round, ret;

	for (round = 0; round < ATOMIC_SETTLE_ROUNDS; round++) {
		ret = atomic_range_settled(inode, off, len, nowait);
		if (ret)
			return ret < 0 ? ret : 0;
		ret = wtio_writeback_range(inode, off, off + (off_t)len,
					   WB_SYNC, 0, 0);
		if (ret)
			return ret;
	}
	return -EIO;
}

ssize_t wtio_atomic_write(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	size_t len = 0, align = inode->geo.dio_mem_align;
	bool nowait = flags & WTIO_NOWAIT;
	struct wtio_iov_iter it;
	struct wtio_write w;
	struct iovec bv;
	bool ext;
	char *bounce;
	ssize_t res;
	uint64_t mark;
	int ret;

	/* The shape was checked with the other arguments (api.c). */
	len = wtio_iov_length(iov, iovcnt);
	if (align < 4096)
		align = 4096;
	bounce = aligned_alloc(align, len);
	if (!bounce)
		return -ENOMEM;
	wtio_iter_init(&it, iov, iovcnt);
	wtio_iter_copy(&it, bounce, len, false);

	wtio_write_init(&w, inode, off, len, flags, WTIO_WRITE_CLEAN);
	/* A DSYNC write that fails its size step undoes its extension. */
	w.claim = flags & WTIO_DSYNC;
	/* Cached folios are filled with the new data; new ones are made
	 * only for a range small against the cache, and never for
	 * WTIO_DONTCACHE, which drops what it updated. */
	w.populate = !(flags & WTIO_DONTCACHE) &&
		(len >> ctx->folio_shift) <= ctx->nr_folios / ATOMIC_POPULATE_DIV;
	/* Exclusive: see the top of the file. */
	ret = wtio_write_lock(&w, false);
	if (ret)
		goto out_free;
	ret = atomic_settle(inode, off, len, nowait);
	if (ret)
		goto out_unlock;

	/* The file lock stays held across the I/O: readers must not mix
	 * cached old folios with folios read from a disk that may already
	 * hold the new data. Every change of the backing file's size is
	 * made under the file lock, so the size-change gate is down and
	 * this cannot wait at it. */
	bv.iov_base = bounce;
	bv.iov_len = len;
	struct wtio_io_req req = {
		.op = WTIO_IO_WRITE, .fd = inode->fd, .off = off,
		.iov = &bv, .iovcnt = 1,
		.rw_flags = RWF_ATOMIC | ((flags & WTIO_DSYNC) ? RWF_DSYNC : 0),
	};
	ext = wtio_inode_dio_write_begin(inode, off, (int64_t)len, NULL, NULL);
	do {
		mark = wtio_io_direct_mark(&ctx->io);
		res = wtio_io_sync(&ctx->io, &req);
		wtio_stat_add(ctx, write_ios, 1);
	} while ((res == -EOPNOTSUPP || res == -EINVAL) &&
		 wtio_io_direct_was_off(&ctx->io, mark));
	/* All or nothing: a short atomic write is not one. */
	ret = res < 0 ? (int)res : ((size_t)res != len ? -EIO : 0);
	/* A failure is recorded for fsync, as a failed write-through
	 * write is, but for a space error: the disk refused the blocks
	 * before writing any (all or nothing), the write reports it, and
	 * no acknowledged byte is missing for fsync to report (the
	 * kernel's fsync after a refused RWF_ATOMIC write returns 0; a
	 * write-through write's space error is not recorded either,
	 * ioend_end.c). */
	/* ext4 frees every block past the end when an extending write
	 * fails: those reserved for data accepted before are taken back
	 * (the backing file's size is as it was: the write failed). */
	if (ext && (ret == -ENOSPC || ret == -EDQUOT)) {
		int64_t from;

		if (wtio_backing_size(inode->fd, &from) == 0)
			wtio_reserve_regain(inode, from, 0, 0);
	}
	wtio_write_io_end(inode, ext, off, res > 0 ? (uint64_t)res : 0, len,
			  ret, ret != -ENOSPC && ret != -EDQUOT);
	/* Nothing changed on failure: the cache and i_size are as they
	 * were, and the disk (RWF_ATOMIC) holds the old data. */
	if (ret)
		goto out_unlock;
	wtio_stat_add(ctx, atomic_writes, 1);
	/*
	 * The disk has the new data: bring the cached folios of the range
	 * up to it (and the size, which moves only now), under their locks
	 * and still under the exclusive file lock, so that no reader sees
	 * a mix. A folio that is not updated would only ever be read from
	 * the disk, which is right too.
	 */
	wtio_iter_init(&it, &bv, 1);
	wtio_write_iter(&w, &it);
	wtio_write_unlock(&w);
	if (w.extended && (flags & WTIO_DSYNC)) {
		ret = wtio_dsync_finish(inode, off + (int64_t)len, false);
		/* The write fails: as any failed write, it leaves the size
		 * where it was (the cache past it is cut). */
		if (ret)
			wtio_inode_record_error(inode, ret);
	}
	wtio_write_finish(&w, ret);
	goto out_free;

out_unlock:
	wtio_write_unlock(&w);
out_free:
	free(bounce);
	return ret ? ret : (ssize_t)len;
}
