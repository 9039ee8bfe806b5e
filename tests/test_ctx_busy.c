/* SPDX-License-Identifier: MIT */
/*
 * test_ctx_busy.c - wtio_ctx_destroy refuses (-EBUSY, nothing destroyed)
 * while a queue of the context exists, as it does while a file is open.
 * A queue holds a channel of the context's backend and calls into the
 * context; when destroy freed the context under it, the queue's next
 * write and its own destroy used freed memory (ASan: heap-use-after-free).
 * The check: destroy -> -EBUSY with a queue and no file, the queue then
 * still writes and reads, and after wtio_queue_destroy the context goes
 * (0). Over psync and io_uring (skipped, with the reason, where it
 * cannot run).
 */
#include "helpers.h"

#define LEN 10000

static int run(uint32_t backend, const char *name)
{
	static uint8_t data[LEN], back[LEN];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_queue *q;
	struct wtio_file *f;
	struct wtio_cqe cqe[2];
	const char *path;

	wtio_config_init(&cfg);
	cfg.cache_size = 1u << 20;
	cfg.backend = backend;
	ctx = t_ctx_create_backend(&cfg, name);
	if (!ctx)
		return T_EXIT_SKIP;
	CHECK_OK(wtio_queue_create(ctx, 4, &q));

	/* A queue and no open file: refused, nothing destroyed. */
	CHECK_EQ(wtio_ctx_destroy(ctx), -EBUSY);
	CHECK_EQ(wtio_queue_inflight(q), 0);

	/* The context and its queue still work. */
	path = t_tmpfile(name);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	t_fill(data, LEN, 7, 0);
	CHECK_OK(wtio_queue_pwrite(q, f, data, LEN, 0, WTIO_WRITETHROUGH, 1));
	CHECK_OK(wtio_queue_pread(q, f, back, LEN, 0, 0, 2));
	CHECK_EQ(wtio_queue_reap(q, cqe, 2, 2, -1), 2);
	CHECK_EQ(cqe[0].res, LEN);
	CHECK_EQ(cqe[1].res, LEN);
	CHECK(t_memdiff(data, back, LEN) < 0);
	/* A file and a queue: still refused. */
	CHECK_EQ(wtio_ctx_destroy(ctx), -EBUSY);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, data, LEN);
	CHECK_EQ(wtio_ctx_destroy(ctx), -EBUSY);

	/* Queue gone: the context goes too. */
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("ctx_busy (%s): destroy refused while a queue exists: PASS\n",
	       name);
	return T_EXIT_PASS;
}

int main(void)
{
	int a, b;

	t_require_odirect();
	a = run(WTIO_BACKEND_PSYNC, "psync");
	b = run(WTIO_BACKEND_IO_URING, "io_uring");
	if (a == T_EXIT_SKIP && b == T_EXIT_SKIP)
		return T_EXIT_SKIP;
	return T_EXIT_PASS;
}
