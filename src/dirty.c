/* SPDX-License-Identifier: MIT */
/*
 * dirty.c - a folio's dirty and writeback state: the inode's dirty list
 * and list of folios under writeback, the counts, and throttling of the
 * writers that dirty data (balance_dirty_pages).
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "dirty.h"
#include "folio.h"
#include "folio_list.h"
#include "cache.h"
#include "ctx.h"
#include "clock.h"
#include "inode.h"
#include "flush_queue.h"
#include "stats.h"

/* Queued already: a flusher will find the inode's new dirty data on the
 * list. One that took the inode off the queue re-checks nr_dirty after
 * its pass, so a stale "queued" costs nothing. */
static void dirty_queue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	if (atomic_load_explicit(&inode->wb_queued_hint, memory_order_acquire))
		return;
	pthread_mutex_lock(&ctx->wb_lock);
	wtio_wb_queue_inode(ctx, inode);
	pthread_mutex_unlock(&ctx->wb_lock);
}

void wtio_folio_mark_dirty(struct wtio_inode *inode, struct wtio_folio *folio)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint32_t old = atomic_fetch_or(&folio->state, FOLIO_DIRTY);

	if (old & FOLIO_DIRTY)
		return;
	pthread_mutex_lock(&inode->dirty_lock);
	folio->dirtied_ns = wtio_now_ns();
	wtio_flist_add_tail(&inode->dirty, folio, WTIO_FL_DIRTY);
	inode->nr_dirty++;
	/* Its last write failed: only fsync retries it (see ioend_finish),
	 * so it counts apart from the data the flushers can clean; the
	 * inode's count moves with nr_dirty, under the lock, for the
	 * flusher that asks whether anything of the inode is theirs. */
	if (old & FOLIO_ERROR)
		atomic_fetch_add(&inode->nr_dirty_error, 1);
	pthread_mutex_unlock(&inode->dirty_lock);
	atomic_fetch_add(&ctx->nr_dirty, inode->folio_units);
	if (old & FOLIO_ERROR)
		atomic_fetch_add(&ctx->nr_dirty_error, inode->folio_units);

	dirty_queue_inode(ctx, inode);
}

/*
 * As the kernel's write dirties a page again that its failed write-back
 * left clean: the folio leaves the failed data fsync alone retries and
 * an allocation may give up. Left marked, data written after the error
 * had been reported could be given up with it, and the next fsync,
 * the error already seen, returned 0 with that data never written. Now
 * the flushers write it, the failed blocks with it, and a failure is a
 * new error, reported anew.
 */
void wtio_folio_clear_error(struct wtio_inode *inode, struct wtio_folio *folio)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint32_t old;

	if (!(atomic_load_explicit(&folio->state, memory_order_relaxed) &
	      FOLIO_ERROR))
		return;
	pthread_mutex_lock(&inode->dirty_lock);
	old = atomic_fetch_and(&folio->state, ~FOLIO_ERROR);
	if ((old & (FOLIO_ERROR | FOLIO_DIRTY)) == (FOLIO_ERROR | FOLIO_DIRTY))
		atomic_fetch_sub(&inode->nr_dirty_error, 1);
	pthread_mutex_unlock(&inode->dirty_lock);
	if ((old & (FOLIO_ERROR | FOLIO_DIRTY)) != (FOLIO_ERROR | FOLIO_DIRTY))
		return;
	atomic_fetch_sub(&ctx->nr_dirty_error, inode->folio_units);
	/* The flushers let go of an inode holding only failed data. */
	dirty_queue_inode(ctx, inode);
}

/*
 * Dirty data fell: wake the throttled writers once it is down to their
 * target. Only the fall that crosses it wakes them (throttle_armed is
 * taken by one waker), not every folio cleaned while they sleep, and
 * cleaning costs one load here unless a writer waits.
 *
 * No lost wake-up: a writer arms (seq_cst) and then reads the count; we
 * lower the count (seq_cst) and then read the arm. One of the two sees
 * the other's store, and the broadcast under wb_lock cannot come between
 * the writer's check and its sleep.
 */
static void dirty_wake_throttled(struct wtio_ctx *ctx)
{
	/* seq_cst, for the pairing below (a plain load on x86). */
	if (!atomic_load(&ctx->throttle_armed))
		return;
	if (wtio_nr_dirty_cleanable(ctx) > ctx->dirty_throttle_folios ||
	    !atomic_exchange(&ctx->throttle_armed, false))
		return;
	pthread_mutex_lock(&ctx->wb_lock);
	pthread_cond_broadcast(&ctx->throttle_cond);
	pthread_mutex_unlock(&ctx->wb_lock);
}

/* Take the folio off its inode's dirty list; dirty_lock held. */
static void dirty_list_del(struct wtio_inode *inode, struct wtio_folio *folio)
{
	wtio_flist_del(&inode->dirty, folio, WTIO_FL_DIRTY);
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
	if (old & FOLIO_ERROR)
		atomic_fetch_sub(&inode->nr_dirty_error, 1);
	pthread_mutex_unlock(&inode->dirty_lock);
	atomic_fetch_sub(&ctx->nr_dirty, inode->folio_units);
	if (old & FOLIO_ERROR)
		atomic_fetch_sub(&ctx->nr_dirty_error, inode->folio_units);
	dirty_wake_throttled(ctx);
	return true;
}

void wtio_folio_cancel_dirty(struct wtio_inode *inode,
			     struct wtio_folio *folio)
{
	wtio_ifs_dirty_set(folio, 0);
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
		for (f = inode->dirty.head; f && n < 64; f = f->d_link.next) {
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
					wtio_stat_add(ctx, failed_dropped,
						      inode->folio_units);
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

bool wtio_dirty_throttle_released(struct wtio_ctx *ctx)
{
	/* wtio_balance_dirty's own test for letting its sleepers go. */
	return wtio_nr_dirty_cleanable(ctx) <= ctx->dirty_throttle_folios;
}

bool wtio_dirty_would_throttle(struct wtio_ctx *ctx)
{
	/* wtio_balance_dirty's own test for putting a writer to sleep. */
	return wtio_nr_dirty_cleanable(ctx) > ctx->dirty_limit_folios;
}

/*
 * balance_dirty_pages, in its cheap form. Below the background threshold
 * a write costs one load of the count. Above it the flushers are kicked
 * (one flag, set once until a flusher takes it). Above the limit the
 * writer sleeps until writeback has brought dirty data down to
 * dirty_throttle_folios, a little under the limit: the sleep lasts as
 * long as cleaning the excess and that margin takes, and one wake-up
 * then lets the writers dirty the margin before they sleep again (not a
 * wake-up per completed I/O, and never so deep a drain that the flushers
 * run dry while writers sleep). The timed wait guards the cases that
 * no cleaning ends: data the flushers leave alone, a stopping context.
 */
int wtio_balance_dirty(struct wtio_ctx *ctx, bool nowait, bool counted)
{
	int64_t dirty = wtio_nr_dirty_cleanable(ctx);
	int64_t last = INT64_MAX;
	int idle = 0;

	if (dirty <= ctx->dirty_background_folios)
		return 0;
	wtio_writeback_kick(ctx);
	if (dirty <= ctx->dirty_limit_folios)
		return 0;
	if (nowait)
		return -EAGAIN;
	if (!counted)
		wtio_stat_add(ctx, throttle_waits, 1);
	pthread_mutex_lock(&ctx->wb_lock);
	for (;;) {
		struct timespec ts;

		atomic_store(&ctx->throttle_armed, true);
		dirty = wtio_nr_dirty_cleanable(ctx);
		if (ctx->wb_stop || dirty <= ctx->dirty_throttle_folios)
			break;
		/* Dirty data the flushers leave alone (its last write
		 * failed; fsync retries it) never drains: stop waiting
		 * when nothing is being written and nothing shrinks. */
		if (!atomic_load(&ctx->nr_writeback) && dirty >= last) {
			if (++idle > 4)
				break;
		} else {
			idle = 0;
		}
		/* The flushers are told once per sleep, not per write. */
		if (dirty >= last || last == INT64_MAX) {
			ctx->wb_kicks++;
			pthread_cond_broadcast(&ctx->wb_cond);
		}
		last = dirty;
		wtio_deadline_in_ns(&ts, 50 * 1000000ull);
		pthread_cond_timedwait(&ctx->throttle_cond, &ctx->wb_lock, &ts);
	}
	pthread_mutex_unlock(&ctx->wb_lock);
	return 0;
}

void wtio_folio_set_writeback(struct wtio_inode *inode,
			      struct wtio_folio *folio)
{
	wtio_folio_set_flag(folio, FOLIO_WRITEBACK);
	atomic_fetch_add(&inode->ctx->nr_writeback, inode->folio_units);
	atomic_fetch_add(&inode->nr_writeback, 1);
	pthread_mutex_lock(&inode->wb_list_lock);
	folio->wb_seq = ++inode->wb_seq;
	wtio_flist_add_head(&inode->wb_folios, folio, WTIO_FL_WB);
	pthread_mutex_unlock(&inode->wb_list_lock);
}

void wtio_folio_finish_writeback(struct wtio_inode *inode,
				 struct wtio_folio *folio)
{
	pthread_mutex_lock(&inode->wb_list_lock);
	wtio_flist_del(&inode->wb_folios, folio, WTIO_FL_WB);
	pthread_mutex_unlock(&inode->wb_list_lock);
	atomic_fetch_sub(&inode->ctx->nr_writeback, inode->folio_units);
	atomic_fetch_sub(&inode->nr_writeback, 1);
	wtio_folio_end_writeback(folio);
}

void wtio_folios_finish_writeback(struct wtio_inode *inode,
				  struct wtio_folio *const *v, int n)
{
	int i;

	if (n <= 0)
		return;
	pthread_mutex_lock(&inode->wb_list_lock);
	for (i = 0; i < n; i++)
		wtio_flist_del(&inode->wb_folios, v[i], WTIO_FL_WB);
	pthread_mutex_unlock(&inode->wb_list_lock);
	atomic_fetch_sub(&inode->ctx->nr_writeback,
			 (int64_t)n * inode->folio_units);
	atomic_fetch_sub(&inode->nr_writeback, n);
	for (i = 0; i < n; i++)
		wtio_folio_end_writeback(v[i]);
}

/* Locked dirty folio -> writeback: the I/O now owns its dirty blocks. */
void wtio_folio_start_writeback(struct wtio_inode *inode,
				struct wtio_folio *folio)
{
	wtio_folio_set_writeback(inode, folio);
	folio_clear_dirty(inode, folio);
	wtio_wb_blocks_set(folio, folio->ifs_dirty);
	wtio_ifs_dirty_set(folio, 0);
}

void wtio_folios_start_writeback(struct wtio_inode *inode,
				 struct wtio_folio *const *v, int n)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t was_dirty[(WTIO_WB_START_MAX + 63) / 64] = { 0 };
	int i, cleared = 0, errors = 0;

	if (n <= 0)
		return;
	/* wtio_folio_set_writeback, for each */
	for (i = 0; i < n; i++)
		wtio_folio_set_flag(v[i], FOLIO_WRITEBACK);
	atomic_fetch_add(&ctx->nr_writeback, (int64_t)n * inode->folio_units);
	atomic_fetch_add(&inode->nr_writeback, n);
	pthread_mutex_lock(&inode->wb_list_lock);
	for (i = 0; i < n; i++) {
		v[i]->wb_seq = ++inode->wb_seq;
		wtio_flist_add_head(&inode->wb_folios, v[i], WTIO_FL_WB);
	}
	pthread_mutex_unlock(&inode->wb_list_lock);
	/* folio_clear_dirty, for each */
	for (i = 0; i < n; i++) {
		uint32_t old = atomic_fetch_and(&v[i]->state,
						~(FOLIO_DIRTY | FOLIO_ERROR));

		if (!(old & FOLIO_DIRTY))
			continue;
		was_dirty[i / 64] |= 1ull << (i % 64);
		cleared++;
		if (old & FOLIO_ERROR)
			errors++;
	}
	if (cleared) {
		pthread_mutex_lock(&inode->dirty_lock);
		for (i = 0; i < n; i++)
			if (was_dirty[i / 64] & (1ull << (i % 64)))
				dirty_list_del(inode, v[i]);
		if (errors)
			atomic_fetch_sub(&inode->nr_dirty_error, errors);
		pthread_mutex_unlock(&inode->dirty_lock);
		atomic_fetch_sub(&ctx->nr_dirty,
				 (int64_t)cleared * inode->folio_units);
		if (errors)
			atomic_fetch_sub(&ctx->nr_dirty_error,
					 (int64_t)errors * inode->folio_units);
		dirty_wake_throttled(ctx);
	}
	for (i = 0; i < n; i++) {
		wtio_wb_blocks_set(v[i], v[i]->ifs_dirty);
		wtio_ifs_dirty_set(v[i], 0);
	}
}
