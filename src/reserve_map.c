/* SPDX-License-Identifier: MIT */
/*
 * reserve_map.c - what reserve.c learns from the file's extent map
 * (FIEMAP): which ranges share their blocks with another file and need
 * unsharing before an overwrite is accepted, how far the file's blocks
 * run without a gap at its first write, and, when a reservation found no
 * room, whether the blocks it wanted are the file's already.
 * Callers hold what reserve.c's fields need (see reserve.c).
 */
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "reserve_map.h"
#include "inode.h"
#include "sys.h"

/* Shared ranges not yet made private: sorted, disjoint, block-rounded. */
struct wtio_resv_cow {
	size_t n, cap;
	struct resv_range {
		int64_t start, end;
	} *r;
};

/* Room for the extents of one FIEMAP call. */
union resv_fiemap_buf {
	struct fiemap fm;
	char buf[sizeof(struct fiemap) + 64 * sizeof(struct fiemap_extent)];
};

/* One FIEMAP call for [start, start + len): the extents mapped into
 * u->fm, 0 for none or where the filesystem has no FIEMAP. */
static uint32_t resv_fiemap(struct wtio_inode *inode,
			    union resv_fiemap_buf *u, uint64_t start,
			    uint64_t len)
{
	for (;;) {
		memset(&u->fm, 0, sizeof(u->fm));
		u->fm.fm_start = start;
		u->fm.fm_length = len;
		u->fm.fm_extent_count = 64;
		if (wtio_sys_ioctl(inode->fd, FS_IOC_FIEMAP, &u->fm) == 0)
			return u->fm.fm_mapped_extents;
		if (errno != EINTR)
			return 0;
	}
}

/*
 * Where the blocks from `from` on stop being allocated and private, up to
 * `to` (from itself when the first is not). fallocate() over blocks the
 * file already has can still fail with ENOSPC on a nearly full XFS (it
 * reserves for the worst case before it looks), where an O_DIRECT
 * overwrite of them needs nothing: so a reservation that found no room
 * asks the file's map before it fails the write. Unwritten extents are
 * allocated, delayed ones (another program's buffered data) reserved;
 * shared ones are not counted: their overwrite needs a copy. Past the
 * backing file's size XFS may take blocks back (speculative
 * preallocation, trimmed at any time and on ENOSPC) unless the file has
 * persistent preallocation (FS_XFLAG_PREALLOC, which our own fallocate
 * sets): then only delayed blocks go, and real ones there count.
 */
int64_t wtio_resv_allocated_from(struct wtio_inode *inode, int64_t from,
				   int64_t to)
{
	union resv_fiemap_buf u;
	struct fiemap *fm = &u.fm;
	int64_t cur = from, fsb = inode->geo.blksize, eof;
	struct fsxattr fa;
	struct stat st;
	uint32_t i, n;

	/* Our size reaches the disk with the write-back, after the data:
	 * what lies past the backing file's size now must stay until then. */
	if (wtio_sys_fstat(inode->fd, &st) != 0)
		return from;
	/* The filesystem block holding the last byte is the file's; what
	 * follows it, up to the end of a larger block of ours, is not. */
	if (fsb <= 0 || (fsb & (fsb - 1)))
		fsb = 1;
	eof = ((int64_t)st.st_size + fsb - 1) & ~(fsb - 1);
	if (to > eof &&
	    (wtio_sys_ioctl(inode->fd, FS_IOC_FSGETXATTR, &fa) != 0 ||
	     !(fa.fsx_xflags & FS_XFLAG_PREALLOC)))
		to = eof;
	while (cur < to &&
	       (n = resv_fiemap(inode, &u, (uint64_t)cur,
				(uint64_t)(to - cur))) != 0) {
		struct fiemap_extent *e;

		for (i = 0; i < n; i++) {
			int64_t e_end;

			e = &fm->fm_extents[i];
			if ((int64_t)e->fe_logical > cur ||
			    (e->fe_flags & FIEMAP_EXTENT_SHARED))
				return cur < to ? cur : to;
			e_end = (int64_t)(e->fe_logical + e->fe_length);
			/* Delayed blocks past the size are trimmed even
			 * with persistent preallocation. */
			if ((e->fe_flags & FIEMAP_EXTENT_DELALLOC) &&
			    e_end > eof) {
				if (eof > cur)
					cur = eof;
				return cur < to ? cur : to;
			}
			if (e_end > cur)
				cur = e_end;
		}
		if (fm->fm_extents[n - 1].fe_flags & FIEMAP_EXTENT_LAST)
			break;
	}
	return cur < to ? cur : to;
}

void wtio_resv_shared_free(struct wtio_inode *inode)
{
	struct wtio_resv_cow *cow = inode->resv_cow;

	if (!cow)
		return;
	free(cow->r);
	free(cow);
	inode->resv_cow = NULL;
}

/* Room for one more range in the map. */
static bool resv_cow_room(struct wtio_resv_cow *cow)
{
	size_t cap = cow->cap ? cow->cap * 2 : 8;
	struct resv_range *r;

	if (cow->n < cow->cap)
		return true;
	r = realloc(cow->r, cap * sizeof(*r));
	if (!r)
		return false;
	cow->r = r;
	cow->cap = cap;
	return true;
}

/* Note [start, end) as shared (FIEMAP reports in file order, so appending
 * and merging with the last range keeps the map sorted). Out of memory:
 * the range is forgotten, and its overwrite behaves as before. */
static void resv_cow_add(struct wtio_inode *inode, int64_t start, int64_t end)
{
	struct wtio_resv_cow *cow = inode->resv_cow;
	int64_t u = wtio_resv_unit(inode);

	start &= ~(u - 1);
	end = (end + u - 1) & ~(u - 1);
	if (end <= start)
		return;
	if (!cow) {
		cow = calloc(1, sizeof(*cow));
		if (!cow)
			return;
		inode->resv_cow = cow;
	}
	if (cow->n && cow->r[cow->n - 1].end >= start) {
		if (end > cow->r[cow->n - 1].end)
			cow->r[cow->n - 1].end = end;
		return;
	}
	if (!resv_cow_room(cow))
		return;
	cow->r[cow->n].start = start;
	cow->r[cow->n].end = end;
	cow->n++;
}

/* First write: which ranges of the file share their blocks with another
 * file (a reflink copy, or its source). One FIEMAP call per 64 extents;
 * a filesystem without FIEMAP, or without sharing, leaves no map.
 *
 * The same pass notes where the file's real blocks end (resv_theirs):
 * what lies past its size is another program's preallocation, which
 * wtio's giving back past EOF leaves alone.
 *
 * It also finds how far from resv_end the file's blocks go on
 * without a gap, up to its size: SEEK_HOLE takes preallocated
 * (unwritten) extents for holes, and without this a file fallocated in
 * full would pay one fallocate per random write. */
void wtio_resv_map_probe(struct wtio_inode *inode)
{
	int64_t size = wtio_inode_size(inode), run = inode->resv_end;
	bool gap = false;
	union resv_fiemap_buf u;
	struct fiemap *fm = &u.fm;
	uint64_t start = 0;
	uint32_t i;

	for (;;) {
		struct fiemap_extent *e;

		if (!resv_fiemap(inode, &u, start, FIEMAP_MAX_OFFSET - start))
			return;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			e = &fm->fm_extents[i];
			/* Real blocks past the size: another program's
			 * preallocation, which the kernel keeps. */
			if (!(e->fe_flags & FIEMAP_EXTENT_DELALLOC) &&
			    (int64_t)(e->fe_logical + e->fe_length) >
			    inode->resv_theirs)
				inode->resv_theirs = (int64_t)(e->fe_logical +
							       e->fe_length);
			if (e->fe_flags & FIEMAP_EXTENT_SHARED)
				resv_cow_add(inode, (int64_t)e->fe_logical,
					     (int64_t)(e->fe_logical +
						       e->fe_length));
			if ((int64_t)e->fe_logical > run)
				gap = true;
			else if (!gap && (int64_t)(e->fe_logical +
						   e->fe_length) > run)
				run = (int64_t)(e->fe_logical + e->fe_length);
		}
		/* Blocks past the size are not the file's to count on:
		 * the last close gives back what lies there. */
		if (run > size)
			run = size;
		if (run > inode->resv_end) {
			inode->resv_end = run;
			inode->resv_max = run;
		}
		e = &fm->fm_extents[fm->fm_mapped_extents - 1];
		if ((e->fe_flags & FIEMAP_EXTENT_LAST) ||
		    e->fe_logical + e->fe_length <= start)
			return;
		start = e->fe_logical + e->fe_length;
	}
}

/* The first range of the map that ends past off. */
static size_t resv_cow_find(const struct wtio_resv_cow *cow, int64_t off)
{
	size_t lo = 0, hi = cow->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cow->r[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [s, e), inside range i, is private now: out of the map. */
static void resv_cow_remove(struct wtio_inode *inode, size_t i, int64_t s,
			    int64_t e)
{
	struct wtio_resv_cow *cow = inode->resv_cow;
	struct resv_range *r = &cow->r[i];

	if (s <= r->start && e >= r->end) {
		memmove(r, r + 1, (cow->n - i - 1) * sizeof(*r));
		cow->n--;
	} else if (s <= r->start) {
		r->start = e;
	} else if (e >= r->end) {
		r->end = s;
	} else if (resv_cow_room(cow)) {
		/* A hole in the middle: split. */
		r = &cow->r[i];
		memmove(r + 2, r + 1, (cow->n - i - 1) * sizeof(*r));
		r[1].start = e;
		r[1].end = r->end;
		r->end = s;
		cow->n++;
	}
	/* else out of memory: the range stays, and is unshared again (a
	 * no-op for the kernel) at its next write. */
	if (!cow->n)
		wtio_resv_shared_free(inode);
}

bool wtio_resv_shared_next(const struct wtio_inode *inode, int64_t cur,
			   int64_t b, int64_t *s, int64_t *e)
{
	const struct wtio_resv_cow *cow = inode->resv_cow;
	size_t i;

	if (!cow)
		return false;
	i = resv_cow_find(cow, cur);
	if (i == cow->n || cow->r[i].start >= b)
		return false;
	*s = cow->r[i].start > cur ? cow->r[i].start : cur;
	*e = cow->r[i].end < b ? cow->r[i].end : b;
	return true;
}

void wtio_resv_shared_done(struct wtio_inode *inode, int64_t s, int64_t e)
{
	if (inode->resv_cow)
		resv_cow_remove(inode, resv_cow_find(inode->resv_cow, s), s,
				e);
}

void wtio_resv_shared_clamp(struct wtio_inode *inode, int64_t size)
{
	struct wtio_resv_cow *cow = inode->resv_cow;
	int64_t u = wtio_resv_unit(inode);
	int64_t from = (size + u - 1) & ~(u - 1);

	if (!cow)
		return;
	while (cow->n && cow->r[cow->n - 1].start >= from)
		cow->n--;
	if (cow->n && cow->r[cow->n - 1].end > from)
		cow->r[cow->n - 1].end = from;
	if (!cow->n)
		wtio_resv_shared_free(inode);
}
