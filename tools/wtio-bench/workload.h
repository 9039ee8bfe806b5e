/* SPDX-License-Identifier: MIT */
/* workload.h - measure one trial: threads, phases, accounting. */
#ifndef WTIO_BENCH_WORKLOAD_H
#define WTIO_BENCH_WORKLOAD_H

#include <signal.h>

#include "engine.h"
#include "result.h"

/* Set by SIGINT: stop now, report what was measured. */
extern volatile sig_atomic_t bench_interrupted;

struct progress_ctx {
	bool enabled;
	const char *label;
	double rest_s;		/* time the experiment needs after this run */
};

/*
 * Measure one trial: start tr's threads (files open, engine ready), keep
 * the ramp and the measured window, and fill res: counts, histogram,
 * window, CPU, samples. Returns 0, or the first error (negative errno)
 * a thread met, with a description in res->reason.
 */
int trial_measure(struct trial *tr, struct mode_result *res,
		  const struct progress_ctx *pc);

#endif
