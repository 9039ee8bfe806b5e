/* SPDX-License-Identifier: MIT */
/*
 * cache.h - the index of cached folios, their references, allocation
 * and reclaim (cache.c).
 */
#ifndef WTIO_CACHE_H
#define WTIO_CACHE_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_ctx;
struct wtio_folio;
struct wtio_inode;

int wtio_cache_init(struct wtio_ctx *ctx);
void wtio_cache_exit(struct wtio_ctx *ctx);
/* A reference keeps a folio where it is; the last put frees it. */
void wtio_folio_get(struct wtio_folio *folio);
void wtio_folio_put(struct wtio_ctx *ctx, struct wtio_folio *folio);
/* Put n references; those freed go on the free list in the order of v,
 * together (one lock, one wake-up): an allocator waiting meanwhile
 * cannot take them one by one in the order they come back. */
void wtio_folio_put_many(struct wtio_ctx *ctx, struct wtio_folio *const *v,
			 int n);
/* Referenced cached folio or NULL. Marks it referenced for CLOCK. */
struct wtio_folio *wtio_folio_lookup(struct wtio_inode *inode, uint64_t index);
/* The same without the mark: for writeback, which is no use of the data. */
struct wtio_folio *wtio_folio_find(struct wtio_inode *inode, uint64_t index);
/* Insert a new locked folio nf at index, or return the one already
 * there (referenced, not locked) and give back nf (folio_alloc.c). */
struct wtio_folio *wtio_folio_insert(struct wtio_inode *inode,
				     uint64_t index, struct wtio_folio *nf);
/* Remove a locked, referenced, clean, not-under-writeback folio from the
 * cache; the caller still holds its reference and lock. */
void wtio_folio_remove(struct wtio_folio *folio);
/* WTIO_DONTCACHE: drop a folio the caller holds one reference to, now
 * that its I/O or copy is done, unless someone else uses it or it was
 * dirtied again. Returns whether it left the cache. */
bool wtio_folio_drop_behind(struct wtio_ctx *ctx, struct wtio_folio *folio);
/* CLOCK's look at one folio (reclaim.c): second chance, then evict if
 * idle. An evicted folio is left with the reference taken here, for the
 * caller to put. */
bool wtio_folio_try_evict(struct wtio_ctx *ctx, struct wtio_folio *f);
/* Wake allocators waiting for space. */
void wtio_cache_wake_space(struct wtio_ctx *ctx);
uint64_t wtio_cache_nr_cached(struct wtio_ctx *ctx);

#endif /* WTIO_CACHE_H */
