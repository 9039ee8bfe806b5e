/* SPDX-License-Identifier: MIT */
/*
 * cache.c - the memory budget: an arena of unit-sized slots allocated
 * aligned for direct I/O, the index that maps (inode, index) to a folio,
 * references, and the eviction of one clean, unreferenced folio (the
 * CLOCK hands: reclaim.c; new folios: folio_alloc.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cache.h"
#include "cache_peek.h"
#include "chunk_space.h"
#include "test_hooks.h"
#include "folio.h"
#include "folio_list.h"
#include "ctx.h"
#include "huge_map.h"
#include "inode.h"
#include "index_hash.h"
#include "inode_slots.h"
#include "stats.h"

#ifdef WTIO_TEST_HOOKS
int (*wtio_test_hook)(enum wtio_test_point tp, struct wtio_folio *f);
#endif


static uint64_t next_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int wtio_cache_init(struct wtio_ctx *ctx)
{
	struct wtio_index *ix = &ctx->index;
	uint64_t i, nr_locks;

	ctx->arena_size = (size_t)ctx->nr_folios * ctx->folio_size;
	ctx->arena = wtio_huge_map(ctx->arena_size);
	if (!ctx->arena)
		return -ENOMEM;
	/* Touch the whole budget now: the budget is memory wtio owns, and
	 * the I/O paths must not stall clearing pages on first use. */
	madvise(ctx->arena, ctx->arena_size, MADV_POPULATE_WRITE);
	/* Not into a fork's child: the child never touches the parent's
	 * context (forked.h), and pages pinned for io_uring's registered
	 * buffers would be copied at fork, the whole budget, in fork()
	 * itself (0.2-0.7 s for 128 MiB). */
	madvise(ctx->arena, ctx->arena_size, MADV_DONTFORK);
	/* Huge pages for all that a hit touches at random (huge_map.c):
	 * the data above, the descriptors (page-aligned, more than their
	 * 32 bytes: folio.h), the buckets and the inodes' slots. */
	ctx->folios = wtio_huge_map(ctx->nr_folios * sizeof(*ctx->folios));
	ix->mask = next_pow2(ctx->nr_folios) - 1;
	ix->buckets = wtio_huge_map((ix->mask + 1) * sizeof(*ix->buckets));
	/* None (no memory): hits find their folios through the hash. */
	ix->slots = wtio_slots_pool_create(ctx->nr_folios);
	nr_locks = next_pow2(ctx->nr_folios / 8 + 1);
	if (nr_locks > 4096)
		nr_locks = 4096;
	if (nr_locks < 64)
		nr_locks = 64;
	/* A bucket must map to exactly one lock: never more locks than
	 * buckets (both powers of two, so lock_mask is within mask). */
	if (nr_locks > ix->mask + 1)
		nr_locks = ix->mask + 1;
	ix->lock_mask = nr_locks - 1;
	ix->locks = calloc(nr_locks, sizeof(*ix->locks));
	if (!ctx->folios || !ix->buckets || !ix->locks) {
		wtio_cache_exit(ctx);
		return -ENOMEM;
	}
	for (i = 0; i < nr_locks; i++)
		pthread_mutex_init(&ix->locks[i], NULL);
	if (wtio_chunks_init(ctx)) {
		wtio_cache_exit(ctx);
		return -ENOMEM;
	}
	for (i = 0; i < ctx->nr_folios; i++)
		ctx->folios[i].data = ctx->arena + i * ctx->folio_size;
	ctx->nr_free = ctx->nr_folios;
	pthread_mutex_init(&ctx->free_lock, NULL);
	pthread_mutex_init(&ctx->evict_lock, NULL);
	pthread_mutex_init(&ctx->space_lock, NULL);
	pthread_cond_init(&ctx->space_cond, NULL);
	return 0;
}

void wtio_cache_exit(struct wtio_ctx *ctx)
{
	struct wtio_index *ix = &ctx->index;

	if (ix->locks) {
		for (uint64_t i = 0; i <= ix->lock_mask; i++)
			pthread_mutex_destroy(&ix->locks[i]);
		pthread_mutex_destroy(&ctx->free_lock);
		pthread_mutex_destroy(&ctx->evict_lock);
		pthread_mutex_destroy(&ctx->space_lock);
		pthread_cond_destroy(&ctx->space_cond);
	}
	free(ix->locks);
	wtio_chunks_exit(ctx);
	wtio_slots_pool_destroy(ix->slots);
	wtio_huge_unmap(ix->buckets, (ix->mask + 1) * sizeof(*ix->buckets));
	wtio_huge_unmap(ctx->folios, ctx->nr_folios * sizeof(*ctx->folios));
	wtio_huge_unmap(ctx->arena, ctx->arena_size);
	ix->locks = NULL;
	ix->slots = NULL;
	ix->buckets = NULL;
	ctx->folios = NULL;
	ctx->arena = NULL;
}

static pthread_mutex_t *bucket_lock(struct wtio_ctx *ctx, uint64_t h)
{
	return &ctx->index.locks[h & ctx->index.lock_mask];
}

uint64_t wtio_cache_nr_cached(struct wtio_ctx *ctx)
{
	uint64_t nr_free;

	pthread_mutex_lock(&ctx->free_lock);
	nr_free = ctx->nr_free;
	pthread_mutex_unlock(&ctx->free_lock);
	return ctx->nr_folios - nr_free;
}

void wtio_cache_wake_space(struct wtio_ctx *ctx)
{
	if (atomic_load_explicit(&ctx->space_waiters, memory_order_acquire)) {
		pthread_mutex_lock(&ctx->space_lock);
		pthread_cond_broadcast(&ctx->space_cond);
		pthread_mutex_unlock(&ctx->space_lock);
	}
}

static void folio_reset(struct wtio_folio *folio)
{
	atomic_store_explicit(&folio->state, 0, memory_order_relaxed);
	atomic_store_explicit(&folio->ifs_uptodate, 0, memory_order_relaxed);
	atomic_store_explicit(&folio->inode, NULL, memory_order_relaxed);
	wtio_ifs_dirty_set(folio, 0);
	wtio_wb_blocks_set(folio, 0);
}

static void folio_free(struct wtio_ctx *ctx, struct wtio_folio *folio)
{
	folio_reset(folio);
	pthread_mutex_lock(&ctx->free_lock);
	wtio_chunks_put(ctx, folio);
	pthread_mutex_unlock(&ctx->free_lock);
	wtio_cache_wake_space(ctx);
}

void wtio_folio_get(struct wtio_folio *folio)
{
	atomic_fetch_add_explicit(&folio->refcount, 1, memory_order_relaxed);
}

void wtio_folio_put(struct wtio_ctx *ctx, struct wtio_folio *folio)
{
	if (atomic_fetch_sub_explicit(&folio->refcount, 1,
				      memory_order_acq_rel) == 1)
		folio_free(ctx, folio);
}

void wtio_folio_put_many(struct wtio_ctx *ctx, struct wtio_folio *const *v,
			 int n)
{
	bool freed = false;
	int i;

	/* Backwards: the chunks stack up so that v[0]'s is taken first. */
	for (i = n; i-- > 0;) {
		if (atomic_fetch_sub_explicit(&v[i]->refcount, 1,
					      memory_order_acq_rel) != 1)
			continue;
		folio_reset(v[i]);
		if (!freed)
			pthread_mutex_lock(&ctx->free_lock);
		freed = true;
		wtio_chunks_put(ctx, v[i]);
	}
	if (!freed)
		return;
	pthread_mutex_unlock(&ctx->free_lock);
	wtio_cache_wake_space(ctx);
}

/* Unlink from the index and the inode's list. Bucket lock held. A
 * lockless walker standing on the folio still finds its way on through
 * hash_next, which is left as it was. */
static void folio_unhash(struct wtio_ctx *ctx, struct wtio_folio *folio,
			 struct wtio_inode *inode, uint64_t h)
{
	struct wtio_folio *_Atomic *pp = &ctx->index.buckets[h & ctx->index.mask];
	struct wtio_folio *f;

	while ((f = atomic_load_explicit(pp, memory_order_relaxed)) && f != folio)
		pp = &f->hash_next;
	if (f)
		atomic_store_explicit(pp, atomic_load_explicit(&folio->hash_next,
				      memory_order_relaxed), memory_order_release);

	pthread_mutex_lock(&inode->i_pages_lock);
	wtio_slots_clear(inode, atomic_load_explicit(&folio->index,
						     memory_order_relaxed), folio);
	wtio_flist_del(&inode->pages, folio, WTIO_FL_PAGES);
	inode->nr_pages--;
	pthread_mutex_unlock(&inode->i_pages_lock);
	atomic_store_explicit(&folio->inode, NULL, memory_order_release);
}

void wtio_folio_remove(struct wtio_folio *folio)
{
	struct wtio_inode *inode = atomic_load(&folio->inode);
	struct wtio_ctx *ctx;
	uint64_t h;

	if (!inode)
		return;
	ctx = inode->ctx;
	h = wtio_index_hash(inode, atomic_load(&folio->index));
	pthread_mutex_lock(bucket_lock(ctx, h));
	folio_unhash(ctx, folio, inode, h);
	pthread_mutex_unlock(bucket_lock(ctx, h));
	/* The index's reference; the caller still holds its own. */
	wtio_folio_put(ctx, folio);
}

/* The lookup without the bucket lock: the reference taken through the
 * slot (wtio_folio_slot_tryget), kept only if the slot still names the
 * folio and the folio is (inode, index). A removal that follows is the
 * caller's to meet, as after a locked lookup. NULL: ask the hash. */
static struct wtio_folio *lookup_slot(struct wtio_inode *inode,
				      uint64_t index)
{
	struct wtio_folio *f = wtio_folio_slot_tryget(inode, index);

	if (!f)
		return NULL;
	if (WTIO_TEST_HOOK(WTIO_TP_LOOKUP_SLOT, f) ||
	    (wtio_slots_peek(inode, index) == f &&
	     atomic_load_explicit(&f->inode, memory_order_relaxed) == inode &&
	     atomic_load_explicit(&f->index, memory_order_relaxed) == index))
		return f;
	WTIO_TEST_HOOK(WTIO_TP_LOOKUP_STALE, f);
	wtio_folio_put(inode->ctx, f);
	return NULL;
}

struct wtio_folio *wtio_folio_find(struct wtio_inode *inode, uint64_t index)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t h;
	struct wtio_folio *f = lookup_slot(inode, index);

	if (f)
		return f;
	h = wtio_index_hash(inode, index);
	pthread_mutex_lock(bucket_lock(ctx, h));
	for (f = atomic_load_explicit(&ctx->index.buckets[h & ctx->index.mask],
				      memory_order_relaxed);
	     f; f = atomic_load_explicit(&f->hash_next, memory_order_relaxed)) {
		if (atomic_load_explicit(&f->inode, memory_order_relaxed) == inode &&
		    atomic_load_explicit(&f->index, memory_order_relaxed) == index) {
			wtio_folio_get(f);
			break;
		}
	}
	pthread_mutex_unlock(bucket_lock(ctx, h));
	return f;
}

struct wtio_folio *wtio_folio_lookup(struct wtio_inode *inode, uint64_t index)
{
	struct wtio_folio *f = wtio_folio_find(inode, index);

	if (f && !(atomic_load_explicit(&f->state, memory_order_relaxed) &
		   FOLIO_REFERENCED))
		wtio_folio_set_flag(f, FOLIO_REFERENCED);
	return f;
}

/*
 * Unhash a folio the caller holds one reference to, if nobody else but
 * the index does and it is clean and idle. The folio lock keeps its
 * identity stable while we unhash it.
 */
static bool folio_evict_held(struct wtio_ctx *ctx, struct wtio_folio *f)
{
	int32_t two = 2;
	struct wtio_inode *inode;
	uint32_t s;
	uint64_t h;
	bool ok = false;

	if (!wtio_folio_trylock(f))
		return false;
	WTIO_TEST_HOOK(WTIO_TP_SCAN_LOCKED, f);
	inode = atomic_load(&f->inode);
	if (!inode)
		goto out_unlock;
	h = wtio_index_hash(inode, atomic_load(&f->index));
	pthread_mutex_lock(bucket_lock(ctx, h));
	s = wtio_folio_flags(f);
	/* Only the index's reference and ours: frozen at 0 while it is
	 * unhashed, so that no lockless lookup (wtio_folio_slot_tryget)
	 * takes one meanwhile; ours comes back after, released so that a
	 * lookup whose reference follows it finds the slot cleared. An add,
	 * not a store: a reference taken from the inode's list meanwhile
	 * stays. */
	if (!(s & (FOLIO_DIRTY | FOLIO_WRITEBACK)) &&
	    atomic_compare_exchange_strong(&f->refcount, &two, 0)) {
		WTIO_TEST_HOOK(WTIO_TP_EVICT_FROZEN, f);
		folio_unhash(ctx, f, inode, h);
		atomic_fetch_add_explicit(&f->refcount, 1, memory_order_release);
		ok = true;
	}
	pthread_mutex_unlock(bucket_lock(ctx, h));
out_unlock:
	wtio_folio_unlock(f);
	return ok;
}

bool wtio_folio_try_evict(struct wtio_ctx *ctx, struct wtio_folio *f)
{
	int32_t one = 1;
	uint32_t s;
	bool ok;

	WTIO_TEST_HOOK(WTIO_TP_SCAN, f);
	s = atomic_load_explicit(&f->state, memory_order_relaxed);
	if (s & (FOLIO_LOCKED | FOLIO_DIRTY | FOLIO_WRITEBACK))
		return false;
	if (s & FOLIO_REFERENCED) {
		wtio_folio_clear_flag(f, FOLIO_REFERENCED);
		return false;
	}
	/* Take a reference of our own first, so that the folio cannot be
	 * freed and handed out again while we look at it. */
	if (!atomic_compare_exchange_strong(&f->refcount, &one, 2))
		return false;
	ok = folio_evict_held(ctx, f);
	if (ok)
		wtio_stat_add(ctx, evictions, f->units);
	else
		wtio_folio_put(ctx, f);
	return ok;
}

bool wtio_folio_drop_behind(struct wtio_ctx *ctx, struct wtio_folio *folio)
{
	if (!folio_evict_held(ctx, folio))
		return false;
	wtio_stat_add(ctx, dropbehind, folio->units);
	return true;
}

/* Insert a new locked folio, or return the one already there (referenced,
 * not locked) and give back ours. */
struct wtio_folio *wtio_folio_insert(struct wtio_inode *inode,
				     uint64_t index, struct wtio_folio *nf)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t h = wtio_index_hash(inode, index);
	struct wtio_folio *_Atomic *bucket = &ctx->index.buckets[h & ctx->index.mask];
	struct wtio_folio *f;

	pthread_mutex_lock(bucket_lock(ctx, h));
	for (f = atomic_load_explicit(bucket, memory_order_relaxed); f;
	     f = atomic_load_explicit(&f->hash_next, memory_order_relaxed)) {
		if (atomic_load_explicit(&f->inode, memory_order_relaxed) == inode &&
		    atomic_load_explicit(&f->index, memory_order_relaxed) == index) {
			wtio_folio_get(f);
			pthread_mutex_unlock(bucket_lock(ctx, h));
			/* Unlocked the ordinary way (seq back to even): a
			 * scan that takes it in between finds no inode. */
			wtio_folio_unlock(nf);
			wtio_folio_put(ctx, nf);
			return f;
		}
	}
	atomic_store_explicit(&nf->index, index, memory_order_relaxed);
	atomic_store_explicit(&nf->inode, inode, memory_order_release);
	wtio_folio_get(nf);		/* the index's reference */
	atomic_store_explicit(&nf->hash_next,
			      atomic_load_explicit(bucket, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(bucket, nf, memory_order_release);
	pthread_mutex_lock(&inode->i_pages_lock);
	wtio_slots_set(inode, index, nf);
	wtio_flist_add_head(&inode->pages, nf, WTIO_FL_PAGES);
	inode->nr_pages++;
	pthread_mutex_unlock(&inode->i_pages_lock);
	pthread_mutex_unlock(bucket_lock(ctx, h));
	return nf;
}
