/* SPDX-License-Identifier: MIT */
/*
 * io.h - what the cache core sees of the I/O layer: the request, the
 * backend instance it embeds in its context, and the wrappers it calls.
 * The core reaches a backend only through these wrappers, never through
 * its ops table (io/ops.h, which is for those who write a backend).
 *
 * Completion model: a request's end_io never runs inside a submit; it
 * runs from a reap in the thread that submitted it (io_uring's model: one
 * ring per submitting thread), so a thread that submits must also reap.
 * A channel (WTIO_IO_CAP_CHANNELS) is the exception: any thread submits,
 * one thread reaps.
 */
#ifndef WTIO_IO_H
#define WTIO_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

struct wtio_io_ops;
struct wtio_io_chan;

enum wtio_io_op {
	WTIO_IO_READ,
	WTIO_IO_WRITE,
	WTIO_IO_FSYNC,		/* fsync(2) of fd */
	WTIO_IO_FDATASYNC,	/* fdatasync(2) of fd */
};

struct wtio_io_req {
	enum wtio_io_op op;
	int fd;			/* an O_DIRECT descriptor */
	off_t off;
	const struct iovec *iov;/* aligned for direct I/O by the caller */
	int iovcnt;		/* <= WTIO_IO_MAX_IOVECS */
	int rw_flags;		/* RWF_DSYNC, RWF_ATOMIC, ... for writes */
	/*
	 * Called exactly once, from a reap in the submitting thread (from
	 * the channel's reaper for channel requests). res is the byte count
	 * (may be short) or a negative errno. A short count is reported as
	 * is: the caller decides whether to resubmit the rest
	 * (wtio_io_req_rest).
	 */
	void (*end_io)(struct wtio_io_req *req, ssize_t res);
	void *private;		/* the caller's */
	struct wtio_io_req *next;	/* free for the backend's queues */
};

#define WTIO_IO_MAX_IOVECS 256

/* rw_flags values; Debian 12's headers predate RWF_ATOMIC. */
#ifndef RWF_DSYNC
#define RWF_DSYNC	0x00000002
#endif
#ifndef RWF_ATOMIC
#define RWF_ATOMIC	0x00000040
#endif

/* Capability flags (ops->caps, be->caps). */
/* chan_* work: a shared queue reaped by another thread. Without it the
 * core does queue and started writeback I/O from the submitting thread. */
#define WTIO_IO_CAP_CHANNELS	(1u << 0)
/* I/O runs after submit returns and reap waits for it (io_uring); without
 * it every request is done inside submit (psync). */
#define WTIO_IO_CAP_ASYNC	(1u << 1)
/* May register be->arena as fixed buffers (off: WTIO_CONFIG_NO_FIXED_BUFFERS,
 * or the kernel cannot). */
#define WTIO_IO_CAP_FIXED_BUFS	(1u << 2)
/* Passes RWF_ATOMIC to the kernel with the write: all or nothing on disk.
 * Without it untorn writes (WTIO_ATOMIC) are refused, -EOPNOTSUPP. */
#define WTIO_IO_CAP_ATOMIC	(1u << 3)
/* A waited-for fsync/fdatasync of the kernel's file is the same done by
 * the waiting thread's own system call (io_uring runs IORING_OP_FSYNC in
 * an io-wq worker, always: a hand-off and two wake-ups per call). A
 * backend that records or reorders its I/O (the fault backend) has not. */
#define WTIO_IO_CAP_SYNC_INLINE	(1u << 4)

/* One backend instance: a context's, or a test's. */
struct wtio_io_backend {
	const struct wtio_io_ops *ops;
	unsigned int caps;	/* WTIO_IO_CAP_* above that this instance has */
	void *private;		/* the backend's own state */
	void *arg;		/* what its creator handed it (a recorder, ...) */
	/* The cache arena: a backend may register it as fixed buffers. */
	void *arena;
	size_t arena_size;
	unsigned int flags;		/* WTIO_CONFIG_* of the context */
	/* O_DIRECT belongs to a description, which every thread shares:
	 * one write_cached at a time turns it off and on again; direct_off
	 * counts a window open, direct_gen the windows closed, for the
	 * writes that fail without O_DIRECT (wtio_io_direct_was_off). */
	pthread_mutex_t direct_flag_lock;
	_Atomic unsigned int direct_off;
	_Atomic uint64_t direct_gen;
};

/*
 * Set up be over the built-in backend for enum wtio_backend kind. AUTO
 * tries io_uring, then psync. Returns 0 or a negative errno.
 */
int wtio_io_backend_init(struct wtio_io_backend *be, unsigned int kind,
			 void *arena, size_t arena_size, unsigned int flags);
/*
 * Set up be over any backend's ops (io/ops.h), handing it arg. Returns 0,
 * -EINVAL for a table of another version or without a required op, or
 * what the backend's setup returned.
 */
int wtio_io_backend_setup(struct wtio_io_backend *be,
			  const struct wtio_io_ops *ops, void *arg,
			  void *arena, size_t arena_size, unsigned int flags);
void wtio_io_backend_exit(struct wtio_io_backend *be);

const char *wtio_io_name(const struct wtio_io_backend *be);
/* Whether the backend can do what cap (WTIO_IO_CAP_*) says. */
static inline bool wtio_io_can(const struct wtio_io_backend *be,
			       unsigned int cap)
{
	return (be->caps & cap) == cap;
}

/*
 * Check and start nr requests. Returns 0, or a negative errno when none
 * was started (then no end_io runs for any of them).
 */
int wtio_io_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		   unsigned int nr);
/*
 * Deliver completions of this thread's requests until min_complete have
 * been delivered or timeout (NULL: none) passes. Returns the number
 * delivered or a negative errno (-ETIME on timeout with fewer).
 */
int wtio_io_reap(struct wtio_io_backend *be, unsigned int min_complete,
		 const struct timespec *timeout);
/* Requests this thread submitted and has not reaped. */
unsigned int wtio_io_inflight(struct wtio_io_backend *be);
/*
 * Plug (on) and unplug (off) this thread's submissions: while plugged a
 * submitted request may start only at this thread's next reap, which
 * then submits and waits in one go, or at the unplug. Only for a caller
 * that reaps what it submits before it blocks on anything else.
 */
void wtio_io_plug(struct wtio_io_backend *be, bool on);
/* Set the size of a backing file (ftruncate(2)); 0 or a negative errno. */
int wtio_io_set_size(struct wtio_io_backend *be, int fd, off_t size);
/*
 * Write through the kernel's page cache, durably, in this thread: a
 * second try for a direct write refused for space (ops.h, write_cached).
 * Bytes written, -errno, or -EOPNOTSUPP where the backend has no way.
 */
ssize_t wtio_io_write_cached(struct wtio_io_backend *be, int fd,
			     const struct iovec *iov, int iovcnt, off_t off);
/*
 * An RWF_ATOMIC write fails (EOPNOTSUPP, EINVAL) on a description whose
 * O_DIRECT a write_cached turned off meanwhile: take a mark before the
 * write; after such a failure, wtio_io_direct_was_off(be, mark) waits
 * for an open window to close and says whether one overlapped the
 * write (then it is made again).
 */
static inline uint64_t wtio_io_direct_mark(struct wtio_io_backend *be)
{
	return atomic_load(&be->direct_gen);
}
bool wtio_io_direct_was_off(struct wtio_io_backend *be, uint64_t mark);

/*
 * Channels, only where wtio_io_can(be, WTIO_IO_CAP_CHANNELS): a ring any
 * thread may submit to, reaped by its completion thread (and by whoever
 * waits for its completions), so completion does not depend on the
 * submitter coming back. wtio_io_chan_submit never fails for well-formed
 * requests: one it cannot queue is completed with the error from the
 * submitting thread. wtio_io_chan_reap returns the number delivered, 0
 * on timeout or when, after one wait, other reapers took them all.
 */
/* Who a channel serves: its kind (wtio.h, WTIO_CONFIG_AIO_CHANNELS). */
enum wtio_chan_use {
	WTIO_CHAN_CTX,		/* started writeback, readahead */
	WTIO_CHAN_QUEUE,	/* a queue's write-through I/O */
};
struct wtio_io_chan *wtio_io_chan_open(struct wtio_io_backend *be,
				       unsigned int depth,
				       enum wtio_chan_use use, int *err);
int wtio_io_chan_submit(struct wtio_io_chan *chan, struct wtio_io_req **reqs,
			unsigned int nr);
int wtio_io_chan_reap(struct wtio_io_chan *chan, unsigned int min,
		      const struct timespec *timeout);
void wtio_io_chan_close(struct wtio_io_chan *chan);
/* What serves chan: "aio" (WTIO_CONFIG_AIO_CHANNELS) or its backend's
 * name. */
const char *wtio_io_chan_name(const struct wtio_io_chan *chan);
/* Requests of chan not yet taken off by a reap; UINT_MAX when the
 * backend cannot say (then only its completion thread should reap). */
unsigned int wtio_io_chan_inflight(struct wtio_io_chan *chan);

/*
 * Send req again after a completion it already had (a short write's
 * rest): through chan when it is not NULL, else through be. Returns 0 or
 * the negative errno of a submit that started nothing.
 */
int wtio_io_resubmit(struct wtio_io_backend *be, struct wtio_io_chan *chan,
		     struct wtio_io_req *req);
/*
 * After a short completion: point req at what is left of the original
 * request (off, iov[0..iovcnt)) past its first done bytes, in rest (room
 * for iovcnt iovecs). Returns the number of iovecs left, 0 when nothing
 * is.
 */
int wtio_io_req_rest(struct wtio_io_req *req, off_t off,
		     const struct iovec *iov, int iovcnt, size_t done,
		     struct iovec *rest);

/*
 * Submit one request and reap until it completes; returns its result.
 * Completions of other requests of this thread reaped meanwhile are
 * delivered too.
 */
ssize_t wtio_io_sync(struct wtio_io_backend *be, struct wtio_io_req *req);
/* One reap(1) for a caller that must not return while its requests are
 * in flight; pauses (up to 100 ms, growing in *backoff_ns) after a hard
 * error. Returns what reap returned, 0 for transient errors. */
int wtio_io_reap_wait(struct wtio_io_backend *be, uint64_t *backoff_ns);

/*
 * Do a whole read or write synchronously: resubmit the remainder after a
 * short count, stop at the first error or at a zero-byte read (EOF).
 * Returns bytes done, or the negative errno if nothing was done.
 */
ssize_t wtio_io_full(struct wtio_io_backend *be, enum wtio_io_op op, int fd,
		     const struct iovec *iov, int iovcnt, off_t off,
		     int rw_flags);

#endif /* WTIO_IO_H */
