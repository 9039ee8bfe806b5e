/* SPDX-License-Identifier: MIT */
/*
 * ioend_priv.h - the ioend itself, shared by the files that build
 * (ioend_build.c), submit (ioend_submit.c), complete (ioend_end.c) and keep
 * (ioend_pool.c) them; everything else sees only ioend.h.
 */
#ifndef WTIO_IOEND_PRIV_H
#define WTIO_IOEND_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ioend.h"
#include "io/io.h"

struct wtio_ioend {
	struct wtio_io_req io_req;
	struct wtio_wb_ctl *io_wbc;
	struct wtio_inode *io_inode;
	int64_t io_offset;		/* file offset of the first byte */
	uint32_t io_size;		/* bytes */
	uint32_t io_done;		/* bytes completed so far */
	int io_nr_vecs;
	int io_nr_segs;			/* (folio, blocks) runs, >= vecs */
	/* Vectors, segments and bytes before the last stripe boundary
	 * inside the ioend (0: none), where a split keeps the stripes
	 * before whole. No vector crosses such a boundary. */
	int io_stripe_vecs;
	int io_stripe_segs;
	uint32_t io_stripe_bytes;
	bool io_extending;		/* counted by wtio_inode_dio_write_begin */
	struct iovec io_vecs[WTIO_IO_MAX_IOVECS];
	struct iovec io_rest[WTIO_IO_MAX_IOVECS];	/* resubmission */
	/* Per segment: its folio and blocks. */
	struct wtio_folio *io_folios[WTIO_IO_MAX_IOVECS];
	uint64_t io_blocks[WTIO_IO_MAX_IOVECS];
	/* Blocks to give back as dirty if the I/O fails; the rest of
	 * io_blocks (a write-through caller's own data) is invalidated. */
	uint64_t io_redirty[WTIO_IO_MAX_IOVECS];
	struct wtio_ioend *io_next;	/* deferred submission */
};

/* A free ioend (its vectors not cleared), or NULL without memory. */
struct wtio_ioend *wtio_ioend_alloc(struct wtio_ctx *ctx);
void wtio_ioend_free(struct wtio_ctx *ctx, struct wtio_ioend *io);
/* Failed blocks of a folio under writeback: those in redirty go back
 * dirty (marked failed when the error was recorded), the rest are
 * invalidated (ioend_end.c). */
void wtio_folio_write_failed(struct wtio_folio *folio, uint64_t blocks,
			     uint64_t redirty, bool recorded);
/* End the ioend's folios' writeback, count, free it (0 or -errno). */
void wtio_ioend_finish(struct wtio_ioend *ioend, int error);
/* The backend's completion of an ioend's request. */
void wtio_ioend_end_io(struct wtio_io_req *req, ssize_t res);
/* The vectors after the last stripe boundary inside io as an ioend of
 * their own, or NULL (ioend_submit.c). */
struct wtio_ioend *wtio_ioend_split_stripe(struct wtio_ioend *io);

#endif /* WTIO_IOEND_PRIV_H */
