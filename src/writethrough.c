/* SPDX-License-Identifier: MIT */
/*
 * writethrough.c - buffered write-through: the writer copies into the
 * cache and submits the I/O itself, so there is no dirty backlog and no
 * flusher in the way.
 *
 * Folios go LOCKED -> copy -> WRITEBACK (never DIRTY) -> unlocked. A
 * folio under writeback is stable: an overlapping writer waits for its
 * I/O, which orders the two writes on disk. That is why the I/O can be
 * submitted after the file lock is dropped (the kernel series submits
 * under it and pays for it in parallel writers).
 *
 * WTIO_NOSERIAL takes the file lock shared for writes that do not extend
 * the file: overlapping concurrent writes may then mix at folio
 * granularity (never inside a folio: the folio lock holds for the copy),
 * and a reader may see some folios old and some new.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iov_iter.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "write.h"
#include "write_iter.h"
#include "ioend.h"
#include "errseq.h"
#include "reserve.h"
#include "sys.h"

/*
 * Appending write-through I/Os are in flight together, so most of them
 * start past the backing file's end, and a filesystem serialises such
 * direct writes (XFS zeroes the gap under its exclusive lock and waits
 * for all direct I/O). Keep the backing file's size ahead of i_size, as
 * XFS keeps blocks ahead of EOF, so the writes land inside it. Only zeros
 * lie past i_size; fsync and close set the exact size. Opt-in
 * (WTIO_CONFIG_SIZE_AHEAD): after a crash the file can end in zeros.
 * Exclusive lock held.
 */
static void wt_extend_ahead(struct wtio_inode *inode)
{
	int64_t isize = wtio_inode_size(inode);
	int64_t ahead = isize / 16, target;

	if (isize <= atomic_load(&inode->size_ahead))
		return;
	if (ahead < (1 << 20))
		ahead = 1 << 20;
	if (ahead > (64 << 20))
		ahead = 64 << 20;
	target = (isize + ahead + (1 << 20) - 1) & ~(int64_t)((1 << 20) - 1);
	/* Past the end of every write in flight (all end below i_size), so
	 * this never cuts data; on failure the writes just go slower. */
	if (wtio_inode_set_disk_size(inode, target, true) == 0)
		atomic_store(&inode->size_ahead, target);
}

ssize_t wtio_writethrough_copy(struct wtio_file *file, const struct iovec *iov,
			       int iovcnt, off_t off, unsigned int flags,
			       struct wtio_wb_ctl *wbc, bool keep_deferred,
			       bool *extending)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_ctx *ctx = inode->ctx;
	struct wtio_iov_iter it;
	struct wtio_write w;
	ssize_t fit;
	size_t len;
	int ret;

	len = wtio_iov_length(iov, iovcnt);
	*extending = false;
	memset(&wbc->undo, 0, sizeof(wbc->undo));
	if (!len)
		return 0;
	wbc->ctx = ctx;
	wbc->inode = inode;
	wbc->defer = true;
	if (flags & WTIO_DSYNC)
		wbc->rw_flags |= RWF_DSYNC;

	wtio_write_init(&w, inode, off, len, flags, WTIO_WRITE_THROUGH);
	w.wbc = wbc;
	/* Kept there for whoever ends the write (wtio_writethrough, or the
	 * queue's completion), once its I/O is over. */
	w.undo = &wbc->undo;
	/* Its I/O can fail after the lock is dropped: always undoable. */
	w.claim = true;
	ret = wtio_write_lock(&w, flags & WTIO_NOSERIAL);
	if (ret)
		return ret;
	/* Space first (reserve.c): the part that fits is all that is
	 * copied, so a write cut short leaves nothing past its count. */
	fit = wtio_reserve_through(inode, off, len, flags & WTIO_DSYNC,
				   w.shared);
	ret = wtio_write_room_again(&w, fit);
	if (ret < 0)
		return ret;
	if (ret)
		fit = wtio_reserve_through(inode, off, len,
					   flags & WTIO_DSYNC, w.shared);
	if (fit < 0) {
		wtio_write_unlock(&w);
		return (int)fit;
	}
	w.len = (size_t)fit;
	wtio_iter_init(&it, iov, iovcnt);
	ret = wtio_write_iter(&w, &it);
	*extending = w.extended;
	if (w.extended && (ctx->cfg.flags & WTIO_CONFIG_SIZE_AHEAD))
		wt_extend_ahead(inode);
	wtio_write_unlock(&w);
	if (!keep_deferred)
		wtio_ioend_submit_deferred(wbc);
	return w.done ? (ssize_t)w.done : ret;
}

int wtio_dsync_finish(struct wtio_inode *inode, int64_t end, bool in_reaper)
{
	struct wtio_io_req req = { .op = WTIO_IO_FDATASYNC, .fd = inode->fd };
	int64_t disk;
	ssize_t res;
	int ret;

	/* An extending direct write with RWF_DSYNC makes the new size
	 * durable with the data, but rounded up to its block: O_DSYNC
	 * promises the exact size (a log appended in 100-byte records must
	 * not end in zeros after a crash). Fix the size and flush it when
	 * the backing file ends past i_size, or short of this write (a
	 * truncate raced with it). Aligned appends pay nothing. With the
	 * opt-in size ahead the backing file is longer on purpose. */
	ret = wtio_backing_size(inode->fd, &disk);
	if (ret)
		return ret;
	if (disk >= end && (atomic_load(&inode->size_ahead) ||
			    disk <= wtio_inode_size(inode)))
		return 0;
	/* A completion thread must not block on the file lock: its holder
	 * may be waiting for a completion only this thread can deliver.
	 * When busy, the size stays as the direct write (or a truncate
	 * racing with it) left it until fsync or close make it exact. */
	if (in_reaper) {
		if (pthread_rwlock_tryrdlock(&inode->i_rwsem))
			return 0;
	} else {
		pthread_rwlock_rdlock(&inode->i_rwsem);
	}
	ret = wtio_inode_sync_size(inode, !in_reaper);
	pthread_rwlock_unlock(&inode->i_rwsem);
	if (ret)
		return ret;
	res = wtio_io_sync(&inode->ctx->io, &req);
	return res < 0 ? (int)res : 0;
}

ssize_t wtio_writethrough(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags)
{
	struct wtio_wb_ctl wbc = { 0 };
	int64_t short_count;
	bool extending;
	ssize_t ret;
	int err;

	/* Submitted and waited for in one system call: nothing between
	 * the submit and the reap blocks without reaping first (the gate's
	 * wait reaps this thread's writes, as does a wait for a folio). */
	wtio_io_plug(&file->inode->ctx->io, true);
	ret = wtio_writethrough_copy(file, iov, iovcnt, off, flags, &wbc,
				     false, &extending);
	wtio_ioend_reap_all(&wbc);
	wtio_io_plug(&file->inode->ctx->io, false);
	err = atomic_load(&wbc.error);
	/* Out of space part way: the part on disk is what the write
	 * reports (the failed blocks read from the disk again: ioend_end.c),
	 * its end the size's, set first: the DSYNC step makes it durable. */
	short_count = wtio_wbc_space_short(&wbc, err, off, ret);
	if (short_count >= 0) {
		ret = short_count;
		err = 0;
		wtio_inode_tail_end_short(file->inode, &wbc.undo, off + ret,
					  false);
	}
	if (!err && ret > 0 && extending && (flags & WTIO_DSYNC)) {
		err = wtio_dsync_finish(file->inode, off + ret, false);
		if (err)
			wtio_inode_record_error(file->inode, err);
	}
	/* A failed write leaves the size where it was (see "Sizes and
	 * errors on failure" in docs/DESIGN.md); one cut short and then
	 * failed in its DSYNC step keeps the part it had (on disk). */
	if (short_count < 0)
		wtio_inode_tail_end(file->inode, &wbc.undo, err || ret < 0,
				    false);
	/* An undo's cut our hold of the file lock kept from it. */
	wtio_inode_cut_pending(file->inode);
	return err ? err : ret;
}
