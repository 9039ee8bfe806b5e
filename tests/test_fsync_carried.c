/* SPDX-License-Identifier: MIT */
/*
 * test_fsync_carried.c - fsync never returns 0 while an acknowledged
 * write-back block is given back dirty by write-through I/Os that keep
 * failing for their own lack of space.
 *
 * Block A (folio F) is written back-style and acknowledged. Write-through
 * writer W1 writes another block of F: its I/O carries A along and runs
 * out of space (the writer's error, recorded for nobody else), giving A
 * back dirty. An fsync began while W1's I/O was in flight; its extra pass
 * for folios given back (redirty_seq) used to be one: W2, waiting for F
 * with its lock, put F under writeback again first, so the pass found
 * nothing dirty, and W2's own failure gave A back after it: fsync
 * returned 0 with A not on disk (a review's reproducer, about one round
 * in two). The passes now go on until the count stays. The fault
 * backend holds the I/Os to order the steps; another folio's held I/O
 * (G) keeps the fsync in its first wait until W2 has started. Several
 * rounds, since the order is forced only in part.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "t_fault.h"

#define ROUNDS 6

static struct wtio_file *f;
static uint8_t w1buf[4096], w2buf[4096], gbuf[4096];
static _Atomic int d1, d2, ds, dg;
static int r_sync;

/* A write-through write of one block by a thread of its own. */
struct wt_job {
	uint8_t *buf;
	off_t off;
	_Atomic int *done;
};

static void *th_write(void *arg)
{
	struct wt_job *j = arg;

	wtio_pwrite(f, j->buf, 4096, j->off, WTIO_WRITETHROUGH);
	atomic_store(j->done, 1);
	return NULL;
}

static void *th_sync(void *arg)
{
	(void)arg;
	r_sync = wtio_fsync(f);
	atomic_store(&ds, 1);
	return NULL;
}

static void release_from(struct wtio_fault *fault, uint64_t from, int outcome)
{
	uint64_t s;

	for (s = from; s < from + 64; s++)
		wtio_fault_release_one(fault, s, outcome);
}

static void round_once(int round)
{
	const size_t flen = 65536;
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule nospc = {
		.ops = WTIO_FAULT_WRITE, .error = ENOSPC, .hold = 1,
	};
	const char *fp = t_tmpfile("fsync-carried");
	uint8_t *old = t_malloc(flen), *a = t_malloc(4096), *disk;
	struct wtio_ctx *ctx;
	pthread_t t1, t2, ts, tg;
	struct wt_job jg = { gbuf, 32768, &dg }, j1 = { w1buf, 4096, &d1 },
		      j2 = { w2buf, 4096, &d2 };
	size_t dlen;
	int i;

	d1 = d2 = ds = dg = 0;
	t_fill(old, flen, 21, 0);
	t_write_disk(fp, old, flen);
	t_fill(a, 4096, 22 + (uint64_t)round, 0);
	t_fill(w1buf, 4096, 23, 0);
	t_fill(w2buf, 4096, 24, 0);
	t_fill(gbuf, 4096, 25, 0);
	ctx = t_fault_ctx(fault, 16384, 64);
	f = t_open(ctx, fp, O_RDWR);
	CHECK_EQ(wtio_pwrite(f, a, 4096, 0, 0), 4096);
	CHECK_OK(wtio_fault_add_rule(fault, &nospc));
	CHECK_OK(pthread_create(&tg, NULL, th_write, &jg));
	CHECK_OK(wtio_fault_wait_held(fault, 1, 5000));	/* hold 0: G */
	CHECK_OK(pthread_create(&t1, NULL, th_write, &j1));
	CHECK_OK(wtio_fault_wait_held(fault, 2, 5000));	/* hold 1: W1, with A */
	CHECK_OK(pthread_create(&ts, NULL, th_sync, NULL));
	usleep(100000);			/* the fsync waits: F, then G */
	CHECK_OK(pthread_create(&t2, NULL, th_write, &j2));
	usleep(100000);			/* W2 waits for F's writeback */
	wtio_fault_release_one(fault, 1, -1);	/* W1: out of space */
	for (i = 0; i < 500 && !atomic_load(&d1); i++) {
		release_from(fault, 2, -1);	/* its retries too */
		usleep(2000);
	}
	/* G and W2's I/O; or G alone if the loop above, still releasing
	 * W1's retries, released W2's I/O too (a slow machine): W2 is then
	 * done, and the round's order is one of the others. */
	for (i = 0; i < 2500 && wtio_fault_held(fault) < 2 &&
	     !atomic_load(&d2); i++)
		usleep(2000);
	CHECKF(wtio_fault_held(fault) >= 2 || atomic_load(&d2),
	       "round %d: W2's write neither held nor done", round);
	wtio_fault_release_one(fault, 0, 0);	/* G done: the fsync goes on */
	usleep(150000);
	while (!(atomic_load(&d2) && atomic_load(&ds) && atomic_load(&dg))) {
		release_from(fault, 2, -1);	/* W2 and any retry: no space */
		usleep(10000);
	}
	CHECK_OK(pthread_join(t1, NULL));
	CHECK_OK(pthread_join(t2, NULL));
	CHECK_OK(pthread_join(ts, NULL));
	CHECK_OK(pthread_join(tg, NULL));
	disk = t_read_disk(fp, &dlen);
	CHECKF(r_sync != 0 || memcmp(disk, a, 4096) == 0,
	       "round %d: fsync returned 0 and the acknowledged block is not "
	       "on disk", round);
	free(disk);
	/* Space again: the next fsync writes A. */
	wtio_fault_clear_rules(fault);
	wtio_fault_release(fault);
	CHECK_OK(wtio_fsync(f));
	disk = t_read_disk(fp, &dlen);
	CHECKF(dlen == flen && memcmp(disk, a, 4096) == 0,
	       "round %d: the acknowledged block not on disk after a "
	       "successful fsync", round);
	free(disk);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	unlink(fp);
	free(old);
	free(a);
}

int main(void)
{
	int r;

	t_require_odirect();
	t_watchdog(120, "FAIL: fsync_carried hung (watchdog)\n");
	for (r = 0; r < ROUNDS; r++)
		round_once(r);
	printf("fsync_carried: %d rounds, fsync reported or the block on "
	       "disk: PASS\n", ROUNDS);
	return T_EXIT_PASS;
}
