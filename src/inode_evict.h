/* SPDX-License-Identifier: MIT */
/* inode_evict.h - a kept closed inode leaving the context (inode_evict.c). */
#ifndef WTIO_INODE_EVICT_H
#define WTIO_INODE_EVICT_H

#include <stdbool.h>

struct wtio_ctx;
struct wtio_inode;

/* Write back a kept inode marked evicting, make its size exact, keep an
 * error no handle reported for wtio_ctx_destroy, and evict it. */
void wtio_evict_kept(struct wtio_inode *inode);
/* Evict the oldest kept inode, for a descriptor: whether there was one. */
bool wtio_evict_oldest(struct wtio_ctx *ctx);
/* Evict every kept inode: 0, or the first write-back error of a closed
 * file that no handle reported. */
int wtio_evict_all_kept(struct wtio_ctx *ctx);

#endif /* WTIO_INODE_EVICT_H */
