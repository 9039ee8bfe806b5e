/* SPDX-License-Identifier: MIT */
/*
 * ioend_pool.c - the ioends a context keeps for reuse, so that a flusher
 * does not malloc 14 KiB per I/O.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ioend_priv.h"
#include "ctx.h"

/* ioends the context keeps for reuse: enough for every flusher's and a
 * few writers' I/Os in flight (a flusher keeps 64). The store is only
 * used when its lock is free: writers of their own I/O (write-through)
 * must not queue on it, and malloc serves them as before. */
#define IOEND_POOL_MAX 128

struct wtio_ioend *wtio_ioend_alloc(struct wtio_ctx *ctx)
{
	struct wtio_ioend *io = NULL;

	if (!pthread_mutex_trylock(&ctx->ioend_lock)) {
		io = ctx->ioend_pool;
		if (io) {
			ctx->ioend_pool = io->io_next;
			ctx->nr_ioend_pool--;
		}
		pthread_mutex_unlock(&ctx->ioend_lock);
	}
	/* malloc, not calloc: the vector arrays are ~14 KiB and only their
	 * first io_nr_vecs entries are read. */
	return io ? io : malloc(sizeof(*io));
}

void wtio_ioend_free(struct wtio_ctx *ctx, struct wtio_ioend *io)
{
	if (!pthread_mutex_trylock(&ctx->ioend_lock)) {
		if (ctx->nr_ioend_pool < IOEND_POOL_MAX) {
			io->io_next = ctx->ioend_pool;
			ctx->ioend_pool = io;
			ctx->nr_ioend_pool++;
			io = NULL;
		}
		pthread_mutex_unlock(&ctx->ioend_lock);
	}
	free(io);
}

void wtio_ioend_pool_init(struct wtio_ctx *ctx)
{
	pthread_mutex_init(&ctx->ioend_lock, NULL);
}

void wtio_ioend_pool_exit(struct wtio_ctx *ctx)
{
	struct wtio_ioend *io;

	while ((io = ctx->ioend_pool)) {
		ctx->ioend_pool = io->io_next;
		free(io);
	}
	ctx->nr_ioend_pool = 0;
	pthread_mutex_destroy(&ctx->ioend_lock);
}
