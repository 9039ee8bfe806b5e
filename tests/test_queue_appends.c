/* SPDX-License-Identifier: MIT */
/*
 * test_queue_appends.c - several queues appending WTIO_WRITETHROUGH |
 * WTIO_DSYNC records to one file at once, as the reference's Table 1
 * does, lose nothing and never hang: every record reads back whole, the
 * file ends exactly at the last one after close, and whenever a write is
 * reported done the backing file (seen through a descriptor of its own)
 * already covers it, and reaches no further past what the writers were
 * handed than a block rounds up.
 *
 * On io_uring these appends are merged into larger I/Os behind the one
 * in flight (append_plug.c); unaligned records put two writers into one
 * folio, so one waits for the other's writeback while it is merged. An
 * alarm fails the test on a hang.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define NTHREADS 3
#define DEPTH 16u
#define PER_THREAD 200u
#define NREC (NTHREADS * PER_THREAD)
#define MAXREC 8192u

struct rec {
	_Atomic int64_t off;
	uint32_t len;
};

static struct rec recs[NREC];
static _Atomic uint32_t next_rec;
static _Atomic int64_t next_off;
static struct wtio_ctx *ctx;
static struct wtio_file *file;
static int plain_fd;
static unsigned int flags;

static const uint32_t lens[] = { 4096, 1000, 8192, 3000, 4096, 512 };

static void fill(unsigned char *p, uint32_t len, uint32_t r)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (unsigned char)(r * 131 + i * 7 + 1);
}

/* A write reported done: the backing file covers it already (DSYNC). */
static void acked(uint32_t r)
{
	struct stat st;
	int64_t end = atomic_load(&recs[r].off) + recs[r].len;

	CHECK_OK(fstat(plain_fd, &st));
	CHECKF(st.st_size >= end, "record %u done, ends at %lld, but the "
	       "file is %lld long", r, (long long)end, (long long)st.st_size);
	/* An unaligned direct write leaves the file at its block's end
	 * until the size is fixed: allow that much, not more. */
	CHECKF(st.st_size <= (atomic_load(&next_off) | 65535) + 1,
	       "file %lld long, past the %lld handed out",
	       (long long)st.st_size, (long long)atomic_load(&next_off));
}

static unsigned int reap(struct wtio_queue *q, unsigned int min)
{
	struct wtio_cqe cqe[DEPTH];
	int n = wtio_queue_reap(q, cqe, DEPTH, min, -1);

	CHECKF(n >= (int)min, "reap gave %d", n);
	for (int k = 0; k < n; k++) {
		uint32_t r = (uint32_t)cqe[k].user_data;

		CHECKF(cqe[k].res == recs[r].len, "record %u: %lld", r,
		       (long long)cqe[k].res);
		acked(r);
	}
	return (unsigned int)n;
}

static void *writer(void *arg)
{
	static _Thread_local unsigned char buf[DEPTH][MAXREC];
	struct wtio_queue *q;
	unsigned int i, inflight = 0;

	(void)arg;
	CHECK_OK(wtio_queue_create(ctx, DEPTH, &q));
	for (i = 0; i < PER_THREAD; i++) {
		uint32_t r = atomic_fetch_add(&next_rec, 1);
		uint32_t len = lens[r % (sizeof(lens) / sizeof(lens[0]))];
		unsigned char *p = buf[i % DEPTH];
		int64_t off;

		if (inflight == DEPTH)
			inflight -= reap(q, 1);
		recs[r].len = len;
		fill(p, len, r);
		off = atomic_fetch_add(&next_off, len);
		atomic_store(&recs[r].off, off);
		CHECK_OK(wtio_queue_pwrite(q, file, p, len, (off_t)off, flags,
					   r));
		inflight++;
	}
	while (inflight)
		inflight -= reap(q, 1);
	CHECK_OK(wtio_queue_destroy(q));
	return NULL;
}

static void run(uint32_t backend, const char *name, const char *path,
		unsigned int extra)
{
	static unsigned char got[MAXREC], want[MAXREC];
	pthread_t t[NTHREADS];
	struct wtio_config cfg;
	struct stat st;
	uint32_t r;
	int i, fd;

	wtio_config_init(&cfg);
	cfg.backend = backend;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &file));
	plain_fd = open(path, O_RDONLY);
	CHECK(plain_fd >= 0);
	flags = WTIO_WRITETHROUGH | WTIO_DSYNC | extra;
	atomic_store(&next_rec, 0);
	atomic_store(&next_off, 0);
	for (i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, writer, NULL));
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));

	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, (long long)atomic_load(&next_off));
	for (r = 0; r < NREC; r++) {
		int64_t off = atomic_load(&recs[r].off);

		CHECK_EQ(pread(fd, got, recs[r].len, (off_t)off), recs[r].len);
		fill(want, recs[r].len, r);
		CHECKF(!memcmp(got, want, recs[r].len),
		       "%s: record %u at %lld differs", name, r,
		       (long long)off);
	}
	close(fd);
	close(plain_fd);
	printf("%s%s: %u DSYNC appends from %d queues: all there, size "
	       "exact\n", name, extra ? " noserial" : "", NREC, NTHREADS);
}

int main(void)
{
	char path[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	alarm(120);
	snprintf(path, sizeof(path), "queue_appends.%d", (int)getpid());
	run(WTIO_BACKEND_AUTO, "auto", path, 0);
	run(WTIO_BACKEND_AUTO, "auto", path, WTIO_NOSERIAL);
	run(WTIO_BACKEND_PSYNC, "psync", path, 0);
	unlink(path);
	printf("PASS\n");
	return T_EXIT_PASS;
}
