/* SPDX-License-Identifier: MIT */
/*
 * test_aio_chan.c - the channels over Linux AIO (WTIO_CONFIG_AIO_CHANNELS)
 * keep the channel rules: a completion is delivered once, by whichever
 * thread reaps (here never the submitter); a request the kernel refuses
 * completes with that error and the rest of its batch still goes; a
 * full ring (io_submit's -EAGAIN), a partial io_submit and an
 * interrupted wait lose and repeat nothing; a short or failed completion
 * reaches end_io as it came. Then through a context's queue: a queued
 * write-through write whose I/O came back short is finished by
 * resubmitting the rest and acknowledged with its whole count and data
 * on disk, and one whose I/O failed reports the error and leaves the
 * file's size where it was. Last, which channel a queue gets: AIO by
 * default, io_uring when asked for.
 *
 * The faults are injected under the library's system-call table
 * (src/sys.h): io_submit and io_getevents answer as a kernel could.
 */
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "helpers.h"
#include "sys.h"
#include "io/io.h"

#define BS 4096u

static long (*real_syscall)(long, ...);
static _Atomic int inj_eagain;		/* io_submit: -EAGAIN this often */
static _Atomic int inj_partial;		/* io_submit: submit only the first */
static _Atomic int inj_eintr;		/* io_getevents: -EINTR, takes none */
static _Atomic int inj_short;		/* next event: 4096 bytes fewer */
static _Atomic int inj_eio;		/* next event: -EIO */
static _Atomic int nr_submit_calls;

static long fake_syscall(long n, ...)
{
	va_list ap;
	long a[6], r, i;

	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_io_submit) {
		atomic_fetch_add(&nr_submit_calls, 1);
		if (atomic_load(&inj_eagain) > 0 &&
		    atomic_fetch_sub(&inj_eagain, 1) > 0) {
			errno = EAGAIN;
			return -1;
		}
		if (a[1] > 1 && atomic_exchange(&inj_partial, 0))
			a[1] = 1;
	}
	if (n == SYS_io_getevents && atomic_load(&inj_eintr) > 0 &&
	    atomic_fetch_sub(&inj_eintr, 1) > 0) {
		errno = EINTR;
		return -1;
	}
	r = real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (n == SYS_io_getevents && r > 0) {
		struct io_event *ev = (struct io_event *)a[3];

		for (i = 0; i < r; i++) {
			if (ev[i].res > (long long)BS &&
			    atomic_exchange(&inj_short, 0))
				ev[i].res -= BS;
			else if (ev[i].res > 0 && atomic_exchange(&inj_eio, 0))
				ev[i].res = -EIO;
		}
	}
	return r;
}

struct done {
	struct wtio_io_req req;
	struct iovec iov;
	_Atomic int calls;
	_Atomic long long res;
	pthread_t by;
};

static void end_io(struct wtio_io_req *req, ssize_t res)
{
	struct done *d = (struct done *)req;

	d->by = pthread_self();
	atomic_store(&d->res, (long long)res);
	atomic_fetch_add_explicit(&d->calls, 1, memory_order_release);
}

static void prep(struct done *d, int fd, void *buf, size_t len, off_t off,
		 int rw_flags)
{
	memset(d, 0, sizeof(*d));
	d->iov.iov_base = buf;
	d->iov.iov_len = len;
	d->req.op = WTIO_IO_WRITE;
	d->req.fd = fd;
	d->req.off = off;
	d->req.iov = &d->iov;
	d->req.iovcnt = 1;
	d->req.rw_flags = rw_flags;
	d->req.end_io = end_io;
}

static struct wtio_io_chan *chan;
static _Atomic bool reaper_stop;
static pthread_t reaper;

/* The channel's only reaper: the submitter never reaps in part 1. */
static void *reaper_main(void *arg)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	(void)arg;
	while (!atomic_load(&reaper_stop))
		wtio_io_chan_reap(chan, 1, &ts);
	return NULL;
}

static void wait_calls(struct done *d, int n, unsigned int nr)
{
	uint64_t end = t_now_ms() + 10000;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		while (atomic_load_explicit(&d[i].calls,
					    memory_order_acquire) < 1) {
			CHECKF(t_now_ms() < end, "request %u never completed",
			       i);
			usleep(100);
		}
	}
	usleep(20 * 1000);	/* a second end_io would come by now */
	for (i = 0; i < nr; i++)
		CHECKF(atomic_load(&d[i].calls) == n,
		       "request %u: end_io ran %d times", i,
		       atomic_load(&d[i].calls));
}

static void part_channel(void)
{
	struct wtio_io_backend be;
	struct wtio_io_req *rp[4];
	struct done d[4];
	const char *path = t_tmpfile("aio-chan");
	unsigned char *buf, *back;
	int fd, bad, err = 0, ret, i;

	ret = wtio_io_backend_init(&be, WTIO_BACKEND_IO_URING, NULL, 0,
				   WTIO_CONFIG_AIO_CHANNELS);
	if (ret)
		t_skip("no io_uring backend here (%s)", strerror(-ret));
	chan = wtio_io_chan_open(&be, 16, WTIO_CHAN_CTX, &err);
	CHECKF(chan, "chan_open: %s", strerror(-err));
	if (strcmp(wtio_io_chan_name(chan), "aio"))
		t_skip("Linux AIO cannot be set up here (channel: %s)",
		       wtio_io_chan_name(chan));
	fd = open(path, O_RDWR | O_DIRECT);
	CHECK(fd >= 0);
	CHECK_OK(posix_memalign((void **)&buf, BS, 4 * 2 * BS));
	CHECK_OK(posix_memalign((void **)&back, BS, 2 * BS));
	t_fill(buf, 4 * 2 * BS, 7, 0);
	CHECK_OK(pthread_create(&reaper, NULL, reaper_main, NULL));

	/* Reaped by the other thread; RWF_DSYNC goes with the write. */
	prep(&d[0], fd, buf, 2 * BS, 0, RWF_DSYNC);
	rp[0] = &d[0].req;
	CHECK_OK(wtio_io_chan_submit(chan, rp, 1));
	wait_calls(d, 1, 1);
	CHECK_EQ(atomic_load(&d[0].res), 2 * BS);
	CHECK(pthread_equal(d[0].by, reaper));
	CHECK(!pthread_equal(d[0].by, pthread_self()));
	CHECK_EQ(pread(fd, back, 2 * BS, 0), 2 * BS);
	CHECK(!memcmp(back, buf, 2 * BS));

	/* A refused request (bad descriptor) ends at once, with its
	 * error, in the submitter; the one after it still goes. */
	bad = dup(fd);
	CHECK(bad >= 0);
	close(bad);
	prep(&d[0], bad, buf, BS, 0, 0);
	prep(&d[1], fd, buf + 2 * BS, 2 * BS, 2 * BS, 0);
	rp[0] = &d[0].req;
	rp[1] = &d[1].req;
	CHECK_OK(wtio_io_chan_submit(chan, rp, 2));
	CHECK_EQ(atomic_load(&d[0].calls), 1);
	CHECK_EQ(atomic_load(&d[0].res), -EBADF);
	CHECK(pthread_equal(d[0].by, pthread_self()));
	wait_calls(d + 1, 1, 1);
	CHECK_EQ(atomic_load(&d[1].res), 2 * BS);

	/* A full ring, then a partial submit, then an interrupted wait:
	 * each request once, whole. */
	atomic_store(&inj_eagain, 3);
	atomic_store(&inj_partial, 1);
	atomic_store(&inj_eintr, 2);
	for (i = 0; i < 4; i++) {
		prep(&d[i], fd, buf + (size_t)i * 2 * BS, 2 * BS,
		     (off_t)i * 2 * BS, 0);
		rp[i] = &d[i].req;
	}
	CHECK_OK(wtio_io_chan_submit(chan, rp, 4));
	CHECK_EQ(atomic_load(&inj_eagain), 0);
	CHECK_EQ(atomic_load(&inj_partial), 0);
	wait_calls(d, 1, 4);
	for (i = 0; i < 4; i++)
		CHECK_EQ(atomic_load(&d[i].res), 2 * BS);

	/* Short and failed completions are reported as they came. */
	atomic_store(&inj_short, 1);
	prep(&d[0], fd, buf, 2 * BS, 0, 0);
	rp[0] = &d[0].req;
	CHECK_OK(wtio_io_chan_submit(chan, rp, 1));
	wait_calls(d, 1, 1);
	CHECK_EQ(atomic_load(&d[0].res), BS);
	atomic_store(&inj_eio, 1);
	prep(&d[0], fd, buf, 2 * BS, 0, 0);
	CHECK_OK(wtio_io_chan_submit(chan, rp, 1));
	wait_calls(d, 1, 1);
	CHECK_EQ(atomic_load(&d[0].res), -EIO);
	CHECK_EQ(wtio_io_chan_inflight(chan), 0);

	atomic_store(&reaper_stop, true);
	CHECK_OK(pthread_join(reaper, NULL));
	wtio_io_chan_close(chan);
	wtio_io_backend_exit(&be);
	close(fd);
	free(buf);
	free(back);
}

/* One queued write-through write, reaped whole; its result. */
static int64_t queue_write(struct wtio_queue *q, struct wtio_file *f,
			   const void *buf, size_t len, off_t off)
{
	struct wtio_cqe cqe;

	CHECK_OK(wtio_queue_pwrite(q, f, buf, len, off,
				   WTIO_WRITETHROUGH | WTIO_DSYNC, 1));
	CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, 10ll * 1000 * 1000 * 1000),
		 1);
	return cqe.res;
}

/* An io_uring context with flags, path open in it, a queue of 8. */
static struct wtio_ctx *queue_open(unsigned int flags, const char *path,
				   struct wtio_file **fp, struct wtio_queue **qp)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;

	wtio_config_init(&cfg);
	cfg.cache_size = 256 * BS;
	cfg.flags |= flags;
	cfg.backend = WTIO_BACKEND_IO_URING;
	ctx = t_ctx_create_or_skip(&cfg);
	*fp = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_queue_create(ctx, 8, qp));
	return ctx;
}

static void part_queue(void)
{
	const char *path = t_tmpfile("aio-queue");
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	unsigned char *buf, *disk;
	size_t len;
	int calls;

	ctx = queue_open(WTIO_CONFIG_AIO_CHANNELS, path, &f, &q);
	buf = t_malloc(8 * BS);
	t_fill(buf, 8 * BS, 11, 0);

	/* Short: the rest goes again; acknowledged whole, on disk. */
	calls = atomic_load(&nr_submit_calls);
	atomic_store(&inj_short, 1);
	CHECK_EQ(queue_write(q, f, buf, 4 * BS, 0), 4 * BS);
	CHECK_EQ(atomic_load(&inj_short), 0);
	CHECKF(atomic_load(&nr_submit_calls) - calls >= 2,
	       "the rest of a short write was not resubmitted");
	disk = t_read_disk(path, &len);
	CHECK_EQ(len, 4 * BS);
	CHECK(!memcmp(disk, buf, 4 * BS));
	free(disk);

	/* Failed: the error is the write's, the size stays. */
	atomic_store(&inj_eio, 1);
	CHECK_EQ(queue_write(q, f, buf + 4 * BS, 4 * BS, 4 * BS), -EIO);
	CHECK_EQ(atomic_load(&inj_eio), 0);
	CHECK_EQ(wtio_file_size(f), 4 * BS);
	CHECK_EQ(t_disk_size(path), 4 * BS);

	/* And the next one goes as usual. */
	CHECK_EQ(queue_write(q, f, buf + 4 * BS, 4 * BS, 4 * BS), 4 * BS);
	CHECK_EQ(wtio_file_size(f), 8 * BS);
	CHECK_OK(wtio_queue_destroy(q));
	(void)wtio_close(f);
	CHECK_OK(wtio_ctx_destroy(ctx));
	disk = t_read_disk(path, &len);
	CHECK_EQ(len, 8 * BS);
	CHECK(!memcmp(disk, buf, 8 * BS));
	free(disk);
	free(buf);
}

/* io_submit calls a queued write-through overwrite made under flags (and
 * the environment variable as it is now). An overwrite: appends go
 * through the context's channel (src/append_plug.c). */
static int queue_submits(unsigned int flags)
{
	const char *path = t_tmpfile("aio-choice");
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	unsigned char *buf;
	int calls;

	ctx = queue_open(flags, path, &f, &q);
	buf = t_malloc(4 * BS);
	t_fill(buf, 4 * BS, 5, 0);
	CHECK_EQ(wtio_pwrite(f, buf, 4 * BS, 0, 0), 4 * BS);
	CHECK_OK(wtio_fsync(f));
	calls = atomic_load(&nr_submit_calls);
	CHECK_EQ(queue_write(q, f, buf, 4 * BS, 0), 4 * BS);
	calls = atomic_load(&nr_submit_calls) - calls;
	CHECK_OK(wtio_queue_destroy(q));
	(void)wtio_close(f);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
	return calls;
}

/* Which channel a queue gets: AIO by default and under
 * WTIO_CONFIG_AIO_CHANNELS, io_uring under WTIO_CONFIG_URING_CHANNELS;
 * WTIO_IO_CHANNEL overrides the flags; both flags are refused. */
static void part_choice(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;

	CHECK_OK(unsetenv("WTIO_IO_CHANNEL"));
	CHECKF(queue_submits(0) > 0, "a default queue did not use AIO");
	CHECKF(queue_submits(WTIO_CONFIG_AIO_CHANNELS) > 0,
	       "WTIO_CONFIG_AIO_CHANNELS: the queue did not use AIO");
	CHECKF(queue_submits(WTIO_CONFIG_URING_CHANNELS) == 0,
	       "WTIO_CONFIG_URING_CHANNELS: the queue used AIO");
	CHECK_OK(setenv("WTIO_IO_CHANNEL", "io_uring", 1));
	CHECKF(queue_submits(WTIO_CONFIG_AIO_CHANNELS) == 0,
	       "WTIO_IO_CHANNEL=io_uring: the queue used AIO");
	CHECK_OK(setenv("WTIO_IO_CHANNEL", "aio", 1));
	CHECKF(queue_submits(WTIO_CONFIG_URING_CHANNELS) > 0,
	       "WTIO_IO_CHANNEL=aio: the queue did not use AIO");
	CHECK_OK(unsetenv("WTIO_IO_CHANNEL"));
	wtio_config_init(&cfg);
	cfg.flags |= WTIO_CONFIG_AIO_CHANNELS | WTIO_CONFIG_URING_CHANNELS;
	ctx = NULL;
	CHECK_EQ(wtio_ctx_create(&cfg, &ctx), -EINVAL);
	CHECK(!ctx);
}

/* Events fs.aio-max-nr has left for this program (-1: cannot tell). */
static long aio_room(void)
{
	long max = -1, nr = -1;
	FILE *fp;

	fp = fopen("/proc/sys/fs/aio-max-nr", "r");
	if (fp) {
		if (fscanf(fp, "%ld", &max) != 1)
			max = -1;
		fclose(fp);
	}
	fp = fopen("/proc/sys/fs/aio-nr", "r");
	if (fp) {
		if (fscanf(fp, "%ld", &nr) != 1)
			nr = -1;
		fclose(fp);
	}
	return max < 0 || nr < 0 ? -1 : max - nr;
}

int main(void)
{
	struct wtio_sys tab = wtio_sys_tab;
	long room = aio_room();

	t_watchdog(60, "FAIL: AIO channel test hung (watchdog)\n");
	t_require_odirect();
	/* The variable overrides the flags, and this test asks for AIO by
	 * flag: a run of the suite with WTIO_IO_CHANNEL=io_uring would
	 * test io_uring here. Its own effect is the last part's. */
	CHECK_OK(unsetenv("WTIO_IO_CHANNEL"));
	/* A context's channel takes 256 events, a queue's 64, this test's
	 * own 64: with less left, a channel falls back to io_uring (as it
	 * should) and the parts below would not test AIO. */
	if (room >= 0 && room < 512)
		t_skip("fs.aio-max-nr leaves %ld AIO events free; this test "
		       "needs 512", room);
	real_syscall = tab.syscall;
	tab.syscall = fake_syscall;
	CHECK_OK(wtio_sys_set(&tab));
	part_channel();
	part_queue();
	part_choice();
	printf("PASS\n");
	return T_EXIT_PASS;
}
