/* SPDX-License-Identifier: MIT */
/*
 * test_io_backends.c - the I/O backends through io.h, without the cache:
 * read/write round trips, batches and resubmission from end_io, short
 * counts, injected errors and delays, the fault recorder and its replay,
 * and many threads sharing one backend.
 *
 * "test_io_backends" checks AUTO, psync and fault; "test_io_backends
 * io_uring" (its own test, io_backends_uring) checks io_uring and exits 77
 * with the reason when io_uring cannot be set up here.
 *
 * Exit status: 0 pass, 1 fail, 77 skip (O_DIRECT or io_uring unavailable).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "wtio.h"
#include "wtio_fault.h"
#include "io/ops.h"

#define BS	4096

static int failures;
static char path_buf[256];

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		failures++;						\
	}								\
} while (0)

static void *xalign(size_t len)
{
	void *p;

	if (posix_memalign(&p, BS, len)) {
		perror("posix_memalign");
		exit(1);
	}
	memset(p, 0, len);
	return p;
}

static int open_direct(const char *name)
{
	int fd;

	snprintf(path_buf, sizeof(path_buf), "test_io_backends.%d.%s",
		 (int)getpid(), name);
	fd = open(path_buf, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0 && errno == EINVAL) {
		printf("SKIP: O_DIRECT not supported in the current directory\n");
		exit(77);
	}
	if (fd < 0) {
		perror(path_buf);
		exit(1);
	}
	return fd;
}

static void close_unlink(int fd, const char *name)
{
	char p[256];

	snprintf(p, sizeof(p), "test_io_backends.%d.%s", (int)getpid(), name);
	close(fd);
	unlink(p);
}

static void fill(void *buf, size_t len, unsigned int seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 12));
}

static ssize_t io1(struct wtio_io_backend *be, enum wtio_io_op op, int fd,
		   void *buf, size_t len, off_t off, int rw_flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return wtio_io_full(be, op, fd, &iov, 1, off, rw_flags);
}

/* --- round trips, batches, resubmission from end_io ------------------ */

struct batch {
	int done;
	int bad;
};

static void batch_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct batch *b = req->private;

	b->done++;
	if (res != (ssize_t)req->iov[0].iov_len)
		b->bad++;
}

struct chain {
	struct wtio_io_backend *be;
	struct wtio_io_req req;
	struct iovec iov;
	int left;
	int done;
	ssize_t err;
};

/* Resubmit from inside end_io, as writeback completion does. */
static void chain_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct chain *c = req->private;
	struct wtio_io_req *r = &c->req;
	int ret;

	c->done++;
	if (res != (ssize_t)c->iov.iov_len && !c->err)
		c->err = res < 0 ? res : -EIO;
	if (--c->left <= 0)
		return;
	r->off += BS;
	ret = wtio_io_submit(c->be, &r, 1);
	if (ret && !c->err)
		c->err = ret;
}

static void basic_roundtrip(struct wtio_io_backend *be, const char *tag,
			    void *arena, size_t arena_size)
{
	const size_t len = 16 * BS;
	char *wbuf = arena ? arena : xalign(len);
	char *rbuf = arena ? (char *)arena + len : xalign(len);
	struct wtio_io_req reqs[8], *rp[8];
	struct iovec wv[4], rv[4];
	struct batch b = { 0 };
	struct chain c;
	ssize_t res;
	int fd, i, n, ret;

	(void)arena_size;
	fd = open_direct(tag);

	/* One iovec: plain or fixed-buffer path. */
	fill(wbuf, len, 1);
	res = io1(be, WTIO_IO_WRITE, fd, wbuf, len, 0, 0);
	CHECK(res == (ssize_t)len, "%s: write %zd", tag, res);
	memset(rbuf, 0, len);
	res = io1(be, WTIO_IO_READ, fd, rbuf, len, 0, 0);
	CHECK(res == (ssize_t)len, "%s: read %zd", tag, res);
	CHECK(!memcmp(wbuf, rbuf, len), "%s: data mismatch (1 iovec)", tag);

	/* Four iovecs: the vectored path. */
	fill(wbuf, len, 2);
	for (i = 0; i < 4; i++) {
		wv[i].iov_base = wbuf + i * 4 * BS;
		wv[i].iov_len = 4 * BS;
		rv[i].iov_base = rbuf + i * 4 * BS;
		rv[i].iov_len = 4 * BS;
	}
	res = wtio_io_full(be, WTIO_IO_WRITE, fd, wv, 4, len, 0);
	CHECK(res == (ssize_t)len, "%s: writev %zd", tag, res);
	memset(rbuf, 0, len);
	res = wtio_io_full(be, WTIO_IO_READ, fd, rv, 4, len, 0);
	CHECK(res == (ssize_t)len, "%s: readv %zd", tag, res);
	CHECK(!memcmp(wbuf, rbuf, len), "%s: data mismatch (4 iovecs)", tag);

	/* Reading past EOF stops at EOF. */
	res = io1(be, WTIO_IO_READ, fd, rbuf, len, 2 * len - BS, 0);
	CHECK(res == BS, "%s: read at EOF %zd", tag, res);

	/* A batch of 8 with one submit; inflight counts them until reaped. */
	memset(reqs, 0, sizeof(reqs));
	for (i = 0; i < 8; i++) {
		wv[0].iov_base = wbuf;
		reqs[i].op = WTIO_IO_WRITE;
		reqs[i].fd = fd;
		reqs[i].off = (off_t)i * BS;
		reqs[i].iov = &wv[0];
		reqs[i].iovcnt = 1;
		reqs[i].end_io = batch_end_io;
		reqs[i].private = &b;
		rp[i] = &reqs[i];
	}
	wv[0].iov_len = BS;
	ret = wtio_io_submit(be, rp, 8);
	CHECK(ret == 0, "%s: batch submit %d", tag, ret);
	CHECK(wtio_io_inflight(be) == 8, "%s: inflight %u", tag,
	      wtio_io_inflight(be));
	n = 0;
	while (b.done < 8) {
		ret = wtio_io_reap(be, 8 - b.done, NULL);
		CHECK(ret >= 0, "%s: reap %d", tag, ret);
		if (ret < 0)
			break;
		n += ret;
	}
	CHECK(n == 8 && !b.bad && wtio_io_inflight(be) == 0,
	      "%s: reaped %d, bad %d, left %u", tag, n, b.bad,
	      wtio_io_inflight(be));

	/* More than a ring's SQ (128) and CQ (256) in one submit. */
	{
		enum { BIG = 300 };
		struct wtio_io_req *big = calloc(BIG, sizeof(*big));
		struct wtio_io_req **bp = calloc(BIG, sizeof(*bp));
		struct iovec one = { wbuf, BS };

		memset(&b, 0, sizeof(b));
		for (i = 0; i < BIG; i++) {
			big[i].op = i & 1 ? WTIO_IO_READ : WTIO_IO_WRITE;
			big[i].fd = fd;
			/* Reads stay below the old EOF, writes above it,
			 * so that no read races the write extending it. */
			big[i].off = i & 1 ? (off_t)(i % 16) * BS :
					     (off_t)(64 + i) * BS;
			big[i].iov = &one;
			big[i].iovcnt = 1;
			big[i].end_io = batch_end_io;
			big[i].private = &b;
			bp[i] = &big[i];
		}
		ret = wtio_io_submit(be, bp, BIG);
		CHECK(ret == 0, "%s: big submit %d", tag, ret);
		while (!ret && b.done < BIG) {
			ret = wtio_io_reap(be, 1, NULL);
			CHECK(ret >= 0, "%s: big reap %d", tag, ret);
			ret = ret < 0 ? ret : 0;
		}
		CHECK(b.done == BIG && !b.bad, "%s: big batch done %d bad %d",
		      tag, b.done, b.bad);
		free(big);
		free(bp);
	}

	/* end_io resubmits 32 times in a row. */
	memset(&c, 0, sizeof(c));
	c.be = be;
	c.iov.iov_base = wbuf;
	c.iov.iov_len = BS;
	c.left = 32;
	c.req.op = WTIO_IO_WRITE;
	c.req.fd = fd;
	c.req.iov = &c.iov;
	c.req.iovcnt = 1;
	c.req.end_io = chain_end_io;
	c.req.private = &c;
	rp[0] = &c.req;
	ret = wtio_io_submit(be, rp, 1);
	CHECK(ret == 0, "%s: chain submit %d", tag, ret);
	while (wtio_io_inflight(be)) {
		ret = wtio_io_reap(be, 1, NULL);
		if (ret < 0) {
			CHECK(0, "%s: chain reap %d", tag, ret);
			break;
		}
	}
	CHECK(c.done == 32 && !c.err, "%s: chain done %d err %zd", tag,
	      c.done, c.err);

	/* Flushes. */
	res = wtio_io_full(be, WTIO_IO_FSYNC, fd, NULL, 0, 0, 0);
	CHECK(res == 0, "%s: fsync %zd", tag, res);
	res = wtio_io_full(be, WTIO_IO_FDATASYNC, fd, NULL, 0, 0, 0);
	CHECK(res == 0, "%s: fdatasync %zd", tag, res);

	/* DSYNC write flag is passed through. */
	res = io1(be, WTIO_IO_WRITE, fd, wbuf, BS, 0, RWF_DSYNC);
	CHECK(res == BS, "%s: dsync write %zd", tag, res);

	/* Bad arguments are refused before anything happens. */
	res = wtio_io_full(be, WTIO_IO_WRITE, fd, wv, 0, 0, 0);
	CHECK(res == -EINVAL, "%s: iovcnt 0 gives %zd", tag, res);

	/* Reap with nothing in flight returns at once. */
	{
		struct timespec to = { 0, 10 * 1000 * 1000 };

		ret = wtio_io_reap(be, 1, &to);
		CHECK(ret == 0, "%s: idle reap %d", tag, ret);
		ret = wtio_io_reap(be, 0, NULL);
		CHECK(ret == 0, "%s: idle poll %d", tag, ret);
	}

	close_unlink(fd, tag);
	if (!arena) {
		free(wbuf);
		free(rbuf);
	}
	printf("ok: %s: round trips (1 and 4 iovecs), EOF, batches of 8 "
	       "and 300, 32 chained resubmits from end_io, fsync/fdatasync, "
	       "DSYNC\n", tag);
}

/*
 * The asynchronous fault backend's channel and plug: a channel round
 * trip reaped by another thread's call (any thread may reap), held
 * requests completing in the order released, chan_inflight counting
 * until taken off, and a plugged submit that starts only at the reap.
 */
static void test_async_chan(struct wtio_io_backend *be, struct wtio_fault *f)
{
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .hold = 1 };
	char *buf = xalign(4 * BS);
	struct wtio_io_req reqs[3], *rp[3];
	struct iovec v = { buf, BS };
	struct wtio_io_chan *ch;
	struct batch b = { 0 };
	struct timespec to = { 1, 0 };
	int fd = open_direct("fault-async-chan"), i, err = 0, n;
	uint64_t ev;

	ch = wtio_io_chan_open(be, 8, WTIO_CHAN_CTX, &err);
	CHECK(ch != NULL, "fault-async: chan_open %d", err);
	if (!ch)
		return;
	CHECK(wtio_fault_add_rule(f, &hold) == 0, "hold rule");
	memset(reqs, 0, sizeof(reqs));
	for (i = 0; i < 3; i++) {
		reqs[i] = (struct wtio_io_req){ .op = WTIO_IO_WRITE, .fd = fd,
			.off = (off_t)i * BS, .iov = &v, .iovcnt = 1,
			.end_io = batch_end_io, .private = &b };
		rp[i] = &reqs[i];
	}
	wtio_io_chan_submit(ch, rp, 3);
	CHECK(wtio_fault_wait_held(f, 3, 10000) == 0, "fault-async: 3 held");
	CHECK(wtio_io_chan_inflight(ch) == 3, "fault-async: chan inflight %u",
	      wtio_io_chan_inflight(ch));
	/* Released last first: completes first. */
	CHECK(wtio_fault_release_one(f, 2, 0) == 0, "release 2");
	CHECK(wtio_fault_wait_done(f, 2, 10000) == 0, "done 2");
	n = wtio_io_chan_reap(ch, 1, &to);
	CHECK(n == 1 && b.done == 1, "fault-async: reaped %d done %d", n,
	      b.done);
	CHECK(wtio_fault_release_one(f, 0, EIO) == 0, "release 0");
	CHECK(wtio_fault_release_one(f, 1, 0) == 0, "release 1");
	while (b.done < 3 && wtio_io_chan_reap(ch, 1, &to) > 0)
		;
	CHECK(b.done == 3 && b.bad == 1, "fault-async: done %d bad %d "
	      "(one failed with EIO)", b.done, b.bad);
	CHECK(wtio_io_chan_inflight(ch) == 0, "fault-async: chan inflight %u",
	      wtio_io_chan_inflight(ch));
	wtio_fault_clear_rules(f);
	wtio_io_chan_close(ch);

	/* Plugged: held back until the reap. */
	memset(&b, 0, sizeof(b));
	ev = wtio_fault_nr_events(f);
	wtio_io_plug(be, true);
	CHECK(wtio_io_submit(be, rp, 1) == 0, "plugged submit");
	usleep(10000);
	CHECK(wtio_fault_nr_events(f) == ev, "fault-async: a plugged write "
	      "ran before the reap");
	n = wtio_io_reap(be, 1, NULL);
	wtio_io_plug(be, false);
	CHECK(n == 1 && b.done == 1 && !b.bad, "plugged reap %d", n);
	CHECK(wtio_fault_nr_events(f) > ev, "fault-async: plugged write "
	      "not recorded");
	close_unlink(fd, "fault-async-chan");
	free(buf);
	printf("ok: fault-async: channel reaped in release order, an error "
	       "chosen at release, chan_inflight; plugged submit-and-wait\n");
}

/* --- fault injection ---------------------------------------------------- */

static void test_faults(void)
{
	struct wtio_fault_rule rule;
	struct wtio_io_backend be;
	struct wtio_fault *f;
	const size_t len = 4 * BS;
	char *wbuf = xalign(len), *rbuf = xalign(len), *zero = xalign(len);
	struct timespec t0, t1;
	ssize_t res;
	double ms;
	int fd, ret;

	f = wtio_fault_create();
	CHECK(f != NULL, "fault create");
	if (!f)
		return;
	ret = wtio_io_backend_setup(&be, &wtio_io_fault_ops, f, NULL, 0, 0);
	CHECK(ret == 0, "fault backend init %d", ret);
	if (ret)
		return;
	CHECK(!strcmp(wtio_io_name(&be), "fault"), "name %s", wtio_io_name(&be));
	fd = open_direct("fault");

	/* Short first write: wtio_io_full resubmits the rest. */
	memset(&rule, 0, sizeof(rule));
	rule.ops = WTIO_FAULT_WRITE;
	rule.count = 1;
	rule.short_bytes = BS;
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add short rule");
	fill(wbuf, len, 3);
	res = io1(&be, WTIO_IO_WRITE, fd, wbuf, len, 0, 0);
	CHECK(res == (ssize_t)len, "short+resubmit wrote %zd", res);
	CHECK(wtio_fault_injected(f) == 1, "injected %llu",
	      (unsigned long long)wtio_fault_injected(f));
	res = io1(&be, WTIO_IO_READ, fd, rbuf, len, 0, 0);
	CHECK(res == (ssize_t)len && !memcmp(wbuf, rbuf, len),
	      "short write data %zd", res);
	printf("ok: fault: short first write (4096 of 16384) completed by "
	       "wtio_io_full\n");

	/* Default short count: half, block-rounded. A single sync I/O shows it. */
	wtio_fault_clear_rules(f);
	rule.short_bytes = 0;
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add half rule");
	{
		struct iovec iov = { wbuf, len };
		struct wtio_io_req req = {
			.op = WTIO_IO_WRITE, .fd = fd, .off = 0,
			.iov = &iov, .iovcnt = 1,
		};

		res = wtio_io_sync(&be, &req);
		CHECK(res == (ssize_t)len / 2, "half short write %zd", res);
	}
	printf("ok: fault: short_bytes 0 gives half the I/O\n");

	/* EIO: the error comes back and nothing is written. */
	wtio_fault_clear_rules(f);
	memset(&rule, 0, sizeof(rule));
	rule.ops = WTIO_FAULT_WRITE;
	rule.count = 1;
	rule.error = EIO;
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add EIO rule");
	fill(wbuf, len, 4);
	res = io1(&be, WTIO_IO_WRITE, fd, wbuf, len, len, 0);
	CHECK(res == -EIO, "EIO write gives %zd", res);
	res = io1(&be, WTIO_IO_READ, fd, rbuf, len, len, 0);
	CHECK(res == 0, "nothing past the old EOF after EIO: %zd", res);
	res = io1(&be, WTIO_IO_WRITE, fd, wbuf, len, len, 0);
	CHECK(res == (ssize_t)len, "after count exhausted, write ok %zd", res);
	printf("ok: fault: EIO returned, data not written; rule ends after "
	       "count\n");

	/* ENOSPC after one skipped write, and only in its range. */
	wtio_fault_clear_rules(f);
	memset(&rule, 0, sizeof(rule));
	rule.ops = WTIO_FAULT_WRITE;
	rule.skip = 1;
	rule.start = 8 * BS;
	rule.end = 16 * BS;
	rule.error = ENOSPC;
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add ENOSPC rule");
	res = io1(&be, WTIO_IO_WRITE, fd, zero, len, 0, 0);
	CHECK(res == (ssize_t)len, "write outside range %zd", res);
	res = io1(&be, WTIO_IO_WRITE, fd, wbuf, BS, 8 * BS, 0);
	CHECK(res == BS, "skipped first match %zd", res);
	res = io1(&be, WTIO_IO_WRITE, fd, zero, BS, 9 * BS, 0);
	CHECK(res == -ENOSPC, "ENOSPC write gives %zd", res);
	res = io1(&be, WTIO_IO_WRITE, fd, zero, BS, 10 * BS, 0);
	CHECK(res == -ENOSPC, "count 0 faults every later match: %zd", res);
	res = io1(&be, WTIO_IO_WRITE, fd, zero, BS, 7 * BS, 0);
	CHECK(res == BS, "[7, 8) blocks does not overlap [8, 16): %zd", res);
	res = io1(&be, WTIO_IO_WRITE, fd, zero, 2 * BS, 7 * BS, 0);
	CHECK(res == -ENOSPC, "[7, 9) blocks overlaps [8, 16): %zd", res);
	/* The file ended at 9 blocks, and no failed write extended it. */
	res = io1(&be, WTIO_IO_READ, fd, rbuf, BS, 9 * BS, 0);
	CHECK(res == 0, "ENOSPC writes wrote nothing: read %zd", res);
	printf("ok: fault: ENOSPC with skip, range and unlimited count\n");

	/* Delay only: the I/O is whole, just late. */
	wtio_fault_clear_rules(f);
	memset(&rule, 0, sizeof(rule));
	rule.ops = WTIO_FAULT_READ;
	rule.count = 1;
	rule.delay_us = 100000;
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add delay rule");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	res = io1(&be, WTIO_IO_READ, fd, rbuf, BS, 8 * BS, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(res == BS && !memcmp(rbuf, wbuf, BS), "delayed read %zd", res);
	CHECK(ms >= 90, "delay was %.1f ms", ms);
	printf("ok: fault: 100 ms delay took %.1f ms, read whole\n", ms);

	/* Flush errors. */
	wtio_fault_clear_rules(f);
	memset(&rule, 0, sizeof(rule));
	rule.ops = WTIO_FAULT_FLUSH;
	rule.count = 1;
	rule.error = EIO;
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add flush rule");
	res = wtio_io_full(&be, WTIO_IO_FDATASYNC, fd, NULL, 0, 0, 0);
	CHECK(res == -EIO, "flush EIO %zd", res);
	res = wtio_io_full(&be, WTIO_IO_FSYNC, fd, NULL, 0, 0, 0);
	CHECK(res == 0, "flush after %zd", res);
	printf("ok: fault: fdatasync EIO\n");

	/* Bad rules. */
	memset(&rule, 0, sizeof(rule));
	CHECK(wtio_fault_add_rule(f, &rule) == -EINVAL, "ops 0 accepted");
	rule.ops = WTIO_FAULT_READ;
	rule.start = 10;
	rule.end = 5;
	CHECK(wtio_fault_add_rule(f, &rule) == -EINVAL, "end < start accepted");

	close_unlink(fd, "fault");
	wtio_io_backend_exit(&be);
	wtio_fault_destroy(f);
	free(wbuf);
	free(rbuf);
	free(zero);
}

/* --- recorder and replay ------------------------------------------------ */

/* Replay into a fresh scratch file and read back its first len bytes. */
static int replay_to(struct wtio_fault *f, const char *src, uint64_t nr,
		     uint64_t seed, char *out, size_t len, off_t *size)
{
	char p[256];
	struct stat st;
	ssize_t n;
	int fd, ret;

	snprintf(p, sizeof(p), "test_io_backends.%d.replay", (int)getpid());
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	unlink(p);
	ret = wtio_fault_replay(f, src, nr, seed, fd);
	memset(out, 0, len);
	if (!ret) {
		n = pread(fd, out, len, 0);
		if (n < 0)
			ret = -errno;
		fstat(fd, &st);
		*size = st.st_size;
	}
	close(fd);
	return ret;
}

static bool all(const char *p, int c, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return false;
	return true;
}

static void test_replay(void)
{
	struct wtio_io_backend be;
	struct wtio_fault *f;
	char *buf = xalign(4 * BS), out[4 * BS];
	char src[256];
	uint64_t nr, seed;
	off_t size = 0;
	int fd, ret, b_in = 0, b_out = 0, a_ok = 1, c_ok = 1;
	ssize_t res;

	f = wtio_fault_create();
	if (!f || wtio_io_backend_setup(&be, &wtio_io_fault_ops, f, NULL,
				       0, 0)) {
		CHECK(0, "fault setup");
		return;
	}
	fd = open_direct("rec");
	snprintf(src, sizeof(src), "%s", path_buf);

	memset(buf, 'A', BS);
	res = io1(&be, WTIO_IO_WRITE, fd, buf, BS, 0, 0);
	CHECK(res == BS, "write A %zd", res);
	res = wtio_io_full(&be, WTIO_IO_FDATASYNC, fd, NULL, 0, 0, 0);
	CHECK(res == 0, "fdatasync %zd", res);
	memset(buf, 'B', BS);
	res = io1(&be, WTIO_IO_WRITE, fd, buf, BS, BS, 0);
	CHECK(res == BS, "write B %zd", res);
	nr = wtio_fault_nr_events(f);
	CHECK(nr == 3, "events after A, flush, B: %llu",
	      (unsigned long long)nr);

	ret = replay_to(f, src, nr, 0, out, sizeof(out), &size);
	CHECK(ret == 0 && all(out, 'A', BS) && all(out + BS, 'B', BS) &&
	      size == 2 * BS, "seed 0: ret %d size %lld", ret,
	      (long long)size);

	ret = replay_to(f, src, 1, 0, out, sizeof(out), &size);
	CHECK(ret == 0 && all(out, 'A', BS) && size == BS,
	      "prefix of 1 event: ret %d size %lld", ret, (long long)size);

	for (seed = 1; seed <= 64; seed++) {
		ret = replay_to(f, src, nr, seed, out, sizeof(out), &size);
		CHECK(ret == 0, "replay seed %llu: %d",
		      (unsigned long long)seed, ret);
		if (!all(out, 'A', BS))
			a_ok = 0;
		if (all(out + BS, 'B', BS))
			b_in++;
		else if (all(out + BS, 0, BS))
			b_out++;
	}
	CHECK(a_ok, "flushed write A lost under some seed");
	CHECK(b_in && b_out && b_in + b_out == 64,
	      "unflushed B kept %d, dropped %d of 64", b_in, b_out);
	printf("ok: replay: A (flushed) always kept; B (unflushed) kept in "
	       "%d of 64 seeds, all of it with seed 0\n", b_in);

	/* A DSYNC write is durable by itself, but makes nothing else so. */
	memset(buf, 'C', BS);
	res = io1(&be, WTIO_IO_WRITE, fd, buf, BS, 2 * BS, RWF_DSYNC);
	CHECK(res == BS, "write C dsync %zd", res);
	nr = wtio_fault_nr_events(f);
	CHECK(nr == 5, "events with C and its FUA: %llu",
	      (unsigned long long)nr);
	b_in = b_out = 0;
	for (seed = 1; seed <= 64; seed++) {
		ret = replay_to(f, src, nr, seed, out, sizeof(out), &size);
		if (ret || !all(out + 2 * BS, 'C', BS) || !all(out, 'A', BS))
			c_ok = 0;
		if (all(out + BS, 'B', BS))
			b_in++;
		else
			b_out++;
	}
	CHECK(c_ok, "DSYNC write C (or A) lost under some seed");
	CHECK(b_in && b_out, "B should stay volatile after a later DSYNC "
	      "write: kept %d dropped %d", b_in, b_out);
	printf("ok: replay: DSYNC write always kept; earlier unflushed B "
	       "still volatile (kept %d of 64)\n", b_in);

	/* Size changes: a recorded truncate (the backend's set_size),
	 * then a full flush. */
	ret = wtio_io_set_size(&be, fd, BS);
	CHECK(ret == 0, "set_size %d", ret);
	res = wtio_io_full(&be, WTIO_IO_FSYNC, fd, NULL, 0, 0, 0);
	CHECK(res == 0, "fsync %zd", res);
	nr = wtio_fault_nr_events(f);
	for (seed = 0; seed <= 8; seed++) {
		ret = replay_to(f, src, nr, seed, out, sizeof(out), &size);
		CHECK(ret == 0 && size == BS && all(out, 'A', BS),
		      "after flushed truncate seed %llu: ret %d size %lld",
		      (unsigned long long)seed, ret, (long long)size);
	}
	printf("ok: replay: flushed truncate applied for every seed\n");

	/* Short writes are recorded as what was written. */
	{
		struct wtio_fault_rule rule = {
			.ops = WTIO_FAULT_WRITE, .count = 1, .short_bytes = BS,
		};
		struct iovec iov = { buf, 2 * BS };
		struct wtio_io_req req = {
			.op = WTIO_IO_WRITE, .fd = fd, .off = 2 * BS,
			.iov = &iov, .iovcnt = 1,
		};

		memset(buf, 'D', 2 * BS);
		wtio_fault_add_rule(f, &rule);
		res = wtio_io_sync(&be, &req);
		CHECK(res == BS, "short write %zd", res);
		ret = replay_to(f, src, UINT64_MAX, 0, out, sizeof(out), &size);
		CHECK(ret == 0 && size == 3 * BS && all(out + 2 * BS, 'D', BS),
		      "short write replay: ret %d size %lld", ret,
		      (long long)size);
	}
	printf("ok: replay: short write recorded with its real length\n");

	/* Another file's events are ignored. */
	{
		int fd2 = open_direct("rec2");
		char src2[256];

		snprintf(src2, sizeof(src2), "%s", path_buf);
		ret = replay_to(f, src2, UINT64_MAX, 0, out, sizeof(out), &size);
		CHECK(ret == 0 && size == 0, "other file: ret %d size %lld",
		      ret, (long long)size);
		close_unlink(fd2, "rec2");
	}

	/* An unflushed 4-block write lands whole, not at all, or torn (some
	 * blocks only), as the seed says; the info tells which. */
	{
		int torn = 0, whole = 0, none = 0, info_ok = 1, blk_ok = 1;
		struct wtio_fault_replay_info ri;
		char p[256], old[4 * BS];
		int b, rfd;

		res = wtio_io_full(&be, WTIO_IO_FSYNC, fd, NULL, 0, 0, 0);
		CHECK(res == 0, "fsync %zd", res);
		nr = wtio_fault_nr_events(f);
		ret = replay_to(f, src, nr, 0, old, sizeof(old), &size);
		CHECK(ret == 0, "replay before E: %d", ret);
		memset(buf, 'E', 4 * BS);
		res = io1(&be, WTIO_IO_WRITE, fd, buf, 4 * BS, 0, 0);
		CHECK(res == 4 * BS, "write E %zd", res);
		nr = wtio_fault_nr_events(f);
		snprintf(p, sizeof(p), "test_io_backends.%d.tear",
			 (int)getpid());
		for (seed = 1; seed <= 64; seed++) {
			int landed = 0;

			rfd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
			CHECK(rfd >= 0, "open %s", p);
			unlink(p);
			ret = wtio_fault_replay_ex(f, src, nr, seed, rfd, &ri);
			memset(out, 0, sizeof(out));
			CHECK(ret == 0 && pread(rfd, out, sizeof(out), 0) >= 0,
			      "tear replay seed %llu: %d",
			      (unsigned long long)seed, ret);
			close(rfd);
			for (b = 0; b < 4; b++) {
				if (all(out + b * BS, 'E', BS))
					landed++;
				else if (memcmp(out + b * BS, old + b * BS, BS))
					blk_ok = 0;
			}
			if (landed == 4)
				whole++;
			else if (landed == 0)
				none++;
			else
				torn++;
			if (ri.writes_torn != (landed > 0 && landed < 4) ||
			    ri.writes_unflushed != 1)
				info_ok = 0;
		}
		CHECK(blk_ok, "a replayed block is neither E nor its old content");
		CHECK(info_ok, "replay info disagrees with the image");
		CHECK(torn && whole && none, "64 seeds: %d torn, %d whole, %d "
		      "dropped", torn, whole, none);
		printf("ok: replay: unflushed 4-block write torn in %d, whole in "
		       "%d, dropped in %d of 64 seeds\n", torn, whole, none);
	}

	close_unlink(fd, "rec");
	wtio_io_backend_exit(&be);
	wtio_fault_destroy(f);
	free(buf);
}

/* --- hold rules ----------------------------------------------------------- */

struct hold_arg {
	struct wtio_io_backend *be;
	int fd;
	char *buf;
	ssize_t res;
	int done;
};

static void *hold_reader(void *p)
{
	struct hold_arg *a = p;

	a->res = io1(a->be, WTIO_IO_READ, a->fd, a->buf, BS, 0, 0);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A held I/O waits until released, and a test can wait until it is. */
static void test_hold(void)
{
	struct wtio_fault_rule rule = { .ops = WTIO_FAULT_READ, .count = 1,
					.hold = 1 };
	struct wtio_io_backend be;
	struct wtio_fault *f = wtio_fault_create();
	struct hold_arg a = { 0 };
	pthread_t th;
	int fd;

	if (!f || wtio_io_backend_setup(&be, &wtio_io_fault_ops, f, NULL,
				       0, 0)) {
		CHECK(0, "fault setup");
		return;
	}
	fd = open_direct("hold");
	a.be = &be;
	a.fd = fd;
	a.buf = xalign(BS);
	CHECK(wtio_fault_wait_held(f, 1, 10) == -ETIMEDOUT,
	      "wait_held with nothing held did not time out");
	CHECK(wtio_fault_add_rule(f, &rule) == 0, "add hold rule");
	pthread_create(&th, NULL, hold_reader, &a);
	CHECK(wtio_fault_wait_held(f, 1, 30000) == 0, "read never held");
	CHECK(wtio_fault_held(f) == 1, "held %llu",
	      (unsigned long long)wtio_fault_held(f));
	usleep(20000);
	CHECK(!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE),
	      "held read completed before the release");
	wtio_fault_release(f);
	pthread_join(th, NULL);
	CHECK(a.res == 0, "released read %zd (empty file: 0)", a.res);
	CHECK(wtio_fault_held(f) == 0 && wtio_fault_injected(f) == 1,
	      "after release: held %llu injected %llu",
	      (unsigned long long)wtio_fault_held(f),
	      (unsigned long long)wtio_fault_injected(f));
	close_unlink(fd, "hold");
	wtio_io_backend_exit(&be);
	wtio_fault_destroy(f);
	free(a.buf);
	printf("ok: fault: a held read waits for the release; wait_held sees "
	       "it, times out without it\n");
}

/* --- many threads on one backend ---------------------------------------- */

#define NR_THREADS	4
#define NR_IOS		200

struct mt_arg {
	struct wtio_io_backend *be;
	int fd;
	int id;
	int errors;
	pthread_barrier_t *after_io;
	pthread_barrier_t *after_exit;
};

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;
	char *w = xalign(BS), *r = xalign(BS);
	off_t off;
	ssize_t res;
	int i;

	for (i = 0; i < NR_IOS / 2; i++) {
		off = ((off_t)a->id * NR_IOS + i) * BS;
		fill(w, BS, a->id * 1000 + i);
		res = io1(a->be, WTIO_IO_WRITE, a->fd, w, BS, off, 0);
		if (res != BS)
			a->errors++;
		res = io1(a->be, WTIO_IO_READ, a->fd, r, BS, off, 0);
		if (res != BS || memcmp(w, r, BS))
			a->errors++;
	}
	if (wtio_io_inflight(a->be))
		a->errors++;
	free(w);
	free(r);
	/* Stay alive across the teardown: it must free our ring, not us. */
	pthread_barrier_wait(a->after_io);
	pthread_barrier_wait(a->after_exit);
	return NULL;
}

static void test_threads(unsigned int kind, const char *tag)
{
	pthread_barrier_t after_io, after_exit;
	struct mt_arg args[NR_THREADS];
	pthread_t th[NR_THREADS];
	struct wtio_io_backend be;
	int i, fd, ret, errors = 0;

	ret = wtio_io_backend_init(&be, kind, NULL, 0, 0);
	if (ret) {
		/* main() already set this kind up once: no skip here. */
		CHECK(0, "threads/%s: backend init %d", tag, ret);
		return;
	}
	fd = open_direct("mt");
	pthread_barrier_init(&after_io, NULL, NR_THREADS + 1);
	pthread_barrier_init(&after_exit, NULL, NR_THREADS + 1);
	for (i = 0; i < NR_THREADS; i++) {
		args[i] = (struct mt_arg){ &be, fd, i, 0, &after_io,
					   &after_exit };
		pthread_create(&th[i], NULL, mt_worker, &args[i]);
	}
	pthread_barrier_wait(&after_io);
	wtio_io_backend_exit(&be);
	pthread_barrier_wait(&after_exit);
	for (i = 0; i < NR_THREADS; i++) {
		pthread_join(th[i], NULL);
		errors += args[i].errors;
	}
	CHECK(errors == 0, "threads/%s: %d errors", tag, errors);
	pthread_barrier_destroy(&after_io);
	pthread_barrier_destroy(&after_exit);

	/* Threads that exit before teardown free their own state. */
	ret = wtio_io_backend_init(&be, kind, NULL, 0, 0);
	CHECK(ret == 0, "re-init %d", ret);
	pthread_barrier_init(&after_io, NULL, 1);
	pthread_barrier_init(&after_exit, NULL, 1);
	for (i = 0; i < NR_THREADS; i++) {
		args[i] = (struct mt_arg){ &be, fd, i, 0, &after_io,
					   &after_exit };
		pthread_create(&th[i], NULL, mt_worker, &args[i]);
	}
	for (i = 0; i < NR_THREADS; i++) {
		pthread_join(th[i], NULL);
		errors += args[i].errors;
	}
	wtio_io_backend_exit(&be);
	CHECK(errors == 0, "threads/%s (exit first): %d errors", tag, errors);
	pthread_barrier_destroy(&after_io);
	pthread_barrier_destroy(&after_exit);

	close_unlink(fd, "mt");
	printf("ok: threads/%s: %d threads x %d sync I/Os, teardown with "
	       "threads alive and after they exited\n", tag, NR_THREADS,
	       NR_IOS);
}

/* The io_uring part: its own test, skipped (77) where io_uring is not
 * available, never a pass with nothing run. */
static int main_uring(void)
{
	struct wtio_io_backend be;
	size_t arena_size = 64 * BS;
	void *arena;
	int ret;

	ret = wtio_io_backend_init(&be, WTIO_BACKEND_IO_URING, NULL, 0, 0);
	if (ret == -EOPNOTSUPP) {
		printf("SKIP: io_uring: setup failed (%s)\n", strerror(-ret));
		return 77;
	}
	CHECK(ret == 0, "IO_URING failure is %d", ret);
	if (ret)
		return 1;
	CHECK(wtio_io_can(&be, WTIO_IO_CAP_CHANNELS | WTIO_IO_CAP_ASYNC |
			  WTIO_IO_CAP_ATOMIC) &&
	      !wtio_io_can(&be, WTIO_IO_CAP_FIXED_BUFS),
	      "io_uring without an arena: caps %#x", be.caps);
	basic_roundtrip(&be, "io_uring", NULL, 0);
	wtio_io_backend_exit(&be);

	/* Buffers inside a registered arena: the fixed path. */
	arena = xalign(arena_size);
	ret = wtio_io_backend_init(&be, WTIO_BACKEND_IO_URING, arena,
				   arena_size, 0);
	CHECK(ret == 0, "io_uring with arena %d", ret);
	if (!ret) {
		CHECK(wtio_io_can(&be, WTIO_IO_CAP_FIXED_BUFS),
		      "io_uring with an arena: caps %#x", be.caps);
		basic_roundtrip(&be, "io_uring-fixed", arena, arena_size);
		wtio_io_backend_exit(&be);
	}
	ret = wtio_io_backend_init(&be, WTIO_BACKEND_IO_URING, arena,
				   arena_size, WTIO_CONFIG_NO_FIXED_BUFFERS);
	CHECK(ret == 0, "io_uring no fixed %d", ret);
	if (!ret) {
		CHECK(!wtio_io_can(&be, WTIO_IO_CAP_FIXED_BUFS),
		      "NO_FIXED_BUFFERS: caps %#x", be.caps);
		basic_roundtrip(&be, "io_uring-nofixed", arena, arena_size);
		wtio_io_backend_exit(&be);
	}
	test_threads(WTIO_BACKEND_IO_URING, "io_uring");
	free(arena);

	if (failures) {
		printf("FAIL: %d checks failed\n", failures);
		return 1;
	}
	printf("PASS\n");
	return 0;
}

/*
 * write_cached: an unaligned write (which O_DIRECT refuses) at an
 * unaligned offset lands, durably, and the description has O_DIRECT
 * again after it; a backend without the op says -EOPNOTSUPP and writes
 * nothing.
 */
static void test_write_cached(struct wtio_io_backend *be, const char *tag,
			      bool has)
{
	char data[100], back[100];
	struct iovec v = { data, sizeof(data) };
	int fd = open_direct("cached");
	ssize_t n;

	fill(data, sizeof(data), 77);
	n = wtio_io_write_cached(be, fd, &v, 1, 1001);
	if (!has) {
		CHECK(n == -EOPNOTSUPP, "%s: write_cached gives %zd", tag, n);
		CHECK(lseek(fd, 0, SEEK_END) == 0, "%s: it wrote", tag);
		close_unlink(fd, "cached");
		return;
	}
	CHECK(n == (ssize_t)sizeof(data), "%s: write_cached gives %zd", tag,
	      n);
	CHECK(fcntl(fd, F_GETFL) & O_DIRECT, "%s: O_DIRECT not set back",
	      tag);
	n = -1;
	{
		int bfd = open(path_buf, O_RDONLY);

		if (bfd >= 0) {
			n = pread(bfd, back, sizeof(back), 1001);
			close(bfd);
		}
	}
	CHECK(n == (ssize_t)sizeof(back) && !memcmp(back, data, sizeof(data)),
	      "%s: write_cached data not read back (%zd)", tag, n);
	CHECK(wtio_io_write_cached(be, fd, &v, 0, 0) == -EINVAL,
	      "%s: an empty vector accepted", tag);
	close_unlink(fd, "cached");
	printf("ok: %s: write_cached of 100 bytes at 1001 on an O_DIRECT file\n",
	       tag);
}

int main(int argc, char **argv)
{
	struct wtio_io_backend be;
	struct wtio_fault *f;
	int ret;

	if (argc > 1 && !strcmp(argv[1], "io_uring"))
		return main_uring();
	if (argc > 1) {
		fprintf(stderr, "usage: %s [io_uring]\n", argv[0]);
		return 1;
	}

	/* Selection. */
	ret = wtio_io_backend_setup(&be, &wtio_io_fault_ops, NULL, NULL, 0, 0);
	CHECK(ret == -EINVAL, "FAULT without a recorder gives %d", ret);
	ret = wtio_io_backend_init(&be, 99, NULL, 0, 0);
	CHECK(ret == -EINVAL, "unknown kind gives %d", ret);

	/* Tables: another version, or a required op missing, is refused;
	 * the built-ins say what they can do. */
	{
		struct wtio_io_ops bad = wtio_io_psync_ops;

		bad.version = WTIO_IO_OPS_VERSION + 1;
		ret = wtio_io_backend_setup(&be, &bad, NULL, NULL, 0, 0);
		CHECK(ret == -EINVAL, "other ops version gives %d", ret);
		bad = wtio_io_psync_ops;
		bad.set_size = NULL;
		ret = wtio_io_backend_setup(&be, &bad, NULL, NULL, 0, 0);
		CHECK(ret == -EINVAL, "table without set_size gives %d", ret);
		bad = wtio_io_psync_ops;
		bad.caps |= WTIO_IO_CAP_CHANNELS;
		ret = wtio_io_backend_setup(&be, &bad, NULL, NULL, 0, 0);
		CHECK(ret == -EINVAL, "CHANNELS without chan ops gives %d",
		      ret);
		CHECK(wtio_io_psync_ops.caps == WTIO_IO_CAP_ATOMIC,
		      "psync caps %#x", wtio_io_psync_ops.caps);
		CHECK(wtio_io_fault_ops.caps == WTIO_IO_CAP_ATOMIC,
		      "fault caps %#x", wtio_io_fault_ops.caps);
		printf("ok: ops tables: version and required ops checked, "
		       "psync and fault: ATOMIC only\n");
	}
	ret = wtio_io_backend_init(&be, WTIO_BACKEND_AUTO, NULL, 0, 0);
	CHECK(ret == 0, "AUTO gives %d", ret);
	if (!ret) {
		printf("ok: AUTO chose %s\n", wtio_io_name(&be));
		basic_roundtrip(&be, "auto", NULL, 0);
		wtio_io_backend_exit(&be);
	}

	ret = wtio_io_backend_init(&be, WTIO_BACKEND_PSYNC, NULL, 0, 0);
	CHECK(ret == 0, "PSYNC gives %d", ret);
	if (!ret) {
		basic_roundtrip(&be, "psync", NULL, 0);
		test_write_cached(&be, "psync", true);
		wtio_io_backend_exit(&be);
	}

	f = wtio_fault_create();
	ret = wtio_io_backend_setup(&be, &wtio_io_fault_ops, f, NULL, 0, 0);
	CHECK(ret == 0, "FAULT gives %d", ret);
	if (!ret) {
		basic_roundtrip(&be, "fault", NULL, 0);
		test_write_cached(&be, "fault", false);
		wtio_io_backend_exit(&be);
	}
	wtio_fault_destroy(f);

	/* The fault backend's asynchronous mode (tests/lib/async.c). */
	f = wtio_fault_create();
	CHECK(wtio_io_fault_async_ops.caps == (WTIO_IO_CAP_CHANNELS |
	      WTIO_IO_CAP_ASYNC | WTIO_IO_CAP_ATOMIC), "fault-async caps %#x",
	      wtio_io_fault_async_ops.caps);
	ret = wtio_io_backend_setup(&be, &wtio_io_fault_async_ops, f, NULL, 0,
				    0);
	CHECK(ret == 0, "FAULT async gives %d", ret);
	if (!ret) {
		basic_roundtrip(&be, "fault-async", NULL, 0);
		test_async_chan(&be, f);
		wtio_io_backend_exit(&be);
	}
	wtio_fault_destroy(f);

	test_faults();
	test_hold();
	test_replay();
	test_threads(WTIO_BACKEND_PSYNC, "psync");

	if (failures) {
		printf("FAIL: %d checks failed\n", failures);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
