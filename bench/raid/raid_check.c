/* SPDX-License-Identifier: MIT */
/*
 * raid_check.c - whole-volume passes: the parity check, member failure
 * and rebuild, discard.
 */
#include "raid_priv.h"
#include "raid_gf.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Stripes up to the end of the largest surviving member. */
static int64_t nr_stripes(struct raid_vol *v)
{
	uint64_t max = 0;
	unsigned int k;
	struct stat st;

	for (k = 0; k < v->n; k++) {
		if (v->m[k].failed)
			continue;
		if (fstat(v->m[k].fd, &st))
			return -errno;
		if ((uint64_t)st.st_size > max)
			max = (uint64_t)st.st_size;
	}
	return (int64_t)((max + v->chunk - 1) / v->chunk);
}

/* buf: scratch of (nd + n) chunks; blk[] points into it. */
static void stripe_blocks(struct raid_vol *v, uint8_t *buf, uint8_t **blk)
{
	unsigned int d;

	for (d = 0; d < v->nd + v->np; d++)
		blk[d] = buf + (size_t)d * v->chunk;
}

long raid_verify(struct raid_vol *v, uint64_t *first_bad)
{
	uint8_t *buf = raid_scratch(v), *blk[RAID_MAX_DISKS];
	int64_t ns = nr_stripes(v), s;
	long bad = 0;

	if (!buf)
		return -ENOMEM;
	if (ns < 0)
		return (long)ns;
	if (atomic_load(&v->nfailed))
		return -EBUSY;
	stripe_blocks(v, buf, blk);
	for (s = 0; s < ns; s++) {
		pthread_mutex_t *lk = &v->locks[s % RAID_NLOCKS];
		uint8_t *p = buf + (size_t)v->n * v->chunk;
		uint8_t *q = v->np > 1 ? p + v->chunk : NULL;
		int ret;

		pthread_mutex_lock(lk);
		ret = raid_load_stripe(v, (uint64_t)s, blk);
		pthread_mutex_unlock(lk);
		if (ret)
			return ret;
		raid_gen_parity(blk, v->nd, 0, p, q, v->chunk);
		if (memcmp(p, blk[v->nd], v->chunk) ||
		    (q && memcmp(q, blk[v->nd + 1], v->chunk))) {
			if (!bad++ && first_bad)
				*first_bad = (uint64_t)s;
		}
	}
	return bad;
}

int raid_fail_member(struct raid_vol *v, unsigned int k)
{
	if (k >= v->n || v->m[k].failed)
		return -EINVAL;
	if ((unsigned int)atomic_load(&v->nfailed) >= v->np)
		return -EBUSY;
	close(v->m[k].fd);
	v->m[k].fd = -1;
	v->m[k].failed = 1;
	atomic_fetch_add(&v->nfailed, 1);
	return 0;
}

int raid_rebuild(struct raid_vol *v)
{
	uint8_t *buf = raid_scratch(v), *blk[RAID_MAX_DISKS];
	int64_t ns = nr_stripes(v), s;
	unsigned int k, d;
	int ret;

	if (!buf)
		return -ENOMEM;
	if (ns < 0)
		return (int)ns;
	for (k = 0; k < v->n; k++) {
		if (!v->m[k].failed || v->m[k].fd >= 0)
			continue;
		ret = raid_member_reopen(v, k, O_CREAT | O_TRUNC);
		if (ret)
			return ret;
	}
	stripe_blocks(v, buf, blk);
	for (s = 0; s < ns; s++) {
		pthread_mutex_t *lk = &v->locks[s % RAID_NLOCKS];

		pthread_mutex_lock(lk);
		ret = raid_load_stripe(v, (uint64_t)s, blk);
		for (d = 0; !ret && d < v->nd + v->np; d++) {
			k = raid_map(v, (uint64_t)s, d);
			if (v->m[k].failed)
				ret = raid_mwrite(v, k, blk[d], v->chunk,
						  (uint64_t)s * v->chunk);
		}
		pthread_mutex_unlock(lk);
		if (ret)
			return ret;
	}
	for (k = 0; k < v->n; k++) {
		if (v->m[k].failed) {
			v->m[k].failed = 0;
			atomic_fetch_sub(&v->nfailed, 1);
		}
	}
	return 0;
}

/* Zero [off, off + len) by writing zeros; sector edges read-modify-write. */
static int zero_bytes(struct raid_vol *v, uint64_t off, uint64_t len)
{
	size_t zlen = (size_t)v->width;
	uint64_t head = off % RAID_SECTOR;
	/* Not the thread's scratch: raid_pwrite copies into that. */
	uint8_t *z = calloc(1, zlen);

	if (!z)
		return -ENOMEM;
	while (len) {
		uint64_t s = off - head;
		size_t n;
		ssize_t r;

		if (head || len < RAID_SECTOR) {
			uint64_t e = head + len < RAID_SECTOR ?
				     head + len : RAID_SECTOR;

			r = raid_pread(v, z, RAID_SECTOR, s);
			if (r == RAID_SECTOR) {
				memset(z + head, 0, (size_t)(e - head));
				r = raid_pwrite(v, z, RAID_SECTOR, s);
			}
			memset(z, 0, RAID_SECTOR);
			if (r != RAID_SECTOR)
				goto fail;
			off = s + e;
			len -= e - head;
			head = 0;
			continue;
		}
		n = len - len % RAID_SECTOR;
		if (n > zlen)
			n = zlen;
		r = raid_pwrite(v, z, n, off);
		if (r != (ssize_t)n) {
fail:
			free(z);
			return r < 0 ? (int)r : -EIO;
		}
		off += n;
		len -= n;
	}
	free(z);
	return 0;
}

int raid_discard(struct raid_vol *v, uint64_t off, uint64_t len)
{
	uint64_t s0 = (off + v->width - 1) / v->width;
	uint64_t s1 = (off + len) / v->width;
	unsigned int k;
	int ret;

	if (atomic_load(&v->nfailed))
		return -EIO;
	if (s1 <= s0)
		return zero_bytes(v, off, len);
	ret = zero_bytes(v, off, s0 * v->width - off);
	if (!ret)
		ret = zero_bytes(v, s1 * v->width, off + len - s1 * v->width);
	for (k = 0; !ret && k < v->n; k++) {
		/* Whole stripes: a hole in every member (zero data, zero
		 * parity). No stripe lock: the caller owns the range. */
		if (!fallocate(v->m[k].fd, FALLOC_FL_PUNCH_HOLE |
			       FALLOC_FL_KEEP_SIZE, (off_t)(s0 * v->chunk),
			       (off_t)((s1 - s0) * v->chunk)))
			continue;
		if (errno != EOPNOTSUPP)
			return -errno;
		return zero_bytes(v, s0 * v->width, (s1 - s0) * v->width);
	}
	return ret;
}
