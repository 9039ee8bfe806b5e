/* SPDX-License-Identifier: MIT */
/*
 * append_plug.h - extending queued write-through I/O of one file, one
 * merged I/O at a time (append_plug.c).
 */
#ifndef WTIO_APPEND_PLUG_H
#define WTIO_APPEND_PLUG_H

#include <stdint.h>

struct wtio_io_req;
struct wtio_reaper;

/*
 * Submit req, a write that may extend the file key names (its inode), to
 * r's channel: at once when none of key's is in flight there, else
 * merged with those waiting when that one completes. req->next is used
 * while it waits; req's end_io runs on r's thread (or in this one, for a
 * request that could not be queued), with req's own byte count.
 */
void wtio_plug_submit(struct wtio_reaper *r, const void *key,
		      struct wtio_io_req *req, uint32_t max_io);

#endif /* WTIO_APPEND_PLUG_H */
