/* SPDX-License-Identifier: MIT */
/* flusher.h - the context's writeback: its flusher threads and the
 * completion thread of started writeback (flusher.c). */
#ifndef WTIO_FLUSHER_H
#define WTIO_FLUSHER_H

struct wtio_ctx;

int wtio_writeback_init(struct wtio_ctx *ctx);
void wtio_writeback_exit(struct wtio_ctx *ctx);

#endif /* WTIO_FLUSHER_H */
