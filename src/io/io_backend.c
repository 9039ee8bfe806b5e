/* SPDX-License-Identifier: MIT */
/*
 * io_backend.c - backend selection and setup, and the wrappers through
 * which the core calls a backend: each request is checked here, once,
 * for every backend, and capability flags (not the table's members) say
 * what a backend can do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "wtio_config.h"
#include "wtio.h"
#include "ops.h"
#include "aio_chan.h"
#include "sys.h"

int wtio_io_req_check(const struct wtio_io_req *req)
{
	if (!req || !req->end_io || req->fd < 0)
		return -EINVAL;
	switch (req->op) {
	case WTIO_IO_READ:
	case WTIO_IO_WRITE:
		if (!req->iov || req->iovcnt < 1 ||
		    req->iovcnt > WTIO_IO_MAX_IOVECS || req->off < 0)
			return -EINVAL;
		return 0;
	case WTIO_IO_FSYNC:
	case WTIO_IO_FDATASYNC:
		return 0;
	}
	return -EINVAL;
}

int wtio_io_ftruncate(struct wtio_io_backend *be, int fd, off_t size)
{
	int ret;

	do {
		ret = wtio_sys_ftruncate(fd, size);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

/*
 * A description's O_DIRECT is shared by every thread using it: while it is
 * off, their direct I/O goes through the kernel's cache too, which is
 * coherent with direct I/O (a direct read writes back cached dirty data
 * first, a direct write drops the cached pages it covers), only slower,
 * and their writes complete before they are on disk, which is what a
 * direct write without RWF_DSYNC promises anyway (fsync reports the
 * kernel's write-back errors). An RWF_ATOMIC write is refused meanwhile
 * (the cache cannot make it untorn): its caller makes it again
 * (wtio_io_direct_was_off). Only O_DIRECT is turned back on, on the
 * flags as they are then, so that another change made meanwhile stays;
 * before the wait for the disk, so the window stays one copy long.
 */
ssize_t wtio_io_pwrite_cached(struct wtio_io_backend *be, int fd,
			      const struct iovec *iov, int iovcnt, off_t off)
{
	ssize_t ret;
	int fl, err;

	pthread_mutex_lock(&be->direct_flag_lock);
	fl = wtio_sys_fcntl(fd, F_GETFL);
	if (fl < 0) {
		ret = -errno;
		pthread_mutex_unlock(&be->direct_flag_lock);
		return ret;
	}
	if (fl & O_DIRECT) {
		atomic_fetch_add(&be->direct_off, 1);
		if (wtio_sys_fcntl(fd, F_SETFL, fl & ~O_DIRECT) < 0) {
			ret = -errno;
			atomic_fetch_sub(&be->direct_off, 1);
			pthread_mutex_unlock(&be->direct_flag_lock);
			return ret;
		}
	}
	do {
		ret = wtio_sys_pwritev2(fd, iov, iovcnt, off, 0);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		ret = -errno;
	if (fl & O_DIRECT) {
		int now = wtio_sys_fcntl(fd, F_GETFL);

		/* Cannot fail where the same call just succeeded; if it
		 * did, the description stays cached: coherent, slower. */
		wtio_sys_fcntl(fd, F_SETFL, (now >= 0 ? now : fl) | O_DIRECT);
		atomic_fetch_add(&be->direct_gen, 1);
		atomic_fetch_sub(&be->direct_off, 1);
	}
	pthread_mutex_unlock(&be->direct_flag_lock);
	if (ret > 0) {
		/* On disk, with the metadata that reaches it (an extent made
		 * written), as a direct write with RWF_DSYNC would be. */
		do {
			err = wtio_sys_fdatasync(fd);
		} while (err < 0 && errno == EINTR);
		if (err < 0)
			return -errno;
		posix_fadvise(fd, off, ret, POSIX_FADV_DONTNEED);
	}
	return ret;
}

bool wtio_io_direct_was_off(struct wtio_io_backend *be, uint64_t mark)
{
	if (atomic_load(&be->direct_off)) {
		pthread_mutex_lock(&be->direct_flag_lock);
		pthread_mutex_unlock(&be->direct_flag_lock);
		return true;
	}
	return atomic_load(&be->direct_gen) != mark;
}

/* What every table must have; the channel ops where it says CHANNELS. */
static bool ops_complete(const struct wtio_io_ops *ops)
{
	if (ops->version != WTIO_IO_OPS_VERSION || !ops->name ||
	    !ops->setup || !ops->teardown || !ops->submit || !ops->reap ||
	    !ops->inflight || !ops->set_size)
		return false;
	return !(ops->caps & WTIO_IO_CAP_CHANNELS) ||
	       (ops->chan_open && ops->chan_submit && ops->chan_reap &&
		ops->chan_close);
}

int wtio_io_backend_setup(struct wtio_io_backend *be,
			  const struct wtio_io_ops *ops, void *arg,
			  void *arena, size_t arena_size, unsigned int flags)
{
	int ret;

	if (!be || !ops || !ops_complete(ops))
		return -EINVAL;
	memset(be, 0, sizeof(*be));
	be->ops = ops;
	be->caps = ops->caps;
	be->arg = arg;
	be->arena = arena;
	be->arena_size = arena ? arena_size : 0;
	be->flags = flags;
	if (flags & WTIO_CONFIG_NO_FIXED_BUFFERS)
		be->caps &= ~WTIO_IO_CAP_FIXED_BUFS;
	pthread_mutex_init(&be->direct_flag_lock, NULL);
	ret = ops->setup(be);
	if (ret) {
		pthread_mutex_destroy(&be->direct_flag_lock);
		memset(be, 0, sizeof(*be));
	}
	return ret;
}

int wtio_io_backend_init(struct wtio_io_backend *be, unsigned int kind,
			 void *arena, size_t arena_size, unsigned int flags)
{
	int ret;

	switch (kind) {
	case WTIO_BACKEND_AUTO:
#if WTIO_HAVE_IO_URING
		/* Anything io_uring cannot do here, psync can. */
		if (wtio_io_backend_setup(be, &wtio_io_uring_ops, NULL, arena,
					  arena_size, flags) == 0)
			return 0;
#endif
		return wtio_io_backend_setup(be, &wtio_io_psync_ops, NULL,
					     arena, arena_size, flags);
	case WTIO_BACKEND_IO_URING:
#if WTIO_HAVE_IO_URING
		ret = wtio_io_backend_setup(be, &wtio_io_uring_ops, NULL,
					    arena, arena_size, flags);
		/* Out of memory is not "unsupported": let the caller see it. */
		if (ret && ret != -ENOMEM)
			ret = -EOPNOTSUPP;
		return ret;
#else
		(void)ret;
		return -EOPNOTSUPP;
#endif
	case WTIO_BACKEND_PSYNC:
		return wtio_io_backend_setup(be, &wtio_io_psync_ops, NULL,
					     arena, arena_size, flags);
	}
	return -EINVAL;
}

void wtio_io_backend_exit(struct wtio_io_backend *be)
{
	if (!be || !be->ops)
		return;
	be->ops->teardown(be);
	pthread_mutex_destroy(&be->direct_flag_lock);
	memset(be, 0, sizeof(*be));
}

const char *wtio_io_name(const struct wtio_io_backend *be)
{
	return be->ops->name;
}

/* The submit prologue of every backend: check all before starting any. */
static int reqs_check(struct wtio_io_req **reqs, unsigned int nr)
{
	unsigned int i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = wtio_io_req_check(reqs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int wtio_io_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		   unsigned int nr)
{
	int ret = reqs_check(reqs, nr);

	if (ret || !nr)
		return ret;
	return be->ops->submit(be, reqs, nr);
}

int wtio_io_reap(struct wtio_io_backend *be, unsigned int min_complete,
		 const struct timespec *timeout)
{
	return be->ops->reap(be, min_complete, timeout);
}

ssize_t wtio_io_write_cached(struct wtio_io_backend *be, int fd,
			     const struct iovec *iov, int iovcnt, off_t off)
{
	if (fd < 0 || !iov || iovcnt < 1 || iovcnt > WTIO_IO_MAX_IOVECS ||
	    off < 0)
		return -EINVAL;
	if (!be->ops->write_cached)
		return -EOPNOTSUPP;
	return be->ops->write_cached(be, fd, iov, iovcnt, off);
}

void wtio_io_plug(struct wtio_io_backend *be, bool on)
{
	if (be->ops->plug)
		be->ops->plug(be, on);
}

unsigned int wtio_io_inflight(struct wtio_io_backend *be)
{
	return be->ops->inflight(be);
}

int wtio_io_set_size(struct wtio_io_backend *be, int fd, off_t size)
{
	if (fd < 0 || size < 0)
		return -EINVAL;
	return be->ops->set_size(be, fd, size);
}

/* Channels over Linux AIO instead of the backend's own: a queue's unless
 * io_uring was asked for, the others when AIO was; only for the built-in
 * backend (a test backend's channels are its own). A queue's I/O is
 * completed by another thread than the one submitting the next: io_uring
 * would interrupt that thread (task work) for every completion. */
static const struct wtio_io_ops *chan_provider(struct wtio_io_backend *be,
					       enum wtio_chan_use use)
{
#if WTIO_HAVE_IO_URING
	bool aio = use == WTIO_CHAN_QUEUE ?
		   !(be->flags & WTIO_CONFIG_URING_CHANNELS) :
		   !!(be->flags & WTIO_CONFIG_AIO_CHANNELS);

	if (aio && be->ops == &wtio_io_uring_ops)
		return &wtio_io_aio_chan_ops;
#else
	(void)use;
#endif
	return be->ops;
}

struct wtio_io_chan *wtio_io_chan_open(struct wtio_io_backend *be,
				       unsigned int depth,
				       enum wtio_chan_use use, int *err)
{
	const struct wtio_io_ops *ops;
	struct wtio_io_chan *chan;

	if (!wtio_io_can(be, WTIO_IO_CAP_CHANNELS)) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	ops = chan_provider(be, use);
	chan = ops->chan_open(be, depth, err);
	if (!chan && ops != be->ops) {
		/* No AIO here (or fs.aio-max-nr reached): slower, not
		 * wrong. */
		ops = be->ops;
		chan = ops->chan_open(be, depth, err);
	}
	if (chan) {
		chan->be = be;
		chan->ops = ops;
	}
	return chan;
}

const char *wtio_io_chan_name(const struct wtio_io_chan *chan)
{
	return chan->ops->name;
}

int wtio_io_chan_submit(struct wtio_io_chan *chan, struct wtio_io_req **reqs,
			unsigned int nr)
{
	int ret = reqs_check(reqs, nr);

	if (ret || !nr)
		return ret;
	return chan->ops->chan_submit(chan, reqs, nr);
}

int wtio_io_chan_reap(struct wtio_io_chan *chan, unsigned int min,
		      const struct timespec *timeout)
{
	return chan->ops->chan_reap(chan, min, timeout);
}

unsigned int wtio_io_chan_inflight(struct wtio_io_chan *chan)
{
	return chan->ops->chan_inflight ?
	       chan->ops->chan_inflight(chan) : UINT_MAX;
}

void wtio_io_chan_close(struct wtio_io_chan *chan)
{
	if (chan)
		chan->ops->chan_close(chan);
}
