/* SPDX-License-Identifier: MIT */
/*
 * write.h - the three write paths: write-back (buffered_write.c),
 * write-through (writethrough.c) and untorn (atomic_write.c).
 */
#ifndef WTIO_WRITE_H
#define WTIO_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct wtio_file;
struct wtio_inode;
struct wtio_wb_ctl;

/* ---- buffered_write.c ---- */
/* A write-back write (WTIO_DSYNC: durable before it returns). */
ssize_t wtio_buffered_write(struct wtio_file *file, const struct iovec *iov,
			    int iovcnt, off_t off, unsigned int flags);

/* ---- writethrough.c ---- */
/*
 * Copy into the cache and put the written folios under writeback in
 * wbc's ioends, submitted before return (or left in wbc->deferred when
 * keep_deferred is set, for a queue's worker to submit). Returns bytes
 * copied or a negative errno; *extending says whether i_size moved.
 */
ssize_t wtio_writethrough_copy(struct wtio_file *file, const struct iovec *iov,
			       int iovcnt, off_t off, unsigned int flags,
			       struct wtio_wb_ctl *wbc, bool keep_deferred,
			       bool *extending);
ssize_t wtio_writethrough(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags);
/* After an extending DSYNC write-through write ending at end: make sure
 * the durable size covers it. */
int wtio_dsync_finish(struct wtio_inode *inode, int64_t end, bool in_reaper);

/* ---- atomic_write.c ---- */
/* -EOPNOTSUPP without untorn write support, -EINVAL for a bad shape. */
int wtio_atomic_check(struct wtio_inode *inode, off_t off, size_t len);
ssize_t wtio_atomic_write(struct wtio_file *file, const struct iovec *iov,
			  int iovcnt, off_t off, unsigned int flags);

#endif /* WTIO_WRITE_H */
