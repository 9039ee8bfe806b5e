/* SPDX-License-Identifier: MIT */
/*
 * chunk_space.h - the arena's free space by chunk (chunk_space.c). All
 * but init and exit under ctx->free_lock.
 */
#ifndef WTIO_CHUNK_SPACE_H
#define WTIO_CHUNK_SPACE_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_ctx;
struct wtio_folio;

/* Every chunk free; 0, or -1 without memory. */
int wtio_chunks_init(struct wtio_ctx *ctx);
void wtio_chunks_exit(struct wtio_ctx *ctx);
/* A folio of units (a power of two up to ctx->chunk_units) off the free
 * space, or NULL. */
struct wtio_folio *wtio_chunks_take(struct wtio_ctx *ctx, uint32_t units);
/* Give a folio's units back: a split chunk whose last unit comes back
 * is free again, for a large folio. */
void wtio_chunks_put(struct wtio_ctx *ctx, struct wtio_folio *folio);
/* Would wtio_chunks_take find a folio of units now? */
bool wtio_chunks_available(struct wtio_ctx *ctx, uint32_t units);

#endif /* WTIO_CHUNK_SPACE_H */
