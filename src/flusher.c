/* SPDX-License-Identifier: MIT */
/*
 * flusher.c - the flusher threads, which take inodes off the flush queue
 * and write back what expired or what a kick asked for, and the context's
 * writeback set-up and tear-down.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "sys.h"
#include "flusher.h"
#include "ctx.h"
#include "clock.h"
#include "inode.h"
#include "dirty.h"
#include "flush_queue.h"
#include "writeback.h"
#include "sync.h"
#include "reaper.h"
#include "ioend.h"

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
		if (ctx->wb_dirty_head && (ctx->wb_kicks || over || periodic ||
					   ctx->wb_inode_credit)) {
			bool credit = !ctx->wb_kicks && !over &&
				      ctx->wb_inode_credit;

			if (periodic && !ctx->wb_kicks && !over && !credit)
				ctx->wb_next_periodic = now +
					ctx->cfg.writeback_interval_ms * 1000000ull;
			if (credit)
				ctx->wb_inode_credit--;
			*all = ctx->wb_kicks || over || credit;
			ctx->wb_kicks = 0;
			atomic_store(&ctx->wb_kick_pending, false);
			inode = ctx->wb_dirty_head;
			wtio_wb_unqueue_inode(ctx, inode);
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
			ctx->wb_inode_credit = 0;
			atomic_store(&ctx->wb_kick_pending, false);
		}
		struct timespec ts;

		wtio_deadline_in_ns(&ts, ctx->cfg.writeback_interval_ms * 1000000ull);
		pthread_cond_timedwait(&ctx->wb_cond, &ctx->wb_lock, &ts);
	}
}

static void *flusher_main(void *arg)
{
	struct wtio_ctx *ctx = arg;
	struct wtio_inode *inode;
	bool all;

	wtio_sys_block_xfsz();

	pthread_mutex_lock(&ctx->wb_lock);
	while ((inode = flusher_next_inode(ctx, &all))) {
		uint64_t expire = ctx->cfg.dirty_expire_ms * 1000000ull;
		uint64_t now = wtio_now_ns();
		uint64_t cutoff = all ? 0 : (now > expire ? now - expire : 1);

		pthread_mutex_unlock(&ctx->wb_lock);
		wtio_writeback_range(inode, 0, -1, WB_BACKGROUND, 1024, cutoff);
		/* A closed file's size is nobody else's to make exact. */
		if (atomic_load(&inode->kept))
			wtio_settle_closed(inode);
		pthread_mutex_lock(&ctx->wb_lock);
		inode->wb_busy--;
		/* Queued again only with data a flusher can write: what a
		 * failed write-back gave back is fsync's to retry, and an
		 * inode holding only that, queued again, had an idle flusher
		 * take it, pass over it and queue it again for as long as
		 * another inode kept the dirty data over the threshold. A
		 * later write queues the inode again (wtio_folio_mark_dirty). */
		pthread_mutex_lock(&inode->dirty_lock);
		if ((int64_t)inode->nr_dirty >
		    atomic_load(&inode->nr_dirty_error))
			wtio_wb_queue_inode(ctx, inode);
		pthread_mutex_unlock(&inode->dirty_lock);
		pthread_cond_broadcast(&ctx->wb_idle_cond);
	}
	pthread_mutex_unlock(&ctx->wb_lock);
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
	/* Throttled writers wait for an eighth of the span between the two
	 * thresholds to be cleaned (never below the background threshold,
	 * where the flushers would stop): one wake-up per batch of that
	 * size, with the flushers kept busy all along. */
	ctx->dirty_throttle_folios = ctx->dirty_limit_folios -
		(ctx->dirty_limit_folios - ctx->dirty_background_folios) / 8 - 1;
	if (ctx->dirty_throttle_folios < ctx->dirty_background_folios)
		ctx->dirty_throttle_folios = ctx->dirty_background_folios;
	wtio_ioend_pool_init(ctx);
	pthread_mutex_init(&ctx->wb_lock, NULL);
	pthread_cond_init(&ctx->wb_cond, NULL);
	pthread_cond_init(&ctx->throttle_cond, NULL);
	pthread_cond_init(&ctx->wb_idle_cond, NULL);
	ctx->wb_next_periodic = wtio_now_ns() +
		ctx->cfg.writeback_interval_ms * 1000000ull;
	ctx->wb_kick = wtio_writeback_kick;
	ctx->wb_drop_failed = wtio_writeback_drop_failed;
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
	/* Started writeback is completed by a thread of its own. Without
	 * a channel it is done in full by the caller: slower, still
	 * correct. */
	if (wtio_io_can(&ctx->io, WTIO_IO_CAP_CHANNELS))
		wtio_reaper_start(&ctx->wb_reaper, &ctx->io, 256, WTIO_CHAN_CTX,
				  &ctx->wb_chan_users);
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
	/* Once the last started pass is done. */
	wtio_reaper_stop(&ctx->wb_reaper);
	free(ctx->flushers);
	ctx->flushers = NULL;
	ctx->nr_flushers_running = 0;
	pthread_mutex_destroy(&ctx->wb_lock);
	pthread_cond_destroy(&ctx->wb_cond);
	pthread_cond_destroy(&ctx->throttle_cond);
	pthread_cond_destroy(&ctx->wb_idle_cond);
	wtio_ioend_pool_exit(ctx);
}
