/* SPDX-License-Identifier: MIT */
/*
 * ctx.h - the context behind a wtio_ctx handle: the arena and index,
 * the free list, dirty accounting, the flushers' state, the open inodes
 * and the counters (ctx.c creates and destroys it).
 *
 * Naming follows the kernel's iomap/page cache layers: a wtio_inode is the
 * cached file shared by every open handle of it (the address_space), a
 * wtio_folio is one cache slot with per-block state (ifs_*), a wtio_ioend
 * is one write I/O built from contiguous dirty blocks (io_* fields).
 *
 * Lock order, outermost first:
 *   inode->i_rwsem  >  folio lock (one at a time per thread)  >
 *   index bucket lock  >  inode->i_pages_lock  >  inode->dirty_lock  >
 *   ctx->wb_lock  >  ctx->free_lock
 */
#ifndef WTIO_CTX_H
#define WTIO_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <wtio.h>
#include "cache.h"
#include "io/io.h"

#define WTIO_STAT_SLOTS 16
struct wtio_stat_slot {
	_Atomic uint64_t hits, misses, readahead, bytes_read, bytes_written,
		read_ios, write_ios, throttle_waits, evictions, wb_errors,
		rmw_reads, stripe_splits, dropbehind, atomic_writes;
} __attribute__((aligned(128)));

struct wtio_inode;
struct wtio_file;

struct wtio_ctx {
	struct wtio_config cfg;
	uint32_t folio_size;
	uint32_t folio_shift;

	char *arena;
	size_t arena_size;
	struct wtio_folio *folios;
	uint64_t nr_folios;

	struct wtio_io_backend io;
	struct wtio_index index;

	/* Free folios, and the CLOCK hand over all of them. */
	pthread_mutex_t free_lock;
	struct wtio_folio *free_list;
	uint64_t nr_free;
	pthread_mutex_t evict_lock;
	uint64_t clock_hand;
	/* Allocators waiting for a folio to become reclaimable. */
	pthread_mutex_t space_lock;
	pthread_cond_t space_cond;
	_Atomic uint32_t space_waiters;

	/* Dirty accounting (dirty.h) and the flushers (flush.h). */
	_Atomic int64_t nr_dirty;
	_Atomic int64_t nr_dirty_error;	/* dirty with FOLIO_ERROR: for fsync */
	_Atomic int64_t nr_writeback;
	int64_t dirty_background_folios;
	int64_t dirty_limit_folios;
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;		/* flushers sleep here */
	pthread_cond_t throttle_cond;	/* throttled writers sleep here */
	struct wtio_inode *wb_dirty_head, *wb_dirty_tail; /* inodes with dirty data */
	bool wb_stop;
	uint32_t wb_kicks;		/* requests for writeback */
	_Atomic bool wb_kick_pending;	/* a kick no flusher has taken yet */
	pthread_cond_t wb_idle_cond;	/* an inode's wb_busy dropped */
	uint64_t wb_next_periodic;
	/* Started writeback: a channel and the thread that completes it. */
	struct wtio_io_chan *wb_chan;
	pthread_t wb_chan_thread;
	_Atomic uint64_t wb_chan_users;	/* WB_ASYNC passes not done */
	_Atomic bool wb_chan_stop;
	pthread_t *flushers;
	uint32_t nr_flushers_running;

	/* Open inodes and handles. */
	pthread_mutex_t inodes_lock;
	struct wtio_inode *inodes;
	uint64_t nr_files;
	struct wtio_file *dead_files;	/* closed handles kept for -EBADF */
	struct wtio_file *all_files;	/* every handle, freed with the ctx */

	/* Counters, spread over slots so that threads counting cache hits
	 * do not bounce one cache line between them; summed by wtio_stats. */
	struct wtio_stat_slot st[WTIO_STAT_SLOTS];
};

/* Free ctx and all it holds (flushers, backend, cache, every handle),
 * writing nothing back: wtio_ctx_destroy once nothing is open. */
void wtio_ctx_free(struct wtio_ctx *ctx);

/* This thread's counter slot: threads get slots round robin. */
unsigned int wtio_stat_slot(void);
#define wtio_stat_add(ctx, field, v)					\
	atomic_fetch_add_explicit(&(ctx)->st[wtio_stat_slot()].field,	\
				  (uint64_t)(v), memory_order_relaxed)

/* Dirty folios background writeback can clean: those whose last write
 * failed wait for fsync and neither start writeback nor throttle. */
static inline int64_t wtio_nr_dirty_cleanable(struct wtio_ctx *ctx)
{
	return atomic_load(&ctx->nr_dirty) - atomic_load(&ctx->nr_dirty_error);
}

#endif /* WTIO_CTX_H */
