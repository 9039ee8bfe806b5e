/* SPDX-License-Identifier: MIT */
/*
 * reserve_map.h - what reserve.c shares with its two helpers: the
 * extent-map side (reserve_map.c: the file's shared ranges, and which of
 * its blocks are allocated already) and reserve_regain.c.
 */
#ifndef WTIO_RESERVE_MAP_H
#define WTIO_RESERVE_MAP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "inode.h"

/* inode->resv_state: not looked yet, tracked, no fallocate here. */
#define RESV_UNKNOWN	0
#define RESV_TRACK	1
#define RESV_OFF	(-1)

static inline bool wtio_resv_nospace(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

/* Reservation granule: the filesystem block, at least our block. */
static inline int64_t wtio_resv_unit(const struct wtio_inode *inode)
{
	uint32_t u = inode->geo.blksize;

	if (u < inode->block_size || (u & (u - 1)))
		u = inode->block_size;
	return u;
}

/* First write: note the shared ranges, and extend resv_end over the
 * blocks that follow it without a gap, up to the size. */
void wtio_resv_map_probe(struct wtio_inode *inode);
/* Where the blocks from `from` on stop being allocated and private, up
 * to `to` (from itself when the first is not). */
int64_t wtio_resv_allocated_from(struct wtio_inode *inode, int64_t from,
				 int64_t to);
/* The first shared range left in [cur, b), clipped to it, as [*s, *e). */
bool wtio_resv_shared_next(const struct wtio_inode *inode, int64_t cur,
			   int64_t b, int64_t *s, int64_t *e);
/* [s, e), found by wtio_resv_shared_next, is private now. */
void wtio_resv_shared_done(struct wtio_inode *inode, int64_t s, int64_t e);
/* The file was cut at size: nothing is shared past it. */
void wtio_resv_shared_clamp(struct wtio_inode *inode, int64_t size);
/* Forget the shared ranges. */
void wtio_resv_shared_free(struct wtio_inode *inode);

#endif /* WTIO_RESERVE_MAP_H */
