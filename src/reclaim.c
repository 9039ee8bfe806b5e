/* SPDX-License-Identifier: MIT */
/*
 * reclaim.c - CLOCK: over units for a small folio, over chunks for a
 * large one (docs/DESIGN.md, "The cache" and "A file's folio size").
 */
#include "cache.h"
#include "ctx.h"
#include "folio.h"
#include "reclaim.h"

/* Folios one CLOCK pass evicts at most; at least a chunk's worth. */
#define RECLAIM_BATCH 64

/* Nothing can be evicted when every unit is dirty or under writeback:
 * sweeping the whole arena, twice, under the lock every allocator
 * needs, only to learn that would cost more than the wait for
 * writeback that follows. */
static bool reclaim_all_busy(struct wtio_ctx *ctx)
{
	return (uint64_t)(atomic_load_explicit(&ctx->nr_dirty,
					       memory_order_relaxed) +
			  atomic_load_explicit(&ctx->nr_writeback,
					       memory_order_relaxed)) >=
	       ctx->nr_folios;
}

/*
 * One CLOCK pass: evict up to want units, looking at each at most twice.
 * They go back to the free space together and in address order (the hand
 * sweeps the arena upwards), lowest first out: the next run of new
 * folios, a readahead window or a stream's writes, is consecutive memory
 * again, one buffer an I/O, instead of the reverse order one at a time
 * would give. A large folio's other units are never in use themselves:
 * the scan passes them.
 */
uint64_t wtio_reclaim(struct wtio_ctx *ctx, uint64_t want)
{
	struct wtio_folio *v[RECLAIM_BATCH];
	uint64_t got = 0, units = 0, scanned = 0;

	if (reclaim_all_busy(ctx))
		return 0;
	pthread_mutex_lock(&ctx->evict_lock);
	/* want is in units: a large folio is as much as 16 small ones, and
	 * one small miss must not push out 32 of them. */
	while (units < want && got < RECLAIM_BATCH &&
	       scanned < 2 * ctx->nr_folios) {
		struct wtio_folio *f = &ctx->folios[ctx->clock_hand];

		ctx->clock_hand = (ctx->clock_hand + 1) % ctx->nr_folios;
		scanned++;
		if (wtio_folio_try_evict(ctx, f)) {
			v[got++] = f;
			units += f->units;
		}
	}
	pthread_mutex_unlock(&ctx->evict_lock);
	wtio_folio_put_many(ctx, v, (int)got);
	return got;
}

/* Could CLOCK take every folio of a chunk now? Gives each a look, and
 * its second chance, as the unit scan would. */
static bool chunk_evictable(struct wtio_ctx *ctx, uint64_t c)
{
	struct wtio_folio *f = &ctx->folios[c << ctx->chunk_shift];
	bool ok = true;

	/* A large folio's other units and free units have no reference. */
	for (uint32_t k = 0; k < ctx->chunk_units; k++, f++) {
		uint32_t s = atomic_load_explicit(&f->state,
						  memory_order_relaxed);

		if (atomic_load_explicit(&f->refcount, memory_order_relaxed) <= 0)
			continue;	/* free, or being freed */
		if (s & (FOLIO_LOCKED | FOLIO_DIRTY | FOLIO_WRITEBACK))
			return false;
		if (s & FOLIO_REFERENCED) {
			wtio_folio_clear_flag(f, FOLIO_REFERENCED);
			ok = false;
		}
	}
	return ok;
}

/*
 * CLOCK over chunks, for a large folio: a chunk comes free only when all
 * its folios leave, so evicting folios one by one wherever the unit
 * hand stands would free units all over the arena and whole chunks
 * rarely. Takes every folio of the first chunk whose folios are all
 * clean, idle and not recently used. Returns whether it evicted any.
 */
bool wtio_reclaim_chunk(struct wtio_ctx *ctx)
{
	struct wtio_folio *v[64];
	uint64_t scanned = 0;
	int got = 0;

	if (reclaim_all_busy(ctx))
		return false;
	pthread_mutex_lock(&ctx->evict_lock);
	while (!got && scanned++ < 2 * ctx->nr_chunks) {
		uint64_t c = ctx->chunk_hand;
		struct wtio_folio *f;

		ctx->chunk_hand = (c + 1) % ctx->nr_chunks;
		if (!chunk_evictable(ctx, c))
			continue;
		f = &ctx->folios[c << ctx->chunk_shift];
		for (uint32_t k = 0; k < ctx->chunk_units; k++, f++)
			if (wtio_folio_try_evict(ctx, f))
				v[got++] = f;
	}
	pthread_mutex_unlock(&ctx->evict_lock);
	wtio_folio_put_many(ctx, v, got);
	return got > 0;
}
