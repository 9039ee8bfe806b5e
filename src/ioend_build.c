/* SPDX-License-Identifier: MIT */
/*
 * ioend_build.c - building write I/Os from the blocks of folios under
 * writeback. Their submission is in ioend_submit.c, their completion in
 * ioend_end.c, the store of free ones in ioend_pool.c.
 *
 * An ioend is one write I/O over a contiguous file range, built from runs
 * of dirty blocks of consecutive folios (one segment per run), capped at
 * max_io_size. Segments whose memory follows on from the one before share
 * an iovec: a stream written into consecutive slots of the arena goes out
 * as one buffer, which the backend can pass as a registered (fixed) one
 * instead of pinning every page of it. A folio may feed several ioends
 * when its dirty blocks are not contiguous; wb_pending counts them and the
 * last completion ends the folio's writeback.
 *
 * On a striped device the ioends follow stripe.h's rule: whole aligned
 * stripes, or inside one stripe. Runs are cut at stripe boundaries, an
 * ioend that starts inside a stripe ends at its boundary, the size cap is
 * whole stripes, and an ioend that ends inside a stripe after crossing a
 * boundary (the data stopped there) gives that last part an I/O of its
 * own, so the stripes before it go out whole.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ioend_priv.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "inode.h"
#include "dirty.h"
#include "errseq.h"
#include "stats.h"
#include "stripe.h"

/* The next len bytes of the ioend are at buf: the last vector goes on
 * when buf follows it in memory, except at a stripe boundary (where a
 * split may have to cut). */
static void ioend_add_vec(struct wtio_ioend *io, char *buf, uint32_t len,
			  bool edge)
{
	struct iovec *v;

	if (io->io_nr_vecs && !edge) {
		v = &io->io_vecs[io->io_nr_vecs - 1];
		if ((char *)v->iov_base + v->iov_len == buf) {
			v->iov_len += len;
			return;
		}
	}
	v = &io->io_vecs[io->io_nr_vecs++];
	v->iov_base = buf;
	v->iov_len = len;
}

/*
 * Where the I/O of the block holding the file's end stops: the end
 * rounded up to the filesystem's block (tail_unit), not to ours. Past it
 * the cache holds zeros, and the disk reads zeros (a hole, or past the
 * backing file's end): a whole block of ours there would allocate blocks
 * the kernel's write-back leaves alone, which a full filesystem refuses,
 * where the write that dirtied the block needed none. Before the size
 * moves past that point, a dirty block whose rest is not known allocated
 * is written back at the old size (wtio_inode_settle_tail), so no later
 * write-back writes it whole into space nobody reserved. INT64_MAX: our
 * block is the filesystem's.
 */
static int64_t ioend_tail_end(struct wtio_inode *inode)
{
	int64_t t = inode->tail_unit;

	if (t >= (int64_t)inode->block_size)
		return INT64_MAX;
	return (wtio_inode_size(inode) + t - 1) & ~(t - 1);
}

/*
 * Add the dirty blocks of a folio now under writeback to the current
 * ioend, starting new ones where the range is not contiguous or full.
 */
void wtio_ioend_add_folio(struct wtio_wb_ctl *wbc, struct wtio_ioend **cur,
			  struct wtio_folio *folio, uint64_t redirty)
{
	struct wtio_inode *inode = wbc->inode;
	struct wtio_ctx *ctx = wbc->ctx;
	uint64_t blocks = folio->wb_blocks;
	int64_t base = (int64_t)atomic_load(&folio->index) << inode->folio_shift;
	uint32_t bs = inode->block_size;
	uint64_t sw = wtio_stripe_width(&inode->geo, bs);
	uint64_t cap = wtio_stripe_io_cap(sw, ctx->cfg.max_io_size);
	int64_t eof_io_end = ioend_tail_end(inode);

	/* One pending count for the whole add, so no ioend completing in
	 * between can end the writeback early. */
	atomic_fetch_add(&folio->wb_pending, 1);
	while (blocks) {
		uint32_t first = (uint32_t)__builtin_ctzll(blocks);
		/* ctz(0) is undefined: a run of all 64 blocks is n = 64. */
		uint32_t n = ~(blocks >> first) ?
			(uint32_t)__builtin_ctzll(~(blocks >> first)) : 64u;
		int64_t off = base + (int64_t)first * bs;
		uint64_t in = sw ? (uint64_t)off % sw : 0;
		bool edge = sw && !in;		/* off is a stripe boundary */
		struct wtio_ioend *io = *cur;
		bool contiguous = io && io->io_offset + io->io_size == off;
		bool head_ends;
		uint64_t run;
		uint32_t len;

		if (first + n > 64)
			n = 64 - first;
		/* A run goes to the next stripe boundary at most, so that an
		 * ioend can end (or be split) at any boundary. */
		if (sw && (uint64_t)n * bs > sw - in)
			n = (uint32_t)((sw - in) / bs);
		run = (n >= 64 ? ~0ull : ((1ull << n) - 1)) << first;
		len = n * bs;
		blocks &= ~run;
		/* The block holding the end stops at the end's tail_unit
		 * (read after the blocks were taken: the size covers all
		 * their data). Nothing follows on from a cut run. */
		if (off < eof_io_end && off + len > eof_io_end)
			len = (uint32_t)(eof_io_end - off);
		if (io && contiguous && io->io_nr_segs == WTIO_IO_MAX_IOVECS) {
			/* Full inside a stripe: the part after its last
			 * boundary goes on in an ioend of its own. */
			struct wtio_ioend *tail = in ? wtio_ioend_split_stripe(io) :
						       NULL;

			*cur = tail;
			wtio_ioend_submit(wbc, io);
			io = tail;
			contiguous = tail != NULL;
		}
		/* An ioend that began inside a stripe ends at its boundary. */
		head_ends = contiguous && edge && io->io_offset % (int64_t)sw;
		if (io && (!contiguous || head_ends ||
			   io->io_size + len > cap)) {
			/* Counted where the stripe rule ends an I/O that
			 * would have gone on without it: a head, or whole
			 * stripes at a cap rounded down from max_io_size. */
			if (head_ends ||
			    (contiguous && cap < ctx->cfg.max_io_size))
				wtio_stat_add(ctx, stripe_splits, 1);
			*cur = NULL;
			wtio_ioend_submit(wbc, io);
			io = NULL;
		}
		if (!io) {
			io = wtio_ioend_alloc(ctx);
			if (!io) {
				/* Failed as an I/O of them would have: the
				 * blocks to give back stay dirty (marked
				 * failed), a write-through writer's own are
				 * invalidated, since it is told its write
				 * failed and the disk does not have them. */
				wtio_folio_write_failed(folio, run, run & redirty,
							true);
				wtio_inode_record_error(inode, -ENOMEM);
				wtio_wbc_set_error(wbc, -ENOMEM);
				wtio_wbc_set_fail_from(wbc, off);
				continue;
			}
			memset(io, 0, offsetof(struct wtio_ioend, io_vecs));
			io->io_wbc = wbc;
			io->io_inode = inode;
			wtio_inode_io_get(inode);
			io->io_offset = off;
			*cur = io;
		} else if (edge) {
			io->io_stripe_vecs = io->io_nr_vecs;
			io->io_stripe_segs = io->io_nr_segs;
			io->io_stripe_bytes = io->io_size;
		}
		wtio_folio_get(folio);
		atomic_fetch_add(&folio->wb_pending, 1);
		ioend_add_vec(io, folio->data + first * bs, len, edge);
		io->io_folios[io->io_nr_segs] = folio;
		io->io_blocks[io->io_nr_segs] = run;
		io->io_redirty[io->io_nr_segs] = run & redirty;
		io->io_nr_segs++;
		io->io_size += len;
	}
	if (atomic_fetch_sub(&folio->wb_pending, 1) == 1) {
		/* Nothing could be queued (allocation failure). */
		if (folio->ifs_dirty)
			wtio_folio_mark_dirty(inode, folio);
		atomic_fetch_add(&inode->redirty_seq, 1);
		wtio_wb_blocks_set(folio, 0);
		wtio_folio_finish_writeback(inode, folio);
	}
}
