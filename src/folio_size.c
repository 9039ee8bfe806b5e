/* SPDX-License-Identifier: MIT */
/*
 * folio_size.c - the folio size of each file. The kernel's XFS gives a
 * file written or read in large I/Os large folios and one written 4 KiB
 * at a time small ones, in one page cache: per-4 KiB bookkeeping is
 * what a stream pays for small folios, and a 4 KiB random writer would
 * pay memory and read I/O for large ones. Here a file's folios all have
 * one size (its index, per-block state and I/O building assume it), so
 * the size is chosen while the file has none cached: by the length of
 * the I/O that finds it so.
 */
#include <errno.h>

#include "folio_size.h"
#include "ctx.h"
#include "folio.h"
#include "inode.h"

static uint32_t round_down_pow2(uint32_t v)
{
	return v ? 1u << (31 - __builtin_clz(v)) : 0;
}

int wtio_inode_set_shape(struct wtio_inode *inode, uint32_t folio_size,
			 bool first)
{
	const struct wtio_geometry *g = &inode->geo;
	uint32_t bs, tail;

	bs = g->dio_offset_align;
	if (bs < 512)
		bs = 512;
	/* Per-block state at the filesystem's block size when the folio
	 * allows: a sub-block direct write is slow (XFS serialises it). */
	if (round_down_pow2(g->blksize) > bs)
		bs = round_down_pow2(g->blksize);
	tail = bs;
	if (bs > folio_size)
		bs = folio_size;
	if (bs < folio_size / WTIO_MAX_BLOCKS_PER_FOLIO)
		bs = folio_size / WTIO_MAX_BLOCKS_PER_FOLIO;
	if (bs < g->dio_offset_align || bs < g->dio_mem_align)
		return -EOPNOTSUPP;	/* folio smaller than a DIO block */
	/* A stripe unit that is not whole blocks cannot be honoured. */
	if (g->stripe_unit % bs) {
		if (!first)
			return -EOPNOTSUPP;
		inode->geo.stripe_unit = 0;
		inode->geo.stripe_width = 0;
		inode->geo.stripe_source = "none";
	}
	if (tail > bs)
		tail = bs;
	atomic_store_explicit(&inode->block_size, bs, memory_order_relaxed);
	atomic_store_explicit(&inode->block_shift,
			      (uint32_t)__builtin_ctz(bs), memory_order_relaxed);
	atomic_store_explicit(&inode->blocks_per_folio, folio_size / bs,
			      memory_order_relaxed);
	atomic_store_explicit(&inode->folio_size, folio_size,
			      memory_order_relaxed);
	atomic_store_explicit(&inode->folio_shift,
			      (uint32_t)__builtin_ctz(folio_size),
			      memory_order_relaxed);
	atomic_store_explicit(&inode->folio_units,
			      folio_size >> inode->ctx->folio_shift,
			      memory_order_relaxed);
	atomic_store_explicit(&inode->tail_unit, tail, memory_order_relaxed);
	return 0;
}

/*
 * The change is made under the file lock held exclusive, which makes it
 * an i_wseq write section: a lockless reader that computed its folio
 * index with the old size either finds no folio or fails its i_wseq
 * check (docs/DESIGN.md, "A file's folio size"). Every other path that
 * uses the shape either holds the file lock or acts on a folio of the
 * file, and the file has none: no folio, none under writeback, no
 * completion still to run (io_refs), checked under the lock. A
 * contended lock skips the change: it is an optimisation, and the next
 * I/O that finds the file empty tries again.
 */
void wtio_inode_pick_folio_size(struct wtio_inode *inode, int64_t off,
				size_t len, bool write)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint32_t want;

	if (ctx->chunk_units == 1)
		return;
	/* A read takes no more than the file holds: a 128 KiB read of a
	 * 12-byte file (cat, cp) wants one small folio, not a large one
	 * (the kernel's folios do not reach far past the end either), and
	 * one at or past the end caches nothing. */
	if (!write) {
		int64_t size = wtio_inode_size(inode);

		if (off >= size)
			return;
		if ((int64_t)len > size - off)
			len = (size_t)(size - off);
	}
	want = len >= ctx->large_size ? ctx->large_size :
	       len <= ctx->folio_size ? ctx->folio_size :
	       round_down_pow2((uint32_t)len);
	if (atomic_load_explicit(&inode->folio_size, memory_order_relaxed) ==
	    want ||
	    atomic_load_explicit(&inode->nr_pages, memory_order_relaxed))
		return;
	if (wtio_rwsem_lock(inode, false, true))
		return;
	if (!atomic_load(&inode->nr_pages) &&
	    !atomic_load(&inode->nr_writeback) &&
	    !atomic_load(&inode->io_refs) &&
	    atomic_load(&inode->folio_size) != want)
		wtio_inode_set_shape(inode, want, false);
	wtio_rwsem_unlock(inode);
}
