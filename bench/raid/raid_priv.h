/* SPDX-License-Identifier: MIT */
/*
 * raid_priv.h - the volume's state and layout, shared by the I/O paths
 * (raid.c) and the whole-volume passes (raid_check.c).
 */
#ifndef WTIO_RAID_PRIV_H
#define WTIO_RAID_PRIV_H

#include "raid.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

/* Stripe s takes lock s % RAID_NLOCKS: neighbours never share one. */
#define RAID_NLOCKS 4096

struct raid_member {
	int fd;			/* -1 while failed */
	atomic_int failed;
	char path[PATH_MAX];
	_Atomic uint64_t reads, writes, read_bytes, write_bytes;
};

struct raid_vol {
	int level;
	unsigned int n, nd, np;		/* members, data and parity per stripe */
	uint32_t chunk;
	uint64_t width;			/* chunk * nd */
	int direct;
	atomic_int nfailed;
	struct raid_member m[RAID_MAX_DISKS];
	_Atomic uint64_t full_stripes, rmw_rows, rcw_rows, full_rows,
		partial_stripes;
	pthread_mutex_t locks[RAID_NLOCKS];
};

/* Member of stripe s holding data chunk d (d < nd), P (d == nd) or Q
 * (d == nd + 1). */
static inline unsigned int raid_map(const struct raid_vol *v, uint64_t s,
				    unsigned int d)
{
	unsigned int p = v->n - 1 - (unsigned int)(s % v->n);

	if (d >= v->nd)
		return (p + (d - v->nd)) % v->n;
	return (p + v->np + d) % v->n;
}

/* Counted member I/O; a read past the member's end returns zeros. */
int raid_mread(struct raid_vol *v, unsigned int k, void *buf, size_t len,
	       uint64_t off);
int raid_mwrite(struct raid_vol *v, unsigned int k, const void *buf,
		size_t len, uint64_t off);
/* (Re)open member k's file read-write with open(2) flags added. */
int raid_member_reopen(struct raid_vol *v, unsigned int k, int flags);
/* Copy len bytes between buf and the iovec array, skipping skip bytes of
 * the array first; to_iov: buf -> iov. */
void raid_iov_copy(const struct iovec *iov, int iovcnt, size_t skip,
		   uint8_t *buf, size_t len, int to_iov);
size_t raid_iov_len(const struct iovec *iov, int iovcnt);
/* This thread's scratch: (nd + n) chunks, aligned; NULL on ENOMEM. */
uint8_t *raid_scratch(struct raid_vol *v);
/*
 * Cut volume I/O [off, off + len of iov) at stripes and call fn for each,
 * under the stripe's lock, with the thread's scratch as buf: the stripe's
 * data bytes [so, eo) sit at buf + so (copied in from iov before fn for a
 * write, out to iov after it for a read). Returns bytes done, or the
 * negative errno when nothing was.
 */
typedef int (*raid_stripe_fn)(struct raid_vol *v, uint64_t s, uint8_t *buf,
			      uint64_t so, uint64_t eo);
ssize_t raid_walk(struct raid_vol *v, const struct iovec *iov, int iovcnt,
		  uint64_t off, int write, raid_stripe_fn fn);
/* Read stripe s whole into blocks blk[0..nd+np-1] (data, P, Q), the failed
 * members' chunks rebuilt from the others. Caller holds the stripe lock. */
int raid_load_stripe(struct raid_vol *v, uint64_t s, uint8_t *const *blk);

#endif /* WTIO_RAID_PRIV_H */
