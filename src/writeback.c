/* SPDX-License-Identifier: MIT */
/*
 * writeback.c - writing back the dirty folios of a file range (for the
 * flushers, fsync and sync_file_range) and waiting for the writeback in
 * flight on one.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "writeback.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "clock.h"
#include "inode.h"
#include "dirty.h"
#include "ioend.h"
#include "stripe.h"
#include "reaper.h"
#include "reserve.h"
#include "inode_slots.h"
#include "size.h"
#include "rlimit_fsize.h"

/* Folios looked at per pass over an inode's dirty list: an array on the
 * stack, so that fsync and close cannot fail (or, worse, succeed without
 * writing) for want of memory. 256 folios of 4 KiB fill one 1 MiB I/O. */
#define WB_BATCH 256
_Static_assert(WB_BATCH <= WTIO_WB_START_MAX, "a batch starts at once");
/* Folios under writeback waited for per pass (on the stack too). */
#define WB_WAIT_BATCH 64
/* ioends one writeback call keeps in flight, and hands an asynchronous
 * backend at a time: random dirty data makes one small I/O per folio,
 * and a system call (and a wait) per I/O would cost more than the I/O.
 * A synchronous backend does each I/O inside its submit: nothing to
 * batch, and completions it holds for the reap are only delayed. */
#define WB_DEPTH 64
#define WB_SEND_BATCH 16
#define WB_SYNC_BACKEND_DEPTH 8
/* List steps a folio's lookup costs, about (a review measured 40-55 ns
 * against 7 for a list of folios in address order). */
#define WB_LOOKUP_COST 8

static int cmp_folio_index(const void *a, const void *b)
{
	uint64_t x = atomic_load(&(*(struct wtio_folio *const *)a)->index);
	uint64_t y = atomic_load(&(*(struct wtio_folio *const *)b)->index);

	return x < y ? -1 : x > y;
}

/* A stream dirties its folios in file order, and the dirty list keeps
 * that order: the sort is then a waste of a call per comparison. */
static bool folios_sorted(struct wtio_folio *const *v, int n)
{
	uint64_t prev = 0;
	int i;

	for (i = 0; i < n; i++) {
		uint64_t idx = atomic_load_explicit(&v[i]->index,
						    memory_order_relaxed);

		if (i && idx < prev)
			return false;
		prev = idx;
	}
	return true;
}

/* Is f, referenced, dirty (and not failed, with skip_errors) since
 * before cutoff? dirty_lock held. */
static bool wb_wants(struct wtio_folio *f, uint64_t cutoff, bool skip_errors)
{
	uint32_t s = wtio_folio_flags(f);

	return (s & FOLIO_DIRTY) && !(skip_errors && (s & FOLIO_ERROR)) &&
	       !(cutoff && f->dirtied_ns >= cutoff);
}

/*
 * The range's folios looked up one by one from *from on, for a range
 * short against the dirty list (a database's sync_file_range of 256 KiB
 * in a file with thousands of dirty folios would otherwise walk them
 * all, each a cache miss, at every call). *from moves past the last
 * index looked at, so the next batch goes on from there. A folio found
 * dirty now was on the list when the pass began or was dirtied since:
 * the same set as the list's walk, in file order.
 *
 * A clean folio the inode's slot names is passed over without a
 * reference (which would keep CLOCK and drop-behind off it meanwhile):
 * one of ours dirtied before the pass began shows FOLIO_DIRTY, and
 * cannot be evicted and reused while dirty; a folio reused by another
 * file fails the identity check and is looked up properly.
 */
static int wb_collect_range(struct wtio_inode *inode, uint64_t *from,
			    uint64_t last, uint64_t cutoff, bool skip_errors,
			    struct wtio_folio **v, int max)
{
	uint64_t idx;
	int n = 0;

	for (idx = *from; idx <= last && n < max; idx++) {
		struct wtio_folio *f = wtio_slots_peek(inode, idx);
		bool want;

		if (f && atomic_load_explicit(&f->inode,
					      memory_order_relaxed) == inode &&
		    atomic_load_explicit(&f->index, memory_order_relaxed) == idx &&
		    !(wtio_folio_flags(f) & FOLIO_DIRTY))
			continue;
		f = wtio_folio_find(inode, idx);
		if (!f)
			continue;
		pthread_mutex_lock(&inode->dirty_lock);
		want = wb_wants(f, cutoff, skip_errors);
		pthread_mutex_unlock(&inode->dirty_lock);
		if (want)
			v[n++] = f;
		else
			wtio_folio_put(inode->ctx, f);
	}
	*from = idx;
	return n;
}

/* Referenced dirty folios in [*from, last] dirtied before cutoff. */
static int wb_collect(struct wtio_inode *inode, uint64_t *from, uint64_t last,
		      uint64_t cutoff, bool skip_errors,
		      struct wtio_folio **v, int max)
{
	uint64_t first = *from;
	struct wtio_folio *f;
	int n = 0;

	if (first > last)
		return 0;
	pthread_mutex_lock(&inode->dirty_lock);
	/* A lookup costs several steps of the list (a hole goes to the
	 * hash, under its bucket lock): only for a range well under it. */
	if (last - first < (uint64_t)inode->nr_dirty / WB_LOOKUP_COST) {
		pthread_mutex_unlock(&inode->dirty_lock);
		return wb_collect_range(inode, from, last, cutoff, skip_errors,
					v, max);
	}
	for (f = inode->dirty.head; f && n < max; f = f->d_link.next) {
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

/*
 * Whether a pass that has written `written` folios is done with its quota
 * (0: none) before the folio at file offset next (-1: the batch ended).
 * Past its quota it still takes the folio that goes on with its ioend
 * inside a stripe, up to a stripe's worth of folios more: stopping there
 * would leave the rest of that stripe to another pass, and a parity RAID
 * pays read-modify-write for each of the two parts.
 */
static bool wb_quota_done(const struct wtio_inode *inode,
			  const struct wtio_ioend *cur, int64_t next,
			  uint64_t written, uint64_t quota)
{
	uint32_t shift = inode->folio_shift;
	uint64_t sw;
	int64_t end;

	if (!quota || written < quota)
		return false;
	end = wtio_ioend_open_stripe_end(cur);
	if (end < 0)
		return true;
	sw = wtio_stripe_width(&inode->geo, inode->block_size);
	if (written > quota + (sw >> shift))
		return true;
	return next >= 0 && next != end;
}

/* The last ioend of a started (WB_ASYNC) pass completed. */
static void wb_async_done(struct wtio_wb_ctl *wbc)
{
	struct wtio_ctx *ctx = wbc->ctx;

	free(wbc);
	atomic_fetch_sub(&ctx->wb_chan_users, 1);
}

struct wtio_wb_ctl *wtio_wb_async_begin(struct wtio_inode *inode)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_wb_ctl *wbc;

	if (!ctx->wb_reaper.chan)
		return NULL;
	wbc = calloc(1, sizeof(*wbc));
	if (!wbc)
		return NULL;
	wbc->ctx = ctx;
	wbc->inode = inode;
	wbc->chan = ctx->wb_reaper.chan;
	wbc->done = wb_async_done;
	atomic_fetch_add(&wbc->inflight, 1); /* ours, until done */
	atomic_fetch_add(&ctx->wb_chan_users, 1);
	return wbc;
}

void wtio_wb_async_end(struct wtio_wb_ctl *wbc)
{
	if (atomic_fetch_sub(&wbc->inflight, 1) == 1)
		wbc->done(wbc);
}

/* Before sleeping: never hold writeback that only this thread's
 * reaping can end (the I/O goes to this thread's ring). */
static void wb_end_own(struct wtio_wb_ctl *wbc, struct wtio_ioend **cur)
{
	if (*cur) {
		wtio_ioend_submit(wbc, *cur);
		*cur = NULL;
	}
	wtio_ioend_reap_all(wbc);
}

/*
 * A batch of a pass that waits for nothing (started writeback, the
 * flushers) and whose quota, if any, is a plain count (no stripe to
 * finish: wb_quota_done): each folio that can go is locked and checked,
 * at most max of them (0: no limit), then all of them start writeback
 * together (each list's lock once, not once a folio), then go into the
 * ioends in file order. Only trylocks while holding the others: nothing
 * here waits. Returns the folios put under writeback; drops every
 * reference of v.
 */
static uint64_t wb_batch_nowait(struct wtio_wb_ctl *wbc,
				struct wtio_ioend **cur,
				struct wtio_folio **v, int n, uint64_t max)
{
	struct wtio_inode *inode = wbc->inode;
	struct wtio_ctx *ctx = inode->ctx;
	int i, k = 0;

	for (i = 0; i < n; i++) {
		struct wtio_folio *f = v[i];

		if ((!max || (uint64_t)k < max) && wtio_folio_trylock(f)) {
			if (atomic_load(&f->inode) == inode &&
			    (wtio_folio_flags(f) &
			     (FOLIO_WRITEBACK | FOLIO_DIRTY | FOLIO_ERROR)) ==
			    FOLIO_DIRTY) {
				v[k++] = f;	/* k <= i: kept, locked */
				continue;
			}
			wtio_folio_unlock(f);
		}
		wtio_folio_put(ctx, f);
	}
	wtio_folios_start_writeback(inode, v, k);
	/* All unlocked before the first I/O goes: a submission may wait
	 * (the size-change gate, a full ring), and no folio lock may be
	 * held then. Under writeback they stay as they are. */
	for (i = 0; i < k; i++)
		wtio_folio_unlock(v[i]);
	/* Ours goes before the folio joins its ioend, which holds one of
	 * its own (under writeback the folio stays as it is): an I/O that
	 * completed before a later put would find it held and could not
	 * drop it behind. */
	for (i = 0; i < k; i++) {
		wtio_folio_put(ctx, v[i]);
		wtio_ioend_add_folio(wbc, cur, v[i], ~0ull);
	}
	return (uint64_t)k;
}

int wtio_writeback_range(struct wtio_inode *inode, int64_t start, int64_t end,
			 enum wtio_wb_mode mode, uint64_t nr_to_write,
			 uint64_t expired_before)
{
	struct wtio_ctx *ctx = inode->ctx;
	bool aio = wtio_io_can(&ctx->io, WTIO_IO_CAP_ASYNC);
	struct wtio_wb_ctl local = { .ctx = ctx, .inode = inode,
		.max_inflight = aio ? WB_DEPTH : WB_SYNC_BACKEND_DEPTH,
		.batch = aio ? WB_SEND_BATCH : 0 };
	struct wtio_wb_ctl *wbc = &local;
	uint64_t first = (uint64_t)start >> inode->folio_shift;
	uint64_t last = end < 0 ? UINT64_MAX :
		(uint64_t)(end - 1) >> inode->folio_shift;
	/* A sync or started pass writes what was dirty when it began, so
	 * that writers dirtying more cannot keep it going forever. */
	uint64_t cutoff = expired_before ? expired_before :
		(mode != WB_BACKGROUND ? wtio_now_ns() + 1 : 0);
	struct wtio_folio *v[WB_BATCH];
	/* The ioend being built goes on across batches: a batch edge is no
	 * stripe boundary, and cutting there would write a stripe in two. */
	struct wtio_ioend *cur = NULL;
	uint64_t written = 0, scan = first;
	struct wtio_xfsz_hold xfsz;
	int ret;

	if (end >= 0 && end <= start)
		return 0;
	wtio_xfsz_hold(&xfsz);
	/* Submitted here, completed by the context's completion thread,
	 * like the kernel's WB_SYNC_NONE from the caller. Without memory
	 * for its control block the pass is done in full here instead, as
	 * without a channel: slower, never lost. */
	if (mode == WB_ASYNC) {
		struct wtio_wb_ctl *async = wtio_wb_async_begin(inode);

		if (async) {
			wbc = async;
			wbc->batch = WB_SEND_BATCH;
		}
	}
	for (;;) {
		uint64_t done_before = written;
		int i = 0, n;

		n = wb_collect(inode, &scan, last, cutoff, mode != WB_SYNC, v,
			       WB_BATCH);
		if (!n)
			break;
		if (!folios_sorted(v, n))
			qsort(v, (size_t)n, sizeof(*v), cmp_folio_index);
		if (mode != WB_SYNC && (!nr_to_write || !wtio_stripe_width(
				&inode->geo, inode->block_size))) {
			written += wb_batch_nowait(wbc, &cur, v, n,
					nr_to_write ? nr_to_write - written : 0);
			i = n;
		}
		for (; i < n; i++) {
			struct wtio_folio *f = v[i];

			if (wb_quota_done(inode, cur, (int64_t)atomic_load(
						  &f->index) << inode->folio_shift,
					  written, nr_to_write))
				goto skip;
			if (!wtio_folio_trylock(f)) {
				if (mode != WB_SYNC)
					goto skip;
				wb_end_own(wbc, &cur);
				wtio_folio_lock(f);
			}
			if (atomic_load(&f->inode) != inode)
				goto unlock;
			if (wtio_folio_test(f, FOLIO_WRITEBACK)) {
				if (mode != WB_SYNC)
					goto unlock;
				/* Its writer may be waiting for ours. */
				wb_end_own(wbc, &cur);
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
		/* What this batch submitted is in the backend's hands before
		 * the next batch is looked at (only the ioend being built
		 * stays open, to go on across the batch edge): throttling
		 * rests on started writeback, not on I/O built and held.
		 * A short batch took all there was: its I/O goes with the
		 * last ioend, in one call, once a look finds nothing more. */
		if (n == WB_BATCH)
			wtio_ioend_send(wbc);
		if (wb_quota_done(inode, cur, -1, written, nr_to_write))
			break;
		/* A sync pass goes on while anything it must write is
		 * listed: a batch another writer cleaned first (a flusher
		 * racing with fsync) is progress too, as those folios left
		 * the list, and the cutoff keeps re-dirtied ones out. The
		 * others stop when a batch got nothing done. */
		if (mode != WB_SYNC && written == done_before)
			break;
	}
	if (cur)
		wtio_ioend_submit(wbc, cur);
	if (wbc->chan) {
		wtio_ioend_send(wbc);
		/* Errors of started writeback reach fsync through errseq. */
		wtio_wb_async_end(wbc);
		wtio_xfsz_release(&xfsz);
		return 0;
	}
	wtio_ioend_reap_all(wbc);
	ret = atomic_load(&wbc->error);
	wtio_xfsz_release(&xfsz);
	return ret;
}

/*
 * Wait for f's writeback. With help, while the context's channel for
 * started writeback has I/O in flight, this thread reaps it itself (its
 * completion work runs here, in the thread that submitted it, anyway):
 * otherwise each completion wakes this thread to post it, the
 * completion thread to end it, and this thread again to go on.
 */
static void wb_wait_folio(struct wtio_ctx *ctx, struct wtio_folio *f,
			  bool help)
{
	while (help && wtio_folio_test(f, FOLIO_WRITEBACK))
		if (wtio_reaper_help(&ctx->wb_reaper, NULL) < 0)
			break;	/* nothing in flight there */
	wtio_folio_wait_writeback(f);
}

static void wait_writeback_range(struct wtio_inode *inode, int64_t start,
				 int64_t end, bool help)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t first = (uint64_t)start >> inode->folio_shift;
	uint64_t last = end < 0 ? UINT64_MAX :
		(uint64_t)(end - 1) >> inode->folio_shift;
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
		for (f = inode->wb_folios.head; f && nr < WB_WAIT_BATCH;
		     f = f->w_link.next) {
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
		help = help && ctx->wb_reaper.chan;
		for (i = 0; i < nr; i++) {
			wb_wait_folio(ctx, v[i], help);
			/* Its completion found it held (by us) and could not
			 * drop it behind: we do, once clean. */
			if (wtio_folio_test(v[i], FOLIO_DROPBEHIND))
				wtio_folio_drop_behind(ctx, v[i]);
			wtio_folio_put(ctx, v[i]);
		}
		pthread_mutex_lock(&inode->wb_list_lock);
	}
}

void wtio_wait_writeback_range(struct wtio_inode *inode, int64_t start,
			       int64_t end)
{
	wait_writeback_range(inode, start, end, false);
}

void wtio_wait_writeback_range_reaping(struct wtio_inode *inode,
				       int64_t start, int64_t end)
{
	wait_writeback_range(inode, start, end, true);
}

void wtio_inode_settle_end_block(struct wtio_inode *inode, int64_t size)
{
	int64_t start = size & ~(int64_t)(inode->block_size - 1);

	if (start == size)
		return;
	wtio_writeback_range(inode, start, size, WB_SYNC, 0, 0);
	wtio_wait_writeback_range(inode, start, size);
}

/* Whether the block holding the end is dirty or under writeback (whose
 * I/O may not be built yet, and then reads the size when it is). Under
 * the exclusive file lock nothing makes it dirty meanwhile. */
static bool end_block_busy(struct wtio_inode *inode, int64_t isize)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t pos = (uint64_t)isize - 1;
	uint64_t bit = 1ull << ((pos & (inode->folio_size - 1)) >>
				inode->block_shift);
	struct wtio_folio *f = wtio_folio_lookup(inode, pos >> inode->folio_shift);
	bool busy = false;

	if (!f)
		return false;
	wtio_folio_lock(f);
	if (atomic_load(&f->inode) == inode)
		busy = (f->ifs_dirty & bit) ||
		       (wtio_folio_test(f, FOLIO_WRITEBACK) &&
			(f->wb_blocks & bit));
	wtio_folio_unlock(f);
	wtio_folio_put(ctx, f);
	return busy;
}

int wtio_inode_settle_tail(struct wtio_inode *inode, int64_t from,
			   int64_t size, bool nowait)
{
	int64_t isize = wtio_inode_size(inode);

	if (!isize || !wtio_reserve_tail_missing(inode, from, size) ||
	    !end_block_busy(inode, isize))
		return 0;
	/* Written at the current size, its I/O needs no space past the
	 * end's filesystem block, as the kernel's; once clean, only a
	 * write makes it dirty again, and that write reserves the block
	 * for the larger size. (Reserving the rest instead took space a
	 * write the kernel accepts needed.) */
	if (nowait)
		return -EAGAIN;
	wtio_inode_settle_end_block(inode, isize);
	return 0;
}

bool wtio_inode_give_back_tail(struct wtio_inode *inode, bool nowait)
{
	int64_t isize = wtio_inode_size(inode);
	int64_t from = atomic_load(&inode->disk_size_lb);
	int ret;

	if (!wtio_reserve_holds_past(inode))
		return false;
	if (isize && inode->tail_unit < inode->block_size &&
	    end_block_busy(inode, isize)) {
		if (nowait)
			return false;
		wtio_inode_settle_end_block(inode, isize);
		/* Its write-back failed: it stays dirty, and needs the
		 * block's rest if the size grows. */
		if (end_block_busy(inode, isize))
			return false;
	}
	wtio_reserve_trim_tail(inode);
	if (nowait)
		return true;
	/*
	 * ext4 ignores a punch past the end of file; only a truncate frees
	 * blocks there. Truncated to i_size, the backing file must hold all
	 * the data below it: what lies past its size is written back first
	 * (nothing else past i_size is ours to keep: the end block is idle,
	 * and dirty data past the backing file's size has been written).
	 */
	if (from > isize)
		from = isize;
	from &= ~(int64_t)(inode->block_size - 1);
	if (from < isize) {
		ret = wtio_writeback_range(inode, from, isize, WB_SYNC, 0, 0);
		wtio_wait_writeback_range(inode, from, isize);
		if (ret)
			return true;
	}
	wtio_inode_set_disk_size(inode, isize, true);
	return true;
}
