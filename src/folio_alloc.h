/* SPDX-License-Identifier: MIT */
/* folio_alloc.h - new folios for the index (folio_alloc.c). */
#ifndef WTIO_FOLIO_ALLOC_H
#define WTIO_FOLIO_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_folio;
struct wtio_inode;

/* Find or create; returns the folio referenced and LOCKED, its identity
 * checked. *created says whether it is new (no block uptodate). With
 * nowait, returns -EAGAIN instead of sleeping. */
int wtio_folio_get_locked(struct wtio_inode *inode, uint64_t index,
			  bool nowait, struct wtio_folio **foliop,
			  bool *created);
/* Create a new locked folio at index if absent and one can be had
 * without waiting; NULL otherwise (readahead). */
struct wtio_folio *wtio_folio_try_create(struct wtio_inode *inode,
					 uint64_t index);
/* The same from free folios only, evicting none (drop-behind reads). */
struct wtio_folio *wtio_folio_try_create_free(struct wtio_inode *inode,
					      uint64_t index);

#endif /* WTIO_FOLIO_ALLOC_H */
