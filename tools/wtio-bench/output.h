/* SPDX-License-Identifier: MIT */
/* output.h - the human table, JSON, CSV and terse renderings. */
#ifndef WTIO_BENCH_OUTPUT_H
#define WTIO_BENCH_OUTPUT_H

#include <stdio.h>

#include "result.h"

struct run_meta {
	char date[64];		/* ISO 8601, local time */
	char kernel[128];
	long nproc;
	double mem_gib;
	char cmdline[1024];
	const char *suite;	/* NULL for a command-line job */
	bool xfs_loop;
	char stripe[64];
	bool interrupted;
	bool root;
};

void meta_fill(struct run_meta *m, int argc, char **argv, const char *suite);

/* Derived figures of one result. */
double res_mib_s(const struct mode_result *r);
double res_iops(const struct mode_result *r);
double res_cpu_per_gib(const struct mode_result *r);
/* Δ% of r against the experiment's first mode at the same numjobs;
 * returns 0 and sets *ok false when there is no baseline. */
double res_delta(struct exp_result *er, int ni, int mi, bool *ok);

void output_normal(FILE *f, struct exp_result *er, int n, const struct run_meta *m);
/* Only the table of one experiment (printed as each one ends). */
void output_normal_one(FILE *f, struct exp_result *er);
void output_json(FILE *f, struct exp_result *er, int n, const struct run_meta *m);
void output_csv(FILE *f, struct exp_result *er, int n, const struct run_meta *m);
void output_terse(FILE *f, struct exp_result *er, int n, const struct run_meta *m);

#endif
