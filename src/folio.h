/* SPDX-License-Identifier: MIT */
/*
 * folio.h - one cache slot: its state bits, per-block state (iomap's
 * ifs) and the lock with its seqcount (folio.c). References: cache.h.
 */
#ifndef WTIO_FOLIO_H
#define WTIO_FOLIO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "folio_list.h"

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
/* First folio of an asynchronous readahead window: the read that reaches
 * it starts the next window (the kernel's PG_readahead). */
#define FOLIO_READAHEAD		(1u << 8)

struct wtio_inode;

/*
 * The first 32 bytes are all a lockless cache hit reads of the folio
 * (state, seq, identity, data); the struct is aligned so that they
 * never straddle two cache lines.
 */
struct wtio_folio {
	_Atomic uint32_t state;
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
	/* One reference is held by the index while the folio is cached;
	 * lookups take more, under the bucket lock or, through the inode's
	 * slot, only while it is above zero (an eviction freezes it at zero
	 * while it unhashes: docs/DESIGN.md). At zero it is free. */
	_Atomic int32_t refcount;

	/* Bucket chain: changed under the bucket lock, walked without it
	 * by wtio_folio_peek. */
	struct wtio_folio *_Atomic hash_next;
	struct wtio_folio_link i_link;	/* inode's folios, i_pages_lock */
	struct wtio_folio_link d_link;	/* inode's dirty list, dirty_lock */
	struct wtio_folio_link w_link;	/* under writeback, wb_list_lock */
	uint64_t wb_seq;		/* inode's wb_seq at its last writeback start */
	/* Units of the arena it spans (a power of two up to
	 * ctx->chunk_units, a whole chunk for a large folio): set when
	 * allocated, read when freed. */
	uint32_t units;
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
} __attribute__((aligned(32)));

/* The inode's lists a folio is on (folio_list.h). */
#define WTIO_FL_PAGES	offsetof(struct wtio_folio, i_link)
#define WTIO_FL_DIRTY	offsetof(struct wtio_folio, d_link)
#define WTIO_FL_WB	offsetof(struct wtio_folio, w_link)

void wtio_folio_lock(struct wtio_folio *folio);
bool wtio_folio_trylock(struct wtio_folio *folio);
/* Lock a folio just taken off the free list (refcount still 0). */
void wtio_folio_lock_new(struct wtio_folio *folio);
void wtio_folio_unlock(struct wtio_folio *folio);
void wtio_folio_wait_writeback(struct wtio_folio *folio);
void wtio_folio_end_writeback(struct wtio_folio *folio);
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
/* A reference, unless the count is 0: an eviction freezes it there
 * while it takes the folio out of the index and the inode's list
 * (cache.c, folio_evict_held), and a reference taken from that list
 * then and dropped before the evictor's own came back freed the folio
 * under the evictor. Whoever walks a list of folios without their lock
 * takes its references so. */
static inline bool wtio_folio_tryget(struct wtio_folio *folio)
{
	int32_t r = atomic_load_explicit(&folio->refcount,
					 memory_order_relaxed);

	do {
		if (r <= 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&folio->refcount,
							&r, r + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}
/* ifs_dirty and wb_blocks have one writer at a time (the folio lock's
 * holder, or the I/O's completion while WRITEBACK is set; failed I/Os
 * of one folio ending at once OR theirs in atomically), and one
 * reader outside it: the space regain after ENOSPC (reserve_regain.c)
 * reads both with relaxed loads and tolerates a stale value. Stores are
 * relaxed atomics, a plain store on x86, so that the pair is no data
 * race to the language or to TSan. */
static inline void wtio_ifs_dirty_set(struct wtio_folio *folio, uint64_t v)
{
	__atomic_store_n(&folio->ifs_dirty, v, __ATOMIC_RELAXED);
}
static inline void wtio_wb_blocks_set(struct wtio_folio *folio, uint64_t v)
{
	__atomic_store_n(&folio->wb_blocks, v, __ATOMIC_RELAXED);
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

#endif /* WTIO_FOLIO_H */
