/* SPDX-License-Identifier: MIT */
/*
 * proc.c - the program's processes: which OFDs each names (how many of
 * its descriptors), fork tokens that hand them to a child, exec, and the
 * end of a process, heard through its pidfd (a process's references
 * outlive its connections: a thread's connection may close while the
 * process keeps its descriptors).
 *
 * A process that dies (SIGKILL mid-call included) has its references
 * dropped when its pidfd says so; a request it had in flight ends first
 * (it holds a reference of its own). What it wrote and was acknowledged
 * is in the cache: it is written back at the file's last close at the
 * latest.
 */
#include <errno.h>
#include <sys/random.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../holder_proto.h"
#include "log.h"
#include "deadline.h"
#include "orphan.h"
#include "proc.h"

/* (id is o's, copied: a request's lookup walks this array alone, not
 * the OFDs, which a process with many files open would make a cache
 * miss each) */
struct pref {
	struct hofd *o;
	uint64_t id;
	long n;
};

struct hproc {
	pid_t pid;
	int pidfd;
	pthread_mutex_t lock;	/* refs, dead */
	struct pref *refs;
	int nr, cap;
	bool dead;
	bool exec_pending;
	uint64_t known;		/* CLOCK_BOOTTIME ns when first heard of */
	/* procs_lock: */
	int users;		/* the table's (until its death) + connections */
	bool hashed;
	struct hproc *next;
};

struct htoken {
	uint64_t id;
	pid_t parent;
	uint64_t made;		/* CLOCK_BOOTTIME ns, before the fork */
	struct pref *refs;
	int nr;
	struct htoken *next;
};

#define PROC_BUCKETS 256

static pthread_mutex_t procs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t procs_cond = PTHREAD_COND_INITIALIZER;
static int nr_watched;		/* processes whose end is not yet heard */
/* dead parents' tokens being handed to their possible children: a claim
 * that finds no token waits for that (procs_cond) */
static int nr_orphaning;
static struct hproc *proc_hash[PROC_BUCKETS];
static struct htoken *tokens;
static uint64_t next_token = 1;	/* only where getrandom fails */

/* A fork token no process can guess: whoever names a pending token to
 * HELLO_CLAIM gets the parent's open files, so a counter would hand
 * them to any process of the holder's uid that counts. Positive (a
 * reply's status), not 0, and not one pending. procs_lock held. */
static uint64_t new_token_locked(void)
{
	for (;;) {
		uint64_t v;
		struct htoken *t;

		if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
			v = next_token++ * 0x9e3779b97f4a7c15ull;
		v &= (uint64_t)INT64_MAX;
		if (!v)
			continue;
		for (t = tokens; t && t->id != v; t = t->next)
			;
		if (!t)
			return v;
	}
}
static int epfd = -1;

pid_t hproc_pid(const struct hproc *p)
{
	return p->pid;
}

static struct hproc *find_locked(pid_t pid)
{
	struct hproc *p;

	for (p = proc_hash[(unsigned int)pid % PROC_BUCKETS]; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static void unhash_locked(struct hproc *p)
{
	struct hproc **pp = &proc_hash[(unsigned int)p->pid % PROC_BUCKETS];

	if (!p->hashed)
		return;
	for (; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->hashed = false;
}

static void free_proc(struct hproc *p)
{
	pthread_mutex_destroy(&p->lock);
	free(p->refs);
	free(p);
}

void hproc_put(struct hproc *p)
{
	bool last;

	pthread_mutex_lock(&procs_lock);
	last = --p->users == 0;
	pthread_mutex_unlock(&procs_lock);
	if (last)
		free_proc(p);
}

/* Drop a list of references (no lock held). */
static void drop_refs(struct pref *refs, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		hofd_put(refs[i].o, refs[i].n);
	free(refs);
}

/* Take p's references away from it (they are the caller's to drop). */
static struct pref *steal_refs(struct hproc *p, int *nr)
{
	struct pref *r;

	pthread_mutex_lock(&p->lock);
	r = p->refs;
	*nr = p->nr;
	p->refs = NULL;
	p->nr = p->cap = 0;
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* Add n references to o (already counted on o) to p. p->lock held.
 * false: no memory (the caller drops them). */
static bool add_locked(struct hproc *p, struct hofd *o, long n)
{
	int i;

	for (i = 0; i < p->nr; i++)
		if (p->refs[i].o == o) {
			p->refs[i].n += n;
			return true;
		}
	if (p->nr == p->cap) {
		int cap = p->cap ? p->cap * 2 : 16;
		struct pref *bigger = realloc(p->refs, (size_t)cap * sizeof(*bigger));

		if (!bigger)
			return false;
		p->refs = bigger;
		p->cap = cap;
	}
	p->refs[p->nr].o = o;
	p->refs[p->nr].id = o->id;
	p->refs[p->nr].n = n;
	p->nr++;
	return true;
}

/* Give refs (counted on their OFDs) to p, or drop them if p is dead. */
static void give_refs(struct hproc *p, struct pref *refs, int nr)
{
	int i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < nr && !p->dead; i++)
		if (!add_locked(p, refs[i].o, refs[i].n))
			break;
	pthread_mutex_unlock(&p->lock);
	for (; i < nr; i++)
		hofd_put(refs[i].o, refs[i].n);
	free(refs);
}

static void orphan_tokens(pid_t parent);

/* The watcher heard p end. */
static void proc_died(struct hproc *p)
{
	struct pref *refs;
	int nr;

	pthread_mutex_lock(&procs_lock);
	unhash_locked(p);
	epoll_ctl(epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
	close(p->pidfd);
	p->pidfd = -1;
	pthread_mutex_unlock(&procs_lock);
	pthread_mutex_lock(&p->lock);
	p->dead = true;
	pthread_mutex_unlock(&p->lock);
	refs = steal_refs(p, &nr);
	if (nr) {
		HSTAT_INC(clients_died);
		hdebug("process %d ended holding %d served descriptions",
		       (int)p->pid, nr);
	}
	drop_refs(refs, nr);
	orphan_tokens(p->pid);
	pthread_mutex_lock(&procs_lock);
	if (--nr_watched == 0)
		pthread_cond_broadcast(&procs_cond);
	pthread_mutex_unlock(&procs_lock);
	hproc_put(p);		/* the table's reference */
}

static void *watcher(void *arg)
{
	struct epoll_event ev[32];
	int n, i;

	(void)arg;
	for (;;) {
		n = epoll_wait(epfd, ev, 32, -1);
		for (i = 0; i < n; i++)
			proc_died(ev[i].data.ptr);
	}
	return NULL;
}

int hproc_start(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, watcher, NULL);
	pthread_attr_destroy(&attr);
	return -err;
}

static bool pidfd_ended(int pidfd)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };

	return poll(&pf, 1, 0) > 0;
}

/* A new process entry, hashed and watched. procs_lock held. */
static struct hproc *new_locked(pid_t pid, int pidfd)
{
	struct hproc *p = calloc(1, sizeof(*p));
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int b = (unsigned int)pid % PROC_BUCKETS;

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	p->pid = pid;
	p->pidfd = pidfd;
	p->users = 1;
	p->known = horphan_now();
	ev.data.ptr = p;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	p->hashed = true;
	p->next = proc_hash[b];
	proc_hash[b] = p;
	nr_watched++;
	HSTAT_INC(clients);
	return p;
}

/* The live entry of pid (one whose pidfd says ended is left to the
 * watcher: the pid was reused), or a new one on pidfd (taken). */
static struct hproc *get_locked(pid_t pid, int pidfd)
{
	struct hproc *p = find_locked(pid);

	if (p && pidfd_ended(p->pidfd)) {
		unhash_locked(p);
		p = NULL;
	}
	if (p) {
		if (pidfd >= 0)
			close(pidfd);
		return p;
	}
	if (pidfd < 0)
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return NULL;
	p = new_locked(pid, pidfd);
	if (!p)
		close(pidfd);
	return p;
}

static struct htoken *take_token_locked(uint64_t id)
{
	struct htoken **pt, *t;

	for (pt = &tokens; (t = *pt); pt = &t->next)
		if (t->id == id) {
			*pt = t->next;
			return t;
		}
	return NULL;
}

struct hproc *hproc_hello(pid_t pid, int pidfd, unsigned int flags,
			  uint64_t token)
{
	struct htoken *t = NULL;
	struct pref *old = NULL;
	struct hproc *p;
	int nold = 0;

	pthread_mutex_lock(&procs_lock);
	p = get_locked(pid, pidfd);
	if (p)
		p->users++;
	if (p && (flags & HELLO_CLAIM)) {
		t = take_token_locked(token);
		/* The token's parent died before its FORK_DONE and the token
		 * is being handed to the processes that may be its child,
		 * this one among them (orphan_tokens): answered before that,
		 * this child's first request would find none of the
		 * descriptors it inherited (EBADF). */
		while (!t && nr_orphaning) {
			pthread_cond_wait(&procs_cond, &procs_lock);
			t = take_token_locked(token);
		}
	}
	pthread_mutex_unlock(&procs_lock);
	if (!p) {
		if (t)
			drop_refs(t->refs, t->nr);
		free(t);
		return NULL;
	}
	if (flags & HELLO_EXEC) {
		/* the old image's references: its descriptors that the new
		 * image inherits were demoted before the exec */
		old = steal_refs(p, &nold);
		pthread_mutex_lock(&p->lock);
		p->exec_pending = false;
		pthread_mutex_unlock(&p->lock);
		HSTAT_INC(clients);
		if (nold)
			hdebug("process %d: a new image (exec): the old one's %d served descriptions dropped",
			       (int)pid, nold);
	}
	if (t) {
		give_refs(p, t->refs, t->nr);
		free(t);
	}
	drop_refs(old, nold);
	return p;
}

void hproc_adopt(struct hproc *p, struct hofd *o)
{
	bool ok;

	pthread_mutex_lock(&p->lock);
	ok = !p->dead && add_locked(p, o, 1);
	pthread_mutex_unlock(&p->lock);
	if (!ok)
		hofd_put(o, 1);
}

/* p's entry for id, or -1. p->lock held. */
static int find_ref(struct hproc *p, uint64_t id)
{
	int i;

	for (i = 0; i < p->nr; i++)
		if (p->refs[i].id == id)
			return i;
	return -1;
}

/* p's OFD id, its count of p's references moved by delta: one more
 * reference taken on the OFD for delta >= 0 (the new descriptor's, or
 * the request's for 0), the one given back for -1 (the caller drops
 * it). NULL if p names none of that id. */
static struct hofd *ref_adjust(struct hproc *p, uint64_t id, int delta)
{
	struct hofd *o = NULL;
	int i;

	pthread_mutex_lock(&p->lock);
	i = find_ref(p, id);
	if (i >= 0) {
		o = p->refs[i].o;
		p->refs[i].n += delta;
		if (delta >= 0)
			hofd_ref(o, 1);
		else if (p->refs[i].n == 0)
			p->refs[i] = p->refs[--p->nr];
	}
	pthread_mutex_unlock(&p->lock);
	return o;
}

/* One reference more (delta 1) or less (-1) of p on the OFD id. */
static int ref_delta(struct hproc *p, uint64_t id, int delta)
{
	struct hofd *o = ref_adjust(p, id, delta);

	if (!o)
		return -EBADF;
	return delta > 0 ? 0 : hofd_put(o, 1);
}

int hproc_ref(struct hproc *p, uint64_t id)
{
	return ref_delta(p, id, 1);
}

int hproc_unref(struct hproc *p, uint64_t id)
{
	return ref_delta(p, id, -1);
}

int64_t hproc_fork_prepare(struct hproc *p)
{
	struct htoken *t = calloc(1, sizeof(*t));
	int i;

	if (!t)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	t->refs = calloc((size_t)p->nr + 1, sizeof(*t->refs));
	if (!t->refs) {
		pthread_mutex_unlock(&p->lock);
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < p->nr; i++) {
		t->refs[i] = p->refs[i];
		hofd_ref(p->refs[i].o, p->refs[i].n);
	}
	t->nr = p->nr;
	pthread_mutex_unlock(&p->lock);
	t->parent = p->pid;
	t->made = horphan_now();
	pthread_mutex_lock(&procs_lock);
	t->id = new_token_locked();
	t->next = tokens;
	tokens = t;
	pthread_mutex_unlock(&procs_lock);
	return (int64_t)t->id;
}

int hproc_fork_done(struct hproc *p, uint64_t token, int64_t child)
{
	struct hproc *c = NULL;
	struct htoken *t;

	pthread_mutex_lock(&procs_lock);
	t = take_token_locked(token);
	if (t && t->parent != p->pid) {
		/* not this process's token: leave it */
		t->next = tokens;
		tokens = t;
		t = NULL;
	}
	/* The child has not claimed it yet: it becomes the child's now (a
	 * child that dies before any call of its own drops it then). */
	if (t && child > 0) {
		c = get_locked((pid_t)child, -1);
		if (c)
			c->users++;
	}
	pthread_mutex_unlock(&procs_lock);
	if (!t)
		return 0;
	if (c) {
		give_refs(c, t->refs, t->nr);
		hproc_put(c);
	} else {
		drop_refs(t->refs, t->nr);
	}
	free(t);
	return 0;
}

/*
 * A token's parent died before HOP_FORK_DONE: the child, if the fork
 * happened, is one of the processes of the program started since the
 * token (orphan.c), and may still claim it. Each of those gets a copy of
 * the pins, dropped at its end (or at its exec's HELLO, as FORK_DONE's
 * would be), and the token goes: with no such process, the pins are
 * released now. When the candidates cannot be known, the token is kept
 * until the holder ends (files written back then).
 */
static bool hand_orphan(struct htoken *t)
{
	pid_t cand[64];
	int n = horphan_candidates(t->made, t->parent, cand, 64), i, j;
	int given = 0;

	if (n < 0)
		return false;
	for (i = 0; i < n; i++) {
		struct pref *copy = calloc((size_t)t->nr + 1, sizeof(*copy));
		struct hproc *c;

		pthread_mutex_lock(&procs_lock);
		/* heard of before the token (its pidfd still this process):
		 * it was there before the fork, so it is not the child. Its
		 * start time alone cannot tell when both fall in one tick. */
		c = find_locked(cand[i]);
		if (c && !pidfd_ended(c->pidfd) && c->known < t->made) {
			pthread_mutex_unlock(&procs_lock);
			free(copy);
			continue;
		}
		errno = 0;
		c = copy ? get_locked(cand[i], -1) : NULL;
		if (c)
			c->users++;
		pthread_mutex_unlock(&procs_lock);
		if (!c) {
			free(copy);
			if (errno == ESRCH)	/* it ended meanwhile */
				continue;
			return false;
		}
		for (j = 0; j < t->nr; j++) {
			copy[j] = t->refs[j];
			hofd_ref(copy[j].o, copy[j].n);
		}
		give_refs(c, copy, t->nr);
		hproc_put(c);
		given++;
	}
	hdebug("process %d died in a fork: its %d pinned descriptions %s",
	       (int)t->parent, t->nr, given ? "go to the processes that may be its child" :
	       "released (no child)");
	drop_refs(t->refs, t->nr);
	free(t);
	return true;
}

static void orphan_tokens(pid_t parent)
{
	struct htoken *mine = NULL, **pt, *t;

	pthread_mutex_lock(&procs_lock);
	for (pt = &tokens; (t = *pt);) {
		if (t->parent == parent) {
			*pt = t->next;
			t->next = mine;
			mine = t;
		} else {
			pt = &t->next;
		}
	}
	if (mine)
		nr_orphaning++;
	pthread_mutex_unlock(&procs_lock);
	if (!mine)
		return;
	while ((t = mine)) {
		mine = t->next;
		if (hand_orphan(t))
			continue;
		hlog("process %d died in a fork; its child is not known: %d descriptions stay pinned until the end",
		     (int)parent, t->nr);
		pthread_mutex_lock(&procs_lock);
		t->next = tokens;
		tokens = t;
		pthread_mutex_unlock(&procs_lock);
	}
	pthread_mutex_lock(&procs_lock);
	nr_orphaning--;
	pthread_cond_broadcast(&procs_cond);
	pthread_mutex_unlock(&procs_lock);
}

struct hofd *hproc_ofd(struct hproc *p, uint64_t id)
{
	return ref_adjust(p, id, 0);
}

void hproc_exec(struct hproc *p)
{
	pthread_mutex_lock(&p->lock);
	p->exec_pending = true;
	pthread_mutex_unlock(&p->lock);
}

bool hproc_wait_ended(int timeout_ms)
{
	struct timespec ts;
	bool none;

	hdeadline(&ts, timeout_ms);
	pthread_mutex_lock(&procs_lock);
	while (nr_watched > 0 &&
	       !pthread_cond_timedwait(&procs_cond, &procs_lock, &ts))
		;
	none = nr_watched == 0;
	pthread_mutex_unlock(&procs_lock);
	return none;
}
