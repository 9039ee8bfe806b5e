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

/* The folio the inode's slot names for index, referenced without the
 * bucket lock if its count was above zero, or NULL. Not yet checked:
 * the caller sees that the slot still names it (wtio_folio_lookup). */
struct wtio_folio *wtio_folio_slot_tryget(struct wtio_inode *inode,
					  uint64_t index);

#endif /* WTIO_CACHE_PEEK_H */
