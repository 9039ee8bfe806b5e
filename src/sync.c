/* SPDX-License-Identifier: MIT */
/*
 * sync.c - making a file's data and size durable: the one sequence
 * (write the range back, wait, fix the size, flush) behind fsync,
 * fdatasync, close and DSYNC write-back writes, sync_file_range, and
 * the size of a closed file written back later.
 */
#include <pthread.h>
#include <stdbool.h>

#include <wtio.h>
#include "sync.h"
#include "rlimit_fsize.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "writeback.h"
#include "errseq.h"

static int make_durable(struct wtio_inode *inode, int64_t start, int64_t end,
			unsigned int how)
{
	bool go_on = !(how & WTIO_DURABLE_STOP);
	uint64_t seq = atomic_load(&inode->redirty_seq);
	int ret, err;

	ret = wtio_writeback_range(inode, start, end, WB_SYNC, 0, 0);
	/* I/O a flusher (or a queue) has in flight may still extend the
	 * backing file by a block tail: the size is fixed after it ends,
	 * or it would stay too long. */
	wtio_wait_writeback_range(inode, start, end);
	/* Write-back in flight when the pass looked (a flusher's, or
	 * started) that failed meanwhile gave its folios back dirty, where
	 * the pass never saw them: once more, for those (it is reported as
	 * well, through errseq), or a close would drop them. The count is
	 * bumped before those folios leave writeback, and the wait above
	 * saw them leave; one bumped before seq was read had its folios
	 * dirty again before this pass's cutoff, so the pass wrote them.
	 * (err_seq would not do: the error is recorded before the folios
	 * are given back, so a pass starting in between misses both.)
	 * Until the count stays: a writer waiting for one of those folios
	 * can put it under writeback again before that pass looks, and its
	 * I/O, failing for its own lack of space (recorded for nobody but
	 * it), gives an earlier write's blocks back once more after the
	 * pass (a review saw fsync return 0 so with the data not on disk).
	 * Each round needs another failed I/O: writers that keep failing
	 * keep fsync going, as writers keep the kernel's. */
	while (!ret && atomic_load(&inode->redirty_seq) != seq) {
		seq = atomic_load(&inode->redirty_seq);
		ret = wtio_writeback_range(inode, start, end, WB_SYNC, 0, 0);
		wtio_wait_writeback_range(inode, start, end);
	}
	if (!ret || go_on) {
		pthread_rwlock_rdlock(&inode->i_rwsem);
		err = wtio_inode_sync_size(inode, true);
		pthread_rwlock_unlock(&inode->i_rwsem);
		if (!ret)
			ret = err;
	}
	if ((how & WTIO_DURABLE_FLUSH) && (!ret || go_on)) {
		struct wtio_io_req req = {
			.op = (how & WTIO_DURABLE_DATA) ? WTIO_IO_FDATASYNC :
							  WTIO_IO_FSYNC,
			.fd = inode->fd,
		};
		ssize_t res = wtio_io_sync(&inode->ctx->io, &req);

		if (res < 0) {
			if (how & WTIO_DURABLE_RECORD)
				wtio_inode_record_error(inode, (int)res);
			ret = (int)res;
		}
	}
	return ret;
}

/* Write-back and size fixes past RLIMIT_FSIZE fail in this thread as in
 * a flusher (rlimit_fsize.h): EFBIG, no SIGXFSZ. */
int wtio_make_durable(struct wtio_inode *inode, int64_t start, int64_t end,
		      unsigned int how)
{
	struct wtio_xfsz_hold xfsz;
	int ret;

	wtio_xfsz_hold(&xfsz);
	ret = make_durable(inode, start, end, how);
	wtio_xfsz_release(&xfsz);
	return ret;
}

void wtio_settle_closed(struct wtio_inode *inode)
{
	bool dirty;
	int ret;

	pthread_mutex_lock(&inode->dirty_lock);
	dirty = inode->nr_dirty != 0;
	pthread_mutex_unlock(&inode->dirty_lock);
	if (dirty)
		return;		/* the next pass */
	/* The pass's I/O may still be in flight: a block tail it writes
	 * lengthens the file after the size is set. */
	wtio_wait_writeback_range(inode, 0, -1);
	pthread_rwlock_rdlock(&inode->i_rwsem);
	ret = wtio_inode_sync_size(inode, true);
	pthread_rwlock_unlock(&inode->i_rwsem);
	/* The next handle of the file, or the context's end, reports it. */
	if (ret)
		wtio_inode_record_error(inode, ret);
}

int wtio_fsync_file(struct wtio_file *file, bool datasync)
{
	/* Its error is recorded for every handle too; returned here as
	 * well, so that no failure can ever be taken for success. */
	int ret = wtio_make_durable(file->inode, 0, -1, WTIO_DURABLE_FLUSH |
				    WTIO_DURABLE_RECORD |
				    (datasync ? WTIO_DURABLE_DATA : 0));
	/* Writeback errors, ours or a flusher's, reach each handle once. */
	int err = wtio_file_check_error(file);

	return err ? err : ret;
}

static int sync_range(struct wtio_file *file, off_t off, off_t nbytes,
		      unsigned int flags)
{
	struct wtio_inode *inode = file->inode;
	int64_t end = nbytes ? off + nbytes : -1;
	int ret = 0;

	/* No lock is held here: the waits reap the started writeback. */
	if (flags & WTIO_SYNC_RANGE_WAIT_BEFORE) {
		wtio_wait_writeback_range_reaping(inode, off, end);
		/* As Linux's: an error the first wait finds ends the call,
		 * before any write (the caller learns of it now, and its
		 * retry decides what to write). */
		ret = wtio_file_check_error(file);
		if (ret)
			return ret;
	}
	if (flags & WTIO_SYNC_RANGE_WRITE)
		ret = wtio_writeback_range(inode, off, end,
				(flags & WTIO_SYNC_RANGE_WAIT_AFTER) ?
				WB_SYNC : WB_ASYNC, 0, 0);
	if (flags & WTIO_SYNC_RANGE_WAIT_AFTER)
		wtio_wait_writeback_range_reaping(inode, off, end);
	if (flags & (WTIO_SYNC_RANGE_WAIT_BEFORE | WTIO_SYNC_RANGE_WAIT_AFTER)) {
		/* As Linux's file_fdatawait_range: an error it reports is
		 * seen by this handle (errseq), so fsync does not report it
		 * again, nor does a handle opened afterwards. */
		int err = wtio_file_check_error(file);

		if (!ret)
			ret = err;
	}
	return ret;
}

/* The waits may end and retry started writeback in this thread, past
 * RLIMIT_FSIZE too (rlimit_fsize.h). */
int wtio_sync_file_range(struct wtio_file *file, off_t off, off_t nbytes,
			 unsigned int flags)
{
	struct wtio_xfsz_hold xfsz;
	int ret;

	wtio_xfsz_hold(&xfsz);
	ret = sync_range(file, off, nbytes, flags);
	wtio_xfsz_release(&xfsz);
	return ret;
}
