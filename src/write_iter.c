/* SPDX-License-Identifier: MIT */
/*
 * write_iter.c - the one write begin / write end of every buffered write
 * (write-back, write-through, untorn), after the kernel's
 * iomap_write_iter: begin finds the part of the write one folio holds,
 * gets that folio locked and stable (not under writeback, so the copy
 * cannot race its I/O) and makes its partially written blocks uptodate;
 * the caller's data is copied in; end marks the blocks uptodate, leaves
 * the folio dirty, under writeback or clean as the mode says, and moves
 * i_size over what the write put where readers find it. And the choice
 * an adaptive write makes between write-back and write-through.
 */
#include <errno.h>
#include <string.h>

#include "write_iter.h"
#include "iov_iter.h"
#include "folio.h"
#include "cache.h"
#include "folio_alloc.h"
#include "ctx.h"
#include "span.h"
#include "inode.h"
#include "inode_slots.h"
#include "size.h"
#include "read.h"
#include "dirty.h"
#include "ioend.h"
#include "writeback.h"
#include "stats.h"

/* One folio's part of a write, from write begin to write end. */
struct wtio_write_folio {
	struct wtio_span sp;
	struct wtio_folio *folio;	/* locked, stable; NULL: nothing to
					 * update (WTIO_WRITE_CLEAN only) */
	int64_t isize;			/* i_size at begin */
	uint64_t uptodate;		/* blocks uptodate after the copy */
};

unsigned int wtio_write_adapt(struct wtio_inode *inode, unsigned int flags)
{
	struct wtio_ctx *ctx = inode->ctx;
	bool was, through;

	if (!(flags & WTIO_ADAPTIVE) ||
	    (flags & (WTIO_WRITETHROUGH | WTIO_ATOMIC)))
		return flags;
	/*
	 * Where write-back would put the writer to sleep behind the
	 * flushers, it submits its own I/O instead (N submitters, not one
	 * flusher), and goes on doing so for as long as a throttled writer
	 * would sleep: until dirty data is down where the throttle lets its
	 * sleepers go (writers do not flip at the limit with every folio the
	 * flushers clean, nor write through longer than write-back would
	 * have slept). Only a heuristic: every write is correct either way.
	 */
	was = atomic_load_explicit(&ctx->adaptive_through,
				   memory_order_relaxed);
	through = was;
	if (wtio_dirty_would_throttle(ctx))
		through = true;
	else if (was && wtio_dirty_throttle_released(ctx))
		through = false;
	if (through != was)
		atomic_store_explicit(&ctx->adaptive_through, through,
				      memory_order_relaxed);
	if (!through)
		return flags;
	wtio_stat_add(ctx, adaptive_wt, 1);
	return flags | WTIO_WRITETHROUGH;
}

void wtio_write_init(struct wtio_write *w, struct wtio_inode *inode,
		     off_t off, size_t len, unsigned int flags,
		     enum wtio_write_mode mode)
{
	memset(w, 0, sizeof(*w));
	w->inode = inode;
	w->off = off;
	w->len = len;
	w->flags = flags;
	w->mode = mode;
	w->undo = &w->own_undo;
	/* Its first folio's lookup comes after the file lock and the size
	 * checks: let the slot's and the folio's misses overlap them. */
	{
		struct wtio_folio *f = wtio_slots_peek(inode,
			(uint64_t)off >> inode->folio_shift);

		if (f)
			__builtin_prefetch(f, 1);
	}
}

int wtio_write_lock(struct wtio_write *w, bool may_share)
{
	struct wtio_inode *inode = w->inode;
	bool nowait = w->flags & WTIO_NOWAIT;
	int64_t end = w->off + (int64_t)w->len;
	int ret;

	/* Shared only for a write that stays inside i_size; checked again
	 * under the lock, since an extending writer may have moved it. */
	if (may_share && end <= wtio_inode_size(inode)) {
		if (wtio_rwsem_lock(inode, true, nowait))
			return -EAGAIN;
		/* Before looking at i_size (see size_undo.c). */
		wtio_inode_tail_note(inode, w->undo, end, false);
		if (end <= wtio_inode_size(inode)) {
			w->shared = true;
			return 0;
		}
		wtio_inode_tail_drop(inode, w->undo);
		wtio_rwsem_unlock(inode);
	}
	if (!w->shared) {
		if (wtio_rwsem_lock(inode, false, nowait))
			return -EAGAIN;
		wtio_inode_tail_note(inode, w->undo, end, true);
		/* Past i_size: first clean what a failed write left there. */
		if (end > wtio_inode_size(inode)) {
			ret = wtio_inode_prepare_extend(inode, nowait);
			/* What the write covers itself: its blocks (their
			 * space is reserved next), an untorn write only its
			 * bytes (its own direct I/O). */
			if (!ret)
				ret = wtio_inode_settle_tail(inode,
					w->mode == WTIO_WRITE_CLEAN ? w->off :
					w->off & ~(int64_t)(inode->block_size - 1),
					end, nowait);
			if (ret) {
				wtio_inode_tail_claim(inode, w->undo, false, 0);
				wtio_rwsem_unlock(inode);
				return ret;
			}
		}
	}
	w->undo->before = w->undo->after = wtio_inode_size(inode);
	return 0;
}

/* Write-through: submit what this write has gathered and wait for it.
 * Done before blocking on anything, so that no thread ever sleeps while
 * holding writeback that only it can complete. */
static void write_flush_own(struct wtio_write *w)
{
	if (w->cur) {
		wtio_ioend_submit(w->wbc, w->cur);
		w->cur = NULL;
	}
	wtio_ioend_submit_deferred(w->wbc);
	/* A channel's I/O is ended by its own thread: nothing to wait for. */
	if (!w->wbc->chan)
		wtio_ioend_reap_all(w->wbc);
	w->wbc->defer = true;
}

/* Blocks of a folio that [from, to) covers whole. */
static uint64_t whole_blocks(const struct wtio_inode *inode, uint32_t from,
			     uint32_t to)
{
	uint32_t bs = inode->block_size;
	uint32_t a = (from + bs - 1) & ~(bs - 1), b = to & ~(bs - 1);

	return b > a ? wtio_ifs_mask(inode, a, b) : 0;
}

/*
 * The untorn write's folio: only one already cached (the disk has the
 * data, so nothing needs caching), or a new one for a range of whole
 * blocks when w->populate says the range is small against the cache,
 * made without waiting for memory. NULL (and 0): nothing to update.
 */
static struct wtio_folio *write_get_cached(struct wtio_write *w,
					   const struct wtio_write_folio *wf)
{
	struct wtio_inode *inode = w->inode;
	struct wtio_folio *f = wtio_folio_lookup(inode, wf->sp.index);

	if (!f)
		return w->populate && wf->uptodate ?
		       wtio_folio_try_create(inode, wf->sp.index) : NULL;
	wtio_folio_lock(f);
	if (atomic_load(&f->inode) != inode) {
		/* Evicted meanwhile: the disk has it. */
		wtio_folio_unlock(f);
		wtio_folio_put(inode->ctx, f);
		return NULL;
	}
	return f;
}

/* The copy modes' folio: found or created, locked. A write-through
 * writer first tries without sleeping, and submits its own I/O before
 * it sleeps. */
static int write_get_locked(struct wtio_write *w, uint64_t index,
			    bool nowait, struct wtio_folio **foliop)
{
	bool created;
	int ret;

	if (w->wbc && !nowait) {
		ret = wtio_folio_get_locked(w->inode, index, true, foliop,
					    &created);
		if (ret != -EAGAIN)
			return ret;
		write_flush_own(w);
	}
	return wtio_folio_get_locked(w->inode, index, nowait, foliop,
				     &created);
}

/* The folio for wf, locked and not under writeback. */
static int write_get_stable(struct wtio_write *w, struct wtio_write_folio *wf,
			    bool nowait)
{
	struct wtio_inode *inode = w->inode;
	struct wtio_folio *f;
	int ret;

	for (;;) {
		if (w->mode == WTIO_WRITE_CLEAN) {
			f = write_get_cached(w, wf);
			ret = 0;
		} else {
			ret = write_get_locked(w, wf->sp.index, nowait, &f);
		}
		if (ret || !f) {
			wf->folio = NULL;
			return ret;
		}
		if (!wtio_folio_test(f, FOLIO_WRITEBACK))
			break;
		if (nowait) {
			wtio_folio_unlock(f);
			wtio_folio_put(inode->ctx, f);
			return -EAGAIN;
		}
		if (w->wbc) {
			wtio_folio_unlock(f);
			write_flush_own(w);
			wtio_folio_lock(f);
		}
		wtio_folio_wait_writeback(f);
		if (atomic_load(&f->inode) == inode)
			break;
		/* Truncated while unlocked: look it up again. */
		wtio_folio_unlock(f);
		wtio_folio_put(inode->ctx, f);
	}
	wf->folio = f;
	return 0;
}

/*
 * Make the partially written blocks of [from, to) uptodate before the
 * copy: blocks wholly at or past the old size are zeros, the others are
 * read from disk.
 */
static int write_prepare_blocks(struct wtio_inode *inode,
				struct wtio_folio *folio, uint32_t from,
				uint32_t to, int64_t isize, bool nowait)
{
	uint32_t bs = inode->block_size;
	int64_t base = (int64_t)atomic_load(&folio->index) <<
		       inode->folio_shift;
	uint64_t partial = 0, uptodate, zero = 0, read = 0;
	uint64_t b;

	if (from & (bs - 1))
		partial |= 1ull << (from >> inode->block_shift);
	if (to & (bs - 1))
		partial |= 1ull << (to >> inode->block_shift);
	uptodate = atomic_load(&folio->ifs_uptodate);
	partial &= ~uptodate;
	for (b = partial; b; b &= b - 1) {
		uint32_t i = (uint32_t)__builtin_ctzll(b);

		if (base + (int64_t)i * bs >= isize)
			zero |= 1ull << i;
		else
			read |= 1ull << i;
	}
	for (b = zero; b; b &= b - 1) {
		uint32_t i = (uint32_t)__builtin_ctzll(b);

		memset(folio->data + i * bs, 0, bs);
	}
	if (zero)
		wtio_ifs_set_uptodate(inode, folio, zero);
	if (read) {
		if (nowait)
			return -EAGAIN;
		wtio_stat_add(inode->ctx, rmw_reads,
			      (uint64_t)__builtin_popcountll(read));
		return wtio_folio_read_blocks(inode, folio, read);
	}
	return 0;
}

/*
 * Write begin: the next folio's part of the write, its folio locked and
 * stable, its partial blocks uptodate, ready for the copy. The untorn
 * write's I/O is done already: its update of the cache waits rather than
 * fail, and leaves partial blocks as they are (if uptodate they match
 * the disk now; if not, they are read from it when needed).
 */
static int write_begin(struct wtio_write *w, struct wtio_write_folio *wf)
{
	struct wtio_inode *inode = w->inode;
	bool clean = w->mode == WTIO_WRITE_CLEAN;
	bool nowait = (w->flags & WTIO_NOWAIT) && !clean;
	int ret;

	wf->sp = wtio_span_at(inode, w->off, w->len, w->done);
	wf->isize = wtio_inode_size(inode);
	wf->uptodate = clean ? whole_blocks(inode, wf->sp.from, wf->sp.to) :
			       wtio_ifs_mask(inode, wf->sp.from, wf->sp.to);
	ret = write_get_stable(w, wf, nowait);
	if (ret || clean)
		return ret;
	ret = write_prepare_blocks(inode, wf->folio, wf->sp.from, wf->sp.to,
				   wf->isize, nowait);
	if (ret) {
		wtio_folio_unlock(wf->folio);
		wtio_folio_put(inode->ctx, wf->folio);
		wf->folio = NULL;
	}
	return ret;
}

/*
 * Write end: the data is in the folio. Its blocks are uptodate; the folio
 * is left dirty, put under writeback (in the writer's ioend, once
 * unlocked), or left clean; i_size moves over what readers can now find:
 * the copied part (a folio at a time), or all of an untorn write, whose
 * I/O put it on disk at once.
 */
static void write_end(struct wtio_write *w, struct wtio_write_folio *wf)
{
	struct wtio_inode *inode = w->inode;
	struct wtio_folio *f = wf->folio;
	bool dontcache = w->flags & WTIO_DONTCACHE;
	uint32_t n = wf->sp.to - wf->sp.from;
	uint64_t redirty = 0;
	int64_t landed;

	if (f) {
		if (wf->uptodate)
			wtio_ifs_set_uptodate(inode, f, wf->uptodate);
		wtio_folio_mark_dropbehind(f, dontcache);
		if (w->mode == WTIO_WRITE_DIRTY) {
			wtio_ifs_dirty_set(f, f->ifs_dirty | wf->uptodate);
			wtio_folio_mark_dirty(inode, f);
			wtio_folio_clear_error(inode, f);
		} else if (w->mode == WTIO_WRITE_THROUGH &&
			   wtio_folio_test(f, FOLIO_DIRTY)) {
			/* Dirty from an earlier write-back write: written
			 * whole, and clean afterwards. */
			redirty = f->ifs_dirty;
			wtio_ifs_dirty_set(f, f->ifs_dirty | wf->uptodate);
			wtio_folio_start_writeback(inode, f);
		} else if (w->mode == WTIO_WRITE_THROUGH) {
			wtio_folio_set_writeback(inode, f);
			wtio_wb_blocks_set(f, wf->uptodate);
		}
	}
	w->done += n;
	landed = w->mode == WTIO_WRITE_CLEAN ? w->off + (int64_t)w->len :
					       wf->sp.pos + (int64_t)n;
	if (landed > wf->isize) {
		atomic_store(&inode->i_size, landed);
		w->undo->after = landed;
		w->extended = true;
	}
	if (!f)
		return;
	wtio_folio_unlock(f);
	if (w->mode == WTIO_WRITE_THROUGH)
		wtio_ioend_add_folio(w->wbc, &w->cur, f,
				     w->keep_failed ? ~0ull : redirty);
	else if (w->mode == WTIO_WRITE_CLEAN && dontcache)
		wtio_folio_drop_behind(inode->ctx, f);
	wtio_folio_put(inode->ctx, f);
}

int wtio_write_iter(struct wtio_write *w, struct wtio_iov_iter *it)
{
	struct wtio_write_folio wf;
	int ret;

	while (w->done < w->len) {
		ret = write_begin(w, &wf);
		if (ret)
			return ret;
		/* Drop-behind data is not read from the cache again. */
		if (wf.folio)
			wtio_iter_copy_how(it, wf.folio->data + wf.sp.from,
					   wf.sp.to - wf.sp.from,
					   (w->flags & WTIO_DONTCACHE) ?
					   WTIO_ITER_FROM_NT : WTIO_ITER_FROM);
		else
			wtio_iter_skip(it, wf.sp.to - wf.sp.from);
		write_end(w, &wf);
	}
	return 0;
}

void wtio_write_unlock(struct wtio_write *w)
{
	struct wtio_inode *inode = w->inode;

	if (w->cur) {
		wtio_ioend_submit(w->wbc, w->cur);
		w->cur = NULL;
	}
	/* Undoable until the write ends (wtio_write_finish). */
	if (!w->shared)
		wtio_inode_tail_claim(inode, w->undo, w->claim,
				      w->done ? w->off + (int64_t)w->done : 0);
	wtio_rwsem_unlock(inode);
	/* An undo's cut our hold kept from it; a write-through writer's
	 * own I/O is in flight still: it does so once that is over. */
	if (!w->shared && w->mode != WTIO_WRITE_THROUGH)
		wtio_inode_cut_pending(inode);
}

void wtio_write_finish(struct wtio_write *w, int err)
{
	if (w->claim)
		wtio_inode_tail_end(w->inode, w->undo, err != 0, false);
}

int wtio_write_room_again(struct wtio_write *w, ssize_t fit)
{
	struct wtio_inode *inode = w->inode;
	int ret;

	if (fit >= 0 ? (size_t)fit >= w->len : fit != -ENOSPC && fit != -EDQUOT)
		return 0;
	if (w->shared) {
		/* A NOSERIAL write inside the size: the file's own space
		 * goes back only under the exclusive lock (a hole inside the
		 * file was cut short where the kernel accepts the write). */
		if (w->flags & WTIO_NOWAIT)
			return 0;
		wtio_inode_tail_drop(inode, w->undo);
		wtio_rwsem_unlock(inode);
		w->shared = false;
		ret = wtio_write_lock(w, false);
		if (ret)
			return ret;
		/* Unlocked for a while: what was reserved may have gone
		 * with a truncate meanwhile. */
		wtio_inode_give_back_tail(inode, false);
		return 1;
	}
	return wtio_inode_give_back_tail(inode, w->flags & WTIO_NOWAIT);
}
