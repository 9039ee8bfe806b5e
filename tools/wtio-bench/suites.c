/* SPDX-License-Identifier: MIT */
/*
 * suites.c - the named presets, as data: each experiment a list of job
 * options (name, value) that the option table parses. Sizes are this
 * project's test machine's scale (2 cores, 24 GiB), not the reference's
 * (62 GiB, enterprise NVMe); the shape of each experiment follows the
 * reference's fio command.
 */
#include <string.h>

#include "suites.h"

#define WT_MODES { "modes", "kernel-buffered,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial" }

static const struct suite_exp default_exps[] = {
	{ "table2", "Random 4k overwrites, O_DSYNC, one shared preallocated file (reference Table 2)",
	  (const struct suite_opt[]){
	  { "rw", "randwrite" }, { "bs", "4k" }, { "size", "256M" }, { "sync", "dsync" },
	  { "overwrite", "1" }, { "iodepth", "32" }, { "numjobs", "1,2" }, { "runtime", "1" },
	  { "time_based", "1" }, { "ramp_time", "0.5" },
	  { "modes", "kernel-buffered,kernel-direct,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial" },
	  { "repeat", "3" }, { 0 } } },
	{ "table4", "Random 16k overwrites, sync_file_range every 16 writes, one file (reference Table 4)",
	  (const struct suite_opt[]){
	  { "rw", "randwrite" }, { "bs", "16k" }, { "size", "256M" }, { "overwrite", "1" },
	  { "sync_file_range", "16" }, { "iodepth", "32" }, { "numjobs", "1,2" },
	  { "runtime", "1" }, { "time_based", "1" }, { "ramp_time", "0.5" }, WT_MODES, { "repeat", "3" }, { 0 } } },
	{ "cached-read", "Random 4k reads of a cached file: wtio's cache vs the page cache",
	  (const struct suite_opt[]){
	  { "rw", "randread" }, { "bs", "4k" }, { "size", "256M" }, { "numjobs", "1,2" },
	  { "invalidate", "0" }, { "pre_read", "1" }, { "cache-size", "512M" },
	  { "runtime", "1" }, { "time_based", "1" }, { "ramp_time", "0.5" },
	  { "modes", "kernel-buffered,wtio-writeback" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp table1_exps[] = {
	{ "table1", "Extending 4k writes, O_DSYNC, all writers on one file (reference Table 1)",
	  (const struct suite_opt[]){
	  { "rw", "write" }, { "file_append", "1" }, { "bs", "4k" }, { "size", "64M" },
	  { "sync", "dsync" }, { "iodepth", "32" }, { "numjobs", "1,2,4,8" },
	  { "runtime", "10" }, { "time_based", "1" }, { "ramp_time", "2" },
	  { "modes", "kernel-buffered,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp table2_exps[] = {
	{ "table2", "Random 4k overwrites, O_DSYNC, one shared preallocated file (reference Table 2)",
	  (const struct suite_opt[]){
	  { "rw", "randwrite" }, { "bs", "4k" }, { "size", "1G" }, { "sync", "dsync" },
	  { "overwrite", "1" }, { "iodepth", "32" }, { "numjobs", "1,2,4,8" },
	  { "runtime", "10" }, { "time_based", "1" }, { "ramp_time", "2" },
	  { "modes", "kernel-buffered,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp table3_exps[] = {
	{ "table3", "Random 4k overwrites, O_DSYNC, one preallocated file per job (reference Table 3)",
	  (const struct suite_opt[]){
	  { "rw", "randwrite" }, { "bs", "4k" }, { "size", "256M" }, { "sync", "dsync" },
	  { "overwrite", "1" }, { "iodepth", "32" }, { "per-job-files", "1" },
	  { "numjobs", "1,2,4,8" }, { "runtime", "10" }, { "time_based", "1" },
	  { "ramp_time", "2" },
	  { "modes", "kernel-buffered,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp table4_exps[] = {
	{ "table4", "Random 16k overwrites, sync_file_range every 16 writes, one file (reference Table 4)",
	  (const struct suite_opt[]){
	  { "rw", "randwrite" }, { "bs", "16k" }, { "size", "1G" }, { "overwrite", "1" },
	  { "sync_file_range", "16" }, { "iodepth", "32" }, { "numjobs", "1,2,4,8" },
	  { "runtime", "10" }, { "time_based", "1" }, { "ramp_time", "2" }, WT_MODES, { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp sustained_exps[] = {
	{ "sustained", "Sustained random 4k writes over many files (LSF/MM write-through thread)",
	  (const struct suite_opt[]){
	  { "rw", "randwrite" }, { "bs", "4k" }, { "size", "64M" }, { "per-job-files", "1" },
	  { "nrfiles", "16" }, { "numjobs", "4" }, { "runtime", "30" }, { "time_based", "1" },
	  { "ramp_time", "2" }, { "samples", "1" },
	  { "modes", "kernel-buffered,wtio-writeback,wtio-writethrough" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp stream_exps[] = {
	{ "dontcache-stream", "Streaming 1M sequential writes, per-second throughput (DONTCACHE)",
	  (const struct suite_opt[]){
	  { "rw", "write" }, { "bs", "1M" }, { "size", "4G" }, { "numjobs", "1" },
	  { "runtime", "20" }, { "time_based", "1" }, { "samples", "1" },
	  { "modes", "kernel-buffered,kernel-dontcache,wtio-writeback,wtio-dontcache" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp smallfiles_exps[] = {
	{ "smallfiles", "Create many 4 KiB files, one directory per thread",
	  (const struct suite_opt[]){
	  { "rw", "create" }, { "bs", "4k" }, { "size", "16M" }, { "numjobs", "1,2" },
	  { "modes", "kernel-buffered,wtio-writeback-keep,wtio-writeback,wtio-writethrough" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite_exp cached_read_exps[] = {
	{ "cached-read", "Random 4k reads of a cached file: wtio's cache vs the page cache",
	  (const struct suite_opt[]){
	  { "rw", "randread" }, { "bs", "4k" }, { "size", "1G" }, { "numjobs", "1,2" },
	  { "invalidate", "0" }, { "pre_read", "1" }, { "cache-size", "2G" },
	  { "runtime", "10" }, { "time_based", "1" }, { "ramp_time", "2" },
	  { "modes", "kernel-buffered,wtio-writeback" },
	  { "repeat", "3" }, { 0 } } },
	{ 0 }
};

static const struct suite suites[] = {
	{ "default", "the README's command: Table 2 and 4 counterparts at numjobs 1,2 "
	  "and a cached-read comparison, small sizes, 3 runs of each, under 3 minutes",
	  default_exps },
	{ "table1", "extending 4k O_DSYNC writes to one file, numjobs sweep", table1_exps },
	{ "table2", "random 4k O_DSYNC overwrites, one shared file, numjobs sweep", table2_exps },
	{ "table3", "random 4k O_DSYNC overwrites, file per job, numjobs sweep", table3_exps },
	{ "table4", "random 16k overwrites + sync_file_range every 16, numjobs sweep", table4_exps },
	{ "sustained", "sustained random writes over many files, per-second samples", sustained_exps },
	{ "dontcache-stream", "1M sequential writes, per-second throughput", stream_exps },
	{ "smallfiles", "many 4 KiB files in per-thread directories", smallfiles_exps },
	{ "cached-read", "random 4k reads of a cached file vs the page cache", cached_read_exps },
	{ 0 }
};

const struct suite *suite_find(const char *name)
{
	for (const struct suite *s = suites; s->name; s++)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

void suites_list(FILE *f)
{
	for (const struct suite *s = suites; s->name; s++) {
		fprintf(f, "%s: %s\n", s->name, s->desc);
		for (const struct suite_exp *e = s->exps; e->name; e++) {
			fprintf(f, "    %s: %s\n       ", e->name, e->title);
			for (const struct suite_opt *a = e->opts; a->name; a++)
				fprintf(f, " --%s=%s", a->name, a->val);
			fprintf(f, "\n");
		}
	}
}
