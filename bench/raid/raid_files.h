/* SPDX-License-Identifier: MIT */
/*
 * raid_files.h - files on the user-space RAID. A file keeps its own
 * descriptor (the one wtio_open made) as a placeholder that holds only its
 * size; its bytes live in the volume, at the same offset inside a region
 * of the volume that the file's inode gets when first seen (region k at
 * k * RAID_FILES_SPAN, rounded up to whole stripes, so that alignment in
 * the file is alignment in the volume). The placeholder is sparse and
 * never read or written: reads stop at its size, writes past it extend
 * it (ftruncate) as a direct write would, and where it shrinks - through
 * set_size, or found shrunk by anyone else (open with O_TRUNC) at the
 * next I/O - the volume past the new size is discarded, so that a file
 * grown again reads zeros there.
 */
#ifndef WTIO_RAID_FILES_H
#define WTIO_RAID_FILES_H

#include "raid.h"

#define RAID_FILES_SPAN (64ull << 30)
#define RAID_FILES_MAX 256

struct raid_files;

int raid_files_create(struct raid_vol *v, struct raid_files **rfp);
void raid_files_destroy(struct raid_files *rf);
struct raid_vol *raid_files_vol(struct raid_files *rf);

/* Read or write fd's file; returns bytes (a read short at EOF) or -errno. */
ssize_t raid_files_rw(struct raid_files *rf, int write, int fd,
		      const struct iovec *iov, int iovcnt, off_t off);
/* Durable: the members, then the placeholder's size. */
int raid_files_sync(struct raid_files *rf, int fd, int datasync);
/* ftruncate of the placeholder, discarding the volume past size. */
int raid_files_set_size(struct raid_files *rf, int fd, off_t size);
/* Where fd's file starts in the volume (its region), or -errno. */
int64_t raid_files_base(struct raid_files *rf, int fd);

#endif /* WTIO_RAID_FILES_H */
