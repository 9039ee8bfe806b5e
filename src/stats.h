/* SPDX-License-Identifier: MIT */
/*
 * stats.h - the context's counters: spread over slots, one per group of
 * threads, so that threads counting cache hits do not bounce one cache
 * line between them (wtio_stats sums them).
 */
#ifndef WTIO_STATS_H
#define WTIO_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define WTIO_STAT_SLOTS 16
struct wtio_stat_slot {
	_Atomic uint64_t hits, misses, readahead, bytes_read, bytes_written,
		read_ios, write_ios, throttle_waits, evictions, wb_errors,
		rmw_reads, stripe_splits, dropbehind, atomic_writes,
		adaptive_wt, failed_dropped;
} __attribute__((aligned(128)));

/* This thread's counter slot: threads get slots round robin. */
unsigned int wtio_stat_slot(void);
#define wtio_stat_add(ctx, field, v)					\
	atomic_fetch_add_explicit(&(ctx)->st[wtio_stat_slot()].field,	\
				  (uint64_t)(v), memory_order_relaxed)

#endif /* WTIO_STATS_H */
