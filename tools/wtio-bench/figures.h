/* SPDX-License-Identifier: MIT */
/*
 * figures.h - the figures of a run (MiB/s, IOPS, latency percentiles, CPU
 * per GiB), and of a cell of repeated runs: median, min and max of each.
 */
#ifndef WTIO_BENCH_FIGURES_H
#define WTIO_BENCH_FIGURES_H

#include <stdbool.h>

#include "result.h"

/* Derived figures of one run. */
double res_mib_s(const struct mode_result *r);
double res_iops(const struct mode_result *r);
double res_cpu_per_gib(const struct mode_result *r);
double fig_value(const struct mode_result *r, enum fig k);
/* Whether the run (or cell) has figures to show. */
bool has_figures(const struct mode_result *r);

/*
 * Fold the n repeats of one cell into *out: the run at the median MiB/s
 * in full (so its counters agree with each other), each figure's median
 * (for an even count the lower middle value: always a measured one), min
 * and max over the runs that completed, and the worst status met (an
 * error wins over figures). Interrupted runs count only when no run
 * completed.
 */
void cell_summarize(const struct mode_result *runs, int n, struct mode_result *out);

/* Whether two cells' MiB/s ranges overlap (repeats > 1 only). */
bool within_noise(const struct mode_result *a, const struct mode_result *b);

#endif
