/* SPDX-License-Identifier: MIT */
/*
 * uring.h - what the io_uring backend's files share: the instance's
 * state, the request-to-SQE translation (io_uring_prep.c) and the channel
 * ops (io_uring_chan.c) that io_uring.c's table names.
 */
#ifndef WTIO_IO_URING_SHARED_H
#define WTIO_IO_URING_SHARED_H

#include <liburing.h>
#include <stdbool.h>

#include "io_priv.h"

/* The kernel refuses fixed buffers larger than 1 GiB. */
#define URING_BUF_CHUNK		(1ull << 30)

struct uring_dom {
	struct wtio_io_tdom dom;
	/* Setup flags the kernel takes; dropped to 0 on the first -EINVAL. */
	unsigned int setup_flags;
	bool have_rw;		/* IORING_OP_READ/WRITE (5.6+) */
	/* The arena as fixed-buffer chunks; NULL when not to be used. */
	struct iovec *bufs;
	unsigned int nr_bufs;
	/* The ring the setup probed with, kept until teardown: closing a
	 * ring makes the kernel's exit work interrupt every thread that
	 * used it (task work, later, from a kworker), which cuts short an
	 * interruptible read the caller is then in (dd of /dev/zero under
	 * the shim wrote a short file). */
	struct io_uring probe_ring;
	bool probe_kept;
};

/* Fill sqe for req; fixed: the arena is registered on sqe's ring. */
/*
 * A completion for a request the kernel never ran, which goes to the
 * kernel again. io-wq starts its worker from the submitting thread, and
 * create_io_thread() fails with -ERESTARTNOINTR while a signal is pending
 * there; after a few tries io-wq cancels the work (-ECANCELED). An inline
 * issue cut short by a signal completes -EINTR (io_rw_done()). wtio
 * cancels nothing of its own, and read, write and fsync of a regular file
 * never fail for a signal, so neither code is an error of the I/O.
 */
static inline bool wtio_uring_res_not_run(int res)
{
	return res == -ECANCELED || res == -EINTR;
}

void wtio_uring_prep(struct wtio_io_backend *be, bool fixed,
		     struct io_uring_sqe *sqe, struct wtio_io_req *req);

struct wtio_io_chan *wtio_uring_chan_open(struct wtio_io_backend *be,
					  unsigned int depth, int *err);
int wtio_uring_chan_submit(struct wtio_io_chan *chan,
			   struct wtio_io_req **reqs, unsigned int nr);
int wtio_uring_chan_reap(struct wtio_io_chan *chan, unsigned int min,
			 const struct timespec *timeout);
void wtio_uring_chan_close(struct wtio_io_chan *chan);
unsigned int wtio_uring_chan_inflight(struct wtio_io_chan *chan);

#endif /* WTIO_IO_URING_SHARED_H */
