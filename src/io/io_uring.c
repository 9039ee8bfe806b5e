/* SPDX-License-Identifier: MIT */
/*
 * io_uring.c - the io_uring backend: one ring per (thread, backend),
 * created on the thread's first submit, so that submission never needs a
 * lock and a ring can be set up single-issuer with deferred task work.
 */
#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wtio.h"
#include "io_priv.h"
#include "uring.h"
#include "sys.h"

#define URING_DEPTH		128
#define URING_WANT_FLAGS	(IORING_SETUP_SINGLE_ISSUER | \
				 IORING_SETUP_DEFER_TASKRUN)

struct uring_ts {
	struct wtio_io_tstate ts;
	struct io_uring ring;
	bool fixed;		/* the arena is registered on this ring */
	/* Submitted and not yet delivered, including those in dq. */
	unsigned int inflight;
	/*
	 * Completions taken off the CQ (or failed before reaching the SQ)
	 * while submitting: submit may not call end_io, so they wait here
	 * for the next reap.
	 */
	struct wtio_io_doneq dq;
	/* Slots of dq kept for requests of the batch being submitted. */
	unsigned int held;
	/* wtio_io_plug depth: submits leave the SQ to the next enter. */
	unsigned int plugged;
	/*
	 * No ring: this thread could not make one (EMFILE when the program
	 * has used up its descriptors, ENOMEM). Its requests are done
	 * synchronously and wait in dq for reap, so that write-back from
	 * such a thread (a close) still writes instead of failing and
	 * dropping the data. Tried again once nothing is in flight.
	 */
	bool noring;
};

static void uring_release(struct wtio_io_tstate *ts)
{
	struct uring_ts *uts = (struct uring_ts *)ts;

	if (!uts->noring)
		io_uring_queue_exit(&uts->ring);
	wtio_io_doneq_free(&uts->dq);
}

static int uring_init_ring(struct uring_dom *ud, struct io_uring *ring,
			   unsigned int entries)
{
	struct io_uring_params p;
	unsigned int flags;
	int ret;

	flags = __atomic_load_n(&ud->setup_flags, __ATOMIC_RELAXED);
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	ret = wtio_sys_io_uring_queue_init_params(entries, ring, &p);
	if (ret == -EINVAL && flags) {
		/* Older than 6.1: plain rings work, just a bit slower. */
		memset(&p, 0, sizeof(p));
		ret = wtio_sys_io_uring_queue_init_params(entries, ring, &p);
		if (!ret)
			__atomic_store_n(&ud->setup_flags, 0, __ATOMIC_RELAXED);
	}
	return ret;
}

/* Give a ring-less thread state its ring, if the kernel lets it now. */
static void uring_ts_try_ring(struct uring_dom *ud, struct uring_ts *uts)
{
	if (uring_init_ring(ud, &uts->ring, URING_DEPTH) < 0)
		return;
	uts->noring = false;
	/* Pinning can fail (RLIMIT_MEMLOCK); plain buffers still work. */
	if (ud->bufs)
		uts->fixed = io_uring_register_buffers(&uts->ring, ud->bufs,
						       ud->nr_bufs) == 0;
}

static struct uring_ts *uring_ts_get(struct wtio_io_backend *be, int *err)
{
	struct uring_dom *ud = be->private;
	struct uring_ts *uts;
	int ret;

	uts = (struct uring_ts *)wtio_io_tstate_find(&ud->dom);
	if (uts || !err)
		return uts;

	uts = calloc(1, sizeof(*uts));
	if (!uts) {
		*err = -ENOMEM;
		return NULL;
	}
	uts->noring = true;
	uring_ts_try_ring(ud, uts);
	ret = wtio_io_tstate_add(&ud->dom, &uts->ts);
	if (ret) {
		if (!uts->noring)
			io_uring_queue_exit(&uts->ring);
		free(uts);
		*err = ret;
		return NULL;
	}
	return uts;
}

/* Move ready CQEs into dq, as far as it has room, without calling end_io. */
static void uring_stash_cqes(struct uring_ts *uts)
{
	struct io_uring_cqe *cqe;

	while (uts->dq.count + uts->held < uts->dq.cap &&
	       io_uring_peek_cqe(&uts->ring, &cqe) == 0) {
		wtio_io_doneq_push(&uts->dq, io_uring_cqe_get_data(cqe),
				   cqe->res);
		io_uring_cqe_seen(&uts->ring, cqe);
	}
}

/*
 * Hand the SQ to the kernel. Returns 0 or a hard error; transient ones are
 * retried, making room in the CQ when the kernel says it is backed up.
 */
static int uring_flush(struct uring_ts *uts)
{
	int ret;

	for (;;) {
		ret = io_uring_submit(&uts->ring);
		if (ret >= 0)
			return 0;
		if (ret == -EINTR)
			continue;
		if (ret != -EAGAIN && ret != -EBUSY)
			return ret;
		uring_stash_cqes(uts);
		sched_yield();
	}
}

static int uring_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
			unsigned int nr)
{
	struct io_uring_sqe *sqe;
	struct uring_ts *uts;
	unsigned int i;
	int ret = 0;

	uts = uring_ts_get(be, &ret);
	if (!uts)
		return ret;
	if (uts->noring && !uts->inflight)
		uring_ts_try_ring(be->private, uts);
	/*
	 * Room for every request to fail after some have been queued, and
	 * for a ring's worth of completions taken off a backed-up CQ.
	 */
	ret = wtio_io_doneq_reserve(&uts->dq, nr + URING_DEPTH);
	if (ret)
		return ret;
	if (uts->noring) {
		for (i = 0; i < nr; i++) {
			uts->inflight++;
			wtio_io_doneq_push(&uts->dq, reqs[i],
					   wtio_psync_do(reqs[i]));
		}
		return 0;
	}

	for (i = 0; i < nr; i++) {
		uts->held = nr - i;
		uts->inflight++;
		while (!(sqe = io_uring_get_sqe(&uts->ring))) {
			ret = uring_flush(uts);
			if (ret)
				break;
		}
		if (!sqe) {
			/*
			 * The earlier ones are in the SQ and cannot be taken
			 * back, so report this one through reap instead.
			 */
			wtio_io_doneq_push(&uts->dq, reqs[i], ret);
			continue;
		}
		wtio_uring_prep(be, uts->fixed, sqe, reqs[i]);
	}
	uts->held = 0;
	/*
	 * A hard error leaves the SQEs queued; the next io_uring_enter (in
	 * reap) submits them, and reports the error if it persists.
	 * Plugged, that enter is the one that waits.
	 */
	if (!uts->plugged)
		uring_flush(uts);
	return 0;
}

static void uring_plug(struct wtio_io_backend *be, bool on)
{
	int err = 0;
	struct uring_ts *uts = uring_ts_get(be, &err);

	if (!uts || uts->noring)
		return;	/* the submit finds the same error and says it */
	if (on) {
		uts->plugged++;
	} else if (uts->plugged && !--uts->plugged &&
		   io_uring_sq_ready(&uts->ring)) {
		uring_flush(uts);
	}
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * Put a request that was not run (wtio_uring_res_not_run) in the SQ
 * again; it stays counted in flight. False when no SQE can be had: its
 * completion is then delivered as it came.
 */
static bool uring_resubmit(struct wtio_io_backend *be, struct uring_ts *uts,
			   struct wtio_io_req *req)
{
	struct io_uring_sqe *sqe;

	if (uts->noring)
		return false;
	while (!(sqe = io_uring_get_sqe(&uts->ring)))
		if (uring_flush(uts))
			return false;
	wtio_uring_prep(be, uts->fixed, sqe, req);
	if (!uts->plugged)
		uring_flush(uts);
	return true;
}

/* Deliver what is ready: the stash first, then the CQ, one at a time. */
static unsigned int uring_deliver(struct wtio_io_backend *be,
				  struct uring_ts *uts)
{
	struct io_uring_cqe *cqe;
	struct wtio_io_done d;
	unsigned int n = 0;

	for (;;) {
		if (!wtio_io_doneq_pop(&uts->dq, &d)) {
			if (uts->noring || io_uring_peek_cqe(&uts->ring, &cqe))
				break;
			d.req = io_uring_cqe_get_data(cqe);
			d.res = cqe->res;
			/* Consume before end_io: it may submit on this ring. */
			io_uring_cqe_seen(&uts->ring, cqe);
		}
		if (wtio_uring_res_not_run((int)d.res) &&
		    uring_resubmit(be, uts, d.req))
			continue;
		uts->inflight--;
		n++;
		d.req->end_io(d.req, d.res);
	}
	return n;
}

static int uring_reap(struct wtio_io_backend *be, unsigned int min_complete,
		      const struct timespec *timeout)
{
	struct uring_ts *uts = uring_ts_get(be, NULL);
	struct __kernel_timespec kts, *ktsp = NULL;
	struct io_uring_cqe *cqe;
	unsigned int target, done = 0, want;
	int64_t deadline = 0, left;
	int ret;

	if (!uts)
		return 0;
	if (uts->noring)	/* all done already, as psync's */
		return uring_deliver(be, uts);
	/* Waiting for more than is in flight would never end. */
	target = min_complete < uts->inflight ? min_complete : uts->inflight;
	if (timeout)
		deadline = now_ns() + (int64_t)timeout->tv_sec * 1000000000 +
			   timeout->tv_nsec;

	if (!target) {
		/* Deferred task work only runs when we enter the kernel. */
		io_uring_submit_and_get_events(&uts->ring);
		return uring_deliver(be, uts);
	}

	for (;;) {
		done += uring_deliver(be, uts);
		if (done >= target)
			return done;
		want = target - done;
		if (want > uts->inflight)
			want = uts->inflight;
		if (!want)
			return done;
		if (timeout) {
			left = deadline - now_ns();
			if (left <= 0) {
				/* Without entering, deferred work never runs. */
				io_uring_get_events(&uts->ring);
				done += uring_deliver(be, uts);
				return done >= target ? (int)done : -ETIME;
			}
			kts.tv_sec = left / 1000000000;
			kts.tv_nsec = left % 1000000000;
			ktsp = &kts;
		}
		ret = io_uring_submit_and_wait_timeout(&uts->ring, &cqe, want,
						       ktsp, NULL);
		if (ret >= 0 || ret == -EINTR || ret == -EAGAIN ||
		    ret == -EBUSY)
			continue;
		if (ret == -ETIME) {
			done += uring_deliver(be, uts);
			return done >= target ? (int)done : -ETIME;
		}
		return done ? (int)done : ret;
	}
}

static unsigned int uring_inflight(struct wtio_io_backend *be)
{
	struct uring_ts *uts = uring_ts_get(be, NULL);

	return uts ? uts->inflight : 0;
}

/*
 * Make sure io_uring really works here: it may be missing, disabled by
 * sysctl or blocked by seccomp, and AUTO must then fall back to psync.
 */
static int uring_probe(struct uring_dom *ud)
{
	struct io_uring_probe *probe;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring *ring = &ud->probe_ring;
	int ret;

	ret = uring_init_ring(ud, ring, 4);
	if (ret < 0)
		return -EOPNOTSUPP;

	probe = io_uring_get_probe_ring(ring);
	if (probe) {
		if (!io_uring_opcode_supported(probe, IORING_OP_READV) ||
		    !io_uring_opcode_supported(probe, IORING_OP_WRITEV) ||
		    !io_uring_opcode_supported(probe, IORING_OP_FSYNC))
			ret = -EOPNOTSUPP;
		ud->have_rw =
			io_uring_opcode_supported(probe, IORING_OP_READ) &&
			io_uring_opcode_supported(probe, IORING_OP_WRITE);
		if (!io_uring_opcode_supported(probe, IORING_OP_READ_FIXED) ||
		    !io_uring_opcode_supported(probe, IORING_OP_WRITE_FIXED)) {
			free(ud->bufs);
			ud->bufs = NULL;
		}
		io_uring_free_probe(probe);
	}
	/* Setup is not enough: seccomp may still block io_uring_enter. */
	if (!ret) {
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_nop(sqe);
		do {
			ret = io_uring_submit_and_wait(ring, 1);
		} while (ret == -EINTR || ret == -EAGAIN);
		if (ret >= 0 && io_uring_peek_cqe(ring, &cqe) == 0) {
			io_uring_cqe_seen(ring, cqe);
			ret = 0;
		} else {
			ret = -EOPNOTSUPP;
		}
	}
	if (ret) {
		io_uring_queue_exit(ring);
		return ret;
	}
	ud->probe_kept = true;
	return 0;
}

static int uring_setup(struct wtio_io_backend *be)
{
	struct uring_dom *ud;
	unsigned int i;
	size_t left;
	int ret;

	ud = calloc(1, sizeof(*ud));
	if (!ud)
		return -ENOMEM;
	ud->dom.release = uring_release;
	ud->setup_flags = URING_WANT_FLAGS;

	if (be->arena && be->arena_size &&
	    wtio_io_can(be, WTIO_IO_CAP_FIXED_BUFS)) {
		ud->nr_bufs = (unsigned int)((be->arena_size +
					      URING_BUF_CHUNK - 1) /
					     URING_BUF_CHUNK);
		ud->bufs = calloc(ud->nr_bufs, sizeof(*ud->bufs));
		if (!ud->bufs) {
			free(ud);
			return -ENOMEM;
		}
		left = be->arena_size;
		for (i = 0; i < ud->nr_bufs; i++) {
			ud->bufs[i].iov_base = (char *)be->arena +
					       (size_t)i * URING_BUF_CHUNK;
			ud->bufs[i].iov_len = left < URING_BUF_CHUNK ?
					      left : URING_BUF_CHUNK;
			left -= ud->bufs[i].iov_len;
		}
	}

	ret = uring_probe(ud);
	if (ret) {
		free(ud->bufs);
		free(ud);
		return ret;
	}
	if (!ud->bufs)
		be->caps &= ~WTIO_IO_CAP_FIXED_BUFS;
	be->private = ud;
	return 0;
}

static void uring_teardown(struct wtio_io_backend *be)
{
	struct uring_dom *ud = be->private;

	if (!ud)
		return;
	wtio_io_tdom_release_all(&ud->dom);
	if (ud->probe_kept)
		io_uring_queue_exit(&ud->probe_ring);
	free(ud->bufs);
	free(ud);
	be->private = NULL;
}

const struct wtio_io_ops wtio_io_uring_ops = {
	.version	= WTIO_IO_OPS_VERSION,
	.name		= "io_uring",
	.caps		= WTIO_IO_CAP_CHANNELS | WTIO_IO_CAP_ASYNC |
			  WTIO_IO_CAP_FIXED_BUFS | WTIO_IO_CAP_ATOMIC |
			  WTIO_IO_CAP_SYNC_INLINE,
	.setup		= uring_setup,
	.teardown	= uring_teardown,
	.submit		= uring_submit,
	.reap		= uring_reap,
	.inflight	= uring_inflight,
	.set_size	= wtio_io_ftruncate,
	.write_cached	= wtio_io_pwrite_cached,
	.chan_open	= wtio_uring_chan_open,
	.chan_submit	= wtio_uring_chan_submit,
	.chan_reap	= wtio_uring_chan_reap,
	.chan_close	= wtio_uring_chan_close,
	.chan_inflight	= wtio_uring_chan_inflight,
	.plug		= uring_plug,
};
