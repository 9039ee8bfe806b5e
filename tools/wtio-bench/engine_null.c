/* SPDX-License-Identifier: MIT */
/*
 * engine_null.c - requests that complete at once without any I/O, as
 * fio's null engine does. IOPS under it is the harness's ceiling: the
 * cost of offsets, timing and accounting per request, which is what
 * must be compared when wtio-bench and fio disagree on very fast
 * (cached) I/O. Files are still opened so that preparation runs as usual.
 */
#include "engine.h"

static int null_queue(struct thread_ctx *tc, struct io_u *u)
{
	(void)tc;
	u->res = u->len;
	return 1;
}

static int null_sync_range(struct thread_ctx *tc, struct bfile *f,
			   uint64_t off, uint64_t len, unsigned int flags)
{
	(void)tc, (void)f, (void)off, (void)len, (void)flags;
	return 0;
}

static int null_fsync(struct thread_ctx *tc, struct bfile *f)
{
	(void)tc, (void)f;
	return 0;
}

static int null_create_file(struct thread_ctx *tc, const char *path,
			    const void *buf, size_t len)
{
	(void)tc, (void)path, (void)buf, (void)len;
	return 0;
}

const struct engine_ops engine_null = {
	.name = "null",
	.open_file = kernel_open_file,
	.close_file = kernel_close_file,
	.queue = null_queue,
	.sync_range = null_sync_range,
	.fsync = null_fsync,
	.read_file = kernel_read_file,
	.create_file = null_create_file,
};
