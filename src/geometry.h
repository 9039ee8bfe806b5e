/* SPDX-License-Identifier: MIT */
/* geometry.h - what the file's filesystem and device say about alignment. */
#ifndef WTIO_GEOMETRY_H
#define WTIO_GEOMETRY_H

#include <stdint.h>

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
};

/* Probe the geometry of an open file. Returns 0 or a negative errno; on
 * error the fallbacks are filled in anyway. */
int wtio_geometry_probe(int fd, struct wtio_geometry *geo);

#endif
