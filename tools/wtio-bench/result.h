/* SPDX-License-Identifier: MIT */
/* result.h - experiments and what their runs measured. */
#ifndef WTIO_BENCH_RESULT_H
#define WTIO_BENCH_RESULT_H

#include <stdbool.h>

#include "options.h"
#include "stats.h"
#include "wtio.h"

enum run_status {
	RS_NOT_RUN,
	RS_OK,
	RS_UNSUPPORTED,
	RS_ERROR,
	RS_INTERRUPTED,
};

struct mode_result {
	int mode;
	unsigned int numjobs;
	enum run_status status;
	char reason[200];
	const char *engine;
	struct io_counts c;
	struct hist hist;
	double elapsed_s;	/* the measured window */
	double cpu_s;		/* process CPU (user+sys) in the window */
	double flush_s;		/* closing the files after the run (untimed) */
	double *samples;	/* MiB/s per second of the window */
	int nr_samples;
	uint64_t file_bytes;	/* sum of the files' sizes after close */
	bool have_wstats;
	struct wtio_stats wst;
	const char *wtio_backend;
};

struct experiment {
	char name[48];
	char title[200];
	char args[600];		/* the preset, as options */
	struct job_opts job;
};

struct exp_result {
	struct experiment *exp;
	struct mode_result *res;	/* [numjobs index * nr_modes + mode index] */
	bool caches_dropped;
	char directory[512];
	char fstype[32];
};

static inline struct mode_result *exp_res(struct exp_result *er, int nj, int m)
{
	return &er->res[nj * er->exp->job.nr_modes + m];
}

const char *status_name(enum run_status s);

#endif
