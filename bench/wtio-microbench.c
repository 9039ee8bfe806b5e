/* SPDX-License-Identifier: MIT */
/*
 * wtio-microbench - the core engine's two speed checks, side by side with
 * the kernel on the same file in one run:
 *   1. 4 KiB random reads of a fully cached file: wtio_pread (a hit is no
 *      system call) against pread(2) on the page-cached file, 1 and 2
 *      threads;
 *   2. 4 KiB random writes that fit in the budget: wtio write-back against
 *      buffered pwrite(2).
 * Usage: wtio-microbench [DIR] [SIZE_MIB] [SECONDS] [kernel|wtio]
 * With a last argument, only that side's runs are made (the other's
 * column is 0): for counting one side's instructions or system calls
 * per request with perf stat.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wtio.h>

#include "bench_util.h"

struct job {
	int fd;
	struct wtio_file *wf;
	bool write;
	uint64_t size;
	double seconds;
	uint64_t ops;
	unsigned int seed;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	char buf[4096];
	uint64_t blocks = j->size / 4096, ops = 0;
	double end = now_s() + j->seconds;

	memset(buf, 0x5a, sizeof(buf));
	while (true) {
		for (int i = 0; i < 256; i++) {
			off_t off = (off_t)(rand_r(&j->seed) % blocks) * 4096;
			ssize_t r;

			if (j->wf)
				r = j->write ? wtio_pwrite(j->wf, buf, 4096, off, 0) :
					wtio_pread(j->wf, buf, 4096, off, 0);
			else
				r = j->write ? pwrite(j->fd, buf, 4096, off) :
					pread(j->fd, buf, 4096, off);
			if (r != 4096) {
				fprintf(stderr, "I/O failed at %lld: %zd\n",
					(long long)off, r);
				exit(1);
			}
		}
		ops += 256;
		if (now_s() >= end)
			break;
	}
	j->ops = ops;
	return NULL;
}

static double measure(int fd, struct wtio_file *wf, bool write, int threads,
		      uint64_t size, double seconds)
{
	pthread_t t[2];
	struct job j[2];
	uint64_t ops = 0;
	double start = now_s(), el;

	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ fd, wf, write, size, seconds, 0, 1234u + i };
		pthread_create(&t[i], NULL, run_job, &j[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		ops += j[i].ops;
	}
	el = now_s() - start;
	return ops / el;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	uint64_t size = (argc > 2 ? strtoull(argv[2], NULL, 0) : 256) << 20;
	double secs = argc > 3 ? atof(argv[3]) : 3.0;
	const char *only = argc > 4 ? argv[4] : "";
	bool kside = strcmp(only, "wtio") != 0;
	bool wside = strcmp(only, "kernel") != 0;
	char path[4096];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *wf;
	char *chunk = malloc(1 << 20);
	int fd, ret;

	snprintf(path, sizeof(path), "%s/wtio-microbench.%d.tmp", dir, getpid());
	fd = chunk ? bench_make_file(path, size, chunk) : -1;
	if (fd < 0)
		return 1;
	wtio_config_init(&cfg);
	cfg.cache_size = size * 2;
	/* The write test's data must fit under the dirty limit, as it does
	 * under the kernel's (a share of all memory): this measures the
	 * cached write path, not throttling. */
	cfg.dirty_background_ratio = 60;
	cfg.dirty_ratio = 80;
	ret = wtio_ctx_create(&cfg, &ctx);
	if (!ret)
		ret = wtio_open(ctx, path, O_RDWR, 0, 0, &wf);
	if (ret) {
		fprintf(stderr, "wtio: %s\n", wtio_strerror(ret));
		return 1;
	}
	/* Warm both caches fully. */
	for (uint64_t o = 0; o < size; o += 1 << 20) {
		if (pread(fd, chunk, 1 << 20, (off_t)o) < 0 ||
		    wtio_pread(wf, chunk, 1 << 20, (off_t)o, 0) < 0)
			return 1;
	}
	printf("file %s, %llu MiB, %.1f s per run, backend %s\n", path,
	       (unsigned long long)(size >> 20), secs,
	       wtio_ctx_backend_name(ctx));
	printf("%-34s %14s %14s %8s\n", "workload", "kernel IOPS", "wtio IOPS",
	       "ratio");
	for (int threads = 1; threads <= 2; threads++) {
		double k = kside ? measure(fd, NULL, false, threads, size, secs) : 0;
		double w = wside ? measure(-1, wf, false, threads, size, secs) : 0;

		printf("4k randread cached, %d thread%s     %14.0f %14.0f %7.2fx\n",
		       threads, threads > 1 ? "s" : " ", k, w, w / k);
	}
	{
		double k = kside ? measure(fd, NULL, true, 1, size, secs) : 0;
		double w = wside ? measure(-1, wf, true, 1, size, secs) : 0;

		printf("4k randwrite write-back, 1 thread  %14.0f %14.0f %7.2fx\n",
		       k, w, w / k);
	}
	wtio_close(wf);
	wtio_ctx_destroy(ctx);
	close(fd);
	unlink(path);
	free(chunk);
	return 0;
}
