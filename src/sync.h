/* SPDX-License-Identifier: MIT */
/* sync.h - making a file's data and size durable: fsync, fdatasync and
 * sync_file_range. */
#ifndef WTIO_SYNC_H
#define WTIO_SYNC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct wtio_file;
struct wtio_inode;

/* What wtio_make_durable does after writing the range and waiting. */
#define WTIO_DURABLE_FLUSH	(1u << 0)	/* flush the file (fsync) */
#define WTIO_DURABLE_DATA	(1u << 1)	/* ... its data (fdatasync) */
#define WTIO_DURABLE_RECORD	(1u << 2)	/* a failed flush is every handle's */
#define WTIO_DURABLE_STOP	(1u << 3)	/* skip the later steps after an error */
/*
 * The durability sequence: write [start, end) back (end -1: to EOF) and
 * wait for every writeback in flight on it, make the backing file's size
 * i_size, then flush as how says. Returns the first error, a failed
 * flush's over any other.
 */
int wtio_make_durable(struct wtio_inode *inode, int64_t start, int64_t end,
		      unsigned int how);

/* A flusher wrote back a closed file kept with its cache: once nothing
 * of it is dirty, make its size exact (a failure is recorded, errseq). */
void wtio_settle_closed(struct wtio_inode *inode);
int wtio_fsync_file(struct wtio_file *file, bool datasync);
int wtio_sync_file_range(struct wtio_file *file, off_t off, off_t nbytes,
			 unsigned int flags);

#endif /* WTIO_SYNC_H */
