/* SPDX-License-Identifier: MIT */
/*
 * dontcache_stream.c - sequential DONTCACHE writes gathered into large
 * I/Os.
 *
 * A DONTCACHE write starts the writeback of its range at once, as the
 * kernel's does. A program streaming a file in writes smaller than an
 * I/O (cp's 128 KiB) then makes an I/O per write: on XFS each extending
 * direct write costs an unwritten-extent conversion and a size update,
 * on a loop or network device a request each. So a write that continues
 * its handle's DONTCACHE stream (it begins where the handle's last
 * DONTCACHE write ended and is smaller than max_io_size) is written
 * dirty, marked drop-behind, and the stream's writeback starts once per
 * whole aligned max_io_size unit, in one I/O. What waits (less than one
 * unit, per handle) starts with the handle's next write that does not
 * continue the stream, its fsync (which writes everything) or its close;
 * until then it is ordinary dirty data: throttled, written by the
 * flushers when it expires, readable, and lost by nothing.
 *
 * The state is a hint per handle, read and written with relaxed atomics:
 * two threads writing through one handle at once can only make a unit
 * start early or late, never leave data out of the dirty set.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "dontcache_stream.h"
#include "ctx.h"
#include "inode.h"
#include "writeback.h"

bool wtio_dc_stream_joins(struct wtio_file *file, off_t off, size_t len)
{
	struct wtio_inode *inode = file->inode;
	uint32_t unit = file->ctx->cfg.max_io_size;

	if (len >= unit || inode->folio_size >= unit || off <= 0)
		return false;
	return atomic_load_explicit(&file->dc_next, memory_order_relaxed) ==
	       (int64_t)off;
}

void wtio_dc_stream_advance(struct wtio_file *file, off_t off, size_t done)
{
	struct wtio_inode *inode = file->inode;
	int64_t unit = file->ctx->cfg.max_io_size;
	int64_t end = (int64_t)off + (int64_t)done;
	int64_t run = atomic_load_explicit(&file->dc_run,
					   memory_order_relaxed);
	int64_t cut = end / unit * unit;

	if (run < 0 || run > (int64_t)off)
		run = off;
	if (cut > run) {
		wtio_writeback_range(inode, run, cut, WB_ASYNC, 0, 0);
		run = cut;
	}
	atomic_store_explicit(&file->dc_run, run < end ? run : -1,
			      memory_order_relaxed);
	atomic_store_explicit(&file->dc_next, end, memory_order_relaxed);
}

void wtio_dc_stream_end(struct wtio_file *file, off_t next)
{
	int64_t run = atomic_exchange_explicit(&file->dc_run, -1,
					       memory_order_relaxed);
	int64_t end = atomic_exchange_explicit(&file->dc_next, next,
					       memory_order_relaxed);

	if (run >= 0 && end > run)
		wtio_writeback_range(file->inode, run, end, WB_ASYNC, 0, 0);
}
