/* SPDX-License-Identifier: MIT */
/* cache_peek.h - the lookups without the bucket lock (cache_peek.c). */
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

/* The folio cached at index, referenced, found through the inode's slot
 * without the bucket lock; NULL: ask the hash under its lock. */
struct wtio_folio *wtio_folio_lookup_slot(struct wtio_inode *inode,
					  uint64_t index);

#endif /* WTIO_CACHE_PEEK_H */
