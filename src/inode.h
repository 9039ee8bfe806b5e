/* SPDX-License-Identifier: MIT */
/*
 * inode.h - the cached file (inode) every open handle (file) of it
 * shares: its size, its file lock, its error record, and the pins that
 * keep it alive for completions still to run.
 */
#ifndef WTIO_INODE_H
#define WTIO_INODE_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "folio_list.h"
#include "geometry.h"

struct wtio_ctx;
struct wtio_folio;
struct wtio_resv_cow;
struct wtio_size_undo;
struct wtio_slot_dir;

struct wtio_inode {
	struct wtio_ctx *ctx;
	dev_t dev;
	ino_t ino;
	int fd;			/* O_DIRECT; writable when any handle is */
	bool fd_writable;
	int refs;		/* handles, under ctx->inodes_lock */
	struct wtio_inode *next, *prev;	/* ctx->inodes */
	struct wtio_inode *hash_next;	/* ctx->inode_hash */
	/* Closed and kept with its cache (WTIO_CONFIG_KEEP_CLOSED,
	 * inode_keep.c): on ctx's kept list, oldest first; evicting while
	 * it leaves the table (an open of it waits). Under inodes_lock;
	 * kept is read without it by the flushers, as a hint. */
	_Atomic bool kept;
	bool evicting;
	struct wtio_inode *kept_prev, *kept_next;

	/* The i_rwsem analogue: writes exclusive, reads shared. An
	 * exclusive hold is taken and released through wtio_rwsem_lock and
	 * wtio_rwsem_unlock only (they keep i_wseq). */
	pthread_rwlock_t i_rwsem;
	/* A seqcount over i_rwsem's exclusive holds: odd while a holder
	 * has it exclusive, written by that holder only. A read served
	 * wholly from the cache skips the lock when it finds the count
	 * even before and the same after (buffered_read.c; docs/DESIGN.md,
	 * "Reads without the file lock"). */
	_Atomic uint32_t i_wseq;
	/* Size as wtio sees it; moves in the write path. */
	_Atomic int64_t i_size;
	/* The backing file was extended to this size ahead of appending
	 * write-through writes (0: not); reset when the size is made exact. */
	_Atomic int64_t size_ahead;
	/*
	 * Every change of the backing file's size goes through
	 * wtio_inode_set_disk_size, which first waits out direct writes that
	 * may move the file's end (those ending past disk_size_lb, a lower
	 * bound of its size) and holds new ones at the gate while it runs.
	 */
	_Atomic int64_t disk_size_lb;
	_Atomic int32_t nr_dio_extending;
	_Atomic int32_t extend_gate;	/* size changes in progress */
	pthread_mutex_t extend_lock;
	pthread_cond_t extend_cond;

	struct wtio_geometry geo;
	/*
	 * The file's shape: its folio size (the context's unit, or a large
	 * folio for a file streamed in large I/Os: folio_size.c) and the
	 * per-block state's block. Changed only while the file has no
	 * cached folio, under i_rwsem exclusive (so inside an i_wseq
	 * write section): atomics for the paths that read them without
	 * the lock, which find no folio of the old shape to act on.
	 */
	_Atomic uint32_t block_size;
	_Atomic uint32_t block_shift;
	_Atomic uint32_t blocks_per_folio;
	_Atomic uint32_t folio_size;
	_Atomic uint32_t folio_shift;
	_Atomic uint32_t folio_units;	/* of the context's arena */
	/* The filesystem's block as far as direct I/O may go (at most
	 * block_size): the block holding the file's end is written only up
	 * to the end's tail_unit, so the end needs no more space than the
	 * kernel's (ioend_build.c, reserve.c). */
	_Atomic uint32_t tail_unit;

	/* Space for dirty data (reserve.c): [resv_start, resv_end) is known
	 * to be allocated on disk, nothing we allocated lies past resv_max;
	 * resv_state 0 not looked yet, 1 tracked, -1 no fallocate here.
	 * Under i_rwsem exclusive, or shared with extend_lock; atomic for
	 * an I/O's completion, which reads them (wtio_reserve_regain). */
	_Atomic int64_t resv_start, resv_end, resv_max;
	/* Past EOF, what the file had allocated when wtio first wrote it
	 * (another program's fallocate KEEP_SIZE): never given back. */
	int64_t resv_theirs;
	_Atomic int resv_state;
	/* Shared (reflinked) ranges not yet made private, NULL: none. */
	struct wtio_resv_cow *resv_cow;

	pthread_mutex_t i_pages_lock;
	struct wtio_folio_list pages;	/* every cached folio of the inode */
	_Atomic uint64_t nr_pages;	/* changed under i_pages_lock */
	/* index -> folio for lockless hits, kept under i_pages_lock beside
	 * the hash (inode_slots.h); NULL until the first folio. */
	struct wtio_slot_dir *_Atomic i_slots;

	pthread_mutex_t dirty_lock;
	struct wtio_folio_list dirty;	/* oldest first */
	uint64_t nr_dirty;
	/* Of them, given back by a failed write-back (FOLIO_ERROR): only
	 * fsync or leaving the cache retries them (inode_keep.c). */
	_Atomic int64_t nr_dirty_error;
	_Atomic int64_t nr_writeback;
	pthread_mutex_t wb_list_lock;
	struct wtio_folio_list wb_folios; /* folios under writeback */
	uint64_t wb_seq;		/* writeback starts, under wb_list_lock */

	/* On ctx's dirty-inode list (under ctx->wb_lock). */
	bool wb_queued;
	_Atomic bool wb_queued_hint;	/* wb_queued, readable without the lock */
	int wb_busy;		/* flushers working on it, under wb_lock */
	/* Both ways, so that a kept inode evicted from the middle of a
	 * list of thousands leaves it at once. */
	struct wtio_inode *wb_next, *wb_prev;

	/* Completions still to run that refer to the inode (ioends, queued
	 * writes): the last close waits for them before freeing it, since
	 * a completion goes on using the inode after its folios leave
	 * writeback, which is all that close can see. */
	_Atomic int32_t io_refs;
	pthread_mutex_t io_lock;
	pthread_cond_t io_cond;

	/* Every recorded error bumps err_seq (a plain count, for "did an
	 * error happen meanwhile"); err_last is the latest errno. */
	_Atomic uint64_t err_seq;
	/* Bumped when a failed write-back gives folios back dirty, before
	 * they leave writeback (ioend_end.c): a sync pass that began before
	 * that could not have written them (sync.c). */
	_Atomic uint64_t redirty_seq;
	_Atomic int err_last;
	/* What handles report, once each: the kernel's errseq_t (errno in
	 * the low 12 bits, WTIO_ERRSEQ_SEEN, a counter above; errseq.h). */
	_Atomic uint64_t wb_err;

	/* Largest size the backing file may have (the filesystem's
	 * s_maxbytes for it, probed at open, capped at 2^62). */
	int64_t max_bytes;
	/* A failed extending write moved i_size back while it could not
	 * clean up: cached blocks (and the backing file) past i_size may
	 * hold its data. Cleared by wtio_inode_prepare_extend. */
	_Atomic bool eof_stale;
	/* The undo of failed extensions (size_undo.c, wtio_inode_tail_*),
	 * under tail_lock, which no holder ever waits with: the extending
	 * writes whose I/O is in flight, in the order they moved i_size
	 * (tail_head..tail_tail), the lowest size the run of them started
	 * from (tail_guard, read without the lock; INT64_MAX while no run
	 * is on), the furthest end of what was acknowledged past it since
	 * (tail_floor), the end an exclusive writer
	 * copying now may reach (tail_pending, -1: none), and whether one
	 * of them failed (tail_failed). */
	pthread_mutex_t tail_lock;
	_Atomic int64_t tail_guard;
	int64_t tail_floor;
	_Atomic int64_t tail_pending;
	bool tail_failed;
	struct wtio_size_undo *tail_head, *tail_tail;
};

#define WTIO_FILE_MAGIC 0x7774696f66696c65ull	/* "wtiofile" */
#define WTIO_FILE_DEAD  0xdeadf11edeadf11eull

struct wtio_file {
	_Atomic uint64_t magic;
	struct wtio_ctx *ctx;
	struct wtio_inode *inode;
	int oflags;
	unsigned int default_flags;
	_Atomic uint64_t err_seen;
	/* Sequential readahead detection. */
	_Atomic int64_t ra_next;	/* where a sequential read would go */
	_Atomic uint32_t ra_window;	/* bytes */
	/* A sequential DONTCACHE writer (dontcache_stream.c): where its
	 * next write would begin, and where the data waiting for its
	 * writeback to start begins (-1: none). */
	_Atomic int64_t dc_next, dc_run;
	struct wtio_file *next_dead;
	struct wtio_file *next_all;
};

static inline int64_t wtio_inode_size(struct wtio_inode *inode)
{
	return atomic_load_explicit(&inode->i_size, memory_order_acquire);
}

/*
 * Take the file lock, or -EAGAIN with nowait when it is held. An
 * exclusive hold begins the i_wseq section as write_seqcount_begin
 * does: the odd value, then a release fence, so that a lock-free reader
 * that sees any store of the hold sees the odd count too (or a later one).
 */
static inline int wtio_rwsem_lock(struct wtio_inode *inode, bool shared,
				  bool nowait)
{
	uint32_t s;
	int ret;

	if (shared)
		ret = nowait ? pthread_rwlock_tryrdlock(&inode->i_rwsem) :
			       pthread_rwlock_rdlock(&inode->i_rwsem);
	else
		ret = nowait ? pthread_rwlock_trywrlock(&inode->i_rwsem) :
			       pthread_rwlock_wrlock(&inode->i_rwsem);
	if (ret)
		return -EAGAIN;
	if (!shared) {
		s = atomic_load_explicit(&inode->i_wseq, memory_order_relaxed);
		atomic_store_explicit(&inode->i_wseq, s + 1,
				      memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
	}
	return 0;
}

/*
 * Release the file lock, either kind. The count is odd only while an
 * exclusive holder exists, and a caller holding the lock shared rules
 * that out: odd means the hold being released is exclusive, and it ends
 * as write_seqcount_end does, with a release store of the even value.
 */
static inline void wtio_rwsem_unlock(struct wtio_inode *inode)
{
	uint32_t s = atomic_load_explicit(&inode->i_wseq, memory_order_relaxed);

	if (s & 1)
		atomic_store_explicit(&inode->i_wseq, s + 1,
				      memory_order_release);
	pthread_rwlock_unlock(&inode->i_rwsem);
}

/* Pin the inode for a completion that will run after its folios left
 * writeback. Taken by a holder of the inode (a handle, or writeback the
 * last close waits for), so never against the waiter in wtio_inode_free:
 * an add. */
static inline void wtio_inode_io_get(struct wtio_inode *inode)
{
	atomic_fetch_add_explicit(&inode->io_refs, 1, memory_order_relaxed);
}

/* The completion's last touch of the inode. Any but the last reference
 * goes without the lock; the last is dropped under it, decrement and
 * wake together, so that the waiter in wtio_inode_free, which looks
 * under the lock, cannot free the inode between the two (the kernel's
 * refcount_dec_and_lock). */
static inline void wtio_inode_io_put(struct wtio_inode *inode)
{
	int32_t r = atomic_load_explicit(&inode->io_refs, memory_order_relaxed);

	while (r > 1)
		if (atomic_compare_exchange_weak_explicit(&inode->io_refs, &r,
							  r - 1,
							  memory_order_release,
							  memory_order_relaxed))
			return;
	pthread_mutex_lock(&inode->io_lock);
	if (atomic_fetch_sub_explicit(&inode->io_refs, 1,
				      memory_order_acq_rel) == 1)
		pthread_cond_broadcast(&inode->io_cond);
	pthread_mutex_unlock(&inode->io_lock);
}

#endif /* WTIO_INODE_H */
