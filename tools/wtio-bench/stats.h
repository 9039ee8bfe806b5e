/* SPDX-License-Identifier: MIT */
/*
 * stats.h - what a run measures: per-op latency in a log-linear histogram,
 * bytes and ops, CPU time, per-second throughput samples.
 */
#ifndef WTIO_BENCH_STATS_H
#define WTIO_BENCH_STATS_H

#include <stdint.h>
#include <sys/resource.h>

/*
 * Log-linear histogram of nanoseconds: values below 2^HIST_SUB_BITS are
 * exact, above that each power of two is split in 2^HIST_SUB_BITS linear
 * buckets, so a percentile is within 1/2^HIST_SUB_BITS (3%) of the truth.
 */
#define HIST_SUB_BITS	5
#define HIST_SUB	(1u << HIST_SUB_BITS)
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t b[HIST_BUCKETS];
	uint64_t count;
	uint64_t sum_ns;
	uint64_t max_ns;
	uint64_t min_ns;
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at percentile p (0..100), in ns; 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);

/* Counters of one thread (or, merged, of a run). */
struct io_counts {
	uint64_t issued_ops, issued_bytes;	/* submitted while measuring */
	uint64_t ops, bytes;			/* completed, of those */
	uint64_t read_ops, read_bytes;
	uint64_t write_ops, write_bytes;
	uint64_t errors;			/* failed or short */
	uint64_t syncs;				/* sync_file_range / fsync calls */
};

void counts_merge(struct io_counts *dst, const struct io_counts *src);

/* Monotonic clock in ns. */
uint64_t now_ns(void);

/* User + system CPU seconds of the process since start. */
double cpu_seconds(void);

#endif
