/* SPDX-License-Identifier: MIT */
/*
 * crash.c - wtio_ctx_crash(): a context that dies as its process would,
 * its dirty data and unfixed sizes lost, so a test can replay what the
 * disk kept (replay.c).
 */
#include <pthread.h>

#include "wtio_fault.h"
#include "ctx.h"
#include "flusher.h"
#include "inode.h"
#include "inode_folios.h"
#include "inode_table.h"
#include "setup.h"

void wtio_ctx_crash(struct wtio_ctx *ctx)
{
	struct wtio_inode *inode, *next;

	if (!ctx)
		return;
	/* Flushers first, so nothing new is submitted; the I/O they had
	 * submitted is reaped by them before they exit. */
	wtio_writeback_exit(ctx);
	pthread_mutex_lock(&ctx->inodes_lock);
	for (inode = ctx->inodes; inode; inode = next) {
		next = inode->next;
		wtio_inode_drop_cache(inode);
		wtio_inode_free(inode);
	}
	ctx->inodes = NULL;
	ctx->nr_files = 0;
	pthread_mutex_unlock(&ctx->inodes_lock);
	/* Handles still open are freed with the context, unclosed. */
	wtio_ctx_free(ctx);
}
