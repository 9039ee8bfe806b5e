/* SPDX-License-Identifier: MIT */
/* experiments.h - the experiments of a run: a suite's, or the command line's job. */
#ifndef WTIO_BENCH_EXPERIMENTS_H
#define WTIO_BENCH_EXPERIMENTS_H

#include <stddef.h>

#include "options.h"
#include "result.h"

/*
 * The experiments to run: the suite's (with the command line's job options
 * applied over each), or the command line's one job. Returns the count, or
 * -1 with a message in err for a bad combination.
 */
int experiments_build(const struct bench_opts *o, struct experiment **out,
		      char *err, size_t errlen);

#endif
