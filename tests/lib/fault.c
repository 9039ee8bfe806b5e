/* SPDX-License-Identifier: MIT */
/*
 * fault.c - the fault injector's object: its life, its rules and the
 * matching of an I/O against them, and the holds that park an I/O until
 * the test releases it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault_priv.h"

struct wtio_fault *wtio_fault_create(void)
{
	struct wtio_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (pthread_mutex_init(&f->lock, NULL)) {
		free(f);
		return NULL;
	}
	if (pthread_cond_init(&f->held_cond, NULL)) {
		pthread_mutex_destroy(&f->lock);
		free(f);
		return NULL;
	}
	/* So that a test written for the synchronous mode runs over the
	 * asynchronous one too, unchanged (meson's *_async tests). */
	f->async = getenv("WTIO_FAULT_ASYNC") &&
		   !strcmp(getenv("WTIO_FAULT_ASYNC"), "1");
	return f;
}

void wtio_fault_destroy(struct wtio_fault *fault)
{
	size_t i;

	if (!fault)
		return;
	for (i = 0; i < fault->nr_ev; i++)
		free(fault->ev[i].data);
	free(fault->ev);
	free(fault->trace);
	free(fault->rules);
	free(fault->hold_state);
	pthread_cond_destroy(&fault->held_cond);
	pthread_mutex_destroy(&fault->lock);
	free(fault);
}

int wtio_fault_add_rule(struct wtio_fault *fault,
				    const struct wtio_fault_rule *rule)
{
	struct fault_rule_state *r;
	size_t cap;
	int ret = 0;

	if (!fault || !rule || !rule->ops ||
	    (rule->ops & ~(WTIO_FAULT_READ | WTIO_FAULT_WRITE |
			   WTIO_FAULT_FLUSH)) ||
	    rule->start < 0 || rule->end < 0 ||
	    (rule->end && rule->end <= rule->start) || rule->error < 0)
		return -EINVAL;

	pthread_mutex_lock(&fault->lock);
	if (fault->nr_rules == fault->cap_rules) {
		cap = fault->cap_rules ? fault->cap_rules * 2 : 8;
		r = realloc(fault->rules, cap * sizeof(*r));
		if (!r) {
			ret = -ENOMEM;
			goto out;
		}
		fault->rules = r;
		fault->cap_rules = cap;
	}
	r = &fault->rules[fault->nr_rules++];
	memset(r, 0, sizeof(*r));
	r->r = *rule;
out:
	pthread_mutex_unlock(&fault->lock);
	return ret;
}

void wtio_fault_clear_rules(struct wtio_fault *fault)
{
	if (!fault)
		return;
	pthread_mutex_lock(&fault->lock);
	fault->nr_rules = 0;
	pthread_mutex_unlock(&fault->lock);
}

uint64_t wtio_fault_injected(const struct wtio_fault *fault)
{
	return fault ? __atomic_load_n(&fault->injected, __ATOMIC_RELAXED) : 0;
}

static bool rule_matches(const struct wtio_fault_rule *r, uint32_t op,
			 const struct wtio_io_req *req, size_t len)
{
	off_t end;

	if (!(r->ops & op))
		return false;
	/* A flush covers the whole file, so any range overlaps it. */
	if (op == WTIO_FAULT_FLUSH)
		return true;
	end = req->off + (off_t)(len ? len : 1);
	return (!r->end || req->off < r->end) && end > r->start;
}

/* The first rule that faults this I/O (counted as injected), into *hit;
 * under the lock. */
bool fault_match(struct wtio_fault *f, uint32_t op,
		 const struct wtio_io_req *req, size_t len,
		 struct wtio_fault_rule *hit)
{
	struct fault_rule_state *rs;
	size_t i;

	for (i = 0; i < f->nr_rules; i++) {
		rs = &f->rules[i];
		if (!rule_matches(&rs->r, op, req, len))
			continue;
		if (rs->seen < rs->r.skip) {
			rs->seen++;
			continue;
		}
		if (rs->r.count && rs->faulted >= rs->r.count)
			continue;
		rs->faulted++;
		__atomic_store_n(&f->injected, f->injected + 1,
				 __ATOMIC_RELAXED);
		*hit = rs->r;
		return true;
	}
	return false;
}

/* The absolute time timeout_ms from now (CLOCK_REALTIME). */
static void deadline_in(struct timespec *ts, unsigned int timeout_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

uint64_t wtio_fault_held(struct wtio_fault *fault)
{
	uint64_t n;

	if (!fault)
		return 0;
	pthread_mutex_lock(&fault->lock);
	n = fault->nr_held;
	pthread_mutex_unlock(&fault->lock);
	return n;
}

/* Wait, under the lock, until done(f, arg) or the deadline timeout_ms
 * from now: 0 or -ETIMEDOUT. */
static int held_wait_until(struct wtio_fault *f,
			   bool (*done)(const struct wtio_fault *, uint64_t),
			   uint64_t arg, unsigned int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	deadline_in(&ts, timeout_ms);
	pthread_mutex_lock(&f->lock);
	while (!done(f, arg) && !ret)
		if (pthread_cond_timedwait(&f->held_cond, &f->lock, &ts) ==
		    ETIMEDOUT)
			ret = done(f, arg) ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static bool nr_held_reached(const struct wtio_fault *f, uint64_t n)
{
	return f->nr_held >= n;
}

int wtio_fault_wait_held(struct wtio_fault *fault, uint64_t n,
			 unsigned int timeout_ms)
{
	if (!fault)
		return -EINVAL;
	return held_wait_until(fault, nr_held_reached, n, timeout_ms);
}

void wtio_fault_release(struct wtio_fault *fault)
{
	if (!fault)
		return;
	pthread_mutex_lock(&fault->lock);
	fault->release_gen++;
	pthread_cond_broadcast(&fault->held_cond);
	pthread_mutex_unlock(&fault->lock);
}

/* Mark hold seq as state; under the lock. A state that cannot be kept
 * (no memory) only makes wtio_fault_wait_done time out. */
static void hold_mark(struct wtio_fault *f, uint64_t seq, uint8_t state)
{
	if (seq >= f->cap_hold_state) {
		size_t cap = f->cap_hold_state ? f->cap_hold_state : 64;
		uint8_t *p;

		while (cap <= seq)
			cap *= 2;
		p = realloc(f->hold_state, cap);
		if (!p)
			return;
		memset(p + f->cap_hold_state, 0, cap - f->cap_hold_state);
		f->hold_state = p;
		f->cap_hold_state = cap;
	}
	f->hold_state[seq] = state;
}

int fault_hold(struct wtio_fault *f, uint64_t *seq)
{
	struct fault_held me = { .outcome = -1 }, **pp;
	uint64_t gen;

	pthread_mutex_lock(&f->lock);
	gen = f->release_gen;
	me.seq = f->nr_holds++;
	me.next = f->held;
	f->held = &me;
	hold_mark(f, me.seq, HOLD_HELD);
	f->nr_held++;
	pthread_cond_broadcast(&f->held_cond);
	while (f->release_gen == gen && !me.go)
		pthread_cond_wait(&f->held_cond, &f->lock);
	for (pp = &f->held; *pp != &me; pp = &(*pp)->next)
		;
	*pp = me.next;
	hold_mark(f, me.seq, HOLD_GONE);
	f->nr_held--;
	pthread_mutex_unlock(&f->lock);
	*seq = me.seq;
	return me.outcome;
}

void fault_hold_done(struct wtio_fault *f, uint64_t seq)
{
	pthread_mutex_lock(&f->lock);
	hold_mark(f, seq, HOLD_DONE);
	pthread_cond_broadcast(&f->held_cond);
	pthread_mutex_unlock(&f->lock);
}

int wtio_fault_release_one(struct wtio_fault *fault, uint64_t seq,
			   int outcome)
{
	struct fault_held *h;
	int ret = -ENOENT;

	if (!fault || outcome < -1)
		return -EINVAL;
	pthread_mutex_lock(&fault->lock);
	for (h = fault->held; h; h = h->next)
		if (h->seq == seq && !h->go) {
			h->go = true;
			h->outcome = outcome;
			ret = 0;
		}
	pthread_cond_broadcast(&fault->held_cond);
	pthread_mutex_unlock(&fault->lock);
	return ret;
}

static bool hold_is_done(const struct wtio_fault *f, uint64_t seq)
{
	return seq < f->cap_hold_state && f->hold_state[seq] == HOLD_DONE;
}

int wtio_fault_wait_done(struct wtio_fault *fault, uint64_t seq,
			 unsigned int timeout_ms)
{
	if (!fault)
		return -EINVAL;
	return held_wait_until(fault, hold_is_done, seq, timeout_ms);
}
