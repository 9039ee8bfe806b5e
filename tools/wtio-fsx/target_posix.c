/* SPDX-License-Identifier: MIT */
/*
 * target_posix.c - the file under test through plain POSIX calls
 * (pread/pwrite/ftruncate/fsync/sync_file_range on a path), so that the
 * same random sequence can run under an LD_PRELOAD shim. wtio flags map to
 * what POSIX has: DSYNC is a pwrite followed by fdatasync; "async" is done
 * synchronously; the rest are plain calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wtio.h"
#include "fsx.h"

struct px_priv {
	int fd;
	struct { uint64_t tag; int64_t res; } done[16];
	int nr_done;
};

static struct px_priv *P(struct fsx_target *t)
{
	return t->priv;
}

static int p_open(struct fsx_target *t, bool truncate)
{
	P(t)->fd = open(t->o->path, O_RDWR | O_CREAT | O_CLOEXEC |
			(truncate ? O_TRUNC : 0), 0644);
	if (P(t)->fd < 0) {
		fprintf(stderr, "wtio-fsx: open(%s): %s\n", t->o->path,
			strerror(errno));
		return -errno;
	}
	return 0;
}

static int p_close(struct fsx_target *t, bool new_ctx)
{
	int ret = close(P(t)->fd);

	P(t)->fd = -1;
	return ret < 0 ? -errno : 0;
}

static ssize_t full(ssize_t (*fn)(int, void *, size_t, off_t), int fd,
		    void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = fn(fd, (char *)buf + done, len - done,
			       off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done ? (ssize_t)done : -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t pwrite_nc(int fd, void *buf, size_t len, off_t off)
{
	return pwrite(fd, buf, len, off);
}

static ssize_t p_pread(struct fsx_target *t, void *buf, size_t len, off_t off,
		       unsigned flags, int nsegs)
{
	return full(pread, P(t)->fd, buf, len, off);
}

static ssize_t p_pwrite(struct fsx_target *t, const void *buf, size_t len,
			off_t off, unsigned flags, int nsegs)
{
	ssize_t n = full(pwrite_nc, P(t)->fd, (void *)buf, len, off);

	if (n >= 0 && (flags & WTIO_DSYNC) && fdatasync(P(t)->fd) < 0)
		return -errno;
	return n;
}

static int p_truncate(struct fsx_target *t, off_t len)
{
	return ftruncate(P(t)->fd, len) < 0 ? -errno : 0;
}

static int p_fsync(struct fsx_target *t, bool data_only)
{
	int ret = data_only ? fdatasync(P(t)->fd) : fsync(P(t)->fd);

	return ret < 0 ? -errno : 0;
}

static int p_sync_range(struct fsx_target *t, off_t off, off_t len,
			unsigned flags)
{
	unsigned k = 0;

	if (flags & WTIO_SYNC_RANGE_WAIT_BEFORE)
		k |= SYNC_FILE_RANGE_WAIT_BEFORE;
	if (flags & WTIO_SYNC_RANGE_WRITE)
		k |= SYNC_FILE_RANGE_WRITE;
	if (flags & WTIO_SYNC_RANGE_WAIT_AFTER)
		k |= SYNC_FILE_RANGE_WAIT_AFTER;
	return sync_file_range(P(t)->fd, off, len, k) < 0 ? -errno : 0;
}

static off_t p_size(struct fsx_target *t)
{
	struct stat st;

	return fstat(P(t)->fd, &st) < 0 ? -errno : st.st_size;
}

/* A queued I/O, done at once; its result waits for the next reap. */
static int p_q_rw(struct fsx_target *t, void *buf, size_t len, off_t off,
		  unsigned flags, uint64_t tag, bool write)
{
	struct px_priv *p = P(t);

	if (p->nr_done == 16)
		return -EAGAIN;
	p->done[p->nr_done].tag = tag;
	p->done[p->nr_done].res = write ? p_pwrite(t, buf, len, off, flags, 1)
					: p_pread(t, buf, len, off, flags, 1);
	p->nr_done++;
	return 0;
}

static int p_q_write(struct fsx_target *t, const void *buf, size_t len,
		     off_t off, unsigned flags, uint64_t tag)
{
	return p_q_rw(t, (void *)buf, len, off, flags, tag, true);
}

static int p_q_read(struct fsx_target *t, void *buf, size_t len, off_t off,
		    unsigned flags, uint64_t tag)
{
	return p_q_rw(t, buf, len, off, flags, tag, false);
}

static int p_q_reap_all(struct fsx_target *t, uint64_t *tags, int64_t *res,
			int max)
{
	struct px_priv *p = P(t);
	int i, n = p->nr_done < max ? p->nr_done : max;

	for (i = 0; i < n; i++) {
		tags[i] = p->done[i].tag;
		res[i] = p->done[i].res;
	}
	p->nr_done = 0;
	return n;
}

static void p_atomic_units(struct fsx_target *t, uint32_t *min, uint32_t *max)
{
	*min = *max = 0;
}

static void p_destroy(struct fsx_target *t)
{
	if (P(t)->fd >= 0)
		close(P(t)->fd);
	free(t->priv);
}

static const struct fsx_target_ops posix_ops = {
	.name = "posix",
	.open = p_open,
	.close = p_close,
	.pread = p_pread,
	.pwrite = p_pwrite,
	.truncate = p_truncate,
	.fsync = p_fsync,
	.sync_range = p_sync_range,
	.size = p_size,
	.q_write = p_q_write,
	.q_read = p_q_read,
	.q_reap_all = p_q_reap_all,
	.atomic_units = p_atomic_units,
	.destroy = p_destroy,
};

int fsx_target_posix(struct fsx_target *t, const struct fsx_opts *o)
{
	struct px_priv *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->fd = -1;
	t->ops = &posix_ops;
	t->o = o;
	t->priv = p;
	return 0;
}
