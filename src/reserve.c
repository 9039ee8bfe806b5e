/* SPDX-License-Identifier: MIT */
/*
 * reserve.c - space for dirty data.
 *
 * The kernel's delayed allocation reserves blocks when it accepts dirty
 * data, so a full filesystem fails write() with ENOSPC, never the
 * write-back after it. wtio writes back with O_DIRECT, which allocates
 * only when the I/O is issued: without this file a write into a hole or
 * past EOF is accepted and its data can never be written.
 *
 * So a write-back write first allocates the blocks under it with
 * fallocate(FALLOC_FL_KEEP_SIZE): the size does not move, and unwritten
 * extents read as zeros, so sparse-file semantics hold. To keep that off
 * the common path each inode remembers one range [resv_start, resv_end)
 * known to be allocated: at the first write what SEEK_HOLE finds from 0
 * (an existing file's data), then what we allocated. A write inside it
 * costs nothing; an append extends it in chunks ahead (like XFS's
 * speculative preallocation: an eighth of the file, 1 MiB to 64 MiB), so
 * a stream of 4 KiB appends pays one fallocate per chunk. Not for DSYNC
 * writes: each one sets the exact size, which would free the chunk again
 * (XFS frees blocks past EOF on any truncate), so they reserve only
 * their own blocks.
 *
 * When the chunk does not fit, just the write is tried; when that does
 * not fit, the part of it that does (found by halving), and the write
 * returns that short count; -ENOSPC when nothing fits. Before failing,
 * chunks ahead that other files of the context hold past their EOF are
 * given back (as XFS trims speculative preallocation on ENOSPC).
 *
 * What lies past EOF is given back by every size change of the backing
 * file and at the last close: FALLOC_FL_PUNCH_HOLE from the new end to
 * resv_max, the highest byte we allocated. (XFS and ext4 free the blocks
 * past a smaller or equal size themselves, but not past a larger one: a
 * truncate of a file whose data is still in the cache grows the backing
 * file.)
 *
 * A filesystem without fallocate (EOPNOTSUPP) turns this off for the
 * inode: writes are accepted as before and ENOSPC shows at write-back.
 * The range fields are under i_rwsem held exclusive, or shared together
 * with extend_lock (the size changes of fsync and close).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include "reserve.h"
#include "wtio_internal.h"

#define RESV_UNKNOWN	0
#define RESV_TRACK	1
#define RESV_OFF	(-1)

#define RESV_AHEAD_MIN	((int64_t)1 << 20)
#define RESV_AHEAD_MAX	((int64_t)64 << 20)

/* Reservation granule: the filesystem block, at least our block. */
static int64_t resv_unit(const struct wtio_inode *inode)
{
	uint32_t u = inode->geo.blksize;

	if (u < inode->block_size || (u & (u - 1)))
		u = inode->block_size;
	return u;
}

static int resv_falloc(struct wtio_inode *inode, int64_t off, int64_t len)
{
	if (len <= 0)
		return 0;
	while (fallocate(inode->fd, FALLOC_FL_KEEP_SIZE, off, len) != 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static bool resv_nospace(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

/* First write: what the file already has allocated from offset 0. */
static void resv_init(struct wtio_inode *inode)
{
	off_t hole = lseek(inode->fd, 0, SEEK_HOLE);

	inode->resv_start = 0;
	inode->resv_end = hole > 0 ? hole : 0;
	inode->resv_max = inode->resv_end;
	inode->resv_state = RESV_TRACK;
}

/* Allocate as much of [cur, end) as fits, from cur on; returns where the
 * allocated part ends and sets *err when that is short of end. */
static int64_t resv_fit(struct wtio_inode *inode, int64_t cur, int64_t end,
			int *err)
{
	int64_t u = resv_unit(inode);
	int64_t step = end - cur;
	int ret;

	*err = 0;
	while (cur < end) {
		ret = resv_falloc(inode, cur, step);
		if (!ret) {
			cur += step;
			step = end - cur;
			*err = 0;
			continue;
		}
		*err = ret;
		if (!resv_nospace(ret) || step <= u)
			break;
		step = (step / 2 + u - 1) & ~(u - 1);
	}
	return cur;
}

/*
 * Give back what we allocated past size, the end of file (no data lies
 * past it), and forget it. Needed even after the backing file was cut
 * there: ftruncate to a larger size than the backing file had (the data
 * still in the cache) frees nothing past the new end. Caller holds
 * i_rwsem exclusive, or shared with extend_lock, or nobody else uses
 * the inode.
 */
static void resv_punch_past(struct wtio_inode *inode, int64_t size)
{
	int64_t u = resv_unit(inode);
	int64_t from = (size + u - 1) & ~(u - 1);

	if (inode->resv_state != RESV_TRACK)
		return;
	if (inode->resv_max > from)
		fallocate(inode->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  from, inode->resv_max - from);
	if (inode->resv_max > size)
		inode->resv_max = size;
	if (inode->resv_end > size)
		inode->resv_end = size;
	if (inode->resv_start > inode->resv_end)
		inode->resv_start = inode->resv_end;
}

/* Out of space: take back the chunks ahead other files of the context
 * hold past their EOF. Only files nobody is writing now (a trylock: we
 * hold our own file lock). Returns whether any was looked at. */
static bool resv_trim_others(struct wtio_inode *self)
{
	struct wtio_ctx *ctx = self->ctx;
	struct wtio_inode *inode;
	bool any = false;

	pthread_mutex_lock(&ctx->inodes_lock);
	for (inode = ctx->inodes; inode; inode = inode->next) {
		if (inode == self ||
		    pthread_rwlock_trywrlock(&inode->i_rwsem))
			continue;
		if (inode->resv_state == RESV_TRACK &&
		    inode->resv_max > wtio_inode_size(inode)) {
			resv_punch_past(inode, wtio_inode_size(inode));
			any = true;
		}
		pthread_rwlock_unlock(&inode->i_rwsem);
	}
	pthread_mutex_unlock(&ctx->inodes_lock);
	return any;
}

ssize_t wtio_reserve_write(struct wtio_inode *inode, int64_t off, size_t len,
			   bool ahead)
{
	int64_t u, a, b, cur, want, got, isize;
	int err = 0;

	if (!len || inode->resv_state == RESV_OFF)
		return (ssize_t)len;
	if (inode->resv_state == RESV_UNKNOWN)
		resv_init(inode);
	u = resv_unit(inode);
	a = off & ~(u - 1);
	b = (off + (int64_t)len + u - 1) & ~(u - 1);
	if (a >= inode->resv_start && b <= inode->resv_end)
		return (ssize_t)len;

	/* Extend the known range when the write starts inside it (an
	 * append), else allocate just this write. */
	cur = (a >= inode->resv_start && a <= inode->resv_end) ?
	      inode->resv_end : a;
	isize = wtio_inode_size(inode);
	want = b;
	if (ahead && b > isize) {
		int64_t chunk = isize / 8;

		if (chunk < RESV_AHEAD_MIN)
			chunk = RESV_AHEAD_MIN;
		if (chunk > RESV_AHEAD_MAX)
			chunk = RESV_AHEAD_MAX;
		want = (b + chunk + RESV_AHEAD_MIN - 1) &
		       ~(RESV_AHEAD_MIN - 1);
	}
	err = resv_falloc(inode, cur, want - cur);
	if (err == -EOPNOTSUPP || err == -ENOSYS) {
		/* No preallocation here: as before, space shows at
		 * write-back. */
		inode->resv_state = RESV_OFF;
		return (ssize_t)len;
	}
	if (!err) {
		got = want;
	} else {
		got = resv_fit(inode, cur, b, &err);
		if (got < b && resv_nospace(err) && resv_trim_others(inode))
			got = resv_fit(inode, got, b, &err);
	}

	/* Remember what is known allocated now: [cur, got). */
	if (got > inode->resv_max)
		inode->resv_max = got;
	if (got > cur) {
		if (cur >= inode->resv_start && cur <= inode->resv_end) {
			if (got > inode->resv_end)
				inode->resv_end = got;
		} else if (got >= inode->resv_start && cur < inode->resv_start) {
			inode->resv_start = cur;
			if (got > inode->resv_end)
				inode->resv_end = got;
		} else if (got > inode->resv_end) {
			/* A new region further on (a writer that moved on). */
			inode->resv_start = cur;
			inode->resv_end = got;
		}
	}
	if (got >= b)
		return (ssize_t)len;
	if (resv_nospace(err) || err == -EFBIG) {
		/* Short: what fits from off, if anything. */
		if (got > off)
			return (ssize_t)(got - off < (int64_t)len ?
					 got - off : (int64_t)len);
		return err;
	}
	/* Any other failure (EIO, EPERM...): the write goes on as it would
	 * have without reservation, and its write-back reports. */
	return (ssize_t)len;
}

void wtio_reserve_clamp(struct wtio_inode *inode, int64_t size)
{
	resv_punch_past(inode, size);
}

void wtio_reserve_release(struct wtio_inode *inode)
{
	resv_punch_past(inode, wtio_inode_size(inode));
}
