/* SPDX-License-Identifier: MIT */
/* cache_peek.h - the lockless lookup of a cache hit (cache_peek.c). */
#ifndef WTIO_CACHE_PEEK_H
#define WTIO_CACHE_PEEK_H

#include <stdint.h>

struct wtio_folio;
struct wtio_inode;

/* The folio cached at index, without lock or reference: only a hint, to
 * be checked against the folio's seq (see struct wtio_folio). Starts
 * fetching its bytes [from, to), which the caller will copy. */
struct wtio_folio *wtio_folio_peek(struct wtio_inode *inode, uint64_t index,
				   uint32_t from, uint32_t to);

/* Folios a write's prefetch looks ahead for, at most. */
#define WTIO_PREFETCH_MAX_FOLIOS 16
/*
 * Start fetching what the locked lookups (wtio_folio_lookup) of folios
 * [index, index + nr) will read: their buckets, bucket locks and, where
 * the inode's slots name them, the folios. A random write of several
 * folios otherwise waits for two cache misses per folio, one after the
 * other. Only a hint: nothing is locked or referenced.
 */
void wtio_folio_prefetch_lookup(struct wtio_inode *inode, uint64_t index,
				uint64_t nr);

#endif /* WTIO_CACHE_PEEK_H */
