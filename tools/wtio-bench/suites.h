/* SPDX-License-Identifier: MIT */
/*
 * suites.h - named presets, data only: each a list of experiments, each
 * experiment a list of job options (the option table gives them meaning).
 */
#ifndef WTIO_BENCH_SUITES_H
#define WTIO_BENCH_SUITES_H

#include <stdio.h>

struct suite_opt {
	const char *name;	/* a job option's name, without "--" */
	const char *val;
};

struct suite_exp {
	const char *name;
	const char *title;
	const struct suite_opt *opts;	/* ended by { NULL } */
};

struct suite {
	const char *name;
	const char *desc;
	const struct suite_exp *exps;	/* ended by { NULL } */
};

const struct suite *suite_find(const char *name);
void suites_list(FILE *f);

#endif
