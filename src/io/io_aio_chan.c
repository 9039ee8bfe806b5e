/* SPDX-License-Identifier: MIT */
/*
 * io_aio_chan.c - channels over Linux AIO (io_submit/io_getevents), for a
 * context with WTIO_CONFIG_AIO_CHANNELS.
 *
 * Why: an io_uring ring without DEFER_TASKRUN completes a direct write
 * through task work of the thread that submitted it, kicked by an IPI
 * while that thread copies the next write into the cache; AIO posts the
 * completion from the I/O's own completion context and wakes whoever
 * waits in io_getevents. Any thread may submit (the kernel takes
 * concurrent io_submit calls on one context, no lock here) and any
 * thread may reap, so the rule that a folio under writeback always has a
 * thread that will end it holds as with io_uring's channels.
 *
 * The control blocks live on the submitter's stack: the kernel copies
 * them (and the iovecs) in io_submit, and hands back aio_data, the
 * request, in the event. Raw system calls through the sys table (the
 * shim's syscall interposer must not see the library's own calls).
 *
 * An AIO context belongs to the process's address space: a child of
 * fork() has a copy of the ring's head but its io_submit and io_getevents
 * on the parent's context are EINVAL (io_uring rings are shared with the
 * parent instead). Neither is reached from a child: every entry point of
 * an inherited context is -ECHILD (forked.h); a context the child makes
 * gets its own AIO context here.
 */
#include <errno.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "aio_chan.h"
#include "io_priv.h"
#include "sys.h"

#define AIO_BATCH	32

/* The head of the kernel's completion ring (fs/aio.c's struct aio_ring),
 * mapped read-write at the context's address: looked at, never moved,
 * so that an empty ring costs no system call. */
struct aio_ring_head {
	unsigned int id, nr, head, tail;
	unsigned int magic, compat_features, incompat_features;
	unsigned int header_length;
};

#define AIO_RING_MAGIC	0xa10a10a1u

struct aio_chan {
	struct wtio_io_chan chan;
	aio_context_t ctx;
	const struct aio_ring_head *ring;	/* NULL: cannot look */
	/* Submitted and not yet delivered (on the ring or stashed). */
	_Atomic unsigned int inflight;
	/* Released by submitters after their requests are filled in,
	 * acquired before a completed one is read: the real ordering goes
	 * through the kernel, which ThreadSanitizer cannot see. */
	_Atomic uint64_t published;
	/* Completions a submitter took off a full ring to make room
	 * (io_submit's -EAGAIN), waiting for the next reap. */
	pthread_mutex_t stash_lock;
	struct io_event *stash;
	unsigned int stash_head, stash_count, stash_cap;
	_Atomic unsigned int stashed;
};

static long aio_call(long nr, long a1, long a2, long a3, long a4, long a5)
{
	long ret = wtio_sys_syscall(nr, a1, a2, a3, a4, a5);

	return ret < 0 ? -errno : ret;
}

#ifdef SYS_io_getevents
#define AIO_GETEVENTS	SYS_io_getevents
#else
#define AIO_GETEVENTS	(-1L)	/* only the time64 call: open refuses */
#endif

static long aio_getevents(struct aio_chan *ac, long min, struct io_event *ev,
			  struct timespec *ts)
{
	return aio_call(AIO_GETEVENTS, (long)ac->ctx, min, AIO_BATCH,
			(long)ev, (long)ts);
}

/* Whether the ring may hold a completion (true when it cannot tell). */
static bool ring_ready(const struct aio_chan *ac)
{
	if (!ac->ring)
		return true;
	return __atomic_load_n(&ac->ring->head, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&ac->ring->tail, __ATOMIC_ACQUIRE);
}

struct wtio_io_chan *wtio_aio_chan_open(struct wtio_io_backend *be,
					unsigned int depth, int *err)
{
	struct aio_chan *ac = calloc(1, sizeof(*ac));
	/* What was asked (callers leave room to spare; a full ring refuses
	 * submits, -EAGAIN, which costs only a stash), no more: every event
	 * counts against the system-wide fs.aio-max-nr, which queues use by
	 * default and which other programs' AIO shares. */
	unsigned int nr = depth < 64 ? 64 : depth > 16384 ? 16384 : depth;
	long ret;

	(void)be;
	if (!ac || AIO_GETEVENTS < 0) {
		*err = ac ? -EOPNOTSUPP : -ENOMEM;
		free(ac);
		return NULL;
	}
	ret = aio_call(SYS_io_setup, nr, (long)&ac->ctx, 0, 0, 0);
	/* Over fs.aio-max-nr: what was asked, if that is less. */
	if (ret == -EAGAIN && (depth < 8 ? 8 : depth) < nr)
		ret = aio_call(SYS_io_setup, depth < 8 ? 8 : depth,
			       (long)&ac->ctx, 0, 0, 0);
	if (ret < 0) {
		free(ac);
		*err = (int)ret;
		return NULL;
	}
	ac->ring = (const struct aio_ring_head *)(uintptr_t)ac->ctx;
	if (ac->ring->magic != AIO_RING_MAGIC ||
	    ac->ring->header_length != sizeof(*ac->ring))
		ac->ring = NULL;
	pthread_mutex_init(&ac->stash_lock, NULL);
	return &ac->chan;
}

static void iocb_prep(struct iocb *cb, struct wtio_io_req *req)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = (uint64_t)(uintptr_t)req;
	cb->aio_fildes = (uint32_t)req->fd;
	switch (req->op) {
	case WTIO_IO_READ:
	case WTIO_IO_WRITE:
		cb->aio_offset = req->off;
		if (req->iovcnt == 1) {
			cb->aio_lio_opcode = req->op == WTIO_IO_READ ?
					     IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
			cb->aio_buf = (uint64_t)(uintptr_t)req->iov[0].iov_base;
			cb->aio_nbytes = req->iov[0].iov_len;
		} else {
			cb->aio_lio_opcode = req->op == WTIO_IO_READ ?
					     IOCB_CMD_PREADV : IOCB_CMD_PWRITEV;
			cb->aio_buf = (uint64_t)(uintptr_t)req->iov;
			cb->aio_nbytes = (uint64_t)req->iovcnt;
		}
		/* Like psync and io_uring: write flags (RWF_DSYNC, ...). */
		if (req->op == WTIO_IO_WRITE)
			cb->aio_rw_flags = req->rw_flags;
		break;
	case WTIO_IO_FSYNC:
		cb->aio_lio_opcode = IOCB_CMD_FSYNC;
		break;
	case WTIO_IO_FDATASYNC:
		cb->aio_lio_opcode = IOCB_CMD_FDSYNC;
		break;
	}
}

/* Room in the stash for n more; false when it cannot grow. */
static bool stash_room(struct aio_chan *ac, unsigned int n)
{
	struct io_event *q;
	unsigned int cap, i;

	if (ac->stash_count + n <= ac->stash_cap)
		return true;
	cap = ac->stash_cap ? 2 * ac->stash_cap : 4 * AIO_BATCH;
	while (cap < ac->stash_count + n)
		cap *= 2;
	q = malloc(cap * sizeof(*q));
	if (!q)
		return false;
	for (i = 0; i < ac->stash_count; i++)
		q[i] = ac->stash[(ac->stash_head + i) % ac->stash_cap];
	free(ac->stash);
	ac->stash = q;
	ac->stash_cap = cap;
	ac->stash_head = 0;
	return true;
}

/*
 * io_submit said -EAGAIN: the ring is full of completions nobody took
 * yet, or the kernel is short of memory. Take what is there into the
 * stash (the next reap delivers it; not here, where the submitter may
 * hold locks that an end_io takes), else wait a little for I/O in flight
 * to end or a reaper to come.
 */
static void make_room(struct aio_chan *ac, long *backoff_ns)
{
	struct io_event ev[AIO_BATCH];
	struct timespec zero = { 0, 0 }, nap;
	long got = 0, i;

	pthread_mutex_lock(&ac->stash_lock);
	if (ring_ready(ac) && stash_room(ac, AIO_BATCH)) {
		got = aio_getevents(ac, 0, ev, &zero);
		for (i = 0; i < got; i++)
			ac->stash[(ac->stash_head + ac->stash_count++) %
				  ac->stash_cap] = ev[i];
		if (got > 0)
			atomic_fetch_add(&ac->stashed, (unsigned int)got);
	}
	pthread_mutex_unlock(&ac->stash_lock);
	if (got > 0) {
		*backoff_ns = 0;
		return;
	}
	*backoff_ns = *backoff_ns ? *backoff_ns * 2 : 1000;
	if (*backoff_ns > 1000 * 1000)
		*backoff_ns = 1000 * 1000;
	nap.tv_sec = 0;
	nap.tv_nsec = *backoff_ns;
	nanosleep(&nap, NULL);
}

/*
 * Never fails once the requests are well formed: a request the kernel
 * refuses (io_submit's error for the first of a batch: a bad descriptor,
 * flags this kernel lacks) was not started and completes here with that
 * error; those after it still go.
 */
static int aio_chan_submit(struct wtio_io_chan *chan,
			   struct wtio_io_req **reqs, unsigned int nr)
{
	struct aio_chan *ac = (struct aio_chan *)chan;
	struct iocb cbs[AIO_BATCH], *ptrs[AIO_BATCH];
	unsigned int done = 0, n, i;
	long backoff = 0, ret;

	while (done < nr) {
		n = nr - done < AIO_BATCH ? nr - done : AIO_BATCH;
		for (i = 0; i < n; i++) {
			iocb_prep(&cbs[i], reqs[done + i]);
			ptrs[i] = &cbs[i];
		}
		/* Before the kernel can complete them, so a reaper never
		 * sees the count below what the ring holds. */
		atomic_fetch_add(&ac->inflight, n);
		atomic_fetch_add_explicit(&ac->published, 1,
					  memory_order_release);
		ret = aio_call(SYS_io_submit, (long)ac->ctx, (long)n,
			       (long)ptrs, 0, 0);
		if (ret > 0) {
			/* Those submitted may be delivered already: only
			 * the array of pointers is looked at again. */
			if ((unsigned int)ret < n)
				atomic_fetch_sub(&ac->inflight,
						 n - (unsigned int)ret);
			done += (unsigned int)ret;
			continue;
		}
		atomic_fetch_sub(&ac->inflight, n);
		if (ret == -EAGAIN || ret == 0) {
			make_room(ac, &backoff);
			continue;
		}
		if (ret == -EINTR)
			continue;
		reqs[done]->end_io(reqs[done], ret);
		done++;
	}
	return 0;
}

static void deliver(struct aio_chan *ac, const struct io_event *ev, long got)
{
	long i;

	atomic_fetch_sub(&ac->inflight, (unsigned int)got);
	(void)atomic_load_explicit(&ac->published, memory_order_acquire);
	for (i = 0; i < got; i++) {
		struct wtio_io_req *req = (struct wtio_io_req *)(uintptr_t)
					  ev[i].data;

		req->end_io(req, (ssize_t)ev[i].res);
	}
}

/* Deliver what is stashed and what the ring holds now, a batch at a
 * time, without waiting. */
static int drain(struct aio_chan *ac)
{
	struct io_event ev[AIO_BATCH];
	struct timespec zero = { 0, 0 };
	long got;
	int n = 0;

	while (atomic_load(&ac->stashed)) {
		got = 0;
		pthread_mutex_lock(&ac->stash_lock);
		while (got < AIO_BATCH && ac->stash_count) {
			ev[got++] = ac->stash[ac->stash_head];
			ac->stash_head = (ac->stash_head + 1) % ac->stash_cap;
			ac->stash_count--;
		}
		atomic_fetch_sub(&ac->stashed, (unsigned int)got);
		pthread_mutex_unlock(&ac->stash_lock);
		deliver(ac, ev, got);
		n += (int)got;
	}
	do {
		if (!ring_ready(ac))
			break;
		got = aio_getevents(ac, 0, ev, &zero);
		if (got <= 0)
			break;
		deliver(ac, ev, got);
		n += (int)got;
	} while (got == AIO_BATCH);
	return n;
}

/*
 * Several threads may reap at once: the kernel hands each event to one
 * of them. One wait at most, as for io_uring's channels: a reaper
 * returns with what it got (maybe 0), so that its caller can look again
 * at why it waits.
 */
static int aio_chan_reap(struct wtio_io_chan *chan, unsigned int min,
			 const struct timespec *timeout)
{
	struct aio_chan *ac = (struct aio_chan *)chan;
	struct io_event ev[AIO_BATCH];
	struct timespec ts;
	bool waited = false;
	long got;
	int n = 0;

	for (;;) {
		n += drain(ac);
		if ((unsigned int)n >= min || waited)
			return n;
		if (timeout)
			ts = *timeout;
		got = aio_getevents(ac, 1, ev, timeout ? &ts : NULL);
		waited = true;
		if (got > 0) {
			deliver(ac, ev, got);
			n += (int)got;
		} else if (got < 0 && got != -EINTR) {
			return n ? n : (int)got;
		}
	}
}

static unsigned int aio_chan_inflight(struct wtio_io_chan *chan)
{
	return atomic_load(&((struct aio_chan *)chan)->inflight);
}

static void aio_chan_close(struct wtio_io_chan *chan)
{
	struct aio_chan *ac = (struct aio_chan *)chan;

	/* Everything was reaped: nothing for io_destroy to wait for. */
	aio_call(SYS_io_destroy, (long)ac->ctx, 0, 0, 0, 0);
	pthread_mutex_destroy(&ac->stash_lock);
	free(ac->stash);
	free(ac);
}

/* A channel provider, not a backend: only the chan_* ops are set. */
const struct wtio_io_ops wtio_io_aio_chan_ops = {
	.version	= WTIO_IO_OPS_VERSION,
	.name		= "aio",
	.caps		= WTIO_IO_CAP_CHANNELS | WTIO_IO_CAP_ASYNC,
	.chan_open	= wtio_aio_chan_open,
	.chan_submit	= aio_chan_submit,
	.chan_reap	= aio_chan_reap,
	.chan_close	= aio_chan_close,
	.chan_inflight	= aio_chan_inflight,
};
