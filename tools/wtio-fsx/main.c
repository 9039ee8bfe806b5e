/* SPDX-License-Identifier: MIT */
/*
 * wtio-fsx - fsx-style integrity exerciser for wtio: a seeded random
 * sequence of reads, writes in every mode, truncates, syncs and reopens on
 * one file, checked against an in-memory shadow copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fsx.h"

int main(int argc, char **argv)
{
	struct fsx_opts o;
	struct fsx_target t;
	int ret;

	fsx_parse_options(argc, argv, &o);
	if (!o.seed) {
		o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
		printf("wtio-fsx: seed %llu\n", (unsigned long long)o.seed);
	}
	ret = o.posix ? fsx_target_posix(&t, &o) : fsx_target_wtio(&t, &o);
	if (ret) {
		fprintf(stderr, "wtio-fsx: out of memory\n");
		return 2;
	}
	ret = fsx_run(&o, &t);
	t.ops->destroy(&t);
	if (!ret && !o.keep)
		unlink(o.path);
	return ret;
}
