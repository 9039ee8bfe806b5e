/* SPDX-License-Identifier: MIT */
/*
 * serve.h - HOP_OPEN: the program's open of a path, served by the holder
 * or not.
 */
#ifndef WTIO_HOLDER_SERVE_H
#define WTIO_HOLDER_SERVE_H

#include <sys/types.h>

#include "table.h"

#define HSERVE_NOT_SERVED 1

/*
 * Open path (relative to dirfd, AT_FDCWD for an absolute one) with the
 * program's flags and mode (umask applied by the client). Returns 0:
 * served, *ofd is a new OFD with one reference and *send_fd a descriptor
 * of its description for the client (close it after sending);
 * HSERVE_NOT_SERVED: the client opens it itself, as without the holder
 * (nothing was created or truncated); or -errno: the open's error.
 */
int hserve_open(int dirfd, const char *path, int flags, mode_t mode,
		struct hofd **ofd, int *send_fd);

#endif
