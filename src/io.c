/* SPDX-License-Identifier: MIT */
/*
 * io.c - backend selection, synchronous helpers and the per-thread state
 * bookkeeping that the psync and io_uring backends share.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wtio_config.h"
#include "wtio.h"
#include "io_priv.h"

/*
 * One process-wide key holds the head of each thread's state list; its
 * destructor is what frees a thread's rings and queues when it exits.
 * Domain lists are changed under one global lock rather than a lock inside
 * each backend, because an exiting thread may race with the teardown that
 * frees that backend, and must not touch a lock inside freed memory.
 */
static pthread_key_t tstate_key;
static pthread_once_t tstate_once = PTHREAD_ONCE_INIT;
static int tstate_key_err;
static pthread_mutex_t tstate_lock = PTHREAD_MUTEX_INITIALIZER;

static void tstate_unlink_dom(struct wtio_io_tstate *ts)
{
	if (ts->dnext)
		ts->dnext->dpprev = ts->dpprev;
	*ts->dpprev = ts->dnext;
	ts->dnext = NULL;
	ts->dpprev = NULL;
}

static void tstate_thread_exit(void *arg)
{
	struct wtio_io_tstate *ts = arg, *next;

	for (; ts; ts = next) {
		next = ts->tnext;
		pthread_mutex_lock(&tstate_lock);
		if (ts->dom) {
			tstate_unlink_dom(ts);
			ts->dom->release(ts);
		}
		pthread_mutex_unlock(&tstate_lock);
		free(ts);
	}
}

/* A child of fork() must not inherit tstate_lock held by a parent
 * thread that does not exist in the child (the preload shim forks under
 * programs that use threads). */
static void tstate_atfork_prepare(void)
{
	pthread_mutex_lock(&tstate_lock);
}

static void tstate_atfork_release(void)
{
	pthread_mutex_unlock(&tstate_lock);
}

static void tstate_key_create(void)
{
	tstate_key_err = -pthread_key_create(&tstate_key, tstate_thread_exit);
	pthread_atfork(tstate_atfork_prepare, tstate_atfork_release,
		       tstate_atfork_release);
}

struct wtio_io_tstate *wtio_io_tstate_find(struct wtio_io_tdom *dom)
{
	struct wtio_io_tstate *head, *ts, **pp;
	struct wtio_io_tdom *d;
	bool pruned = false;

	if (pthread_once(&tstate_once, tstate_key_create) || tstate_key_err)
		return NULL;
	head = pthread_getspecific(tstate_key);
	pp = &head;
	while ((ts = *pp) != NULL) {
		/* Pairs with the release store in wtio_io_tdom_release_all(). */
		d = __atomic_load_n(&ts->dom, __ATOMIC_ACQUIRE);
		if (d == dom)
			break;
		if (!d) {
			/* A torn-down backend's leftover: only we still see it. */
			*pp = ts->tnext;
			free(ts);
			pruned = true;
			continue;
		}
		pp = &ts->tnext;
	}
	if (pruned)
		pthread_setspecific(tstate_key, head);
	return ts;
}

int wtio_io_tstate_add(struct wtio_io_tdom *dom, struct wtio_io_tstate *ts)
{
	int ret;

	if (pthread_once(&tstate_once, tstate_key_create))
		return -EAGAIN;
	if (tstate_key_err)
		return tstate_key_err;

	ts->tnext = pthread_getspecific(tstate_key);
	ret = pthread_setspecific(tstate_key, ts);
	if (ret)
		return -ret;

	pthread_mutex_lock(&tstate_lock);
	ts->dom = dom;
	ts->dnext = dom->head;
	if (dom->head)
		dom->head->dpprev = &ts->dnext;
	ts->dpprev = &dom->head;
	dom->head = ts;
	pthread_mutex_unlock(&tstate_lock);
	return 0;
}

void wtio_io_tdom_release_all(struct wtio_io_tdom *dom)
{
	struct wtio_io_tstate *ts;

	pthread_mutex_lock(&tstate_lock);
	while ((ts = dom->head) != NULL) {
		tstate_unlink_dom(ts);
		dom->release(ts);
		/* The owner frees ts once it sees this; see tstate_find(). */
		__atomic_store_n(&ts->dom, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&tstate_lock);
}

int wtio_io_doneq_reserve(struct wtio_io_doneq *dq, unsigned int nr)
{
	struct wtio_io_done *q;
	unsigned int cap, i;

	if (dq->count + nr <= dq->cap)
		return 0;
	cap = dq->cap ? dq->cap : 64;
	while (cap < dq->count + nr) {
		if (cap > (1u << 28))
			return -ENOMEM;
		cap *= 2;
	}
	q = malloc(cap * sizeof(*q));
	if (!q)
		return -ENOMEM;
	/* Unwrap into the new array: head restarts at 0. */
	for (i = 0; i < dq->count; i++)
		q[i] = dq->q[(dq->head + i) % dq->cap];
	free(dq->q);
	dq->q = q;
	dq->head = 0;
	dq->cap = cap;
	return 0;
}

void wtio_io_doneq_free(struct wtio_io_doneq *dq)
{
	free(dq->q);
	memset(dq, 0, sizeof(*dq));
}

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

static int backend_try(struct wtio_io_backend *be,
		       const struct wtio_io_ops *ops)
{
	int ret;

	be->ops = ops;
	be->private = NULL;
	ret = ops->setup(be);
	if (ret)
		be->ops = NULL;
	return ret;
}

int wtio_io_backend_init(struct wtio_io_backend *be, unsigned int kind,
			 void *arena, size_t arena_size, unsigned int flags,
			 struct wtio_fault *fault)
{
	int ret;

	if (!be)
		return -EINVAL;
	memset(be, 0, sizeof(*be));
	be->arena = arena;
	be->arena_size = arena ? arena_size : 0;
	be->flags = flags;

	switch (kind) {
	case WTIO_BACKEND_AUTO:
#if WTIO_HAVE_IO_URING
		/* Anything io_uring cannot do here, psync can. */
		if (backend_try(be, &wtio_io_uring_ops) == 0)
			return 0;
#endif
		return backend_try(be, &wtio_io_psync_ops);
	case WTIO_BACKEND_IO_URING:
#if WTIO_HAVE_IO_URING
		ret = backend_try(be, &wtio_io_uring_ops);
		/* Out of memory is not "unsupported": let the caller see it. */
		if (ret && ret != -ENOMEM)
			ret = -EOPNOTSUPP;
		return ret;
#else
		return -EOPNOTSUPP;
#endif
	case WTIO_BACKEND_PSYNC:
		return backend_try(be, &wtio_io_psync_ops);
	case WTIO_BACKEND_FAULT:
		if (!fault)
			return -EINVAL;
		be->fault = fault;
		ret = backend_try(be, &wtio_io_fault_ops);
		if (ret)
			be->fault = NULL;
		return ret;
	}
	return -EINVAL;
}

void wtio_io_backend_exit(struct wtio_io_backend *be)
{
	if (!be || !be->ops)
		return;
	be->ops->teardown(be);
	be->ops = NULL;
	be->private = NULL;
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
	int ret = be->ops->reap(be, 1, NULL);

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

	req->end_io = sync_end_io;
	req->private = &w;
	ret = be->ops->submit(be, reqs, 1);
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
	struct iovec vec[WTIO_IO_MAX_IOVECS];
	struct wtio_io_req req;
	ssize_t done = 0, res;
	int i = 0;

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

	/* Our own copy: the remainder is described by trimming it. */
	memcpy(vec, iov, iovcnt * sizeof(*iov));
	while (i < iovcnt) {
		req.off = off + done;
		req.iov = &vec[i];
		req.iovcnt = iovcnt - i;
		res = wtio_io_sync(be, &req);
		if (res < 0)
			return done ? done : res;
		/* EOF for reads; for writes, retrying cannot make progress. */
		if (res == 0)
			break;
		done += res;
		while (res > 0 && i < iovcnt) {
			if ((size_t)res >= vec[i].iov_len) {
				res -= vec[i].iov_len;
				i++;
			} else {
				vec[i].iov_base = (char *)vec[i].iov_base + res;
				vec[i].iov_len -= res;
				res = 0;
			}
		}
		/* Skip empty tails so a finished request is not reissued. */
		while (i < iovcnt && vec[i].iov_len == 0)
			i++;
	}
	return done;
}
