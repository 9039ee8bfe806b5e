/* SPDX-License-Identifier: MIT */
/*
 * wtio-abread - cached 4 KiB random reads through the kernel's pread and
 * through one or more builds of libwtio.so in one process, interleaved
 * in short slices, so that every build and the kernel see the same
 * machine: on a machine shared with other work, runs made one after the
 * other measure the load as much as the code.
 *
 * Usage: wtio-abread DIR SIZE_MIB SECONDS LIBWTIO.so[@VAR=VALUE] ...
 * (@VAR=VALUE: set in the environment while that build's context is
 * created, for builds that read a tunable from it.)
 *
 * Each build gets its own context (cache twice the file) on the same
 * file; all are warmed, as the kernel's page cache is. Then, at 1 and 2
 * threads, rounds of slices: in each round every variant (kernel first
 * in one round, last in the next, and so on) runs SLICE_OPS reads per
 * thread, the threads started together at a barrier. Printed: each
 * variant's median rate over its slices with the quartiles, and the
 * median over rounds of its rate over the kernel's in the same round.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wtio.h>

#include "bench_util.h"

#define SLICE_OPS 4096
#define MAX_VARIANTS 5
#define MAX_ROUNDS 20000

struct lib {
	const char *path;
	void (*config_init)(struct wtio_config *);
	int (*ctx_create)(const struct wtio_config *, struct wtio_ctx **);
	int (*open)(struct wtio_ctx *, const char *, int, mode_t,
		    unsigned int, struct wtio_file **);
	ssize_t (*pread)(struct wtio_file *, void *, size_t, off_t,
			 unsigned int);
	struct wtio_file *wf;
};

static struct lib libs[MAX_VARIANTS];
static int nr_var;		/* variant 0: the kernel */
static int fd, nr_threads;
static uint64_t blocks;
static int cur;			/* the variant of this slice */
static pthread_barrier_t bar;
static double slice_s[2];	/* each thread's time in this slice */
static bool stop;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	unsigned int seed = 1234u + (unsigned int)id;
	char buf[4096];

	for (;;) {
		double t0;

		pthread_barrier_wait(&bar);
		if (stop)
			return NULL;
		t0 = now_s();
		for (int i = 0; i < SLICE_OPS; i++) {
			off_t off = (off_t)(rand_r(&seed) % blocks) * 4096;
			ssize_t r = cur ? libs[cur].pread(libs[cur].wf, buf,
							  4096, off, 0) :
					  pread(fd, buf, 4096, off);

			if (r != 4096) {
				fprintf(stderr, "read failed at %lld: %zd\n",
					(long long)off, r);
				exit(1);
			}
		}
		slice_s[id] = now_s() - t0;
		pthread_barrier_wait(&bar);
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[(int)(p * (n - 1) + 0.5)];
}

static void load(struct lib *l, const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	l->path = path;
	*(void **)&l->config_init = dlsym(h, "wtio_config_init");
	*(void **)&l->ctx_create = dlsym(h, "wtio_ctx_create");
	*(void **)&l->open = dlsym(h, "wtio_open");
	*(void **)&l->pread = dlsym(h, "wtio_pread");
	if (!l->config_init || !l->ctx_create || !l->open || !l->pread) {
		fprintf(stderr, "%s: missing symbols\n", path);
		exit(1);
	}
}

static void run(double secs)
{
	static double rate[MAX_VARIANTS][MAX_ROUNDS], ratio[MAX_VARIANTS][MAX_ROUNDS];
	pthread_t t[2];
	double end = now_s() + secs;
	int rounds = 0;

	pthread_barrier_init(&bar, NULL, (unsigned int)nr_threads + 1);
	stop = false;
	for (int i = 0; i < nr_threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	while (now_s() < end && rounds < MAX_ROUNDS) {
		for (int k = 0; k < nr_var; k++) {
			double worst = 0;

			/* Rotate the order, so that no variant always
			 * follows the same one. */
			cur = (k + rounds) % nr_var;
			pthread_barrier_wait(&bar);
			pthread_barrier_wait(&bar);
			for (int i = 0; i < nr_threads; i++)
				if (slice_s[i] > worst)
					worst = slice_s[i];
			rate[cur][rounds] = SLICE_OPS * nr_threads / worst;
		}
		for (int v = 0; v < nr_var; v++)
			ratio[v][rounds] = rate[v][rounds] / rate[0][rounds];
		rounds++;
	}
	stop = true;
	pthread_barrier_wait(&bar);
	for (int i = 0; i < nr_threads; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	for (int v = 0; v < nr_var; v++) {
		double med = pct(rate[v], rounds, 0.5);
		double q1 = pct(rate[v], rounds, 0.25), q3 = pct(rate[v], rounds, 0.75);
		double rm = pct(ratio[v], rounds, 0.5);
		double r1 = pct(ratio[v], rounds, 0.25), r3 = pct(ratio[v], rounds, 0.75);

		printf("%d thread%s %-40s %9.0f IOPS [%.0f-%.0f]  %5.2fx kernel [%.2f-%.2f]  (%d slices)\n",
		       nr_threads, nr_threads > 1 ? "s" : " ",
		       v ? libs[v].path : "kernel pread", med, q1, q3, rm, r1,
		       r3, rounds);
	}
}

int main(int argc, char **argv)
{
	char path[4096];
	uint64_t size;
	double secs;
	char *chunk = malloc(1 << 20);

	if (argc < 5 || argc - 3 > MAX_VARIANTS || !chunk) {
		fprintf(stderr, "usage: %s DIR SIZE_MIB SECONDS LIBWTIO.so...\n",
			argv[0]);
		return 2;
	}
	size = strtoull(argv[2], NULL, 0) << 20;
	secs = atof(argv[3]);
	blocks = size / 4096;
	snprintf(path, sizeof(path), "%s/wtio-abread.%d.tmp", argv[1], getpid());
	fd = bench_make_file(path, size, chunk);
	if (fd < 0)
		return 1;
	nr_var = 1;
	for (int i = 4; i < argc; i++) {
		struct lib *l = &libs[nr_var++];
		struct wtio_config cfg;
		struct wtio_ctx *ctx;
		char lib[4096], var[256] = "", *at, *eq;
		int ret;

		snprintf(lib, sizeof(lib), "%s", argv[i]);
		at = strchr(lib, '@');
		if (at) {
			*at++ = 0;
			eq = strchr(at, '=');
			if (!eq)
				return 2;
			*eq++ = 0;
			snprintf(var, sizeof(var), "%s", at);
			setenv(var, eq, 1);
		}
		load(l, strdup(lib));
		l->path = argv[i];
		l->config_init(&cfg);
		cfg.cache_size = size * 2;
		ret = l->ctx_create(&cfg, &ctx);
		if (!ret)
			ret = l->open(ctx, path, O_RDWR, 0, 0, &l->wf);
		if (ret) {
			fprintf(stderr, "%s: error %d\n", argv[i], ret);
			return 1;
		}
		if (*var)
			unsetenv(var);
	}
	for (uint64_t o = 0; o < size; o += 1 << 20) {
		if (pread(fd, chunk, 1 << 20, (off_t)o) < 0)
			return 1;
		for (int v = 1; v < nr_var; v++)
			if (libs[v].pread(libs[v].wf, chunk, 1 << 20, (off_t)o, 0) < 0)
				return 1;
	}
	printf("file %s, %llu MiB, %.1f s per thread count, %d-read slices\n",
	       path, (unsigned long long)(size >> 20), secs, SLICE_OPS);
	for (nr_threads = 1; nr_threads <= 2; nr_threads++)
		run(secs);
	unlink(path);
	/* The contexts die with the process: nothing of theirs is dirty. */
	return 0;
}
