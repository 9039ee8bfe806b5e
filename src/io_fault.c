/* SPDX-License-Identifier: MIT */
/*
 * io_fault.c - the fault-injecting, write-recording backend for tests.
 *
 * I/O is done the psync way (io_psync.c's engine, with an executor that
 * consults the rules first). Every completed write, size change and flush
 * is appended to a record, from which wtio_fault_replay() rebuilds what a
 * disk with a volatile write cache could hold after power loss.
 *
 * Durability model of the replay:
 *  - fsync/fdatasync (a FLUSH event) makes every earlier write and size
 *    change of that file durable.
 *  - A write with RWF_DSYNC/RWF_SYNC, or through an O_DSYNC/O_SYNC
 *    descriptor, is followed by a FUA event that makes only that write
 *    durable, not earlier unflushed writes. That is what a FUA write gives
 *    on a device with a volatile cache (the kernel uses FUA for O_DIRECT
 *    DSYNC writes where it can); a FUA event is not a full FLUSH.
 *  - Writes after the last flush are unflushed: each lands whole, not at
 *    all, or torn at the file's block size (some blocks only), chosen by
 *    the replay seed; RWF_ATOMIC writes land whole or not at all. Later
 *    writes may land without earlier ones (the device reordered them).
 *  - The record is appended after each I/O completes. A flush racing with
 *    an unrelated write of another thread may thus be recorded before that
 *    write, which only makes the replay more pessimistic.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "wtio.h"
#include "wtio_fault.h"
#include "io/ops.h"

#ifndef WTIO_EXPORT
#define WTIO_EXPORT __attribute__((visibility("default")))
#endif

enum fault_ev_type {
	EV_WRITE,
	EV_TRUNCATE,
	EV_FLUSH,	/* fsync/fdatasync: everything before is durable */
	EV_FUA,		/* only the write just before is durable */
};

struct fault_event {
	enum fault_ev_type type;
	dev_t dev;
	ino_t ino;
	off_t off;		/* write offset, or the new size */
	size_t len;
	void *data;		/* the bytes written */
	bool atomic;		/* issued with RWF_ATOMIC: lands all or nothing */
	uint32_t blksize;	/* the file's block: the unit a torn write keeps */
};

struct fault_rule_state {
	struct wtio_fault_rule r;
	uint64_t seen;		/* matches let through by skip */
	uint64_t faulted;
};

struct wtio_fault {
	pthread_mutex_t lock;
	struct fault_rule_state *rules;
	size_t nr_rules, cap_rules;
	uint64_t injected;
	struct fault_event *ev;
	size_t nr_ev, cap_ev;
	/* A record that lost an event cannot be replayed faithfully. */
	int record_err;
	struct wtio_fault_io *trace;
	size_t nr_trace, cap_trace;
	/* Hold rules: I/Os waiting for wtio_fault_release(). */
	pthread_cond_t held_cond;
	uint64_t nr_held;
	uint64_t release_gen;	/* bumped by each release */
};

WTIO_EXPORT struct wtio_fault *wtio_fault_create(void)
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
	return f;
}

WTIO_EXPORT void wtio_fault_destroy(struct wtio_fault *fault)
{
	size_t i;

	if (!fault)
		return;
	for (i = 0; i < fault->nr_ev; i++)
		free(fault->ev[i].data);
	free(fault->ev);
	free(fault->trace);
	free(fault->rules);
	pthread_cond_destroy(&fault->held_cond);
	pthread_mutex_destroy(&fault->lock);
	free(fault);
}

WTIO_EXPORT int wtio_fault_add_rule(struct wtio_fault *fault,
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

WTIO_EXPORT void wtio_fault_clear_rules(struct wtio_fault *fault)
{
	if (!fault)
		return;
	pthread_mutex_lock(&fault->lock);
	fault->nr_rules = 0;
	pthread_mutex_unlock(&fault->lock);
}

WTIO_EXPORT uint64_t wtio_fault_injected(const struct wtio_fault *fault)
{
	return fault ? __atomic_load_n(&fault->injected, __ATOMIC_RELAXED) : 0;
}

WTIO_EXPORT uint64_t wtio_fault_held(struct wtio_fault *fault)
{
	uint64_t n;

	if (!fault)
		return 0;
	pthread_mutex_lock(&fault->lock);
	n = fault->nr_held;
	pthread_mutex_unlock(&fault->lock);
	return n;
}

WTIO_EXPORT int wtio_fault_wait_held(struct wtio_fault *fault, uint64_t n,
				     unsigned int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	if (!fault)
		return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&fault->lock);
	while (fault->nr_held < n && !ret)
		if (pthread_cond_timedwait(&fault->held_cond, &fault->lock,
					   &ts) == ETIMEDOUT)
			ret = fault->nr_held < n ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&fault->lock);
	return ret;
}

WTIO_EXPORT void wtio_fault_release(struct wtio_fault *fault)
{
	if (!fault)
		return;
	pthread_mutex_lock(&fault->lock);
	fault->release_gen++;
	pthread_cond_broadcast(&fault->held_cond);
	pthread_mutex_unlock(&fault->lock);
}

/* A hold rule matched: wait for the next release. */
static void fault_hold(struct wtio_fault *f)
{
	uint64_t gen;

	pthread_mutex_lock(&f->lock);
	gen = f->release_gen;
	f->nr_held++;
	pthread_cond_broadcast(&f->held_cond);
	while (f->release_gen == gen)
		pthread_cond_wait(&f->held_cond, &f->lock);
	f->nr_held--;
	pthread_mutex_unlock(&f->lock);
}

WTIO_EXPORT uint64_t wtio_fault_nr_events(const struct wtio_fault *fault)
{
	return fault ? __atomic_load_n(&fault->nr_ev, __ATOMIC_RELAXED) : 0;
}

/* Append one event, or two when a FUA follows a write; under the lock. */
static int fault_append(struct wtio_fault *f, const struct fault_event *e,
			bool fua)
{
	struct fault_event *ev;
	size_t cap;

	if (f->nr_ev + 2 > f->cap_ev) {
		cap = f->cap_ev ? f->cap_ev * 2 : 256;
		ev = realloc(f->ev, cap * sizeof(*ev));
		if (!ev)
			return -ENOMEM;
		f->ev = ev;
		f->cap_ev = cap;
	}
	f->ev[f->nr_ev] = *e;
	if (fua) {
		f->ev[f->nr_ev + 1] = *e;
		f->ev[f->nr_ev + 1].type = EV_FUA;
		f->ev[f->nr_ev + 1].data = NULL;
		f->ev[f->nr_ev + 1].len = 0;
	}
	/* Relaxed readers (nr_events) only need a value, not the events. */
	__atomic_store_n(&f->nr_ev, f->nr_ev + (fua ? 2 : 1),
			 __ATOMIC_RELAXED);
	return 0;
}

static void fault_record(struct wtio_fault *f, struct fault_event *e,
			 bool fua, int err)
{
	pthread_mutex_lock(&f->lock);
	if (!err)
		err = fault_append(f, e, fua);
	if (err) {
		free(e->data);
		if (!f->record_err)
			f->record_err = err;
	}
	pthread_mutex_unlock(&f->lock);
}

static void fault_record_io(struct wtio_fault *f,
			    const struct wtio_io_req *req, ssize_t res)
{
	struct fault_event e;
	struct stat st;
	size_t copied, n;
	bool fua = false;
	int i, fl;

	memset(&e, 0, sizeof(e));
	if (req->op == WTIO_IO_WRITE && res > 0)
		e.type = EV_WRITE;
	else if ((req->op == WTIO_IO_FSYNC || req->op == WTIO_IO_FDATASYNC) &&
		 res == 0)
		e.type = EV_FLUSH;
	else
		return;

	if (fstat(req->fd, &st) < 0) {
		fault_record(f, &e, false, -errno);
		return;
	}
	e.dev = st.st_dev;
	e.ino = st.st_ino;
	if (e.type == EV_WRITE) {
		e.off = req->off;
		e.len = res;
		e.data = malloc(res);
		if (!e.data) {
			fault_record(f, &e, false, -ENOMEM);
			return;
		}
		for (i = 0, copied = 0; i < req->iovcnt && copied < e.len; i++) {
			n = req->iov[i].iov_len;
			if (n > e.len - copied)
				n = e.len - copied;
			memcpy((char *)e.data + copied, req->iov[i].iov_base, n);
			copied += n;
		}
		fl = fcntl(req->fd, F_GETFL);
		fua = (req->rw_flags & (RWF_DSYNC | RWF_SYNC)) ||
		      (fl >= 0 && (fl & O_DSYNC));
		e.atomic = (req->rw_flags & RWF_ATOMIC) != 0;
		/* A power of two from 512 to 64 KiB, else 4 KiB. */
		e.blksize = st.st_blksize >= 512 && st.st_blksize <= 65536 &&
			    !(st.st_blksize & (st.st_blksize - 1)) ?
			    (uint32_t)st.st_blksize : 4096;
	}
	fault_record(f, &e, fua, 0);
}

/* set_size: the size change, then its record (only once it happened). */
static int fault_set_size(struct wtio_io_backend *be, int fd, off_t size)
{
	struct wtio_fault *fault = be->arg;
	struct fault_event e;
	struct stat st;
	int ret = wtio_io_ftruncate(be, fd, size);

	if (ret)
		return ret;
	memset(&e, 0, sizeof(e));
	e.type = EV_TRUNCATE;
	e.off = size;
	if (fstat(fd, &st) < 0) {
		fault_record(fault, &e, false, -errno);
		return 0;
	}
	e.dev = st.st_dev;
	e.ino = st.st_ino;
	fault_record(fault, &e, false, 0);
	return 0;
}

static size_t req_len(const struct wtio_io_req *req)
{
	size_t len = 0;
	int i;

	for (i = 0; i < req->iovcnt; i++)
		len += req->iov[i].iov_len;
	return len;
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

static void sleep_us(uint32_t us)
{
	struct timespec ts = {
		.tv_sec = us / 1000000,
		.tv_nsec = (long)(us % 1000000) * 1000,
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Append req to the trace; under the lock. A full trace stops growing
 * rather than failing the I/O. */
static void fault_trace(struct wtio_fault *f, const struct wtio_io_req *req,
			uint32_t op, size_t len)
{
	struct wtio_fault_io *t;
	struct stat st;
	int i;

	if (f->nr_trace == f->cap_trace) {
		size_t cap = f->cap_trace ? f->cap_trace * 2 : 1024;

		t = realloc(f->trace, cap * sizeof(*t));
		if (!t)
			return;
		f->trace = t;
		f->cap_trace = cap;
	}
	t = &f->trace[f->nr_trace];
	memset(t, 0, sizeof(*t));
	t->op = op;
	t->rw_flags = req->rw_flags;
	t->off = req->off;
	t->len = len;
	t->nr_segs = (uint32_t)req->iovcnt;
	for (i = 0; i < req->iovcnt; i++) {
		uint64_t lo = (uint64_t)(uintptr_t)req->iov[i].iov_base;
		uint64_t hi = lo + req->iov[i].iov_len;

		if (!i || lo < t->buf_lo)
			t->buf_lo = lo;
		if (hi > t->buf_hi)
			t->buf_hi = hi;
	}
	if (fstat(req->fd, &st) == 0)
		t->ino = st.st_ino;
	__atomic_store_n(&f->nr_trace, f->nr_trace + 1, __ATOMIC_RELEASE);
}

WTIO_EXPORT uint64_t wtio_fault_nr_ios(const struct wtio_fault *fault)
{
	return fault ? __atomic_load_n(&fault->nr_trace, __ATOMIC_ACQUIRE) : 0;
}

WTIO_EXPORT int wtio_fault_get_io(const struct wtio_fault *cfault, uint64_t i,
				  struct wtio_fault_io *io)
{
	struct wtio_fault *f = (struct wtio_fault *)cfault;
	int ret = -ERANGE;

	if (!f || !io)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	if (i < f->nr_trace) {
		*io = f->trace[i];
		ret = 0;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static ssize_t fault_exec(struct wtio_io_backend *be,
			  const struct wtio_io_req *req)
{
	struct wtio_fault *f = be->arg;
	struct wtio_fault_rule hit;
	struct fault_rule_state *rs;
	struct iovec vec[WTIO_IO_MAX_IOVECS];
	struct wtio_io_req sreq;
	bool faulted = false, rw;
	size_t len = 0, n, left;
	uint32_t op;
	ssize_t res;
	size_t i;
	int j;

	rw = req->op == WTIO_IO_READ || req->op == WTIO_IO_WRITE;
	op = req->op == WTIO_IO_READ ? WTIO_FAULT_READ :
	     req->op == WTIO_IO_WRITE ? WTIO_FAULT_WRITE : WTIO_FAULT_FLUSH;
	if (rw)
		len = req_len(req);

	pthread_mutex_lock(&f->lock);
	fault_trace(f, req, op, len);
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
		hit = rs->r;
		faulted = true;
		break;
	}
	pthread_mutex_unlock(&f->lock);

	if (!faulted) {
		res = wtio_psync_do(req);
		goto record;
	}
	if (hit.delay_us)
		sleep_us(hit.delay_us);
	if (hit.hold)
		fault_hold(f);
	if (hit.error)
		return -hit.error;
	/*
	 * With neither an error nor a short count asked for, a rule with a
	 * delay or a hold is just that; otherwise error == 0 means a short
	 * I/O.
	 */
	if (!rw || ((hit.delay_us || hit.hold) && !hit.short_bytes)) {
		res = wtio_psync_do(req);
		goto record;
	}

	/* Half, at a 512-byte boundary, but never nothing: a real device
	 * never returns 0 bytes inside the file, which a reader must take
	 * for end of file. */
	n = hit.short_bytes ? hit.short_bytes : (len / 2) & ~(size_t)511;
	if (!n)
		n = len > 512 ? 512 : len;
	if (n > len)
		n = len;
	for (j = 0, left = n; j < req->iovcnt && left; j++) {
		vec[j] = req->iov[j];
		if (vec[j].iov_len > left)
			vec[j].iov_len = left;
		left -= vec[j].iov_len;
	}
	sreq = *req;
	sreq.iov = vec;
	sreq.iovcnt = j;
	res = wtio_psync_do(&sreq);

record:
	fault_record_io(f, req, res);
	return res;
}

static int fault_setup(struct wtio_io_backend *be)
{
	if (!be->arg)
		return -EINVAL;
	return wtio_psync_setup(be);
}

static int fault_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
			unsigned int nr)
{
	return wtio_psync_submit_exec(be, reqs, nr, fault_exec);
}

const struct wtio_io_ops wtio_io_fault_ops = {
	.version	= WTIO_IO_OPS_VERSION,
	.name		= "fault",
	.caps		= WTIO_IO_CAP_ATOMIC,
	.setup		= fault_setup,
	.teardown	= wtio_psync_teardown,
	.submit		= fault_submit,
	.reap		= wtio_psync_reap,
	.inflight	= wtio_psync_inflight,
	.set_size	= fault_set_size,
};

/* splitmix64: tiny, seedable, and good enough to pick events. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len) {
		n = pwrite(fd, buf, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		buf = (const char *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

/*
 * Apply an unflushed write as a crash may leave it: whole, not at all, or
 * torn, i.e. only some of its blocks (the file's block size, split at
 * block boundaries of the file offset) landed. RWF_ATOMIC writes land
 * whole or not at all. The landed blocks are written in record order, so
 * a block's newer version is never replaced by an older one (a device
 * never does that either); which blocks of which writes land is chosen
 * independently, so later writes land without earlier ones: every image
 * a device reordering its volatile cache could persist is one of these.
 */
static int replay_unflushed(const struct fault_event *e, int dst_fd,
			    uint64_t *rng, struct wtio_fault_replay_info *info)
{
	size_t bs = e->blksize ? e->blksize : 4096, pos, n, landed = 0,
	       dropped = 0, nblocks;
	uint64_t mode = splitmix64(rng);
	off_t end = e->off + (off_t)e->len;
	int ret;

	nblocks = (size_t)((end + (off_t)bs - 1) / (off_t)bs -
			   e->off / (off_t)bs);
	if (e->atomic || nblocks < 2) {
		info->atomic_writes += e->atomic;
		if (!(mode & 1)) {
			info->writes_dropped++;
			info->blocks_dropped += nblocks;
			return 0;
		}
		info->writes_whole++;
		info->blocks_landed += nblocks;
		return pwrite_all(dst_fd, e->data, e->len, e->off);
	}
	/* Multi-block: a quarter whole, a quarter lost, half torn. */
	switch (mode & 3) {
	case 0:
		info->writes_whole++;
		info->blocks_landed += nblocks;
		return pwrite_all(dst_fd, e->data, e->len, e->off);
	case 1:
		info->writes_dropped++;
		info->blocks_dropped += nblocks;
		return 0;
	}
	for (pos = 0; pos < e->len; pos += n) {
		off_t at = e->off + (off_t)pos;

		n = bs - (size_t)(at % (off_t)bs);
		if (n > e->len - pos)
			n = e->len - pos;
		if (!(splitmix64(rng) & 1)) {
			dropped++;
			continue;
		}
		landed++;
		ret = pwrite_all(dst_fd, (const char *)e->data + pos, n, at);
		if (ret)
			return ret;
	}
	info->blocks_landed += landed;
	info->blocks_dropped += dropped;
	if (landed && dropped)
		info->writes_torn++;
	else if (landed)
		info->writes_whole++;
	else
		info->writes_dropped++;
	return 0;
}

WTIO_EXPORT int wtio_fault_replay_ex(const struct wtio_fault *cfault,
				     const char *path, uint64_t nr_events,
				     uint64_t seed, int dst_fd,
				     struct wtio_fault_replay_info *infop)
{
	/* Replay only reads the record, but needs its lock. */
	struct wtio_fault *f = (struct wtio_fault *)cfault;
	struct wtio_fault_replay_info info;
	const struct fault_event *e;
	uint64_t rng = seed;
	size_t i, n, last_flush = 0;
	bool have_flush = false, durable;
	struct stat st;
	int ret = 0;

	memset(&info, 0, sizeof(info));
	if (!f || !path || dst_fd < 0)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;

	pthread_mutex_lock(&f->lock);
	if (f->record_err) {
		ret = f->record_err;
		goto out;
	}
	n = nr_events < f->nr_ev ? nr_events : f->nr_ev;
	for (i = 0; i < n; i++) {
		e = &f->ev[i];
		if (e->type == EV_FLUSH && e->dev == st.st_dev &&
		    e->ino == st.st_ino) {
			last_flush = i;
			have_flush = true;
		}
	}

	for (i = 0; i < n && !ret; i++) {
		e = &f->ev[i];
		if (e->dev != st.st_dev || e->ino != st.st_ino ||
		    e->type == EV_FLUSH || e->type == EV_FUA)
			continue;
		if (have_flush && i < last_flush)
			durable = true;
		else if (e->type == EV_WRITE && i + 1 < n &&
			 f->ev[i + 1].type == EV_FUA)
			durable = true;	/* its own FUA made it durable */
		else
			durable = !seed;	/* seed 0: the disk kept all */
		if (e->type == EV_TRUNCATE) {
			if ((durable || (splitmix64(&rng) & 1)) &&
			    ftruncate(dst_fd, e->off) < 0)
				ret = -errno;
			continue;
		}
		if (durable) {
			info.writes_durable++;
			ret = pwrite_all(dst_fd, e->data, e->len, e->off);
			continue;
		}
		info.writes_unflushed++;
		ret = replay_unflushed(e, dst_fd, &rng, &info);
	}
out:
	pthread_mutex_unlock(&f->lock);
	if (infop)
		*infop = info;
	return ret;
}

WTIO_EXPORT int wtio_fault_replay(const struct wtio_fault *fault,
				  const char *path, uint64_t nr_events,
				  uint64_t seed, int dst_fd)
{
	return wtio_fault_replay_ex(fault, path, nr_events, seed, dst_fd,
				    NULL);
}
