/* SPDX-License-Identifier: MIT */
/*
 * flush.h - the flushers: the queue of inodes with dirty data, the kick
 * that wakes them, their threads, and the completion thread of started
 * writeback.
 */
#ifndef WTIO_FLUSH_H
#define WTIO_FLUSH_H

struct wtio_ctx;
struct wtio_inode;

int wtio_writeback_init(struct wtio_ctx *ctx);
void wtio_writeback_exit(struct wtio_ctx *ctx);
/* Wake flushers. */
void wtio_writeback_kick(struct wtio_ctx *ctx);
/* Wait until no flusher works on inode and take it off their list. */
void wtio_writeback_detach_inode(struct wtio_inode *inode);

#endif /* WTIO_FLUSH_H */
