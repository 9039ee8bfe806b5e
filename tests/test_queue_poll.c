/* SPDX-License-Identifier: MIT */
/*
 * test_queue_poll - a queue's completions arrive whatever way its owner
 * waits for them. An owner that reaps while waiting (min >= 1) sends the
 * queue's completion thread away for a while (it reaps itself); one that
 * then only polls (min 0, in a tight loop) or sleeps on the eventfd must
 * still get every completion: the thread comes back and delivers them.
 * A version that sent the thread away on every reap call would spin for
 * ever in the polling loop here (caught by the per-write deadline).
 * Every completion is checked for its count, and the data on disk.
 */
#include <poll.h>

#include "helpers.h"

#define BS	4096
#define NW	200
#define DEPTH	8

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One write in flight, then: its completion, by the way asked. */
static void write_one(struct wtio_queue *q, struct wtio_file *f,
		      uint8_t *buf, int i, int how, int efd)
{
	struct wtio_cqe cqe;
	uint64_t deadline = ms_now() + 10000;
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	int n;

	t_fill(buf, BS, (uint64_t)i + 1, (off_t)(i % 16) * BS);
	CHECK_OK(wtio_queue_pwrite(q, f, buf, BS, (off_t)(i % 16) * BS,
				   WTIO_WRITETHROUGH, (uint64_t)i));
	for (;;) {
		if (how == 0) {		/* waits on the ring */
			n = wtio_queue_reap(q, &cqe, 1, 1, -1);
		} else if (how == 1) {	/* polls, never waits */
			n = wtio_queue_reap(q, &cqe, 1, 0, 0);
		} else {		/* sleeps on the eventfd */
			pfd.revents = 0;
			n = poll(&pfd, 1, 10000);
			CHECKF(n == 1, "write %d: the eventfd stayed quiet for "
			       "10 s with a write in flight", i);
			n = wtio_queue_reap(q, &cqe, 1, 0, 0);
		}
		CHECKF(n >= 0, "write %d: reap: %d", i, n);
		if (n == 1)
			break;
		CHECKF(ms_now() < deadline, "write %d (%s): no completion in "
		       "10 s", i, how == 1 ? "polling" : "eventfd");
	}
	CHECK_EQ(cqe.user_data, (uint64_t)i);
	CHECK_EQ(cqe.res, BS);
}

int main(void)
{
	const char *path;
	struct wtio_config cfg;
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t *buf, *disk;
	size_t len;
	long long at;
	int i, efd, how, last[16];

	t_watchdog(120, "FAIL: queue_poll hung (watchdog)\n");
	t_require_odirect();
	path = t_tmpfile("queue-poll");
	wtio_config_init(&cfg);
	cfg.cache_size = 256 * BS;
	ctx = t_ctx_create_or_skip(&cfg);
	f = t_open(ctx, path, O_RDWR);
	/* Overwrites: the queue's own channel, not the append plug's. */
	buf = t_malloc(16 * BS);
	memset(buf, 0, 16 * BS);
	CHECK_EQ(wtio_pwrite(f, buf, 16 * BS, 0, 0), 16 * BS);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_queue_create(ctx, DEPTH, &q));
	efd = wtio_queue_eventfd(q);
	CHECKF(efd >= 0, "eventfd: %d", efd);
	for (i = 0; i < 16; i++)
		last[i] = -1;
	/* Rounds of: waiting reaps, then polls; waiting reaps, then the
	 * eventfd. Each switch comes right after the owner reaped itself. */
	for (i = 0; i < NW; i++) {
		how = (i / 10) % 4 == 1 ? 1 : (i / 10) % 4 == 3 ? 2 : 0;
		write_one(q, f, buf, i, how, efd);
		last[i % 16] = i;
	}
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	disk = t_read_disk(path, &len);
	CHECK_EQ(len, 16 * BS);
	for (i = 0; i < 16; i++) {
		at = t_verify(disk + (size_t)i * BS, BS,
			      (uint64_t)last[i] + 1, (off_t)i * BS);
		CHECKF(at < 0, "block %d differs on disk at %lld", i, at);
	}
	free(disk);
	free(buf);
	printf("PASS: %d writes, completions by waiting reaps, polling and "
	       "the eventfd\n", NW);
	return T_EXIT_PASS;
}
