/* SPDX-License-Identifier: MIT */
/*
 * geometry_cache.c - the filesystem's part of a file's geometry, probed
 * once per mount instead of at every open.
 *
 * Setting up an inode asked the filesystem and its device the same
 * questions for every file: statfs, the XFS geometry ioctl, three or
 * four sysfs files (an open, a read and a close each, through sysfs
 * symlinks) and a binary search of about 63 lseeks for the size limit.
 * For a 4 KiB file that was most of the open. Their answers belong to
 * the mounted filesystem, not to the file, so they are kept per mount:
 *
 *  - The key is statx's unique mount id (STATX_MNT_ID_UNIQUE, Linux 6.8)
 *    with the device number. Unique ids are never reused, so an unmount
 *    and a new filesystem on the same device (a loop device made again
 *    with another stripe) is a new key, and a bind mount is another key
 *    for the same answers. Where statx gives no unique id nothing is
 *    cached: every open probes as before.
 *  - Per file, from the statx the open makes anyway: DIO alignment,
 *    untorn-write units and st_blksize (XFS gives realtime files their
 *    own).
 *  - Per mount: the XFS stripe or the device's I/O hints, and the logical
 *    block size (the DIO alignment where statx has none). XFS fixes its
 *    stripe at mount time; the sysfs hints of a device under a mounted
 *    filesystem could change (a dm table reload), and would then be seen
 *    by the next mount only: they steer how I/O is cut, never whether it
 *    is correct.
 *  - The size limit is the filesystem's s_maxbytes, except that ext4
 *    gives files without extents a smaller one. So the cached limit is a
 *    hint: two lseeks (it is accepted, one byte more is not) confirm it
 *    for the file, on the same ground the binary search stands on, and a
 *    file where they do not gets the full search. On XFS, whose limit is
 *    the superblock's for every file, the first file's answer is taken
 *    as it is: no lseek at all.
 *
 * The table is filled once per slot and never changed after: a slot is
 * claimed with a compare-and-swap, filled, then published; lookups take
 * no lock, so a fork while another thread fills one leaves the child no
 * lock to hang on (the slot just stays unpublished). When every slot is
 * taken, further mounts are probed at every open, as before.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#include "geometry_cache.h"

#define GEO_SLOTS 64

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY };

struct geo_slot {
	_Atomic int state;
	uint64_t mnt_id;
	dev_t dev;
	struct wtio_fs_geometry fs;
	int64_t max_bytes;		/* the first file's; a hint for others */
};

static struct geo_slot slots[GEO_SLOTS];

static const struct geo_slot *slot_find(const struct wtio_file_stat *st)
{
	int i;

	for (i = 0; i < GEO_SLOTS; i++) {
		const struct geo_slot *s = &slots[i];
		int state = atomic_load_explicit(&s->state,
						 memory_order_acquire);

		if (state == SLOT_FREE)
			break;		/* slots are claimed in order */
		if (state == SLOT_READY && s->mnt_id == st->mnt_id &&
		    s->dev == st->dev)
			return s;
	}
	return NULL;
}

static void slot_add(const struct wtio_file_stat *st,
		     const struct wtio_fs_geometry *fs, int64_t max_bytes)
{
	int i;

	for (i = 0; i < GEO_SLOTS; i++) {
		struct geo_slot *s = &slots[i];
		int free_state = SLOT_FREE;

		if (!atomic_compare_exchange_strong(&s->state, &free_state,
						    SLOT_FILLING))
			continue;
		s->mnt_id = st->mnt_id;
		s->dev = st->dev;
		s->fs = *fs;
		s->max_bytes = max_bytes;
		atomic_store_explicit(&s->state, SLOT_READY,
				      memory_order_release);
		return;
	}
}

void wtio_geometry_probe_cached(int fd, const struct wtio_file_stat *st,
				struct wtio_geometry *geo, int64_t *max_bytes)
{
	const struct geo_slot *s = NULL;
	struct wtio_fs_geometry fs;

	if (st->mnt_id && S_ISREG(st->mode))
		s = slot_find(st);
	if (s) {
		fs = s->fs;
		/* XFS: the first file's limit is every file's, no lseek. */
		*max_bytes = fs.max_bytes_per_fs ? s->max_bytes :
			     wtio_geometry_max_bytes(fd, s->max_bytes);
	} else {
		wtio_geometry_fs(fd, st, &fs);
		*max_bytes = wtio_geometry_max_bytes(fd, 0);
		if (st->mnt_id && S_ISREG(st->mode))
			slot_add(st, &fs, *max_bytes);
	}
	wtio_geometry_combine(st, &fs, geo);
}
