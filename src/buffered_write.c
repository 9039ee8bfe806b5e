/* SPDX-License-Identifier: MIT */
/*
 * buffered_write.c - the write-back write: reserve space for the data,
 * copy it into dirty folios (write_iter.c), then throttle the writer, or
 * with WTIO_DSYNC write the range and make it durable before returning;
 * with WTIO_DONTCACHE start its writeback at once, the folios leaving
 * the cache as their I/O completes.
 */
#include <errno.h>

#include "iov_iter.h"
#include "reserve.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "write.h"
#include "write_iter.h"
#include "dirty.h"
#include "writeback.h"
#include "stats.h"
#include "sync.h"
#include "ioend.h"
#include "dontcache_stream.h"
#include "rlimit_fsize.h"

/* Folios a throttled writer writes back of its own file per pass, and
 * the passes before it sleeps. */
#define WRITER_CLEAN_FOLIOS 256
#define WRITER_CLEAN_PASSES 16

/*
 * Over the dirty limit, the writer first writes back its own file's
 * dirty data from its own thread, then sleeps as the throttle says if
 * dirty data is still over the limit. One flusher's submissions and
 * completions are a chain with little in flight; writers that would
 * otherwise sleep add submitters (the reference thread's "N submitters
 * instead of one flusher"), each pass a batch of the writer's file in
 * file order, its I/O reaped before the write returns. Not for NOWAIT
 * (it would block) nor adaptive writers (they write through instead).
 */
static void write_balance(struct wtio_inode *inode, bool nowait)
{
	struct wtio_ctx *ctx = inode->ctx;
	bool over = !nowait && wtio_dirty_would_throttle(ctx);
	int pass;

	/* Throttled, whether it writes back or sleeps: counted once. */
	if (over)
		wtio_stat_add(ctx, throttle_waits, 1);
	for (pass = 0; over && pass < WRITER_CLEAN_PASSES &&
	     wtio_dirty_would_throttle(ctx); pass++)
		wtio_writeback_range(inode, 0, -1, WB_BACKGROUND,
				     WRITER_CLEAN_FOLIOS, 0);
	wtio_balance_dirty(ctx, nowait, over);
}

/* WTIO_DSYNC: write the range, wait for it, then make it durable. seq:
 * the inode's err_seq before the write, to catch a flusher's error. */
static int write_dsync_range(struct wtio_inode *inode, off_t off, size_t len,
			     uint64_t seq)
{
	int err = wtio_make_durable(inode, off, off + (off_t)len,
				    WTIO_DURABLE_FLUSH | WTIO_DURABLE_DATA |
				    WTIO_DURABLE_STOP);

	/* A flusher may have hit an error on this range meanwhile. */
	if (!err && atomic_load(&inode->err_seq) != seq)
		err = atomic_load(&inode->err_last);
	return err;
}

/*
 * The copy of a write-back write, w set up: the file lock, space for the
 * data first (reserve.c: a full filesystem refuses the write here, or
 * takes the part that fits, instead of failing its write-back later),
 * the copy, the unlock. Returns 0 or the error that stopped it (w->done
 * says how far it got).
 */
static int write_copy(struct wtio_write *w, const struct iovec *iov,
		      int iovcnt, bool sparse)
{
	struct wtio_iov_iter it;
	ssize_t fit;
	int ret;

	ret = wtio_write_lock(w, false);
	if (ret)
		return ret;
	fit = wtio_reserve_write(w->inode, w->off, w->len, sparse);
	ret = wtio_write_room_again(w, fit);
	if (ret < 0)
		return ret;
	if (ret)
		fit = wtio_reserve_write(w->inode, w->off, w->len, sparse);
	if (fit < 0) {
		wtio_write_unlock(w);
		return (int)fit;
	}
	w->len = (size_t)fit;
	wtio_iter_init(&it, iov, iovcnt);
	ret = wtio_write_iter(w, &it);
	wtio_write_unlock(w);
	return ret;
}

/*
 * WTIO_DONTCACHE (not DSYNC, not NOWAIT) where the context has a channel
 * for started writeback: the kernel marks the folios dirty and starts
 * their writeback at once; here the copy puts them under writeback
 * directly (write-through's write end) and their I/O goes to the
 * channel after the file lock is dropped, not waited for: its
 * completion drops them. That skips the dirty list and the writeback
 * pass over it (a lock taken each way for every folio). A failed I/O
 * gives its blocks back dirty (keep_failed) and records the error for
 * fsync, as any write-back does. Returns bytes copied or -errno.
 */
static ssize_t dontcache_write(struct wtio_inode *inode,
			       struct wtio_wb_ctl *wbc, const struct iovec *iov,
			       int iovcnt, off_t off, size_t len,
			       unsigned int flags)
{
	struct wtio_write w;
	int ret;

	wtio_write_init(&w, inode, off, len, flags, WTIO_WRITE_THROUGH);
	w.wbc = wbc;
	w.keep_failed = true;
	/* Submitted once the file lock is dropped: an extending I/O may
	 * wait at the size-change gate, whose holder may want the lock. */
	wbc->defer = true;
	ret = write_copy(&w, iov, iovcnt, true);
	wtio_ioend_submit_deferred(wbc);
	/* What write-back's unlock does: its I/O is the channel's. */
	wtio_inode_cut_pending(inode);
	return w.done ? (ssize_t)w.done : ret;
}

static ssize_t buffered_write(struct wtio_file *file, const struct iovec *iov,
			      int iovcnt, off_t off, unsigned int flags)
{
	struct wtio_write w;
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	bool nowait = flags & WTIO_NOWAIT;
	bool dsync = flags & WTIO_DSYNC;
	bool stream = false;
	uint64_t seq = dsync ? atomic_load(&inode->err_seq) : 0;
	size_t len;
	ssize_t fit;
	int ret;

	len = wtio_iov_length(iov, iovcnt);
	if (!len)
		return 0;
	if ((flags & WTIO_DONTCACHE) && !dsync && !nowait)
		stream = wtio_dc_stream_joins(file, off, len);
	/* Not from a NOWAIT write: starting writeback may wait (a full
	 * ring, the size-change gate). What waits stays dirty meanwhile. */
	if (!stream && !nowait && atomic_load_explicit(&file->dc_next,
						       memory_order_relaxed) >= 0)
		wtio_dc_stream_end(file, -1);
	if ((flags & WTIO_DONTCACHE) && !dsync && !nowait && !stream) {
		struct wtio_wb_ctl *wbc = wtio_wb_async_begin(inode);

		if (wbc) {
			fit = dontcache_write(inode, wbc, iov, iovcnt, off,
					      len, flags);
			wtio_wb_async_end(wbc);
			if (fit > 0)
				wtio_dc_stream_end(file, off + fit);
			return fit;
		}
	}
	if (nowait && wtio_nr_dirty_cleanable(ctx) > ctx->dirty_limit_folios)
		return -EAGAIN;
	wtio_write_init(&w, inode, off, len, flags, WTIO_WRITE_DIRTY);
	/* A DSYNC write that fails undoes its extension. */
	w.claim = dsync;
	ret = write_copy(&w, iov, iovcnt, !dsync);
	if (!w.done)
		return ret;
	if (stream) {
		/* Written dirty, drop-behind: its writeback starts with the
		 * stream's next whole unit, or when the stream ends. */
		wtio_dc_stream_advance(file, off, w.done);
		wtio_balance_dirty(ctx, flags & WTIO_ADAPTIVE, false);
	} else if (flags & WTIO_DONTCACHE) {
		/* Start writeback of the range at once; the folios leave
		 * the cache as their I/O completes. An I/O error stays with
		 * the folios and is reported by fsync. */
		wtio_writeback_range(inode, off, off + (off_t)w.done, WB_ASYNC,
				     0, 0);
		if (!dsync && !nowait)
			wtio_dc_stream_end(file, off + (off_t)w.done);
	} else {
		/* An adaptive writer never sleeps here: if it would, its
		 * next write goes write-through (wtio_write_adapt). */
		write_balance(inode, nowait || (flags & WTIO_ADAPTIVE));
	}
	if (!dsync)
		return (ssize_t)w.done;
	ret = write_dsync_range(inode, off, w.done, seq);
	/* Failed: the size goes back to where it was, and the blocks this
	 * write added past it go (the cut cancels their dirty state); data
	 * it overwrote inside the old size stays dirty, to be retried. */
	wtio_write_finish(&w, ret);
	return ret ? ret : (ssize_t)w.done;
}

/* A DONTCACHE write starts the write-back of earlier writes' data in
 * this thread too (its folios, a stream's unit): past RLIMIT_FSIZE that
 * fails with EFBIG for fsync, without SIGXFSZ (rlimit_fsize.h). */
ssize_t wtio_buffered_write(struct wtio_file *file, const struct iovec *iov,
			    int iovcnt, off_t off, unsigned int flags)
{
	struct wtio_xfsz_hold xfsz;
	ssize_t ret;

	if (!(flags & WTIO_DONTCACHE))
		return buffered_write(file, iov, iovcnt, off, flags);
	wtio_xfsz_hold(&xfsz);
	ret = buffered_write(file, iov, iovcnt, off, flags);
	wtio_xfsz_release(&xfsz);
	return ret;
}
