/* SPDX-License-Identifier: MIT */
/*
 * engine_kernel_libaio.c - the kernel modes at iodepth > 1 through libaio
 * (io_submit/io_getevents), as the reference tables were measured with
 * fio --ioengine=libaio. RWF_* flags go in the iocb's aio_rw_flags. Note
 * that for buffered I/O io_submit does the copy (and, with O_DSYNC, the
 * flush) before it returns, exactly as it does under fio.
 */
#include <errno.h>
#include <libaio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

_Static_assert(sizeof(struct iocb) <= sizeof(((struct io_u *)0)->priv),
	       "struct iocb must fit in io_u.priv");

struct aio_thread {
	io_context_t ctx;
	struct io_event *events;
};

static int aio_thread_init(struct thread_ctx *tc)
{
	struct aio_thread *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->events = calloc(tc->depth, sizeof(*a->events));
	if (!a->events) {
		free(a);
		return -ENOMEM;
	}
	int ret = io_setup((int)tc->depth, &a->ctx);
	if (ret < 0) {
		free(a->events);
		free(a);
		return ret;
	}
	tc->eng = a;
	return 0;
}

static void aio_thread_exit(struct thread_ctx *tc)
{
	struct aio_thread *a = tc->eng;

	if (!a)
		return;
	io_destroy(a->ctx);
	free(a->events);
	free(a);
	tc->eng = NULL;
}

static int aio_queue(struct thread_ctx *tc, struct io_u *u)
{
	struct aio_thread *a = tc->eng;
	struct iocb *cb = (struct iocb *)u->priv;

	if (u->is_read)
		io_prep_pread(cb, u->f->fd, u->buf, u->len, (long long)u->off);
	else
		io_prep_pwrite(cb, u->f->fd, u->buf, u->len, (long long)u->off);
	cb->aio_rw_flags = tc->tr->mode->rwf;
	cb->data = u;
	for (;;) {
		int ret = io_submit(a->ctx, 1, &cb);
		if (ret == 1)
			return 0;
		if (ret == -EAGAIN || ret == -EINTR)
			continue;
		return ret < 0 ? ret : -EIO;
	}
}

static int aio_reap(struct thread_ctx *tc, unsigned int min,
		    struct io_u **done, unsigned int max)
{
	struct aio_thread *a = tc->eng;
	int n;

	if (max > tc->depth)
		max = tc->depth;
	do {
		n = io_getevents(a->ctx, (long)min, (long)max, a->events, NULL);
	} while (n == -EINTR);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct io_u *u = a->events[i].data;
		long res = (long)a->events[i].res;
		u->res = res;
		done[i] = u;
	}
	return n;
}

const struct engine_ops engine_kernel_libaio = {
	.name = "libaio",
	.open_file = kernel_open_file,
	.close_file = kernel_close_file,
	.thread_init = aio_thread_init,
	.thread_exit = aio_thread_exit,
	.queue = aio_queue,
	.reap = aio_reap,
	.sync_range = kernel_sync_range,
	.fsync = kernel_fsync,
	.read_file = kernel_read_file,
	.create_file = kernel_create_file,
};
