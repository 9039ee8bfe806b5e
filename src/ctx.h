/* SPDX-License-Identifier: MIT */
/*
 * ctx.h - the context behind a wtio_ctx handle: the arena and index,
 * the free list, dirty accounting, the flushers' state, the open inodes
 * and the counters (setup.c creates and destroys it).
 *
 * Naming follows the kernel's iomap/page cache layers: a wtio_inode is the
 * cached file shared by every open handle of it (the address_space), a
 * wtio_folio is one cache slot with per-block state (ifs_*), a wtio_ioend
 * is one write I/O built from contiguous dirty blocks (io_* fields).
 *
 * Lock order, outermost first:
 *   inode->i_rwsem  >  folio lock (one at a time per thread)  >
 *   index bucket lock  >  inode->i_pages_lock  >  inode->dirty_lock  >
 *   ctx->wb_lock  >  ctx->free_lock;
 *   inode->i_pages_lock  >  the slot pool's lock (inode_slots.c, a leaf)
 */
#ifndef WTIO_CTX_H
#define WTIO_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <wtio.h>
#include "io/io.h"
#include "reaper.h"
#include "stats.h"


struct wtio_inode;
struct wtio_file;
struct wtio_folio;

#define WTIO_INODE_HASH 4096	/* buckets of ctx->inode_hash */
struct wtio_ioend;
struct wtio_slot_pool;

/* A chunk of the arena (cache.c), under ctx->free_lock. */
#define WTIO_CHUNK_NONE UINT64_MAX
enum wtio_chunk_state { WTIO_CHUNK_FREE, WTIO_CHUNK_SPLIT, WTIO_CHUNK_WHOLE };
/* Split chunks hold folios of one size: 1 << cls units. */
#define WTIO_CHUNK_CLASSES 6
struct wtio_chunk {
	uint64_t free_mask;		/* SPLIT: its free slots of 1 << cls */
	uint64_t prev, next;		/* partial list; next: free stack */
	uint32_t state;
	uint32_t cls;			/* SPLIT: log2 of its folios' units */
};

/* The index: one hash table per context with striped locks, so many
 * threads on one file do not contend on one lock. */
struct wtio_index {
	struct wtio_folio *_Atomic *buckets;
	uint64_t mask;
	pthread_mutex_t *locks;
	uint64_t lock_mask;
	/* Chunks for the inodes' own indexes (inode_slots.c). */
	struct wtio_slot_pool *slots;
};

struct wtio_ctx {
	struct wtio_config cfg;
	/* The fork generation it was made in: used in another (a child of
	 * fork()), every call is -ECHILD (forked.h). */
	unsigned int fork_gen;
	/* The arena's unit: the smallest folio (cfg.folio_size). Every
	 * count of folios below (nr_folios, nr_free, nr_dirty,
	 * nr_writeback) is in these units; a large folio counts for
	 * chunk_units of them. */
	uint32_t folio_size;
	uint32_t folio_shift;
	/* A chunk: chunk_units consecutive units, either one large folio
	 * (a file given large folios, folio_size.c) or split into folios
	 * of one smaller power-of-two size. chunk_units is 1 without
	 * WTIO_CONFIG_LARGE_FOLIOS. */
	uint32_t chunk_units;
	uint32_t chunk_shift;		/* log2(chunk_units) */
	uint32_t large_size;		/* folio_size * chunk_units */

	char *arena;
	size_t arena_size;
	/* One descriptor per unit; a folio is the descriptor of its first
	 * unit, those of a large folio's other units stay unused. */
	struct wtio_folio *folios;
	uint64_t nr_folios;

	struct wtio_io_backend io;
	struct wtio_index index;

	/* Free space by chunk (cache.c), and the CLOCK hands over all
	 * units and over the chunks (reclaim for a large folio). */
	pthread_mutex_t free_lock;
	struct wtio_chunk *chunks;
	uint64_t nr_chunks;
	uint64_t free_chunks;		/* stack of free chunks, via next */
	/* Split chunks with a free slot, one list per folio size. */
	uint64_t partial_chunks[WTIO_CHUNK_CLASSES];
	uint64_t nr_free;		/* units */
	pthread_mutex_t evict_lock;
	uint64_t clock_hand;
	uint64_t chunk_hand;
	/* Allocators waiting for a folio to become reclaimable. */
	pthread_mutex_t space_lock;
	pthread_cond_t space_cond;
	_Atomic uint32_t space_waiters;

	/* Dirty accounting (dirty.h) and the flushers (flush.h). */
	_Atomic int64_t nr_dirty;
	_Atomic int64_t nr_dirty_error;	/* dirty with FOLIO_ERROR: for fsync */
	_Atomic int64_t nr_writeback;
	/* Folios locked for a read I/O in flight (read_io.c,
	 * readahead.c): they come free when it completes, so an allocator
	 * that finds only these waits rather than fail (cache.c). */
	_Atomic int64_t nr_read_io;
	int64_t dirty_background_folios;
	int64_t dirty_limit_folios;
	/* Adaptive writes go write-through now (write_iter.c). */
	_Atomic bool adaptive_through;
	/* A throttled writer waits for dirty data to fall to this, a little
	 * under the limit (dirty.c); armed while one waits, so that only
	 * the cleaning that crosses it wakes them. */
	int64_t dirty_throttle_folios;
	_Atomic bool throttle_armed;
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;		/* flushers sleep here */
	pthread_cond_t throttle_cond;	/* throttled writers sleep here */
	struct wtio_inode *wb_dirty_head, *wb_dirty_tail; /* inodes with dirty data */
	bool wb_stop;
	uint32_t wb_kicks;		/* requests for writeback */
	/* Inodes to write back whole regardless of the thresholds, oldest
	 * dirtied first: closed files kept near their cap (inode_keep.c). */
	uint32_t wb_inode_credit;
	_Atomic bool wb_kick_pending;	/* a kick no flusher has taken yet */
	pthread_cond_t wb_idle_cond;	/* an inode's wb_busy dropped */
	uint64_t wb_next_periodic;
	/* Started writeback: a channel and the thread that completes it
	 * (chan NULL: none, the caller completes the pass). */
	struct wtio_reaper wb_reaper;
	_Atomic uint64_t wb_chan_users;	/* WB_ASYNC passes not done */
	/* Waiters for I/O of the queues' completion threads (reaper.h). */
	struct wtio_reaper_wait reaper_wait;
	pthread_t *flushers;
	uint32_t nr_flushers_running;
	/* Finished ioends kept for the next I/O (ioend_pool.c), so that write-back
	 * of scattered folios does not allocate ~14 KiB per 4 KiB I/O. */
	pthread_mutex_t ioend_lock;
	struct wtio_ioend *ioend_pool;
	uint32_t nr_ioend_pool;
	/* How reclaim, which lies below the flushers, asks for writeback:
	 * wake them, or give up data whose write-back failed (set by
	 * wtio_writeback_init). */
	void (*wb_kick)(struct wtio_ctx *ctx);
	uint64_t (*wb_drop_failed)(struct wtio_ctx *ctx);

	/* Open inodes and handles; the inodes also hashed by (dev, ino),
	 * since closed ones kept with their cache may be thousands. */
	pthread_mutex_t inodes_lock;
	struct wtio_inode *inodes;
	struct wtio_inode *inode_hash[WTIO_INODE_HASH];
	/* Inodes that have left the table, counted under inodes_lock after
	 * their data and size reached the disk: an open whose statx came
	 * before one of them left may hold the size the disk had before
	 * that inode's last write-back (wtio_inode_get). */
	_Atomic uint64_t nr_evicted;
	uint64_t nr_files;
	uint64_t nr_queues;		/* wtio_queue_create's, not destroyed */
	struct wtio_file *dead_files;	/* closed handles kept for -EBADF */
	struct wtio_file *all_files;	/* every handle, freed with the ctx */
	/* Closed inodes kept in the table (WTIO_CONFIG_KEEP_CLOSED,
	 * inode_keep.c), oldest first, at most max_kept (set at the first
	 * keep); kept_cond: an evicted inode has left the table. kept_err:
	 * the first write-back error of a closed file that left the cache
	 * with no handle having reported it (wtio_ctx_destroy returns it). */
	struct wtio_inode *kept_head, *kept_tail;
	uint64_t nr_kept, max_kept, nr_keeps;
	pthread_cond_t kept_cond;
	_Atomic int kept_err;

	/* Counters, spread over slots so that threads counting cache hits
	 * do not bounce one cache line between them; summed by wtio_stats. */
	struct wtio_stat_slot st[WTIO_STAT_SLOTS];
};

/* Dirty folios background writeback can clean: those whose last write
 * failed wait for fsync and neither start writeback nor throttle. */
static inline int64_t wtio_nr_dirty_cleanable(struct wtio_ctx *ctx)
{
	return atomic_load(&ctx->nr_dirty) - atomic_load(&ctx->nr_dirty_error);
}

#endif /* WTIO_CTX_H */
