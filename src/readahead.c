/* SPDX-License-Identifier: MIT */
/*
 * readahead.c - sequential streams: their detection per handle (the
 * kernel's file_ra_state) and the asynchronous readahead that keeps the
 * next window in flight while a stream copies the current one.
 *
 * A window read asynchronously is a run of new folios, locked until its
 * I/O completes on the context's completion thread (a folio under read
 * is locked, as in the kernel), the first one marked FOLIO_READAHEAD.
 * The read that reaches the mark starts the next window, so a stream
 * that copies slower than the disk reads never waits for it. Backends
 * without channels (psync) have no completion thread: there readahead
 * stays synchronous, in the miss (buffered_read.c).
 */
#include <stdlib.h>

#include "readahead.h"
#include "read_io.h"
#include "folio.h"
#include "cache.h"
#include "folio_alloc.h"
#include "ctx.h"
#include "inode.h"
#include "stats.h"
#include "io/io.h"

/* Sequential detection per handle, like the kernel's file_ra_state. */
uint32_t wtio_ra_window(struct wtio_file *file, off_t off, size_t len)
{
	struct wtio_ctx *ctx = file->ctx;
	struct wtio_inode *inode = file->inode;
	uint32_t max = ctx->cfg.readahead_max;
	uint32_t w = atomic_load_explicit(&file->ra_window, memory_order_relaxed);

	if (!max)
		return 0;
	int64_t next = atomic_load_explicit(&file->ra_next,
					   memory_order_relaxed);

	/* Only misses update the state, so a sequential reader's next miss
	 * comes where the last readahead ended, or (after a miss read
	 * without readahead) within a folio of where the last read ended. */
	if (off != 0 && (off < next || off - next >= inode->folio_size)) {
		w = 0;
	} else {
		w = w ? w * 2 : 4 * inode->folio_size;
		if (w > max)
			w = max;
	}
	atomic_store_explicit(&file->ra_window, w, memory_order_relaxed);
	atomic_store_explicit(&file->ra_next, off + (off_t)len,
			      memory_order_relaxed);
	return w;
}

/* One window in flight. */
struct ra_io {
	struct wtio_io_req req;		/* first: end_io's req is the ra_io */
	struct wtio_inode *inode;
	int64_t isize;			/* the size the window was built for */
	int n;
	struct wtio_folio *v[WTIO_IO_MAX_IOVECS];
	uint32_t len[WTIO_IO_MAX_IOVECS];	/* what the I/O reads of each */
	struct iovec iov[WTIO_IO_MAX_IOVECS];	/* merged where contiguous */
	uint64_t blocks[WTIO_IO_MAX_IOVECS];
};

/*
 * On the completion thread. A folio the read covered in full is
 * uptodate; so is the file's last one when the read reached the size
 * the window was built for (a direct read stops at the backing file's
 * end, inside that folio: its blocks below the size are all there, the
 * rest is zeroed and stays not uptodate, as the synchronous read leaves
 * it). One it did not cover (an error, the backing file ending short of
 * it) stays not uptodate, and whoever needs it reads it again in full,
 * as after a failed synchronous readahead. Then the folios are unlocked
 * and released; the inode's pin goes last.
 */
static void ra_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct ra_io *ra = (struct ra_io *)req;
	struct wtio_inode *inode = ra->inode;
	struct wtio_ctx *ctx = inode->ctx;
	size_t got = res > 0 ? (size_t)res : 0, start = 0;
	int k;

	if (res > 0) {
		wtio_stat_add(ctx, bytes_read, (uint64_t)res);
	}
	for (k = 0; k < ra->n; k++) {
		struct wtio_folio *f = ra->v[k];
		size_t len = ra->len[k], need = len;
		int64_t in = ra->isize - ((int64_t)(ra->req.off) +
					  (int64_t)start);

		/* (the last folio: the bytes below the size; the window's
		 * folios are contiguous from req.off, len each) */
		if (in < (int64_t)need)
			need = in > 0 ? (size_t)in : 0;
		if (need && start + need <= got) {
			wtio_zero_past_eof(inode, f, 0, inode->folio_size,
					   got - start < len ? got - start : len);
			wtio_ifs_set_uptodate(inode, f, ra->blocks[k]);
		} else if (k == 0) {
			/* Nobody starts the next window from a folio that
			 * has to be read again. */
			wtio_folio_clear_flag(f, FOLIO_READAHEAD);
		}
		start += len;
		wtio_folio_unlock(f);
		wtio_folio_put(ctx, f);
	}
	atomic_fetch_sub(&ctx->nr_read_io, ra->n);
	free(ra);
	wtio_inode_io_put(inode);
	atomic_fetch_sub(&ctx->wb_chan_users, 1);
}

/* The I/Os of one window at most: a window is cut into I/Os of
 * max_io_size (and of at most WTIO_IO_MAX_IOVECS folios) each. */
#define RA_MAX_IOS 16

/*
 * One I/O of a window: up to want new folios from index on, below eof,
 * as many as can be had without waiting (free ones only for a
 * drop-behind stream, which must not push other data out; those are
 * marked FOLIO_DROPBEHIND, to leave the cache once read). NULL when not
 * even the first could be had.
 */
static struct ra_io *ra_build(struct wtio_inode *inode, uint64_t index,
			      uint64_t want, uint64_t eof, int64_t isize,
			      bool dontcache)
{
	struct wtio_ctx *ctx = inode->ctx;
	struct ra_io *ra = malloc(sizeof(*ra));
	int n = 0;

	if (!ra)
		return NULL;
	while ((uint64_t)n < want && index + (uint64_t)n <= eof) {
		uint64_t at = index + (uint64_t)n;
		struct wtio_folio *f = dontcache ?
				       wtio_folio_try_create_free(inode, at) :
				       wtio_folio_try_create(inode, at);

		if (!f)
			break;
		if (dontcache)
			wtio_folio_set_flag(f, FOLIO_DROPBEHIND);
		ra->v[n] = f;
		ra->blocks[n] = wtio_blocks_below(inode, at, isize);
		ra->len[n] = (uint32_t)(64 - __builtin_clzll(ra->blocks[n])) *
			     inode->block_size;
		ra->iov[n].iov_base = f->data;
		ra->iov[n].iov_len = ra->len[n];
		n++;
	}
	if (!n) {
		free(ra);
		return NULL;
	}
	ra->n = n;
	ra->inode = inode;
	ra->isize = isize;
	ra->req = (struct wtio_io_req){
		.op = WTIO_IO_READ, .fd = inode->fd,
		.off = (off_t)(index << inode->folio_shift),
		.iov = ra->iov, .iovcnt = wtio_iov_merge(ra->iov, n),
		.end_io = ra_end_io,
	};
	wtio_stat_add(ctx, readahead, (uint64_t)n * inode->folio_units);
	wtio_stat_add(ctx, read_ios, 1);
	/* Pins for the completion: the inode (close waits for it) and the
	 * completion thread (the context's end waits for it). */
	wtio_inode_io_get(inode);
	atomic_fetch_add(&ctx->wb_chan_users, 1);
	atomic_fetch_add(&ctx->nr_read_io, n);
	return ra;
}

void wtio_ra_async(struct wtio_file *file, uint64_t index, uint32_t window,
		   int64_t isize, bool dontcache)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_io_chan *chan = ctx->wb_reaper.chan;
	uint64_t nr = window >> inode->folio_shift, eof;
	uint64_t per_io = ctx->cfg.max_io_size >> inode->folio_shift;
	struct wtio_io_req *reqs[RA_MAX_IOS];
	unsigned int nreq = 0;

	if (!chan || !nr || isize <= 0)
		return;
	eof = (uint64_t)(isize - 1) >> inode->folio_shift;
	if (index > eof)
		return;
	if (per_io > WTIO_IO_MAX_IOVECS)
		per_io = WTIO_IO_MAX_IOVECS;
	while (nr && nreq < RA_MAX_IOS) {
		uint64_t want = nr < per_io ? nr : per_io;
		struct ra_io *ra = ra_build(inode, index, want, eof, isize,
					    dontcache);

		if (!ra)
			break;
		/* The read that reaches the window's first folio starts the
		 * next window. */
		if (!nreq)
			wtio_folio_set_flag(ra->v[0], FOLIO_READAHEAD);
		reqs[nreq++] = &ra->req;
		index += (uint64_t)ra->n;
		nr -= (uint64_t)ra->n;
		/* A folio cached already, or none free: the window ends. */
		if ((uint64_t)ra->n < want)
			break;
	}
	if (!nreq)
		return;
	atomic_store_explicit(&file->ra_next,
			      (int64_t)(index << inode->folio_shift),
			      memory_order_relaxed);
	/* The window's I/Os in one submission. Never fails for well-formed
	 * requests: one it cannot queue is completed with the error here,
	 * which leaves its folios not uptodate, to be read again. */
	wtio_io_chan_submit(chan, reqs, nreq);
}

void wtio_ra_marked(struct wtio_file *file, struct wtio_folio *folio,
		    int64_t isize, bool dontcache)
{
	struct wtio_ctx *ctx = file->ctx;
	struct wtio_inode *inode = file->inode;
	uint32_t max = ctx->cfg.readahead_max;
	uint32_t w = atomic_load_explicit(&file->ra_window, memory_order_relaxed);
	int64_t next;

	/* One reader takes the mark: whoever clears it. */
	if (!(atomic_fetch_and_explicit(&folio->state, ~FOLIO_READAHEAD,
					memory_order_relaxed) & FOLIO_READAHEAD))
		return;
	if (!max)
		return;
	w = w ? w * 2 : 4 * inode->folio_size;
	if (w > max)
		w = max;
	atomic_store_explicit(&file->ra_window, w, memory_order_relaxed);
	next = atomic_load_explicit(&file->ra_next, memory_order_relaxed);
	if (next <= 0)
		return;
	wtio_ra_async(file, (uint64_t)next >> inode->folio_shift, w, isize,
		      dontcache);
}
