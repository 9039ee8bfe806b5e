/* SPDX-License-Identifier: MIT */
/*
 * ctx.h - the holder's one wtio context (the program's --cache-size) and
 * wtio handles opened on a description the holder already has.
 */
#ifndef WTIO_HOLDER_CTX_H
#define WTIO_HOLDER_CTX_H

#include <stdint.h>

#include "wtio.h"

/* WTIO_MODE / WTIO_DSYNC / WTIO_CACHE_SIZE / WTIO_FOLIO_SIZE of the
 * environment, as the shim reads them (wtio-run checked them). 0 or
 * -errno (said). */
int hctx_create(void);
/* Its budget and folio size, as a debug line (once the log is set). */
void hctx_debug_config(void);
struct wtio_ctx *hctx(void);
unsigned int hctx_default_flags(void);
uint32_t hctx_folio_size(void);
/* wtio_open of the file of description fd, on a dup of fd itself (no
 * new open file description, which would break the holder's lease).
 * oflags: O_RDONLY/O_WRONLY/O_RDWR | O_DSYNC | O_SYNC | O_NOATIME. */
int hctx_open(int fd, int oflags, struct wtio_file **wf);

#endif
