/* SPDX-License-Identifier: MIT */
/*
 * engine_kernel_uring.c - the kernel modes at iodepth > 1 through io_uring
 * (liburing): one ring per thread, one SQE per request, RWF_* flags in
 * sqe->rw_flags.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

#include "engine.h"

static int uring_thread_init(struct thread_ctx *tc)
{
	struct io_uring *ring = calloc(1, sizeof(*ring));

	if (!ring)
		return -ENOMEM;
	int ret = io_uring_queue_init(tc->depth, ring, 0);
	if (ret < 0) {
		free(ring);
		return ret;
	}
	tc->eng = ring;
	return 0;
}

static void uring_thread_exit(struct thread_ctx *tc)
{
	struct io_uring *ring = tc->eng;

	if (!ring)
		return;
	io_uring_queue_exit(ring);
	free(ring);
	tc->eng = NULL;
}

static int uring_queue(struct thread_ctx *tc, struct io_u *u)
{
	struct io_uring *ring = tc->eng;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	if (u->is_read)
		io_uring_prep_read(sqe, u->f->fd, u->buf, u->len, u->off);
	else
		io_uring_prep_write(sqe, u->f->fd, u->buf, u->len, u->off);
	sqe->rw_flags = tc->tr->mode->rwf;
	io_uring_sqe_set_data(sqe, u);
	int ret;
	do {
		ret = io_uring_submit(ring);
	} while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

static int uring_reap(struct thread_ctx *tc, unsigned int min,
		      struct io_u **done, unsigned int max)
{
	struct io_uring *ring = tc->eng;
	struct io_uring_cqe *cqe;
	unsigned int n = 0;

	while (n < max) {
		int ret;
		if (n < min) {
			do {
				ret = io_uring_wait_cqe(ring, &cqe);
			} while (ret == -EINTR);
		} else {
			ret = io_uring_peek_cqe(ring, &cqe);
			if (ret == -EAGAIN)
				break;
		}
		if (ret < 0)
			return n ? (int)n : ret;
		struct io_u *u = io_uring_cqe_get_data(cqe);
		u->res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		done[n++] = u;
	}
	return (int)n;
}

const struct engine_ops engine_kernel_uring = {
	.name = "io_uring",
	.open_file = kernel_open_file,
	.close_file = kernel_close_file,
	.thread_init = uring_thread_init,
	.thread_exit = uring_thread_exit,
	.queue = uring_queue,
	.reap = uring_reap,
	.sync_range = kernel_sync_range,
	.fsync = kernel_fsync,
	.read_file = kernel_read_file,
	.create_file = kernel_create_file,
};
