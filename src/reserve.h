/* SPDX-License-Identifier: MIT */
/*
 * reserve.h - space for dirty data (reserve.c): a write-back write
 * allocates the blocks its dirty data will need before it is accepted
 * (a write-through write too, see wtio_reserve_through),
 * so that a full filesystem refuses the write (ENOSPC, or a short count)
 * instead of the write-back long after it.
 */
#ifndef WTIO_RESERVE_H
#define WTIO_RESERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wtio_inode;

/*
 * Make sure the blocks under [off, off + len) are allocated on disk, and
 * private to this file: blocks shared with a reflink copy are unshared
 * (FALLOC_FL_UNSHARE_RANGE), since their overwrite needs new blocks.
 * Returns how many bytes from off are (len, or fewer when the filesystem
 * filled up part way), or -ENOSPC / -EDQUOT / -EFBIG when not one byte
 * fits. Where the filesystem cannot preallocate it returns len: the
 * write is accepted as before and a lack of space shows at write-back.
 * ahead: an append may reserve a chunk past its end (not for writes
 * that set the exact size at once). Caller holds i_rwsem exclusive.
 */
ssize_t wtio_reserve_write(struct wtio_inode *inode, int64_t off, size_t len,
			   bool ahead);
/*
 * The same for a write-through write, whose I/O fails whole on a lack of
 * space although part of it may land: a write inside one block below
 * the backing file's end returns len at once. dsync: a WTIO_DSYNC write (a chunk ahead only when it
 * ends on a block boundary). shared: the caller holds i_rwsem shared (a
 * write inside i_size), not exclusive.
 */
ssize_t wtio_reserve_through(struct wtio_inode *inode, int64_t off,
			     size_t len, bool dsync, bool shared);
/*
 * The size is about to move from i_size up to size, by a write or a
 * truncate that itself covers what lies from `from` on (its own
 * reservation, or its own direct I/O). The block holding the current
 * end has space only to the end's tail_unit, where its I/O stops while
 * it holds the end; with the end past it, that block is written
 * further. True when that part is not known to be allocated (the
 * caller writes the block back first, if dirty). Caller holds i_rwsem
 * exclusive.
 */
bool wtio_reserve_tail_missing(struct wtio_inode *inode, int64_t from,
			       int64_t size);
/*
 * Give back what is reserved past the end's filesystem block (the rest
 * of the end's block of ours included). Only while that block is
 * neither dirty nor under writeback: its I/O then stops at the end's
 * filesystem block, and a later write past it reserves again (or has
 * the block written back first, wtio_reserve_tail_missing). Caller
 * holds i_rwsem exclusive.
 */
void wtio_reserve_trim_tail(struct wtio_inode *inode);
/* Whether wtio allocated anything past the end's filesystem block.
 * Caller holds i_rwsem. */
bool wtio_reserve_holds_past(struct wtio_inode *inode);
/* The backing file was empty when the inode was set up: start tracking
 * with what the first write would have found, without its SEEK_HOLE and
 * FIEMAP calls. */
void wtio_reserve_init_empty(struct wtio_inode *inode);
/* The backing file was set to size, and nothing lies past it: give back
 * what was reserved there. Caller holds i_rwsem (shared is enough with
 * inode->extend_lock). */
void wtio_reserve_clamp(struct wtio_inode *inode, int64_t size);
/* Give back what was reserved past the end's filesystem block, and
 * forget the shared ranges (last close, every I/O over). */
void wtio_reserve_release(struct wtio_inode *inode);
/*
 * A write of the I/O at [off, end) found no space: on ext4, which frees
 * every block past the end of file when a write that extends it fails,
 * allocate again the blocks of data not on disk yet from `from` (the
 * backing file's size before the I/O; -1: none of that), then the
 * I/O's. Returns 0 when the I/O's blocks are allocated now, else a
 * negative errno: no space for them, or -EOPNOTSUPP where the
 * filesystem cannot allocate ahead. Not under i_rwsem: an I/O's
 * completion, which size changes wait for.
 */
int wtio_reserve_regain(struct wtio_inode *inode, int64_t from,
			int64_t off, int64_t end);
/* Free what the inode keeps for reservation (wtio_inode_free). */
void wtio_reserve_free(struct wtio_inode *inode);

#endif /* WTIO_RESERVE_H */
