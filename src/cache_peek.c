/* SPDX-License-Identifier: MIT */
/*
 * cache_peek.c - the lookups made without the bucket lock: a lockless
 * cache hit's, the inode's own slot (inode_slots.h), else a walk of the
 * hash chain, both only a hint that the reader checks (buffered_read.c);
 * and the reference wtio_folio_lookup first tries to take through the
 * slot.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "cache_peek.h"
#include "ctx.h"
#include "folio.h"
#include "index_hash.h"
#include "inode.h"
#include "inode_slots.h"
#include "test_hooks.h"

/* Chains are short (a bucket per folio); a walk this long has been sent
 * round by concurrent removals and reinsertions: give up, take the lock. */
#define WTIO_PEEK_MAX_STEPS 16

/*
 * Start fetching the first lines of bytes [from, to) of folio f, which
 * the caller is about to copy (the hardware prefetcher follows the copy
 * for the rest: fetching all of them here was measured slower, see
 * docs/BENCHMARKS.md), and f's own first line. Where the bytes lie
 * follows from f's place in the array, without a load of f itself, so
 * the misses on the data and on the folio overlap. Only a hint.
 */
#define WTIO_PEEK_PREFETCH 256u

static void peek_prefetch(struct wtio_ctx *ctx, const struct wtio_folio *f,
			  uint32_t from, uint32_t to)
{
	const char *d = ctx->arena +
		((size_t)(f - ctx->folios) << ctx->folio_shift);
	uint32_t end = to - from > WTIO_PEEK_PREFETCH ?
		       from + WTIO_PEEK_PREFETCH : to;

	__builtin_prefetch(f);
	for (uint32_t o = from & ~63u; o < end; o += 64)
		__builtin_prefetch(d + o);
}

/*
 * The bytes the caller's copy may take from f's data: the caller's span
 * comes from the file's folio size, which may have changed since it
 * looked (folio_size.c), so the folio found can be of another size. A
 * folio of 2^k units starts at a unit that is a multiple of 2^k within
 * its chunk, so a descriptor at the start of a chunk may be a large
 * folio and one at unit p of it at most 2^ctz(p) units, whatever it
 * holds now: a copy within this stays inside the arena (it reads
 * another folio's bytes at worst, which the i_wseq check throws away),
 * and one of a large span out of a folio in the arena's last unit
 * would run off its end.
 */
static uint32_t peek_room(const struct wtio_ctx *ctx,
			  const struct wtio_folio *f)
{
	uint64_t p = (uint64_t)(f - ctx->folios) & (ctx->chunk_units - 1);

	return p ? ctx->folio_size << __builtin_ctzll(p) : ctx->large_size;
}

static bool peek_is(struct wtio_folio *f, struct wtio_inode *inode,
		    uint64_t index, uint32_t to)
{
	return atomic_load_explicit(&f->inode, memory_order_relaxed) == inode &&
	       atomic_load_explicit(&f->index, memory_order_relaxed) == index &&
	       to <= peek_room(inode->ctx, f);
}

struct wtio_folio *wtio_folio_peek(struct wtio_inode *inode, uint64_t index,
				   uint32_t from, uint32_t to)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_folio *f = wtio_slots_peek(inode, index);
	uint64_t h;
	int steps = 0;

	/* The inode's own slot first: no hash, no chain, no collisions. */
	if (f) {
		peek_prefetch(ctx, f, from, to);
		if (peek_is(f, inode, index, to) ||
		    WTIO_TEST_HOOK(WTIO_TP_HIT_IDENTITY, f)) {
			WTIO_TEST_HOOK(WTIO_TP_SLOT_HIT, f);
			return f;
		}
		WTIO_TEST_HOOK(WTIO_TP_SLOT_STALE, f);
	}
	/* No slot (none kept, or a race with its setting): the hash.
	 * Folios live in the arena for the context's lifetime, so a chain
	 * pointer is always safe to follow, even to a folio reused since. */
	h = wtio_index_hash(inode, index);
	f = atomic_load_explicit(&ctx->index.buckets[h & ctx->index.mask],
				 memory_order_acquire);
	/* Its head is the folio wanted when there is no collision. */
	if (f)
		peek_prefetch(ctx, f, from, to);
	for (; f && steps < WTIO_PEEK_MAX_STEPS;
	     f = atomic_load_explicit(&f->hash_next, memory_order_acquire), steps++) {
		if (peek_is(f, inode, index, to))
			return f;
	}
	return NULL;
}

/*
 * The first half of the lookup without the bucket lock (the kernel's
 * filemap_get_entry(); the second half, the check that the slot still
 * names the folio, is wtio_folio_lookup's in cache.c, which owns the
 * put): the folio the inode's slot names, referenced only while it
 * still has a reference (an eviction freezes the count at 0 while it
 * unhashes). A reference taken before the freeze makes the freeze fail;
 * one taken after the count came back (the evictor's release add, after
 * it cleared the slot, read by our acquire) sees the slot cleared.
 */
struct wtio_folio *wtio_folio_slot_tryget(struct wtio_inode *inode,
					  uint64_t index)
{
	struct wtio_folio *f = wtio_slots_peek(inode, index);

	if (!f)
		return NULL;
	/* The caller copies into or out of the folio next: start that
	 * miss together with the descriptor's (its place in the arena
	 * follows from f's in the array, without a load of f). */
	__builtin_prefetch(inode->ctx->arena +
			   ((size_t)(f - inode->ctx->folios) <<
			    inode->ctx->folio_shift), 1);
	return wtio_folio_tryget(f) ? f : NULL;
}
