/* SPDX-License-Identifier: MIT */
/*
 * test_uring_signals: write-through writes, queued writes and fsync on the
 * io_uring backend from threads that a signal storm keeps interrupting
 * (SIGALRM every 20 us, a handler without SA_RESTART). Each thread is new,
 * so each has a new ring and io-wq: its first extending direct write is
 * punted, and the io-wq worker the kernel starts for it from the thread
 * fails to start while the signal is pending, which the kernel reports
 * as -ECANCELED (or -EINTR for an interrupted inline issue). The kernel's
 * write(2) and fsync(2) of a regular file never fail so, and neither may
 * wtio's: every call succeeds and the disk holds every byte.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/time.h>

#include "helpers.h"

#define NTHREADS 40
#define NWRITES 8
#define WSIZE 65536

static struct wtio_ctx *ctx;
static const char *path = "test_uring_signals.dat";
/* Any thread may take the signal, the library's too: counted atomically
 * (lock-free, so safe in a handler). */
static _Atomic long sigs;
static _Atomic int fails;

static void on_alarm(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&sigs, 1, memory_order_relaxed);
}

static void fill(char *b, int t, int k)
{
	for (int i = 0; i < WSIZE; i++)
		b[i] = (char)(t * 131 + k * 17 + i * 7);
}

/* One queued write: the queue's channel ring. */
static void queued_write(struct wtio_file *f, char *buf, int t)
{
	struct wtio_queue *q;
	struct wtio_cqe cqe;
	int r;

	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	fill(buf, t, NWRITES);
	CHECK_OK(wtio_queue_pwrite(q, f, buf, WSIZE,
				   ((off_t)t * (NWRITES + 1) + NWRITES) * WSIZE,
				   WTIO_WRITETHROUGH, 1));
	while ((r = wtio_queue_reap(q, &cqe, 1, 1, -1)) == 0)
		;
	if (r != 1 || cqe.res != WSIZE) {
		fprintf(stderr, "thread %d queued write: %d %lld (%s)\n", t, r,
			(long long)cqe.res,
			cqe.res < 0 ? strerror((int)-cqe.res) : "");
		atomic_fetch_add(&fails, 1);
	}
	CHECK_OK(wtio_queue_destroy(q));
}

static void *writer(void *arg)
{
	int t = (int)(long)arg;
	static __thread char buf[WSIZE];
	struct wtio_file *f;
	sigset_t set;
	ssize_t n;
	int r;

	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	CHECK_OK(wtio_open(ctx, path, O_RDWR, 0, 0, &f));
	/* The thread's first punted I/O starts its io-wq worker: on the
	 * channel's ring for even threads, on the thread's own for odd. */
	if (!(t & 1))
		queued_write(f, buf, t);
	for (int k = 0; k < NWRITES; k++) {
		off_t off = ((off_t)t * (NWRITES + 1) + k) * WSIZE;

		fill(buf, t, k);
		n = wtio_pwrite(f, buf, WSIZE, off, WTIO_WRITETHROUGH);
		if (n != WSIZE) {
			fprintf(stderr, "thread %d write %d: %zd (%s)\n", t, k,
				n, n < 0 ? strerror((int)-n) : "short");
			atomic_fetch_add(&fails, 1);
		}
	}
	if (t & 1)
		queued_write(f, buf, t);
	r = wtio_fsync(f);
	if (r) {
		fprintf(stderr, "thread %d fsync: %d (%s)\n", t, r,
			strerror(-r));
		atomic_fetch_add(&fails, 1);
	}
	CHECK_OK(wtio_close(f));
	return NULL;
}

int main(void)
{
	struct itimerval it = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa = { .sa_handler = on_alarm };
	struct wtio_config cfg;
	struct wtio_file *f;
	char want[WSIZE], got[WSIZE];
	sigset_t set;
	pthread_t th;
	int fd;

	wtio_config_init(&cfg);
	cfg.backend = WTIO_BACKEND_IO_URING;
	cfg.cache_size = 4 << 20;
	if (wtio_ctx_create(&cfg, &ctx))
		t_skip("no io_uring context here");
	unlink(path);
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &f));
	CHECK_OK(wtio_close(f));
	/* The storm lands on the writer threads only (main blocks it). */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (long t = 0; t < NTHREADS; t++) {
		CHECK_OK(pthread_create(&th, NULL, writer, (void *)t));
		CHECK_OK(pthread_join(th, NULL));
	}
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK_OK(wtio_ctx_destroy(ctx));
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	for (int t = 0; t < NTHREADS; t++)
		for (int k = 0; k <= NWRITES; k++) {
			off_t o = ((off_t)t * (NWRITES + 1) + k) * WSIZE;

			fill(want, t, k);
			if (pread(fd, got, WSIZE, o) != WSIZE ||
			    memcmp(got, want, WSIZE)) {
				fprintf(stderr, "thread %d write %d not on disk\n", t, k);
				atomic_fetch_add(&fails, 1);
			}
		}
	close(fd);
	unlink(path);
	printf("%ld signals, %d failures\n", atomic_load(&sigs), atomic_load(&fails));
	return atomic_load(&fails) ? T_EXIT_FAIL : T_EXIT_PASS;
}
