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

/* The figures each cell reports as median, min and max over its repeats. */
enum fig {
	FIG_MIB_S,
	FIG_IOPS,
	FIG_READ_MIB_S,
	FIG_WRITE_MIB_S,
	FIG_P50,		/* latency percentiles, us */
	FIG_P99,
	FIG_P999,
	FIG_CPU_GIB,		/* CPU seconds per GiB */
	NR_FIG,
};

struct fig_stat {
	double med, min, max;
};

/* One trial (a run), or a cell: its repeats folded by cell_summarize(). */
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
	uint32_t stripe_unit, stripe_width;	/* wtio: the geometry in use */
	char stripe_source[16];
	uint64_t mem_limit;	/* the cgroup limit it ran under; 0 none */
	uint64_t mem_peak;	/* the cgroup's peak use in the trial */
	unsigned int order;	/* trial number in the whole run (1, 2, ...) */
	unsigned int repeat;	/* which repeat (0 based) */
	/* cells only */
	struct fig_stat fig[NR_FIG];
	int nr_runs;		/* trials attempted */
	int runs_ok;		/* of those, with figures in fig[] */
	int interrupted_runs;
};

struct experiment {
	char name[48];
	char title[200];
	char args[600];		/* the preset, as options */
	struct job_opts job;
};

struct exp_result {
	struct experiment *exp;
	struct mode_result *res;	/* cells: [numjobs index * nr_modes + mode index] */
	struct mode_result *runs;	/* trials: [cell index * repeat + repeat] */
	uint64_t cache_size;		/* wtio's cache budget (the default if not set) */
	bool caches_dropped;
	char directory[512];
	char fstype[32];
};

static inline struct mode_result *exp_res(struct exp_result *er, int nj, int m)
{
	return &er->res[nj * er->exp->job.nr_modes + m];
}

static inline struct mode_result *exp_run(struct exp_result *er, int nj, int m, int rep)
{
	return &er->runs[(nj * er->exp->job.nr_modes + m) * (int)er->exp->job.repeat + rep];
}

const char *status_name(enum run_status s);

#endif
