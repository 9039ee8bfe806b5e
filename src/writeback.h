/* SPDX-License-Identifier: MIT */
/* writeback.h - writing back the dirty folios of a file range, and
 * waiting for writeback in flight on one. */
#ifndef WTIO_WRITEBACK_H
#define WTIO_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_inode;

/* WB_BACKGROUND: flushers, skip what is busy. WB_SYNC: wait for every
 * folio and its I/O. WB_ASYNC: like background, but submitted to the
 * context's channel and not waited for (sync_file_range WRITE, and
 * drop-behind writes: "start writeback"). */
enum wtio_wb_mode { WB_BACKGROUND, WB_SYNC, WB_ASYNC };

/*
 * Write back dirty folios of inode in [start, end) (end -1: to EOF).
 * WB_SYNC waits for every folio's lock and writeback and retries folios
 * whose last write failed; it returns the first I/O error it saw.
 * nr_to_write limits folios (0 = no limit); expired_before, if nonzero,
 * selects only folios dirtied before that time.
 */
int wtio_writeback_range(struct wtio_inode *inode, int64_t start, int64_t end,
			 enum wtio_wb_mode mode, uint64_t nr_to_write,
			 uint64_t expired_before);
/* A batch for started writeback of inode, submitted to the context's
 * channel and completed by its thread (NULL: no channel, or no memory);
 * wtio_wb_async_end gives back the caller's hold once all is submitted,
 * and the last completion frees it. */
struct wtio_wb_ctl;
struct wtio_wb_ctl *wtio_wb_async_begin(struct wtio_inode *inode);
void wtio_wb_async_end(struct wtio_wb_ctl *wbc);
/* Wait for writeback in flight on [start, end). */
void wtio_wait_writeback_range(struct wtio_inode *inode, int64_t start,
			       int64_t end);
/* The same, reaping the context's channel for started writeback in this
 * thread meanwhile: its completions run here, so only for a caller that
 * holds no lock (no file lock, no folio lock) while it waits. */
void wtio_wait_writeback_range_reaping(struct wtio_inode *inode,
				       int64_t start, int64_t end);

/* Write back the block holding the end `size` (unaligned: a block tail
 * lies past it) and wait for its writeback, so that the backing file
 * keeps that size until a write dirties the block. An I/O error leaves
 * the block dirty and failed, as any writeback's. File lock held. */
void wtio_inode_settle_end_block(struct wtio_inode *inode, int64_t size);
/* Before a write or truncate moves i_size up to size, covering from
 * `from` on itself (exclusive lock held): the block holding the current
 * end, dirty and without space past the end's filesystem block
 * (wtio_reserve_tail_missing), is written back at the current size
 * first. -EAGAIN with nowait when that write is needed. */
int wtio_inode_settle_tail(struct wtio_inode *inode, int64_t from,
			   int64_t size, bool nowait);
/*
 * A write found no room: give back what is reserved past the end's
 * filesystem block, the rest of the end's block of ours included (a
 * chunk ahead of appends), as XFS gives back its speculative
 * preallocation before it reports ENOSPC. A dirty end block is written
 * back at the current size first (not with nowait). Returns whether
 * anything went back: the caller reserves again. Caller holds i_rwsem
 * exclusive.
 */
bool wtio_inode_give_back_tail(struct wtio_inode *inode, bool nowait);

#endif /* WTIO_WRITEBACK_H */
