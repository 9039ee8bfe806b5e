/* SPDX-License-Identifier: MIT */
/*
 * io_psync.c - the portable backend: every request runs synchronously with
 * preadv2/pwritev2 inside submit, and its result waits in a per-thread
 * queue so that end_io still runs from reap, as with io_uring.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io_priv.h"
#include "sys.h"

/* Finished requests of one thread, in completion order. */
struct psync_ts {
	struct wtio_io_tstate ts;
	struct wtio_io_doneq dq;
};

struct psync_dom {
	struct wtio_io_tdom dom;
};

ssize_t wtio_psync_do(const struct wtio_io_req *req)
{
	ssize_t ret;

	do {
		switch (req->op) {
		case WTIO_IO_READ:
			ret = wtio_sys_preadv2(req->fd, req->iov, req->iovcnt,
					       req->off, 0);
			break;
		case WTIO_IO_WRITE:
			ret = wtio_sys_pwritev2(req->fd, req->iov, req->iovcnt,
						req->off, req->rw_flags);
			break;
		case WTIO_IO_FSYNC:
			ret = wtio_sys_fsync(req->fd);
			break;
		case WTIO_IO_FDATASYNC:
			ret = wtio_sys_fdatasync(req->fd);
			break;
		default:
			return -EINVAL;
		}
	} while (ret < 0 && errno == EINTR);

	return ret < 0 ? -errno : ret;
}

static void psync_release(struct wtio_io_tstate *ts)
{
	wtio_io_doneq_free(&((struct psync_ts *)ts)->dq);
}

int wtio_psync_setup(struct wtio_io_backend *be)
{
	struct psync_dom *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->dom.release = psync_release;
	be->private = pd;
	return 0;
}

void wtio_psync_teardown(struct wtio_io_backend *be)
{
	struct psync_dom *pd = be->private;

	if (!pd)
		return;
	wtio_io_tdom_release_all(&pd->dom);
	free(pd);
	be->private = NULL;
}

static struct psync_ts *psync_ts_get(struct wtio_io_backend *be, bool create)
{
	struct psync_dom *pd = be->private;
	struct psync_ts *pts;

	pts = (struct psync_ts *)wtio_io_tstate_find(&pd->dom);
	if (pts || !create)
		return pts;
	pts = calloc(1, sizeof(*pts));
	if (!pts)
		return NULL;
	if (wtio_io_tstate_add(&pd->dom, &pts->ts)) {
		free(pts);
		return NULL;
	}
	return pts;
}

int wtio_psync_submit_exec(struct wtio_io_backend *be,
			   struct wtio_io_req **reqs, unsigned int nr,
			   wtio_psync_exec_fn exec)
{
	struct psync_ts *pts;
	unsigned int i;
	int ret;

	pts = psync_ts_get(be, true);
	if (!pts)
		return -ENOMEM;
	ret = wtio_io_doneq_reserve(&pts->dq, nr);
	if (ret)
		return ret;

	for (i = 0; i < nr; i++)
		wtio_io_doneq_push(&pts->dq, reqs[i], exec(be, reqs[i]));
	return 0;
}

static ssize_t psync_exec(struct wtio_io_backend *be,
			  const struct wtio_io_req *req)
{
	return wtio_psync_do(req);
}

static int psync_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
			unsigned int nr)
{
	return wtio_psync_submit_exec(be, reqs, nr, psync_exec);
}

int wtio_psync_reap(struct wtio_io_backend *be, unsigned int min_complete,
		    const struct timespec *timeout)
{
	struct psync_ts *pts = psync_ts_get(be, false);
	struct wtio_io_done d;
	unsigned int todo, done = 0;

	if (!pts)
		return 0;
	/*
	 * Everything queued is already complete, so there is never anything
	 * to wait for. Requests that end_io submits land in the queue too;
	 * deliver them only as far as min_complete asks, so that a chain of
	 * resubmissions cannot keep one reap call going forever.
	 */
	todo = pts->dq.count > min_complete ? pts->dq.count : min_complete;
	while (done < todo && wtio_io_doneq_pop(&pts->dq, &d)) {
		done++;
		d.req->end_io(d.req, d.res);
	}
	return done;
}

unsigned int wtio_psync_inflight(struct wtio_io_backend *be)
{
	struct psync_ts *pts = psync_ts_get(be, false);

	return pts ? pts->dq.count : 0;
}

const struct wtio_io_ops wtio_io_psync_ops = {
	.version	= WTIO_IO_OPS_VERSION,
	.name		= "psync",
	.caps		= WTIO_IO_CAP_ATOMIC,
	.setup		= wtio_psync_setup,
	.teardown	= wtio_psync_teardown,
	.submit		= psync_submit,
	.reap		= wtio_psync_reap,
	.inflight	= wtio_psync_inflight,
	.set_size	= wtio_io_ftruncate,
	.write_cached	= wtio_io_pwrite_cached,
};
