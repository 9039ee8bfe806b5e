/* SPDX-License-Identifier: MIT */
/* inode_folios.h - walking the folios an inode caches (inode_folios.c). */
#ifndef WTIO_INODE_FOLIOS_H
#define WTIO_INODE_FOLIOS_H

#include <stdint.h>

struct wtio_folio;
struct wtio_inode;

/* Referenced folios of the inode with index >= first (malloc'd array). */
struct wtio_folio **wtio_inode_collect(struct wtio_inode *inode,
				       uint64_t first, uint64_t *nr);
/* Lock each folio of the inode from index first on that is still its
 * own, wait for its I/O and hand it to fn; then unlock and release it. */
void wtio_inode_for_each_folio(struct wtio_inode *inode, uint64_t first,
			       void (*fn)(struct wtio_inode *,
					  struct wtio_folio *, void *),
			       void *arg);
/* Drop every folio of the inode (close, crash), clean or not, after
 * waiting for the I/O of each. */
void wtio_inode_drop_cache(struct wtio_inode *inode);

#endif /* WTIO_INODE_FOLIOS_H */
