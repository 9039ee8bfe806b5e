/* SPDX-License-Identifier: MIT */
/*
 * writeback.c - dirty accounting, throttling, the flusher threads, ioend
 * building and completion, fsync and sync_file_range.
 *
 * An ioend is one write I/O over a contiguous file range, built from runs
 * of dirty blocks of consecutive folios (one iovec per run), capped at
 * max_io_size. A folio may feed several ioends when its dirty blocks are
 * not contiguous; wb_pending counts them and the last completion ends the
 * folio's writeback.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writeback.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "clock.h"
#include "inode.h"
#include "size.h"
#include "dirty.h"
#include "flush.h"
#include "ioend.h"
#include "sync.h"

/* Folios looked at per pass over an inode's dirty list: an array on the
 * stack, so that fsync and close cannot fail (or, worse, succeed without
 * writing) for want of memory. 256 folios of 4 KiB fill one 1 MiB I/O. */
#define WB_BATCH 256
/* Folios under writeback waited for per pass (on the stack too). */
#define WB_WAIT_BATCH 64
/* ioends one writeback call keeps in flight. */
#define WB_DEPTH 8

struct wtio_ioend {
	struct wtio_io_req io_req;
	struct wtio_wb_ctl *io_wbc;
	struct wtio_inode *io_inode;
	int64_t io_offset;		/* file offset of the first byte */
	uint32_t io_size;		/* bytes */
	uint32_t io_done;		/* bytes completed so far */
	int io_nr_vecs;
	bool io_extending;		/* counted by wtio_inode_dio_write_begin */
	struct iovec io_vecs[WTIO_IO_MAX_IOVECS];
	struct iovec io_rest[WTIO_IO_MAX_IOVECS];	/* resubmission */
	struct wtio_folio *io_folios[WTIO_IO_MAX_IOVECS];
	uint64_t io_blocks[WTIO_IO_MAX_IOVECS];
	/* Blocks to give back as dirty if the I/O fails; the rest of
	 * io_blocks (a write-through caller's own data) is invalidated. */
	uint64_t io_redirty[WTIO_IO_MAX_IOVECS];
	struct wtio_ioend *io_next;	/* deferred submission */
};

static void wb_queue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	/* wb_lock held */
	if (inode->wb_queued || inode->wb_busy)
		return;
	inode->wb_queued = true;
	atomic_store(&inode->wb_queued_hint, true);
	inode->wb_next = NULL;
	if (ctx->wb_dirty_tail)
		ctx->wb_dirty_tail->wb_next = inode;
	else
		ctx->wb_dirty_head = inode;
	ctx->wb_dirty_tail = inode;
	/* A kick that found nothing to write is still owed. */
	if (ctx->wb_kicks)
		pthread_cond_broadcast(&ctx->wb_cond);
}

static void wb_unqueue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	struct wtio_inode **pp = &ctx->wb_dirty_head, *prev = NULL;

	/* wb_lock held */
	if (!inode->wb_queued)
		return;
	while (*pp && *pp != inode) {
		prev = *pp;
		pp = &(*pp)->wb_next;
	}
	if (*pp) {
		*pp = inode->wb_next;
		if (ctx->wb_dirty_tail == inode)
			ctx->wb_dirty_tail = prev;
	}
	inode->wb_queued = false;
	atomic_store(&inode->wb_queued_hint, false);
	inode->wb_next = NULL;
}

void wtio_folio_mark_dirty(struct wtio_inode *inode, struct wtio_folio *folio)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint32_t old = atomic_fetch_or(&folio->state, FOLIO_DIRTY);

	if (old & FOLIO_DIRTY)
		return;
	pthread_mutex_lock(&inode->dirty_lock);
	folio->dirtied_ns = wtio_now_ns();
	folio->d_next = NULL;
	folio->d_prev = inode->dirty_tail;
	if (inode->dirty_tail)
		inode->dirty_tail->d_next = folio;
	else
		inode->dirty_head = folio;
	inode->dirty_tail = folio;
	inode->nr_dirty++;
	pthread_mutex_unlock(&inode->dirty_lock);
	atomic_fetch_add(&ctx->nr_dirty, 1);
	/* Its last write failed: only fsync retries it (see ioend_finish),
	 * so it counts apart from the data the flushers can clean. */
	if (old & FOLIO_ERROR)
		atomic_fetch_add(&ctx->nr_dirty_error, 1);

	/* Queued already: a flusher will find this folio on the list. One
	 * that took the inode off the queue re-checks nr_dirty after its
	 * pass, so a stale "queued" costs nothing. */
	if (atomic_load_explicit(&inode->wb_queued_hint, memory_order_acquire))
		return;
	pthread_mutex_lock(&ctx->wb_lock);
	wb_queue_inode(ctx, inode);
	pthread_mutex_unlock(&ctx->wb_lock);
}

/* Take the folio off its inode's dirty list; dirty_lock held. */
static void dirty_list_del(struct wtio_inode *inode, struct wtio_folio *folio)
{
	if (folio->d_prev)
		folio->d_prev->d_next = folio->d_next;
	else
		inode->dirty_head = folio->d_next;
	if (folio->d_next)
		folio->d_next->d_prev = folio->d_prev;
	else
		inode->dirty_tail = folio->d_prev;
	folio->d_prev = folio->d_next = NULL;
	inode->nr_dirty--;
}

/* Clear DIRTY (and ERROR) and take the folio off the dirty list and the
 * counts. Returns whether it was dirty. */
static bool folio_clear_dirty(struct wtio_inode *inode,
			      struct wtio_folio *folio)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint32_t old = atomic_fetch_and(&folio->state,
					~(FOLIO_DIRTY | FOLIO_ERROR));

	if (!(old & FOLIO_DIRTY))
		return false;
	pthread_mutex_lock(&inode->dirty_lock);
	dirty_list_del(inode, folio);
	pthread_mutex_unlock(&inode->dirty_lock);
	atomic_fetch_sub(&ctx->nr_dirty, 1);
	if (old & FOLIO_ERROR)
		atomic_fetch_sub(&ctx->nr_dirty_error, 1);
	return true;
}

void wtio_folio_cancel_dirty(struct wtio_inode *inode,
			     struct wtio_folio *folio)
{
	folio->ifs_dirty = 0;
	folio_clear_dirty(inode, folio);
}

/*
 * The cache is full, nothing is under writeback and the only dirty
 * folios are those whose write-back failed (FOLIO_ERROR), which only
 * fsync retries: nothing else would ever free a folio, and a read of
 * another file would fail for an error not its own. Give that data up
 * as Linux does at once (its pages go clean, the error stays recorded):
 * the error is in the inode's errseq already, so every handle's next
 * fsync or close still reports it. While the cache has room the data
 * stays dirty and fsync retries it. Returns the folios dropped.
 */
uint64_t wtio_writeback_drop_failed(struct wtio_ctx *ctx)
{
	struct wtio_folio *v[64];
	struct wtio_inode *inode;
	uint64_t dropped = 0;

	pthread_mutex_lock(&ctx->inodes_lock);
	for (inode = ctx->inodes; inode; inode = inode->next) {
		struct wtio_folio *f;
		int n = 0, i;

		pthread_mutex_lock(&inode->dirty_lock);
		for (f = inode->dirty_head; f && n < 64; f = f->d_next) {
			if (!wtio_folio_test(f, FOLIO_ERROR))
				continue;
			wtio_folio_get(f);
			v[n++] = f;
		}
		pthread_mutex_unlock(&inode->dirty_lock);
		for (i = 0; i < n; i++) {
			f = v[i];
			/* Only a trylock: the caller may hold a folio lock
			 * and file locks of its own. */
			if (wtio_folio_trylock(f)) {
				uint32_t s = wtio_folio_flags(f);

				if (atomic_load(&f->inode) == inode &&
				    (s & FOLIO_ERROR) && (s & FOLIO_DIRTY) &&
				    !(s & FOLIO_WRITEBACK)) {
					wtio_folio_cancel_dirty(inode, f);
					/* Readers go to the disk now. */
					wtio_folio_clear_flag(f, FOLIO_UPTODATE);
					atomic_store(&f->ifs_uptodate, 0);
					wtio_folio_remove(f);
					dropped++;
				}
				wtio_folio_unlock(f);
			}
			wtio_folio_put(ctx, f);
		}
	}
	pthread_mutex_unlock(&ctx->inodes_lock);
	return dropped;
}

void wtio_writeback_kick(struct wtio_ctx *ctx)
{
	/* Writers above the background threshold kick on every write: one
	 * kick until a flusher takes it is enough. */
	if (atomic_exchange(&ctx->wb_kick_pending, true))
		return;
	pthread_mutex_lock(&ctx->wb_lock);
	ctx->wb_kicks++;
	pthread_cond_broadcast(&ctx->wb_cond);
	pthread_mutex_unlock(&ctx->wb_lock);
}

static void timespec_in(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int wtio_balance_dirty(struct wtio_ctx *ctx, bool nowait)
{
	int64_t dirty = wtio_nr_dirty_cleanable(ctx);
	int64_t target = (ctx->dirty_background_folios +
			  ctx->dirty_limit_folios) / 2;
	int64_t last = INT64_MAX;
	int idle = 0;

	if (dirty <= ctx->dirty_background_folios)
		return 0;
	wtio_writeback_kick(ctx);
	if (dirty <= ctx->dirty_limit_folios)
		return 0;
	if (nowait)
		return -EAGAIN;
	wtio_stat_add(ctx, throttle_waits, 1);
	/* Sleep until writeback brings dirty data back to halfway between
	 * the two thresholds, as balance_dirty_pages does; the timed wait
	 * only guards against a missed wake-up. */
	pthread_mutex_lock(&ctx->wb_lock);
	while (!ctx->wb_stop &&
	       (dirty = wtio_nr_dirty_cleanable(ctx)) > target) {
		struct timespec ts;

		/* Dirty data the flushers leave alone (its last write
		 * failed; fsync retries it) never drains: stop waiting
		 * when nothing is being written and nothing shrinks. */
		if (!atomic_load(&ctx->nr_writeback) && dirty >= last) {
			if (++idle > 4)
				break;
		} else {
			idle = 0;
		}
		last = dirty;
		ctx->wb_kicks++;
		pthread_cond_broadcast(&ctx->wb_cond);
		timespec_in(&ts, 50);
		pthread_cond_timedwait(&ctx->throttle_cond, &ctx->wb_lock, &ts);
	}
	pthread_mutex_unlock(&ctx->wb_lock);
	return 0;
}

/* ---- ioend completion ---- */

/*
 * A write-through I/O that ran out of space, carrying only its writer's
 * blocks (none given back dirty): the writer gets the error and its
 * write is undone, so fsync has nothing of it to report. The kernel's
 * write-through allocates before its I/O, so a full disk fails that
 * write and never a later fsync (a database treats a failed fsync as
 * fatal, a failed write as an ordinary error).
 */
static bool ioend_space_error_is_writers(const struct wtio_ioend *ioend,
					 int error)
{
	int i;

	if (error != -ENOSPC && error != -EDQUOT)
		return false;
	for (i = 0; i < ioend->io_nr_vecs; i++)
		if (ioend->io_redirty[i])
			return false;
	return true;
}

static void ioend_finish(struct wtio_ioend *ioend, int error)
{
	struct wtio_inode *inode = ioend->io_inode;
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_wb_ctl *wbc = ioend->io_wbc;
	int i;

	if (error) {
		if (!ioend_space_error_is_writers(ioend, error))
			wtio_inode_record_error(inode, error);
		wtio_stat_add(ctx, wb_errors, 1);
		if (wbc)
			wtio_wbc_set_error(wbc, error);
	} else {
		wtio_stat_add(ctx, bytes_written, ioend->io_size);
	}
	wtio_inode_dio_write_end(inode, ioend->io_extending, ioend->io_offset,
				 (ssize_t)ioend->io_done);
	for (i = 0; i < ioend->io_nr_vecs; i++) {
		struct wtio_folio *folio = ioend->io_folios[i];

		/* While WRITEBACK is set the dirty bits belong to us: give
		 * the failed blocks back, so the data is never taken for
		 * clean. Background writeback leaves FOLIO_ERROR folios to
		 * fsync, which retries them. */
		if (error) {
			uint64_t inval = ioend->io_blocks[i] &
					 ~ioend->io_redirty[i];

			if (ioend->io_redirty[i]) {
				folio->ifs_dirty |= ioend->io_redirty[i];
				wtio_folio_set_flag(folio, FOLIO_ERROR);
			}
			/* A write-through caller is told its write failed:
			 * the cache must not go on serving that data as if
			 * the disk had it. Readers go to the disk. */
			if (inval) {
				wtio_folio_clear_flag(folio, FOLIO_UPTODATE);
				atomic_fetch_and(&folio->ifs_uptodate, ~inval);
			}
		}
		if (atomic_fetch_sub(&folio->wb_pending, 1) == 1) {
			if (wtio_folio_test(folio, FOLIO_ERROR) &&
			    folio->ifs_dirty)
				wtio_folio_mark_dirty(inode, folio);
			folio->wb_blocks = 0;
			wtio_folio_finish_writeback(inode, folio);
			if (!error && wtio_folio_test(folio, FOLIO_DROPBEHIND))
				wtio_folio_drop_behind(ctx, folio);
		}
		wtio_folio_put(ctx, folio);
	}
	free(ioend);
	if (wbc && atomic_fetch_sub(&wbc->inflight, 1) == 1 && wbc->done)
		wbc->done(wbc);
	wtio_inode_io_put(inode);
	wtio_cache_wake_space(ctx);
	pthread_mutex_lock(&ctx->wb_lock);
	pthread_cond_broadcast(&ctx->throttle_cond);
	pthread_mutex_unlock(&ctx->wb_lock);
}

static void ioend_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct wtio_ioend *ioend = (struct wtio_ioend *)req;
	struct wtio_io_backend *be = &ioend->io_inode->ctx->io;

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

/* Reap what this thread has in flight, before waiting at the size-change
 * gate. Not "until wbc->inflight is 0": a queue holds a reference of its
 * own there while it submits, which no reap ever drops. */
static void wbc_reap_own(void *arg)
{
	struct wtio_wb_ctl *wbc = arg;
	struct wtio_io_backend *be = &wbc->ctx->io;

	while (atomic_load(&wbc->inflight) && wtio_io_inflight(be))
		wtio_io_reap(be, 1, NULL);
}

int wtio_ioend_submit(struct wtio_wb_ctl *wbc, struct wtio_ioend *ioend)
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
			wbc->chan ? NULL : wbc_reap_own, wbc);
	atomic_fetch_add(&wbc->inflight, 1);
	wtio_stat_add(wbc->ctx, write_ios, 1);
	if (wbc->chan) {
		/* Completed by the channel's reaper, maybe before this
		 * returns: the ioend is not ours to touch any more. */
		wtio_io_chan_submit(wbc->chan, &r, 1);
		return 0;
	}
	ret = wtio_io_submit(be, &r, 1);
	if (ret < 0) {
		ioend_finish(ioend, ret);
		return ret;
	}
	while (wbc->max_inflight &&
	       atomic_load(&wbc->inflight) >= wbc->max_inflight)
		wtio_io_reap(be, 1, NULL);
	return 0;
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

	while (atomic_load(&wbc->inflight))
		wtio_io_reap(be, 1, NULL);
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
	int64_t base = (int64_t)atomic_load(&folio->index) << ctx->folio_shift;
	uint32_t bs = inode->block_size;

	/* One pending count for the whole add, so no ioend completing in
	 * between can end the writeback early. */
	atomic_fetch_add(&folio->wb_pending, 1);
	while (blocks) {
		uint32_t first = (uint32_t)__builtin_ctzll(blocks);
		/* ctz(0) is undefined: a run of all 64 blocks is n = 64. */
		uint32_t n = ~(blocks >> first) ?
			(uint32_t)__builtin_ctzll(~(blocks >> first)) : 64u;
		int64_t off = base + (int64_t)first * bs;
		uint32_t su = inode->geo.stripe_unit;
		struct wtio_ioend *io = *cur;
		bool contiguous = io && io->io_offset + io->io_size == off;
		uint64_t run;
		uint32_t len;

		if (first + n > 64)
			n = 64 - first;
		/* No I/O crosses a stripe unit boundary: cut the run there,
		 * and end the ioend at one. */
		if (su && (uint64_t)(off % su) + (uint64_t)n * bs > su) {
			n = (uint32_t)((su - (uint64_t)(off % su)) / bs);
		}
		/* Counted where an I/O would have gone on but for the cut. */
		if (su && contiguous && off % su == 0)
			wtio_stat_add(ctx, stripe_splits, 1);
		run = (n >= 64 ? ~0ull : ((1ull << n) - 1)) << first;
		len = n * bs;
		blocks &= ~run;
		if (io && (!contiguous || (su && off % su == 0) ||
			   io->io_nr_vecs == WTIO_IO_MAX_IOVECS ||
			   io->io_size + len > ctx->cfg.max_io_size)) {
			*cur = NULL;
			wtio_ioend_submit(wbc, io);
			io = NULL;
		}
		if (!io) {
			/* malloc, not calloc: the vector arrays are ~14 KiB
			 * and only their first io_nr_vecs entries are read. */
			io = malloc(sizeof(*io));
			if (!io) {
				/* Give the blocks back as failed. */
				folio->ifs_dirty |= run & redirty;
				wtio_folio_set_flag(folio, FOLIO_ERROR);
				wtio_inode_record_error(inode, -ENOMEM);
				wtio_wbc_set_error(wbc, -ENOMEM);
				continue;
			}
			memset(io, 0, offsetof(struct wtio_ioend, io_vecs));
			io->io_wbc = wbc;
			io->io_inode = inode;
			wtio_inode_io_get(inode);
			io->io_offset = off;
			*cur = io;
		}
		wtio_folio_get(folio);
		atomic_fetch_add(&folio->wb_pending, 1);
		io->io_vecs[io->io_nr_vecs].iov_base = folio->data + first * bs;
		io->io_vecs[io->io_nr_vecs].iov_len = len;
		io->io_folios[io->io_nr_vecs] = folio;
		io->io_blocks[io->io_nr_vecs] = run;
		io->io_redirty[io->io_nr_vecs] = run & redirty;
		io->io_nr_vecs++;
		io->io_size += len;
	}
	if (atomic_fetch_sub(&folio->wb_pending, 1) == 1) {
		/* Nothing could be queued (allocation failure). */
		if (folio->ifs_dirty)
			wtio_folio_mark_dirty(inode, folio);
		folio->wb_blocks = 0;
		wtio_folio_finish_writeback(inode, folio);
	}
}

void wtio_folio_set_writeback(struct wtio_inode *inode,
			      struct wtio_folio *folio)
{
	wtio_folio_set_flag(folio, FOLIO_WRITEBACK);
	atomic_fetch_add(&inode->ctx->nr_writeback, 1);
	atomic_fetch_add(&inode->nr_writeback, 1);
	pthread_mutex_lock(&inode->wb_list_lock);
	folio->wb_seq = ++inode->wb_seq;
	folio->w_prev = NULL;
	folio->w_next = inode->wb_head;
	if (inode->wb_head)
		inode->wb_head->w_prev = folio;
	inode->wb_head = folio;
	pthread_mutex_unlock(&inode->wb_list_lock);
}

void wtio_folio_finish_writeback(struct wtio_inode *inode,
				 struct wtio_folio *folio)
{
	pthread_mutex_lock(&inode->wb_list_lock);
	if (folio->w_prev)
		folio->w_prev->w_next = folio->w_next;
	else
		inode->wb_head = folio->w_next;
	if (folio->w_next)
		folio->w_next->w_prev = folio->w_prev;
	folio->w_prev = folio->w_next = NULL;
	pthread_mutex_unlock(&inode->wb_list_lock);
	atomic_fetch_sub(&inode->ctx->nr_writeback, 1);
	atomic_fetch_sub(&inode->nr_writeback, 1);
	wtio_folio_end_writeback(folio);
}

/* Locked dirty folio -> writeback: the I/O now owns its dirty blocks. */
void wtio_folio_start_writeback(struct wtio_inode *inode,
				struct wtio_folio *folio)
{
	wtio_folio_set_writeback(inode, folio);
	folio_clear_dirty(inode, folio);
	folio->wb_blocks = folio->ifs_dirty;
	folio->ifs_dirty = 0;
}

static int cmp_folio_index(const void *a, const void *b)
{
	uint64_t x = atomic_load(&(*(struct wtio_folio *const *)a)->index);
	uint64_t y = atomic_load(&(*(struct wtio_folio *const *)b)->index);

	return x < y ? -1 : x > y;
}

/* Referenced dirty folios in [first, last] dirtied before cutoff. */
static int wb_collect(struct wtio_inode *inode, uint64_t first, uint64_t last,
		      uint64_t cutoff, bool skip_errors,
		      struct wtio_folio **v, int max)
{
	struct wtio_folio *f;
	int n = 0;

	pthread_mutex_lock(&inode->dirty_lock);
	for (f = inode->dirty_head; f && n < max; f = f->d_next) {
		uint64_t idx = atomic_load_explicit(&f->index,
						    memory_order_relaxed);

		/* The list is in dirtying order: nothing later qualifies. */
		if (cutoff && f->dirtied_ns >= cutoff)
			break;
		if (idx < first || idx > last)
			continue;
		if (skip_errors && wtio_folio_test(f, FOLIO_ERROR))
			continue;
		wtio_folio_get(f);
		v[n++] = f;
	}
	pthread_mutex_unlock(&inode->dirty_lock);
	return n;
}

/* The last ioend of a started (WB_ASYNC) pass completed. */
static void wb_async_done(struct wtio_wb_ctl *wbc)
{
	struct wtio_ctx *ctx = wbc->ctx;

	free(wbc);
	atomic_fetch_sub(&ctx->wb_chan_users, 1);
}

int wtio_writeback_range(struct wtio_inode *inode, int64_t start, int64_t end,
			 enum wtio_wb_mode mode, uint64_t nr_to_write,
			 uint64_t expired_before)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_wb_ctl local = { .ctx = ctx, .inode = inode,
				     .max_inflight = WB_DEPTH };
	struct wtio_wb_ctl *wbc = &local;
	uint64_t first = (uint64_t)start >> ctx->folio_shift;
	uint64_t last = end < 0 ? UINT64_MAX :
		(uint64_t)(end - 1) >> ctx->folio_shift;
	/* A sync or started pass writes what was dirty when it began, so
	 * that writers dirtying more cannot keep it going forever. */
	uint64_t cutoff = expired_before ? expired_before :
		(mode != WB_BACKGROUND ? wtio_now_ns() + 1 : 0);
	struct wtio_folio *v[WB_BATCH];
	uint64_t written = 0;
	int ret;

	if (end >= 0 && end <= start)
		return 0;
	/* Submitted here, completed by the context's completion thread,
	 * like the kernel's WB_SYNC_NONE from the caller. Without memory
	 * for its control block the pass is done in full here instead, as
	 * without a channel: slower, never lost. */
	if (mode == WB_ASYNC && ctx->wb_chan) {
		struct wtio_wb_ctl *async = calloc(1, sizeof(*async));

		if (async) {
			wbc = async;
			wbc->ctx = ctx;
			wbc->inode = inode;
			wbc->chan = ctx->wb_chan;
			wbc->done = wb_async_done;
			atomic_fetch_add(&wbc->inflight, 1); /* ours, until done */
			atomic_fetch_add(&ctx->wb_chan_users, 1);
		}
	}
	for (;;) {
		struct wtio_ioend *cur = NULL;
		uint64_t done_before = written;
		int i, n;

		n = wb_collect(inode, first, last, cutoff, mode != WB_SYNC, v,
			       WB_BATCH);
		if (!n)
			break;
		qsort(v, (size_t)n, sizeof(*v), cmp_folio_index);
		for (i = 0; i < n; i++) {
			struct wtio_folio *f = v[i];

			if (nr_to_write && written >= nr_to_write)
				goto skip;
			if (!wtio_folio_trylock(f)) {
				if (mode != WB_SYNC)
					goto skip;
				/* Never sleep holding writeback that only
				 * this thread's reaping can end. */
				if (cur) {
					wtio_ioend_submit(wbc, cur);
					cur = NULL;
				}
				wtio_ioend_reap_all(wbc);
				wtio_folio_lock(f);
			}
			if (atomic_load(&f->inode) != inode)
				goto unlock;
			if (wtio_folio_test(f, FOLIO_WRITEBACK)) {
				if (mode != WB_SYNC)
					goto unlock;
				wtio_folio_wait_writeback(f);
			}
			if (!wtio_folio_test(f, FOLIO_DIRTY))
				goto unlock;
			if (mode != WB_SYNC && wtio_folio_test(f, FOLIO_ERROR))
				goto unlock;
			wtio_folio_start_writeback(inode, f);
			wtio_folio_unlock(f);
			wtio_ioend_add_folio(wbc, &cur, f, ~0ull);
			written++;
			goto skip;
unlock:
			wtio_folio_unlock(f);
skip:
			wtio_folio_put(ctx, f);
		}
		if (cur)
			wtio_ioend_submit(wbc, cur);
		if (nr_to_write && written >= nr_to_write)
			break;
		/* A sync pass goes on while anything it must write is
		 * listed: a batch another writer cleaned first (a flusher
		 * racing with fsync) is progress too, as those folios left
		 * the list, and the cutoff keeps re-dirtied ones out. The
		 * others stop when a batch got nothing done. */
		if (mode != WB_SYNC && written == done_before)
			break;
	}
	if (wbc->chan) {
		/* Errors of started writeback reach fsync through errseq. */
		if (atomic_fetch_sub(&wbc->inflight, 1) == 1)
			wbc->done(wbc);
		return 0;
	}
	wtio_ioend_reap_all(wbc);
	ret = atomic_load(&wbc->error);
	return ret;
}

void wtio_wait_writeback_range(struct wtio_inode *inode, int64_t start,
			       int64_t end)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t first = (uint64_t)start >> ctx->folio_shift;
	uint64_t last = end < 0 ? UINT64_MAX :
		(uint64_t)(end - 1) >> ctx->folio_shift;
	struct wtio_folio *v[WB_WAIT_BATCH], *f;
	uint64_t cutoff;
	int nr, i;

	if (!atomic_load(&inode->nr_writeback))
		return;
	/*
	 * Only the folios under writeback now: later ones are not ours to
	 * wait for (writers could keep us here for ever), and a cached file
	 * can hold far more folios. Those are the ones whose writeback
	 * started by cutoff; without allocating, a batch of them at a time.
	 * A folio waited for has left the list (finish_writeback unlinks it
	 * before WRITEBACK clears) or is back with a later wb_seq, so every
	 * pass leaves fewer to find.
	 */
	pthread_mutex_lock(&inode->wb_list_lock);
	cutoff = inode->wb_seq;
	for (;;) {
		nr = 0;
		for (f = inode->wb_head; f && nr < WB_WAIT_BATCH; f = f->w_next) {
			uint64_t idx = atomic_load_explicit(&f->index,
							    memory_order_relaxed);

			if (f->wb_seq > cutoff || idx < first || idx > last)
				continue;
			wtio_folio_get(f);
			v[nr++] = f;
		}
		pthread_mutex_unlock(&inode->wb_list_lock);
		if (!nr)
			return;
		for (i = 0; i < nr; i++) {
			wtio_folio_wait_writeback(v[i]);
			wtio_folio_put(ctx, v[i]);
		}
		pthread_mutex_lock(&inode->wb_list_lock);
	}
}

int wtio_fsync_file(struct wtio_file *file, bool datasync)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_io_req req = {
		.op = datasync ? WTIO_IO_FDATASYNC : WTIO_IO_FSYNC,
		.fd = inode->fd,
	};
	int ret, err;
	ssize_t res;

	/* Its error is recorded for every handle too; returned here as
	 * well, so that no failure can ever be taken for success. */
	ret = wtio_writeback_range(inode, 0, -1, WB_SYNC, 0, 0);
	wtio_wait_writeback_range(inode, 0, -1);
	pthread_rwlock_rdlock(&inode->i_rwsem);
	err = wtio_inode_sync_size(inode, true);
	pthread_rwlock_unlock(&inode->i_rwsem);
	if (!ret)
		ret = err;
	res = wtio_io_sync(&inode->ctx->io, &req);
	if (res < 0) {
		wtio_inode_record_error(inode, (int)res);
		ret = (int)res;
	}
	/* Writeback errors, ours or a flusher's, reach each handle once. */
	err = wtio_file_check_error(file);
	return err ? err : ret;
}

int wtio_sync_file_range(struct wtio_file *file, off_t off, off_t nbytes,
			 unsigned int flags)
{
	struct wtio_inode *inode = file->inode;
	int64_t end = nbytes ? off + nbytes : -1;
	int ret = 0;

	if (flags & WTIO_SYNC_RANGE_WAIT_BEFORE)
		wtio_wait_writeback_range(inode, off, end);
	if (flags & WTIO_SYNC_RANGE_WRITE)
		ret = wtio_writeback_range(inode, off, end,
				(flags & WTIO_SYNC_RANGE_WAIT_AFTER) ?
				WB_SYNC : WB_ASYNC, 0, 0);
	if (flags & WTIO_SYNC_RANGE_WAIT_AFTER)
		wtio_wait_writeback_range(inode, off, end);
	if (flags & (WTIO_SYNC_RANGE_WAIT_BEFORE | WTIO_SYNC_RANGE_WAIT_AFTER)) {
		/* As Linux's file_fdatawait_range: an error it reports is
		 * seen by this handle (errseq), so fsync does not report it
		 * again, nor does a handle opened afterwards. */
		int err = wtio_file_check_error(file);

		if (!ret)
			ret = err;
	}
	return ret;
}

/* ---- flusher threads ---- */

static struct wtio_inode *flusher_next_inode(struct wtio_ctx *ctx,
					     bool *all)
{
	struct wtio_inode *inode;

	/* wb_lock held; returns with it held */
	for (;;) {
		uint64_t now = wtio_now_ns();
		bool periodic = now >= ctx->wb_next_periodic;
		bool over = wtio_nr_dirty_cleanable(ctx) >
			    ctx->dirty_background_folios;

		if (ctx->wb_stop)
			return NULL;
		if (ctx->wb_dirty_head && (ctx->wb_kicks || over || periodic)) {
			if (periodic && !ctx->wb_kicks && !over)
				ctx->wb_next_periodic = now +
					ctx->cfg.writeback_interval_ms * 1000000ull;
			*all = ctx->wb_kicks || over;
			ctx->wb_kicks = 0;
			atomic_store(&ctx->wb_kick_pending, false);
			inode = ctx->wb_dirty_head;
			wb_unqueue_inode(ctx, inode);
			inode->wb_busy++;
			return inode;
		}
		if (periodic)
			ctx->wb_next_periodic = now +
				ctx->cfg.writeback_interval_ms * 1000000ull;
		/* A kick that finds nothing queued is spent: dirtying later
		 * must not start a pass below the background threshold. An
		 * inode a flusher is busy with comes back on the list when
		 * it still has dirty data. */
		if (!ctx->wb_dirty_head) {
			ctx->wb_kicks = 0;
			atomic_store(&ctx->wb_kick_pending, false);
		}
		struct timespec ts;

		timespec_in(&ts, ctx->cfg.writeback_interval_ms);
		pthread_cond_timedwait(&ctx->wb_cond, &ctx->wb_lock, &ts);
	}
}

static void *flusher_main(void *arg)
{
	struct wtio_ctx *ctx = arg;
	struct wtio_inode *inode;
	bool all;

	pthread_mutex_lock(&ctx->wb_lock);
	while ((inode = flusher_next_inode(ctx, &all))) {
		uint64_t expire = ctx->cfg.dirty_expire_ms * 1000000ull;
		uint64_t now = wtio_now_ns();
		uint64_t cutoff = all ? 0 : (now > expire ? now - expire : 1);

		pthread_mutex_unlock(&ctx->wb_lock);
		wtio_writeback_range(inode, 0, -1, WB_BACKGROUND, 1024, cutoff);
		pthread_mutex_lock(&ctx->wb_lock);
		inode->wb_busy--;
		pthread_mutex_lock(&inode->dirty_lock);
		if (inode->nr_dirty)
			wb_queue_inode(ctx, inode);
		pthread_mutex_unlock(&inode->dirty_lock);
		pthread_cond_broadcast(&ctx->wb_idle_cond);
		pthread_cond_broadcast(&ctx->throttle_cond);
	}
	pthread_mutex_unlock(&ctx->wb_lock);
	return NULL;
}

void wtio_writeback_detach_inode(struct wtio_inode *inode)
{
	struct wtio_ctx *ctx = inode->ctx;

	pthread_mutex_lock(&ctx->wb_lock);
	while (inode->wb_busy)
		pthread_cond_wait(&ctx->wb_idle_cond, &ctx->wb_lock);
	wb_unqueue_inode(ctx, inode);
	pthread_mutex_unlock(&ctx->wb_lock);
}

/* Completes started writeback (WB_ASYNC) submitted on the context's
 * channel; stays until the last such pass is done. */
static void *wb_completion_main(void *arg)
{
	struct wtio_ctx *ctx = arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	while (!atomic_load(&ctx->wb_chan_stop) ||
	       atomic_load(&ctx->wb_chan_users))
		wtio_io_chan_reap(ctx->wb_chan, 1, &ts);
	return NULL;
}

int wtio_writeback_init(struct wtio_ctx *ctx)
{
	uint32_t i;
	int ret;

	ctx->dirty_background_folios =
		(int64_t)(ctx->nr_folios * ctx->cfg.dirty_background_ratio / 100);
	ctx->dirty_limit_folios =
		(int64_t)(ctx->nr_folios * ctx->cfg.dirty_ratio / 100);
	if (ctx->dirty_limit_folios < 1)
		ctx->dirty_limit_folios = 1;
	pthread_mutex_init(&ctx->wb_lock, NULL);
	pthread_cond_init(&ctx->wb_cond, NULL);
	pthread_cond_init(&ctx->throttle_cond, NULL);
	pthread_cond_init(&ctx->wb_idle_cond, NULL);
	ctx->wb_next_periodic = wtio_now_ns() +
		ctx->cfg.writeback_interval_ms * 1000000ull;
	ctx->flushers = calloc(ctx->cfg.nr_flushers, sizeof(pthread_t));
	if (!ctx->flushers)
		return -ENOMEM;
	for (i = 0; i < ctx->cfg.nr_flushers; i++) {
		ret = pthread_create(&ctx->flushers[i], NULL, flusher_main, ctx);
		if (ret) {
			ctx->nr_flushers_running = i;
			wtio_writeback_exit(ctx);
			return -ret;
		}
	}
	ctx->nr_flushers_running = ctx->cfg.nr_flushers;
	if (wtio_io_can(&ctx->io, WTIO_IO_CAP_CHANNELS)) {
		ctx->wb_chan = wtio_io_chan_open(&ctx->io, 256, &ret);
		if (ctx->wb_chan &&
		    pthread_create(&ctx->wb_chan_thread, NULL,
				   wb_completion_main, ctx)) {
			wtio_io_chan_close(ctx->wb_chan);
			ctx->wb_chan = NULL;
		}
		/* Without a channel, started writeback is done in full by
		 * the caller: slower, still correct. */
	}
	return 0;
}

void wtio_writeback_exit(struct wtio_ctx *ctx)
{
	uint32_t i;

	if (!ctx->flushers)
		return;
	pthread_mutex_lock(&ctx->wb_lock);
	ctx->wb_stop = true;
	pthread_cond_broadcast(&ctx->wb_cond);
	pthread_cond_broadcast(&ctx->throttle_cond);
	pthread_mutex_unlock(&ctx->wb_lock);
	for (i = 0; i < ctx->nr_flushers_running; i++)
		pthread_join(ctx->flushers[i], NULL);
	if (ctx->wb_chan) {
		atomic_store(&ctx->wb_chan_stop, true);
		pthread_join(ctx->wb_chan_thread, NULL);
		wtio_io_chan_close(ctx->wb_chan);
		ctx->wb_chan = NULL;
	}
	free(ctx->flushers);
	ctx->flushers = NULL;
	ctx->nr_flushers_running = 0;
	pthread_mutex_destroy(&ctx->wb_lock);
	pthread_cond_destroy(&ctx->wb_cond);
	pthread_cond_destroy(&ctx->throttle_cond);
	pthread_cond_destroy(&ctx->wb_idle_cond);
}
