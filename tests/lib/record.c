/* SPDX-License-Identifier: MIT */
/*
 * record.c - what the fault backend keeps of the I/O it did: the record
 * of completed writes (with their data), size changes and flushes that
 * replay.c rebuilds a crash from, and the trace of every I/O as issued.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault_priv.h"

static int this_tid(void)
{
	return (int)syscall(SYS_gettid);
}

uint64_t wtio_fault_nr_events(const struct wtio_fault *fault)
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

void fault_record_io(struct wtio_fault *f,
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

/* A size change of fd's file that happened. */
void fault_record_size(struct wtio_fault *f, int fd, off_t size)
{
	struct fault_event e;
	struct stat st;

	memset(&e, 0, sizeof(e));
	e.type = EV_TRUNCATE;
	e.off = size;
	if (fstat(fd, &st) < 0) {
		fault_record(f, &e, false, -errno);
		return;
	}
	e.dev = st.st_dev;
	e.ino = st.st_ino;
	fault_record(f, &e, false, 0);
}

/* Append req to the trace; under the lock. A full trace stops growing
 * rather than failing the I/O. */
void fault_trace(struct wtio_fault *f, const struct wtio_io_req *req,
		 uint32_t op, size_t len, bool chan, bool faulted)
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
	t->tid = this_tid();
	t->chan = chan;
	t->faulted = faulted;
	__atomic_store_n(&f->nr_trace, f->nr_trace + 1, __ATOMIC_RELEASE);
}

int fault_writer_enter(struct wtio_fault *f, const struct wtio_io_req *req)
{
	struct stat st;
	int tid = this_tid(), slot = -1, i;
	bool overlap = false;

	if (req->op != WTIO_IO_WRITE || fstat(req->fd, &st) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	for (i = 0; i < FAULT_MAX_WRITERS; i++) {
		struct fault_writer *w = &f->writers[i];

		if (!w->busy) {
			if (slot < 0)
				slot = i;
		} else if (w->dev == st.st_dev && w->ino == st.st_ino &&
			   w->tid != tid) {
			overlap = true;
		}
	}
	if (overlap)
		f->write_overlaps++;
	if (slot >= 0) {
		f->writers[slot].dev = st.st_dev;
		f->writers[slot].ino = st.st_ino;
		f->writers[slot].tid = tid;
		f->writers[slot].busy = true;
	}
	pthread_mutex_unlock(&f->lock);
	return slot;
}

void fault_writer_leave(struct wtio_fault *f, int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&f->lock);
	f->writers[slot].busy = false;
	pthread_mutex_unlock(&f->lock);
}

uint64_t wtio_fault_write_overlaps(const struct wtio_fault *cfault)
{
	struct wtio_fault *f = (struct wtio_fault *)cfault;
	uint64_t n;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->lock);
	n = f->write_overlaps;
	pthread_mutex_unlock(&f->lock);
	return n;
}

uint64_t wtio_fault_nr_ios(const struct wtio_fault *fault)
{
	return fault ? __atomic_load_n(&fault->nr_trace, __ATOMIC_ACQUIRE) : 0;
}

int wtio_fault_get_io(const struct wtio_fault *cfault, uint64_t i,
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
