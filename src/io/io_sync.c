/* SPDX-License-Identifier: MIT */
/*
 * io_sync.c - I/O on top of the wrappers for callers that wait: one
 * request submitted and reaped to its end, a whole read or write done in
 * as many requests as short counts make it take, and the rest of a short
 * request, described once for every caller that resubmits one.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "io.h"
#include "ops.h"

int wtio_io_req_rest(struct wtio_io_req *req, off_t off,
		     const struct iovec *iov, int iovcnt, size_t done,
		     struct iovec *rest)
{
	size_t skip = done;
	int i, n = 0;

	for (i = 0; i < iovcnt; i++) {
		struct iovec v = iov[i];

		/* Empty ones go too, so a finished request is not reissued. */
		if (skip >= v.iov_len) {
			skip -= v.iov_len;
			continue;
		}
		v.iov_base = (char *)v.iov_base + skip;
		v.iov_len -= skip;
		skip = 0;
		rest[n++] = v;
	}
	req->off = off + (off_t)done;
	req->iov = rest;
	req->iovcnt = n;
	return n;
}

int wtio_io_resubmit(struct wtio_io_backend *be, struct wtio_io_chan *chan,
		     struct wtio_io_req *req)
{
	struct wtio_io_req *r = req;

	if (chan)
		return wtio_io_chan_submit(chan, &r, 1);
	return wtio_io_submit(be, &r, 1);
}

struct sync_wait {
	ssize_t res;
	bool done;
};

static void sync_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct sync_wait *w = req->private;

	w->res = res;
	w->done = true;
}

/*
 * One reap for a caller that cannot go on while its requests are in
 * flight. A request the backend holds may still be completed into the
 * caller's memory (its wait state, its buffer), so no reap error lets
 * the caller leave: transient errors are retried at once, anything
 * else after a pause that grows to 100 ms, so a broken ring costs a
 * wait instead of a completion written into a dead stack frame.
 * *backoff_ns is the caller's, 0 to start.
 */
int wtio_io_reap_wait(struct wtio_io_backend *be, uint64_t *backoff_ns)
{
	int ret = wtio_io_reap(be, 1, NULL);

	if (ret >= 0 || ret == -EINTR || ret == -EAGAIN || ret == -ETIME ||
	    ret == -EBUSY) {
		*backoff_ns = 0;
		return ret > 0 ? ret : 0;
	}
	*backoff_ns = *backoff_ns ? *backoff_ns * 2 : 1000000;
	if (*backoff_ns > 100000000)
		*backoff_ns = 100000000;
	struct timespec ts = { 0, (long)*backoff_ns };

	nanosleep(&ts, NULL);
	return ret;
}

ssize_t wtio_io_sync(struct wtio_io_backend *be, struct wtio_io_req *req)
{
	void (*end_io)(struct wtio_io_req *, ssize_t) = req->end_io;
	void *priv = req->private;
	struct sync_wait w = { .res = 0, .done = false };
	struct wtio_io_req *reqs[1] = { req };
	uint64_t backoff = 0;
	int ret;

	if ((req->op == WTIO_IO_FSYNC || req->op == WTIO_IO_FDATASYNC) &&
	    wtio_io_can(be, WTIO_IO_CAP_SYNC_INLINE) && req->fd >= 0)
		return wtio_psync_do(req);
	req->end_io = sync_end_io;
	req->private = &w;
	ret = wtio_io_submit(be, reqs, 1);
	/* Submitted means end_io will run: wait for it whatever reap says
	 * (not submitted means it never will). */
	while (!ret && !w.done)
		wtio_io_reap_wait(be, &backoff);
	req->end_io = end_io;
	req->private = priv;
	return ret ? ret : w.res;
}

ssize_t wtio_io_full(struct wtio_io_backend *be, enum wtio_io_op op, int fd,
		     const struct iovec *iov, int iovcnt, off_t off,
		     int rw_flags)
{
	struct iovec rest[WTIO_IO_MAX_IOVECS];
	struct wtio_io_req req;
	ssize_t done = 0, res;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.fd = fd;
	req.rw_flags = rw_flags;
	if (op == WTIO_IO_FSYNC || op == WTIO_IO_FDATASYNC)
		return wtio_io_sync(be, &req);
	if (op != WTIO_IO_READ && op != WTIO_IO_WRITE)
		return -EINVAL;
	if (!iov || iovcnt < 1 || iovcnt > WTIO_IO_MAX_IOVECS)
		return -EINVAL;

	req.off = off;
	req.iov = iov;
	req.iovcnt = iovcnt;
	for (;;) {
		res = wtio_io_sync(be, &req);
		if (res < 0)
			return done ? done : res;
		/* EOF for reads; for writes, retrying cannot make progress. */
		if (res == 0)
			break;
		done += res;
		if (!wtio_io_req_rest(&req, off, iov, iovcnt, (size_t)done,
				      rest))
			break;
	}
	return done;
}
