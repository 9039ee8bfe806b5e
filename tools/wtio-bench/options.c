/* SPDX-License-Identifier: MIT */
/*
 * options.c - wtio-bench's option table and command line. Every option is
 * one row (name, type, field, default, help); optparse.c parses by the row
 * and prints the rows as the usage and the man page's option list. Job
 * options use fio's names and meanings where fio has them. A job option
 * given on the command line is also kept as text, so that it can be
 * applied over each of a suite's presets (the command line wins).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modes.h"
#include "optparse.h"
#include "options.h"
#include "suites.h"
#include "wtio.h"

#ifndef WTIO_BENCH_VERSION
#define WTIO_BENCH_VERSION "0.1.0"
#endif

/* Which struct a row's offset is into; 0: none (sections, actions). */
enum { SC_JOB = 1, SC_RUN };

static const char *const rw_names[] = { "write", "randwrite", "read", "randread",
					"randrw", "create", NULL };
static const char *const raid_su_names[] = { "chunk", "stripe", NULL };
static const char *const raid_cut_names[] = { "width", "chunk", NULL };
static const char *const ioengine_names[] = { "auto", "psync", "libaio",
					      "io_uring", "null", NULL };

const char *rw_name(enum rw_kind rw)
{
	return rw_names[rw];
}

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

/* "a,,b", ",a", "a,": strtok would skip the empty entry without a word. */
static bool has_empty_entry(const char *list)
{
	size_t n = strlen(list);
	return !n || list[0] == ',' || list[n - 1] == ',' || strstr(list, ",,");
}

/* "1,2,4": every entry a number from 1 to MAX_JOBS, none empty. */
static int cb_numjobs(const struct opt_def *d, void *base, const char *val,
		      char *err, size_t errlen)
{
	struct job_opts *job = base;
	unsigned long long u;
	int n = 0;
	(void)d;

	for (const char *p = val;; p++) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		char t[32];
		if (len == 0)
			BAD("--numjobs: '%s' has an empty entry (a list is 1,2,4)", val);
		snprintf(t, sizeof(t), "%.*s", (int)(len < sizeof(t) ? len : sizeof(t) - 1), p);
		if (len >= sizeof(t) || parse_uint(t, MAX_JOBS, &u) || u == 0)
			BAD("--numjobs: '%s' is not a number from 1 to %d (or a list: 1,2,4)", t, MAX_JOBS);
		if (n == MAX_NUMJOBS)
			BAD("--numjobs: at most %d values", MAX_NUMJOBS);
		for (int k = 0; k < n; k++)	/* two cells of one name in every table */
			if (job->numjobs[k] == u)
				BAD("--numjobs: '%s' has %llu twice", val, u);
		job->numjobs[n++] = (unsigned int)u;
		if (!c)
			break;
		p = c;
	}
	job->nr_numjobs = n;
	return 0;
}

static int cb_modes(const struct opt_def *d, void *base, const char *val,
		    char *err, size_t errlen)
{
	struct job_opts *job = base;
	char tmp[512], *save = NULL;
	int n = 0;
	(void)d;

	if (*val && has_empty_entry(val))
		BAD("--modes: '%s' has an empty entry (a list is kernel-buffered,wtio-writeback)", val);
	snprintf(tmp, sizeof(tmp), "%s", val);
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

static int cb_sync(const struct opt_def *d, void *base, const char *val,
		   char *err, size_t errlen)
{
	struct job_opts *job = base;
	(void)d;

	if (!strcmp(val, "none") || !strcmp(val, "0"))
		job->dsync = false;
	else if (!strcmp(val, "dsync"))
		job->dsync = true;
	else if (!strcmp(val, "sync") || !strcmp(val, "1"))	/* fio: O_SYNC */
		BAD("--sync: fio's '%s' is O_SYNC, which wtio-bench does not do: "
		    "--sync=dsync is O_DSYNC", val);
	else
		BAD("--sync: '%s' is not none or dsync", val);
	return 0;
}

/* "N" or fio's "wait_before,write:N". */
static int cb_sfr(const struct opt_def *d, void *base, const char *val,
		  char *err, size_t errlen)
{
	struct job_opts *job = base;
	const char *num = val, *colon = strchr(val, ':');
	unsigned long long u;
	(void)d;

	if (colon) {
		if (strncmp(val, "wait_before,write:", (size_t)(colon - val + 1)))
			BAD("--sync_file_range: only 'wait_before,write:N' or 'N' is supported, not '%s'", val);
		num = colon + 1;
	}
	if (parse_uint(num, 1u << 30, &u))
		BAD("--sync_file_range: '%s' is not a number of writes (0 = never)", val);
	job->sfr_every = (unsigned int)u;
	return 0;
}

static int cb_filename_format(const struct opt_def *d, void *base, const char *val,
			      char *err, size_t errlen)
{
	struct job_opts *job = base;
	(void)d;

	if (!*val || strchr(val, '/') || strlen(val) >= sizeof(job->filename_format))
		BAD("--filename_format: '%s' must be a plain file name (use --directory for the place)", val);
	snprintf(job->filename_format, sizeof(job->filename_format), "%s", val);
	if (strstr(val, "$jobnum"))
		job->per_job_files = true;
	return 0;
}

static int cb_suite(const struct opt_def *d, void *base, const char *val,
		    char *err, size_t errlen)
{
	(void)d;
	if (!suite_find(val))
		BAD("--suite: unknown suite '%s' (wtio-bench --list-suites shows them)", val);
	((struct bench_opts *)base)->suite = val;
	return 0;
}

static int cb_directory(const struct opt_def *d, void *base, const char *val,
			char *err, size_t errlen)
{
	struct bench_opts *o = base;
	(void)d;

	if (strlen(val) >= sizeof(o->directory) - 64)
		BAD("--directory: path too long");
	if (access(val, W_OK | X_OK))
		BAD("--directory: '%s' is not a writable directory (%s)", val, strerror(errno));
	snprintf(o->directory, sizeof(o->directory), "%s", val);
	return 0;
}

static int cb_output_format(const struct opt_def *d, void *base, const char *val,
			    char *err, size_t errlen)
{
	struct bench_opts *o = base;
	char tmp[128], *save = NULL;
	(void)d;

	if (*val && has_empty_entry(val))
		BAD("--output-format: '%s' has an empty entry (a list is normal,json)", val);
	snprintf(tmp, sizeof(tmp), "%s", val);
	o->formats = 0;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "normal")) o->formats |= FMT_NORMAL;
		else if (!strcmp(t, "json")) o->formats |= FMT_JSON;
		else if (!strcmp(t, "csv")) o->formats |= FMT_CSV;
		else if (!strcmp(t, "terse")) o->formats |= FMT_TERSE;
		else BAD("--output-format: '%s' is not normal, json, csv or terse", t);
	}
	if (!o->formats)
		BAD("--output-format: empty");
	return 0;
}

static int cb_stripe(const struct opt_def *d, void *base, const char *val,
		     char *err, size_t errlen)
{
	struct bench_opts *o = base;
	char tmp[64];
	unsigned long long sw;
	(void)d;

	snprintf(tmp, sizeof(tmp), "%s", val);
	char *comma = strchr(tmp, ',');
	if (!comma)
		BAD("--stripe: '%s' is not SU,SW (example: 64k,4)", val);
	*comma = 0;
	if (parse_size(tmp, &o->stripe_su) || o->stripe_su < 4096 ||
	    (o->stripe_su % 4096) || parse_uint(comma + 1, 1024, &sw) || sw == 0)
		BAD("--stripe: '%s' is not SU,SW with SU a multiple of 4k (example: 64k,4)", val);
	o->stripe_sw = (unsigned int)sw;
	return 0;
}

static int cb_mem_limit(const struct opt_def *d, void *base, const char *val,
			char *err, size_t errlen)
{
	struct bench_opts *o = base;
	(void)d;

	if (!strcmp(val, "auto"))
		o->mem_policy = MEM_AUTO;
	else if (!strcmp(val, "off"))
		o->mem_policy = MEM_OFF;
	else if (!parse_size(val, &o->mem_limit) && o->mem_limit >= (16u << 20))
		o->mem_policy = MEM_SIZE;
	else
		BAD("--mem-limit: '%s' is not auto, off or a size of at least 16M", val);
	return 0;
}

static int cb_help(const struct opt_def *d, void *base, const char *val,
		   char *err, size_t errlen);
static int cb_man(const struct opt_def *d, void *base, const char *val,
		  char *err, size_t errlen);

static int cb_version(const struct opt_def *d, void *base, const char *val,
		      char *err, size_t errlen)
{
	(void)d; (void)base; (void)val; (void)err; (void)errlen;
	printf("wtio-bench %s (libwtio %d.%d)\n", WTIO_BENCH_VERSION,
	       wtio_version_major(), wtio_version_minor());
	exit(0);
}

static int cb_list_suites(const struct opt_def *d, void *base, const char *val,
			  char *err, size_t errlen)
{
	(void)d; (void)base; (void)val; (void)err; (void)errlen;
	suites_list(stdout);
	exit(0);
}

static int cb_list_modes(const struct opt_def *d, void *base, const char *val,
			 char *err, size_t errlen)
{
	(void)d; (void)base; (void)val; (void)err; (void)errlen;
	for (int i = 0; i < nr_mode_table; i++)
		printf("%-28s %s\n", mode_table[i].name, mode_table[i].desc);
	exit(0);
}

#define J(f) .scope = SC_JOB, .off = offsetof(struct job_opts, f)
#define R(f) .scope = SC_RUN, .off = offsetof(struct bench_opts, f)
#define TIME_MAX 86400

static const struct opt_def opt_table[] = {
	{ "WORKLOAD OPTIONS", OT_SECTION, .help = "Workload (fio's names and meanings):",
	  .more = "Where an option has fio's name it has fio's meaning. Sizes take k, M, G suffixes (powers of 1024)." },
	{ "rw", OT_ENUM, J(rw), "randwrite", NULL, "The access pattern.",
	  "create makes many files of --bs bytes each (create, write, close) in a directory per job.",
	  .names = rw_names, .alias = "readwrite" },
	{ "bs", OT_SIZE, J(bs), "4k", "SIZE", "Block size of each request.",
	  .min = 1, .max = 64u << 20,
	  .what = "a block size from 1 byte to 64M (examples: 4k, 16k, 1M)" },
	{ "size", OT_SIZE, J(size), "64M", "SIZE", "Size of each file.", .min = 1 },
	{ "io_size", OT_SIZE, J(io_size), NULL, "SIZE",
	  "Bytes each job does when the run is not --time_based (not given: --size).", .min = 1 },
	{ "numjobs", OT_FUNC, J(numjobs), "1", "N[,N...]",
	  "Threads; a list sweeps: every mode runs once per value.", .cb = cb_numjobs },
	{ "iodepth", OT_UINT, J(iodepth), "1", "N",
	  "Requests in flight per job; above 1 kernel modes use libaio (or io_uring) and wtio modes wtio_queue_*.",
	  .min = 1, .max = 4096 },
	{ "ioengine", OT_ENUM, J(ioengine), "auto", NULL,
	  "The kernel modes' engine; auto is psync at iodepth 1, else libaio (io_uring without libaio). "
	  "null does no I/O in any mode: every request completes at once, so IOPS measures wtio-bench's "
	  "own cost per request (fio's null engine).", .names = ioengine_names },
	{ "runtime", OT_TIME, J(runtime), NULL, "TIME",
	  "Measured time per mode (10, 500ms, 2m); 0: until --io_size is done.", .max = TIME_MAX },
	{ "time_based", OT_BOOL, J(time_based), NULL, NULL,
	  "Run for --runtime even when --io_size is done." },
	{ "ramp_time", OT_TIME, J(ramp_time), NULL, "TIME",
	  "Discarded warm-up before each measured window.", .max = TIME_MAX },
	{ "sync", OT_FUNC, J(dsync), "none", "none|dsync",
	  "O_DSYNC (kernel modes) or WTIO_DSYNC (wtio modes) on every write.", .cb = cb_sync },
	{ "sync_file_range", OT_FUNC, J(sfr_every), NULL, "N",
	  "Every N writes, sync_file_range(WAIT_BEFORE|WRITE) of the "
	  "range written since the last one, or wtio_sync_range for wtio modes "
	  "(fio's spelling wait_before,write:N is accepted; 0: never).", .cb = cb_sfr },
	{ "fsync", OT_UINT, J(fsync_every), NULL, "N", "fsync every N writes (0: never).",
	  .max = 1u << 30, .what = "a number of writes (0 = never)" },
	{ "overwrite", OT_BOOL, J(overwrite), NULL, NULL,
	  "Preallocate and write the files first, so writes are pure overwrites." },
	{ "file_append", OT_BOOL, J(file_append), NULL, NULL,
	  "Extending writes (with --rw=write): the files start empty; jobs sharing a file take "
	  "their offsets from one counter." },
	{ "per-job-files", OT_BOOL, J(per_job_files), NULL, NULL,
	  "One file per job (default: all jobs share one file)." },
	{ "filename_format", OT_FUNC, J(filename_format), "wtio-bench.$pid.$jobnum.$filenum", "F",
	  "File names, with $jobnum, $filenum and $pid; giving one with $jobnum implies --per-job-files.",
	  .cb = cb_filename_format },
	{ "nrfiles", OT_UINT, J(nrfiles), "1", "N",
	  "Files per job (or in the shared set), used round robin.", .min = 1, .max = 4096 },
	{ "rwmixread", OT_UINT, J(rwmixread), "50", "PCT", "Percentage of reads in randrw.",
	  .max = 100 },
	{ "modes", OT_FUNC, J(modes), "kernel-buffered,wtio-writeback", "LIST",
	  "The modes to compare, comma separated; the first is the baseline of the delta column "
	  "(--list-modes shows them).",
	  "The modes: kernel-buffered, kernel-direct, kernel-dontcache (pwritev2/preadv2 with "
	  "RWF_DONTCACHE), kernel-sfr (buffered write then sync_file_range(WRITE) from the writer), "
	  "wtio-writeback, wtio-writeback-keep (write-back with closed files kept cached: "
	  "close writes nothing back, as the kernel's), wtio-writethrough, "
	  "wtio-writethrough-noserial, wtio-writethrough-aio (write-through, every channel over "
	  "Linux AIO), wtio-writethrough-uring (write-through, every channel over io_uring, "
	  "the queues' too), wtio-dontcache, "
	  "wtio-writethrough-dontcache, wtio-adaptive (write-back, write-through from the writer "
	  "once it would be throttled). A mode the system cannot run is reported as unsupported "
	  "with the reason, and the others still run.",
	  .cb = cb_modes },
	{ "invalidate", OT_BOOL, J(invalidate), "1", NULL,
	  "Drop the page cache between modes (root only)." },
	{ "pre_read", OT_BOOL, J(pre_read), NULL, NULL,
	  "Read the files into the cache before each mode." },
	{ "samples", OT_BOOL, J(samples), NULL, NULL,
	  "Keep per-second throughput samples (in the JSON output, and for bench/plot)." },

	{ "repeat", OT_UINT, J(repeat), "1", "N",
	  "Run each mode N times, alternating the modes (A B A B ...), and report the median "
	  "with the min-max range of every figure; suites set 3.",
	  "The Summary marks a delta whose ranges overlap as within noise. The median of an "
	  "even count is the lower middle value, always a measured one.", .min = 1, .max = 64 },

	{ "WTIO OPTIONS", OT_SECTION, .help = "wtio:" },
	{ "cache-size", OT_SIZE, J(cache_size), NULL, "SIZE",
	  "The wtio context's cache budget (not given: the library's default).", .min = 1 },
	{ "folio-size", OT_SIZE, J(folio_size), NULL, "SIZE",
	  "The wtio context's folio size (not given: the library's default).",
	  .min = 4096, .max = 1u << 20, .pow2 = true, .what = "a power of two from 4k to 1M" },
	{ "large-folios", OT_BOOL, J(large_folios), NULL, NULL,
	  "Let each file choose its folio size, from the folio size to 16 x it (at most 1M): "
	  "the length of the read or write that finds none of it cached, rounded down to a "
	  "power of two (WTIO_CONFIG_LARGE_FOLIOS)." },
	{ "flushers", OT_UINT, J(flushers), NULL, "N",
	  "The wtio context's flusher threads (not given: the library's default).",
	  .min = 1, .max = 4096 },
	{ "dirty-ratio", OT_UINT, J(dirty_ratio), NULL, "PCT",
	  "The share of wtio's cache that may be dirty before writers are throttled "
	  "(not given: the library's default, 20).",
	  "A background ratio not below it is halved, as the kernel does with "
	  "vm.dirty_background_ratio.", .min = 2, .max = 90 },
	{ "dirty-background-ratio", OT_UINT, J(dirty_bg_ratio), NULL, "PCT",
	  "The share of wtio's cache that may be dirty before the flushers start "
	  "(not given: the library's default, 10).", .min = 1, .max = 90 },
	{ "stripe-align", OT_BOOL, J(stripe_align), "1", NULL,
	  "Cut wtio's I/O at the filesystem's stripe units." },
	{ "size-ahead", OT_BOOL, J(size_ahead), NULL, NULL,
	  "WTIO_CONFIG_SIZE_AHEAD for appending writes." },

	{ "RUN OPTIONS", OT_SECTION, .help = "Run:" },
	{ "suite", OT_FUNC, R(suite), NULL, "NAME",
	  "A named preset (--list-suites prints each with its options); job options given on the "
	  "command line override the preset's.",
	  "Suites: default, table1, table2, table3, table4, sustained, dontcache-stream, smallfiles, "
	  "cached-read.", .cb = cb_suite },
	{ "directory", OT_FUNC, R(directory), NULL, "DIR",
	  "Where the temporary files go (default: the current directory); they are removed at the "
	  "end, and on Ctrl-C.", .cb = cb_directory },
	{ "output-format", OT_FUNC, R(formats), "normal", "LIST",
	  "Any of normal, json, csv, terse, comma separated.", .cb = cb_output_format },
	{ "output", OT_STR, R(output), NULL, "FILE",
	  "Write the output to FILE instead of standard output." },
	{ "json", OT_STR, R(json_path), NULL, "FILE", "Also write the JSON result to FILE." },
	{ "xfs-loop", OT_SET, R(xfs_loop), NULL, NULL,
	  "(root) Run on a fresh XFS image in /dev/shm on a loop device with loop direct I/O on, "
	  "removed afterwards." },
	{ "stripe", OT_FUNC, R(stripe_su), NULL, "SU,SW",
	  "With --xfs-loop: make the filesystem with mkfs.xfs -d su=SU,sw=SW (example: 64k,4).",
	  .cb = cb_stripe },
	{ "xfs-size", OT_SIZE, R(xfs_size), "4G", "SIZE", "With --xfs-loop: the image size.",
	  .min = 300ull << 20, .what = "a size of at least 300M" },
	{ "mem-limit", OT_FUNC, R(mem_policy), "auto", "auto|SIZE|off",
	  "(root) Run each kernel mode in a memory cgroup limited to wtio's --cache-size plus "
	  "64M and the I/O buffers (auto), or to SIZE; off: the kernel has all the page cache.",
	  "auto is the default as root; without root, or without a memory cgroup, the header and "
	  "the JSON say that the comparison is not equal-memory. The cgroup is a child of "
	  "wtio-bench's own (v1 memory controller, or v2 memory.max) and is removed at the end "
	  "and on Ctrl-C.", .cb = cb_mem_limit },
	{ "perf", OT_SET, R(perf), NULL, NULL,
	  "Record perf record -g of each trial into perf-EXPERIMENT-MODE-njN-rR.data in the "
	  "current directory (or print the command where perf is missing)." },
	{ "raid", OT_FUNC, R(raid), NULL, "LEVEL,DISKS,CHUNK",
	  "Run the wtio modes on a user-space RAID-5 or -6 of DISKS member files in /dev/shm with "
	  "real parity (a write of part of a stripe pays read-modify-write), wtio's stripe geometry "
	  "set to match; kernel modes are skipped, the kernel cannot see it. Member I/O counts are "
	  "printed after each mode (example: 5,4,64k).",
	  "The files' bytes go to the volume; the files themselves only keep their sizes. Files "
	  "prepared for reads and overwrites are filled by the kernel, so on the volume they read "
	  "as zeros (the same I/O, other bytes).", .cb = raid_spec_opt },
	{ "raid-su", OT_ENUM, R(raid_su), "chunk", NULL,
	  "With --raid: the stripe unit wtio is told: the chunk (what XFS on md reports) or the whole "
	  "stripe (the reference's io_opt). wtio aligns its I/O to the width, so both cut the same.",
	  .names = raid_su_names },
	{ "raid-cut", OT_ENUM, R(raid_cut), "width", NULL,
	  "With --raid: width: wtio is told the array's stripe width (chunk x data disks, what XFS "
	  "on md reports) and aligns its I/O to it; chunk: one chunk per I/O (width and max_io_size "
	  "told as one chunk), every write a partial stripe, as wtio's writeback was cut before it "
	  "aligned to the width.", .names = raid_cut_names },
	{ "md-raid", OT_FUNC, R(md_raid), NULL, "LEVEL,DISKS,CHUNK",
	  "(root) Run every mode on XFS on a real md RAID (mdadm) over loop devices on /dev/shm "
	  "images, --xfs-size in all; fails with a message where the kernel has no md.",
	  .cb = raid_spec_opt },
	{ "progress", OT_SETINT, R(progress), NULL, NULL,
	  "A progress line with elapsed time and ETA on standard error (default: when it is a "
	  "terminal).", .min = 1 },
	{ "no-progress", OT_SETINT, R(progress), NULL, NULL, "No progress line.", .min = 0 },
	{ "dry-run", OT_SET, R(dry_run), NULL, NULL, "Print the plan and exit." },
	{ "keep-files", OT_SET, R(keep_files), NULL, NULL, "Leave the test files in place." },
	{ "list-suites", OT_ACTION, .help = "Print the suites and their options.", .cb = cb_list_suites },
	{ "list-modes", OT_ACTION, .help = "Print the modes.", .cb = cb_list_modes },
	{ "man-options", OT_ACTION,
	  .help = "Print this option list as the man page's troff (what man/wtio-bench.1 holds).",
	  .cb = cb_man },
	{ "help", OT_ACTION, .help = "Print this help.", .cb = cb_help },
	{ "version", OT_ACTION, .help = "Print the version.", .cb = cb_version },
};
#define NR_OPTS (int)(sizeof(opt_table) / sizeof(opt_table[0]))
_Static_assert(sizeof(opt_table) / sizeof(opt_table[0]) <= sizeof(((struct bench_opts *)0)->given),
	       "bench_opts.given[] has a slot per row");

static int cb_help(const struct opt_def *d, void *base, const char *val,
		   char *err, size_t errlen)
{
	(void)d; (void)base; (void)val; (void)err; (void)errlen;
	printf("Usage: wtio-bench [OPTIONS]\n"
	       "Runs one workload once per mode, on the same prepared file(s), and prints\n"
	       "throughput, IOPS, latency percentiles, CPU per GiB and the change against\n"
	       "the first mode. With no options: the default suite (see --list-suites).\n\n");
	opt_print_usage(stdout, opt_table, NR_OPTS);
	printf("Exit status: 0 done, 1 a run failed, 2 bad options, 130 interrupted.\n");
	exit(0);
}

static int cb_man(const struct opt_def *d, void *base, const char *val,
		  char *err, size_t errlen)
{
	(void)d; (void)base; (void)val; (void)err; (void)errlen;
	opt_print_man(stdout, opt_table, NR_OPTS);
	exit(0);
}

void job_defaults(struct job_opts *job)
{
	char err[256];

	memset(job, 0, sizeof(*job));
	for (int i = 0; i < NR_OPTS; i++)
		if (opt_table[i].scope == SC_JOB && opt_table[i].type != OT_SECTION &&
		    opt_table[i].def && opt_set(&opt_table[i], job, opt_table[i].def, err, sizeof(err)))
			abort();	/* a default the table's own parser refuses */
	/* The default name has $jobnum, but the default set is shared. */
	job->per_job_files = false;
}

int job_set(struct job_opts *job, const char *name, const char *val,
	    char *err, size_t errlen)
{
	const struct opt_def *d = opt_find(opt_table, NR_OPTS, name);

	if (!d || d->scope != SC_JOB)
		BAD("unknown job option '--%s'", name);
	return opt_set(d, job, val, err, errlen);
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
	/* Names that cannot differ would make the files one, counted as many. */
	if (job->rw != RW_CREATE && job->nrfiles > 1 && !strstr(job->filename_format, "$filenum"))
		BAD("--filename_format '%s' has no $filenum: the %u files of --nrfiles would be one",
		    job->filename_format, job->nrfiles);
	if (job->rw != RW_CREATE && job->per_job_files && maxnj > 1 &&
	    !strstr(job->filename_format, "$jobnum"))
		BAD("--filename_format '%s' has no $jobnum: --per-job-files' jobs would share files",
		    job->filename_format);
	return 0;
}

int job_apply_args(struct job_opts *job, const struct bench_opts *o,
		   char *err, size_t errlen)
{
	for (int i = 0; i < o->nr_job_args; i++)
		if (opt_set(&opt_table[o->job_args[i].id], job, o->job_args[i].val, err, errlen))
			return -1;
	return 0;
}

static void die_usage(const char *fmt, const char *a)
{
	fprintf(stderr, "wtio-bench: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\nTry 'wtio-bench --help'.\n");
	exit(EXIT_USAGE);
}

static const struct opt_def *row(const char *name)
{
	return opt_find(opt_table, NR_OPTS, name);
}

void options_parse(int argc, char **argv, struct bench_opts *o)
{
	static struct option longopts[2 * NR_OPTS + 1];
	int n = 0;
	char err[256];

	for (int i = 0; i < NR_OPTS; i++) {
		const struct opt_def *d = &opt_table[i];
		static const int has[] = { no_argument, required_argument, optional_argument };
		if (d->type == OT_SECTION)
			continue;
		longopts[n++] = (struct option){ d->name, has[opt_has_arg(d)], NULL, 1000 + i };
		if (d->alias)
			longopts[n++] = (struct option){ d->alias, has[opt_has_arg(d)], NULL, 1000 + i };
	}
	longopts[n] = (struct option){ NULL, 0, NULL, 0 };

	memset(o, 0, sizeof(*o));
	job_defaults(&o->job);
	for (int i = 0; i < NR_OPTS; i++)
		if (opt_table[i].scope == SC_RUN && opt_table[i].type != OT_SECTION &&
		    opt_table[i].def && opt_set(&opt_table[i], o, opt_table[i].def, err, sizeof(err)))
			abort();
	o->progress = -1;
	if (!getcwd(o->directory, sizeof(o->directory)))
		snprintf(o->directory, sizeof(o->directory), ".");

	opterr = 0;
	for (;;) {
		int idx = -1;
		int c = getopt_long(argc, argv, ":h", longopts, &idx);
		if (c == -1)
			break;
		if (c == 'h')
			c = 1000 + (int)(row("help") - opt_table);
		if (c == '?') {
			if (optopt >= 1000 && optopt < 1000 + NR_OPTS)
				die_usage("option '--%s' takes no value", opt_table[optopt - 1000].name);
			if (optopt)
				die_usage("unknown option '-%s'", (char[]){ (char)optopt, 0 });
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
		if (c == ':')
			die_usage("option '%s' needs a value (--name=VALUE)", argv[optind - 1]);
		if (c < 1000 || c >= 1000 + NR_OPTS)
			die_usage("unknown option '%s'", argv[optind - 1]);
		int id = c - 1000;
		const struct opt_def *d = &opt_table[id];
		if (opt_set(d, d->scope == SC_JOB ? (void *)&o->job : (void *)o, optarg,
			    err, sizeof(err)))
			die_usage("%s", err);
		o->given[id] = true;
		if (d->scope == SC_JOB) {
			if (o->nr_job_args == (int)(sizeof(o->job_args) / sizeof(o->job_args[0])))
				die_usage("too many options%s", "");
			o->job_args[o->nr_job_args++] = (struct opt_arg){ id, optarg };
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s' (options are --name=value)", argv[optind]);
	if (o->given[row("stripe") - opt_table] && o->md_raid.level)
		die_usage("--stripe with --md-raid: the stripe is the array's (CHUNK x data disks), "
			  "which mkfs.xfs takes from md%s", "");
	if ((o->given[row("stripe") - opt_table] || o->given[row("xfs-size") - opt_table]) &&
	    !o->xfs_loop && !o->md_raid.level)
		die_usage("--stripe and --xfs-size need --xfs-loop%s", "");
	if (o->mem_policy == MEM_SIZE && geteuid() != 0)
		die_usage("--mem-limit=SIZE needs root (it makes a memory cgroup)%s", "");
	if ((o->given[row("raid-su") - opt_table] || o->given[row("raid-cut") - opt_table]) &&
	    !o->raid.level)
		die_usage("--raid-su and --raid-cut need --raid%s", "");
	if (o->raid_su == 1 && o->raid_cut == 1)
		die_usage("--raid-su=stripe with --raid-cut=chunk: a width smaller than the unit%s", "");
	if (o->raid_cut == 1 && o->job.folio_size > o->raid.chunk)
		die_usage("--raid-cut=chunk: a folio larger than the chunk cannot go one chunk per "
			  "I/O%s", "");
	if ((o->raid.level != 0) + (o->md_raid.level != 0) + o->xfs_loop > 1)
		die_usage("--raid, --md-raid and --xfs-loop are different targets: one at a time%s", "");
	if (o->xfs_loop && geteuid() != 0)
		die_usage("--xfs-loop needs root (it makes a loop device and mounts it)%s", "");
	if (!o->suite && o->nr_job_args == 0)
		o->suite = "default";
	if (!o->suite && job_check(&o->job, err, sizeof(err)))
		die_usage("%s", err);
}
