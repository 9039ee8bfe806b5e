/* SPDX-License-Identifier: MIT */
/*
 * wtio_internal.h - the structures behind the opaque handles.
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
#ifndef WTIO_INTERNAL_H
#define WTIO_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <wtio.h>
#include "geometry.h"
#include "io.h"

#define WTIO_EXPORT __attribute__((visibility("default")))

/* ThreadSanitizer cannot tell a seqcount-checked racy copy from a bug:
 * its builds take the locked paths only. */
#if defined(__SANITIZE_THREAD__)
#define WTIO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WTIO_TSAN 1
#endif
#endif
#ifndef WTIO_TSAN
#define WTIO_TSAN 0
#endif

/* Test builds of the library (tests/meson.build, -DWTIO_TEST_HOOKS)
 * call a test's hook where a race window is to be widened or counted;
 * other builds compile the points away. */
enum wtio_test_point {
	WTIO_TP_ALLOC_WINDOW,	/* folio_alloc: off the free list, not yet out */
	WTIO_TP_SCAN,		/* CLOCK looks at a folio */
	WTIO_TP_SCAN_LOCKED,	/* CLOCK holds the lock of a folio */
	WTIO_TP_HIT_COPIED,	/* lockless hit: copied, seq not re-checked */
	WTIO_TP_HIT_RETRY,	/* lockless hit: copy thrown away */
	WTIO_TP_HIT_OK,		/* lockless hit: copy kept */
};
struct wtio_folio;
#ifdef WTIO_TEST_HOOKS
/* Returns nonzero at WTIO_TP_HIT_COPIED to skip the re-check. */
extern int (*wtio_test_hook)(enum wtio_test_point tp, struct wtio_folio *f);
#define WTIO_TEST_HOOK(tp, f) (wtio_test_hook ? wtio_test_hook(tp, f) : 0)
#else
static inline int wtio_test_hook_none(enum wtio_test_point tp,
				      struct wtio_folio *f)
{
	return 0;
}
#define WTIO_TEST_HOOK(tp, f) wtio_test_hook_none(tp, f)
#endif

#define WTIO_MIN_FOLIO_SIZE	4096u
#define WTIO_MAX_FOLIO_SIZE	(1u << 20)
/* Per-block state is one 64-bit word per folio. */
#define WTIO_MAX_BLOCKS_PER_FOLIO 64u

/* Folio state bits (folio->state). */
#define FOLIO_LOCKED		(1u << 0)
#define FOLIO_WAITERS		(1u << 1)	/* someone sleeps on this word */
#define FOLIO_UPTODATE		(1u << 2)	/* every block is uptodate */
#define FOLIO_DIRTY		(1u << 3)
#define FOLIO_WRITEBACK		(1u << 4)
#define FOLIO_DROPBEHIND	(1u << 5)
#define FOLIO_REFERENCED	(1u << 6)	/* CLOCK second chance */
#define FOLIO_ERROR		(1u << 7)	/* last write of it failed */

struct wtio_inode;
struct wtio_wb_ctl;

struct wtio_folio {
	_Atomic uint32_t state;
	/* One reference is held by the index while the folio is cached;
	 * lookups take more under the bucket lock. At zero it is free. */
	_Atomic int32_t refcount;
	/* A seqcount: odd from each lock to its unlock (folio.c). A reader
	 * that copied without the lock and sees the same even value before
	 * and after its copy saw no change to the data, the block state or
	 * the identity (all of which change only under the lock). Written
	 * by the lock holder only. See docs/DESIGN.md. */
	_Atomic uint32_t seq;
	/* Stable while the folio is locked or referenced and cached. */
	struct wtio_inode *_Atomic inode;
	_Atomic uint64_t index;		/* folio number within the file */
	char *data;			/* folio_size bytes in the arena */

	/* Bucket chain: changed under the bucket lock, walked without it
	 * by wtio_folio_peek. */
	struct wtio_folio *_Atomic hash_next;
	struct wtio_folio *i_prev, *i_next; /* inode's folios, i_pages_lock */
	struct wtio_folio *d_prev, *d_next; /* inode's dirty list, dirty_lock */
	struct wtio_folio *w_prev, *w_next; /* under writeback, wb_list_lock */
	uint64_t wb_seq;		/* inode's wb_seq at its last writeback start */
	struct wtio_folio *free_next;	/* ctx free list */
	uint64_t dirtied_ns;		/* when it became dirty */

	/* Per-block state (iomap's ifs). ifs_uptodate is read locklessly
	 * by readers and only changed under the folio lock. ifs_dirty is
	 * changed under the folio lock, except while WRITEBACK is set: then
	 * it belongs to the I/O completion. */
	_Atomic uint64_t ifs_uptodate;
	uint64_t ifs_dirty;
	/* Blocks in the I/O now under way, and how many ioends cover them. */
	uint64_t wb_blocks;
	_Atomic int32_t wb_pending;
	/* Bytes of the folio's blocks that are on the dirty list for
	 * accounting; not needed: folio granularity is the unit. */
};

/* The index: one hash table per context with striped locks, so many
 * threads on one file do not contend on one lock. */
struct wtio_index {
	struct wtio_folio *_Atomic *buckets;
	uint64_t mask;
	pthread_mutex_t *locks;
	uint64_t lock_mask;
};

#define WTIO_STAT_SLOTS 16
struct wtio_stat_slot {
	_Atomic uint64_t hits, misses, readahead, bytes_read, bytes_written,
		read_ios, write_ios, throttle_waits, evictions, wb_errors,
		rmw_reads, stripe_splits, dropbehind, atomic_writes;
} __attribute__((aligned(128)));

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

	/* Dirty accounting and the flushers (writeback.c). */
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

struct wtio_inode {
	struct wtio_ctx *ctx;
	dev_t dev;
	ino_t ino;
	int fd;			/* O_DIRECT; writable when any handle is */
	bool fd_writable;
	int refs;		/* handles, under ctx->inodes_lock */
	struct wtio_inode *next;	/* ctx->inodes */

	/* The i_rwsem analogue: writes exclusive, reads shared. */
	pthread_rwlock_t i_rwsem;
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
	_Atomic int32_t extend_gate;
	pthread_mutex_t extend_lock;
	pthread_cond_t extend_cond;

	struct wtio_geometry geo;
	uint32_t block_size;
	uint32_t block_shift;
	uint32_t blocks_per_folio;

	/* Space for dirty data (reserve.c): [resv_start, resv_end) is known
	 * to be allocated on disk, nothing we allocated lies past resv_max;
	 * resv_state 0 not looked yet, 1 tracked, -1 no fallocate here.
	 * Under i_rwsem exclusive, or shared with extend_lock. */
	int64_t resv_start, resv_end, resv_max;
	int resv_state;
	/* Shared (reflinked) ranges not yet made private, NULL: none. */
	struct wtio_resv_cow *resv_cow;

	pthread_mutex_t i_pages_lock;
	struct wtio_folio *pages;	/* every cached folio of the inode */
	uint64_t nr_pages;

	pthread_mutex_t dirty_lock;
	struct wtio_folio *dirty_head, *dirty_tail; /* oldest first */
	uint64_t nr_dirty;
	_Atomic int64_t nr_writeback;
	pthread_mutex_t wb_list_lock;
	struct wtio_folio *wb_head;	/* folios under writeback */
	uint64_t wb_seq;		/* writeback starts, under wb_list_lock */

	/* On ctx's dirty-inode list (under ctx->wb_lock). */
	bool wb_queued;
	_Atomic bool wb_queued_hint;	/* wb_queued, readable without the lock */
	int wb_busy;		/* flushers working on it, under wb_lock */
	struct wtio_inode *wb_next;

	/* Completions still to run that refer to the inode (ioends, queued
	 * writes): the last close waits for them before freeing it, since
	 * a completion goes on using the inode after its folios leave
	 * writeback, which is all that close can see. */
	int32_t io_refs;
	pthread_mutex_t io_lock;
	pthread_cond_t io_cond;

	/* Every recorded error bumps err_seq (a plain count, for "did an
	 * error happen meanwhile"); err_last is the latest errno. */
	_Atomic uint64_t err_seq;
	_Atomic int err_last;
	/* What handles report, once each: the kernel's errseq_t (errno in
	 * the low 12 bits, WTIO_ERRSEQ_SEEN, a counter above; see file.c). */
	_Atomic uint64_t wb_err;

	/* Largest size the backing file may have (the filesystem's
	 * s_maxbytes for it, probed at open, capped at 2^62). */
	int64_t max_bytes;
	/* A failed extending write moved i_size back while it could not
	 * clean up: cached blocks (and the backing file) past i_size may
	 * hold its data. Cleared by wtio_inode_prepare_extend. */
	_Atomic bool eof_stale;
	/* Undo guard (file.c, wtio_inode_tail_*): the lowest start of an
	 * extension that may still be undone, how many writes reached past
	 * it, and how many extensions are in flight. */
	_Atomic int64_t tail_guard;
	_Atomic uint64_t tail_hits;
	_Atomic int32_t tail_inflight;
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
	struct wtio_file *next_dead;
	struct wtio_file *next_all;
};

/* ---- folio.c ---- */
void wtio_folio_lock(struct wtio_folio *folio);
bool wtio_folio_trylock(struct wtio_folio *folio);
/* Lock a folio just taken off the free list (refcount still 0). */
void wtio_folio_lock_new(struct wtio_folio *folio);
void wtio_folio_unlock(struct wtio_folio *folio);
void wtio_folio_wait_writeback(struct wtio_folio *folio);
void wtio_folio_end_writeback(struct wtio_folio *folio);
void wtio_folio_get(struct wtio_folio *folio);
void wtio_folio_put(struct wtio_ctx *ctx, struct wtio_folio *folio);
static inline uint32_t wtio_folio_flags(struct wtio_folio *folio)
{
	return atomic_load_explicit(&folio->state, memory_order_acquire);
}
static inline void wtio_folio_set_flag(struct wtio_folio *folio, uint32_t f)
{
	atomic_fetch_or_explicit(&folio->state, f, memory_order_acq_rel);
}
static inline void wtio_folio_clear_flag(struct wtio_folio *folio, uint32_t f)
{
	atomic_fetch_and_explicit(&folio->state, ~f, memory_order_acq_rel);
}
static inline bool wtio_folio_test(struct wtio_folio *folio, uint32_t f)
{
	return wtio_folio_flags(folio) & f;
}
/* A write with WTIO_DONTCACHE marks the folio drop-behind; any other
 * write shows the folio is wanted and clears the mark. Folio locked. */
void wtio_folio_mark_dropbehind(struct wtio_folio *folio, bool dontcache);
/* Block mask covering bytes [from, to) of a folio. */
uint64_t wtio_ifs_mask(const struct wtio_inode *inode, uint32_t from,
		       uint32_t to);
uint64_t wtio_ifs_all(const struct wtio_inode *inode);
/* Mark blocks uptodate; sets FOLIO_UPTODATE when all are. Folio locked. */
void wtio_ifs_set_uptodate(struct wtio_inode *inode, struct wtio_folio *folio,
			   uint64_t mask);
bool wtio_ifs_range_uptodate(const struct wtio_inode *inode,
			     struct wtio_folio *folio, uint32_t from,
			     uint32_t to);

/* ---- cache.c ---- */
int wtio_cache_init(struct wtio_ctx *ctx);
void wtio_cache_exit(struct wtio_ctx *ctx);
/* Referenced cached folio or NULL. Marks it referenced for CLOCK. */
struct wtio_folio *wtio_folio_lookup(struct wtio_inode *inode, uint64_t index);
/* The folio cached at index, without lock or reference: only a hint, to
 * be checked against the folio's seq (see struct wtio_folio). */
struct wtio_folio *wtio_folio_peek(struct wtio_inode *inode, uint64_t index);
/* Find or create; returns the folio referenced and LOCKED, its identity
 * checked. *created says whether it is new (no block uptodate). With
 * nowait, returns -EAGAIN instead of sleeping. */
int wtio_folio_get_locked(struct wtio_inode *inode, uint64_t index,
			  bool nowait, struct wtio_folio **foliop,
			  bool *created);
/* As wtio_folio_get_locked, and stable: not under writeback, so that a
 * copy into it cannot race its I/O (-EAGAIN with nowait if it is). */
int wtio_folio_get_stable(struct wtio_inode *inode, uint64_t index,
			  bool nowait, struct wtio_folio **foliop);
/* Create a new locked folio at index if absent and one can be had
 * without waiting; NULL otherwise (readahead). */
struct wtio_folio *wtio_folio_try_create(struct wtio_inode *inode,
					 uint64_t index);
/* Remove a locked, referenced, clean, not-under-writeback folio from the
 * cache; the caller still holds its reference and lock. */
void wtio_folio_remove(struct wtio_folio *folio);
/* WTIO_DONTCACHE: drop a folio the caller holds one reference to, now
 * that its I/O or copy is done, unless someone else uses it or it was
 * dirtied again. Returns whether it left the cache. */
bool wtio_folio_drop_behind(struct wtio_ctx *ctx, struct wtio_folio *folio);
/* Wake allocators waiting for space. */
void wtio_cache_wake_space(struct wtio_ctx *ctx);
uint64_t wtio_cache_nr_cached(struct wtio_ctx *ctx);

/* ---- file.c ---- */
int wtio_file_open(struct wtio_ctx *ctx, const char *path, int oflags,
		   mode_t mode, unsigned int default_flags,
		   struct wtio_file **filep);
int wtio_file_close(struct wtio_file *file);
int wtio_file_truncate(struct wtio_file *file, off_t length);
/* Make the backing file's size equal i_size. Caller holds i_rwsem. */
/* wait_io false: from a completion thread, which must not wait for the
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
/* Report an error not yet seen by this handle, once. */
int wtio_file_check_error(struct wtio_file *file);
void wtio_inode_record_error(struct wtio_inode *inode, int err);
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
/* The same without a claim (and so without the guard against cutting a
 * write that landed in the range since): i_size back from after to
 * before if nothing moved it. */
void wtio_inode_undo_extend(struct wtio_inode *inode, int64_t before,
			    int64_t after, bool in_reaper);
/* Referenced folios of the inode with index >= first (malloc'd array). */
struct wtio_folio **wtio_inode_collect(struct wtio_inode *inode,
				       uint64_t first, uint64_t *nr);
/* Pin the inode for a completion that will run after its folios left
 * writeback; put is the completion's last touch of the inode. */
void wtio_inode_io_get(struct wtio_inode *inode);
void wtio_inode_io_put(struct wtio_inode *inode);
/* Close the backing descriptor and free an inode nobody uses. */
void wtio_inode_free(struct wtio_inode *inode);
/* Drop every folio of the inode (close, crash). Clean or not. */
void wtio_inode_drop_cache(struct wtio_inode *inode, bool wait_io);
static inline int64_t wtio_inode_size(struct wtio_inode *inode)
{
	return atomic_load_explicit(&inode->i_size, memory_order_acquire);
}

/* ---- buffered_read.c ---- */
ssize_t wtio_buffered_read(struct wtio_file *file, const struct iovec *iov,
			   int iovcnt, off_t off, unsigned int flags);
/* Read the blocks in mask that are not uptodate from disk into a locked
 * folio; zero what lies past EOF. Returns 0 or a negative errno. */
int wtio_folio_read_blocks(struct wtio_inode *inode, struct wtio_folio *folio,
			   uint64_t mask);

/* ---- buffered_write.c ---- */
ssize_t wtio_buffered_write(struct wtio_file *file, const struct iovec *iov,
			    int iovcnt, off_t off, unsigned int flags);
/* The same, filling *undo (an extension claimed: end it with
 * wtio_inode_tail_end). */
ssize_t wtio_buffered_write_sized(struct wtio_file *file,
				  const struct iovec *iov, int iovcnt,
				  off_t off, unsigned int flags,
				  struct wtio_size_undo *undo);

/* Make the partially written blocks of [from, to) uptodate before a copy
 * (zero past isize, read the rest). -EAGAIN if nowait and I/O is needed. */
int wtio_write_prepare_blocks(struct wtio_inode *inode,
			      struct wtio_folio *folio, uint32_t from,
			      uint32_t to, int64_t isize, bool nowait);

/* ---- api.c ---- */
/* A checked write, dispatched on its mode flags. */
ssize_t wtio_file_write(struct wtio_file *file, const struct iovec *iov,
			int iovcnt, off_t off, unsigned int flags);
/* Checks shared by the synchronous and queued calls: total length, or a
 * negative errno. Adds the handle's default flags to *flags. */
ssize_t wtio_check_rw(struct wtio_file *file, const struct iovec *iov,
		      int iovcnt, off_t off, unsigned int *flags, bool write);

/* ---- writethrough.c ---- */
/*
 * Copy into the cache and put the written folios under writeback in
 * wbc's ioends, submitted before return (or left in wbc->deferred when
 * keep_deferred is set, for a queue's worker to submit). Returns bytes
 * copied or a negative errno; *extending says whether i_size moved.
 */
ssize_t wtio_writethrough_copy(struct wtio_file *file, const struct iovec *iov,
			       int iovcnt, off_t off, unsigned int flags,
			       struct wtio_wb_ctl *wbc, bool keep_deferred,
			       bool *extending);
ssize_t wtio_writethrough(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags);
/* After an extending DSYNC write-through write ending at end: make sure
 * the durable size covers it. */
int wtio_dsync_finish(struct wtio_inode *inode, int64_t end, bool in_reaper);
ssize_t wtio_write_dsync_writeback(struct wtio_file *file,
				   const struct iovec *iov, int iovcnt,
				   off_t off, unsigned int flags);

/* ---- atomic_write.c ---- */
/* -EOPNOTSUPP without untorn write support, -EINVAL for a bad shape. */
int wtio_atomic_check(struct wtio_inode *inode, off_t off, size_t len);
ssize_t wtio_atomic_write(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags);

/* ---- writeback.c ---- */
int wtio_writeback_init(struct wtio_ctx *ctx);
void wtio_writeback_exit(struct wtio_ctx *ctx);
/* The folio became dirty: account it, queue inode for the flushers.
 * Folio locked. */
void wtio_folio_mark_dirty(struct wtio_inode *inode, struct wtio_folio *folio);
/* Take a dirty folio off the dirty list (truncate); folio locked. */
void wtio_folio_cancel_dirty(struct wtio_inode *inode,
			     struct wtio_folio *folio);
/* Throttle a writer that dirtied data (balance_dirty_pages). */
int wtio_balance_dirty(struct wtio_ctx *ctx, bool nowait);
/* Wake flushers. */
void wtio_writeback_kick(struct wtio_ctx *ctx);
/* Cache full of data whose write-back failed: drop it (the error stays
 * recorded for fsync); returns how many folios left. */
uint64_t wtio_writeback_drop_failed(struct wtio_ctx *ctx);
/* WB_BACKGROUND: flushers, skip what is busy. WB_SYNC: wait for every
 * folio and its I/O. WB_ASYNC: like background, but submitted to the
 * context's channel and not waited for (sync_file_range WRITE, and
 * drop-behind writes: "start writeback"). */
enum wtio_wb_mode { WB_BACKGROUND, WB_SYNC, WB_ASYNC };

/* One caller's batch of ioends: a flusher pass, fsync, or a
 * write-through write (sync or queued). */
struct wtio_ioend;
struct wtio_wb_ctl {
	struct wtio_ctx *ctx;
	struct wtio_inode *inode;
	/* ioends in flight. With a channel, its reaper thread completes
	 * them while the submitter may still be submitting. */
	_Atomic unsigned int inflight;
	unsigned int max_inflight;	/* reap when reached; 0 = no limit */
	_Atomic int error;		/* first I/O error */
	int rw_flags;			/* RWF_DSYNC for write-through DSYNC */
	bool defer;			/* collect ioends, submit later */
	struct wtio_ioend *deferred;
	struct wtio_io_chan *chan;	/* submit here instead (queues) */
	/* Called from the completion of the last ioend in flight. */
	void (*done)(struct wtio_wb_ctl *wbc);
	/* Write-through: so that a failed write can undo its extension. */
	struct wtio_size_undo undo;
};

static inline void wtio_wbc_set_error(struct wtio_wb_ctl *wbc, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&wbc->error, &none, err);
}

/* Set and end WRITEBACK with its accounting and the inode's list of
 * folios under writeback (what fsync and sync_range wait for). */
void wtio_folio_set_writeback(struct wtio_inode *inode,
			      struct wtio_folio *folio);
void wtio_folio_finish_writeback(struct wtio_inode *inode,
				 struct wtio_folio *folio);

/* Dirty (or write-through) folio, locked -> WRITEBACK: its dirty blocks
 * become wb_blocks, owned by the I/O. */
void wtio_folio_start_writeback(struct wtio_inode *inode,
				struct wtio_folio *folio);
/* Queue a folio's wb_blocks into ioends; blocks in redirty are given back
 * as dirty if the I/O fails, the others are invalidated. */
void wtio_ioend_add_folio(struct wtio_wb_ctl *wbc, struct wtio_ioend **cur,
			  struct wtio_folio *folio, uint64_t redirty);
int wtio_ioend_submit(struct wtio_wb_ctl *wbc, struct wtio_ioend *ioend);
int wtio_ioend_submit_deferred(struct wtio_wb_ctl *wbc);
void wtio_ioend_reap_all(struct wtio_wb_ctl *wbc);
/*
 * Write back dirty folios of inode in [start, end) (end -1: to EOF).
 * WB_SYNC waits for every folio's lock and writeback and retries folios
 * whose last write failed; it returns the first I/O error it saw.
 * nr_to_write limits folios (0 = no limit); expired_before, if nonzero,
 * selects only folios dirtied before that time.
 */
int wtio_writeback_range(struct wtio_inode *inode, int64_t start, int64_t end,
			 enum wtio_wb_mode mode, uint64_t nr_to_write,
			 uint64_t expired_before);
/* Wait until no flusher works on inode and take it off their list. */
void wtio_writeback_detach_inode(struct wtio_inode *inode);
/* Wait for writeback in flight on [start, end). */
void wtio_wait_writeback_range(struct wtio_inode *inode, int64_t start,
			       int64_t end);
int wtio_fsync_file(struct wtio_file *file, bool datasync);
int wtio_sync_file_range(struct wtio_file *file, off_t off, off_t nbytes,
			 unsigned int flags);

/* Dirty folios background writeback can clean: those whose last write
 * failed wait for fsync and neither start writeback nor throttle. */
static inline int64_t wtio_nr_dirty_cleanable(struct wtio_ctx *ctx)
{
	return atomic_load(&ctx->nr_dirty) - atomic_load(&ctx->nr_dirty_error);
}

/* The part of [off, off + len) from byte done on that one folio holds. */
struct wtio_span {
	off_t pos;		/* file offset where the part starts */
	uint64_t index;		/* the folio */
	uint32_t from, to;	/* bytes [from, to) of the folio */
};

static inline struct wtio_span wtio_span_at(const struct wtio_ctx *ctx,
					    off_t off, size_t len, size_t done)
{
	struct wtio_span sp;
	size_t room;

	sp.pos = off + (off_t)done;
	sp.index = (uint64_t)sp.pos >> ctx->folio_shift;
	sp.from = (uint32_t)(sp.pos & (ctx->folio_size - 1));
	room = ctx->folio_size - sp.from;
	sp.to = sp.from + (uint32_t)(len - done < room ? len - done : room);
	return sp;
}

/* Take the file lock, or -EAGAIN with nowait when it is held. */
static inline int wtio_rwsem_lock(struct wtio_inode *inode, bool shared,
				  bool nowait)
{
	int ret;

	if (shared)
		ret = nowait ? pthread_rwlock_tryrdlock(&inode->i_rwsem) :
			       pthread_rwlock_rdlock(&inode->i_rwsem);
	else
		ret = nowait ? pthread_rwlock_trywrlock(&inode->i_rwsem) :
			       pthread_rwlock_wrlock(&inode->i_rwsem);
	return ret ? -EAGAIN : 0;
}

/* ---- misc ---- */
uint64_t wtio_now_ns(void);
/* This thread's counter slot: threads get slots round robin. */
unsigned int wtio_stat_slot(void);
#define wtio_stat_add(ctx, field, v)					\
	atomic_fetch_add_explicit(&(ctx)->st[wtio_stat_slot()].field,	\
				  (uint64_t)(v), memory_order_relaxed)

#endif /* WTIO_INTERNAL_H */
