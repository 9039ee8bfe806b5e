/* SPDX-License-Identifier: MIT */
/*
 * inode_slots.h - the inode's own index of its cached folios (the
 * kernel's per-mapping xarray, two levels here): folio index -> folio,
 * read without any lock by cache hits (inode_slots.c keeps it).
 *
 * Only a hint, as the hash chain is: the hash table (cache.c) stays the
 * index that references and creation go through. A slot is set when a
 * folio is hashed and cleared when it is unhashed, both under the
 * inode's i_pages_lock, so it names the folio the hash holds for that
 * index or nothing. A reader checks whatever it finds against the
 * folio's seq and identity (buffered_read.c) and learns nothing from
 * it otherwise; folios never leave the arena, chunks never leave the
 * context's pool (a chunk whose last slot is cleared goes back to it, and
 * its slots are only ever NULL or folios), and directories are freed
 * only with the inode, so every pointer it follows is safe.
 */
#ifndef WTIO_INODE_SLOTS_H
#define WTIO_INODE_SLOTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "inode.h"

#define WTIO_SLOT_SHIFT	9u		/* 512 folios a chunk: 4 KiB */
#define WTIO_SLOT_PER	(1u << WTIO_SLOT_SHIFT)
/* The largest directory: 2^24 folios (64 GiB of 4 KiB folios). Folios
 * above it are found through the hash alone. */
#define WTIO_SLOT_MAX_CHUNKS (1u << 15)

/* Only ever NULL or a folio of the arena in its slots, even while back
 * in the pool (whose free list is kept beside the chunks): a reader on a
 * directory that still names a chunk given back reads one or the other. */
struct wtio_slot_chunk {
	struct wtio_folio *_Atomic f[WTIO_SLOT_PER];
};

struct wtio_slot_dir {
	uint32_t nr;			/* chunks it can name */
	struct wtio_slot_dir *old;	/* the smaller one it replaced */
	struct wtio_slot_chunk *_Atomic chunk[];
};

/* The folio in the inode's slot for index (a hint), or NULL where it
 * has none: no chunk there yet, none could be had, past the directory,
 * or not cached. The caller asks the hash then. */
static inline struct wtio_folio *wtio_slots_peek(struct wtio_inode *inode,
						 uint64_t index)
{
	struct wtio_slot_dir *d;
	struct wtio_slot_chunk *c;
	uint64_t ci = index >> WTIO_SLOT_SHIFT;

	/* Acquire: the directory and the chunk were filled (zeroed,
	 * copied) before their release stores published them. */
	d = atomic_load_explicit(&inode->i_slots, memory_order_acquire);
	if (!d || ci >= d->nr)
		return NULL;
	c = atomic_load_explicit(&d->chunk[ci], memory_order_acquire);
	if (!c)
		return NULL;
	return atomic_load_explicit(&c->f[index & (WTIO_SLOT_PER - 1)],
				    memory_order_acquire);
}

/* Set or clear the slot of folio f at index (i_pages_lock held). A slot
 * that cannot be had (no memory, over the budget, past the largest
 * directory) is simply not kept. */
void wtio_slots_set(struct wtio_inode *inode, uint64_t index,
		    struct wtio_folio *f);
void wtio_slots_clear(struct wtio_inode *inode, uint64_t index,
		      struct wtio_folio *f);
/* Give back the directories and chunks (the inode is being freed). */
void wtio_slots_free(struct wtio_inode *inode);
/* The context's chunks (wtio_cache_init; NULL: out of memory). */
struct wtio_slot_pool *wtio_slots_pool_create(uint64_t nr_folios);
void wtio_slots_pool_destroy(struct wtio_slot_pool *pool);

#endif /* WTIO_INODE_SLOTS_H */
