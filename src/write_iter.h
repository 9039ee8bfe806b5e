/* SPDX-License-Identifier: MIT */
/*
 * write_iter.h - one buffered write, folio by folio, for all three write
 * modes: take the file lock, then for each folio begin (span, stable
 * folio, partial blocks) -> copy -> end (uptodate, dirty / writeback /
 * clean, size), then give the lock back.
 */
#ifndef WTIO_WRITE_ITER_H
#define WTIO_WRITE_ITER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "size.h"

struct wtio_inode;
struct wtio_ioend;
struct wtio_iov_iter;
struct wtio_wb_ctl;

/* What write end does with a folio once the data is in it. */
enum wtio_write_mode {
	WTIO_WRITE_DIRTY,	/* write-back: dirty, for the flushers */
	WTIO_WRITE_THROUGH,	/* write-through: under writeback at once, in
				 * the writer's own ioends (wbc) */
	WTIO_WRITE_CLEAN,	/* untorn: the disk has the data already (the
				 * I/O went first, from a bounce buffer) */
};

/* One write of [off, off + len), from wtio_write_init to its unlock. */
struct wtio_write {
	struct wtio_inode *inode;
	off_t off;
	size_t len;		/* may be cut down after the lock (space) */
	size_t done;		/* bytes through write end so far */
	unsigned int flags;	/* WTIO_* of the call */
	enum wtio_write_mode mode;
	bool shared;		/* file lock held shared (WTIO_NOSERIAL) */
	bool claim;		/* make the size move undoable at unlock */
	bool populate;		/* CLEAN: create folios for whole blocks */
	bool extended;		/* i_size moved */
	/* i_size before and after: own_undo, or where the caller keeps
	 * it until the write ends (write-through: its wbc). */
	struct wtio_size_undo *undo, own_undo;
	/* WTIO_WRITE_THROUGH: the writer's batch and the ioend it builds.
	 * With a channel in wbc the writer does not wait for its I/O (a
	 * DONTCACHE write-back write: started writeback without the dirty
	 * list): the I/O's completion thread ends it, and keep_failed gives
	 * the blocks of a failed one back dirty, for fsync to retry and
	 * report, since the write has returned by then. */
	struct wtio_wb_ctl *wbc;
	struct wtio_ioend *cur;
	bool keep_failed;
};

/*
 * The mode of a checked write: flags, plus WTIO_WRITETHROUGH for an
 * adaptive one (WTIO_ADAPTIVE, neither write-through nor untorn already)
 * from the moment a write-back writer would be throttled for as long as
 * that writer would sleep (wtio_dirty_throttle_released).
 */
unsigned int wtio_write_adapt(struct wtio_inode *inode, unsigned int flags);

void wtio_write_init(struct wtio_write *w, struct wtio_inode *inode,
		     off_t off, size_t len, unsigned int flags,
		     enum wtio_write_mode mode);
/*
 * Take the file lock for the write (shared when may_share and the write
 * stays inside i_size, else exclusive), note its end for the size-undo
 * guard and, when it extends the file, clean what a failed write left
 * past i_size. -EAGAIN with WTIO_NOWAIT when that would wait.
 */
int wtio_write_lock(struct wtio_write *w, bool may_share);
/*
 * Copy from it into the cache, folio by folio, from w->done to w->len
 * (write begin, copy, write end). Returns 0, or the error that stopped
 * it; w->done says how far it got. Never fails in WTIO_WRITE_CLEAN.
 */
int wtio_write_iter(struct wtio_write *w, struct wtio_iov_iter *it);
/* Queue the ioend being built, claim the size move if w->claim (so a
 * failure can undo it: wtio_write_finish), and drop the file lock. */
void wtio_write_unlock(struct wtio_write *w);
/* The write is over, its I/O and DSYNC step included: a claimed size
 * move is put back when err is set (a failed write leaves the size
 * where it was). */
void wtio_write_finish(struct wtio_write *w, int err);

/*
 * The write's reservation came back short (fit: bytes, or -errno): 1 to
 * reserve once more, after the file's own space past its end went back
 * (wtio_inode_give_back_tail), 0 not, or -errno with the file lock no
 * longer held. A write holding the lock shared (NOSERIAL) takes it
 * exclusive first (not with WTIO_NOWAIT): w->shared is false then.
 */
int wtio_write_room_again(struct wtio_write *w, ssize_t fit);

#endif
