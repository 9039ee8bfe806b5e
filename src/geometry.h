/* SPDX-License-Identifier: MIT */
/* geometry.h - what the file's filesystem and device say about alignment. */
#ifndef WTIO_GEOMETRY_H
#define WTIO_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct wtio_geometry {
	/* Direct I/O alignment (statx STATX_DIOALIGN; fallback: the device's
	 * logical block size, else 4096). Always a power of two >= 512. */
	uint32_t dio_mem_align;
	uint32_t dio_offset_align;
	/* st_blksize: the filesystem's preferred I/O size. */
	uint32_t blksize;
	/* statx STATX_WRITE_ATOMIC; all 0 when the file cannot do untorn
	 * writes. */
	uint32_t atomic_unit_min;
	uint32_t atomic_unit_max;
	uint32_t atomic_segments_max;
	/* Stripe unit and width in bytes from the filesystem (XFS sunit and
	 * swidth) or the block device (minimum_io_size / optimal_io_size in
	 * sysfs); 0 = no stripe alignment. */
	uint32_t stripe_unit;
	uint32_t stripe_width;
	/* Where stripe_unit came from: "xfs", "sysfs", "none". */
	const char *stripe_source;
	/* A punch past the end of file frees nothing here (ext4): only a
	 * truncate gives back blocks past the end. */
	bool eof_punch_ignored;
};

/* What one statx of an open file says: its identity and size, and the
 * per-file part of its geometry (0 where statx did not say). */
struct wtio_file_stat {
	mode_t mode;
	dev_t dev;
	ino_t ino;
	int64_t size;
	uint64_t blocks;		/* 512-byte units allocated */
	uint32_t mask;			/* statx's result mask */
	uint32_t blksize;
	uint32_t dio_mem_align, dio_offset_align;
	uint32_t atomic_unit_min, atomic_unit_max, atomic_segments_max;
	/* The block device whose queue limits apply; major 0: none. */
	unsigned int bdev_major, bdev_minor;
	uint64_t mnt_id;		/* unique mount id; 0: unknown */
};

/* The part of the geometry that is the filesystem's and its device's,
 * the same for every file of one mount. */
struct wtio_fs_geometry {
	uint32_t lbs_align;		/* logical block size; 0: unknown */
	uint32_t stripe_unit, stripe_width;
	const char *stripe_source;
	/* The size limit is the filesystem's alone, the same for every
	 * file (XFS: s_maxbytes); false where a file may have its own
	 * (ext4 without extents), or where it is not known. */
	bool max_bytes_per_fs;
	bool eof_punch_ignored;		/* ext4: see struct wtio_geometry */
};

/* Probe the geometry of an open file. Returns 0 or a negative errno; on
 * error the fallbacks are filled in anyway. */
int wtio_geometry_probe(int fd, struct wtio_geometry *geo);

/* The pieces of wtio_geometry_probe: one statx (fstat where statx is
 * refused), the per-filesystem probes (statfs, the XFS ioctl, sysfs),
 * and the two put together. */
int wtio_geometry_stat(int fd, struct wtio_file_stat *st);
void wtio_geometry_fs(int fd, const struct wtio_file_stat *st,
		      struct wtio_fs_geometry *fs);
void wtio_geometry_combine(const struct wtio_file_stat *st,
			   const struct wtio_fs_geometry *fs,
			   struct wtio_geometry *geo);

/* The largest size the regular file behind fd may have (capped at 2^62):
 * hint when a few lseeks show it is the answer, else a binary search.
 * Leaves the descriptor's position at 0. */
int64_t wtio_geometry_max_bytes(int fd, int64_t hint);

#endif
