/* SPDX-License-Identifier: MIT */
/* dontcache_stream.h - a handle's sequential DONTCACHE writes gathered
 * into I/Os of max_io_size (dontcache_stream.c), for the write path. */
#ifndef WTIO_DONTCACHE_STREAM_H
#define WTIO_DONTCACHE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct wtio_file;

/* Does a DONTCACHE write of [off, off + len) continue the handle's
 * stream, to be written dirty and left to wtio_dc_stream_advance? */
bool wtio_dc_stream_joins(struct wtio_file *file, off_t off, size_t len);
/* A joining write copied done bytes at off: start the writeback of each
 * whole max_io_size unit the stream has now, keep the rest waiting. */
void wtio_dc_stream_advance(struct wtio_file *file, off_t off, size_t done);
/* Any other write of the handle, its close: start the writeback of what
 * waits, and (with next >= 0) the stream goes on from next, else ends. */
void wtio_dc_stream_end(struct wtio_file *file, off_t next);

#endif /* WTIO_DONTCACHE_STREAM_H */
