/* SPDX-License-Identifier: MIT */
/*
 * ioend_submit.c - handing built ioends to the backend: one at a time, in
 * batches of one system call, through a channel or the append plug;
 * split at the last stripe boundary when the data stops inside a stripe;
 * waiting for them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ioend_priv.h"
#include "append_plug.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "stats.h"
#include "stripe.h"

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
			wtio_ioend_finish((struct wtio_ioend *)wbc->batched[i], ret);
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
	r->end_io = wtio_ioend_end_io;
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
			wtio_ioend_finish(ioend, ret);
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
struct wtio_ioend *wtio_ioend_split_stripe(struct wtio_ioend *io)
{
	int k = io->io_stripe_vecs, m = io->io_nr_vecs - k;
	int ks = io->io_stripe_segs, ms = io->io_nr_segs - ks;
	struct wtio_ioend *tail;

	if (k <= 0 || m <= 0 || ks <= 0 || ms <= 0)
		return NULL;
	tail = wtio_ioend_alloc(io->io_inode->ctx);
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
		tail = wtio_ioend_split_stripe(ioend);
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
