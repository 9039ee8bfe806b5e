/* SPDX-License-Identifier: MIT */
/* run.h - one experiment: prepare files, run every mode at every numjobs. */
#ifndef WTIO_BENCH_RUN_H
#define WTIO_BENCH_RUN_H

#include "options.h"
#include "result.h"

/*
 * The results of n experiments, each run's mode and numjobs filled in and
 * the rest "not run" (what is reported for experiments not reached); NULL
 * when out of memory. results_free() frees them (samples included).
 */
struct exp_result *results_new(struct experiment *ex, int n, const char *dir);
void results_free(struct exp_result *er, int n);

/* Seconds an experiment should take (for the ETA); 0 if unknown. */
double experiment_estimate(const struct experiment *ex);

/*
 * Run ex into er (er->res allocated here unless results_new() did).
 * Returns 0, 1 when some run failed (an error, not "unsupported"), or 130
 * when interrupted.
 */
int run_experiment(struct experiment *ex, const struct bench_opts *o,
		   struct exp_result *er, double rest_s);

#endif
