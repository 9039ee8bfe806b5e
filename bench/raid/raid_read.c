/* SPDX-License-Identifier: MIT */
/*
 * raid_read.c - the read path: the data members only, or whole stripes
 * rebuilt from parity while a member is failed.
 */
#include "raid_priv.h"

#include <errno.h>

/* Bytes [so, eo) of stripe s's data into buf + so. */
static int read_stripe(struct raid_vol *v, uint64_t s, uint8_t *buf,
		       uint64_t so, uint64_t eo)
{
	uint8_t *blk[RAID_MAX_DISKS];
	unsigned int d;
	int ret = 0;

	if (atomic_load(&v->nfailed)) {
		for (d = 0; d < v->nd + v->np; d++)
			blk[d] = buf + (size_t)d * v->chunk;
		return raid_load_stripe(v, s, blk);
	}
	for (d = (unsigned int)(so / v->chunk); d * (uint64_t)v->chunk < eo;
	     d++) {
		uint64_t cs = (uint64_t)d * v->chunk;
		uint64_t a = so > cs ? so - cs : 0;
		uint64_t b = eo < cs + v->chunk ? eo - cs : v->chunk;

		ret = raid_mread(v, raid_map(v, s, d), buf + cs + a, b - a,
				 s * v->chunk + a);
		if (ret)
			break;
	}
	return ret;
}

ssize_t raid_preadv(struct raid_vol *v, const struct iovec *iov, int iovcnt,
		    uint64_t off)
{
	return raid_walk(v, iov, iovcnt, off, 0, read_stripe);
}

ssize_t raid_pread(struct raid_vol *v, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return raid_preadv(v, &iov, 1, off);
}

