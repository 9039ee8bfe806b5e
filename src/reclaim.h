/* SPDX-License-Identifier: MIT */
/* reclaim.h - eviction of clean, idle folios to make room (reclaim.c). */
#ifndef WTIO_RECLAIM_H
#define WTIO_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_ctx;

/* Evict up to want units of folios, wherever the unit hand stands;
 * returns the folios evicted. */
uint64_t wtio_reclaim(struct wtio_ctx *ctx, uint64_t want);
/* Evict the folios of one chunk, all clean, idle and not used since the
 * chunk hand last passed, for a large folio; whether any went. */
bool wtio_reclaim_chunk(struct wtio_ctx *ctx);

#endif /* WTIO_RECLAIM_H */
