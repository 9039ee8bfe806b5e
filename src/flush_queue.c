/* SPDX-License-Identifier: MIT */
/*
 * flush_queue.c - what the flushers are asked to do: the queue of inodes
 * with dirty data (in the order they were dirtied) and the kicks that
 * ask for writeback now.
 */
#include <stdatomic.h>

#include "flush_queue.h"
#include "ctx.h"
#include "inode.h"

#define WB_CREDIT_MAX (1u << 16)

void wtio_wb_queue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	/* wb_lock held */
	if (inode->wb_queued || inode->wb_busy)
		return;
	inode->wb_queued = true;
	atomic_store(&inode->wb_queued_hint, true);
	inode->wb_next = NULL;
	inode->wb_prev = ctx->wb_dirty_tail;
	if (ctx->wb_dirty_tail)
		ctx->wb_dirty_tail->wb_next = inode;
	else
		ctx->wb_dirty_head = inode;
	ctx->wb_dirty_tail = inode;
	/* A kick that found nothing to write is still owed. */
	if (ctx->wb_kicks || ctx->wb_inode_credit)
		pthread_cond_broadcast(&ctx->wb_cond);
}

void wtio_wb_unqueue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	/* wb_lock held */
	if (!inode->wb_queued)
		return;
	if (inode->wb_prev)
		inode->wb_prev->wb_next = inode->wb_next;
	else
		ctx->wb_dirty_head = inode->wb_next;
	if (inode->wb_next)
		inode->wb_next->wb_prev = inode->wb_prev;
	else
		ctx->wb_dirty_tail = inode->wb_prev;
	inode->wb_queued = false;
	atomic_store(&inode->wb_queued_hint, false);
	inode->wb_next = inode->wb_prev = NULL;
}

void wtio_writeback_kick(struct wtio_ctx *ctx)
{
	/* Writers above the background threshold kick on every write: one
	 * kick until a flusher takes it is enough, and a plain load first
	 * keeps the writers from bouncing the flag's line between them. */
	if (atomic_load_explicit(&ctx->wb_kick_pending, memory_order_relaxed) ||
	    atomic_exchange(&ctx->wb_kick_pending, true))
		return;
	pthread_mutex_lock(&ctx->wb_lock);
	ctx->wb_kicks++;
	pthread_cond_broadcast(&ctx->wb_cond);
	pthread_mutex_unlock(&ctx->wb_lock);
}

void wtio_writeback_kick_inodes(struct wtio_ctx *ctx, uint32_t n)
{
	pthread_mutex_lock(&ctx->wb_lock);
	/* Not taken while the thresholds drive the flushers, so it can
	 * build up; more than the kept files' largest cap means "all". */
	ctx->wb_inode_credit = (uint64_t)ctx->wb_inode_credit + n >
			       WB_CREDIT_MAX ? WB_CREDIT_MAX :
			       ctx->wb_inode_credit + n;
	pthread_cond_broadcast(&ctx->wb_cond);
	pthread_mutex_unlock(&ctx->wb_lock);
}

void wtio_writeback_detach_inode(struct wtio_inode *inode)
{
	struct wtio_ctx *ctx = inode->ctx;

	pthread_mutex_lock(&ctx->wb_lock);
	while (inode->wb_busy)
		pthread_cond_wait(&ctx->wb_idle_cond, &ctx->wb_lock);
	wtio_wb_unqueue_inode(ctx, inode);
	pthread_mutex_unlock(&ctx->wb_lock);
}
