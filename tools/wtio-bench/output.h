/* SPDX-License-Identifier: MIT */
/* output.h - the human table, JSON, CSV and terse renderings. */
#ifndef WTIO_BENCH_OUTPUT_H
#define WTIO_BENCH_OUTPUT_H

#include <stdio.h>

#include "figures.h"
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
	/* equal memory */
	const char *mem_policy;	/* "auto", "off" or the size given */
	const char *memcg;	/* "v1", "v2", or NULL: none */
	char memcg_path[512];
	char mem_note[320];	/* why not equal-memory, when not */
	char commit[48];
};

void meta_fill(struct run_meta *m, int argc, char **argv, const char *suite);

/* Δ% of r's median MiB/s against the experiment's first mode at the same numjobs;
 * returns 0 and sets *ok false when there is no baseline. */
double res_delta(struct exp_result *er, int ni, int mi, bool *ok);

void output_normal(FILE *f, struct exp_result *er, int n, const struct run_meta *m);
/* Only the table of one experiment (printed as each one ends). */
void output_normal_one(FILE *f, struct exp_result *er, const struct run_meta *m);
void output_json(FILE *f, struct exp_result *er, int n, const struct run_meta *m);
void output_csv(FILE *f, struct exp_result *er, int n, const struct run_meta *m);
void output_terse(FILE *f, struct exp_result *er, int n, const struct run_meta *m);

#endif
