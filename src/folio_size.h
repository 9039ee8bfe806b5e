/* SPDX-License-Identifier: MIT */
/*
 * folio_size.h - a file's folio size and block, and the choice of it per
 * file (folio_size.c).
 */
#ifndef WTIO_FOLIO_SIZE_H
#define WTIO_FOLIO_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wtio_inode;

/* Give the inode folios of folio_size bytes: its block and tail unit
 * follow from its geometry (inode->geo, probed). At open (first) a
 * stripe unit that is not whole blocks is dropped; later the change is
 * refused instead. -EOPNOTSUPP: the folio is smaller than a direct I/O
 * block, or (later) the stripe would not fit; nothing changed. */
int wtio_inode_set_shape(struct wtio_inode *inode, uint32_t folio_size,
			 bool first);
/* With WTIO_CONFIG_LARGE_FOLIOS: an I/O of len bytes at off about to
 * start picks the file's folio size when it has no folio cached: the
 * largest power of two not above len (for a read, not above what it
 * finds before the end of file), from the context's folio size up to a
 * large folio. Never waits. */
void wtio_inode_pick_folio_size(struct wtio_inode *inode, int64_t off,
				size_t len, bool write);

#endif /* WTIO_FOLIO_SIZE_H */
