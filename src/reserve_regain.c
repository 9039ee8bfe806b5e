/* SPDX-License-Identifier: MIT */
/*
 * reserve_regain.c - taking back the blocks ext4 frees when a write that
 * extends a file fails (wtio_reserve_regain, reserve.h): ext4 truncates
 * the file to its size then, which frees every block past the end,
 * those reserved for data accepted before included.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "reserve.h"
#include "reserve_map.h"
#include "cache.h"
#include "folio.h"
#include "inode.h"
#include "inode_folios.h"
#include "sys.h"

/*
 * Blocks a truncate freed can be allocated again only once the journal
 * transaction that freed them is committed, and ext4 forces that commit
 * (ext4_should_retry_alloc) only while blocks beyond its reserve pool
 * look free: on a full filesystem a fallocate right after the truncate
 * fails. fsync commits it (fdatasync may not: the truncate left the
 * size as it was). commit: a truncate may have run (an extending I/O
 * failed); else a refusal is final (no fsync per refused write on a
 * full filesystem).
 */
static int resv_regain_range(struct wtio_inode *inode, int64_t off,
			     int64_t len, bool *commit)
{
	if (wtio_sys_fallocate(inode->fd, FALLOC_FL_KEEP_SIZE, off, len) == 0)
		return 0;
	if (!*commit || !wtio_resv_nospace(-errno))
		return -errno;
	*commit = false;	/* one commit serves the rest of the pass */
	while (wtio_sys_fsync(inode->fd) != 0 && errno == EINTR)
		;
	return wtio_sys_fallocate(inode->fd, FALLOC_FL_KEEP_SIZE, off,
				  len) == 0 ? 0 : -errno;
}

static int resv_cmp_index(const void *a, const void *b)
{
	const struct wtio_folio *fa = *(struct wtio_folio *const *)a;
	const struct wtio_folio *fb = *(struct wtio_folio *const *)b;
	uint64_t x = atomic_load(&fa->index), y = atomic_load(&fb->index);

	return x < y ? -1 : x > y;
}

/*
 * The blocks from `from` on whose data the disk lacks (dirty, or in an
 * I/O under way) in cached folios, in runs of consecutive ones, but for
 * those inside [skip, skip_end) and past the end's filesystem block.
 * Read without the folio locks (an I/O's completion must not wait for
 * them): a block whose bit clears meanwhile was written back, so its
 * space is taken for nothing; one dirtied meanwhile is a write's that
 * reserved its blocks under the file lock, before or after ext4 freed
 * what lies past the end (only the first kind is missed, within the
 * same moment).
 */
static void resv_regain_cached(struct wtio_inode *inode, int64_t from,
			       int64_t skip, int64_t skip_end, bool *commit)
{
	uint32_t shift = inode->folio_shift, bs = inode->block_size;
	int64_t t = inode->tail_unit, a = 0, b = 0;
	int64_t limit = (wtio_inode_size(inode) + t - 1) & ~(t - 1);
	struct wtio_folio **v;
	uint64_t nr, i;

	v = wtio_inode_collect(inode, (uint64_t)from >> shift, &nr);
	if (!v)
		return;
	qsort(v, nr, sizeof(*v), resv_cmp_index);
	for (i = 0; i < nr; i++) {
		int64_t pos = (int64_t)(atomic_load(&v[i]->index) << shift);
		uint64_t bits = __atomic_load_n(&v[i]->ifs_dirty,
						__ATOMIC_RELAXED) |
				__atomic_load_n(&v[i]->wb_blocks,
						__ATOMIC_RELAXED);

		for (; bits; bits &= bits - 1) {
			int64_t x = pos + (int64_t)__builtin_ctzll(bits) * bs;
			int64_t y = x + bs < limit ? x + bs : limit;

			if (x < from || x >= y || (x >= skip && y <= skip_end))
				continue;
			if (x == b) {
				b = y;
				continue;
			}
			if (b > a)
				resv_regain_range(inode, a, b - a, commit);
			a = x;
			b = y;
		}
	}
	if (b > a)
		resv_regain_range(inode, a, b - a, commit);
	wtio_folio_put_many(inode->ctx, v, nr);
	free(v);
}

/*
 * ext4 truncates a file to its size whenever a write that extends it
 * fails, direct (ext4_dio_write_iter) or buffered (ext4_write_begin, even
 * for a try it then repeats and completes), so that blocks it allocated
 * do not leak. That frees the fallocate(FALLOC_FL_KEEP_SIZE) blocks past
 * the end too: the chunk reserved ahead, and the blocks of data accepted
 * there, whose write-back a full filesystem then fails. They are taken
 * again at once, while still free: on ext4, from the backing file's size
 * before that write, the blocks of every cached folio the disk lacks and
 * the rest of what is known allocated (never a sparse gap); then the
 * I/O's own range, last: a write-through writer's block there may never
 * have been reserved (its I/O reports its own ENOSPC), and must not take
 * the block of data accepted before.
 */
int wtio_reserve_regain(struct wtio_inode *inode, int64_t from,
			int64_t off, int64_t end)
{
	int64_t start = atomic_load(&inode->resv_start);
	int64_t known = atomic_load(&inode->resv_end);
	bool commit = from >= 0;

	if (inode->resv_state == RESV_OFF)
		return -EOPNOTSUPP;
	if (inode->resv_state == RESV_TRACK && from >= 0 &&
	    inode->geo.eof_punch_ignored) {
		resv_regain_cached(inode, from, off, end, &commit);
		if (from < start)
			from = start;
		if (known > from)
			resv_regain_range(inode, from, known - from, &commit);
	}
	return end > off ? resv_regain_range(inode, off, end - off,
					     &commit) : 0;
}
