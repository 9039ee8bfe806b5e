/* SPDX-License-Identifier: MIT */
/*
 * raid.h - a user-space parity RAID (levels 5 and 6) over N member files,
 * for benchmarks and tests only: it makes a partial-stripe write pay what
 * a parity RAID pays, so that stripe-aligned writeback can be measured on
 * a machine whose kernel has no md.
 *
 * Layout: md's default left-symmetric rotation. Stripe s over n members:
 * RAID-5 parity P on member n-1-(s%n), data chunk d on (P+1+d)%n; RAID-6
 * Q on (P+1)%n and data chunk d on (P+2+d)%n. Q is the Reed-Solomon
 * syndrome over GF(2^8) (polynomial 0x11d, generator 2), data chunk d
 * weighted by 2^d.
 *
 * Writes, per stripe under that stripe's lock:
 *  - a whole stripe: parity computed from the new data, nothing read;
 *  - part of one: each row range of the chunks (cut where the write's
 *    edges fall inside a chunk) is done by read-modify-write (read the old
 *    data being replaced and the old parity) or by reconstruct-write (read
 *    the data chunks not being written), whichever reads fewer member I/Os,
 *    reconstruct-write on a tie, as md decides it; a row range that the
 *    write covers on every data chunk needs no reads.
 * Reads go to the data members only, or reconstruct a failed member's
 * chunks from the others. Writes while a member is failed are refused
 * (-EIO): rebuild first.
 *
 * Member files are opened O_DIRECT where the filesystem allows it (tmpfs
 * does on Linux >= 6.6), else buffered; raid_direct() says which. The
 * volume has no fixed size: members are sparse files that grow, and bytes
 * never written read back as zeros (zero data has zero parity).
 */
#ifndef WTIO_RAID_H
#define WTIO_RAID_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define RAID_MAX_DISKS 32
/* Offsets and lengths of volume I/O are multiples of this. */
#define RAID_SECTOR 512u

struct raid_vol;

struct raid_member_stats {
	uint64_t reads, writes;		/* I/O calls to the member */
	uint64_t read_bytes, write_bytes;
};

struct raid_vol_stats {
	uint64_t full_stripe_writes;	/* stripes written whole, no reads */
	uint64_t rmw_rows;		/* row ranges done by read-modify-write */
	uint64_t rcw_rows;		/* ... by reconstruct-write */
	uint64_t full_rows;		/* ... covered on every data chunk */
	uint64_t partial_stripe_writes;	/* stripes written in part */
};

/*
 * Create a volume over ndisks new member files DIR/PREFIX.N (truncated).
 * level 5 (ndisks >= 3) or 6 (ndisks >= 4); chunk a power of two, at
 * least 4096 and at most 16 MiB. Returns 0 or a negative errno.
 */
int raid_create(const char *dir, const char *prefix, int level,
		unsigned int ndisks, uint32_t chunk, struct raid_vol **volp);
/* Close the members; unlink them too when remove is set. */
void raid_destroy(struct raid_vol *v, int remove);

int raid_level(const struct raid_vol *v);
unsigned int raid_disks(const struct raid_vol *v);
unsigned int raid_data_disks(const struct raid_vol *v);
uint32_t raid_chunk(const struct raid_vol *v);
/* chunk * data disks: the bytes of one full stripe. */
uint64_t raid_stripe_width(const struct raid_vol *v);
/* 1 when the members are open O_DIRECT. */
int raid_direct(const struct raid_vol *v);
const char *raid_member_path(const struct raid_vol *v, unsigned int k);

/* Volume I/O; off and the total length multiples of RAID_SECTOR. Return
 * the byte count or a negative errno. Thread-safe. */
ssize_t raid_pwritev(struct raid_vol *v, const struct iovec *iov, int iovcnt,
		     uint64_t off);
ssize_t raid_preadv(struct raid_vol *v, const struct iovec *iov, int iovcnt,
		    uint64_t off);
ssize_t raid_pwrite(struct raid_vol *v, const void *buf, size_t len,
		    uint64_t off);
ssize_t raid_pread(struct raid_vol *v, void *buf, size_t len, uint64_t off);
/* fdatasync every member. */
int raid_sync(struct raid_vol *v);

void raid_stats(struct raid_vol *v, struct raid_member_stats *members,
		struct raid_vol_stats *vol);
void raid_stats_reset(struct raid_vol *v);

/*
 * Check the parity of every stripe up to the largest member. Returns the
 * number of stripes whose parity is wrong (0: consistent) or a negative
 * errno; *first_bad (if not NULL) is the first such stripe.
 */
long raid_verify(struct raid_vol *v, uint64_t *first_bad);

/* Make [off, off + len) read as zeros (any byte range): whole stripes
 * become holes in every member, the edges are written with zeros. The
 * caller keeps other I/O off the range meanwhile. */
int raid_discard(struct raid_vol *v, uint64_t off, uint64_t len);

/* Mark member k failed (its file is closed, not touched): reads
 * reconstruct it. At most 1 (RAID-5) or 2 (RAID-6) at a time. */
int raid_fail_member(struct raid_vol *v, unsigned int k);
/* Rebuild every failed member into a new file at its path. */
int raid_rebuild(struct raid_vol *v);

#endif /* WTIO_RAID_H */
