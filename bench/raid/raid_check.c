/* SPDX-License-Identifier: MIT */
/*
 * raid_check.c - whole-volume passes: a stripe loaded with its failed
 * members rebuilt from parity, the parity check, member failure and
 * rebuild.
 */
#include "raid_priv.h"
#include "raid_gf.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int raid_load_stripe(struct raid_vol *v, uint64_t s, uint8_t *const *blk)
{
	unsigned int fail[RAID_MAX_DISKS], nfail = 0, d;
	int ret;

	for (d = 0; d < v->nd + v->np; d++) {
		unsigned int k = raid_map(v, s, d);

		if (v->m[k].failed) {
			fail[nfail++] = d;
			continue;
		}
		ret = raid_mread(v, k, blk[d], v->chunk, s * v->chunk);
		if (ret)
			return ret;
	}
	if (nfail > v->np)
		return -EIO;
	if (nfail)
		raid_recover(blk, v->nd, v->np, fail, nfail, 0, v->chunk);
	return 0;
}

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
