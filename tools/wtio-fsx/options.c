/* SPDX-License-Identifier: MIT */
/* options.c - wtio-fsx's command line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wtio.h"
#include "fsx.h"

const char *const fsx_op_names[OP_NR] = {
	[OP_READ] = "read",
	[OP_WRITE] = "write",
	[OP_WRITETHROUGH] = "writethrough",
	[OP_DSYNC] = "dsync",
	[OP_NOSERIAL] = "noserial",
	[OP_DONTCACHE] = "dontcache",
	[OP_ATOMIC] = "atomic",
	[OP_ASYNC] = "async",
	[OP_TRUNCATE] = "truncate",
	[OP_FSYNC] = "fsync",
	[OP_SYNC_RANGE] = "sync_range",
	[OP_REOPEN] = "reopen",
};

static void usage(FILE *f)
{
	int i;

	fprintf(f,
"usage: wtio-fsx [options] FILE\n"
"  Random operations on FILE through wtio, checked against a shadow copy\n"
"  after every operation and against the backing file (O_DIRECT) after\n"
"  every fsync and close.\n"
"  -N n        number of operations (default 10000)\n"
"  -S seed     random seed (default 1; 0 = from the clock, printed)\n"
"  -l len      maximum file length (default 256k)\n"
"  -o len      maximum size of one read/write (default 64k)\n"
"  -f size     folio size (default 4k)\n"
"  -c size     cache size (default 32 folios: cache pressure)\n"
"  -b backend  auto | psync | io_uring (default auto)\n"
"  -X ops      exclude operation types, comma separated\n"
"  -q          quiet: only the final line\n"
"  -k          keep FILE at the end\n"
"  --posix     plain pread/pwrite/ftruncate/fsync on FILE, no wtio\n"
"              (for running under an LD_PRELOAD shim)\n"
"  --adaptive[=file|ctx]\n"
"              every write adaptive (WTIO_ADAPTIVE): by the handle's\n"
"              default flags (file, the default) or the context's\n"
"              (WTIO_CONFIG_ADAPTIVE)\n"
"  --keep-closed\n"
"              the context keeps a closed file's cache\n"
"              (WTIO_CONFIG_KEEP_CLOSED): a close then writes nothing back,\n"
"              so the disk is checked after one that ends the context\n"
"  --large-folios\n"
"              WTIO_CONFIG_LARGE_FOLIOS: the file's folio size changes\n"
"              (the I/O's length rounded down to a power of two, from -f to\n"
"              16 x -f) whenever its cache is empty;\n"
"              needs -c of 64 large folios or more to take effect\n"
"  --tight=SIZE\n"
"              keep the filesystem nearly full (a filler file FILE.fill\n"
"              leaves 0..SIZE bytes free, changed at random): writes may\n"
"              be refused (ENOSPC) or cut short, and must change nothing\n"
"              they did not report; fsync, sync_file_range and close must\n"
"              still succeed (queued writes are left out)\n"
"  --procs=N   N processes (1..64, with --posix) on FILE: the first opens\n"
"              it and forks the others; one shadow in shared memory, each\n"
"              operation of any process under one lock (for one cache\n"
"              shared by the processes: wtio-run --shared)\n"
"  sizes take k, m, g suffixes.\n"
"  operation types:");
	for (i = 0; i < OP_NR; i++)
		fprintf(f, " %s", fsx_op_names[i]);
	fprintf(f, "\n");
}

static uint64_t parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (end == s || *end) {
		fprintf(stderr, "wtio-fsx: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static void exclude(struct fsx_opts *o, char *list)
{
	char *tok, *save = NULL;
	int i;

	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < OP_NR; i++)
			if (!strcmp(tok, fsx_op_names[i]))
				break;
		if (i == OP_NR) {
			fprintf(stderr, "wtio-fsx: unknown operation type '%s'\n",
				tok);
			usage(stderr);
			exit(2);
		}
		o->excluded[i] = true;
	}
}

int fsx_parse_options(int argc, char **argv, struct fsx_opts *o)
{
	static const struct option longopts[] = {
		{ "posix", no_argument, NULL, 'P' },
		{ "adaptive", optional_argument, NULL, 'A' },
		{ "procs", required_argument, NULL, 'p' },
		{ "keep-closed", no_argument, NULL, 'K' },
		{ "large-folios", no_argument, NULL, 'G' },
		{ "tight", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->nr_ops = 10000;
	o->seed = 1;
	o->max_len = 256 << 10;
	o->max_op = 64 << 10;
	o->folio_size = 4096;
	o->backend = WTIO_BACKEND_AUTO;
	o->procs = 1;
	while ((c = getopt_long(argc, argv, "N:S:l:o:f:c:b:X:qkh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'N': o->nr_ops = parse_size(optarg, "-N"); break;
		case 'S': o->seed = parse_size(optarg, "-S"); break;
		case 'l': o->max_len = parse_size(optarg, "-l"); break;
		case 'o': o->max_op = parse_size(optarg, "-o"); break;
		case 'f': o->folio_size = (uint32_t)parse_size(optarg, "-f"); break;
		case 'c': o->cache_size = parse_size(optarg, "-c"); break;
		case 'b':
			if (!strcmp(optarg, "auto"))
				o->backend = WTIO_BACKEND_AUTO;
			else if (!strcmp(optarg, "psync"))
				o->backend = WTIO_BACKEND_PSYNC;
			else if (!strcmp(optarg, "io_uring"))
				o->backend = WTIO_BACKEND_IO_URING;
			else {
				fprintf(stderr, "wtio-fsx: bad backend %s\n", optarg);
				exit(2);
			}
			break;
		case 'X': exclude(o, optarg); break;
		case 'q': o->quiet = true; break;
		case 'k': o->keep = true; break;
		case 'P': o->posix = true; break;
		case 'K': o->keep_closed = true; break;
		case 'G': o->large_folios = true; break;
		case 'T':
			o->tight = parse_size(optarg, "--tight");
			if (!o->tight) {
				fprintf(stderr, "wtio-fsx: --tight needs a size > 0\n");
				exit(2);
			}
			break;
		case 'A':
			if (!optarg || !strcmp(optarg, "file"))
				o->adaptive = FSX_ADAPTIVE_FILE;
			else if (!strcmp(optarg, "ctx"))
				o->adaptive = FSX_ADAPTIVE_CTX;
			else {
				fprintf(stderr, "wtio-fsx: bad --adaptive=%s "
					"(file or ctx)\n", optarg);
				exit(2);
			}
			break;
		case 'p':
			o->procs = (int)parse_size(optarg, "--procs");
			if (o->procs < 1 || o->procs > 64) {
				fprintf(stderr, "wtio-fsx: --procs must be 1..64\n");
				exit(2);
			}
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		exit(2);
	}
	o->path = argv[optind];
	if (!o->max_len || o->max_len > (1ull << 32) || !o->max_op) {
		fprintf(stderr, "wtio-fsx: -l must be 1..4g and -o > 0\n");
		exit(2);
	}
	if (o->max_op > o->max_len)
		o->max_op = o->max_len;
	if (o->cache_size && o->cache_size / o->folio_size < WTIO_MIN_FOLIOS) {
		fprintf(stderr, "wtio-fsx: -c must hold at least %u folios of "
			"-f (at least %llu bytes here)\n", WTIO_MIN_FOLIOS,
			(unsigned long long)WTIO_MIN_FOLIOS * o->folio_size);
		exit(2);
	}
	if (o->posix && o->adaptive) {
		fprintf(stderr, "wtio-fsx: --adaptive is a wtio mode: not "
			"with --posix\n");
		exit(2);
	}
	if (o->procs > 1 && !o->posix) {
		/* separate wtio contexts on one file are not coherent: the
		 * processes share it through the kernel or one shim cache */
		fprintf(stderr, "wtio-fsx: --procs needs --posix\n");
		exit(2);
	}
	if (o->tight && o->procs > 1) {
		fprintf(stderr, "wtio-fsx: --tight is for one process\n");
		exit(2);
	}
	/* A queued write's shadow is written at submit, before its result
	 * says how much of it went in. */
	if (o->tight)
		o->excluded[OP_ASYNC] = true;
	if (o->posix) {
		/* No wtio flags in plain POSIX I/O. */
		o->excluded[OP_NOSERIAL] = true;
		o->excluded[OP_ATOMIC] = true;
	}
	return 0;
}
