/* SPDX-License-Identifier: MIT */
/*
 * io_uring_chan.c - the io_uring backend's channels (WTIO_IO_CAP_CHANNELS):
 * one ring that any thread submits to under a lock, reaped by its
 * completion thread or by a thread waiting for its completions, for
 * queues and started writeback whose submitter does not come back.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uring.h"
#include "sys.h"

/*
 * A channel: one ring shared by the threads that submit to it and reaped
 * by others (a queue's completion thread, or its owner waiting for
 * completions). No single-issuer or deferred task work here: a reaper is
 * not the submitter.
 */
struct uring_chan {
	struct wtio_io_chan chan;
	struct wtio_io_backend *be;
	struct io_uring ring;
	bool fixed;		/* the arena is registered on this ring */
	pthread_mutex_t sq_lock;
	/* Taking CQEs off the ring: reapers may wait in the kernel
	 * together, but only one at a time moves the CQ head. */
	pthread_mutex_t cq_lock;
	/* Requests submitted and not yet taken off the CQ. */
	_Atomic unsigned int inflight;
	/* Released by submitters after their requests are filled in,
	 * acquired by the reaper before it reads a completed request: the
	 * real ordering goes through the kernel's ring, which
	 * ThreadSanitizer cannot see. */
	_Atomic uint64_t published;
};

struct wtio_io_chan *wtio_uring_chan_open(struct wtio_io_backend *be,
					  unsigned int depth, int *err)
{
	struct uring_chan *uc = calloc(1, sizeof(*uc));
	struct io_uring_params p;
	int ret;

	if (!uc) {
		*err = -ENOMEM;
		return NULL;
	}
	/* io_uring_queue_init(depth, ring, 0), which calls this through
	 * liburing's PLT: inside the shim that would be its interposer */
	memset(&p, 0, sizeof(p));
	ret = wtio_sys_io_uring_queue_init_params(depth < 8 ? 8 : depth,
						  &uc->ring, &p);
	if (ret < 0) {
		free(uc);
		*err = ret;
		return NULL;
	}
	uc->be = be;
	if (((struct uring_dom *)be->private)->bufs)
		uc->fixed = io_uring_register_buffers(&uc->ring,
				((struct uring_dom *)be->private)->bufs,
				((struct uring_dom *)be->private)->nr_bufs) == 0;
	pthread_mutex_init(&uc->sq_lock, NULL);
	pthread_mutex_init(&uc->cq_lock, NULL);
	return &uc->chan;
}

int wtio_uring_chan_submit(struct wtio_io_chan *chan,
			   struct wtio_io_req **reqs, unsigned int nr)
{
	struct uring_chan *uc = (struct uring_chan *)chan;
	struct io_uring_sqe *sqe = NULL;
	unsigned int i, queued;
	int ret = 0, err = 0;

	pthread_mutex_lock(&uc->sq_lock);
	for (i = 0; i < nr; i++) {
		while (!(sqe = io_uring_get_sqe(&uc->ring))) {
			/* A full SQ drains into the kernel; the CQ does not
			 * drop completions (IORING_FEAT_NODROP). */
			atomic_fetch_add_explicit(&uc->published, 1,
						  memory_order_release);
			ret = io_uring_submit(&uc->ring);
			if (ret >= 0 || ret == -EINTR)
				continue;
			if (ret != -EAGAIN && ret != -EBUSY) {
				err = ret;
				break;
			}
			sched_yield();
		}
		if (!sqe)
			break;
		wtio_uring_prep(uc->be, uc->fixed, sqe, reqs[i]);
	}
	queued = i;
	/* Before the kernel can complete them, so a reaper never sees the
	 * count drop below what the ring holds. */
	atomic_fetch_add(&uc->inflight, queued);
	atomic_fetch_add_explicit(&uc->published, 1, memory_order_release);
	do {
		ret = io_uring_submit(&uc->ring);
	} while (ret == -EINTR || ret == -EAGAIN || ret == -EBUSY);
	pthread_mutex_unlock(&uc->sq_lock);
	/* Earlier requests are in flight already and cannot be taken
	 * back: the rest complete here, with the error. */
	for (i = queued; i < nr; i++)
		reqs[i]->end_io(reqs[i], err ? err : -EIO);
	return 0;
}

/* Deliver what the CQ holds now, a batch at a time taken under cq_lock
 * and completed outside it (end_io may do I/O of its own). */
static int uring_chan_deliver(struct uring_chan *uc)
{
	struct wtio_io_done d[32];
	struct io_uring_cqe *cqe;
	int n = 0, i, got;

	do {
		got = 0;
		pthread_mutex_lock(&uc->cq_lock);
		while (got < 32 && io_uring_peek_cqe(&uc->ring, &cqe) == 0) {
			d[got].req = io_uring_cqe_get_data(cqe);
			d[got].res = cqe->res;
			io_uring_cqe_seen(&uc->ring, cqe);
			got++;
		}
		pthread_mutex_unlock(&uc->cq_lock);
		if (!got)
			break;
		/* Those the kernel did not run go again, counted in flight
		 * again before the count drops for this batch. */
		for (i = 0; i < got; i++)
			if (wtio_uring_res_not_run((int)d[i].res))
				wtio_uring_chan_submit(&uc->chan, &d[i].req, 1);
		atomic_fetch_sub(&uc->inflight, (unsigned int)got);
		(void)atomic_load_explicit(&uc->published,
					   memory_order_acquire);
		for (i = 0; i < got; i++) {
			if (wtio_uring_res_not_run((int)d[i].res))
				continue;
			d[i].req->end_io(d[i].req, d[i].res);
			n++;
		}
	} while (got == 32);
	return n;
}

/*
 * Several threads may reap at once: each delivers what it takes off the
 * CQ. One wait at most: a CQE another reaper took wakes this one too,
 * and it returns with what it got (maybe 0), so that its caller can look
 * again at why it waits.
 */
int wtio_uring_chan_reap(struct wtio_io_chan *chan, unsigned int min,
			 const struct timespec *timeout)
{
	struct uring_chan *uc = (struct uring_chan *)chan;
	struct __kernel_timespec ts;
	struct io_uring_cqe *cqe;
	bool waited = false;
	int n = 0, ret;

	for (;;) {
		n += uring_chan_deliver(uc);
		if ((unsigned int)n >= min || waited)
			return n;
		if (timeout) {
			ts.tv_sec = timeout->tv_sec;
			ts.tv_nsec = timeout->tv_nsec;
		}
		ret = io_uring_wait_cqe_timeout(&uc->ring, &cqe,
						timeout ? &ts : NULL);
		waited = true;
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN &&
		    ret != -ETIME)
			return n ? n : ret;
	}
}

unsigned int wtio_uring_chan_inflight(struct wtio_io_chan *chan)
{
	return atomic_load(&((struct uring_chan *)chan)->inflight);
}

void wtio_uring_chan_close(struct wtio_io_chan *chan)
{
	struct uring_chan *uc = (struct uring_chan *)chan;

	io_uring_queue_exit(&uc->ring);
	pthread_mutex_destroy(&uc->sq_lock);
	pthread_mutex_destroy(&uc->cq_lock);
	free(uc);
}
