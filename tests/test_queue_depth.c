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

static struct wtio_ctx *ctx;
static struct wtio_file *f;
static const char *path;
static uint64_t gen[NT][NBLK];		/* pattern seed of each block */
static unsigned long max_seen_inflight[NT];

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
	unsigned int outstanding = 0;
	off_t base = (off_t)tid * NBLK * BS;
	int i, ret;

	CHECK_OK(wtio_queue_create(ctx, DEPTH, &q));
	for (i = 0; i < NOPS; i++) {
		unsigned int blk = (unsigned int)t_rand_below(&rng, NBLK);
		uint64_t seed = ((uint64_t)tid << 32) | (uint64_t)(i + 1);
		off_t off = base + (off_t)blk * BS;

		t_fill(buf, BS, seed, off);
		for (;;) {
			ret = wtio_queue_pwrite(q, f, buf, BS, off,
						WTIO_WRITETHROUGH, seed);
			if (ret != -EAGAIN)
				break;
			CHECKF(outstanding == DEPTH,
			       "-EAGAIN with %u of %d in flight", outstanding,
			       DEPTH);
			reap_check(q, 1, tid, &outstanding);
		}
		CHECKF(ret == 0, "queue_pwrite: %d", ret);
		/* The buffer may be reused as soon as submit returns. */
		memset(buf, 0xEE, BS);
		gen[tid][blk] = seed;
		outstanding++;
		if (outstanding > max_seen_inflight[tid])
			max_seen_inflight[tid] = outstanding;
		CHECK_EQ(wtio_queue_inflight(q), outstanding);
		if (t_rand_below(&rng, 8) == 0)
			reap_check(q, 0, tid, &outstanding);
	}
	while (outstanding)
		reap_check(q, 1, tid, &outstanding);
	CHECK_OK(wtio_queue_destroy(q));

	/* Cache: every block holds its last submitted data. */
	for (i = 0; i < NBLK; i++) {
		off_t off = base + (off_t)i * BS;
		long long at;

		CHECK_EQ(wtio_pread(f, rb, BS, off, 0), BS);
		at = gen[tid][i] ? t_verify(rb, BS, gen[tid][i], off) : -1;
		CHECKF(at < 0, "thread %d block %d: cache differs at %lld",
		       tid, i, at);
	}
	free(buf);
	free(rb);
	return NULL;
}

/* eventfd, -EAGAIN at depth, reap with nothing or too little in flight. */
static void queue_semantics(void)
{
	struct wtio_queue *q;
	struct wtio_cqe cqe[8];
	uint8_t *buf = t_malloc(BS);
	struct pollfd pfd;
	off_t off = (off_t)NT * NBLK * BS - BS;	/* last block */
	int efd, i;

	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	/* Nothing in flight: returns 0 at once even with min > 0. */
	CHECK_EQ(wtio_queue_reap(q, cqe, 8, 1, 1000000), 0);
	CHECK_EQ(wtio_queue_reap(q, cqe, 8, 0, 0), 0);
	efd = wtio_queue_eventfd(q);
	CHECKF(efd >= 0, "eventfd: %d", efd);
	pfd.fd = efd;
	pfd.events = POLLIN;
	CHECK_EQ(poll(&pfd, 1, 0), 0);

	memset(buf, 0x5A, BS);
	CHECK_OK(wtio_queue_pwrite(q, f, buf, BS, off, WTIO_WRITETHROUGH, 7));
	pfd.revents = 0;
	CHECKF(poll(&pfd, 1, 5000) == 1 && (pfd.revents & POLLIN),
	       "eventfd not readable with a completion waiting");
	CHECK_EQ(wtio_queue_reap(q, cqe, 8, 0, 0), 1);
	CHECK_EQ(cqe[0].user_data, 7);
	CHECK_EQ(cqe[0].res, BS);
	pfd.revents = 0;
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	printf("eventfd: not readable when empty, readable with a "
	       "completion, cleared by reap\n");

	/* Depth full. */
	for (i = 0; i < 4; i++)
		CHECK_OK(wtio_queue_pwrite(q, f, buf, BS, off,
					   WTIO_WRITETHROUGH, 100 + i));
	CHECK_EQ(wtio_queue_pwrite(q, f, buf, BS, off, WTIO_WRITETHROUGH, 9),
		 -EAGAIN);
	CHECK_EQ(wtio_queue_pread(q, f, buf, BS, off, 0, 9), -EAGAIN);
	CHECK_EQ(wtio_queue_inflight(q), 4);
	/* min > what is in flight: returns what can arrive, no hang. */
	CHECK_EQ(wtio_queue_reap(q, cqe, 8, 8, -1), 4);
	for (i = 0; i < 4; i++)
		CHECK_EQ(cqe[i].res, BS);
	CHECK_EQ(wtio_queue_inflight(q), 0);
	CHECK_EQ(wtio_queue_reap(q, cqe, 8, 1, 1000000), 0);
	printf("-EAGAIN at depth 4; reap(min 8) with 4 in flight returned 4; "
	       "reap with nothing in flight returned 0\n");
	CHECK_OK(wtio_queue_destroy(q));
	free(buf);
}

int main(void)
{
	pthread_t th[NT];
	size_t dlen;
	uint8_t *d;
	int t, i, fd;

	t_require_odirect();
	ctx = t_ctx(BS, 2048, WTIO_BACKEND_AUTO);
	path = t_tmpfile("qdepth");
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_OK(ftruncate(fd, (off_t)NT * NBLK * BS));
	close(fd);
	f = t_open(ctx, path, O_RDWR);
	printf("backend %s\n", wtio_ctx_backend_name(ctx));

	queue_semantics();
	gen[NT - 1][NBLK - 1] = 0;
	{
		/* Zero the block queue_semantics used, so that blocks no
		 * thread wrote read as zeros. */
		uint8_t *z = t_zalloc(BS);

		CHECK_EQ(wtio_pwrite(f, z, BS, (off_t)NT * NBLK * BS - BS,
				     WTIO_WRITETHROUGH), BS);
		free(z);
	}

	for (t = 0; t < NT; t++)
		CHECK_OK(pthread_create(&th[t], NULL, worker, (void *)(long)t));
	for (t = 0; t < NT; t++)
		pthread_join(th[t], NULL);

	d = t_read_disk(path, &dlen);
	CHECK_EQ(dlen, (size_t)NT * NBLK * BS);
	for (t = 0; t < NT; t++) {
		for (i = 0; i < NBLK; i++) {
			off_t off = ((off_t)t * NBLK + i) * BS;
			long long at;

			if (gen[t][i]) {
				at = t_verify(d + off, BS, gen[t][i], off);
			} else {
				uint8_t *z = t_zalloc(BS);

				at = t_memdiff(d + off, z, BS);
				free(z);
			}
			CHECKF(at < 0, "disk: thread %d block %d differs at %lld",
			       t, i, at);
		}
		printf("thread %d: %d write-through submits, max %lu in flight, "
		       "all res 4096, cache and disk verified\n", t, NOPS,
		       max_seen_inflight[t]);
	}
	free(d);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
