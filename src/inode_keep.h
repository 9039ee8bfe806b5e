/* SPDX-License-Identifier: MIT */
/* inode_keep.h - closed inodes kept with their cache (inode_keep.c). */
#ifndef WTIO_INODE_KEEP_H
#define WTIO_INODE_KEEP_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_ctx;
struct wtio_inode;

/* The last handle of inode closed: it stays in the table, newest on the
 * kept list. Returns a kept inode to evict now (marked evicting, off the
 * list), or NULL; *write_inodes: how many dirty inodes the flushers
 * should write back now (wtio_writeback_kick_inodes, once the lock is
 * dropped), 0 for none. inodes_lock held. */
struct wtio_inode *wtio_keep_locked(struct wtio_ctx *ctx,
				    struct wtio_inode *inode,
				    uint32_t *write_inodes);
/* An open found inode in the table: take it off the kept list if it was
 * there. inodes_lock held. */
void wtio_keep_revive_locked(struct wtio_ctx *ctx, struct wtio_inode *inode);
/* The oldest kept inode, marked evicting and off the list, or NULL.
 * inodes_lock held. */
struct wtio_inode *wtio_keep_take_oldest_locked(struct wtio_ctx *ctx);
/* Wait until an evicting inode has left the table. inodes_lock held;
 * it is dropped while waiting, so the caller looks the file up again. */
void wtio_keep_wait_evicted_locked(struct wtio_ctx *ctx);

#endif /* WTIO_INODE_KEEP_H */
