/* SPDX-License-Identifier: MIT */
/* readahead.h - sequential streams and asynchronous readahead
 * (readahead.c), for the read path. */
#ifndef WTIO_READAHEAD_H
#define WTIO_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wtio_file;
struct wtio_folio;

/* On a miss at a read of [off, off + len): the readahead window for it
 * (0: not a sequential stream), the handle's state updated. */
uint32_t wtio_ra_window(struct wtio_file *file, off_t off, size_t len);
/* Start reading window bytes from folio index on asynchronously, in I/Os
 * of max_io_size, as far as new folios can be had without waiting (free
 * ones only, marked FOLIO_DROPBEHIND, when dontcache) and below isize;
 * the first is marked FOLIO_READAHEAD. Nothing without a completion
 * thread. File lock held (shared is enough). */
void wtio_ra_async(struct wtio_file *file, uint64_t index, uint32_t window,
		   int64_t isize, bool dontcache);
/* A read reached a folio marked FOLIO_READAHEAD: take the mark and start
 * the next window, grown (for a drop-behind stream when dontcache).
 * File lock held (shared is enough). */
void wtio_ra_marked(struct wtio_file *file, struct wtio_folio *folio,
		    int64_t isize, bool dontcache);

#endif /* WTIO_READAHEAD_H */
