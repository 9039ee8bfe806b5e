/* SPDX-License-Identifier: MIT */
/* suites.h - named presets: each a list of experiments written as options. */
#ifndef WTIO_BENCH_SUITES_H
#define WTIO_BENCH_SUITES_H

#include <stdio.h>

#include "options.h"
#include "result.h"

struct suite_exp {
	const char *name;
	const char *title;
	const char *args;	/* job options, space separated */
};

struct suite {
	const char *name;
	const char *desc;
	const struct suite_exp *exps;
};

const struct suite *suite_find(const char *name);
void suites_list(FILE *f);

/*
 * The experiments to run: the suite's (with the command line's job options
 * applied over each), or the command line's one job. Returns the count, or
 * -1 with a message in err for a bad combination.
 */
int experiments_build(const struct bench_opts *o, struct experiment **out,
		      char *err, size_t errlen);

#endif
