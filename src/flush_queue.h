/* SPDX-License-Identifier: MIT */
/* flush_queue.h - the flushers' work: the queue of inodes with dirty
 * data and the kick that asks for writeback now (flush_queue.c). */
#ifndef WTIO_FLUSH_QUEUE_H
#define WTIO_FLUSH_QUEUE_H

#include <stdint.h>

struct wtio_ctx;
struct wtio_inode;

/* Queue an inode with dirty data, or take it off; ctx->wb_lock held.
 * An inode a flusher is busy with is queued again by that flusher. */
void wtio_wb_queue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode);
void wtio_wb_unqueue_inode(struct wtio_ctx *ctx, struct wtio_inode *inode);
/* Wake flushers. */
void wtio_writeback_kick(struct wtio_ctx *ctx);
/* Ask the flushers to write back n more queued inodes whole, oldest
 * dirtied first, whatever the dirty thresholds say. */
void wtio_writeback_kick_inodes(struct wtio_ctx *ctx, uint32_t n);
/* Wait until no flusher works on inode and take it off their list. */
void wtio_writeback_detach_inode(struct wtio_inode *inode);

#endif /* WTIO_FLUSH_QUEUE_H */
