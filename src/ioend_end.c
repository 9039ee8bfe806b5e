/* SPDX-License-Identifier: MIT */
/*
 * ioend_end.c - the completion of a write I/O built from folios: count it,
 * resubmit the rest of a short write, retry a write refused for space
 * through the page cache, and end the folios' writeback (on failure
 * giving their blocks back dirty or invalidating them).
 */
#include <errno.h>
#include <stdint.h>

#include "ioend_priv.h"
#include "reserve.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "dirty.h"
#include "errseq.h"
#include "stats.h"
#include "test_hooks.h"

/*
 * A write-through I/O that ran out of space with blocks of its writer in
 * it: the writer gets the error and its write is undone, so fsync has
 * nothing of it to report. The kernel's write-through allocates before
 * its I/O, so a full disk fails that write and never a later fsync (a
 * database treats a failed fsync as fatal, a failed write as an
 * ordinary error). Blocks of earlier writes it carried along (dirty in
 * the same folio) are given back dirty, not marked failed, and written
 * again by the flushers or the next fsync, which record or report that
 * write's outcome: recording this error too
 * would fail an fsync that put every acknowledged byte on disk. Their
 * space was reserved when they were written, so it was the writer's
 * blocks that found none; where it was not (no fallocate, a reflink
 * made later), the retry fails the same way and is recorded then. An
 * I/O of write-back alone (every block given back dirty) is recorded.
 */
static bool ioend_space_error_is_writers(const struct wtio_ioend *ioend,
					 int error)
{
	int i;

	if (error != -ENOSPC && error != -EDQUOT)
		return false;
	for (i = 0; i < ioend->io_nr_segs; i++)
		if (ioend->io_blocks[i] & ~ioend->io_redirty[i])
			return true;
	return false;
}

void wtio_write_io_end(struct wtio_inode *inode, bool extending, int64_t off,
		       uint64_t done, uint64_t size, int error, bool record)
{
	struct wtio_ctx *ctx = inode->ctx;

	if (error) {
		if (record)
			wtio_inode_record_error(inode, error);
		wtio_stat_add(ctx, wb_errors, 1);
	} else {
		wtio_stat_add(ctx, bytes_written, size);
	}
	wtio_inode_dio_write_end(inode, extending, off, (ssize_t)done);
}

/*
 * The write of blocks of a folio under writeback failed. While WRITEBACK
 * is set the dirty bits belong to the I/O: the blocks in redirty go back
 * dirty, so the data is never taken for clean (background writeback
 * leaves FOLIO_ERROR folios to fsync, which retries them). The others
 * are a write-through caller's, who is told the write failed: the cache
 * must not go on serving that data as if the disk had it, so readers go
 * to the disk.
 */
void wtio_folio_write_failed(struct wtio_folio *folio, uint64_t blocks,
			     uint64_t redirty, bool recorded)
{
	uint64_t inval = blocks & ~redirty;

	if (redirty) {
		/* Two I/Os of one folio (blocks apart, a stripe or size cut)
		 * can fail and end in two reaping threads at once. */
		__atomic_fetch_or(&folio->ifs_dirty, redirty, __ATOMIC_RELAXED);
		/* Marked failed (left to fsync, and given up when the
		 * cache fills with nothing else) only when the error is
		 * recorded for fsync to report: blocks a writer's own
		 * out-of-space I/O carried go back as plain dirty data,
		 * for the flushers to write again, whose failure is. */
		if (recorded)
			wtio_folio_set_flag(folio, FOLIO_ERROR);
	}
	if (inval) {
		wtio_folio_clear_flag(folio, FOLIO_UPTODATE);
		atomic_fetch_and(&folio->ifs_uptodate, ~inval);
	}
}

void wtio_ioend_finish(struct wtio_ioend *ioend, int error)
{
	struct wtio_inode *inode = ioend->io_inode;
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_wb_ctl *wbc = ioend->io_wbc;
	struct wtio_folio *ended[WTIO_IO_MAX_IOVECS];
	int i, n = 0;

	if (error && wbc) {
		wtio_wbc_set_error(wbc, error);
		/* A short direct write stops at a block boundary: what it
		 * wrote is on disk. */
		wtio_wbc_set_fail_from(wbc, ioend->io_offset + ioend->io_done);
	}
	bool record = !ioend_space_error_is_writers(ioend, error);

	wtio_write_io_end(inode, ioend->io_extending, ioend->io_offset,
			  ioend->io_done, ioend->io_size, error, record);
	if (error)
		WTIO_TEST_HOOK(WTIO_TP_WB_FAILED, NULL);
	/* The folios whose last I/O this was end their writeback together
	 * (one pass over the list's lock), before any of them is dropped. */
	for (i = ioend->io_nr_segs; i-- > 0;) {
		struct wtio_folio *folio = ioend->io_folios[i];

		if (error)
			wtio_folio_write_failed(folio, ioend->io_blocks[i],
					   ioend->io_redirty[i], record);
		if (atomic_fetch_sub(&folio->wb_pending, 1) == 1) {
			/* Under writeback ifs_dirty holds only what failed
			 * I/Os gave back (writers wait for the writeback). */
			if (folio->ifs_dirty)
				wtio_folio_mark_dirty(inode, folio);
			wtio_wb_blocks_set(folio, 0);
			ended[n++] = folio;
		}
	}
	if (error)
		atomic_fetch_add(&inode->redirty_seq, 1);
	wtio_folios_finish_writeback(inode, ended, n);
	/* Dropped only after an I/O that succeeded, and only clean and
	 * idle (wtio_folio_drop_behind): a folio given back dirty by a
	 * failed I/O stays, for fsync to retry and report. */
	for (i = 0; i < n && !error; i++)
		if (wtio_folio_test(ended[i], FOLIO_DROPBEHIND))
			wtio_folio_drop_behind(ctx, ended[i]);
	/* The ones this frees (drop-behind) go on the free list at once
	 * and in file order, so that it hands them out again in the order
	 * of their memory, even to a writer waiting for them: the next
	 * stream's folios are consecutive slots again (one buffer an I/O). */
	wtio_folio_put_many(ctx, ioend->io_folios, ioend->io_nr_segs);
	wtio_ioend_free(ctx, ioend);
	if (wbc && atomic_fetch_sub(&wbc->inflight, 1) == 1 && wbc->done)
		wbc->done(wbc);
	wtio_inode_io_put(inode);
	/* Throttled writers are not woken here: they wait for dirty data
	 * to fall, which happens when writeback starts (dirty.c). */
	wtio_cache_wake_space(ctx);
}

/*
 * A direct write refused for space gets one more try, of what it did not
 * write, through the kernel's page cache: ext4 refuses a direct write
 * into blocks a file has past its end (wtio's chunk reserved ahead of
 * appends) when splitting their unwritten extent needs a metadata block
 * and only the reserve it keeps for its own writeback is left, which the
 * kernel's buffered write of the same data gets. Its blocks are taken
 * again first, and after (wtio_reserve_regain: ext4 frees what lies past
 * the end of file when an extending write fails, its own first try
 * included). Only when its own blocks are there: where the space is
 * really gone (or the filesystem cannot allocate ahead) the direct
 * write's error stands, and no window of O_DIRECT off opens for nothing
 * (a write-back error of the second try is reported as such). Never
 * for an untorn write, which the cache may tear.
 */
static ssize_t ioend_write_cached(struct wtio_ioend *ioend, ssize_t err)
{
	struct wtio_inode *inode = ioend->io_inode;
	struct wtio_io_req *req = &ioend->io_req;
	int64_t from = -1, end = ioend->io_offset + ioend->io_size;
	ssize_t got;

	if (req->rw_flags & RWF_ATOMIC)
		return err;
	if (ioend->io_extending && wtio_backing_size(inode->fd, &from) != 0)
		from = -1;
	/* No blocks for it: a write through the cache would fail too,
	 * and, extending the file, have ext4 free the others again. */
	if (wtio_reserve_regain(inode, from,
				ioend->io_offset + ioend->io_done, end))
		return err;
	while (ioend->io_done < ioend->io_size) {
		wtio_io_req_rest(req, ioend->io_offset, ioend->io_vecs,
				 ioend->io_nr_vecs, ioend->io_done,
				 ioend->io_rest);
		got = wtio_io_write_cached(&inode->ctx->io, req->fd, req->iov,
					   req->iovcnt, req->off);
		if (got <= 0) {
			err = got == -EIO ? got : err;
			break;
		}
		ioend->io_done += (uint32_t)got;
	}
	if (from >= 0)
		wtio_reserve_regain(inode, from, 0, 0);
	return ioend->io_done < ioend->io_size ? err : 0;
}

void wtio_ioend_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct wtio_ioend *ioend = (struct wtio_ioend *)req;
	struct wtio_io_backend *be = &ioend->io_inode->ctx->io;

	if (res == -ENOSPC || res == -EDQUOT) {
		wtio_ioend_finish(ioend, (int)ioend_write_cached(ioend, res));
		return;
	}
	if (res < 0) {
		wtio_ioend_finish(ioend, (int)res);
		return;
	}
	if (res == 0) {
		/* A write that makes no progress will not make any if
		 * repeated: the device is out of space or broken. */
		wtio_ioend_finish(ioend, -EIO);
		return;
	}
	ioend->io_done += (uint32_t)res;
	if (ioend->io_done >= ioend->io_size) {
		wtio_ioend_finish(ioend, 0);
		return;
	}
	/* Short write: the rest goes again, from this thread, as part of
	 * the same ioend. Block alignment holds because a short direct
	 * write stops at a block boundary; if it did not, the kernel would
	 * reject the resubmission and we report that error. */
	wtio_io_req_rest(req, ioend->io_offset, ioend->io_vecs,
			 ioend->io_nr_vecs, ioend->io_done, ioend->io_rest);
	wtio_stat_add(ioend->io_inode->ctx, write_ios, 1);
	/* Not started (only a malformed request is refused): no end_io. */
	if (wtio_io_resubmit(be, ioend->io_wbc->chan, req) < 0)
		wtio_ioend_finish(ioend, -EIO);
}
