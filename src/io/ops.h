/* SPDX-License-Identifier: MIT */
/*
 * ops.h - the backend interface: the ops table a backend fills in, its
 * capability flags, the psync engine a synchronous backend can reuse, and
 * the internal entry point that puts a context over a backend of one's
 * own (for test and benchmark code linked with the static library).
 *
 * How to write a backend
 *
 *   Fill a const struct wtio_io_ops: .version = WTIO_IO_OPS_VERSION, a
 *   name, caps, and every op below that is not marked "CHANNELS only"
 *   (an incomplete table is refused with -EINVAL). The core calls the
 *   ops only through io/io.h's wrappers, which check each request first
 *   (wtio_io_req_check) and never pass an empty batch: submit sees only
 *   well-formed requests, nr >= 1.
 *
 *   setup      Allocate the instance's state into be->private; be->arg
 *              is what the creator passed (NULL for the built-in kinds),
 *              be->arena/arena_size the cache memory, be->flags the
 *              context's WTIO_CONFIG_*. May clear bits of be->caps that
 *              this system lacks. 0, or a negative errno (-EOPNOTSUPP:
 *              cannot work here, so AUTO may try the next one).
 *   teardown   Free everything; all I/O has been reaped by then.
 *   submit     Start nr requests of the calling thread. 0, or a negative
 *              errno when none was started. Never calls end_io itself.
 *   reap       Deliver this thread's completions (call end_io, in this
 *              thread) until min_complete were delivered or the timeout
 *              (NULL: none) passed. Returns the number delivered, or a
 *              negative errno (-ETIME: timed out with fewer). end_io may
 *              submit again (a short write's rest): deliver those only
 *              as far as min_complete asks, so one reap ends.
 *   inflight   Requests the calling thread submitted and has not reaped.
 *   set_size   Give a backing file (fd) a new size: ftruncate(2) for a
 *              plain file (wtio_io_ftruncate does just that). 0 or -errno.
 *   write_cached  Optional. Write iov at off through the kernel's page
 *              cache instead of directly, durably (as RWF_DSYNC), in the
 *              calling thread: the core's second try of a direct write
 *              that a filesystem refused with ENOSPC or EDQUOT, which
 *              ext4 does where the kernel's own writeback of the same
 *              blocks succeeds (wtio_io_pwrite_cached). Bytes written
 *              (may be short) or -errno. Without it, the error stands.
 *   chan_*     CHANNELS only: a channel is one queue that any thread may
 *              submit to and one thread reaps (a queue's or the flushers'
 *              completion thread). chan_open allocates a struct that
 *              embeds struct wtio_io_chan first; chan_submit never fails
 *              once requests are well formed: one it cannot queue is
 *              completed with the error by calling its end_io from the
 *              submitting thread; chan_reap delivers in the calling
 *              thread and returns the number delivered, 0 on timeout;
 *              chan_close frees it (all its I/O reaped). chan_reap
 *              may run in several threads at once (a queue's owner
 *              waiting for its completions helps its completion
 *              thread): each completion is delivered once, by one of
 *              them; a reap that waited once returns with what it got,
 *              maybe 0 (another took it). chan_inflight (optional)
 *              counts what was submitted and not yet taken off.
 *
 *   Completion rules: every started request gets exactly one end_io, with
 *   the byte count (may be short; never more than asked) or a negative
 *   errno; a short count is not an error, the caller resubmits the rest.
 *   A zero-byte write completion is taken for a device that cannot make
 *   progress. A write with RWF_DSYNC is durable when it completes (every
 *   backend must honour that); RWF_ATOMIC comes only where the backend
 *   has WTIO_IO_CAP_ATOMIC.
 *
 *   Threads: submit, reap, inflight and set_size are called from many
 *   threads at once, each about its own requests (keep per-thread state:
 *   io_priv.h's tstate helpers, or the psync engine below, do that);
 *   chan_submit and chan_reap from many threads at once; setup and
 *   teardown from one thread, with no I/O running.
 *
 *   A backend that does its I/O synchronously need only write an
 *   executor for one request and build on the psync engine: setup =
 *   wtio_psync_setup (or a wrapper), submit = a function calling
 *   wtio_psync_submit_exec with the executor, reap = wtio_psync_reap,
 *   inflight = wtio_psync_inflight, teardown = wtio_psync_teardown.
 */
#ifndef WTIO_IO_OPS_H
#define WTIO_IO_OPS_H

#include "io.h"

struct wtio_config;
struct wtio_ctx;

/* Bumped whenever the table or the rules above change meaning. */
#define WTIO_IO_OPS_VERSION	1

/* Capability flags: WTIO_IO_CAP_* in io.h. */

struct wtio_io_ops {
	unsigned int version;		/* WTIO_IO_OPS_VERSION */
	const char *name;
	unsigned int caps;		/* WTIO_IO_CAP_* */
	int (*setup)(struct wtio_io_backend *be);
	void (*teardown)(struct wtio_io_backend *be);
	int (*submit)(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		      unsigned int nr);
	int (*reap)(struct wtio_io_backend *be, unsigned int min_complete,
		    const struct timespec *timeout);
	unsigned int (*inflight)(struct wtio_io_backend *be);
	int (*set_size)(struct wtio_io_backend *be, int fd, off_t size);
	/* Optional. */
	ssize_t (*write_cached)(struct wtio_io_backend *be, int fd,
				const struct iovec *iov, int iovcnt, off_t off);
	/* WTIO_IO_CAP_CHANNELS only. */
	struct wtio_io_chan *(*chan_open)(struct wtio_io_backend *be,
					  unsigned int depth, int *err);
	int (*chan_submit)(struct wtio_io_chan *chan,
			   struct wtio_io_req **reqs, unsigned int nr);
	int (*chan_reap)(struct wtio_io_chan *chan, unsigned int min,
			 const struct timespec *timeout);
	void (*chan_close)(struct wtio_io_chan *chan);
	/* Optional (CHANNELS): requests submitted to chan whose completion
	 * no reap has taken yet. Without it nobody but the channel's own
	 * completion thread reaps it. */
	unsigned int (*chan_inflight)(struct wtio_io_chan *chan);
	/* Optional: on, this thread's submits may wait to be started by its
	 * next reap (one system call for both) or by the plug's end (off);
	 * nested plugs count. */
	void (*plug)(struct wtio_io_backend *be, bool on);
};

/* Backends embed this first in their channel; the wrapper sets be, and
 * ops: the table whose chan_* serve it (be's, or another provider's:
 * io/aio_chan.h). */
struct wtio_io_chan {
	struct wtio_io_backend *be;
	const struct wtio_io_ops *ops;
};

extern const struct wtio_io_ops wtio_io_uring_ops;
extern const struct wtio_io_ops wtio_io_psync_ops;

/* Validate a read/write/flush request (the wrappers do, before submit). */
int wtio_io_req_check(const struct wtio_io_req *req);
/* ftruncate(2), restarted on EINTR: a set_size for plain files. */
int wtio_io_ftruncate(struct wtio_io_backend *be, int fd, off_t size);
/* A write_cached for plain files: O_DIRECT off on fd's description
 * while pwritev2(RWF_DSYNC) runs (one such write at a time per backend),
 * then the pages it left in the kernel's cache dropped. */
ssize_t wtio_io_pwrite_cached(struct wtio_io_backend *be, int fd,
			      const struct iovec *iov, int iovcnt, off_t off);

/* The psync engine: requests run synchronously inside submit, through an
 * executor, and their results wait in a per-thread queue for reap. */
typedef ssize_t (*wtio_psync_exec_fn)(struct wtio_io_backend *be,
				      const struct wtio_io_req *req);

/* Do one request with preadv2/pwritev2/fsync/fdatasync. */
ssize_t wtio_psync_do(const struct wtio_io_req *req);
int wtio_psync_setup(struct wtio_io_backend *be);
void wtio_psync_teardown(struct wtio_io_backend *be);
int wtio_psync_submit_exec(struct wtio_io_backend *be,
			   struct wtio_io_req **reqs, unsigned int nr,
			   wtio_psync_exec_fn exec);
int wtio_psync_reap(struct wtio_io_backend *be, unsigned int min_complete,
		    const struct timespec *timeout);
unsigned int wtio_psync_inflight(struct wtio_io_backend *be);

/*
 * wtio_ctx_create() over a backend of the caller's (ops, handed arg at
 * setup) instead of cfg->backend's. Not exported from libwtio.so: for
 * test and benchmark code linked with the static library. Returns what
 * wtio_ctx_create() returns.
 */
int wtio_ctx_create_io(const struct wtio_config *cfg,
		       const struct wtio_io_ops *ops, void *arg,
		       struct wtio_ctx **ctxp);

#endif /* WTIO_IO_OPS_H */
