/* SPDX-License-Identifier: MIT */
/* stats.c - histogram, counters, clocks. */
#include <string.h>
#include <time.h>

#include "stats.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = UINT64_MAX;
}

static unsigned int bucket_of(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned int)v;
	unsigned int msb = 63 - (unsigned int)__builtin_clzll(v);
	unsigned int shift = msb - HIST_SUB_BITS;
	/* v >> shift is in [HIST_SUB, 2 * HIST_SUB) */
	return (shift + 1) * HIST_SUB + (unsigned int)((v >> shift) - HIST_SUB);
}

/* The middle of bucket i's value range. */
static uint64_t bucket_value(unsigned int i)
{
	if (i < HIST_SUB)
		return i;
	unsigned int shift = i / HIST_SUB - 1;
	uint64_t lo = ((uint64_t)(i % HIST_SUB) + HIST_SUB) << shift;
	return lo + ((1ull << shift) >> 1);
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->b[bucket_of(ns)]++;
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	if (ns < h->min_ns)
		h->min_ns = ns;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	if (src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	/* The smallest value with at least p% of the samples at or below. */
	uint64_t rank = (uint64_t)((p / 100.0) * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	uint64_t seen = 0;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t v = bucket_value(i);
			if (v > h->max_ns)
				v = h->max_ns;
			if (v < h->min_ns)
				v = h->min_ns;
			return v;
		}
	}
	return h->max_ns;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum_ns / (double)h->count : 0.0;
}

void counts_merge(struct io_counts *dst, const struct io_counts *src)
{
	dst->issued_ops += src->issued_ops;
	dst->issued_bytes += src->issued_bytes;
	dst->ops += src->ops;
	dst->bytes += src->bytes;
	dst->read_ops += src->read_ops;
	dst->read_bytes += src->read_bytes;
	dst->write_ops += src->write_ops;
	dst->write_bytes += src->write_bytes;
	dst->errors += src->errors;
	dst->syncs += src->syncs;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
