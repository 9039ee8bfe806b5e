/* SPDX-License-Identifier: MIT */
/*
 * io.h - the I/O backend interface. The cache builds wtio_io_req's and
 * hands them to a backend through one ops table, fio-engine style.
 *
 * Completion model: a backend never calls a request's end_io from inside
 * submit. Completions are delivered by reap(), in the thread that calls it,
 * for requests that this same thread submitted (io_uring's model: one ring
 * per submitting thread). So a thread that submits must also reap.
 */
#ifndef WTIO_IO_H
#define WTIO_IO_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

struct wtio_ctx;
struct wtio_fault;
struct wtio_io_backend;

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
	 * Called exactly once, from reap() in the submitting thread. res is
	 * the byte count (may be short) or a negative errno. A short count is
	 * reported as is: the caller decides whether to resubmit the rest.
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

struct wtio_io_ops {
	const char *name;
	/* Set up be->private. Returns 0 or a negative errno (-EOPNOTSUPP when
	 * the backend cannot work on this system). */
	int (*setup)(struct wtio_io_backend *be);
	/* Release everything; all I/O has been reaped. */
	void (*teardown)(struct wtio_io_backend *be);
	/* Queue and start nr requests. Returns 0, or a negative errno when
	 * nothing was submitted (then no end_io is called for any of them). */
	int (*submit)(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		      unsigned int nr);
	/*
	 * Deliver completions of this thread's requests, waiting until at
	 * least min_complete have been delivered or the timeout (NULL =
	 * none) passes. Returns the number delivered (>= 0) or a negative
	 * errno (-ETIME on timeout with fewer delivered).
	 */
	int (*reap)(struct wtio_io_backend *be, unsigned int min_complete,
		    const struct timespec *timeout);
	/* Requests this thread submitted and has not reaped. */
	unsigned int (*inflight)(struct wtio_io_backend *be);

	/*
	 * Channels (optional; NULL where the backend completes I/O inside
	 * submit anyway, as psync does): one ring that any thread may
	 * submit to, reaped by one thread, so completion does not depend
	 * on the submitter coming back. chan_submit never fails once the
	 * requests are well formed: a request it cannot queue is completed
	 * with the error by calling its end_io from the submitting thread.
	 * chan_reap delivers completions in the calling thread (returns the
	 * number delivered, 0 on timeout).
	 */
	struct wtio_io_chan *(*chan_open)(struct wtio_io_backend *be,
					  unsigned int depth, int *err);
	int (*chan_submit)(struct wtio_io_chan *chan,
			   struct wtio_io_req **reqs, unsigned int nr);
	int (*chan_reap)(struct wtio_io_chan *chan, unsigned int min,
			 const struct timespec *timeout);
	void (*chan_close)(struct wtio_io_chan *chan);
};

struct wtio_io_chan {
	int unused;	/* backends embed this first */
};

struct wtio_io_backend {
	const struct wtio_io_ops *ops;
	void *private;
	/* The cache arena: io_uring may register it as fixed buffers. */
	void *arena;
	size_t arena_size;
	unsigned int flags;		/* WTIO_CONFIG_* of the context */
	struct wtio_fault *fault;	/* fault backend only */
};

extern const struct wtio_io_ops wtio_io_uring_ops;
extern const struct wtio_io_ops wtio_io_psync_ops;
extern const struct wtio_io_ops wtio_io_fault_ops;

/*
 * Choose and set up the backend for enum wtio_backend kind. AUTO tries
 * io_uring, then psync. Returns 0 or a negative errno.
 */
int wtio_io_backend_init(struct wtio_io_backend *be, unsigned int kind,
			 void *arena, size_t arena_size, unsigned int flags,
			 struct wtio_fault *fault);
void wtio_io_backend_exit(struct wtio_io_backend *be);

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

/* Fault backend hooks for the recorder (io_fault.c), called by the core. */
/* A size change of a backing file that completed (ftruncate). */
void wtio_fault_note_truncate(struct wtio_fault *fault, int fd, off_t size);

#endif /* WTIO_IO_H */
