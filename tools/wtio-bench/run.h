/* SPDX-License-Identifier: MIT */
/* run.h - one experiment: prepare files, run every mode at every numjobs. */
#ifndef WTIO_BENCH_RUN_H
#define WTIO_BENCH_RUN_H

#include "options.h"
#include "result.h"

/* Seconds an experiment should take (for the ETA); 0 if unknown. */
double experiment_estimate(const struct experiment *ex);

/*
 * Run ex into er (er->res allocated here). Returns 0, 1 when some run
 * failed (an error, not "unsupported"), or 130 when interrupted.
 */
int run_experiment(struct experiment *ex, const struct bench_opts *o,
		   struct exp_result *er, double rest_s);

#endif
