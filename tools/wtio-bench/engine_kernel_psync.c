/* SPDX-License-Identifier: MIT */
/*
 * engine_kernel_psync.c - the kernel modes as plain system calls in a
 * loop, as fio's psync engine does them: pwrite/pread, or pwritev2/
 * preadv2 when the mode has RWF_* flags (RWF_DONTCACHE). Also the file
 * handling every kernel engine shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine.h"

int kernel_open_file(struct trial *tr, struct bfile *f)
{
	f->fd = open(f->path, tr->open_flags | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return -errno;
	return 0;
}

int kernel_close_file(struct trial *tr, struct bfile *f)
{
	int ret = 0;

	if (f->fd >= 0 && close(f->fd))
		ret = -errno;
	f->fd = -1;
	return ret;
}

int kernel_sync_range(struct thread_ctx *tc, struct bfile *f, uint64_t off,
		      uint64_t len, unsigned int flags)
{
	if (sync_file_range(f->fd, (off_t)off, (off_t)len, flags))
		return -errno;
	return 0;
}

int kernel_fsync(struct thread_ctx *tc, struct bfile *f)
{
	return fsync(f->fd) ? -errno : 0;
}

long kernel_read_file(struct trial *tr, struct bfile *f, void *buf,
		      size_t len, uint64_t off)
{
	ssize_t r = pread(f->fd, buf, len, (off_t)off);

	return r < 0 ? -errno : (long)r;
}

int kernel_create_file(struct thread_ctx *tc, const char *path,
		       const void *buf, size_t len)
{
	int fd = open(path, tc->tr->open_flags | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0644);
	int ret = 0;

	if (fd < 0)
		return -errno;
	struct iovec iov = { (void *)buf, len };
	ssize_t r = pwritev2(fd, &iov, 1, 0, tc->tr->mode->rwf);
	if (r < 0)
		ret = -errno;
	else if ((size_t)r != len)
		ret = -EIO;
	if (!ret && tc->tr->mode->sfr_after_write &&
	    sync_file_range(fd, 0, (off_t)len, SYNC_FILE_RANGE_WRITE))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

static int psync_queue(struct thread_ctx *tc, struct io_u *u)
{
	const int rwf = tc->tr->mode->rwf;
	int fd = u->f->fd;
	ssize_t r;

	if (rwf) {
		struct iovec iov = { u->buf, u->len };
		r = u->is_read ? preadv2(fd, &iov, 1, (off_t)u->off, rwf)
			       : pwritev2(fd, &iov, 1, (off_t)u->off, rwf);
	} else {
		r = u->is_read ? pread(fd, u->buf, u->len, (off_t)u->off)
			       : pwrite(fd, u->buf, u->len, (off_t)u->off);
	}
	u->res = r < 0 ? -errno : r;
	return 1;
}

const struct engine_ops engine_kernel_psync = {
	.name = "psync",
	.open_file = kernel_open_file,
	.close_file = kernel_close_file,
	.queue = psync_queue,
	.sync_range = kernel_sync_range,
	.fsync = kernel_fsync,
	.read_file = kernel_read_file,
	.create_file = kernel_create_file,
};
