/* SPDX-License-Identifier: MIT */
/*
 * inode_evict.c - a closed inode kept with its cache leaving the
 * context: at the cap, for a descriptor, or with the context.
 *
 * Its dirty data is written back and its size made exact first (not
 * flushed: the kernel's close and exit do not flush either). An error of
 * its write-back, there or by a flusher since its last close, that no
 * handle reported is the kernel's errseq rule carried one step further:
 * a handle opened on the file in the context reports it (errseq.c) while
 * the inode is kept; once the inode is gone the error is the context's,
 * returned by wtio_ctx_destroy (the first one; every failed I/O is also
 * in wtio_stats' writeback_errors).
 */
#include <stdatomic.h>

#include "inode_evict.h"
#include "ctx.h"
#include "errseq.h"
#include "inode.h"
#include "inode_keep.h"
#include "inode_table.h"
#include "sync.h"

void wtio_evict_kept(struct wtio_inode *inode)
{
	struct wtio_ctx *ctx = inode->ctx;
	int ret = wtio_make_durable(inode, 0, -1, 0);
	int err = wtio_errseq_unseen(inode), none = 0;

	/* A failed write is in the errseq word too, as is a flusher's. */
	if (err)
		ret = err;
	if (ret)
		atomic_compare_exchange_strong(&ctx->kept_err, &none, ret);
	wtio_inode_evict(inode);
}

bool wtio_evict_oldest(struct wtio_ctx *ctx)
{
	struct wtio_inode *inode;

	pthread_mutex_lock(&ctx->inodes_lock);
	inode = wtio_keep_take_oldest_locked(ctx);
	pthread_mutex_unlock(&ctx->inodes_lock);
	if (inode)
		wtio_evict_kept(inode);
	return inode != NULL;
}

int wtio_evict_all_kept(struct wtio_ctx *ctx)
{
	while (wtio_evict_oldest(ctx))
		;
	return atomic_load(&ctx->kept_err);
}
