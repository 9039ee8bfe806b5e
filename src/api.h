/* SPDX-License-Identifier: MIT */
/* api.h - the checks every public read and write passes, and the write
 * dispatch on mode flags (api.c), for the queued calls too. */
#ifndef WTIO_API_H
#define WTIO_API_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

struct wtio_file;

/* A checked write, dispatched on its mode flags. */
ssize_t wtio_file_write(struct wtio_file *file, const struct iovec *iov,
			int iovcnt, off_t off, unsigned int flags);
/* Checks shared by the synchronous and queued calls: total length, or a
 * negative errno. Adds the handle's default flags to *flags, and for an
 * adaptive write WTIO_WRITETHROUGH when it goes write-through. */
ssize_t wtio_check_rw(struct wtio_file *file, const struct iovec *iov,
		      int iovcnt, off_t off, unsigned int *flags, bool write);

#endif /* WTIO_API_H */
