/* SPDX-License-Identifier: MIT */
/*
 * folio_alloc.c - new folios: off the free space, or made room for by
 * CLOCK (reclaim.c), or waited for while the flushers clean; then
 * inserted into the index (cache.c).
 */
#include <errno.h>
#include <time.h>

#include "cache.h"
#include "chunk_space.h"
#include "clock.h"
#include "ctx.h"
#include "folio.h"
#include "folio_alloc.h"
#include "inode.h"
#include "reclaim.h"
#include "stats.h"
#include "test_hooks.h"

/* 10 ms waits for a free folio, with no writeback in flight, before an
 * allocation gives up: 3 s, or 30 ms when no dirty folio is left that
 * background writeback could clean. */
#define WTIO_ALLOC_STALLS 300

static struct wtio_folio *folio_pop_free(struct wtio_ctx *ctx,
					 uint32_t units)
{
	struct wtio_folio *f;

	pthread_mutex_lock(&ctx->free_lock);
	f = wtio_chunks_take(ctx, units);
	pthread_mutex_unlock(&ctx->free_lock);
	return f;
}

/* Under its lock, also where only a decision to sleep hangs on it: an
 * unlocked peek is a data race (free_lock is innermost). */
static bool folio_space_for(struct wtio_ctx *ctx, uint32_t units)
{
	bool avail;

	pthread_mutex_lock(&ctx->free_lock);
	avail = wtio_chunks_available(ctx, units);
	pthread_mutex_unlock(&ctx->free_lock);
	return avail;
}

/*
 * Make room for a folio of units; whether there may be room now. A
 * large folio needs a whole chunk (the chunk hand). A smaller one takes
 * what the unit hand frees when folios of its size are among it (a
 * file's folios all have one size, so its own old ones usually are);
 * when they are not, a whole chunk. When neither gave its size a slot
 * while dirty data or writeback is about, the caller waits for
 * writeback: going on with the unit hand would evict every clean folio
 * of the cache while a dirty folio in each chunk kept every chunk from
 * coming whole (a review saw an 8 KiB miss evict 992 of 1024 units).
 * With none, only clean folios stand in the way, busy ones the chunk
 * hand passed over: the unit hand goes on (waiting could only fail).
 */
static bool folio_reclaim(struct wtio_ctx *ctx, uint32_t units)
{
	bool evicted;

	if (ctx->chunk_units == 1)
		return wtio_reclaim(ctx, 32);
	if (units == ctx->chunk_units)
		return wtio_reclaim_chunk(ctx);
	evicted = wtio_reclaim(ctx, 32);
	if (evicted && folio_space_for(ctx, units))
		return true;
	if (wtio_reclaim_chunk(ctx))
		return true;
	return evicted && !atomic_load(&ctx->nr_writeback) &&
	       !wtio_nr_dirty_cleanable(ctx);
}

/*
 * A free folio of the given units, locked, with one reference (the
 * caller's). When the budget is used up: evict clean folios; when none
 * is clean, wake the flushers and wait for writeback or for references
 * to drop.
 */
static struct wtio_folio *folio_alloc(struct wtio_ctx *ctx, uint32_t units,
				      bool wait, bool may_evict)
{
	unsigned int stalls = 0;
	struct wtio_folio *f;

	for (;;) {
		bool avail;

		f = folio_pop_free(ctx, units);
		if (f)
			break;
		if (!may_evict)
			return NULL;
		if (folio_reclaim(ctx, units))
			continue;
		if (!wait)
			return NULL;
		/* Only data the disk refused is left and nothing is being
		 * written: drop it (the error stays recorded for fsync)
		 * rather than fail this allocation, maybe another file's. */
		if (!atomic_load(&ctx->nr_writeback) &&
		    !wtio_nr_dirty_cleanable(ctx) &&
		    atomic_load(&ctx->nr_dirty_error) &&
		    ctx->wb_drop_failed(ctx))
			continue;
		/* Nothing under writeback or read I/O and nothing
		 * reclaimable for a long while: every folio is pinned or
		 * dirty with data the disk refuses (FOLIO_ERROR, left to
		 * fsync). Waiting longer
		 * would wait for ever: fail this allocation instead. */
		if (atomic_load(&ctx->nr_writeback) ||
		    atomic_load(&ctx->nr_read_io))
			stalls = 0;
		else if ((stalls += wtio_nr_dirty_cleanable(ctx) ? 1 : 100) >
			 WTIO_ALLOC_STALLS)
			return NULL;
		ctx->wb_kick(ctx);
		pthread_mutex_lock(&ctx->space_lock);
		atomic_fetch_add(&ctx->space_waiters, 1);
		avail = folio_space_for(ctx, units);
		if (!avail) {
			struct timespec ts;
			/* Space comes back as writeback ends, and some may
			 * be a queue's whose completion thread naps. */
			bool want = atomic_load(&ctx->nr_writeback) != 0;

			if (want)
				wtio_reaper_want_begin(&ctx->reaper_wait);
			wtio_deadline_in_ns(&ts, 10 * 1000 * 1000);
			pthread_cond_timedwait(&ctx->space_cond,
					       &ctx->space_lock, &ts);
			if (want)
				wtio_reaper_want_end(&ctx->reaper_wait);
		}
		atomic_fetch_sub(&ctx->space_waiters, 1);
		pthread_mutex_unlock(&ctx->space_lock);
	}
	/*
	 * Locked before it can be seen by CLOCK: a scan takes a folio only
	 * by moving its refcount from 1 to 2, and a folio off the free list
	 * has 0 until the release store below. A scan whose compare-and-
	 * swap reads that 1 synchronises with the store, so its trylock
	 * (an RMW, later in the state word's order than our LOCKED) fails.
	 * Were the count set first, a scan could take the folio unlocked,
	 * lock it, find no inode and unlock it under us: a stolen lock.
	 */
	wtio_folio_lock_new(f);
	atomic_store_explicit(&f->ifs_uptodate, 0, memory_order_relaxed);
	atomic_store_explicit(&f->wb_pending, 0, memory_order_relaxed);
	wtio_ifs_dirty_set(f, 0);
	wtio_wb_blocks_set(f, 0);
	WTIO_TEST_HOOK(WTIO_TP_ALLOC_WINDOW, f);
	atomic_store_explicit(&f->refcount, 1, memory_order_release);
	return f;
}

static struct wtio_folio *folio_try_create(struct wtio_inode *inode,
					   uint64_t index, bool may_evict)
{
	struct wtio_folio *f, *nf;

	f = wtio_folio_lookup(inode, index);
	if (f) {
		wtio_folio_put(inode->ctx, f);
		return NULL;
	}
	nf = folio_alloc(inode->ctx, inode->folio_units, false,
				may_evict);
	if (!nf)
		return NULL;
	f = wtio_folio_insert(inode, index, nf);
	if (f != nf) {
		wtio_folio_put(inode->ctx, f);
		return NULL;
	}
	return nf;
}

struct wtio_folio *wtio_folio_try_create(struct wtio_inode *inode,
					 uint64_t index)
{
	return folio_try_create(inode, index, true);
}

struct wtio_folio *wtio_folio_try_create_free(struct wtio_inode *inode,
					      uint64_t index)
{
	return folio_try_create(inode, index, false);
}

int wtio_folio_get_locked(struct wtio_inode *inode, uint64_t index,
			  bool nowait, struct wtio_folio **foliop,
			  bool *created)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_folio *f, *nf;

	for (;;) {
		f = wtio_folio_lookup(inode, index);
		if (!f) {
			nf = folio_alloc(ctx, inode->folio_units, !nowait,
					 true);
			/* Full of data the disk refused: say so (-EIO), as
			 * the write that cannot be cached is refused too. */
			if (!nf)
				return nowait ? -EAGAIN :
				       atomic_load(&ctx->nr_dirty_error) ? -EIO :
				       -ENOMEM;
			f = wtio_folio_insert(inode, index, nf);
			if (f == nf) {
				wtio_stat_add(ctx, misses, 1);
				*created = true;
				*foliop = f;
				return 0;
			}
		}
		if (nowait) {
			if (!wtio_folio_trylock(f)) {
				wtio_folio_put(ctx, f);
				return -EAGAIN;
			}
		} else {
			wtio_folio_lock(f);
		}
		/* Truncated or evicted while we waited for the lock? */
		if (atomic_load(&f->inode) == inode &&
		    atomic_load(&f->index) == index) {
			*created = false;
			*foliop = f;
			return 0;
		}
		wtio_folio_unlock(f);
		wtio_folio_put(ctx, f);
	}
}
