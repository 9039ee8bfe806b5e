/* SPDX-License-Identifier: MIT */
/*
 * buffered_read.c - the read iterator: serve from the cache, read missing
 * blocks with direct I/O, and read sequential streams ahead in one I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iov_iter.h"
#include "hit_copy.h"
#include "test_hooks.h"
#include "folio.h"
#include "cache.h"
#include "folio_alloc.h"
#include "cache_peek.h"
#include "ctx.h"
#include "span.h"
#include "inode.h"
#include "read.h"
#include "read_io.h"
#include "readahead.h"
#include "stats.h"

/*
 * A cache hit served without the bucket lock, a reference or the folio
 * lock: a seqcount read section over the folio's seq (see folio.c and
 * docs/DESIGN.md, "The lockless cache hit: memory-model argument").
 *
 *   read_seqcount_begin:  s = seq (acquire); odd: a holder may be
 *                         changing the folio, take the locked path
 *   identity, block state, copy (may race a later holder: checked)
 *   read_seqcount_retry:  acquire fence; seq again (relaxed); != s:
 *                         the copy may be torn or of another folio
 *
 * On any doubt the copy is undone (the iterator rewound, the caller's
 * bytes overwritten by the locked path). Most reads of a cached file
 * end here.
 */
static bool read_hit_unlocked(struct wtio_inode *inode, uint64_t index,
			      uint32_t from, uint32_t to,
			      struct wtio_iov_iter *it, struct wtio_folio **mark)
{
	struct wtio_folio *f;
	struct wtio_iov_iter start = *it;
	uint32_t seq, state;

	if (WTIO_TSAN)
		return false;
	f = wtio_folio_peek(inode, index, from, to);
	if (!f)
		return false;
	seq = atomic_load_explicit(&f->seq, memory_order_acquire);
	if ((seq & 1) ||
	    ((atomic_load_explicit(&f->inode, memory_order_relaxed) != inode ||
	      atomic_load_explicit(&f->index, memory_order_relaxed) != index) &&
	     !WTIO_TEST_HOOK(WTIO_TP_HIT_IDENTITY, f)) ||
	    !wtio_ifs_range_uptodate(inode, f, from, to))
		return false;
	/* The racy part: only ever stored to the caller's buffer, never
	 * looked at here, kept only if the re-check below passes. */
	wtio_iter_copy_hit(it, f->data + from, to - from);
	if (WTIO_TEST_HOOK(WTIO_TP_HIT_COPIED, f))
		goto keep;	/* a test proving its checker can see tears */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&f->seq, memory_order_relaxed) != seq) {
		WTIO_TEST_HOOK(WTIO_TP_HIT_RETRY, f);
		*it = start;
		return false;
	}
keep:
	WTIO_TEST_HOOK(WTIO_TP_HIT_OK, f);
	state = atomic_load_explicit(&f->state, memory_order_relaxed);
	if (!(state & FOLIO_REFERENCED))
		wtio_folio_set_flag(f, FOLIO_REFERENCED);
	/* Only a hint for the caller (readahead.c), checked again there. */
	if (state & FOLIO_READAHEAD)
		*mark = f;
	return true;
}

/* A read reached the first folio of an asynchronous readahead window
 * (folio held, file lock held): start the next one. */
static void read_ahead_mark(struct wtio_file *file, struct wtio_folio *f,
			    int64_t isize, bool ra_ok, bool dontcache)
{
	if (ra_ok && (atomic_load_explicit(&f->state, memory_order_relaxed) &
		      FOLIO_READAHEAD))
		wtio_ra_marked(file, f, isize, dontcache);
}

/* A folio read ahead for a drop-behind stream (FOLIO_DROPBEHIND) that a
 * DONTCACHE read copied leaves the cache, as the folios the read itself
 * missed on do: unlocked, still referenced by the caller. */
static void read_drop_behind(struct wtio_ctx *ctx, struct wtio_folio *f,
			     bool drop)
{
	if (drop && wtio_folio_test(f, FOLIO_DROPBEHIND))
		wtio_folio_drop_behind(ctx, f);
}

/*
 * The whole read served from the cache without the file lock. Every
 * exclusive hold of the lock (writers that move the size or write more
 * than one folio at a time, truncate) is a write section of the inode's
 * i_wseq (inode.h); every folio is checked by its own seq as in
 * read_hit_unlocked. A read that finds i_wseq even before, every folio a
 * lockless hit, and i_wseq unchanged after its last copy overlapped no
 * exclusive hold: it is the read a shared holder of the lock would have
 * made (docs/DESIGN.md, "Reads without the file lock"). Any doubt, a
 * miss or a folio in use: -1, and the caller takes the lock and starts
 * again from the first byte, overwriting whatever was copied here.
 * Returns the bytes read (0 at end of file) or -1.
 */
static ssize_t read_cached_unlocked(struct wtio_inode *inode,
				    const struct iovec *iov, int iovcnt,
				    off_t off, size_t len,
				    struct wtio_folio **mark)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_iov_iter it;
	size_t done = 0;
	uint64_t nr = 0;
	int64_t isize;
	uint32_t ws;
	bool blind;

	if (WTIO_TSAN)
		return -1;
	/* A test proving its checker can see what the count prevents. */
	blind = WTIO_TEST_HOOK(WTIO_TP_WSEQ_SKIP, NULL);
	ws = atomic_load_explicit(&inode->i_wseq, memory_order_acquire);
	if ((ws & 1) && !blind)
		return -1;
	isize = wtio_inode_size(inode);
	if (off >= isize)
		len = 0;
	else if ((int64_t)len > isize - off)
		len = (size_t)(isize - off);
	wtio_iter_init(&it, iov, iovcnt);
	while (done < len) {
		struct wtio_span sp = wtio_span_at(inode, off, len, done);

		WTIO_TEST_HOOK(WTIO_TP_HIT_SPAN, NULL);
		if (!read_hit_unlocked(inode, sp.index, sp.from, sp.to, &it,
				       mark))
			return -1;
		done += sp.to - sp.from;
		nr++;
	}
	/* read_seqcount_retry: no load above may be satisfied after this
	 * one (read_hit_unlocked fenced each copy already; the size load
	 * and an end-of-file answer need it too). */
	atomic_thread_fence(memory_order_acquire);
	if (!blind &&
	    atomic_load_explicit(&inode->i_wseq, memory_order_relaxed) != ws) {
		WTIO_TEST_HOOK(WTIO_TP_WSEQ_RETRY, NULL);
		return -1;
	}
	WTIO_TEST_HOOK(WTIO_TP_WSEQ_OK, NULL);
	if (nr)
		wtio_stat_add(ctx, hits, nr);
	return (ssize_t)done;
}

/*
 * A read missed on a folio it created (locked, referenced, handed over
 * here). The following folios that are not cached are created too (as
 * many as can be had without waiting), up to the end of the read and, on
 * a sequential stream, over the readahead window counted from the miss;
 * all are read in one I/O, and the read's own part of each is copied.
 * Large reads make I/Os as large as themselves, not one per folio or per
 * window. With WTIO_DONTCACHE only free folios are taken (a drop-behind
 * read must not push other data out) and each folio the read copies
 * leaves the cache: those that were cached before stay. Its window
 * (WTIO_CONFIG_DONTCACHE_READAHEAD, else none) is read into folios
 * marked FOLIO_DROPBEHIND, dropped when a DONTCACHE read copies them.
 * Returns 0 or a negative errno; *donep moves over what was copied.
 */
static int read_run(struct wtio_file *file, struct wtio_folio *folio,
		    off_t off, size_t len, size_t *donep,
		    struct wtio_iov_iter *it, int64_t isize, uint32_t window,
		    bool dontcache)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t index = atomic_load(&folio->index);
	uint64_t last = ((uint64_t)off + len - 1) >> inode->folio_shift;
	uint64_t eof = (uint64_t)(isize - 1) >> inode->folio_shift;
	uint64_t ra_last = index + (window >> inode->folio_shift) - 1;
	struct wtio_folio *v[WTIO_IO_MAX_IOVECS];
	struct iovec iov[WTIO_IO_MAX_IOVECS];
	uint64_t blocks[WTIO_IO_MAX_IOVECS];
	uint64_t nr_ahead = 0;
	size_t bytes = 0;
	ssize_t got;
	int n = 1, k, ret = 0;

	if (window && ra_last > last)
		last = ra_last < eof ? ra_last : eof;
	v[0] = folio;
	while (n < WTIO_IO_MAX_IOVECS && index + (uint64_t)n <= last) {
		uint64_t at = index + (uint64_t)n;
		struct wtio_folio *f = dontcache ?
				       wtio_folio_try_create_free(inode, at) :
				       wtio_folio_try_create(inode, at);

		if (!f)
			break;
		v[n++] = f;
	}
	/* Every folio but the last lies below isize whole: the iovecs are
	 * one contiguous range of the file. */
	for (k = 0; k < n; k++) {
		blocks[k] = wtio_blocks_below(inode, index + (uint64_t)k, isize);
		iov[k].iov_base = v[k]->data;
		iov[k].iov_len = (uint32_t)(64 - __builtin_clzll(blocks[k])) *
				 inode->block_size;
		bytes += iov[k].iov_len;
	}
	got = wtio_read_folios(inode, iov, n,
			       (off_t)(index << inode->folio_shift), bytes);
	if (got < 0)
		ret = (int)got;
	for (k = 0; k < n; k++) {
		size_t start = (size_t)k << inode->folio_shift;
		bool mine = *donep < len, whole = true;

		if (!ret) {
			size_t have = (size_t)got > start ? (size_t)got - start : 0;

			if (have > inode->folio_size)
				have = inode->folio_size;
			/* Blocks past the end stay not uptodate: the file
			 * may grow under them from outside (a shim peer). */
			wtio_zero_past_eof(inode, v[k], 0, inode->folio_size, have);
			wtio_ifs_set_uptodate(inode, v[k], blocks[k]);
		}
		if (mine && !ret) {
			struct wtio_span sp = wtio_span_at(inode, off, len, *donep);

			wtio_iter_copy(it, v[k]->data + sp.from,
				       sp.to - sp.from, true);
			*donep += sp.to - sp.from;
			whole = sp.to == inode->folio_size;
		}
		if (k && !mine)
			nr_ahead++;
		else if (k)
			wtio_stat_add(ctx, misses, 1);
		/* A failed folio simply stays not uptodate; whoever needs
		 * it reads it again. A stream that reads ahead keeps what it
		 * has not read to the end yet, for its next read. */
		if (dontcache && (!window || (mine && whole))) {
			wtio_folio_remove(v[k]);
			wtio_stat_add(ctx, dropbehind, inode->folio_units);
		} else if (dontcache) {
			wtio_folio_set_flag(v[k], FOLIO_DROPBEHIND);
		}
		wtio_folio_unlock(v[k]);
		wtio_folio_put(ctx, v[k]);
	}
	if (nr_ahead)
		wtio_stat_add(ctx, readahead,
			      (uint64_t)nr_ahead * inode->folio_units);
	/* The stream's next miss is where the readahead ends; with a
	 * completion thread, the next window is on its way already. */
	if (window) {
		atomic_store_explicit(&file->ra_next,
				      (int64_t)((index + (uint64_t)n) <<
						inode->folio_shift),
				      memory_order_relaxed);
		if (!ret)
			wtio_ra_async(file, index + (uint64_t)n, window, isize,
				      dontcache);
	}
	return ret;
}

ssize_t wtio_buffered_read(struct wtio_file *file, const struct iovec *iov,
			   int iovcnt, off_t off, unsigned int flags)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	bool nowait = flags & WTIO_NOWAIT;
	bool dontcache = flags & WTIO_DONTCACHE;
	/* A drop-behind stream that reads ahead drops what it copied of
	 * it, under the folio lock: it takes no lockless hits. */
	bool drop = dontcache &&
		    (ctx->cfg.flags & WTIO_CONFIG_DONTCACHE_READAHEAD);
	bool ra_ok = (!dontcache || drop) && !nowait;
	struct wtio_folio *mark = NULL;
	bool ra_done;
	struct wtio_iov_iter it;
	size_t len = 0, done = 0;
	uint32_t window;
	int64_t isize;
	int ret = 0;

	len = wtio_iov_length(iov, iovcnt);
	if (len && !drop) {
		ssize_t got = read_cached_unlocked(inode, iov, iovcnt, off, len,
						   &mark);

		if (got < 0) {
			mark = NULL;
		} else {
			/* Readahead creates folios: only under the lock,
			 * and only if it can be had at once. */
			if (mark && ra_ok && !wtio_rwsem_lock(inode, true, true)) {
				if (atomic_load(&mark->inode) == inode)
					read_ahead_mark(file, mark,
							wtio_inode_size(inode),
							true, false);
				wtio_rwsem_unlock(inode);
			}
			return got;
		}
	}
	if (wtio_rwsem_lock(inode, true, nowait))
		return -EAGAIN;
	isize = wtio_inode_size(inode);
	if (off >= isize || !len)
		goto out;
	if ((int64_t)len > isize - off)
		len = (size_t)(isize - off);
	/* The readahead state is only touched when a read misses: a read
	 * served from the cache must not write to the handle, which other
	 * threads reading through it share. */
	window = 0;
	ra_done = dontcache && !drop;	/* nor do other drop-behind reads */
	wtio_iter_init(&it, iov, iovcnt);

	while (done < len) {
		struct wtio_span sp = wtio_span_at(inode, off, len, done);
		uint64_t index = sp.index;
		uint32_t from = sp.from, to = sp.to;
		struct wtio_folio *f;
		bool created;

		if (!drop &&
		    read_hit_unlocked(inode, index, from, to, &it, &mark)) {
			wtio_stat_add(ctx, hits, 1);
			done += to - from;
			if (mark && atomic_load(&mark->inode) == inode)
				read_ahead_mark(file, mark, isize, ra_ok,
						false);
			mark = NULL;
			continue;
		}
		f = wtio_folio_lookup(inode, index);
		if (f && wtio_ifs_range_uptodate(inode, f, from, to)) {
			/* Copy under the folio lock: a WTIO_NOSERIAL writer
			 * holds the file lock only shared and copies into
			 * the folio under its lock, so without it a reader
			 * could see a folio torn between two writes. */
			if (nowait) {
				if (!wtio_folio_trylock(f)) {
					wtio_folio_put(ctx, f);
					ret = -EAGAIN;
					break;
				}
			} else {
				wtio_folio_lock(f);
			}
			/* Still this file's: a lookup's reference does not
			 * keep a folio cached (docs/DESIGN.md, "A reference
			 * without the bucket lock"). */
			if ((WTIO_TEST_HOOK(WTIO_TP_READ_IDENTITY, f) ||
			     (atomic_load(&f->inode) == inode &&
			      atomic_load(&f->index) == index)) &&
			    wtio_ifs_range_uptodate(inode, f, from, to)) {
				wtio_stat_add(ctx, hits, 1);
				wtio_iter_copy(&it, f->data + from, to - from,
					       true);
				read_ahead_mark(file, f, isize, ra_ok,
						dontcache);
				wtio_folio_unlock(f);
				if (to == inode->folio_size)
					read_drop_behind(ctx, f, drop);
				wtio_folio_put(ctx, f);
				done += to - from;
				continue;
			}
			wtio_folio_unlock(f);
		}
		if (f)
			wtio_folio_put(ctx, f);
		if (nowait) {
			ret = -EAGAIN;
			break;
		}
		ret = wtio_folio_get_locked(inode, index, false, &f, &created);
		if (ret)
			break;
		/* Only a folio that was not there is a miss of the stream:
		 * one being read ahead (locked until its I/O ends) is not. */
		if (created && !ra_done) {
			window = wtio_ra_window(file, off, len);
			ra_done = true;
		}
		if (created) {
			ret = read_run(file, f, off, len, &done, &it, isize,
				       window, dontcache);
			if (ret)
				break;
			continue;
		}
		if (!wtio_ifs_range_uptodate(inode, f, from, to))
			ret = wtio_folio_read_blocks(inode, f,
					wtio_blocks_below(inode, index, isize));
		if (!ret) {
			wtio_iter_copy(&it, f->data + from, to - from, true);
			read_ahead_mark(file, f, isize, ra_ok, dontcache);
		}
		wtio_folio_unlock(f);
		if (!ret && to == inode->folio_size)
			read_drop_behind(ctx, f, drop);
		wtio_folio_put(ctx, f);
		if (ret)
			break;
		done += to - from;
	}
out:
	wtio_rwsem_unlock(inode);
	return done ? (ssize_t)done : ret;
}
