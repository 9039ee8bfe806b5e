/* SPDX-License-Identifier: MIT */
/*
 * stripe.h - where an I/O may end on a striped device: the rule every
 * write wtio builds (writeback, write-through, DONTCACHE) follows, and
 * the reads a caller waits for.
 *
 * A parity RAID writes a whole stripe (stripe_unit x data disks, the
 * stripe WIDTH) from the new data alone, and pays a read-modify-write for
 * any part of one. So the unit of alignment is the width, not the unit
 * (one chunk): an I/O is either a whole number of aligned full stripes,
 * or lies inside one stripe (the edges of the data). It never crosses a
 * stripe boundary otherwise, and the cap on an I/O's size is a whole
 * number of stripes, so that a full stripe is never cut in two. This is
 * what the iomap patch for RAID writeback does with io_opt (the width),
 * gathering several stripes per I/O where the cap allows.
 */
#ifndef WTIO_STRIPE_H
#define WTIO_STRIPE_H

#include <stdint.h>

#include "geometry.h"

/* The stripe width I/Os are aligned to, in bytes, 0 for none: a width
 * that is not whole blocks of the file (bs) falls back to the unit
 * (inode set-up has already dropped a unit that is not). */
static inline uint64_t wtio_stripe_width(const struct wtio_geometry *geo,
					 uint32_t bs)
{
	uint64_t w = geo->stripe_width;

	if (!geo->stripe_unit)
		return 0;
	if (w < geo->stripe_unit || (bs && w % bs))
		w = geo->stripe_unit;
	return w;
}

/* The largest I/O: max_io rounded down to whole stripes, or one stripe
 * when a stripe is larger than max_io. Without a stripe, max_io. */
static inline uint64_t wtio_stripe_io_cap(uint64_t width, uint64_t max_io)
{
	if (!width)
		return max_io;
	if (width >= max_io)
		return width;
	return max_io / width * width;
}

/*
 * How much of [off, off + len) the next I/O may take, with at most cap
 * bytes (a whole number of stripes, from wtio_stripe_io_cap): up to the
 * next stripe boundary when off is inside a stripe, else whole stripes,
 * else (less than a stripe left) all of it.
 */
static inline uint64_t wtio_stripe_cut(uint64_t width, uint64_t cap,
				       uint64_t off, uint64_t len)
{
	uint64_t in = width ? off % width : 0;

	if (len > cap)
		len = cap;
	if (!width)
		return len;
	if (in)
		return len < width - in ? len : width - in;
	return len < width ? len : len / width * width;
}

#endif /* WTIO_STRIPE_H */
