/* SPDX-License-Identifier: MIT */
/*
 * inode_slots.c - keeping the inodes' own indexes of their cached folios
 * (inode_slots.h): a chunk of slots taken from the context's pool when
 * the first folio of its range is hashed and given back when its last
 * one is unhashed (a stream longer than the pool ran it dry, and its
 * later hits all went through the hash), a directory of chunks that
 * doubles as the cached range grows, freed only with the inode. Lockless
 * readers may stand on any directory and any chunk it ever named: a
 * chunk back in the pool, or another inode's since, holds NULL or folios
 * of the arena, which a reader checks as it checks any slot.
 */
#include <pthread.h>
#include <stdlib.h>

#include "inode_slots.h"
#include "ctx.h"
#include "huge_map.h"
#include "test_hooks.h"

/*
 * The chunks, one mapping advised to huge pages (a hit reads a slot at
 * random: it must not cost a TLB miss), sized once: twice what files
 * filling the cache densely need, so that sparse files cannot cost a
 * chunk per cached folio; past that, folios are found through the hash.
 */
struct wtio_slot_pool {
	pthread_mutex_t lock;		/* innermost, under i_pages_lock */
	struct wtio_slot_chunk *chunks;
	uint64_t nr, used;		/* used: handed out once from the start */
	/* Given back: a stack of chunk numbers, beside the chunks (a link
	 * in a chunk would be read as a slot by a reader still on it). */
	uint32_t *free;
	uint64_t nr_free;
	/* Slots set per chunk, under its inode's i_pages_lock. */
	uint16_t *live;
};

static uint64_t pool_chunks(uint64_t nr_folios)
{
	return (nr_folios >> (WTIO_SLOT_SHIFT - 1)) + 16;
}

struct wtio_slot_pool *wtio_slots_pool_create(uint64_t nr_folios)
{
	struct wtio_slot_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->nr = pool_chunks(nr_folios);
	p->chunks = wtio_huge_map(p->nr * sizeof(*p->chunks));
	p->free = calloc(p->nr, sizeof(*p->free));
	p->live = calloc(p->nr, sizeof(*p->live));
	if (!p->chunks || !p->free || !p->live) {
		if (p->chunks)
			wtio_huge_unmap(p->chunks, p->nr * sizeof(*p->chunks));
		free(p->free);
		free(p->live);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

void wtio_slots_pool_destroy(struct wtio_slot_pool *p)
{
	if (!p)
		return;
	wtio_huge_unmap(p->chunks, p->nr * sizeof(*p->chunks));
	pthread_mutex_destroy(&p->lock);
	free(p->free);
	free(p->live);
	free(p);
}

/* A zeroed chunk, not yet visible to any reader, or NULL. */
static struct wtio_slot_chunk *chunk_get(struct wtio_slot_pool *p)
{
	struct wtio_slot_chunk *c = NULL;
	unsigned int i;

	if (!p)
		return NULL;
	pthread_mutex_lock(&p->lock);
	if (p->nr_free) {
		c = &p->chunks[p->free[--p->nr_free]];
	} else if (p->used < p->nr) {
		c = &p->chunks[p->used++];	/* zeroed by the mapping */
	}
	pthread_mutex_unlock(&p->lock);
	/* (NULL already but after an inode's end, which leaves its slots:
	 * relaxed, as a reader may see either NULL or the folio) */
	if (c) {
		for (i = 0; i < WTIO_SLOT_PER; i++)
			atomic_store_explicit(&c->f[i], NULL,
					      memory_order_relaxed);
		p->live[c - p->chunks] = 0;
	}
	return c;
}

static void chunk_put(struct wtio_slot_pool *p, struct wtio_slot_chunk *c)
{
	pthread_mutex_lock(&p->lock);
	p->free[p->nr_free++] = (uint32_t)(c - p->chunks);
	pthread_mutex_unlock(&p->lock);
}

/* The directory naming chunk ci, grown (and published) if it must be;
 * NULL if it cannot be. i_pages_lock held. */
static struct wtio_slot_dir *dir_for(struct wtio_inode *inode, uint64_t ci)
{
	struct wtio_slot_dir *d = atomic_load_explicit(&inode->i_slots,
						       memory_order_relaxed);
	struct wtio_slot_dir *nd;
	uint32_t nr = 8, i;

	if (d && ci < d->nr)
		return d;
	if (ci >= WTIO_SLOT_MAX_CHUNKS)
		return NULL;
	while (nr <= ci)
		nr <<= 1;
	nd = calloc(1, sizeof(*nd) + (size_t)nr * sizeof(nd->chunk[0]));
	if (!nd)
		return NULL;
	nd->nr = nr;
	for (i = 0; d && i < d->nr; i++)
		atomic_store_explicit(&nd->chunk[i],
				      atomic_load_explicit(&d->chunk[i],
							   memory_order_relaxed),
				      memory_order_relaxed);
	/* A reader still on the old directory shares its chunks; one that
	 * finds no chunk there asks the hash. The old one is freed with
	 * the inode. */
	nd->old = d;
	atomic_store_explicit(&inode->i_slots, nd, memory_order_release);
	return nd;
}

void wtio_slots_set(struct wtio_inode *inode, uint64_t index,
		    struct wtio_folio *f)
{
	uint64_t ci = index >> WTIO_SLOT_SHIFT;
	struct wtio_folio *_Atomic *slot;
	struct wtio_slot_dir *d;
	struct wtio_slot_chunk *c;

	if (!inode->ctx->index.slots)
		return;
	d = dir_for(inode, ci);
	if (!d)
		return;
	c = atomic_load_explicit(&d->chunk[ci], memory_order_relaxed);
	if (!c) {
		c = chunk_get(inode->ctx->index.slots);
		if (!c)
			return;
		atomic_store_explicit(&d->chunk[ci], c, memory_order_release);
	}
	slot = &c->f[index & (WTIO_SLOT_PER - 1)];
	if (!atomic_load_explicit(slot, memory_order_relaxed))
		inode->ctx->index.slots->live[c - inode->ctx->index.slots->chunks]++;
	atomic_store_explicit(slot, f, memory_order_release);
}

void wtio_slots_clear(struct wtio_inode *inode, uint64_t index,
		      struct wtio_folio *f)
{
	struct wtio_slot_pool *pool = inode->ctx->index.slots;
	struct wtio_slot_dir *d = atomic_load_explicit(&inode->i_slots,
						       memory_order_relaxed);
	uint64_t ci = index >> WTIO_SLOT_SHIFT;
	struct wtio_folio *_Atomic *slot;
	struct wtio_slot_chunk *c;

	if (!d || ci >= d->nr)
		return;
	c = atomic_load_explicit(&d->chunk[ci], memory_order_relaxed);
	if (!c)
		return;
	slot = &c->f[index & (WTIO_SLOT_PER - 1)];
	/* A test showing that readers never trust a slot. */
	if (WTIO_TEST_HOOK(WTIO_TP_SLOT_KEEP, f))
		return;
	if (atomic_load_explicit(slot, memory_order_relaxed) != f)
		return;
	atomic_store_explicit(slot, NULL, memory_order_release);
	/* The chunk's last folio left: back to the pool for whichever
	 * range or inode needs one next. Only the newest directory lets go
	 * of it; an older one, and a reader on either, may still name it:
	 * its slots are NULL, or folios of its next owner, which fail the
	 * reader's identity check as a stale slot does. */
	if (--pool->live[c - pool->chunks] == 0) {
		atomic_store_explicit(&d->chunk[ci], NULL,
				      memory_order_relaxed);
		chunk_put(pool, c);
	}
}

void wtio_slots_free(struct wtio_inode *inode)
{
	struct wtio_slot_dir *d = atomic_load_explicit(&inode->i_slots,
						       memory_order_relaxed);
	uint32_t i;

	if (!d)
		return;
	/* The newest directory names every chunk the older ones did. */
	for (i = 0; i < d->nr; i++) {
		struct wtio_slot_chunk *c =
			atomic_load_explicit(&d->chunk[i], memory_order_relaxed);

		if (c)
			chunk_put(inode->ctx->index.slots, c);
	}
	while (d) {
		struct wtio_slot_dir *old = d->old;

		free(d);
		d = old;
	}
	atomic_store_explicit(&inode->i_slots, NULL, memory_order_relaxed);
}
