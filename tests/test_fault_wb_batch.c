/* SPDX-License-Identifier: MIT */
/*
 * test_fault_wb_batch - write-back submitted in batches (an asynchronous
 * backend gets up to 16 ioends a call, 64 in flight), by fsync and by the
 * flushers, under injected faults on the asynchronous fault backend.
 *
 * Scattered dirty folios (one small I/O each, so every pass makes many
 * batches), then one write I/O faulted at a chosen place in the batch
 * stream: EIO and ENOSPC make fsync return that error once, the data
 * stays dirty and the next fsync writes it (0); a short I/O is finished
 * (fsync 0). The same with the faults hitting the flushers' background
 * writeback (periodic, 10 ms): fsync then reports the flushers' error
 * once. Every time the disk ends equal to the shadow, and every read
 * through wtio does meanwhile. And a close racing a started write-back
 * that fails: close reports it and still writes the data.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define NFOL	1024		/* the file: 4 MiB */
#define NDIRTY	300

static void dirty_scattered(struct wtio_file *f, uint8_t *shadow,
			    struct t_rng *rng, uint64_t seed)
{
	uint8_t buf[700];
	int i;

	for (i = 0; i < NDIRTY; i++) {
		/* Every other folio at most: no two dirty folios touch, so
		 * each is an I/O of its own. */
		off_t off = (off_t)(t_rand_below(rng, NFOL / 2) * 2) * BS +
			    (off_t)t_rand_below(rng, BS - sizeof(buf));

		t_fill(buf, sizeof(buf), seed, (uint64_t)off);
		CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf), off, 0), sizeof(buf));
		memcpy(shadow + off, buf, sizeof(buf));
	}
}

static void run(bool flushers, int err, uint64_t skip)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .skip = skip,
		.count = 1, .error = err, .short_bytes = err ? 0 : BS };
	const char *path = t_tmpfile("fault-wb");
	uint8_t *shadow = t_malloc(NFOL * BS);
	struct t_rng rng = { 100 + skip };
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int i;

	CHECK(fault);
	t_fill(shadow, NFOL * BS, 99, 0);
	t_write_disk(path, shadow, NFOL * BS);
	t_fault_config(&cfg, BS, 2 * NFOL);
	if (flushers) {
		cfg.writeback_interval_ms = 10;
		cfg.dirty_background_ratio = 1;
	} else {
		/* Nothing written before fsync. */
		cfg.writeback_interval_ms = 600000;
		cfg.dirty_background_ratio = 80;
		cfg.dirty_ratio = 90;
	}
	ctx = t_fault_async_ctx(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	dirty_scattered(f, shadow, &rng, 101 + skip);
	if (flushers) {
		/* The flushers hit the fault on their own (no timing in
		 * the result: fsync reports it either way). */
		for (i = 0; i < 10000 && !wtio_fault_injected(fault); i++)
			usleep(1000);
		CHECKF(wtio_fault_injected(fault) == 1,
		       "the flushers never reached the fault");
	}
	t_check_wtio_range(f, shadow, NFOL * BS, 0, NFOL * BS);
	CHECK_EQ(wtio_fsync(f), err ? -err : 0);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	CHECK_OK(wtio_fsync(f));
	t_check_disk_equals(path, shadow, NFOL * BS);
	t_check_wtio_range(f, shadow, NFOL * BS, 0, NFOL * BS);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, NFOL * BS);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
}

/*
 * Close while a flusher's write-back of the file is in flight and then
 * fails (held by the fault backend, failed with EIO only once the
 * closing thread sleeps in wtio_close): the failed folios come back
 * dirty after close's pass looked, and close must still write them
 * before it drops the file: -EIO, and the data on disk.
 */
static struct {
	struct wtio_fault *fault;
	pid_t closer;
	atomic_int closing, saw_blocked;
} cl;

static void *fail_when_close_blocks(void *arg)
{
	int i;

	(void)arg;
	while (!atomic_load(&cl.closing))
		usleep(100);
	for (i = 0; i < 20000; i++) {	/* up to ~4 s */
		if (t_task_state((int)cl.closer) == 'S') {
			atomic_store(&cl.saw_blocked, 1);
			break;
		}
		usleep(200);
	}
	CHECK_OK(wtio_fault_release_one(cl.fault, 0, EIO));
	return NULL;
}

static void close_while_flush_fails(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .count = 1,
					.hold = 1 };
	const char *path = t_tmpfile("fault-wb-close");
	uint8_t *shadow = t_malloc(64 * BS);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	pthread_t th;

	CHECK(fault);
	t_fill(shadow, 64 * BS, 110, 0);
	t_write_disk(path, shadow, 64 * BS);
	t_fault_config(&cfg, BS, 256);
	ctx = t_fault_async_ctx(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	t_fill(shadow + 5 * BS, 8 * BS, 111, 5 * BS);
	CHECK_EQ(wtio_pwrite(f, shadow + 5 * BS, 8 * BS, 5 * BS, 0), 8 * BS);
	CHECK_OK(wtio_fault_add_rule(fault, &hold));
	/* Started write-back, completed on the context's channel, as a
	 * flusher's is. */
	CHECK_OK(wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WRITE));
	CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
	cl.fault = fault;
	cl.closer = (pid_t)syscall(SYS_gettid);
	atomic_store(&cl.saw_blocked, 0);
	CHECK_OK(pthread_create(&th, NULL, fail_when_close_blocks, NULL));
	atomic_store(&cl.closing, 1);
	CHECK_EQ(wtio_close(f), -EIO);
	CHECK_OK(pthread_join(th, NULL));
	CHECKF(atomic_load(&cl.saw_blocked), "close never waited for the "
	       "write-back in flight");
	t_check_disk_equals(path, shadow, 64 * BS);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	printf("close while started write-back fails: -EIO, and close wrote "
	       "the data again\n");
}

int main(void)
{
	static const int errs[3] = { EIO, ENOSPC, 0 };
	static const uint64_t skips[4] = { 0, 7, 16, 45 };
	int e, s;

	t_require_odirect();
	t_watchdog(120, "batched writeback fault test hung");
	for (e = 0; e < 3; e++) {
		for (s = 0; s < 4; s++)
			run(false, errs[e], skips[s]);
		printf("fsync's batches, write I/O %s at 4 places: fsync %s, "
		       "the data kept and written by the next\n",
		       errs[e] ? strerror(errs[e]) : "short",
		       errs[e] ? "reports it once" : "0");
	}
	for (e = 0; e < 3; e++) {
		run(true, errs[e], 3);
		printf("the flushers' batches, write I/O %s: fsync %s\n",
		       errs[e] ? strerror(errs[e]) : "short",
		       errs[e] ? "reports it once" : "0");
	}
	close_while_flush_fails();
	printf("PASS\n");
	return T_EXIT_PASS;
}
