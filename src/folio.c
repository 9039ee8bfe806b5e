/* SPDX-License-Identifier: MIT */
/*
 * folio.c - folio state bits, the folio lock and writeback waits, and
 * per-block (ifs) state.
 *
 * Sleeping uses a futex on the state word itself, with a WAITERS bit so
 * the common uncontended unlock is one atomic and no system call, and no
 * per-folio mutex or condition variable has to exist.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "folio.h"
#include "inode.h"
#include "ctx.h"
#include "reaper.h"
#include "sys.h"

static void folio_futex_wait(struct wtio_folio *folio, uint32_t seen)
{
	/* A spurious return (EINTR, EAGAIN on a changed word) only makes the
	 * caller look again. */
	wtio_sys_syscall(SYS_futex, &folio->state, FUTEX_WAIT_PRIVATE, seen,
			 NULL, NULL, 0);
}

static void folio_futex_wake(struct wtio_folio *folio)
{
	wtio_sys_syscall(SYS_futex, &folio->state, FUTEX_WAKE_PRIVATE, INT_MAX,
			 NULL, NULL, 0);
}

/* Sleep until none of the bits in mask is set in the state word. */
static void folio_wait_clear(struct wtio_folio *folio, uint32_t mask)
{
	uint32_t s = atomic_load_explicit(&folio->state, memory_order_acquire);

	while (s & mask) {
		if (!(s & FOLIO_WAITERS)) {
			if (!atomic_compare_exchange_weak_explicit(&folio->state,
					&s, s | FOLIO_WAITERS,
					memory_order_acq_rel,
					memory_order_acquire))
				continue;
			s |= FOLIO_WAITERS;
		}
		folio_futex_wait(folio, s);
		s = atomic_load_explicit(&folio->state, memory_order_acquire);
	}
}

/* Clear bits and wake sleepers. WAITERS goes with them: any sleeper that
 * still has to wait sets it again before sleeping. */
static void folio_clear_and_wake(struct wtio_folio *folio, uint32_t bits)
{
	uint32_t old = atomic_fetch_and_explicit(&folio->state,
			~(bits | FOLIO_WAITERS), memory_order_acq_rel);

	if (old & FOLIO_WAITERS)
		folio_futex_wake(folio);
}

/*
 * The folio's seqcount (docs/DESIGN.md, "The lockless cache hit:
 * memory-model argument"): seq is odd while a holder of the lock may
 * change the folio's data, block state or identity, even otherwise.
 * Only the lock holder writes it, so a plain increment will do.
 *
 * begin is write_seqcount_begin: the odd value, then a release fence
 * (smp_wmb) so that none of the holder's later stores can be seen by a
 * reader whose acquire fence comes after it without the odd seq (or a
 * later one) being seen too.
 */
static void folio_seq_begin(struct wtio_folio *folio)
{
	uint32_t s = atomic_load_explicit(&folio->seq, memory_order_relaxed);

	atomic_store_explicit(&folio->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/* write_seqcount_end: a release store of the even value, so that a
 * reader that sees it sees every store of the critical section. */
static void folio_seq_end(struct wtio_folio *folio)
{
	uint32_t s = atomic_load_explicit(&folio->seq, memory_order_relaxed);

	atomic_store_explicit(&folio->seq, s + 1, memory_order_release);
}

/* A broken lock protocol (a second holder, an unlock of a folio that
 * nobody holds) must not go on corrupting the cache in silence. */
static void folio_lock_bug(struct wtio_folio *folio, const char *what)
{
	fprintf(stderr, "wtio: BUG: %s (folio %p, state %#x, seq %u)\n",
		what, (void *)folio,
		atomic_load_explicit(&folio->state, memory_order_relaxed),
		atomic_load_explicit(&folio->seq, memory_order_relaxed));
	abort();
}

bool wtio_folio_trylock(struct wtio_folio *folio)
{
	uint32_t old = atomic_fetch_or_explicit(&folio->state, FOLIO_LOCKED,
						memory_order_acquire);

	if (old & FOLIO_LOCKED)
		return false;
	folio_seq_begin(folio);
	return true;
}

void wtio_folio_lock(struct wtio_folio *folio)
{
	while (!wtio_folio_trylock(folio))
		folio_wait_clear(folio, FOLIO_LOCKED);
}

void wtio_folio_lock_new(struct wtio_folio *folio)
{
	/* Free: refcount 0, so no scanner may take it, and nobody holds
	 * its lock; a lockless reader may still look at it. */
	atomic_store_explicit(&folio->state, FOLIO_LOCKED,
			      memory_order_relaxed);
	if (atomic_load_explicit(&folio->seq, memory_order_relaxed) & 1)
		folio_lock_bug(folio, "free folio with an odd seq");
	folio_seq_begin(folio);
}

void wtio_folio_unlock(struct wtio_folio *folio)
{
	uint32_t old;

	if (!(atomic_load_explicit(&folio->seq, memory_order_relaxed) & 1))
		folio_lock_bug(folio, "unlock of a folio not locked (even seq)");
	folio_seq_end(folio);
	old = atomic_fetch_and_explicit(&folio->state,
					~(FOLIO_LOCKED | FOLIO_WAITERS),
					memory_order_release);
	if (!(old & FOLIO_LOCKED))
		folio_lock_bug(folio, "unlock of an unlocked folio");
	if (old & FOLIO_WAITERS)
		folio_futex_wake(folio);
}

void wtio_folio_wait_writeback(struct wtio_folio *folio)
{
	struct wtio_inode *inode;
	struct wtio_ctx *ctx;

	if (!(atomic_load_explicit(&folio->state, memory_order_acquire) &
	      FOLIO_WRITEBACK))
		return;
	/* The I/O may be a queue's whose completion thread naps while the
	 * queue's owner reaps for it (reaper.h), and this may be that
	 * owner: call the thread back rather than wait out its nap. The
	 * caller holds the folio and its file, so the inode stays. */
	inode = atomic_load(&folio->inode);
	if (!inode) {
		folio_wait_clear(folio, FOLIO_WRITEBACK);
		return;
	}
	ctx = inode->ctx;
	wtio_reaper_want_begin(&ctx->reaper_wait);
	folio_wait_clear(folio, FOLIO_WRITEBACK);
	wtio_reaper_want_end(&ctx->reaper_wait);
}

void wtio_folio_end_writeback(struct wtio_folio *folio)
{
	folio_clear_and_wake(folio, FOLIO_WRITEBACK);
}

uint64_t wtio_ifs_all(const struct wtio_inode *inode)
{
	if (inode->blocks_per_folio >= 64)
		return ~0ull;
	return (1ull << inode->blocks_per_folio) - 1;
}

uint64_t wtio_ifs_mask(const struct wtio_inode *inode, uint32_t from,
		       uint32_t to)
{
	uint32_t shift = inode->block_shift, first, last;
	uint64_t mask;

	if (to <= from)
		return 0;
	first = from >> shift;
	last = (to - 1) >> shift;
	/* Only a lockless reader's span taken from a larger folio size
	 * the file had before reaches past the folio's blocks (its copy
	 * is thrown away: cache_peek.c); no shift of 64 or more. */
	if (first >= WTIO_MAX_BLOCKS_PER_FOLIO)
		return 0;
	mask = (last - first + 1 >= 64) ? ~0ull :
		((1ull << (last - first + 1)) - 1);
	return mask << first;
}

void wtio_ifs_set_uptodate(struct wtio_inode *inode, struct wtio_folio *folio,
			   uint64_t mask)
{
	uint64_t all = wtio_ifs_all(inode);
	uint64_t up = atomic_load_explicit(&folio->ifs_uptodate,
					   memory_order_relaxed);

	/* Overwrites of cached data find the bits set: no locked
	 * instruction then. The folio lock orders the data itself. */
	if ((up & mask) != mask)
		up = atomic_fetch_or_explicit(&folio->ifs_uptodate, mask,
					      memory_order_release) | mask;
	if ((up & all) == all &&
	    !(atomic_load_explicit(&folio->state, memory_order_relaxed) &
	      FOLIO_UPTODATE))
		wtio_folio_set_flag(folio, FOLIO_UPTODATE);
}

bool wtio_ifs_range_uptodate(const struct wtio_inode *inode,
			     struct wtio_folio *folio, uint32_t from,
			     uint32_t to)
{
	uint64_t need;

	/* A span of a larger folio size the file had (a lockless reader
	 * that looked before the change, cache_peek.c) is not this
	 * folio's: no. */
	if (to > from && ((to - 1) >> inode->block_shift) >=
			 WTIO_MAX_BLOCKS_PER_FOLIO)
		return false;
	if (wtio_folio_test(folio, FOLIO_UPTODATE))
		return true;
	need = wtio_ifs_mask(inode, from, to);
	return (atomic_load_explicit(&folio->ifs_uptodate,
				     memory_order_acquire) & need) == need;
}

void wtio_folio_mark_dropbehind(struct wtio_folio *folio, bool dontcache)
{
	if (dontcache)
		wtio_folio_set_flag(folio, FOLIO_DROPBEHIND);
	else if (wtio_folio_test(folio, FOLIO_DROPBEHIND))
		wtio_folio_clear_flag(folio, FOLIO_DROPBEHIND); /* wanted again */
}
