/* SPDX-License-Identifier: MIT */
/*
 * size.h - the file's two sizes: the disk-size gate that every change of
 * the backing file's size and every direct write that may extend it
 * pass, and the undo of a failed write's extension of i_size.
 */
#ifndef WTIO_SIZE_H
#define WTIO_SIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct wtio_inode;

/* Make the backing file's size equal i_size. Caller holds i_rwsem.
 * wait_io false: from a completion thread, which must not wait for the
 * I/O it completes (only a size increase would need to). */
int wtio_inode_sync_size(struct wtio_inode *inode, bool wait_io);
int wtio_inode_set_disk_size(struct wtio_inode *inode, int64_t size,
			     bool wait_io);
/* Around each direct write: begin returns whether the write was counted
 * as one that may extend the backing file (it may wait at the gate; the
 * caller must have reaped its own extending writes, reap_own does so);
 * end takes that answer and the bytes written (res > 0) at off. */
bool wtio_inode_dio_write_begin(struct wtio_inode *inode, int64_t off,
				int64_t len, void (*reap_own)(void *),
				void *arg);
void wtio_inode_dio_write_end(struct wtio_inode *inode, bool extending,
			      int64_t off, ssize_t res);
/* Cut the cache at size: drop folios wholly past it, zero the tail of
 * the one it ends in (truncate; file lock held exclusive). */
void wtio_inode_cut_cache(struct wtio_inode *inode, int64_t size);
/* Before a write or truncate moves i_size up (exclusive lock held):
 * clean what a failed extending write left past i_size. -EAGAIN with
 * nowait when there is something to clean. */
int wtio_inode_prepare_extend(struct wtio_inode *inode, bool nowait);
/* What a write that may extend i_size needs to undo that if it fails. */
struct wtio_size_undo {
	int64_t before, after;	/* i_size before and after its copy */
	uint64_t snap;		/* tail_hits after its copy */
};
/* Under the file lock, before looking at i_size: a write to [.., end). */
void wtio_inode_tail_note(struct wtio_inode *inode, int64_t end);
/* Under the exclusive lock, after a copy that moved i_size from
 * u->before to u->after: make the extension undoable (u->snap). */
void wtio_inode_tail_claim(struct wtio_inode *inode,
			   struct wtio_size_undo *u);
/* The write is over (its I/O and DSYNC step): if it failed, put the size
 * back unless another write or truncate moved it, or wrote past its old
 * end, since. Blocks for the exclusive lock unless in_reaper. Nothing
 * to do unless the write claimed an extension. */
void wtio_inode_tail_end(struct wtio_inode *inode,
			 const struct wtio_size_undo *u, bool failed,
			 bool in_reaper);

#endif /* WTIO_SIZE_H */
