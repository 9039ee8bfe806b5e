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

#endif /* WTIO_CACHE_PEEK_H */
