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
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "span.h"
#include "inode.h"
#include "size.h"
#include "write.h"
#include "dirty.h"
#include "ioend.h"
#include "writeback.h"

/* Submit what this write has gathered and wait for it: done before
 * blocking on anything, so that no thread ever sleeps while holding
 * writeback that only it can complete. */
static void wt_flush_own(struct wtio_wb_ctl *wbc, struct wtio_ioend **cur)
{
	if (*cur) {
		wtio_ioend_submit(wbc, *cur);
		*cur = NULL;
	}
	wtio_ioend_submit_deferred(wbc);
	wtio_ioend_reap_all(wbc);
	wbc->defer = true;
}

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
	bool nowait = flags & WTIO_NOWAIT;
	bool shared = false;
	struct wtio_ioend *cur = NULL;
	struct wtio_iov_iter it;
	size_t len = 0, done = 0;
	int ret = 0;

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

	/* Shared only for a write that stays inside i_size; checked again
	 * under the lock, since an extending writer may have moved it. */
	if ((flags & WTIO_NOSERIAL) &&
	    off + (int64_t)len <= wtio_inode_size(inode)) {
		if (wtio_rwsem_lock(inode, true, nowait))
			return -EAGAIN;
		/* Before looking at i_size (see wtio_inode_tail_note). */
		wtio_inode_tail_note(inode, off + (int64_t)len);
		if (off + (int64_t)len <= wtio_inode_size(inode)) {
			shared = true;
		} else {
			pthread_rwlock_unlock(&inode->i_rwsem);
		}
	}
	if (!shared && wtio_rwsem_lock(inode, false, nowait))
		return -EAGAIN;
	if (!shared)
		wtio_inode_tail_note(inode, off + (int64_t)len);
	/* Past i_size: first clean what a failed write left there. */
	if (!shared && off + (int64_t)len > wtio_inode_size(inode)) {
		ret = wtio_inode_prepare_extend(inode, nowait);
		if (ret) {
			pthread_rwlock_unlock(&inode->i_rwsem);
			return ret;
		}
	}
	wbc->undo.before = wbc->undo.after = wtio_inode_size(inode);

	wtio_iter_init(&it, iov, iovcnt);
	while (done < len) {
		struct wtio_span sp = wtio_span_at(ctx, off, len, done);
		off_t pos = sp.pos;
		uint64_t index = sp.index;
		uint32_t from = sp.from, to = sp.to;
		int64_t isize = wtio_inode_size(inode);
		uint64_t written = wtio_ifs_mask(inode, from, to), redirty = 0;
		struct wtio_folio *f;
		bool created;

		ret = wtio_folio_get_locked(inode, index, true, &f, &created);
		if (ret == -EAGAIN && !nowait) {
			wt_flush_own(wbc, &cur);
			ret = wtio_folio_get_locked(inode, index, false, &f,
						    &created);
		}
		if (ret)
			break;
		if (wtio_folio_test(f, FOLIO_WRITEBACK)) {
			if (nowait) {
				ret = -EAGAIN;
				goto unlock;
			}
			wtio_folio_unlock(f);
			wt_flush_own(wbc, &cur);
			wtio_folio_lock(f);
			wtio_folio_wait_writeback(f);
			if (atomic_load(&f->inode) != inode) {
				/* Truncated meanwhile: look it up again. */
				wtio_folio_unlock(f);
				wtio_folio_put(ctx, f);
				continue;
			}
		}
		ret = wtio_write_prepare_blocks(inode, f, from, to, isize,
						nowait);
		if (ret)
			goto unlock;
		wtio_iter_copy(&it, f->data + from, to - from, false);
		wtio_ifs_set_uptodate(inode, f, written);
		wtio_folio_mark_dropbehind(f, flags & WTIO_DONTCACHE);
		if (wtio_folio_test(f, FOLIO_DIRTY)) {
			/* Dirty from an earlier write-back write: written
			 * whole, and clean afterwards. */
			redirty = f->ifs_dirty;
			f->ifs_dirty |= written;
			wtio_folio_start_writeback(inode, f);
		} else {
			wtio_folio_set_writeback(inode, f);
			f->wb_blocks = written;
		}
		done += to - from;
		if (pos + (to - from) > isize) {
			atomic_store(&inode->i_size, pos + (int64_t)(to - from));
			wbc->undo.after = pos + (int64_t)(to - from);
			*extending = true;
		}
		wtio_folio_unlock(f);
		wtio_ioend_add_folio(wbc, &cur, f, redirty);
		wtio_folio_put(ctx, f);
		continue;
unlock:
		wtio_folio_unlock(f);
		wtio_folio_put(ctx, f);
		break;
	}
	if (cur)
		wtio_ioend_submit(wbc, cur);
	/* Undoable until the write ends (wtio_inode_tail_end). */
	wtio_inode_tail_claim(inode, &wbc->undo);
	if (*extending && (ctx->cfg.flags & WTIO_CONFIG_SIZE_AHEAD))
		wt_extend_ahead(inode);
	pthread_rwlock_unlock(&inode->i_rwsem);
	if (!keep_deferred)
		wtio_ioend_submit_deferred(wbc);
	return done ? (ssize_t)done : ret;
}

int wtio_dsync_finish(struct wtio_inode *inode, int64_t end, bool in_reaper)
{
	struct wtio_io_req req = { .op = WTIO_IO_FDATASYNC, .fd = inode->fd };
	struct stat st;
	ssize_t res;
	int ret;

	/* An extending direct write with RWF_DSYNC makes the new size
	 * durable with the data, but rounded up to its block: O_DSYNC
	 * promises the exact size (a log appended in 100-byte records must
	 * not end in zeros after a crash). Fix the size and flush it when
	 * the backing file ends past i_size, or short of this write (a
	 * truncate raced with it). Aligned appends pay nothing. With the
	 * opt-in size ahead the backing file is longer on purpose. */
	if (fstat(inode->fd, &st) < 0)
		return -errno;
	if (st.st_size >= end && (atomic_load(&inode->size_ahead) ||
				  st.st_size <= wtio_inode_size(inode)))
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
	bool extending;
	ssize_t ret;
	int err;

	ret = wtio_writethrough_copy(file, iov, iovcnt, off, flags, &wbc,
				     false, &extending);
	wtio_ioend_reap_all(&wbc);
	err = atomic_load(&wbc.error);
	if (!err && ret > 0 && extending && (flags & WTIO_DSYNC)) {
		err = wtio_dsync_finish(file->inode, off + ret, false);
		if (err)
			wtio_inode_record_error(file->inode, err);
	}
	/* A failed write leaves the size where it was (see "Sizes and
	 * errors on failure" in docs/DESIGN.md). */
	wtio_inode_tail_end(file->inode, &wbc.undo, err, false);
	return err ? err : ret;
}

/* WTIO_DSYNC on a write-back write: write the range, wait for it, then
 * make it durable. */
ssize_t wtio_write_dsync_writeback(struct wtio_file *file,
				   const struct iovec *iov, int iovcnt,
				   off_t off, unsigned int flags)
{
	struct wtio_inode *inode = file->inode;
	struct wtio_io_req req = { .op = WTIO_IO_FDATASYNC, .fd = inode->fd };
	uint64_t seq = atomic_load(&inode->err_seq);
	struct wtio_size_undo undo;
	ssize_t ret, res;
	int err;

	ret = wtio_buffered_write_sized(file, iov, iovcnt, off, flags, &undo);
	if (ret <= 0)
		return ret;
	err = wtio_writeback_range(inode, off, off + ret, WB_SYNC, 0, 0);
	wtio_wait_writeback_range(inode, off, off + ret);
	if (!err) {
		pthread_rwlock_rdlock(&inode->i_rwsem);
		err = wtio_inode_sync_size(inode, true);
		pthread_rwlock_unlock(&inode->i_rwsem);
	}
	if (!err) {
		res = wtio_io_sync(&inode->ctx->io, &req);
		if (res < 0)
			err = (int)res;
	}
	/* A flusher may have hit an error on this range meanwhile. */
	if (!err && atomic_load(&inode->err_seq) != seq)
		err = atomic_load(&inode->err_last);
	/* Failed: the size goes back to where it was, and the blocks this
	 * write added past it go (the cut cancels their dirty state); data
	 * it overwrote inside the old size stays dirty, to be retried. */
	wtio_inode_tail_end(inode, &undo, err, false);
	return err ? err : ret;
}
