/* SPDX-License-Identifier: MIT */
/*
 * io_priv.h - what the built-in backends share with each other, not with
 * the cache core: per-(thread, backend) state and the queue of finished
 * requests waiting for reap.
 */
#ifndef WTIO_IO_PRIV_H
#define WTIO_IO_PRIV_H

#include "ops.h"

/*
 * Per-thread state of one backend instance ("domain"). A process may run
 * several contexts, each with its own backend, and every thread that does
 * I/O through one needs its own queue or ring there. Each thread keeps a
 * list of its states (one per domain it used); each domain keeps a list of
 * the states of all threads, so that whichever of thread exit and backend
 * teardown comes first frees the resources, and the other one does not.
 *
 * Embed struct wtio_io_tstate first in the backend's own per-thread struct,
 * allocated with malloc(): its memory is freed by the owning thread (at
 * exit, or when it finds the state detached), its resources by release().
 */
struct wtio_io_tdom;

struct wtio_io_tstate {
	struct wtio_io_tstate *tnext;	/* the owning thread's list */
	struct wtio_io_tstate *dnext;	/* the domain's list */
	struct wtio_io_tstate **dpprev;
	struct wtio_io_tdom *dom;	/* NULL once released by teardown */
};

struct wtio_io_tdom {
	struct wtio_io_tstate *head;
	/*
	 * Free what a state holds, but not the state itself. Called with the
	 * global state lock held, either in the owning thread as it exits or
	 * in the thread tearing the backend down.
	 */
	void (*release)(struct wtio_io_tstate *ts);
};

/* This thread's state in dom, or NULL. Lock-free. */
struct wtio_io_tstate *wtio_io_tstate_find(struct wtio_io_tdom *dom);
/* Attach a new, initialised state of this thread to dom. 0 or -errno. */
int wtio_io_tstate_add(struct wtio_io_tdom *dom, struct wtio_io_tstate *ts);
/* Teardown: release every thread's state in dom. No I/O may follow. */
void wtio_io_tdom_release_all(struct wtio_io_tdom *dom);

/*
 * A growable circular queue of finished requests waiting for reap(). Reserve
 * before queueing, so that a submit can fail before it has done anything.
 */
struct wtio_io_done {
	struct wtio_io_req *req;
	ssize_t res;
};

struct wtio_io_doneq {
	struct wtio_io_done *q;
	unsigned int head;
	unsigned int count;
	unsigned int cap;
};

int wtio_io_doneq_reserve(struct wtio_io_doneq *dq, unsigned int nr);
void wtio_io_doneq_free(struct wtio_io_doneq *dq);

static inline void wtio_io_doneq_push(struct wtio_io_doneq *dq,
				      struct wtio_io_req *req, ssize_t res)
{
	unsigned int tail = (dq->head + dq->count) % dq->cap;

	dq->q[tail].req = req;
	dq->q[tail].res = res;
	dq->count++;
}

/* Pop the oldest; copy out first, since end_io may push and regrow. */
static inline int wtio_io_doneq_pop(struct wtio_io_doneq *dq,
				    struct wtio_io_done *d)
{
	if (!dq->count)
		return 0;
	*d = dq->q[dq->head];
	dq->head = (dq->head + 1) % dq->cap;
	dq->count--;
	return 1;
}

#endif /* WTIO_IO_PRIV_H */
