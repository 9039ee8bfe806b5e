/* SPDX-License-Identifier: MIT */
/*
 * options.h - wtio-bench's options: one job description (struct job_opts,
 * what one experiment runs) and the run-wide settings (struct bench_opts).
 */
#ifndef WTIO_BENCH_OPTIONS_H
#define WTIO_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidtarget.h"

#define MAX_MODES	16
#define MAX_NUMJOBS	16	/* entries in a --numjobs sweep */
#define MAX_JOBS	256	/* threads in one run */

/* Exit status for a bad command line. */
#define EXIT_USAGE	2

enum rw_kind {
	RW_WRITE,
	RW_RANDWRITE,
	RW_READ,
	RW_RANDREAD,
	RW_RANDRW,
	RW_CREATE,	/* small files: create, write bs, close (smallfiles) */
};

enum ioengine {
	IOENGINE_AUTO,		/* psync for iodepth 1, else libaio (io_uring) */
	IOENGINE_PSYNC,
	IOENGINE_LIBAIO,
	IOENGINE_IO_URING,
	IOENGINE_NULL,		/* no I/O: the harness's own cost per request */
	IOENGINE_NR,
};

/* What one experiment runs: the same workload once per mode, per numjobs. */
struct job_opts {
	enum rw_kind rw;
	uint64_t bs;
	uint64_t size;		/* file size (per file) */
	uint64_t io_size;	/* bytes each job does when not time based;
				 * 0 = size */
	unsigned int numjobs[MAX_NUMJOBS];
	int nr_numjobs;
	unsigned int iodepth;
	enum ioengine ioengine;
	double runtime;		/* seconds; 0 = until io_size is done */
	double ramp_time;	/* seconds of discarded warm-up per mode */
	bool time_based;
	bool dsync;
	unsigned int sfr_every;		/* --sync_file_range=N */
	unsigned int fsync_every;	/* --fsync=N */
	bool overwrite;
	bool file_append;
	bool per_job_files;
	unsigned int nrfiles;		/* files per job (or in the shared set) */
	unsigned int rwmixread;		/* percent reads for randrw */
	char filename_format[128];
	uint64_t cache_size;		/* wtio; 0 = library default */
	uint64_t folio_size;		/* wtio; 0 = library default (at most 1M) */
	bool large_folios;		/* WTIO_CONFIG_LARGE_FOLIOS */
	uint32_t flushers;		/* wtio; 0 = library default */
	uint32_t dirty_ratio;		/* wtio, percent; 0 = library default */
	uint32_t dirty_bg_ratio;	/* wtio, percent; 0 = library default */
	int modes[MAX_MODES];		/* indexes into mode_table */
	int nr_modes;
	bool invalidate;		/* drop the page cache between modes */
	bool pre_read;			/* read the files into the cache first */
	bool samples;			/* per-second throughput samples */
	bool stripe_align;		/* wtio: cut I/O at stripe units */
	bool size_ahead;		/* wtio: WTIO_CONFIG_SIZE_AHEAD */
	unsigned int repeat;		/* runs of each mode, alternating */
};

#define FMT_NORMAL	(1u << 0)
#define FMT_JSON	(1u << 1)
#define FMT_CSV		(1u << 2)
#define FMT_TERSE	(1u << 3)

/* One option the user gave, kept to re-apply over a suite's presets. */
struct opt_arg {
	int id;			/* row of the option table */
	const char *val;	/* NULL: given without a value */
};

struct bench_opts {
	struct job_opts job;		/* the command line's job */
	struct opt_arg job_args[64];	/* job options as given, in order */
	int nr_job_args;
	bool given[128];		/* by row of the option table */
	const char *suite;
	char directory[512];
	unsigned int formats;
	const char *output;		/* --output=FILE: the formats go there */
	const char *json_path;		/* --json=FILE: JSON there as well */
	bool xfs_loop;
	uint64_t stripe_su;
	unsigned int stripe_sw;
	uint64_t xfs_size;
	struct raid_spec raid;		/* --raid: the user-space RAID */
	int raid_su;			/* --raid-su: 0 chunk, 1 stripe */
	int raid_cut;			/* --raid-cut: 0 width, 1 chunk */
	struct raid_spec md_raid;	/* --md-raid: md over loop devices */
	int progress;			/* -1 auto (TTY), 0 off, 1 on */
	bool dry_run;
	bool keep_files;
	int mem_policy;			/* MEM_AUTO, MEM_OFF, MEM_SIZE */
	uint64_t mem_limit;		/* MEM_SIZE: the kernel modes' limit */
	bool memcg_on;			/* the cgroup is set up (main) */
	bool perf;			/* perf record -g per trial */
};

enum { MEM_AUTO, MEM_OFF, MEM_SIZE };
/* The kernel modes' cgroup limit over wtio's cache: this, plus the I/O buffers. */
#define MEM_ALLOWANCE	(64ull << 20)

/* Fill a job with the defaults (the option table's). */
void job_defaults(struct job_opts *job);

/*
 * Parse the command line into *o. Returns 0, or exits: 0 after --help,
 * --version or --list-*, EXIT_USAGE with a message on stderr for a bad
 * option.
 */
void options_parse(int argc, char **argv, struct bench_opts *o);

/*
 * Set one job option (its name without "--", and its value; NULL for a
 * flag given alone) in job. Returns 0, or -1 with a message in err.
 */
int job_set(struct job_opts *job, const char *name, const char *val,
	    char *err, size_t errlen);

/* Re-apply the command line's job options over a preset job. */
int job_apply_args(struct job_opts *job, const struct bench_opts *o,
		   char *err, size_t errlen);

/* Check a job's options together. Returns 0 or -1 with a message. */
int job_check(const struct job_opts *job, char *err, size_t errlen);

const char *rw_name(enum rw_kind rw);
const char *ioengine_name(enum ioengine e);
/* "4.0KiB"-style rendering into buf. */
const char *size_str(uint64_t v, char *buf, size_t len);

#endif
