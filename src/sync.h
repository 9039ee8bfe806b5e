/* SPDX-License-Identifier: MIT */
/* sync.h - making a file's data and size durable: fsync, fdatasync and
 * sync_file_range. */
#ifndef WTIO_SYNC_H
#define WTIO_SYNC_H

#include <stdbool.h>
#include <sys/types.h>

struct wtio_file;

int wtio_fsync_file(struct wtio_file *file, bool datasync);
int wtio_sync_file_range(struct wtio_file *file, off_t off, off_t nbytes,
			 unsigned int flags);

#endif /* WTIO_SYNC_H */
