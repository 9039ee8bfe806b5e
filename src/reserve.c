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
 * (an existing file's data; nothing, without a call, for a file empty
 * at open), then what we allocated. A write inside it costs nothing; an
 * append extends it in chunks ahead (like XFS's speculative
 * preallocation: an eighth of the file, 1 MiB to 64 MiB, at most a 64th
 * of the free space: resv_chunk_room), so a stream of
 * 4 KiB appends pays one fallocate per chunk; below 64 KiB the chunk is
 * the file's size, so a small file written whole reserves only itself. Not for DSYNC
 * writes: each one sets the exact size, which would free the chunk again
 * (XFS frees blocks past EOF on any truncate), so they reserve only
 * their own blocks.
 *
 * When the chunk does not fit, just the write is tried; when that does
 * not fit, the part of it that does (found by halving), and the write
 * returns that short count; -ENOSPC when nothing fits. Blocks the file
 * already has, which a nearly full XFS refuses to fallocate again, are
 * found in its extent map (FIEMAP) first and need nothing. Before failing,
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
 * Shared extents (reflinks, XFS): an O_DIRECT overwrite of a block shared
 * with another file needs a new copy-on-write block at write-back, where
 * the kernel's own buffered write reserves it when it accepts the write.
 * They count as allocated above (SEEK_HOLE, fallocate), so without more a
 * nearly full filesystem accepts every overwrite and fails the
 * write-back. So at the first write a FIEMAP pass notes the file's shared
 * ranges (FIEMAP_EXTENT_SHARED; none: no map, and the file pays nothing
 * per write), and a write-back write over one first makes its blocks
 * private: FALLOC_FL_UNSHARE_RANGE, which allocates the copies and fails
 * with ENOSPC when they do not fit (then the short count or -ENOSPC, as
 * for holes). What was unshared leaves the map: no second call. The map
 * is what the file shared when wtio first wrote it: a reflink made later
 * by another program while wtio has the file open is not seen (the shim's
 * lease breaks; a clone through the shim reopens the cache, which probes
 * again).
 *
 * Write-through writes reserve too, though their I/O reports its own
 * errors: the kernel fails a direct write that runs out of space part
 * way whole although it wrote its first part (iomap returns the error),
 * so an I/O that straddled the backing file's end or a hole left new
 * bytes on disk past the count a write-through write returned. Reserved
 * first, the write is cut to what fits before a byte is copied, as a
 * write-back write is. A write inside one filesystem block needs
 * nothing when our block is no larger (its one I/O covers that block,
 * allocated whole or not at all), so appends of a block pay nothing.
 *
 * The block of ours holding the end of file is written only to the end
 * rounded up to the filesystem block (ioend_build.c), so a write needs space
 * there only that far (resv_need_end), as the kernel's does; before the
 * size moves past it, a dirty one is written back at the old size
 * (writeback.c, wtio_inode_settle_tail) unless its rest is known
 * allocated.
 *
 * The extent map's side of this (FIEMAP: shared ranges, blocks the file
 * has already) is in reserve_map.c.
 *
 * A filesystem without fallocate (EOPNOTSUPP) turns this off for the
 * inode: writes are accepted as before and ENOSPC shows at write-back.
 * The range fields are under i_rwsem held exclusive, or shared together
 * with extend_lock (the size changes of fsync and close).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/vfs.h>

#include "reserve.h"
#include "reserve_map.h"
#include "ctx.h"
#include "inode.h"
#include "sys.h"

#define RESV_AHEAD_MIN	((int64_t)1 << 20)
/* Below this size an append reserves as much again as the file has,
 * not a chunk (XFS preallocates nothing speculatively for files under
 * 64 KiB): a small file written whole and closed would otherwise
 * allocate 1 MiB more and punch it out again at close. */
#define RESV_AHEAD_FROM	((int64_t)64 << 10)
#define RESV_AHEAD_MAX	((int64_t)64 << 20)

#ifndef FALLOC_FL_UNSHARE_RANGE
#define FALLOC_FL_UNSHARE_RANGE	0x40
#endif

static int resv_falloc_mode(struct wtio_inode *inode, int mode, int64_t off,
			    int64_t len)
{
	if (len <= 0)
		return 0;
	while (wtio_sys_fallocate(inode->fd, mode, off, len) != 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int resv_falloc(struct wtio_inode *inode, int64_t off, int64_t len)
{
	return resv_falloc_mode(inode, FALLOC_FL_KEEP_SIZE, off, len);
}

/* First write: what the file already has allocated from offset 0. */
static void resv_init(struct wtio_inode *inode)
{
	off_t hole = wtio_sys_lseek(inode->fd, 0, SEEK_HOLE);

	inode->resv_start = 0;
	inode->resv_end = hole > 0 ? hole : 0;
	inode->resv_max = inode->resv_end;
	inode->resv_state = RESV_TRACK;
	wtio_resv_map_probe(inode);
}

void wtio_reserve_init_empty(struct wtio_inode *inode)
{
	/* What resv_init would find: SEEK_HOLE from 0 fails at EOF, and no
	 * block of an empty file is shared (a clone into it makes it
	 * longer). Blocks wtio writes through later are not counted: their
	 * range is allocated once more, which costs nothing, or, on a
	 * nearly full filesystem that refuses it, is found in the file's
	 * map (resv_allocated_from). */
	inode->resv_start = 0;
	inode->resv_end = 0;
	inode->resv_max = 0;
	inode->resv_state = RESV_TRACK;
}

/* Allocate as much of [cur, end) as fits, from cur on; returns where the
 * allocated part ends and sets *err when that is short of end. */
static int64_t resv_fit_mode(struct wtio_inode *inode, int mode, int64_t cur,
			     int64_t end, int *err)
{
	int64_t u = wtio_resv_unit(inode);
	int64_t step = end - cur;
	int ret;

	*err = 0;
	while (cur < end) {
		ret = resv_falloc_mode(inode, mode, cur, step);
		if (!ret) {
			cur += step;
			step = end - cur;
			*err = 0;
			continue;
		}
		*err = ret;
		if (!wtio_resv_nospace(ret) || step <= u)
			break;
		step = (step / 2 + u - 1) & ~(u - 1);
	}
	return cur;
}

static int64_t resv_fit(struct wtio_inode *inode, int64_t cur, int64_t end,
			int *err)
{
	return resv_fit_mode(inode, FALLOC_FL_KEEP_SIZE, cur, end, err);
}

/* Short of b for want of room, where the blocks may already be the
 * file's: those need none. Past them, what is left is tried again. */
static int64_t resv_fit_have(struct wtio_inode *inode, int64_t got,
			     int64_t b, int *err)
{
	while (got < b && wtio_resv_nospace(*err)) {
		int64_t have = wtio_resv_allocated_from(inode, got, b);

		if (have <= got)
			break;
		got = have;
		*err = 0;
		if (got < b)
			got = resv_fit(inode, got, b, err);
	}
	return got;
}

/*
 * Where the space a write needs ends: its end rounded up to our block,
 * but in the block that will hold the file's end only to the end's
 * tail_unit, where that block's I/O stops (ioend_build.c): an overwrite of a
 * small file's last bytes needs no more space than the kernel's.
 */
static int64_t resv_need_end(struct wtio_inode *inode, int64_t end,
			     int64_t u)
{
	int64_t t = inode->tail_unit, size = wtio_inode_size(inode);
	int64_t b = (end + u - 1) & ~(u - 1), tb;

	if (t >= (int64_t)inode->block_size)
		return b;
	if (end > size)
		size = end;
	tb = (size + t - 1) & ~(t - 1);
	return tb < b ? tb : b;
}

/*
 * Give back what we allocated past size, the end of file (no data lies
 * past it), and forget it. Needed even after the backing file was cut
 * there: ftruncate to a larger size than the backing file had (the data
 * still in the cache) frees nothing past the new end. Caller holds
 * i_rwsem exclusive, or shared with extend_lock, or nobody else uses
 * the inode.
 */
static void resv_punch_past_unit(struct wtio_inode *inode, int64_t size,
				 int64_t u)
{
	int64_t from = (size + u - 1) & ~(u - 1);

	/* Not another program's preallocation: kept, as the kernel keeps
	 * it. (A truncate that cut the file frees it; a chunk of ours
	 * reserved there later then stays, as much as was there before.) */
	if (from < inode->resv_theirs)
		from = inode->resv_theirs;
	if (inode->resv_state != RESV_TRACK)
		return;
	if (inode->resv_max > from)
		wtio_sys_fallocate(inode->fd,
				   FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   from, inode->resv_max - from);
	if (inode->resv_max > size)
		inode->resv_max = size;
	if (inode->resv_end > size)
		inode->resv_end = size;
	if (inode->resv_start > inode->resv_end)
		inode->resv_start = inode->resv_end;
}

/* From the end of our block holding size: that block may be dirty and
 * is then written whole once the size grows past it. */
static void resv_punch_past(struct wtio_inode *inode, int64_t size)
{
	resv_punch_past_unit(inode, size, wtio_resv_unit(inode));
}

/*
 * ext4 ignores a punch past the end of file; a truncate to the size the
 * backing file has frees what lies past it (ext4_setattr truncates
 * unless the size grows). Only when that size is the file's: nothing
 * dirty past it (whose blocks would go too), nothing another program
 * preallocated there.
 */
static void resv_trunc_past(struct wtio_inode *inode, int64_t size)
{
	struct stat st;

	if (inode->geo.eof_punch_ignored && inode->resv_theirs <= size &&
	    atomic_load(&inode->disk_size_lb) == size &&
	    wtio_sys_fstat(inode->fd, &st) == 0 && st.st_size == size)
		wtio_sys_ftruncate(inode->fd, size);
}

/*
 * A chunk ahead is space no other program can have: XFS gives its own
 * speculative preallocation back to whoever runs out of space, wtio's
 * only to its own context (resv_trim_others) or at close. So, as XFS
 * shrinks its preallocation as free space runs low, a chunk takes at
 * most a 64th of the space still free (none below a MiB): a file that
 * stops growing and stays open holds little of what another writer
 * needs. One fstatfs per chunk, not per write.
 */
static int64_t resv_chunk_room(struct wtio_inode *inode, int64_t chunk)
{
	struct statfs sfs;
	int64_t room;

	if (fstatfs(inode->fd, &sfs) < 0)
		return chunk;
	room = (int64_t)((uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize / 64);
	if (room < chunk)
		chunk = room >= RESV_AHEAD_MIN ? room & ~(RESV_AHEAD_MIN - 1) : 0;
	return chunk;
}

/* A write from a, past the end of the chunk reserved ahead of appends,
 * leaves a hole over it: give the chunk back, as the kernel leaves no
 * blocks there (dd conv=sparse, a seek past the end). */
static void resv_leave_chunk(struct wtio_inode *inode, int64_t a)
{
	int64_t isize = wtio_inode_size(inode), u = wtio_resv_unit(inode);

	/* Also a write inside the chunk past a gap of a block or more:
	 * the gap becomes part of the file, and must stay a hole (a
	 * writer striding past the end would otherwise fill the sparse
	 * file with the chunks it left behind). */
	if (a > ((isize + u - 1) & ~(u - 1)) && isize < inode->resv_max &&
	    inode->resv_state == RESV_TRACK) {
		resv_punch_past(inode, isize);
		resv_trunc_past(inode, isize);
	}
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
		    wtio_rwsem_lock(inode, false, true))
			continue;
		if (inode->resv_state == RESV_TRACK &&
		    inode->resv_max > wtio_inode_size(inode)) {
			resv_punch_past(inode, wtio_inode_size(inode));
			any = true;
		}
		wtio_rwsem_unlock(inode);
	}
	pthread_mutex_unlock(&ctx->inodes_lock);
	return any;
}

/*
 * Make the shared blocks under [a, b) private before the write is
 * accepted. Returns the end of the part from a that holds no shared block
 * now (b, or less with *err set when the copies did not fit).
 */
static int64_t resv_unshare(struct wtio_inode *inode, int64_t a, int64_t b,
			    int *err)
{
	int64_t cur = a, s, e, got;

	*err = 0;
	while (wtio_resv_shared_next(inode, cur, b, &s, &e)) {
		got = resv_fit_mode(inode, FALLOC_FL_UNSHARE_RANGE, s, e, err);
		if (got < e && wtio_resv_nospace(*err) && resv_trim_others(inode))
			got = resv_fit_mode(inode, FALLOC_FL_UNSHARE_RANGE,
					    got, e, err);
		if (*err == -EOPNOTSUPP || *err == -ENOSYS ||
		    *err == -EINVAL) {
			/* No unsharing here: as before, the overwrite's
			 * space shows at write-back. */
			wtio_resv_shared_free(inode);
			*err = 0;
			break;
		}
		if (got > s)
			wtio_resv_shared_done(inode, s, got);
		if (got < e) {
			if (wtio_resv_nospace(*err))
				return got;
			/* EIO and the like: the write goes on as it would
			 * have, and its write-back reports. */
			*err = 0;
		}
		cur = e;
	}
	return b;
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
	u = wtio_resv_unit(inode);
	a = off & ~(u - 1);
	b = resv_need_end(inode, off + (int64_t)len, u);
	/* Shared blocks under the write get private copies first. */
	if (inode->resv_cow) {
		got = resv_unshare(inode, a, b, &err);
		if (got < b) {
			if (got <= off)
				return err;
			len = (size_t)(got - off);
			b = got;
		}
	}
	/* First: a write past a gap inside the chunk ahead gives it back,
	 * and is then no longer inside what is known allocated. */
	resv_leave_chunk(inode, a);
	if (a >= inode->resv_start && b <= inode->resv_end)
		return (ssize_t)len;

	isize = wtio_inode_size(inode);
	/* Extend the known range when the write starts inside it (an
	 * append), else allocate just this write. */
	cur = (a >= inode->resv_start && a <= inode->resv_end) ?
	      inode->resv_end : a;
	want = b;
	/* Only a write that extends the file reserves ahead: an overwrite
	 * of the last bytes took the rest of a large end block of ours,
	 * space a later write needed (the block's I/O stops at the end's
	 * filesystem block, so nothing else asks for it). */
	if (off + (int64_t)len <= isize)
		ahead = false;
	if (ahead && b > isize && isize < RESV_AHEAD_FROM) {
		/* A small file: as much again as it has, so that one written
		 * whole reserves just itself. */
		want = (b + isize + u - 1) & ~(u - 1);
	} else if (ahead && b > isize) {
		int64_t chunk = isize / 8;

		if (chunk < RESV_AHEAD_MIN)
			chunk = RESV_AHEAD_MIN;
		if (chunk > RESV_AHEAD_MAX)
			chunk = RESV_AHEAD_MAX;
		chunk = resv_chunk_room(inode, chunk);
		want = chunk ? (b + chunk + RESV_AHEAD_MIN - 1) &
			       ~(RESV_AHEAD_MIN - 1) : b;
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
		/* ext4 keeps what a failed fallocate did allocate: the
		 * chunk's part past the write would stay allocated, counted
		 * nowhere, and a later write the kernel accepts found no
		 * room. Past the write is past EOF here (only an extending
		 * write asks for more than b), past what we knew allocated
		 * (cur), and not another program's (resv_theirs). */
		int64_t from = b > cur ? b : cur;

		if (from < inode->resv_theirs)
			from = inode->resv_theirs;
		if (want > from) {
			wtio_sys_fallocate(inode->fd, FALLOC_FL_PUNCH_HOLE |
					   FALLOC_FL_KEEP_SIZE, from,
					   want - from);
			/* That took back the part of an earlier chunk ahead
			 * lying there too (no data: past this write's end,
			 * past the end of file): no longer known allocated
			 * (a later write there would have counted on it). */
			if (inode->resv_end > from)
				inode->resv_end = from > inode->resv_start ?
						  from : inode->resv_start;
		}
		/* What is left past EOF (ext4 ignores the punch there, and
		 * the halving's failed tries leave some too) goes back with
		 * the rest (resv_punch_past, wtio_inode_give_back_tail). */
		if (want > inode->resv_max)
			inode->resv_max = want;
		got = resv_fit(inode, cur, b, &err);
		if (got < b && wtio_resv_nospace(err) && resv_trim_others(inode))
			got = resv_fit(inode, got, b, &err);
	}
	got = resv_fit_have(inode, got, b, &err);

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
	if (wtio_resv_nospace(err) || err == -EFBIG) {
		/* Short: what fits from off, if anything, in whole blocks of
		 * ours. got ends on a filesystem block (the file's map, or
		 * SEEK_HOLE), which can lie inside one of ours when ours is
		 * larger; our I/O writes that block whole and needs all of
		 * it, unless the count's end becomes the file's: then the
		 * block's I/O stops at its tail_unit. */
		int64_t t = inode->tail_unit;

		if ((got & ~(t - 1)) > isize)
			got &= ~(t - 1);
		else
			got &= ~(u - 1);
		if (got > off)
			return (ssize_t)(got - off < (int64_t)len ?
					 got - off : (int64_t)len);
		return err;
	}
	/* Any other failure (EIO, EPERM...): the write goes on as it would
	 * have without reservation, and its write-back reports. */
	return (ssize_t)len;
}

bool wtio_reserve_tail_missing(struct wtio_inode *inode, int64_t from,
			       int64_t size)
{
	int64_t t = inode->tail_unit, bs = inode->block_size;
	int64_t isize = wtio_inode_size(inode);
	int64_t x = (isize + t - 1) & ~(t - 1);
	int64_t end = (isize + bs - 1) & ~(bs - 1);
	int64_t need = (size + t - 1) & ~(t - 1);

	if (t >= bs || inode->resv_state != RESV_TRACK)
		return false;
	if (need < end)
		end = need;
	if ((from & ~(t - 1)) < end)
		end = from & ~(t - 1);
	return end > x &&
	       !(x >= inode->resv_start && end <= inode->resv_end);
}

ssize_t wtio_reserve_through(struct wtio_inode *inode, int64_t off,
			     size_t len, bool dsync, bool shared)
{
	int64_t u = wtio_resv_unit(inode), end = off + (int64_t)len;
	ssize_t fit;

	/* One filesystem block, written by one I/O of one block of ours
	 * at most: allocated whole or not at all. (A block of ours larger
	 * than the filesystem's spans several, which can land in part.)
	 * Not past the backing file's end: there its I/O extends the
	 * file, and ext4 answers an extending write that fails by freeing
	 * every block past the end, those reserved for data accepted
	 * before included (wtio_reserve_regain). */
	if (u == inode->geo.blksize && (off & ~(u - 1)) + u >= end &&
	    (off & ~(u - 1)) + u <= atomic_load(&inode->disk_size_lb)) {
		if (!shared)
			resv_leave_chunk(inode, off & ~(u - 1));
		return (ssize_t)len;
	}
	/* A DSYNC direct write ending on a block boundary leaves the
	 * backing file at its exact size, so nothing truncates the chunk
	 * ahead away; one ending inside a block is followed by the
	 * truncate that sets the exact size (writethrough.c), which
	 * would free it. */
	if (!shared)
		return wtio_reserve_write(inode, off, len,
					  !dsync || !(end & (u - 1)));
	/* Inside i_size: no append, no chunk ahead. */
	pthread_mutex_lock(&inode->extend_lock);
	fit = wtio_reserve_write(inode, off, len, false);
	pthread_mutex_unlock(&inode->extend_lock);
	return fit;
}

void wtio_reserve_clamp(struct wtio_inode *inode, int64_t size)
{
	resv_punch_past(inode, size);
	/* Nothing is shared past the new end any more. */
	wtio_resv_shared_clamp(inode, size);
}

bool wtio_reserve_holds_past(struct wtio_inode *inode)
{
	int64_t t = inode->tail_unit, isize = wtio_inode_size(inode);

	return inode->resv_state == RESV_TRACK &&
	       inode->resv_max > ((isize + t - 1) & ~(t - 1));
}

void wtio_reserve_trim_tail(struct wtio_inode *inode)
{
	if (wtio_reserve_holds_past(inode))
		resv_punch_past_unit(inode, wtio_inode_size(inode),
				     inode->tail_unit);
}

void wtio_reserve_release(struct wtio_inode *inode)
{
	int64_t size = wtio_inode_size(inode);
	bool past = inode->resv_state == RESV_TRACK &&
		    atomic_load(&inode->resv_max) > size &&
		    inode->resv_theirs <= size;

	/* Every I/O is over: the end's block is written no further than
	 * its filesystem block (ioend_build.c), as the kernel leaves the file. */
	resv_punch_past_unit(inode, size, inode->tail_unit);
	if (past)
		resv_trunc_past(inode, size);
	wtio_resv_shared_free(inode);
}

void wtio_reserve_free(struct wtio_inode *inode)
{
	wtio_resv_shared_free(inode);
}
