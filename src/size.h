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

/* The backing file's size without querying its times (size.c). */
int wtio_backing_size(int fd, int64_t *size);

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
/* What failed writes landed past i_size (its undo moved it back): cut
 * the backing file to i_size, durably. wait_io false (a completion
 * thread): only while no extending write is in flight, else later.
 * Caller holds i_rwsem (shared is enough). 0 or a negative errno. */
int wtio_inode_cut_disk(struct wtio_inode *inode, bool wait_io);
/* What failed writes may have left past i_size (eof_stale), cut from
 * the backing file now if that needs no wait: by the completion thread
 * of the undo, and by every holder of the exclusive file lock after
 * releasing it, since the undo's thread cannot wait for that lock (it
 * sets the flag before it tries the lock, the holder releases the lock
 * before it looks at the flag: one of the two makes the cut). No locks
 * held, no I/O of the caller's own in flight. */
void wtio_inode_cut_pending(struct wtio_inode *inode);
/* Before a write or truncate moves i_size up (exclusive lock held):
 * clean what a failed extending write left past i_size. -EAGAIN with
 * nowait when there is something to clean. */
int wtio_inode_prepare_extend(struct wtio_inode *inode, bool nowait);
/*
 * The undo of a failed write's extension of i_size (size_undo.c). A
 * failed write leaves the size where it was, as a failed direct write in
 * the kernel does: when it fails, i_size goes back to the end of what
 * succeeded or is still in flight, never below anything acknowledged.
 */
struct wtio_size_undo {
	int64_t before, after;	/* i_size before and after its copy */
	/* In the inode's list of extensions in flight (tail_lock). */
	struct wtio_size_undo *prev, *next;
	bool listed;
};
/* Under the file lock (excl: exclusive), before looking at i_size: a
 * write to [.., end). An exclusive writer then calls tail_claim before
 * it unlocks, whatever happened. A shared one (its I/O still to come)
 * may be put in flight as u: it ends with tail_end, or with tail_drop
 * when it goes exclusive after all. */
void wtio_inode_tail_note(struct wtio_inode *inode, struct wtio_size_undo *u,
			  int64_t end, bool excl);
void wtio_inode_tail_drop(struct wtio_inode *inode, struct wtio_size_undo *u);
/* Under the exclusive lock, at its end: the write put data up to
 * written (0: none) into the cache; claim: a write whose I/O (or DSYNC
 * step) is still to come: its move of i_size from u->before to
 * u->after (if any) becomes undoable, and its bytes count only once it
 * succeeds, until wtio_inode_tail_end. */
void wtio_inode_tail_claim(struct wtio_inode *inode,
			   struct wtio_size_undo *u, bool claim,
			   int64_t written);
/* The claimed write is over (its I/O and DSYNC step): if it failed, the
 * size goes back over what it added unless something acknowledged or
 * still in flight lies there. Blocks for the exclusive lock (to cut what
 * it left past the size) unless in_reaper. Nothing to do unless the
 * write claimed an extension. */
void wtio_inode_tail_end(struct wtio_inode *inode,
			 struct wtio_size_undo *u, bool failed,
			 bool in_reaper);
/* The same for a write cut short: it acknowledged [.., acked) and
 * failed past it, where the size goes back as for a failed write. */
void wtio_inode_tail_end_short(struct wtio_inode *inode,
			       struct wtio_size_undo *u, int64_t acked,
			       bool in_reaper);
/* Truncate (exclusive lock held, before it looks at the size): it
 * decides the size, so no extension in flight is undone after it. */
void wtio_inode_tail_reset(struct wtio_inode *inode);

#endif /* WTIO_SIZE_H */
