/* SPDX-License-Identifier: MIT */
/*
 * shim_rw.h - a call's RWF_* flags as wtio flags, and lseek's arithmetic
 * on a served file: one definition for the preload shim (rw.c) and the
 * cache holder of --shared (holder/ops.c), so both answer alike.
 */
#ifndef WTIO_SHIM_RW_H
#define WTIO_SHIM_RW_H

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "shim.h"

/* wtio flags of a read or write with RWF_* flags rwf; *append set or
 * cleared by RWF_APPEND/RWF_NOAPPEND. 0, or -EOPNOTSUPP. */
static inline int shim_rwf_map(int rwf, bool write, unsigned int *wflags,
			       bool *append)
{
	unsigned int f = 0;

	if (rwf & ~SHIM_RWF_KNOWN)
		return -EOPNOTSUPP;
	if (rwf & RWF_NOWAIT)
		f |= WTIO_NOWAIT;
	if (rwf & RWF_DONTCACHE)
		f |= WTIO_DONTCACHE;
	if (write) {
		if (rwf & (RWF_DSYNC | RWF_SYNC))
			f |= WTIO_DSYNC;
		if (rwf & RWF_ATOMIC)
			f |= WTIO_ATOMIC;
		if (rwf & SHIM_RWF_WRITETHROUGH)
			f |= WTIO_WRITETHROUGH;
		if (rwf & SHIM_RWF_NOSERIAL)
			f |= WTIO_NOSERIAL | WTIO_WRITETHROUGH;
		if (rwf & RWF_APPEND)
			*append = true;
		if (rwf & RWF_NOAPPEND)
			*append = false;
	}
	*wflags = f;
	return 0;
}

/* The position lseek(off, whence) gives from pos in a file of size, or
 * -errno. No hole is reported but the one at the end of the file. A sum
 * past the largest off_t is -EINVAL, as the kernel's (it wraps, negative).
 * The file's largest size is shim_seek_limit's. */
static inline off_t shim_seek_to(off_t pos, off_t size, off_t off, int whence)
{
	off_t r;

	switch (whence) {
	case SEEK_SET:
		r = off;
		break;
	case SEEK_CUR:
		if (__builtin_add_overflow(pos, off, &r))
			return -EINVAL;
		break;
	case SEEK_END:
		if (__builtin_add_overflow(size, off, &r))
			return -EINVAL;
		break;
	case SEEK_DATA:	/* data up to EOF */
		if (off < 0 || off >= size)
			return -ENXIO;
		r = off;
		break;
	case SEEK_HOLE:	/* the only hole is the one at EOF */
		if (off < 0 || off >= size)
			return -ENXIO;
		r = size;
		break;
	default:
		return -EINVAL;
	}
	return r < 0 ? -EINVAL : r;
}

/*
 * shim_seek_to's result r, checked against the file's largest size under
 * wtio (max: wtio_file_max_size, the filesystem's s_maxbytes for the file
 * capped at 2^62 and rounded down to wtio's block): the kernel refuses a
 * position past s_maxbytes with EINVAL (vfs_setpos), and a served file
 * answers the same at wtio's limit, the one its writes (-EFBIG at it, cut
 * short across it), ftruncate and fallocate (-EFBIG past it) keep. That
 * limit is never above the kernel's (it is probed from it at open), so
 * no position the kernel refuses gets through. SEEK_CUR by 0 is never
 * checked, as in the kernel. r, or -errno.
 */
static inline off_t shim_seek_limit(off_t r, off_t off, int whence, off_t max)
{
	if (whence == SEEK_CUR && off == 0)
		return r;
	if (max < 0)
		return max;
	return r > max ? -EINVAL : r;
}

/* fallocate's size check at wtio's limit max, as vfs_fallocate makes it
 * at s_maxbytes: a range ending past it is -EFBIG (whatever the mode).
 * The kernel's own earlier checks (off < 0 or len <= 0: -EINVAL) are
 * left to it. 0, or -EFBIG. */
static inline int shim_falloc_limit(off_t off, off_t len, off_t max)
{
	if (off < 0 || len <= 0 || max < 0)
		return 0;
	return len > max - off ? -EFBIG : 0;
}

#endif
