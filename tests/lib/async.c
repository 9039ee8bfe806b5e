/* SPDX-License-Identifier: MIT */
/*
 * async.c - the fault backend's asynchronous mode (wtio_fault_set_async):
 * channels, asynchronous per-thread submission and a plug, as io_uring
 * has them, over the same rules, holds and record, so that what the core
 * builds on those (queues and their helping reap, the append plug,
 * asynchronous readahead, batched writeback, plugged submit-and-wait)
 * runs under injected faults and crash replay.
 *
 * Each request is traced and matched against the rules when it is
 * submitted (so skip counts follow submission order), then done by a
 * pool of worker threads that grows while every worker is busy (a held
 * I/O keeps its worker), so requests complete in any order. A finished
 * request goes to its sink: the submitting thread's (reaped with reap,
 * as io_uring's ring of that thread) or its channel's (chan_reap, from
 * any thread). A plugged thread's requests wait in its state until its
 * next reap or its unplug.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault_priv.h"
#include "io/io_priv.h"

#define FA_MAX_WORKERS 128

struct fa_node;

/* Where finished requests wait for a reap. */
struct fa_sink {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fa_node *head, *tail;
	unsigned int pending;		/* submitted, not yet taken off */
};

struct fa_node {
	struct wtio_io_req *req;
	struct fa_sink *sink;
	bool faulted;
	struct wtio_fault_rule hit;
	size_t len;
	ssize_t res;
	struct fa_node *next;
};

/* The backend instance (be->private). */
struct fa_dom {
	struct wtio_io_tdom dom;	/* first: per-thread states */
	struct wtio_io_backend *be;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* work queued, or stop */
	struct fa_node *work, *work_tail;
	/* Queued; waiting for work; started, not yet looking for it. */
	unsigned int nr_work, nr_idle, nr_starting, nr_workers;
	bool stop;
	pthread_t workers[FA_MAX_WORKERS];
};

/* One thread's state: its sink and what its plug holds back. */
struct fa_ts {
	struct wtio_io_tstate ts;	/* first */
	struct fa_sink sink;
	struct fa_node *plugged, *plugged_tail;
	unsigned int nr_plugged;
	int plug_depth;
};

struct fa_chan {
	struct wtio_io_chan chan;	/* first */
	struct fa_sink sink;
};

static void sink_init(struct fa_sink *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
}

static void sink_destroy(struct fa_sink *s)
{
	struct fa_node *n;

	while ((n = s->head)) {
		s->head = n->next;
		free(n);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
}

static void *fa_worker(void *arg)
{
	struct fa_dom *d = arg;
	struct fa_node *n;
	struct fa_sink *s;
	int slot;

	pthread_mutex_lock(&d->lock);
	d->nr_starting--;
	for (;;) {
		while (!d->work && !d->stop) {
			d->nr_idle++;
			pthread_cond_wait(&d->cond, &d->lock);
			d->nr_idle--;
		}
		if (!d->work)
			break;
		n = d->work;
		d->work = n->next;
		if (!d->work)
			d->work_tail = NULL;
		d->nr_work--;
		pthread_mutex_unlock(&d->lock);

		slot = fault_writer_enter(d->be->arg, n->req);
		n->res = fault_perform(d->be, n->req,
				       n->faulted ? &n->hit : NULL, n->len);
		fault_writer_leave(d->be->arg, slot);
		s = n->sink;
		n->next = NULL;
		pthread_mutex_lock(&s->lock);
		if (s->tail)
			s->tail->next = n;
		else
			s->head = n;
		s->tail = n;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);

		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* Hand a list of admitted requests to the workers, starting one more
 * while there is more work than idle workers. */
static void fa_start(struct fa_dom *d, struct fa_node *head,
		     struct fa_node *tail, unsigned int nr)
{
	if (!head)
		return;
	pthread_mutex_lock(&d->lock);
	if (d->work_tail)
		d->work_tail->next = head;
	else
		d->work = head;
	d->work_tail = tail;
	d->nr_work += nr;
	while (d->nr_work > d->nr_idle + d->nr_starting &&
	       d->nr_workers < FA_MAX_WORKERS &&
	       !pthread_create(&d->workers[d->nr_workers], NULL, fa_worker,
			       d)) {
		d->nr_starting++;
		d->nr_workers++;
	}
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* Admitted nodes for nr requests bound for sink, linked in order; NULL
 * when memory ran out (nothing admitted then). */
static struct fa_node *fa_admit(struct fa_dom *d, struct fa_sink *sink,
				bool chan, struct wtio_io_req **reqs,
				unsigned int nr, struct fa_node **tailp)
{
	struct fa_node *head = NULL, *tail = NULL, *n;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		n = calloc(1, sizeof(*n));
		if (!n) {
			while ((n = head)) {
				head = n->next;
				free(n);
			}
			return NULL;
		}
		if (tail)
			tail->next = n;
		else
			head = n;
		tail = n;
	}
	for (n = head, i = 0; n; n = n->next, i++) {
		n->req = reqs[i];
		n->sink = sink;
		n->faulted = fault_admit(d->be->arg, reqs[i], chan, &n->hit,
					 &n->len);
	}
	pthread_mutex_lock(&sink->lock);
	sink->pending += nr;
	pthread_mutex_unlock(&sink->lock);
	*tailp = tail;
	return head;
}

static void fa_ts_release(struct wtio_io_tstate *ts)
{
	struct fa_ts *t = (struct fa_ts *)ts;
	unsigned int never_started = 0, arrived;
	struct fa_node *n;

	while ((n = t->plugged)) {
		t->plugged = n->next;
		never_started += n->sink == &t->sink;
		free(n);
	}
	/* A worker still performing one of this thread's requests delivers
	 * it into this sink: wait for it before the sink goes (a thread that
	 * exits with I/O in flight; at teardown the workers are done). */
	pthread_mutex_lock(&t->sink.lock);
	for (;;) {
		arrived = 0;
		for (n = t->sink.head; n; n = n->next)
			arrived++;
		if (arrived + never_started >= t->sink.pending)
			break;
		pthread_cond_wait(&t->sink.cond, &t->sink.lock);
	}
	pthread_mutex_unlock(&t->sink.lock);
	sink_destroy(&t->sink);
}

static struct fa_ts *fa_ts_get(struct wtio_io_backend *be, bool create)
{
	struct fa_dom *d = be->private;
	struct fa_ts *t = (struct fa_ts *)wtio_io_tstate_find(&d->dom);

	if (t || !create)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	sink_init(&t->sink);
	if (wtio_io_tstate_add(&d->dom, &t->ts)) {
		sink_destroy(&t->sink);
		free(t);
		return NULL;
	}
	return t;
}

static int fa_setup(struct wtio_io_backend *be)
{
	struct fa_dom *d;

	if (!be->arg)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dom.release = fa_ts_release;
	d->be = be;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	be->private = d;
	return 0;
}

static void fa_teardown(struct wtio_io_backend *be)
{
	struct fa_dom *d = be->private;
	unsigned int i;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < d->nr_workers; i++)
		pthread_join(d->workers[i], NULL);
	wtio_io_tdom_release_all(&d->dom);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
	be->private = NULL;
}

/* Send what this thread's plug holds back. */
static void fa_unplug_send(struct fa_dom *d, struct fa_ts *t)
{
	struct fa_node *head = t->plugged, *tail = t->plugged_tail;
	unsigned int nr = t->nr_plugged;

	t->plugged = t->plugged_tail = NULL;
	t->nr_plugged = 0;
	fa_start(d, head, tail, nr);
}

static int fa_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		     unsigned int nr)
{
	struct fa_dom *d = be->private;
	struct fa_ts *t = fa_ts_get(be, true);
	struct fa_node *head, *tail;

	if (!t)
		return -ENOMEM;
	head = fa_admit(d, &t->sink, false, reqs, nr, &tail);
	if (!head)
		return -ENOMEM;
	if (t->plug_depth) {
		if (t->plugged_tail)
			t->plugged_tail->next = head;
		else
			t->plugged = head;
		t->plugged_tail = tail;
		t->nr_plugged += nr;
		return 0;
	}
	fa_start(d, head, tail, nr);
	return 0;
}

/* Take up to max finished requests off s, waiting (until ts, NULL: for
 * ever) while there is none and wait says so; returns how many were
 * delivered, their end_io called here. -ETIME if it timed out. */
static int sink_deliver(struct fa_sink *s, unsigned int max, bool wait,
			const struct timespec *ts)
{
	struct fa_node *n;
	unsigned int done = 0;

	while (done < max) {
		pthread_mutex_lock(&s->lock);
		while (!s->head && wait) {
			if (!ts) {
				pthread_cond_wait(&s->cond, &s->lock);
			} else if (pthread_cond_timedwait(&s->cond, &s->lock,
							  ts) == ETIMEDOUT) {
				pthread_mutex_unlock(&s->lock);
				return done ? (int)done : -ETIME;
			}
		}
		n = s->head;
		if (!n) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		s->head = n->next;
		if (!s->head)
			s->tail = NULL;
		s->pending--;
		pthread_mutex_unlock(&s->lock);
		n->req->end_io(n->req, n->res);
		free(n);
		done++;
	}
	return (int)done;
}

static void deadline(struct timespec *abs, const struct timespec *rel)
{
	clock_gettime(CLOCK_REALTIME, abs);
	abs->tv_sec += rel->tv_sec;
	abs->tv_nsec += rel->tv_nsec;
	if (abs->tv_nsec >= 1000000000) {
		abs->tv_sec++;
		abs->tv_nsec -= 1000000000;
	}
}

static int fa_reap(struct wtio_io_backend *be, unsigned int min_complete,
		   const struct timespec *timeout)
{
	struct fa_ts *t = fa_ts_get(be, false);
	struct timespec abs;
	unsigned int avail = 0, target;
	struct fa_node *n;
	int got, done;

	if (!t)
		return 0;
	/* Submit and wait in one go, as io_uring_submit_and_wait. */
	fa_unplug_send(be->private, t);
	if (timeout)
		deadline(&abs, timeout);
	pthread_mutex_lock(&t->sink.lock);
	for (n = t->sink.head; n; n = n->next)
		avail++;
	/* Waiting for more than is in flight would never end. */
	target = min_complete < t->sink.pending ? min_complete :
						  t->sink.pending;
	pthread_mutex_unlock(&t->sink.lock);
	/* What is there now, then what end_io resubmits only as far as
	 * min asks. */
	got = sink_deliver(&t->sink, avail, false, NULL);
	done = got > 0 ? got : 0;
	while ((unsigned int)done < target) {
		got = sink_deliver(&t->sink, target - (unsigned int)done,
				   true, timeout ? &abs : NULL);
		if (got < 0)
			return -ETIME;
		done += got;
	}
	return done;
}

static unsigned int fa_inflight(struct wtio_io_backend *be)
{
	struct fa_ts *t = fa_ts_get(be, false);
	unsigned int n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->sink.lock);
	n = t->sink.pending;
	pthread_mutex_unlock(&t->sink.lock);
	return n;
}

static void fa_plug(struct wtio_io_backend *be, bool on)
{
	struct fa_ts *t = fa_ts_get(be, true);

	if (!t)
		return;
	if (on) {
		t->plug_depth++;
		return;
	}
	if (t->plug_depth > 0 && --t->plug_depth == 0)
		fa_unplug_send(be->private, t);
}

static struct wtio_io_chan *fa_chan_open(struct wtio_io_backend *be,
					 unsigned int depth, int *err)
{
	struct fa_chan *c = calloc(1, sizeof(*c));

	(void)depth;
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	sink_init(&c->sink);
	return &c->chan;
}

static int fa_chan_submit(struct wtio_io_chan *chan, struct wtio_io_req **reqs,
			  unsigned int nr)
{
	struct fa_chan *c = (struct fa_chan *)chan;
	struct fa_dom *d = chan->be->private;
	struct fa_node *head, *tail;
	unsigned int i;

	head = fa_admit(d, &c->sink, true, reqs, nr, &tail);
	if (!head) {
		/* Never refused: completed with the error, here. */
		for (i = 0; i < nr; i++)
			reqs[i]->end_io(reqs[i], -ENOMEM);
		return 0;
	}
	fa_start(d, head, tail, nr);
	return 0;
}

static int fa_chan_reap(struct wtio_io_chan *chan, unsigned int min,
			const struct timespec *timeout)
{
	struct fa_chan *c = (struct fa_chan *)chan;
	struct timespec abs;
	int got;

	if (timeout)
		deadline(&abs, timeout);
	/* One wait, then whatever is there (others may reap it first). */
	got = sink_deliver(&c->sink, 1, min > 0, timeout ? &abs : NULL);
	if (got <= 0)
		return 0;
	return got + sink_deliver(&c->sink, UINT32_MAX, false, NULL);
}

static void fa_chan_close(struct wtio_io_chan *chan)
{
	struct fa_chan *c = (struct fa_chan *)chan;

	sink_destroy(&c->sink);
	free(c);
}

static unsigned int fa_chan_inflight(struct wtio_io_chan *chan)
{
	struct fa_chan *c = (struct fa_chan *)chan;
	unsigned int n;

	pthread_mutex_lock(&c->sink.lock);
	n = c->sink.pending;
	pthread_mutex_unlock(&c->sink.lock);
	return n;
}

const struct wtio_io_ops wtio_io_fault_async_ops = {
	.version	= WTIO_IO_OPS_VERSION,
	.name		= "fault-async",
	.caps		= WTIO_IO_CAP_CHANNELS | WTIO_IO_CAP_ASYNC |
			  WTIO_IO_CAP_ATOMIC,
	.setup		= fa_setup,
	.teardown	= fa_teardown,
	.submit		= fa_submit,
	.reap		= fa_reap,
	.inflight	= fa_inflight,
	.set_size	= fault_set_size,
	.chan_open	= fa_chan_open,
	.chan_submit	= fa_chan_submit,
	.chan_reap	= fa_chan_reap,
	.chan_close	= fa_chan_close,
	.chan_inflight	= fa_chan_inflight,
	.plug		= fa_plug,
};
