/* SPDX-License-Identifier: MIT */
/*
 * inode_folios.c - walks over the folios an inode caches, and dropping
 * them all (last close, crash).
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "inode_folios.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "inode.h"
#include "dirty.h"

/* Referenced folios of the inode at or after first_index; *nr set. */
struct wtio_folio **wtio_inode_collect(struct wtio_inode *inode,
				       uint64_t first_index, uint64_t *nr)
{
	struct wtio_folio **v, *f;
	uint64_t n = 0;

	pthread_mutex_lock(&inode->i_pages_lock);
	v = malloc((inode->nr_pages + 1) * sizeof(*v));
	if (v) {
		for (f = inode->pages.head; f; f = f->i_link.next) {
			if (atomic_load_explicit(&f->index, memory_order_relaxed) <
			    first_index || !wtio_folio_tryget(f))
				continue;	/* or leaving the cache, clean */
			v[n++] = f;
		}
	}
	pthread_mutex_unlock(&inode->i_pages_lock);
	*nr = n;
	return v;
}

/*
 * Without memory for wtio_inode_collect's array: the inode's referenced
 * folio with the lowest index at or after *next (then *next moves past
 * it), or NULL. Quadratic, but a truncate or a drop that skipped folios
 * for want of memory would leave stale data in the cache.
 */
static struct wtio_folio *inode_next_folio(struct wtio_inode *inode,
					   uint64_t *next)
{
	struct wtio_folio *f, *best = NULL;
	uint64_t best_idx = 0;

	pthread_mutex_lock(&inode->i_pages_lock);
again:
	for (f = inode->pages.head; f; f = f->i_link.next) {
		uint64_t idx = atomic_load_explicit(&f->index,
						    memory_order_relaxed);

		if (idx >= *next && (!best || idx < best_idx)) {
			best = f;
			best_idx = idx;
		}
	}
	if (best) {
		*next = best_idx + 1;
		/* One leaving the cache (clean) is passed over. */
		if (!wtio_folio_tryget(best)) {
			best = NULL;
			goto again;
		}
	}
	pthread_mutex_unlock(&inode->i_pages_lock);
	return best;
}

/*
 * Lock each collected folio that is still the inode's, wait for its I/O
 * and hand it to fn; then unlock and release it.
 */
void wtio_inode_for_each_folio(struct wtio_inode *inode, uint64_t first,
			       void (*fn)(struct wtio_inode *,
					  struct wtio_folio *, void *),
			       void *arg)
{
	uint64_t nr, i;
	struct wtio_folio **v = wtio_inode_collect(inode, first, &nr);
	uint64_t next = first;

	for (i = 0; v ? i < nr : true; i++) {
		struct wtio_folio *f = v ? v[i] : inode_next_folio(inode, &next);

		if (!f)
			break;
		wtio_folio_lock(f);
		wtio_folio_wait_writeback(f);
		if (atomic_load(&f->inode) == inode)
			fn(inode, f, arg);
		wtio_folio_unlock(f);
		wtio_folio_put(inode->ctx, f);
	}
	free(v);
}

static void drop_one(struct wtio_inode *inode, struct wtio_folio *f, void *arg)
{
	wtio_folio_cancel_dirty(inode, f);
	wtio_folio_remove(f);
}

/*
 * The walk passes over a folio an eviction has frozen (inode_collect);
 * that eviction still takes the folio off the inode's list and slots
 * under i_pages_lock. The inode must not be freed before it has: wait
 * for the list to empty (a review freed the inode under such an
 * eviction when the walk went on without waiting).
 */
void wtio_inode_drop_cache(struct wtio_inode *inode)
{
	uint64_t left;

	for (;;) {
		wtio_inode_for_each_folio(inode, 0, drop_one, NULL);
		pthread_mutex_lock(&inode->i_pages_lock);
		left = inode->nr_pages;
		pthread_mutex_unlock(&inode->i_pages_lock);
		if (!left)
			return;
		sched_yield();
	}
}
