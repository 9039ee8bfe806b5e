/* SPDX-License-Identifier: MIT */
/*
 * ioend.h - write I/Os built from the blocks of folios under writeback:
 * one caller's batch of them (wb_ctl), their building, submission and
 * completion.
 */
#ifndef WTIO_IOEND_H
#define WTIO_IOEND_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "size.h"

struct wtio_ctx;
struct wtio_folio;
struct wtio_inode;
struct wtio_io_chan;

/* Most ioends a wb_ctl holds before handing them to the backend. */
#define WTIO_WB_MAX_BATCH 32

/* One caller's batch of ioends: a flusher pass, fsync, or a
 * write-through write (sync or queued). */
struct wtio_ioend;
struct wtio_wb_ctl {
	struct wtio_ctx *ctx;
	struct wtio_inode *inode;
	/* ioends in flight. With a channel, its reaper thread completes
	 * them while the submitter may still be submitting. */
	_Atomic unsigned int inflight;
	unsigned int max_inflight;	/* reap when reached; 0 = no limit */
	_Atomic int error;		/* first I/O error */
	/* 1 + the lowest file offset an I/O failed at (0: none): where a
	 * write-through write refused for space is cut short. */
	_Atomic int64_t fail_from;
	int rw_flags;			/* RWF_DSYNC for write-through DSYNC */
	bool defer;			/* collect ioends, submit later */
	struct wtio_ioend *deferred;
	struct wtio_io_chan *chan;	/* submit here instead (queues) */
	/* With chan: I/O that may extend the file goes through the
	 * append plug instead, merged (append_plug.h). */
	bool plug;
	/* Hand the backend (or the channel, for started writeback) this
	 * many ioends at a time, one system call for them all (0 or 1:
	 * each at once). Any wait of the submitter sends the ones held
	 * first. */
	unsigned int batch;
	unsigned int nr_batched;
	struct wtio_io_req *batched[WTIO_WB_MAX_BATCH];
	/* Called from the completion of the last ioend in flight. */
	void (*done)(struct wtio_wb_ctl *wbc);
	/* Write-through: so that a failed write can undo its extension. */
	struct wtio_size_undo undo;
};

static inline void wtio_wbc_set_error(struct wtio_wb_ctl *wbc, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&wbc->error, &none, err);
}

/* A write-through write of copied bytes at off whose I/O failed with
 * err: when the disk ran out of space (ENOSPC, EDQUOT) after bytes of it
 * that every I/O below the lowest failed offset put there, their count
 * (a short count, as the kernel's buffered write returns what it copied
 * before the space ran out); else -1, the write fails whole. */
static inline int64_t wtio_wbc_space_short(struct wtio_wb_ctl *wbc, int err,
					   int64_t off, int64_t copied)
{
	int64_t from;

	if ((err != -ENOSPC && err != -EDQUOT) || copied <= 0)
		return -1;
	from = atomic_load(&wbc->fail_from) - 1;
	if (from <= off)
		return -1;
	return from - off < copied ? from - off : copied;
}

/* An I/O failed from file offset off on. */
static inline void wtio_wbc_set_fail_from(struct wtio_wb_ctl *wbc, int64_t off)
{
	int64_t cur = atomic_load(&wbc->fail_from);

	while ((cur == 0 || cur > off + 1) &&
	       !atomic_compare_exchange_weak(&wbc->fail_from, &cur, off + 1))
		;
}

/*
 * A direct write of [off, off + size) that wrote done bytes ended, with
 * error 0 or a negative errno: count it, record a failure for fsync
 * (unless record is false: the writer alone is told), and tell the
 * disk-size gate (extending: as wtio_inode_dio_write_begin answered).
 * Every write I/O's end: ioends and untorn writes.
 */
void wtio_write_io_end(struct wtio_inode *inode, bool extending, int64_t off,
		       uint64_t done, uint64_t size, int error, bool record);
/* Queue a folio's wb_blocks into ioends; blocks in redirty are given back
 * as dirty if the I/O fails, the others are invalidated. */
void wtio_ioend_add_folio(struct wtio_wb_ctl *wbc, struct wtio_ioend **cur,
			  struct wtio_folio *folio, uint64_t redirty);
int wtio_ioend_submit(struct wtio_wb_ctl *wbc, struct wtio_ioend *ioend);
/* Where the ioend ends, when that is inside a stripe (else -1): a folio
 * there would take it on towards whole stripes. */
int64_t wtio_ioend_open_stripe_end(const struct wtio_ioend *ioend);
/* The context's store of finished ioends: set up, and freed once no
 * I/O is left (wtio_writeback_init and _exit). */
void wtio_ioend_pool_init(struct wtio_ctx *ctx);
void wtio_ioend_pool_exit(struct wtio_ctx *ctx);
int wtio_ioend_submit_deferred(struct wtio_wb_ctl *wbc);
/* Hand the ioends wbc holds (wbc->batch) to the backend, in one call;
 * those it cannot start fail as their I/O would have. */
int wtio_ioend_send(struct wtio_wb_ctl *wbc);
void wtio_ioend_reap_all(struct wtio_wb_ctl *wbc);

#endif /* WTIO_IOEND_H */
