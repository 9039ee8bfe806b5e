/* SPDX-License-Identifier: MIT */
/*
 * buffered_write.c - the write iterator: for each folio, get it locked,
 * wait until it is stable (not under writeback), read-modify-write the
 * partial blocks, copy, mark dirty; move i_size as data lands.
 */
#include <errno.h>
#include <string.h>

#include "iov_iter.h"
#include "reserve.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "span.h"
#include "inode.h"
#include "size.h"
#include "read.h"
#include "write.h"
#include "dirty.h"
#include "writeback.h"

/*
 * Make the partially written blocks of [from, to) uptodate before the
 * copy: blocks wholly at or past the old size are zeros, the others are
 * read from disk.
 */
int wtio_write_prepare_blocks(struct wtio_inode *inode,
			      struct wtio_folio *folio, uint32_t from,
			      uint32_t to, int64_t isize, bool nowait)
{
	uint32_t bs = inode->block_size;
	int64_t base = (int64_t)atomic_load(&folio->index) <<
		       inode->ctx->folio_shift;
	uint64_t partial = 0, uptodate, zero = 0, read = 0;
	uint64_t b;

	if (from & (bs - 1))
		partial |= 1ull << (from >> inode->block_shift);
	if (to & (bs - 1))
		partial |= 1ull << (to >> inode->block_shift);
	uptodate = atomic_load(&folio->ifs_uptodate);
	partial &= ~uptodate;
	for (b = partial; b; b &= b - 1) {
		uint32_t i = (uint32_t)__builtin_ctzll(b);

		if (base + (int64_t)i * bs >= isize)
			zero |= 1ull << i;
		else
			read |= 1ull << i;
	}
	for (b = zero; b; b &= b - 1) {
		uint32_t i = (uint32_t)__builtin_ctzll(b);

		memset(folio->data + i * bs, 0, bs);
	}
	if (zero)
		wtio_ifs_set_uptodate(inode, folio, zero);
	if (read) {
		if (nowait)
			return -EAGAIN;
		wtio_stat_add(inode->ctx, rmw_reads,
			      (uint64_t)__builtin_popcountll(read));
		return wtio_folio_read_blocks(inode, folio, read);
	}
	return 0;
}

/* undo, if not NULL: for a DSYNC write to undo its extension if it
 * fails (a claimed extension, ended by wtio_inode_tail_end). */
ssize_t wtio_buffered_write_sized(struct wtio_file *file,
				  const struct iovec *iov, int iovcnt,
				  off_t off, unsigned int flags,
				  struct wtio_size_undo *undo)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	bool nowait = flags & WTIO_NOWAIT;
	struct wtio_iov_iter it;
	size_t len = 0, done = 0;
	ssize_t fit;
	int ret = 0;

	len = wtio_iov_length(iov, iovcnt);
	if (!len)
		return 0;
	if (nowait && wtio_nr_dirty_cleanable(ctx) > ctx->dirty_limit_folios)
		return -EAGAIN;
	if (wtio_rwsem_lock(inode, false, nowait))
		return -EAGAIN;
	/* Before looking at i_size (see wtio_inode_tail_note). */
	wtio_inode_tail_note(inode, off + (off_t)len);
	/* Past i_size: first clean what a failed write left there. */
	if (off + (off_t)len > wtio_inode_size(inode)) {
		ret = wtio_inode_prepare_extend(inode, nowait);
		if (ret) {
			pthread_rwlock_unlock(&inode->i_rwsem);
			return ret;
		}
	}
	if (undo) {
		memset(undo, 0, sizeof(*undo));
		undo->before = undo->after = wtio_inode_size(inode);
	}
	/* Space for the dirty data first (reserve.c): a full filesystem
	 * refuses the write here, or takes the part that fits, instead of
	 * failing its write-back later. */
	fit = wtio_reserve_write(inode, off, len, !(flags & WTIO_DSYNC));
	if (fit < 0) {
		pthread_rwlock_unlock(&inode->i_rwsem);
		return fit;
	}
	len = (size_t)fit;
	wtio_iter_init(&it, iov, iovcnt);
	while (done < len) {
		struct wtio_span sp = wtio_span_at(ctx, off, len, done);
		off_t pos = sp.pos;
		uint64_t index = sp.index;
		uint32_t from = sp.from, to = sp.to;
		int64_t isize = wtio_inode_size(inode);
		struct wtio_folio *f;

		ret = wtio_folio_get_stable(inode, index, nowait, &f);
		if (ret)
			break;
		ret = wtio_write_prepare_blocks(inode, f, from, to, isize,
						nowait);
		if (ret)
			goto unlock;
		wtio_iter_copy(&it, f->data + from, to - from, false);
		wtio_folio_mark_dropbehind(f, flags & WTIO_DONTCACHE);
		wtio_ifs_set_uptodate(inode, f, wtio_ifs_mask(inode, from, to));
		f->ifs_dirty |= wtio_ifs_mask(inode, from, to);
		wtio_folio_mark_dirty(inode, f);
		done += to - from;
		if (pos + (to - from) > isize) {
			atomic_store(&inode->i_size, pos + (int64_t)(to - from));
			if (undo)
				undo->after = pos + (int64_t)(to - from);
		}
unlock:
		wtio_folio_unlock(f);
		wtio_folio_put(ctx, f);
		if (ret)
			break;
	}
	if (undo)
		wtio_inode_tail_claim(inode, undo);
	pthread_rwlock_unlock(&inode->i_rwsem);
	if (done && (flags & WTIO_DONTCACHE)) {
		/* Start writeback of the range at once; the folios leave
		 * the cache as their I/O completes. An I/O error stays with
		 * the folios and is reported by fsync. */
		wtio_writeback_range(inode, off, off + (off_t)done, WB_ASYNC,
				     0, 0);
	} else if (done) {
		wtio_balance_dirty(ctx, nowait);
	}
	return done ? (ssize_t)done : ret;
}

ssize_t wtio_buffered_write(struct wtio_file *file, const struct iovec *iov,
			    int iovcnt, off_t off, unsigned int flags)
{
	return wtio_buffered_write_sized(file, iov, iovcnt, off, flags, NULL);
}
