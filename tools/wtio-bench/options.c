/* SPDX-License-Identifier: MIT */
/*
 * options.c - command line parsing. Job options use fio's names and
 * meanings where fio has them. A job option given on the command line is
 * also kept as text, so that it can be applied over each of a suite's
 * presets (the command line wins).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modes.h"
#include "options.h"
#include "suites.h"

#ifndef WTIO_BENCH_VERSION
#define WTIO_BENCH_VERSION "0.1.0"
#endif

enum {
	/* job options: 1000 + index in job_names[] */
	OPT_JOB = 1000,
	/* run options */
	OPT_SUITE = 2000,
	OPT_DIRECTORY,
	OPT_OUTPUT_FORMAT,
	OPT_OUTPUT,
	OPT_JSON,
	OPT_XFS_LOOP,
	OPT_STRIPE,
	OPT_XFS_SIZE,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_DRY_RUN,
	OPT_KEEP_FILES,
	OPT_HELP,
	OPT_VERSION,
	OPT_LIST_SUITES,
	OPT_LIST_MODES,
};

/* Job options; flags (optional argument, default 1) are marked. */
static const struct {
	const char *name;
	bool flag;
} job_names[] = {
	{ "rw", false }, { "bs", false }, { "size", false },
	{ "io_size", false }, { "numjobs", false }, { "iodepth", false },
	{ "ioengine", false }, { "runtime", false }, { "ramp_time", false },
	{ "time_based", true }, { "sync", false }, { "sync_file_range", false },
	{ "fsync", false }, { "overwrite", true }, { "file_append", true },
	{ "per-job-files", true }, { "filename_format", false },
	{ "nrfiles", false }, { "rwmixread", false }, { "cache-size", false },
	{ "folio-size", false }, { "flushers", false }, { "modes", false },
	{ "invalidate", true }, { "pre_read", true }, { "samples", true },
	{ "stripe-align", true }, { "size-ahead", true },
};
#define NR_JOB_NAMES (int)(sizeof(job_names) / sizeof(job_names[0]))

void job_defaults(struct job_opts *job)
{
	memset(job, 0, sizeof(*job));
	job->rw = RW_RANDWRITE;
	job->bs = 4096;
	job->size = 64ull << 20;
	job->numjobs[0] = 1;
	job->nr_numjobs = 1;
	job->iodepth = 1;
	job->ioengine = IOENGINE_AUTO;
	job->nrfiles = 1;
	job->rwmixread = 50;
	job->invalidate = true;
	job->runtime = 0;
	snprintf(job->filename_format, sizeof(job->filename_format),
		 "wtio-bench.$pid.$jobnum.$filenum");
	job->modes[0] = mode_find("kernel-buffered");
	job->modes[1] = mode_find("wtio-writeback");
	job->nr_modes = 2;
	job->stripe_align = true;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	uint64_t mult = 1;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'b': mult = 1; end++; goto tail_done;
	case 'k': mult = 1ull << 10; break;
	case 'm': mult = 1ull << 20; break;
	case 'g': mult = 1ull << 30; break;
	case 't': mult = 1ull << 40; break;
	default: return -1;
	}
	if (*end) {
		end++;
		if (!strcasecmp(end, "ib") || !strcasecmp(end, "b") || !*end)
			end += strlen(end);
	}
tail_done:
	if (*end)
		return -1;
	if (v && mult > UINT64_MAX / v)
		return -1;
	*out = v * mult;
	return 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Seconds: "10", "10s", "1.5", "2m", "500ms". */
static int parse_time(const char *s, double *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		;
	else if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m"))
		v *= 60;
	else
		return -1;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (!s || !strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no")) {
		*out = false;
		return 0;
	}
	return -1;
}

const char *rw_name(enum rw_kind rw)
{
	static const char *n[] = { "write", "randwrite", "read", "randread",
				   "randrw", "create" };
	return n[rw];
}

static const char *const ioengine_names[IOENGINE_NR] = {
	"auto", "psync", "libaio", "io_uring", "null",
};

const char *ioengine_name(enum ioengine e)
{
	return ioengine_names[e];
}

const char *size_str(uint64_t v, char *buf, size_t len)
{
	static const char *u[] = { "", "k", "M", "G", "T" };
	int i = 0;
	while (i < 4 && v && v % 1024 == 0) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)v, u[i]);
	return buf;
}

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int job_apply(struct job_opts *job, const char *name, const char *val,
	      char *err, size_t errlen)
{
	unsigned long long u;
	uint64_t sz;
	bool b;

	if (!strcmp(name, "rw") || !strcmp(name, "readwrite")) {
		static const char *n[] = { "write", "randwrite", "read",
					   "randread", "randrw", "create" };
		for (int i = 0; i < 6; i++)
			if (!strcmp(val, n[i])) {
				job->rw = (enum rw_kind)i;
				return 0;
			}
		BAD("--rw: '%s' is not one of write, randwrite, read, randread, randrw, create", val);
	}
	if (!strcmp(name, "bs")) {
		if (parse_size(val, &sz) || sz == 0 || sz > (64u << 20))
			BAD("--bs: '%s' is not a block size from 1 byte to 64M (examples: 4k, 16k, 1M)", val);
		job->bs = sz;
		return 0;
	}
	if (!strcmp(name, "size") || !strcmp(name, "io_size")) {
		if (parse_size(val, &sz) || sz == 0)
			BAD("--%s: '%s' is not a size (examples: 256M, 2G)", name, val);
		if (!strcmp(name, "size"))
			job->size = sz;
		else
			job->io_size = sz;
		return 0;
	}
	if (!strcmp(name, "numjobs")) {
		char tmp[256], *save = NULL;
		snprintf(tmp, sizeof(tmp), "%s", val);
		int n = 0;
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (parse_uint(t, MAX_JOBS, &u) || u == 0)
				BAD("--numjobs: '%s' is not a number from 1 to %d (or a list: 1,2,4)", t, MAX_JOBS);
			if (n == MAX_NUMJOBS)
				BAD("--numjobs: at most %d values", MAX_NUMJOBS);
			job->numjobs[n++] = (unsigned int)u;
		}
		if (!n)
			BAD("--numjobs: empty");
		job->nr_numjobs = n;
		return 0;
	}
	if (!strcmp(name, "iodepth")) {
		if (parse_uint(val, 4096, &u) || u == 0)
			BAD("--iodepth: '%s' is not a number from 1 to 4096", val);
		job->iodepth = (unsigned int)u;
		return 0;
	}
	if (!strcmp(name, "ioengine")) {
		for (int i = 0; i < IOENGINE_NR; i++)
			if (!strcmp(val, ioengine_names[i])) {
				job->ioengine = (enum ioengine)i;
				return 0;
			}
		BAD("--ioengine: '%s' is not one of auto, psync, libaio, io_uring, null", val);
	}
	if (!strcmp(name, "runtime") || !strcmp(name, "ramp_time")) {
		double t;
		if (parse_time(val, &t) || t > 86400)
			BAD("--%s: '%s' is not a time (examples: 10, 10s, 500ms, 2m)", name, val);
		if (!strcmp(name, "runtime"))
			job->runtime = t;
		else
			job->ramp_time = t;
		return 0;
	}
	if (!strcmp(name, "sync")) {
		if (!strcmp(val, "none") || !strcmp(val, "0"))
			job->dsync = false;
		else if (!strcmp(val, "dsync") || !strcmp(val, "1"))
			job->dsync = true;
		else
			BAD("--sync: '%s' is not none or dsync", val);
		return 0;
	}
	if (!strcmp(name, "sync_file_range") || !strcmp(name, "fsync")) {
		const char *num = val;
		if (!strcmp(name, "sync_file_range")) {
			const char *colon = strchr(val, ':');
			if (colon) {
				if (strncmp(val, "wait_before,write:", (size_t)(colon - val + 1)))
					BAD("--sync_file_range: only 'wait_before,write:N' or 'N' is supported, not '%s'", val);
				num = colon + 1;
			}
		}
		if (parse_uint(num, 1u << 30, &u))
			BAD("--%s: '%s' is not a number of writes (0 = never)", name, val);
		if (!strcmp(name, "fsync"))
			job->fsync_every = (unsigned int)u;
		else
			job->sfr_every = (unsigned int)u;
		return 0;
	}
	if (!strcmp(name, "nrfiles") || !strcmp(name, "rwmixread") ||
	    !strcmp(name, "flushers")) {
		unsigned long long max = !strcmp(name, "rwmixread") ? 100 : 4096;
		if (parse_uint(val, max, &u) || (u == 0 && strcmp(name, "rwmixread")))
			BAD("--%s: '%s' is not a number from %d to %llu", name, val,
			    strcmp(name, "rwmixread") ? 1 : 0, max);
		if (!strcmp(name, "nrfiles"))
			job->nrfiles = (unsigned int)u;
		else if (!strcmp(name, "flushers"))
			job->flushers = (uint32_t)u;
		else
			job->rwmixread = (unsigned int)u;
		return 0;
	}
	if (!strcmp(name, "cache-size")) {
		if (parse_size(val, &sz) || sz == 0)
			BAD("--cache-size: '%s' is not a size (examples: 256M, 2G)", val);
		job->cache_size = sz;
		return 0;
	}
	if (!strcmp(name, "folio-size")) {
		if (parse_size(val, &sz) || sz < 4096 || sz > (1u << 20) || (sz & (sz - 1)))
			BAD("--folio-size: '%s' is not a power of two from 4k to 1M", val);
		job->folio_size = (uint32_t)sz;
		return 0;
	}
	if (!strcmp(name, "modes")) {
		char tmp[512], *save = NULL;
		snprintf(tmp, sizeof(tmp), "%s", val);
		int n = 0;
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			int m = mode_find(t);
			if (m < 0)
				BAD("--modes: unknown mode '%s' (wtio-bench --list-modes shows them)", t);
			if (n == MAX_MODES)
				BAD("--modes: at most %d modes", MAX_MODES);
			job->modes[n++] = m;
		}
		if (!n)
			BAD("--modes: empty");
		job->nr_modes = n;
		return 0;
	}
	if (!strcmp(name, "filename_format")) {
		if (!*val || strchr(val, '/') || strlen(val) >= sizeof(job->filename_format))
			BAD("--filename_format: '%s' must be a plain file name (use --directory for the place)", val);
		snprintf(job->filename_format, sizeof(job->filename_format), "%s", val);
		if (strstr(val, "$jobnum"))
			job->per_job_files = true;
		return 0;
	}
	/* flags */
	bool *fp = NULL;
	if (!strcmp(name, "time_based")) fp = &job->time_based;
	else if (!strcmp(name, "overwrite")) fp = &job->overwrite;
	else if (!strcmp(name, "file_append")) fp = &job->file_append;
	else if (!strcmp(name, "per-job-files")) fp = &job->per_job_files;
	else if (!strcmp(name, "invalidate")) fp = &job->invalidate;
	else if (!strcmp(name, "pre_read")) fp = &job->pre_read;
	else if (!strcmp(name, "samples")) fp = &job->samples;
	else if (!strcmp(name, "stripe-align")) fp = &job->stripe_align;
	else if (!strcmp(name, "size-ahead")) fp = &job->size_ahead;
	if (fp) {
		if (parse_bool(val, &b))
			BAD("--%s: '%s' is not 0 or 1", name, val);
		*fp = b;
		return 0;
	}
	BAD("unknown job option '--%s'", name);
}

int job_check(const struct job_opts *job, char *err, size_t errlen)
{
	if (job->overwrite && job->file_append)
		BAD("--overwrite and --file_append exclude each other");
	if (job->file_append && job->rw != RW_WRITE)
		BAD("--file_append needs --rw=write");
	if (job->rw != RW_CREATE && job->size < job->bs)
		BAD("--size (%llu) is smaller than --bs (%llu)",
		    (unsigned long long)job->size, (unsigned long long)job->bs);
	if (job->time_based && job->runtime <= 0)
		BAD("--time_based needs --runtime");
	if (job->rw == RW_CREATE && job->nrfiles != 1)
		BAD("--rw=create makes its own files; --nrfiles does not apply");
	unsigned int maxnj = 0;
	for (int i = 0; i < job->nr_numjobs; i++)
		if (job->numjobs[i] > maxnj)
			maxnj = job->numjobs[i];
	if (job->per_job_files && (uint64_t)maxnj * job->nrfiles > 65536)
		BAD("--numjobs x --nrfiles: too many files");
	return 0;
}

int job_apply_args(struct job_opts *job, const struct bench_opts *o,
		   char *err, size_t errlen)
{
	for (int i = 0; i < o->nr_job_args; i++) {
		const char *name = job_names[o->job_args[i].id].name;
		if (job_apply(job, name, o->job_args[i].val, err, errlen))
			return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: wtio-bench [OPTIONS]\n"
"Runs one workload once per mode, on the same prepared file(s), and prints\n"
"throughput, IOPS, latency percentiles, CPU per GiB and the change against\n"
"the first mode. With no options: the default suite (see --list-suites).\n"
"\n"
"Workload (fio's names and meanings):\n"
"  --rw=write|randwrite|read|randread|randrw|create   (default randwrite)\n"
"  --bs=SIZE            block size (4k)\n"
"  --size=SIZE          size of each file (64M)\n"
"  --io_size=SIZE       bytes per job when not --time_based (default --size)\n"
"  --numjobs=N[,N...]   threads; a list sweeps (1,2,4)\n"
"  --iodepth=N          requests in flight per job (1); >1 uses libaio (or\n"
"                       io_uring) for kernel modes, wtio_queue_* for wtio\n"
"  --ioengine=auto|psync|libaio|io_uring   kernel modes' engine (auto)\n"
"  --ioengine=null      no I/O in any mode: what wtio-bench itself costs per\n"
"                       request (fio's null engine)\n"
"  --runtime=TIME       measured seconds per mode (10, 500ms, 2m)\n"
"  --time_based         run for --runtime even when --size is done\n"
"  --ramp_time=TIME     discarded warm-up before each measured window\n"
"  --sync=none|dsync    O_DSYNC (kernel) / WTIO_DSYNC (wtio) on every write\n"
"  --sync_file_range=N  every N writes: sync_file_range(WAIT_BEFORE|WRITE)\n"
"                       (also 'wait_before,write:N', fio's spelling)\n"
"  --fsync=N            fsync every N writes\n"
"  --overwrite          preallocate and write the file first: pure overwrites\n"
"  --file_append        extending writes (rw=write); files start empty\n"
"  --per-job-files      one file per job (default: one shared file)\n"
"  --filename_format=F  file names ($jobnum, $filenum, $pid); $jobnum\n"
"                       implies --per-job-files\n"
"  --nrfiles=N          files per job (or in the shared set), round robin\n"
"  --rwmixread=PCT      reads in randrw (50)\n"
"  --modes=LIST         modes to compare, first is the baseline\n"
"                       (default kernel-buffered,wtio-writeback; --list-modes)\n"
"  --invalidate=0|1     drop the page cache between modes (root; default 1)\n"
"  --pre_read           read the files into the cache before each mode\n"
"  --samples            keep per-second throughput samples\n"
"wtio:\n"
"  --cache-size=SIZE --folio-size=SIZE --flushers=N\n"
"  --stripe-align=0|1   cut I/O at the filesystem's stripe units (1)\n"
"  --size-ahead=0|1     WTIO_CONFIG_SIZE_AHEAD for appending writes (0)\n"
"Run:\n"
"  --suite=NAME         a named preset (--list-suites); other options given\n"
"                       on the command line override the preset's\n"
"  --directory=DIR      where temporary files go (default: current dir)\n"
"  --output-format=LIST normal,json,csv,terse (default normal)\n"
"  --output=FILE        write the output there instead of stdout\n"
"  --json=FILE          also write the JSON result to FILE\n"
"  --xfs-loop           (root) run on a fresh XFS on a loop device over\n"
"                       /dev/shm (loop direct I/O on); removed afterwards\n"
"  --stripe=SU,SW       with --xfs-loop: mkfs.xfs -d su=SU,sw=SW (64k,4)\n"
"  --xfs-size=SIZE      with --xfs-loop: image size (4G)\n"
"  --progress / --no-progress   progress line (default: when stderr is a TTY)\n"
"  --dry-run            print the plan and exit\n"
"  --keep-files         leave the test files in place\n"
"  --list-suites --list-modes --help --version\n"
"Exit status: 0 done, 1 a run failed, 2 bad options, 130 interrupted.\n");
}

static void die_usage(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "wtio-bench: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\nTry 'wtio-bench --help'.\n");
	exit(EXIT_USAGE);
}

void options_parse(int argc, char **argv, struct bench_opts *o)
{
	static struct option longopts[NR_JOB_NAMES + 32];
	int n = 0;
	char err[256];

	for (int i = 0; i < NR_JOB_NAMES; i++)
		longopts[n++] = (struct option){ job_names[i].name,
			job_names[i].flag ? optional_argument : required_argument,
			NULL, OPT_JOB + i };
	longopts[n++] = (struct option){ "suite", required_argument, NULL, OPT_SUITE };
	longopts[n++] = (struct option){ "directory", required_argument, NULL, OPT_DIRECTORY };
	longopts[n++] = (struct option){ "output-format", required_argument, NULL, OPT_OUTPUT_FORMAT };
	longopts[n++] = (struct option){ "output", required_argument, NULL, OPT_OUTPUT };
	longopts[n++] = (struct option){ "json", required_argument, NULL, OPT_JSON };
	longopts[n++] = (struct option){ "xfs-loop", no_argument, NULL, OPT_XFS_LOOP };
	longopts[n++] = (struct option){ "stripe", required_argument, NULL, OPT_STRIPE };
	longopts[n++] = (struct option){ "xfs-size", required_argument, NULL, OPT_XFS_SIZE };
	longopts[n++] = (struct option){ "progress", no_argument, NULL, OPT_PROGRESS };
	longopts[n++] = (struct option){ "no-progress", no_argument, NULL, OPT_NO_PROGRESS };
	longopts[n++] = (struct option){ "dry-run", no_argument, NULL, OPT_DRY_RUN };
	longopts[n++] = (struct option){ "keep-files", no_argument, NULL, OPT_KEEP_FILES };
	longopts[n++] = (struct option){ "help", no_argument, NULL, OPT_HELP };
	longopts[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	longopts[n++] = (struct option){ "list-suites", no_argument, NULL, OPT_LIST_SUITES };
	longopts[n++] = (struct option){ "list-modes", no_argument, NULL, OPT_LIST_MODES };
	longopts[n] = (struct option){ NULL, 0, NULL, 0 };

	memset(o, 0, sizeof(*o));
	job_defaults(&o->job);
	o->formats = 0;
	o->progress = -1;
	o->xfs_size = 4ull << 30;
	if (!getcwd(o->directory, sizeof(o->directory)))
		snprintf(o->directory, sizeof(o->directory), ".");

	opterr = 0;
	for (;;) {
		int idx = -1;
		int c = getopt_long(argc, argv, ":h", longopts, &idx);
		if (c == -1)
			break;
		if (c == '?') {
			if (optopt)
				die_usage("unknown option '-%c'%s", (char[]){ (char)optopt, 0 }, "");
			die_usage("unknown option '%s'%s", argv[optind - 1], "");
		}
		if (c == ':')
			die_usage("option '%s' needs a value (%s=VALUE)", argv[optind - 1], argv[optind - 1]);
		if (c >= OPT_JOB && c < OPT_JOB + NR_JOB_NAMES) {
			int id = c - OPT_JOB;
			const char *val = optarg ? optarg : "1";
			if (job_apply(&o->job, job_names[id].name, val, err, sizeof(err)))
				die_usage("%s%s", err, "");
			if (o->nr_job_args == (int)(sizeof(o->job_args) / sizeof(o->job_args[0])))
				die_usage("too many options%s%s", "", "");
			o->job_args[o->nr_job_args++] = (struct opt_arg){ id, val };
			continue;
		}
		switch (c) {
		case OPT_SUITE:
			if (!suite_find(optarg))
				die_usage("--suite: unknown suite '%s'%s (wtio-bench --list-suites shows them)", optarg, "");
			o->suite = optarg;
			break;
		case OPT_DIRECTORY:
			if (strlen(optarg) >= sizeof(o->directory) - 64)
				die_usage("--directory: path too long%s%s", "", "");
			if (access(optarg, W_OK | X_OK))
				die_usage("--directory: '%s' is not a writable directory (%s)", optarg, strerror(errno));
			snprintf(o->directory, sizeof(o->directory), "%s", optarg);
			break;
		case OPT_OUTPUT_FORMAT: {
			char tmp[128], *save = NULL;
			snprintf(tmp, sizeof(tmp), "%s", optarg);
			o->formats = 0;
			for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!strcmp(t, "normal")) o->formats |= FMT_NORMAL;
				else if (!strcmp(t, "json")) o->formats |= FMT_JSON;
				else if (!strcmp(t, "csv")) o->formats |= FMT_CSV;
				else if (!strcmp(t, "terse")) o->formats |= FMT_TERSE;
				else die_usage("--output-format: '%s' is not normal, json, csv or terse%s", t, "");
			}
			if (!o->formats)
				die_usage("--output-format: empty%s%s", "", "");
			break;
		}
		case OPT_OUTPUT:
			o->output = optarg;
			break;
		case OPT_JSON:
			o->json_path = optarg;
			break;
		case OPT_XFS_LOOP:
			o->xfs_loop = true;
			break;
		case OPT_STRIPE: {
			char tmp[64];
			snprintf(tmp, sizeof(tmp), "%s", optarg);
			char *comma = strchr(tmp, ',');
			unsigned long long sw;
			if (!comma)
				die_usage("--stripe: '%s' is not SU,SW (example: 64k,4)%s", optarg, "");
			*comma = 0;
			if (parse_size(tmp, &o->stripe_su) || o->stripe_su < 4096 ||
			    (o->stripe_su % 4096) || parse_uint(comma + 1, 1024, &sw) || sw == 0)
				die_usage("--stripe: '%s' is not SU,SW with SU a multiple of 4k (example: 64k,4)%s", optarg, "");
			o->stripe_sw = (unsigned int)sw;
			break;
		}
		case OPT_XFS_SIZE:
			if (parse_size(optarg, &o->xfs_size) || o->xfs_size < (300ull << 20))
				die_usage("--xfs-size: '%s' is not a size of at least 300M%s", optarg, "");
			break;
		case OPT_PROGRESS: o->progress = 1; break;
		case OPT_NO_PROGRESS: o->progress = 0; break;
		case OPT_DRY_RUN: o->dry_run = true; break;
		case OPT_KEEP_FILES: o->keep_files = true; break;
		case 'h':
		case OPT_HELP:
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			printf("wtio-bench %s (libwtio %d.%d)\n", WTIO_BENCH_VERSION,
			       wtio_version_major(), wtio_version_minor());
			exit(0);
		case OPT_LIST_SUITES:
			suites_list(stdout);
			exit(0);
		case OPT_LIST_MODES:
			for (int i = 0; i < nr_mode_table; i++)
				printf("%-28s %s\n", mode_table[i].name, mode_table[i].desc);
			exit(0);
		default:
			die_usage("unknown option '%s'%s", argv[optind - 1], "");
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'%s (options are --name=value)", argv[optind], "");
	if ((o->stripe_su || o->xfs_size != (4ull << 30)) && !o->xfs_loop)
		die_usage("--stripe and --xfs-size need --xfs-loop%s%s", "", "");
	if (o->xfs_loop && geteuid() != 0)
		die_usage("--xfs-loop needs root (it makes a loop device and mounts it)%s%s", "", "");
	if (!o->suite && o->nr_job_args == 0)
		o->suite = "default";
	if (!o->suite && job_check(&o->job, err, sizeof(err)))
		die_usage("%s%s", err, "");
	if (!o->formats)
		o->formats = FMT_NORMAL;
}
