/* SPDX-License-Identifier: MIT */
/*
 * io_tstate.c - the per-(thread, backend) state of the psync and io_uring
 * backends, freed by whichever of thread exit and backend teardown comes
 * first, and the growable queue of finished requests waiting for reap.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The fork handlers are registered when the library is loaded, ahead of
 * any other constructor's (priority 101), not at first use: glibc runs
 * prepare handlers in the reverse order of registration, and one
 * registered earlier may do I/O (the preload shim writes every served
 * file back before a fork), which needs tstate_lock for a thread's first
 * ring. Registered at first use, ours would run first, take tstate_lock,
 * and that I/O would wait for it forever.
 */
__attribute__((constructor(101))) static void tstate_ctor(void)
{
	pthread_once(&tstate_once, tstate_key_create);
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
