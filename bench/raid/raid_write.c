/* SPDX-License-Identifier: MIT */
/*
 * raid_write.c - the write path: a whole stripe computes its parity from
 * the new data alone; part of a stripe is cut into row ranges, each done
 * by read-modify-write or reconstruct-write, whichever reads less (see
 * raid.h).
 */
#include "raid_priv.h"
#include "raid_gf.h"

#include <errno.h>
#include <stdlib.h>

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static int full_stripe(struct raid_vol *v, uint64_t s, uint8_t *const *blk)
{
	unsigned int d;
	int ret;

	raid_gen_parity(blk, v->nd, 0, blk[v->nd],
			v->np > 1 ? blk[v->nd + 1] : NULL, v->chunk);
	for (d = 0; d < v->nd + v->np; d++) {
		ret = raid_mwrite(v, raid_map(v, s, d), blk[d], v->chunk,
				  s * v->chunk);
		if (ret)
			return ret;
	}
	count(&v->full_stripes);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Row range [x, y) of stripe s, where the data chunks flagged in touched
 * (k of them) get new data: read what the chosen method needs, compute
 * the parity, write the new data and the parity.
 */
static int write_rows(struct raid_vol *v, uint64_t s, uint8_t *const *blk,
		      uint8_t *old, const int *touched, unsigned int k,
		      uint64_t x, uint64_t y)
{
	unsigned int nd = v->nd, np = v->np, d;
	size_t len = (size_t)(y - x);
	uint64_t moff = s * v->chunk + x;
	uint8_t *P = blk[nd] + x, *Q = np > 1 ? blk[nd + 1] + x : NULL;
	int ret;

	if (k == nd) {
		raid_gen_parity(blk, nd, x, P, Q, len);
		count(&v->full_rows);
	} else if (k + np < nd - k) {
		/* Read-modify-write: parity ^= old ^ new of each chunk. */
		for (d = 0; d < nd; d++) {
			uint8_t *o = old + (size_t)d * v->chunk + x;

			if (!touched[d])
				continue;
			ret = raid_mread(v, raid_map(v, s, d), o, len, moff);
			if (ret)
				return ret;
		}
		for (d = nd; d < nd + np; d++) {
			ret = raid_mread(v, raid_map(v, s, d), blk[d] + x, len,
					 moff);
			if (ret)
				return ret;
		}
		for (d = 0; d < nd; d++) {
			uint8_t *o = old + (size_t)d * v->chunk + x;

			if (!touched[d])
				continue;
			raid_xor(o, blk[d] + x, len);
			raid_xor(P, o, len);
			if (Q)
				raid_q_add(Q, o, d, len);
		}
		count(&v->rmw_rows);
	} else {
		/* Reconstruct-write: read the data not being written. */
		for (d = 0; d < nd; d++) {
			if (touched[d])
				continue;
			ret = raid_mread(v, raid_map(v, s, d), blk[d] + x, len,
					 moff);
			if (ret)
				return ret;
		}
		raid_gen_parity(blk, nd, x, P, Q, len);
		count(&v->rcw_rows);
	}
	for (d = 0; d < nd + np; d++) {
		if (d < nd && !touched[d])
			continue;
		ret = raid_mwrite(v, raid_map(v, s, d), blk[d] + x, len, moff);
		if (ret)
			return ret;
	}
	return 0;
}

/* Stripe s, its data bytes [so, eo) new at buf + so. */
static int write_stripe(struct raid_vol *v, uint64_t s, uint8_t *buf,
			uint64_t so, uint64_t eo)
{
	unsigned int nd = v->nd, d, i, npts = 0;
	uint64_t C = v->chunk, ws[RAID_MAX_DISKS], we[RAID_MAX_DISKS];
	uint64_t pts[2 * RAID_MAX_DISKS + 2];
	uint8_t *blk[RAID_MAX_DISKS];
	uint8_t *old = buf + (size_t)v->n * C;

	for (d = 0; d < nd + v->np; d++)
		blk[d] = buf + d * C;
	if (so == 0 && eo == v->width)
		return full_stripe(v, s, blk);
	count(&v->partial_stripes);
	/* Each chunk's written range, and the row ranges between their
	 * edges, over which the set of chunks written does not change. */
	pts[npts++] = 0;
	pts[npts++] = C;
	for (d = 0; d < nd; d++) {
		uint64_t cs = d * C;

		ws[d] = we[d] = 0;
		if (so >= cs + C || eo <= cs)
			continue;
		ws[d] = so > cs ? so - cs : 0;
		we[d] = eo < cs + C ? eo - cs : C;
		pts[npts++] = ws[d];
		pts[npts++] = we[d];
	}
	qsort(pts, npts, sizeof(pts[0]), cmp_u64);
	for (i = 0; i + 1 < npts; i++) {
		uint64_t x = pts[i], y = pts[i + 1];
		int touched[RAID_MAX_DISKS];
		unsigned int k = 0;
		int ret;

		if (x == y)
			continue;
		for (d = 0; d < nd; d++) {
			touched[d] = ws[d] < we[d] && ws[d] <= x && y <= we[d];
			k += (unsigned int)touched[d];
		}
		if (!k)
			continue;
		ret = write_rows(v, s, blk, old, touched, k, x, y);
		if (ret)
			return ret;
	}
	return 0;
}

ssize_t raid_pwritev(struct raid_vol *v, const struct iovec *iov, int iovcnt,
		     uint64_t off)
{
	if (atomic_load(&v->nfailed))
		return -EIO;
	return raid_walk(v, iov, iovcnt, off, 1, write_stripe);
}

ssize_t raid_pwrite(struct raid_vol *v, const void *buf, size_t len,
		    uint64_t off)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return raid_pwritev(v, &iov, 1, off);
}
