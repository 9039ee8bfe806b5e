/* SPDX-License-Identifier: MIT */
/*
 * test_dsync_appends.c - several threads appending WTIO_DSYNC writes to
 * one file never hang, and leave the file exactly as long as what they
 * appended, in write-back, write-through and write-through NOSERIAL mode,
 * with and without an fsync thread.
 *
 * The DSYNC writers fix the backing file's size under a shared file
 * lock, so several size changes run at once at the disk-size gate while
 * the other writers' (and the flushers') extending writes go on. The
 * gate was once a flag: a size change that finished lowered it under one
 * still waiting for those writes to drain, and the waiter was never
 * woken (wtio-bench --rw=write --file_append --sync=dsync --numjobs=4
 * hung). The race needs many short rounds; an alarm fails the test on a
 * hang.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"

#define NR_WRITERS 4
#define BS 4096u
#define PER_ROUND 64u		/* appends per writer and round */
#define BUDGET_NS 9000000000ull	/* all modes together */

struct mode {
	const char *name;
	unsigned int flags;
	bool fsyncer;
};

static const struct mode modes[] = {
	{ "write-back", WTIO_DSYNC, false },
	{ "write-back + fsync", WTIO_DSYNC, true },
	{ "write-through", WTIO_WRITETHROUGH | WTIO_DSYNC, false },
	{ "write-through NOSERIAL",
	  WTIO_WRITETHROUGH | WTIO_NOSERIAL | WTIO_DSYNC, true },
};

static struct wtio_file *file;
static const struct mode *mode;
static _Atomic int64_t next_off;
static _Atomic int writers_left;
static pthread_barrier_t start;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *writer(void *arg)
{
	unsigned char buf[BS];
	unsigned int i;

	(void)arg;
	pthread_barrier_wait(&start);
	for (i = 0; i < PER_ROUND; i++) {
		/* An append: each write claims the next block, so every
		 * one of them moves the end of the file. */
		int64_t off = atomic_fetch_add(&next_off, BS);

		memset(buf, (int)(off / BS % 251) + 1, BS);
		CHECK_EQ(wtio_pwrite(file, buf, BS, (off_t)off, mode->flags),
			 BS);
	}
	atomic_fetch_sub(&writers_left, 1);
	return NULL;
}

static void *fsyncer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	while (atomic_load(&writers_left))
		CHECK_OK(wtio_fsync(file));
	return NULL;
}

/* One round: a new file, NR_WRITERS threads appending to it. */
static void round_once(struct wtio_ctx *ctx, const char *path)
{
	pthread_t t[NR_WRITERS + 1];
	int64_t want = (int64_t)NR_WRITERS * PER_ROUND * BS;
	unsigned char buf[BS];
	struct stat st;
	int i, n = NR_WRITERS + (mode->fsyncer ? 1 : 0);

	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &file));
	atomic_store(&next_off, 0);
	atomic_store(&writers_left, NR_WRITERS);
	CHECK_OK(pthread_barrier_init(&start, NULL, (unsigned int)n));
	for (i = 0; i < NR_WRITERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, writer, NULL));
	if (mode->fsyncer)
		CHECK_OK(pthread_create(&t[i], NULL, fsyncer, NULL));
	for (i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	pthread_barrier_destroy(&start);
	/* Every append was DSYNC: the kernel sees the exact size now. */
	CHECK_OK(stat(path, &st));
	CHECKF(st.st_size == want, "%s: the file is %lld bytes after the "
	       "appends, want %lld", mode->name, (long long)st.st_size,
	       (long long)want);
	/* The last block holds the last append's data. */
	CHECK_EQ(wtio_pread(file, buf, BS, (off_t)(want - BS), 0), BS);
	CHECKF(buf[0] == (unsigned char)((want - BS) / BS % 251 + 1) &&
	       buf[BS - 1] == buf[0], "%s: the last block reads %u",
	       mode->name, buf[0]);
	CHECK_OK(wtio_close(file));
}

int main(void)
{
	const char *path = t_tmpfile("dsync-appends");
	uint64_t t0 = now_ns(), slice = BUDGET_NS / (sizeof(modes) /
						      sizeof(modes[0]));
	unsigned int m;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_watchdog(20, "FAIL: DSYNC appends hung (a writer waiting at the "
		   "disk-size gate for ever?)\n");
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct wtio_config cfg;
		struct wtio_ctx *ctx;
		uint64_t end = t0 + slice * (m + 1);
		unsigned int rounds = 0;

		mode = &modes[m];
		wtio_config_init(&cfg);
		CHECK_OK(wtio_ctx_create(&cfg, &ctx));
		do {
			round_once(ctx, path);
			rounds++;
		} while (now_ns() < end);
		CHECK_OK(wtio_ctx_destroy(ctx));
		printf("%s: %u rounds of %d threads x %u DSYNC appends\n",
		       mode->name, rounds, NR_WRITERS, PER_ROUND);
	}
	return T_EXIT_PASS;
}
