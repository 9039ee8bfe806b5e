/* SPDX-License-Identifier: MIT */
/*
 * ioend.c - the life of a write I/O built from folios under writeback:
 * building it from their blocks, submitting it, resubmitting the rest of
 * a short write, and completing it (ending the folios' writeback, or on
 * failure giving their blocks back dirty or invalidating them).
 *
 * An ioend is one write I/O over a contiguous file range, built from runs
 * of dirty blocks of consecutive folios (one segment per run), capped at
 * max_io_size. Segments whose memory follows on from the one before share
 * an iovec: a stream written into consecutive slots of the arena goes out
 * as one buffer, which the backend can pass as a registered (fixed) one
 * instead of pinning every page of it. A folio may feed several ioends
 * when its dirty blocks are not contiguous; wb_pending counts them and the
 * last completion ends the folio's writeback.
 *
 * On a striped device the ioends follow stripe.h's rule: whole aligned
 * stripes, or inside one stripe. Runs are cut at stripe boundaries, an
 * ioend that starts inside a stripe ends at its boundary, the size cap is
 * whole stripes, and an ioend that ends inside a stripe after crossing a
 * boundary (the data stopped there) gives that last part an I/O of its
 * own, so the stripes before it go out whole.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ioend.h"
#include "reserve.h"
#include "append_plug.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "dirty.h"
#include "errseq.h"
#include "stats.h"
#include "stripe.h"
#include "test_hooks.h"

struct wtio_ioend {
	struct wtio_io_req io_req;
	struct wtio_wb_ctl *io_wbc;
	struct wtio_inode *io_inode;
	int64_t io_offset;		/* file offset of the first byte */
	uint32_t io_size;		/* bytes */
	uint32_t io_done;		/* bytes completed so far */
	int io_nr_vecs;
	int io_nr_segs;			/* (folio, blocks) runs, >= vecs */
	/* Vectors, segments and bytes before the last stripe boundary
	 * inside the ioend (0: none), where a split keeps the stripes
	 * before whole. No vector crosses such a boundary. */
	int io_stripe_vecs;
	int io_stripe_segs;
	uint32_t io_stripe_bytes;
	bool io_extending;		/* counted by wtio_inode_dio_write_begin */
	struct iovec io_vecs[WTIO_IO_MAX_IOVECS];
	struct iovec io_rest[WTIO_IO_MAX_IOVECS];	/* resubmission */
	/* Per segment: its folio and blocks. */
	struct wtio_folio *io_folios[WTIO_IO_MAX_IOVECS];
	uint64_t io_blocks[WTIO_IO_MAX_IOVECS];
	/* Blocks to give back as dirty if the I/O fails; the rest of
	 * io_blocks (a write-through caller's own data) is invalidated. */
	uint64_t io_redirty[WTIO_IO_MAX_IOVECS];
	struct wtio_ioend *io_next;	/* deferred submission */
};

/* ioends the context keeps for reuse: enough for every flusher's and a
 * few writers' I/Os in flight (a flusher keeps 64). The store is only
 * used when its lock is free: writers of their own I/O (write-through)
 * must not queue on it, and malloc serves them as before. */
#define IOEND_POOL_MAX 128

static struct wtio_ioend *ioend_alloc(struct wtio_ctx *ctx)
{
	struct wtio_ioend *io = NULL;

	if (!pthread_mutex_trylock(&ctx->ioend_lock)) {
		io = ctx->ioend_pool;
		if (io) {
			ctx->ioend_pool = io->io_next;
			ctx->nr_ioend_pool--;
		}
		pthread_mutex_unlock(&ctx->ioend_lock);
	}
	/* malloc, not calloc: the vector arrays are ~14 KiB and only their
	 * first io_nr_vecs entries are read. */
	return io ? io : malloc(sizeof(*io));
}

static void ioend_free(struct wtio_ctx *ctx, struct wtio_ioend *io)
{
	if (!pthread_mutex_trylock(&ctx->ioend_lock)) {
		if (ctx->nr_ioend_pool < IOEND_POOL_MAX) {
			io->io_next = ctx->ioend_pool;
			ctx->ioend_pool = io;
			ctx->nr_ioend_pool++;
			io = NULL;
		}
		pthread_mutex_unlock(&ctx->ioend_lock);
	}
	free(io);
}

void wtio_ioend_pool_init(struct wtio_ctx *ctx)
{
	pthread_mutex_init(&ctx->ioend_lock, NULL);
}

void wtio_ioend_pool_exit(struct wtio_ctx *ctx)
{
	struct wtio_ioend *io;

	while ((io = ctx->ioend_pool)) {
		ctx->ioend_pool = io->io_next;
		free(io);
	}
	ctx->nr_ioend_pool = 0;
	pthread_mutex_destroy(&ctx->ioend_lock);
}

/*
 * A write-through I/O that ran out of space with blocks of its writer in
 * it: the writer gets the error and its write is undone, so fsync has
 * nothing of it to report. The kernel's write-through allocates before
 * its I/O, so a full disk fails that write and never a later fsync (a
 * database treats a failed fsync as fatal, a failed write as an
 * ordinary error). Blocks of earlier writes it carried along (dirty in
 * the same folio) are given back dirty and written again by the next
 * fsync, which reports that write's outcome: recording this error too
 * would fail an fsync that put every acknowledged byte on disk. Their
 * space was reserved when they were written, so it was the writer's
 * blocks that found none; where it was not (no fallocate, a reflink
 * made later), the retry fails the same way and is recorded then. An
 * I/O of write-back alone (every block given back dirty) is recorded.
 */
static bool ioend_space_error_is_writers(const struct wtio_ioend *ioend,
					 int error)
{
	int i;

	if (error != -ENOSPC && error != -EDQUOT)
		return false;
	for (i = 0; i < ioend->io_nr_segs; i++)
		if (ioend->io_blocks[i] & ~ioend->io_redirty[i])
			return true;
	return false;
}

void wtio_write_io_end(struct wtio_inode *inode, bool extending, int64_t off,
		       uint64_t done, uint64_t size, int error, bool record)
{
	struct wtio_ctx *ctx = inode->ctx;

	if (error) {
		if (record)
			wtio_inode_record_error(inode, error);
		wtio_stat_add(ctx, wb_errors, 1);
	} else {
		wtio_stat_add(ctx, bytes_written, size);
	}
	wtio_inode_dio_write_end(inode, extending, off, (ssize_t)done);
}

/*
 * The write of blocks of a folio under writeback failed. While WRITEBACK
 * is set the dirty bits belong to the I/O: the blocks in redirty go back
 * dirty, so the data is never taken for clean (background writeback
 * leaves FOLIO_ERROR folios to fsync, which retries them). The others
 * are a write-through caller's, who is told the write failed: the cache
 * must not go on serving that data as if the disk had it, so readers go
 * to the disk.
 */
static void folio_write_failed(struct wtio_folio *folio, uint64_t blocks,
			       uint64_t redirty)
{
	uint64_t inval = blocks & ~redirty;

	if (redirty) {
		folio->ifs_dirty |= redirty;
		wtio_folio_set_flag(folio, FOLIO_ERROR);
	}
	if (inval) {
		wtio_folio_clear_flag(folio, FOLIO_UPTODATE);
		atomic_fetch_and(&folio->ifs_uptodate, ~inval);
	}
}

static void ioend_finish(struct wtio_ioend *ioend, int error)
{
	struct wtio_inode *inode = ioend->io_inode;
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_wb_ctl *wbc = ioend->io_wbc;
	struct wtio_folio *ended[WTIO_IO_MAX_IOVECS];
	int i, n = 0;

	if (error && wbc) {
		wtio_wbc_set_error(wbc, error);
		/* A short direct write stops at a block boundary: what it
		 * wrote is on disk. */
		wtio_wbc_set_fail_from(wbc, ioend->io_offset + ioend->io_done);
	}
	wtio_write_io_end(inode, ioend->io_extending, ioend->io_offset,
			  ioend->io_done, ioend->io_size, error,
			  !ioend_space_error_is_writers(ioend, error));
	if (error)
		WTIO_TEST_HOOK(WTIO_TP_WB_FAILED, NULL);
	/* The folios whose last I/O this was end their writeback together
	 * (one pass over the list's lock), before any of them is dropped. */
	for (i = ioend->io_nr_segs; i-- > 0;) {
		struct wtio_folio *folio = ioend->io_folios[i];

		if (error)
			folio_write_failed(folio, ioend->io_blocks[i],
					   ioend->io_redirty[i]);
		if (atomic_fetch_sub(&folio->wb_pending, 1) == 1) {
			if (wtio_folio_test(folio, FOLIO_ERROR) &&
			    folio->ifs_dirty)
				wtio_folio_mark_dirty(inode, folio);
			folio->wb_blocks = 0;
			ended[n++] = folio;
		}
	}
	if (error)
		atomic_fetch_add(&inode->redirty_seq, 1);
	wtio_folios_finish_writeback(inode, ended, n);
	/* Dropped only after an I/O that succeeded, and only clean and
	 * idle (wtio_folio_drop_behind): a folio given back dirty by a
	 * failed I/O stays, for fsync to retry and report. */
	for (i = 0; i < n && !error; i++)
		if (wtio_folio_test(ended[i], FOLIO_DROPBEHIND))
			wtio_folio_drop_behind(ctx, ended[i]);
	/* The ones this frees (drop-behind) go on the free list at once
	 * and in file order, so that it hands them out again in the order
	 * of their memory, even to a writer waiting for them: the next
	 * stream's folios are consecutive slots again (one buffer an I/O). */
	wtio_folio_put_many(ctx, ioend->io_folios, ioend->io_nr_segs);
	ioend_free(ctx, ioend);
	if (wbc && atomic_fetch_sub(&wbc->inflight, 1) == 1 && wbc->done)
		wbc->done(wbc);
	wtio_inode_io_put(inode);
	/* Throttled writers are not woken here: they wait for dirty data
	 * to fall, which happens when writeback starts (dirty.c). */
	wtio_cache_wake_space(ctx);
}

/*
 * A direct write refused for space gets one more try, of what it did not
 * write, through the kernel's page cache: ext4 refuses a direct write
 * into blocks a file has past its end (wtio's chunk reserved ahead of
 * appends) when splitting their unwritten extent needs a metadata block
 * and only the reserve it keeps for its own writeback is left, which the
 * kernel's buffered write of the same data gets. Its blocks are taken
 * again first, and after (wtio_reserve_regain: ext4 frees what lies past
 * the end of file when an extending write fails, its own first try
 * included). Only when its own blocks are there: where the space is
 * really gone (or the filesystem cannot allocate ahead) the direct
 * write's error stands, and no window of O_DIRECT off opens for nothing
 * (a write-back error of the second try is reported as such). Never
 * for an untorn write, which the cache may tear.
 */
static ssize_t ioend_write_cached(struct wtio_ioend *ioend, ssize_t err)
{
	struct wtio_inode *inode = ioend->io_inode;
	struct wtio_io_req *req = &ioend->io_req;
	int64_t from = -1, end = ioend->io_offset + ioend->io_size;
	ssize_t got;

	if (req->rw_flags & RWF_ATOMIC)
		return err;
	if (ioend->io_extending && wtio_backing_size(inode->fd, &from) != 0)
		from = -1;
	/* No blocks for it: a write through the cache would fail too,
	 * and, extending the file, have ext4 free the others again. */
	if (wtio_reserve_regain(inode, from,
				ioend->io_offset + ioend->io_done, end))
		return err;
	while (ioend->io_done < ioend->io_size) {
		wtio_io_req_rest(req, ioend->io_offset, ioend->io_vecs,
				 ioend->io_nr_vecs, ioend->io_done,
				 ioend->io_rest);
		got = wtio_io_write_cached(&inode->ctx->io, req->fd, req->iov,
					   req->iovcnt, req->off);
		if (got <= 0) {
			err = got == -EIO ? got : err;
			break;
		}
		ioend->io_done += (uint32_t)got;
	}
	if (from >= 0)
		wtio_reserve_regain(inode, from, 0, 0);
	return ioend->io_done < ioend->io_size ? err : 0;
}

static void ioend_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct wtio_ioend *ioend = (struct wtio_ioend *)req;
	struct wtio_io_backend *be = &ioend->io_inode->ctx->io;

	if (res == -ENOSPC || res == -EDQUOT) {
		ioend_finish(ioend, (int)ioend_write_cached(ioend, res));
		return;
	}
	if (res < 0) {
		ioend_finish(ioend, (int)res);
		return;
	}
	if (res == 0) {
		/* A write that makes no progress will not make any if
		 * repeated: the device is out of space or broken. */
		ioend_finish(ioend, -EIO);
		return;
	}
	ioend->io_done += (uint32_t)res;
	if (ioend->io_done >= ioend->io_size) {
		ioend_finish(ioend, 0);
		return;
	}
	/* Short write: the rest goes again, from this thread, as part of
	 * the same ioend. Block alignment holds because a short direct
	 * write stops at a block boundary; if it did not, the kernel would
	 * reject the resubmission and we report that error. */
	wtio_io_req_rest(req, ioend->io_offset, ioend->io_vecs,
			 ioend->io_nr_vecs, ioend->io_done, ioend->io_rest);
	wtio_stat_add(ioend->io_inode->ctx, write_ios, 1);
	/* Not started (only a malformed request is refused): no end_io. */
	if (wtio_io_resubmit(be, ioend->io_wbc->chan, req) < 0)
		ioend_finish(ioend, -EIO);
}

int wtio_ioend_send(struct wtio_wb_ctl *wbc)
{
	unsigned int i, n = wbc->nr_batched;
	int ret;

	if (!n)
		return 0;
	wbc->nr_batched = 0;
	/* A channel completes what it cannot queue itself, with the error. */
	if (wbc->chan)
		return wtio_io_chan_submit(wbc->chan, wbc->batched, n);
	ret = wtio_io_submit(&wbc->ctx->io, wbc->batched, n);
	if (ret < 0)
		for (i = 0; i < n; i++)
			ioend_finish((struct wtio_ioend *)wbc->batched[i], ret);
	return ret;
}

/* Reap what this thread has in flight, before waiting at the size-change
 * gate (what it holds unsent first: the size change waits for those
 * too). Not "until wbc->inflight is 0": a queue holds a reference of its
 * own there while it submits, which no reap ever drops. */
static void wbc_reap_own(void *arg)
{
	struct wtio_wb_ctl *wbc = arg;
	struct wtio_io_backend *be = &wbc->ctx->io;

	wtio_ioend_send(wbc);
	while (atomic_load(&wbc->inflight) && wtio_io_inflight(be))
		wtio_io_reap(be, 1, NULL);
}

/* A channel's batcher about to wait at the size-change gate: the size
 * change waits for the I/O it holds unsent too. */
static void wbc_send_held(void *arg)
{
	wtio_ioend_send(arg);
}

static int ioend_submit_one(struct wtio_wb_ctl *wbc, struct wtio_ioend *ioend)
{
	struct wtio_io_backend *be = &wbc->ctx->io;
	struct wtio_io_req *r = &ioend->io_req;
	int ret;

	r->op = WTIO_IO_WRITE;
	r->fd = ioend->io_inode->fd;
	r->off = ioend->io_offset;
	r->iov = ioend->io_vecs;
	r->iovcnt = ioend->io_nr_vecs;
	r->rw_flags = wbc->rw_flags;
	r->end_io = ioend_end_io;
	r->private = ioend;
	if (wbc->defer) {
		ioend->io_next = wbc->deferred;
		wbc->deferred = ioend;
		return 0;
	}
	ioend->io_extending = wtio_inode_dio_write_begin(ioend->io_inode,
			ioend->io_offset, ioend->io_size,
			!wbc->chan ? wbc_reap_own :
			wbc->batch > 1 ? wbc_send_held : NULL, wbc);
	atomic_fetch_add(&wbc->inflight, 1);
	wtio_stat_add(wbc->ctx, write_ios, 1);
	if (wbc->chan) {
		/* Completed by the channel's reaper, maybe before this
		 * returns: the ioend is not ours to touch any more. */
		if (wbc->plug && ioend->io_extending &&
		    wbc->ctx->wb_reaper.chan)
			/* Merged appends stop at whole stripes too. */
			wtio_plug_submit(&wbc->ctx->wb_reaper, ioend->io_inode,
					 r, (uint32_t)wtio_stripe_io_cap(
					 wtio_stripe_width(&ioend->io_inode->geo,
						ioend->io_inode->block_size),
					 wbc->ctx->cfg.max_io_size));
		else if (wbc->batch > 1) {
			/* Started writeback of scattered data: its many
			 * small I/Os go in one system call, not one each. */
			wbc->batched[wbc->nr_batched++] = r;
			if (wbc->nr_batched >= wbc->batch)
				wtio_ioend_send(wbc);
		} else {
			wtio_io_chan_submit(wbc->chan, &r, 1);
		}
		return 0;
	}
	if (wbc->batch > 1) {
		/* Held, to go with the next ones in one system call. */
		wbc->batched[wbc->nr_batched++] = r;
		if (wbc->nr_batched < wbc->batch)
			return 0;
		ret = wtio_ioend_send(wbc);
	} else {
		ret = wtio_io_submit(be, &r, 1);
		if (ret < 0) {
			ioend_finish(ioend, ret);
			return ret;
		}
	}
	/* A batching submitter waits for a batch of completions, not for
	 * each: one wake-up per batch rather than per I/O. */
	while (wbc->max_inflight &&
	       atomic_load(&wbc->inflight) >= wbc->max_inflight)
		wtio_io_reap(be, wbc->batch > 1 ? wbc->batch : 1, NULL);
	return ret;
}

/*
 * Move the vectors after the ioend's last stripe boundary to a new ioend,
 * returned; NULL when there is no boundary inside, or no memory (the
 * ioend then stays whole: one partial stripe more, never an error). The
 * folio references and pending counts go with their vectors.
 */
static struct wtio_ioend *ioend_split_stripe(struct wtio_ioend *io)
{
	int k = io->io_stripe_vecs, m = io->io_nr_vecs - k;
	int ks = io->io_stripe_segs, ms = io->io_nr_segs - ks;
	struct wtio_ioend *tail;

	if (k <= 0 || m <= 0 || ks <= 0 || ms <= 0)
		return NULL;
	tail = ioend_alloc(io->io_inode->ctx);
	if (!tail)
		return NULL;
	memset(tail, 0, offsetof(struct wtio_ioend, io_vecs));
	tail->io_wbc = io->io_wbc;
	tail->io_inode = io->io_inode;
	wtio_inode_io_get(io->io_inode);
	tail->io_offset = io->io_offset + io->io_stripe_bytes;
	tail->io_size = io->io_size - io->io_stripe_bytes;
	tail->io_nr_vecs = m;
	tail->io_nr_segs = ms;
	memcpy(tail->io_vecs, io->io_vecs + k, (size_t)m * sizeof(io->io_vecs[0]));
	memcpy(tail->io_folios, io->io_folios + ks,
	       (size_t)ms * sizeof(io->io_folios[0]));
	memcpy(tail->io_blocks, io->io_blocks + ks,
	       (size_t)ms * sizeof(io->io_blocks[0]));
	memcpy(tail->io_redirty, io->io_redirty + ks,
	       (size_t)ms * sizeof(io->io_redirty[0]));
	io->io_nr_vecs = k;
	io->io_nr_segs = ks;
	io->io_size = io->io_stripe_bytes;
	io->io_stripe_vecs = 0;
	io->io_stripe_segs = 0;
	io->io_stripe_bytes = 0;
	return tail;
}

/* Submit an ioend; one that ends inside a stripe after crossing a stripe
 * boundary (the data stopped there) goes as two I/Os, the whole stripes
 * and the part after them. */
int wtio_ioend_submit(struct wtio_wb_ctl *wbc, struct wtio_ioend *ioend)
{
	struct wtio_inode *inode = ioend->io_inode;
	uint64_t sw = wtio_stripe_width(&inode->geo, inode->block_size);
	struct wtio_ioend *tail = NULL;
	int ret, ret2;

	if (sw && ioend->io_stripe_vecs &&
	    (uint64_t)(ioend->io_offset + ioend->io_size) % sw) {
		tail = ioend_split_stripe(ioend);
		if (tail)
			wtio_stat_add(wbc->ctx, stripe_splits, 1);
	}
	ret = ioend_submit_one(wbc, ioend);
	if (!tail)
		return ret;
	ret2 = ioend_submit_one(wbc, tail);
	return ret ? ret : ret2;
}

int64_t wtio_ioend_open_stripe_end(const struct wtio_ioend *ioend)
{
	const struct wtio_inode *inode;
	uint64_t sw;
	int64_t end;

	if (!ioend)
		return -1;
	inode = ioend->io_inode;
	sw = wtio_stripe_width(&inode->geo, inode->block_size);
	end = ioend->io_offset + ioend->io_size;
	return sw && (uint64_t)end % sw ? end : -1;
}

int wtio_ioend_submit_deferred(struct wtio_wb_ctl *wbc)
{
	struct wtio_ioend *list = NULL, *io;
	int ret = 0;

	wbc->defer = false;
	/* The list is newest first: reverse it to submit in file order. */
	while ((io = wbc->deferred)) {
		wbc->deferred = io->io_next;
		io->io_next = list;
		list = io;
	}
	while ((io = list)) {
		list = io->io_next;
		if (wtio_ioend_submit(wbc, io) && !ret)
			ret = -EIO;
	}
	return ret;
}

void wtio_ioend_reap_all(struct wtio_wb_ctl *wbc)
{
	struct wtio_io_backend *be = &wbc->ctx->io;

	wtio_ioend_send(wbc);
	while (atomic_load(&wbc->inflight))
		wtio_io_reap(be, 1, NULL);
}

/* The next len bytes of the ioend are at buf: the last vector goes on
 * when buf follows it in memory, except at a stripe boundary (where a
 * split may have to cut). */
static void ioend_add_vec(struct wtio_ioend *io, char *buf, uint32_t len,
			  bool edge)
{
	struct iovec *v;

	if (io->io_nr_vecs && !edge) {
		v = &io->io_vecs[io->io_nr_vecs - 1];
		if ((char *)v->iov_base + v->iov_len == buf) {
			v->iov_len += len;
			return;
		}
	}
	v = &io->io_vecs[io->io_nr_vecs++];
	v->iov_base = buf;
	v->iov_len = len;
}

/*
 * Where the I/O of the block holding the file's end stops: the end
 * rounded up to the filesystem's block (tail_unit), not to ours. Past it
 * the cache holds zeros, and the disk reads zeros (a hole, or past the
 * backing file's end): a whole block of ours there would allocate blocks
 * the kernel's write-back leaves alone, which a full filesystem refuses,
 * where the write that dirtied the block needed none. Before the size
 * moves past that point, a dirty block whose rest is not known allocated
 * is written back at the old size (wtio_inode_settle_tail), so no later
 * write-back writes it whole into space nobody reserved. INT64_MAX: our
 * block is the filesystem's.
 */
static int64_t ioend_tail_end(struct wtio_inode *inode)
{
	int64_t t = inode->tail_unit;

	if (t >= (int64_t)inode->block_size)
		return INT64_MAX;
	return (wtio_inode_size(inode) + t - 1) & ~(t - 1);
}

/*
 * Add the dirty blocks of a folio now under writeback to the current
 * ioend, starting new ones where the range is not contiguous or full.
 */
void wtio_ioend_add_folio(struct wtio_wb_ctl *wbc, struct wtio_ioend **cur,
			  struct wtio_folio *folio, uint64_t redirty)
{
	struct wtio_inode *inode = wbc->inode;
	struct wtio_ctx *ctx = wbc->ctx;
	uint64_t blocks = folio->wb_blocks;
	int64_t base = (int64_t)atomic_load(&folio->index) << inode->folio_shift;
	uint32_t bs = inode->block_size;
	uint64_t sw = wtio_stripe_width(&inode->geo, bs);
	uint64_t cap = wtio_stripe_io_cap(sw, ctx->cfg.max_io_size);
	int64_t eof_io_end = ioend_tail_end(inode);

	/* One pending count for the whole add, so no ioend completing in
	 * between can end the writeback early. */
	atomic_fetch_add(&folio->wb_pending, 1);
	while (blocks) {
		uint32_t first = (uint32_t)__builtin_ctzll(blocks);
		/* ctz(0) is undefined: a run of all 64 blocks is n = 64. */
		uint32_t n = ~(blocks >> first) ?
			(uint32_t)__builtin_ctzll(~(blocks >> first)) : 64u;
		int64_t off = base + (int64_t)first * bs;
		uint64_t in = sw ? (uint64_t)off % sw : 0;
		bool edge = sw && !in;		/* off is a stripe boundary */
		struct wtio_ioend *io = *cur;
		bool contiguous = io && io->io_offset + io->io_size == off;
		bool head_ends;
		uint64_t run;
		uint32_t len;

		if (first + n > 64)
			n = 64 - first;
		/* A run goes to the next stripe boundary at most, so that an
		 * ioend can end (or be split) at any boundary. */
		if (sw && (uint64_t)n * bs > sw - in)
			n = (uint32_t)((sw - in) / bs);
		run = (n >= 64 ? ~0ull : ((1ull << n) - 1)) << first;
		len = n * bs;
		blocks &= ~run;
		/* The block holding the end stops at the end's tail_unit
		 * (read after the blocks were taken: the size covers all
		 * their data). Nothing follows on from a cut run. */
		if (off < eof_io_end && off + len > eof_io_end)
			len = (uint32_t)(eof_io_end - off);
		if (io && contiguous && io->io_nr_segs == WTIO_IO_MAX_IOVECS) {
			/* Full inside a stripe: the part after its last
			 * boundary goes on in an ioend of its own. */
			struct wtio_ioend *tail = in ? ioend_split_stripe(io) :
						       NULL;

			*cur = tail;
			wtio_ioend_submit(wbc, io);
			io = tail;
			contiguous = tail != NULL;
		}
		/* An ioend that began inside a stripe ends at its boundary. */
		head_ends = contiguous && edge && io->io_offset % (int64_t)sw;
		if (io && (!contiguous || head_ends ||
			   io->io_size + len > cap)) {
			/* Counted where the stripe rule ends an I/O that
			 * would have gone on without it: a head, or whole
			 * stripes at a cap rounded down from max_io_size. */
			if (head_ends ||
			    (contiguous && cap < ctx->cfg.max_io_size))
				wtio_stat_add(ctx, stripe_splits, 1);
			*cur = NULL;
			wtio_ioend_submit(wbc, io);
			io = NULL;
		}
		if (!io) {
			io = ioend_alloc(ctx);
			if (!io) {
				/* Failed as an I/O of them would have: the
				 * blocks to give back stay dirty (marked
				 * failed), a write-through writer's own are
				 * invalidated, since it is told its write
				 * failed and the disk does not have them. */
				folio_write_failed(folio, run, run & redirty);
				wtio_inode_record_error(inode, -ENOMEM);
				wtio_wbc_set_error(wbc, -ENOMEM);
				wtio_wbc_set_fail_from(wbc, off);
				continue;
			}
			memset(io, 0, offsetof(struct wtio_ioend, io_vecs));
			io->io_wbc = wbc;
			io->io_inode = inode;
			wtio_inode_io_get(inode);
			io->io_offset = off;
			*cur = io;
		} else if (edge) {
			io->io_stripe_vecs = io->io_nr_vecs;
			io->io_stripe_segs = io->io_nr_segs;
			io->io_stripe_bytes = io->io_size;
		}
		wtio_folio_get(folio);
		atomic_fetch_add(&folio->wb_pending, 1);
		ioend_add_vec(io, folio->data + first * bs, len, edge);
		io->io_folios[io->io_nr_segs] = folio;
		io->io_blocks[io->io_nr_segs] = run;
		io->io_redirty[io->io_nr_segs] = run & redirty;
		io->io_nr_segs++;
		io->io_size += len;
	}
	if (atomic_fetch_sub(&folio->wb_pending, 1) == 1) {
		/* Nothing could be queued (allocation failure). */
		if (folio->ifs_dirty)
			wtio_folio_mark_dirty(inode, folio);
		atomic_fetch_add(&inode->redirty_seq, 1);
		folio->wb_blocks = 0;
		wtio_folio_finish_writeback(inode, folio);
	}
}
