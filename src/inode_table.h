/* SPDX-License-Identifier: MIT */
/* inode_table.h - the context's open inodes (inode_table.c). */
#ifndef WTIO_INODE_TABLE_H
#define WTIO_INODE_TABLE_H

#include <stdbool.h>

struct wtio_ctx;
struct wtio_inode;

/* Find or create the inode for an open descriptor; consumes fd. */
int wtio_inode_get(struct wtio_ctx *ctx, int fd, bool writable,
		   struct wtio_inode **inodep);
/* Close the backing descriptor and free an inode nobody uses, once no
 * completion uses it. */
void wtio_inode_free(struct wtio_inode *inode);
/* The last user of an inode marked evicting is gone: drop its cache,
 * take it off the flushers' queue, give back space past its end, take it
 * out of the table (an open of the file waits until then: it sets the
 * file up anew afterwards) and free it. */
void wtio_inode_evict(struct wtio_inode *inode);

#endif /* WTIO_INODE_TABLE_H */
