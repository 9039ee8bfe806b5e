/* SPDX-License-Identifier: MIT */
/*
 * chunk_space.c - the free space of the arena, by chunk: a stack of
 * free chunks, and per folio size a list of the chunks split into folios
 * of that size with a free slot, each with a mask of its free slots
 * (docs/DESIGN.md, "A file's folio size").
 */
#include <stdlib.h>

#include "chunk_space.h"
#include "ctx.h"
#include "folio.h"

int wtio_chunks_init(struct wtio_ctx *ctx)
{
	uint64_t i;

	ctx->nr_chunks = ctx->nr_folios >> ctx->chunk_shift;
	ctx->chunks = calloc(ctx->nr_chunks, sizeof(*ctx->chunks));
	if (!ctx->chunks)
		return -1;
	/* Free chunks stacked in address order, so that a fresh cache
	 * hands out consecutive memory. */
	for (i = 0; i < WTIO_CHUNK_CLASSES; i++)
		ctx->partial_chunks[i] = WTIO_CHUNK_NONE;
	ctx->free_chunks = WTIO_CHUNK_NONE;
	for (i = ctx->nr_chunks; i-- > 0;) {
		ctx->chunks[i].state = WTIO_CHUNK_FREE;
		ctx->chunks[i].next = ctx->free_chunks;
		ctx->free_chunks = i;
	}
	return 0;
}

void wtio_chunks_exit(struct wtio_ctx *ctx)
{
	free(ctx->chunks);
	ctx->chunks = NULL;
}

static void partial_add(struct wtio_ctx *ctx, uint64_t c)
{
	struct wtio_chunk *ch = &ctx->chunks[c];
	uint64_t *head = &ctx->partial_chunks[ch->cls];

	ch->prev = WTIO_CHUNK_NONE;
	ch->next = *head;
	if (ch->next != WTIO_CHUNK_NONE)
		ctx->chunks[ch->next].prev = c;
	*head = c;
}

static void partial_del(struct wtio_ctx *ctx, uint64_t c)
{
	struct wtio_chunk *ch = &ctx->chunks[c];

	if (ch->prev != WTIO_CHUNK_NONE)
		ctx->chunks[ch->prev].next = ch->next;
	else
		ctx->partial_chunks[ch->cls] = ch->next;
	if (ch->next != WTIO_CHUNK_NONE)
		ctx->chunks[ch->next].prev = ch->prev;
}

static void chunk_push_free(struct wtio_ctx *ctx, uint64_t c)
{
	ctx->chunks[c].state = WTIO_CHUNK_FREE;
	ctx->chunks[c].next = ctx->free_chunks;
	ctx->free_chunks = c;
}

/* Every slot of a chunk split into folios of 1 << cls units. */
static uint64_t chunk_all(const struct wtio_ctx *ctx, uint32_t cls)
{
	uint32_t slots = ctx->chunk_units >> cls;

	return slots == 64 ? ~0ull : (1ull << slots) - 1;
}

void wtio_chunks_put(struct wtio_ctx *ctx, struct wtio_folio *folio)
{
	uint64_t u = (uint64_t)(folio - ctx->folios);
	uint64_t c = u >> ctx->chunk_shift;
	struct wtio_chunk *ch = &ctx->chunks[c];

	ctx->nr_free += folio->units;
	if (ch->state == WTIO_CHUNK_WHOLE) {
		chunk_push_free(ctx, c);
		return;
	}
	if (!ch->free_mask)
		partial_add(ctx, c);
	ch->free_mask |= 1ull << ((u & (ctx->chunk_units - 1)) >> ch->cls);
	if (ch->free_mask == chunk_all(ctx, ch->cls)) {
		partial_del(ctx, c);
		chunk_push_free(ctx, c);
	}
}

/* Folios smaller than a chunk fill split chunks of their size before a
 * free chunk is split, which keeps whole chunks for large folios and
 * for the other sizes. */
struct wtio_folio *wtio_chunks_take(struct wtio_ctx *ctx, uint32_t units)
{
	uint32_t cls = (uint32_t)__builtin_ctz(units);
	uint64_t c, u;
	struct wtio_chunk *ch;

	c = units == ctx->chunk_units ? WTIO_CHUNK_NONE :
					 ctx->partial_chunks[cls];
	if (c == WTIO_CHUNK_NONE) {
		c = ctx->free_chunks;
		if (c == WTIO_CHUNK_NONE)
			return NULL;
		ch = &ctx->chunks[c];
		ctx->free_chunks = ch->next;
		if (units == ctx->chunk_units) {
			ch->state = WTIO_CHUNK_WHOLE;
			u = c << ctx->chunk_shift;
			goto out;
		}
		ch->state = WTIO_CHUNK_SPLIT;
		ch->cls = cls;
		ch->free_mask = chunk_all(ctx, cls);
		partial_add(ctx, c);
	}
	ch = &ctx->chunks[c];
	u = (uint64_t)__builtin_ctzll(ch->free_mask) << cls;
	ch->free_mask &= ch->free_mask - 1;
	if (!ch->free_mask)
		partial_del(ctx, c);
	u += c << ctx->chunk_shift;
out:
	ctx->nr_free -= units;
	ctx->folios[u].units = units;
	return &ctx->folios[u];
}

bool wtio_chunks_available(struct wtio_ctx *ctx, uint32_t units)
{
	return ctx->free_chunks != WTIO_CHUNK_NONE ||
	       (units < ctx->chunk_units &&
		ctx->partial_chunks[__builtin_ctz(units)] != WTIO_CHUNK_NONE);
}
