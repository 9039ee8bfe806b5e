/* SPDX-License-Identifier: MIT */
/*
 * fsize_limit.h - the process's file size limit (RLIMIT_FSIZE, ulimit -f)
 * applied in the caller's thread, as the kernel applies it to a write and
 * to a growing truncate (wtio's own threads block SIGXFSZ: sys.h).
 */
#ifndef WTIO_FSIZE_LIMIT_H
#define WTIO_FSIZE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct wtio_inode;

/* A write of *len bytes at off (ending past the file's end): 0, with
 * *len cut to the limit; -EFBIG and SIGXFSZ to this thread when off is
 * at or past it; -EINVAL for an untorn write it would cut. No lock of
 * inode held. */
int wtio_fsize_check_write(struct wtio_inode *inode, int64_t off,
			   ssize_t *len, bool atomic);
/* A truncate growing the file to size: 0, or -EFBIG and SIGXFSZ. */
int wtio_fsize_check_grow(struct wtio_inode *inode, int64_t size);

#endif /* WTIO_FSIZE_LIMIT_H */
