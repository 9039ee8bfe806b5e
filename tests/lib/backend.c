/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the fault-injecting, write-recording backend for tests.
 *
 * I/O is done the psync way (io/ops.h's psync engine, with an executor
 * that consults the rules first). Every completed write, size change and flush
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
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "fault_priv.h"

static size_t req_len(const struct wtio_io_req *req)
{
	size_t len = 0;
	int i;

	for (i = 0; i < req->iovcnt; i++)
		len += req->iov[i].iov_len;
	return len;
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

bool fault_admit(struct wtio_fault *f, const struct wtio_io_req *req,
		 bool chan, struct wtio_fault_rule *hit, size_t *lenp)
{
	bool rw = req->op == WTIO_IO_READ || req->op == WTIO_IO_WRITE;
	uint32_t op = req->op == WTIO_IO_READ ? WTIO_FAULT_READ :
		      req->op == WTIO_IO_WRITE ? WTIO_FAULT_WRITE :
		      WTIO_FAULT_FLUSH;
	bool faulted;

	*lenp = rw ? req_len(req) : 0;
	pthread_mutex_lock(&f->lock);
	faulted = fault_match(f, op, req, *lenp, hit);
	fault_trace(f, req, op, *lenp, chan, faulted);
	pthread_mutex_unlock(&f->lock);
	return faulted;
}

ssize_t fault_perform(struct wtio_io_backend *be,
		      const struct wtio_io_req *req,
		      const struct wtio_fault_rule *hit, size_t len)
{
	struct wtio_fault *f = be->arg;
	struct iovec vec[WTIO_IO_MAX_IOVECS];
	struct wtio_io_req sreq;
	bool rw = req->op == WTIO_IO_READ || req->op == WTIO_IO_WRITE;
	bool held = false;
	uint64_t seq = 0;
	int outcome = -1;
	size_t n, left;
	ssize_t res;
	int j;

	if (!hit) {
		res = wtio_psync_do(req);
		goto record;
	}
	if (hit->delay_us)
		sleep_us(hit->delay_us);
	if (hit->hold) {
		outcome = fault_hold(f, &seq);
		held = true;
	}
	/* The release chose: done as asked, or failed with that errno. */
	if (outcome > 0) {
		res = -outcome;
		goto out;
	}
	if (outcome == 0) {
		res = wtio_psync_do(req);
		goto record;
	}
	if (hit->error) {
		res = -hit->error;
		goto out;
	}
	/*
	 * With neither an error nor a short count asked for, a rule with a
	 * delay or a hold is just that; otherwise error == 0 means a short
	 * I/O.
	 */
	if (!rw || ((hit->delay_us || hit->hold) && !hit->short_bytes)) {
		res = wtio_psync_do(req);
		goto record;
	}

	/* Half, at a 512-byte boundary, but never nothing: a real device
	 * never returns 0 bytes inside the file, which a reader must take
	 * for end of file. */
	n = hit->short_bytes ? hit->short_bytes : (len / 2) & ~(size_t)511;
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
out:
	if (held)
		fault_hold_done(f, seq);
	return res;
}

static ssize_t fault_do(struct wtio_io_backend *be,
			const struct wtio_io_req *req)
{
	struct wtio_fault_rule hit;
	size_t len;
	bool faulted = fault_admit(be->arg, req, false, &hit, &len);

	return fault_perform(be, req, faulted ? &hit : NULL, len);
}

/* The I/O, rules applied, with the writes under way noted meanwhile. */
static ssize_t fault_exec(struct wtio_io_backend *be,
			  const struct wtio_io_req *req)
{
	int slot = fault_writer_enter(be->arg, req);
	ssize_t res = fault_do(be, req);

	fault_writer_leave(be->arg, slot);
	return res;
}

/* set_size: the size change, then its record (only once it happened). */
int fault_set_size(struct wtio_io_backend *be, int fd, off_t size)
{
	int ret = wtio_io_ftruncate(be, fd, size);

	if (!ret)
		fault_record_size(be->arg, fd, size);
	return ret;
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

int wtio_fault_ctx_create(const struct wtio_config *cfg,
			  struct wtio_fault *fault, struct wtio_ctx **ctxp)
{
	if (!fault)
		return -EINVAL;
	return wtio_ctx_create_io(cfg, fault->async ?
				  &wtio_io_fault_async_ops :
				  &wtio_io_fault_ops, fault, ctxp);
}

void wtio_fault_set_async(struct wtio_fault *fault, bool on)
{
	if (fault)
		fault->async = on;
}
