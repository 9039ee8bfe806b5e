/* SPDX-License-Identifier: MIT */
/*
 * test_queue_vs_size.c - asynchronous extending writes while another
 * thread keeps changing the backing file's size (fsync setting the exact
 * size after unaligned appends) never hang and lose nothing, on every
 * backend. A queue submission that meets the size-change gate reaps its
 * own writes first; with no completion channel (psync) that once spun for
 * ever on the queue's own reference. An alarm fails the test on a hang.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define REC 3000u		/* unaligned: the backing size is never exact */
#define NR 4000u
#define DEPTH 8u

static struct wtio_file *file;
static _Atomic int writing;

static void *sizer(void *arg)
{
	(void)arg;
	while (atomic_load(&writing))
		CHECK_OK(wtio_fsync(file));
	return NULL;
}

static void fill(unsigned char *p, unsigned int rec)
{
	for (unsigned int i = 0; i < REC; i++)
		p[i] = (unsigned char)(rec * 31 + i);
}

static void run(uint32_t backend, const char *name, const char *path)
{
	static unsigned char buf[DEPTH][REC], rd[REC];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_queue *q;
	struct wtio_cqe cqe[DEPTH];
	pthread_t t;
	unsigned int i, inflight = 0;
	int n;

	wtio_config_init(&cfg);
	cfg.backend = backend;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &file));
	CHECK_OK(wtio_queue_create(ctx, DEPTH, &q));
	atomic_store(&writing, 1);
	CHECK_OK(pthread_create(&t, NULL, sizer, NULL));
	for (i = 0; i < NR; i++) {
		if (inflight == DEPTH) {
			n = wtio_queue_reap(q, cqe, DEPTH, 1, -1);
			CHECK(n > 0);
			for (int k = 0; k < n; k++)
				CHECK_EQ(cqe[k].res, REC);
			inflight -= (unsigned int)n;
		}
		fill(buf[i % DEPTH], i);
		CHECK_OK(wtio_queue_pwrite(q, file, buf[i % DEPTH], REC,
					   (off_t)i * REC, WTIO_WRITETHROUGH, i));
		inflight++;
	}
	while (inflight) {
		n = wtio_queue_reap(q, cqe, DEPTH, 1, -1);
		CHECK(n > 0);
		for (int k = 0; k < n; k++)
			CHECK_EQ(cqe[k].res, REC);
		inflight -= (unsigned int)n;
	}
	atomic_store(&writing, 0);
	pthread_join(t, NULL);
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));

	int fd = open(path, O_RDONLY);
	struct stat st;
	unsigned char want[REC];

	CHECK(fd >= 0);
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, (long long)NR * REC);
	for (i = 0; i < NR; i++) {
		CHECK_EQ(pread(fd, rd, REC, (off_t)i * REC), REC);
		fill(want, i);
		CHECKF(!memcmp(rd, want, REC), "%s: record %u differs", name, i);
	}
	close(fd);
	printf("%s: %u queued appends beside a thread fixing the size: all "
	       "there\n", name, NR);
}

int main(void)
{
	char path[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	alarm(120);
	snprintf(path, sizeof(path), "queue_vs_size.%d", (int)getpid());
	run(WTIO_BACKEND_PSYNC, "psync", path);
	run(WTIO_BACKEND_AUTO, "auto", path);
	unlink(path);
	printf("PASS\n");
	return T_EXIT_PASS;
}
