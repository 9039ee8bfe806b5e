/* SPDX-License-Identifier: MIT */
/*
 * test_sync_range_io.c - the I/O that wtio_sync_range starts and waits
 * for, seen in the fault backend's trace (asynchronous mode: channels, as
 * io_uring has): WRITE starts I/O for the dirty data of its range only,
 * one I/O for each contiguous run of it (16 KiB overwrites scattered in
 * the range: one each; the same writes side by side, in random order:
 * one I/O for all), on the channel, without waiting for it; WAIT_BEFORE
 * waits for the writeback in flight on the range, and only for that;
 * WRITE | WAIT_AFTER leaves the range clean and on disk; a failed I/O of
 * a started WRITE is reported by the next WAIT_AFTER of the handle, once,
 * and by the fsync of another handle (errseq), and fsync rewrites it;
 * a WAIT_BEFORE that finds an error returns it before writing anything.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define WSZ	(16 * 1024)		/* one overwrite */
#define NFOL	1024			/* the file: 4 MiB */
#define FLEN	((size_t)NFOL * BS)
#define HALF	(FLEN / 2)

static struct wtio_stats stats(struct wtio_ctx *ctx)
{
	struct wtio_stats st;

	CHECK_OK(wtio_stats(ctx, &st));
	return st;
}

/* One 16 KiB overwrite at off, in the file and the shadow. */
static void overwrite(struct wtio_file *f, uint8_t *shadow, off_t off,
		      uint64_t seed)
{
	t_fill(shadow + off, WSZ, seed, (uint64_t)off);
	CHECK_EQ(wtio_pwrite(f, shadow + off, WSZ, off, 0), WSZ);
}

/* 16 overwrites in [base, base + HALF), every other 16 KiB slot at most
 * (none touch: each is a run of its own), in random order. */
static void overwrite_scattered(struct wtio_file *f, uint8_t *shadow,
				off_t base, struct t_rng *rng, uint64_t seed)
{
	bool used[HALF / WSZ / 2] = { false };
	int n = 0;

	while (n < 16) {
		uint64_t slot = t_rand_below(rng, HALF / WSZ / 2);

		if (used[slot])
			continue;
		used[slot] = true;
		overwrite(f, shadow, base + (off_t)(slot * 2 * WSZ), seed);
		n++;
	}
}

/* Write I/Os traced from entry `from` on: their number, each checked to
 * lie in [lo, hi) and to have gone to a channel when chan is set. */
static uint64_t trace_writes(struct wtio_fault *fault, uint64_t from,
			     int64_t lo, int64_t hi, bool chan,
			     uint64_t *bytes)
{
	uint64_t i, n = 0, nr = wtio_fault_nr_ios(fault);
	struct wtio_fault_io io;

	*bytes = 0;
	for (i = from; i < nr; i++) {
		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op != WTIO_FAULT_WRITE)
			continue;
		CHECKF(io.off >= lo && io.off + (int64_t)io.len <= hi,
		       "write I/O [%lld, +%llu) outside the range [%lld, %lld)",
		       (long long)io.off, (unsigned long long)io.len,
		       (long long)lo, (long long)hi);
		if (chan)
			CHECKF(io.chan, "started write-back I/O at %lld not on a channel",
			       (long long)io.off);
		*bytes += io.len;
		n++;
	}
	return n;
}

static struct wtio_ctx *setup(struct wtio_fault *fault, const char *path,
			      uint8_t *shadow)
{
	struct wtio_config cfg;

	t_fill(shadow, FLEN, 7, 0);
	t_write_disk(path, shadow, FLEN);
	t_fault_config(&cfg, BS, 2 * NFOL);
	/* No flusher writes anything on its own. */
	cfg.writeback_interval_ms = 600000;
	cfg.dirty_expire_ms = 600000;
	cfg.dirty_background_ratio = 80;
	cfg.dirty_ratio = 90;
	return t_fault_async_ctx(&cfg, fault);
}

/* Nothing dirty or under writeback, the disk equal to the shadow; then
 * the handle closed and everything freed. */
static void check_clean_and_end(struct wtio_ctx *ctx, struct wtio_file *f,
				struct wtio_fault *fault, const char *path,
				uint8_t *shadow)
{
	CHECK_EQ(stats(ctx).dirty_folios, 0);
	CHECK_EQ(stats(ctx).writeback_folios, 0);
	t_check_disk_equals(path, shadow, FLEN);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
}

/* WRITE of the first half: only its 16 writes go, one I/O each, on the
 * channel; the other half stays dirty. Then the same 16 writes side by
 * side: one I/O. WRITE | WAIT_AFTER: clean and on disk. */
static void write_range_only(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	const char *path = t_tmpfile("sfr-io");
	uint8_t *shadow = t_malloc(FLEN);
	struct t_rng rng = { 4 };
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint64_t from, n, bytes, ios0;
	int i, order[16];

	CHECK(fault);
	ctx = setup(fault, path, shadow);
	f = t_open(ctx, path, O_RDWR);
	overwrite_scattered(f, shadow, 0, &rng, 11);
	overwrite_scattered(f, shadow, (off_t)HALF, &rng, 12);
	CHECK_EQ(stats(ctx).dirty_folios, 32 * WSZ / BS);

	from = wtio_fault_nr_ios(fault);
	ios0 = stats(ctx).write_ios;
	CHECK_OK(wtio_sync_range(f, 0, (off_t)HALF, WTIO_SYNC_RANGE_WRITE));
	CHECK_OK(wtio_sync_range(f, 0, (off_t)HALF, WTIO_SYNC_RANGE_WAIT_AFTER));
	n = trace_writes(fault, from, 0, (int64_t)HALF, true, &bytes);
	CHECKF(n == 16 && bytes == 16 * WSZ,
	       "WRITE of 16 scattered 16 KiB writes: %llu I/Os, %llu bytes",
	       (unsigned long long)n, (unsigned long long)bytes);
	CHECK_EQ(stats(ctx).write_ios - ios0, 16);
	CHECK_EQ(stats(ctx).dirty_folios, 16 * WSZ / BS);
	CHECK_EQ(stats(ctx).writeback_folios, 0);
	{
		size_t dlen;
		uint8_t *disk = t_read_disk(path, &dlen);

		CHECK_EQ(dlen, FLEN);
		CHECK(memcmp(disk, shadow, HALF) == 0);
		free(disk);
	}

	/* 16 writes side by side in [64 KiB, 320 KiB), in random order:
	 * one run of dirty data, one I/O (max_io_size is 1 MiB). */
	for (i = 0; i < 16; i++)
		order[i] = i;
	for (i = 15; i > 0; i--) {
		int j = (int)t_rand_below(&rng, (uint64_t)i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < 16; i++)
		overwrite(f, shadow, 65536 + (off_t)order[i] * WSZ, 13);
	from = wtio_fault_nr_ios(fault);
	CHECK_OK(wtio_sync_range(f, 0, (off_t)HALF, WTIO_SYNC_RANGE_WAIT_BEFORE |
				 WTIO_SYNC_RANGE_WRITE));
	CHECK_OK(wtio_sync_range(f, 0, (off_t)HALF, WTIO_SYNC_RANGE_WAIT_AFTER));
	n = trace_writes(fault, from, 65536, 65536 + 16 * WSZ, true, &bytes);
	CHECKF(n == 1 && bytes == 16 * WSZ,
	       "WRITE of 256 KiB of adjacent writes: %llu I/Os, %llu bytes",
	       (unsigned long long)n, (unsigned long long)bytes);

	/* WRITE | WAIT_AFTER of the second half: clean and on disk when it
	 * returns (a synchronous pass, not the channel's). */
	from = wtio_fault_nr_ios(fault);
	CHECK_OK(wtio_sync_range(f, (off_t)HALF, 0, WTIO_SYNC_RANGE_WRITE |
				 WTIO_SYNC_RANGE_WAIT_AFTER));
	n = trace_writes(fault, from, (int64_t)HALF, (int64_t)FLEN, false,
			 &bytes);
	CHECK_EQ(n, 16);
	check_clean_and_end(ctx, f, fault, path, shadow);
	printf("  WRITE: the range's writes only, one I/O a run, on the channel\n");
}

static struct {
	struct wtio_file *f;
	off_t off, len;
	unsigned int flags;
	atomic_int done;
	int ret;
} bg;

static void *bg_sync_range(void *arg)
{
	(void)arg;
	bg.ret = wtio_sync_range(bg.f, bg.off, bg.len, bg.flags);
	atomic_store(&bg.done, 1);
	return NULL;
}

/* WRITE returns with its I/O held; WAIT_BEFORE of the range waits for
 * it, WAIT_BEFORE of a range with nothing in flight does not; released,
 * the data is on disk. */
static void wait_before_waits_for_started(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .hold = 1 };
	const char *path = t_tmpfile("sfr-wait");
	uint8_t *shadow = t_malloc(FLEN);
	struct t_rng rng = { 5 };
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	pthread_t th;

	CHECK(fault);
	ctx = setup(fault, path, shadow);
	f = t_open(ctx, path, O_RDWR);
	overwrite_scattered(f, shadow, 0, &rng, 21);
	CHECK_OK(wtio_fault_add_rule(fault, &hold));
	/* Started, not waited for: it returns while all 16 are held. */
	CHECK_OK(wtio_sync_range(f, 0, (off_t)HALF, WTIO_SYNC_RANGE_WRITE));
	CHECK_OK(wtio_fault_wait_held(fault, 16, 10000));
	CHECK_EQ(stats(ctx).writeback_folios, 16 * WSZ / BS);
	/* Nothing in flight in the other half: no wait. */
	CHECK_OK(wtio_sync_range(f, (off_t)HALF, (off_t)HALF,
				 WTIO_SYNC_RANGE_WAIT_BEFORE));
	/* The first half's WAIT_BEFORE waits for the held I/O. */
	bg.f = f;
	bg.off = 0;
	bg.len = (off_t)HALF;
	bg.flags = WTIO_SYNC_RANGE_WAIT_BEFORE;
	atomic_store(&bg.done, 0);
	CHECK(pthread_create(&th, NULL, bg_sync_range, NULL) == 0);
	usleep(100 * 1000);
	CHECKF(!atomic_load(&bg.done),
	       "WAIT_BEFORE returned with the range's writeback still held");
	wtio_fault_clear_rules(fault);
	wtio_fault_release(fault);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_OK(bg.ret);
	check_clean_and_end(ctx, f, fault, path, shadow);
	printf("  WAIT_BEFORE: waits for the range's started writeback only\n");
}

/* One I/O of a started WRITE fails: the handle's WAIT_AFTER reports it
 * once, another handle's fsync reports it too and rewrites the data. */
static void started_write_error(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule eio = { .ops = WTIO_FAULT_WRITE, .skip = 5,
				       .count = 1, .error = EIO };
	const char *path = t_tmpfile("sfr-eio");
	uint8_t *shadow = t_malloc(FLEN);
	struct t_rng rng = { 6 };
	struct wtio_ctx *ctx;
	struct wtio_file *a, *b;

	CHECK(fault);
	ctx = setup(fault, path, shadow);
	a = t_open(ctx, path, O_RDWR);
	b = t_open(ctx, path, O_RDWR);
	overwrite_scattered(a, shadow, 0, &rng, 31);
	CHECK_OK(wtio_fault_add_rule(fault, &eio));
	CHECK_OK(wtio_sync_range(a, 0, (off_t)HALF, WTIO_SYNC_RANGE_WRITE));
	CHECK_EQ(wtio_sync_range(a, 0, (off_t)HALF, WTIO_SYNC_RANGE_WAIT_AFTER),
		 -EIO);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	CHECK_OK(wtio_sync_range(a, 0, (off_t)HALF, WTIO_SYNC_RANGE_WAIT_AFTER));
	/* The failed write's data stays dirty, never taken for clean. */
	CHECK_EQ(stats(ctx).dirty_folios, WSZ / BS);
	t_check_wtio_range(a, shadow, FLEN, 0, FLEN);
	CHECK_EQ(wtio_fsync(b), -EIO);
	CHECK_EQ(stats(ctx).dirty_folios, 0);
	t_check_disk_equals(path, shadow, FLEN);
	CHECK_OK(wtio_fsync(a));
	CHECK_OK(wtio_fsync(b));
	CHECK_OK(wtio_close(a));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	printf("  a started WRITE's failure: reported once a handle, rewritten\n");
}

/* A WAIT_BEFORE that finds a started WRITE's error returns it at once
 * and writes nothing (Linux's sync_file_range): the second half, dirty,
 * stays dirty; the next call, with nothing to report, writes it. */
static void wait_before_error_skips_write(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule eio = { .ops = WTIO_FAULT_WRITE, .count = 1,
				       .error = EIO };
	const unsigned int all = WTIO_SYNC_RANGE_WAIT_BEFORE |
		WTIO_SYNC_RANGE_WRITE | WTIO_SYNC_RANGE_WAIT_AFTER;
	const char *path = t_tmpfile("sfr-wb-eio");
	uint8_t *shadow = t_malloc(FLEN);
	struct t_rng rng = { 7 };
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint64_t dirty;

	CHECK(fault);
	ctx = setup(fault, path, shadow);
	f = t_open(ctx, path, O_RDWR);
	overwrite(f, shadow, 0, 41);
	CHECK_OK(wtio_fault_add_rule(fault, &eio));
	CHECK_OK(wtio_sync_range(f, 0, WSZ, WTIO_SYNC_RANGE_WRITE));
	overwrite_scattered(f, shadow, (off_t)HALF, &rng, 42);
	dirty = stats(ctx).dirty_folios;
	CHECK_EQ(wtio_sync_range(f, 0, 0, all), -EIO);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	/* Nothing was started after the error: the failed 16 KiB came back
	 * dirty, the second half's 16 overwrites are still dirty. */
	CHECKF(stats(ctx).dirty_folios >= dirty,
	       "WAIT_BEFORE's error did not stop the write: %llu dirty, "
	       "%llu before", (unsigned long long)stats(ctx).dirty_folios,
	       (unsigned long long)dirty);
	CHECK_OK(wtio_sync_range(f, 0, 0, all));
	CHECK_EQ(stats(ctx).dirty_folios, 0);
	t_check_disk_equals(path, shadow, FLEN);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	printf("  WAIT_BEFORE's error: returned at once, nothing written\n");
}

int main(void)
{
	write_range_only();
	wait_before_waits_for_started();
	started_write_error();
	wait_before_error_skips_write();
	printf("sync_range_io: PASS\n");
	return T_EXIT_PASS;
}
