/* SPDX-License-Identifier: MIT */
/*
 * test_fault_readahead - asynchronous readahead (the window read on the
 * context's completion channel) under injected read faults, on the
 * asynchronous fault backend: never a wrong byte, never an error taken
 * for data.
 *
 *  1. EIO and short reads on single reads of sequential streams (each
 *     rule hits one read; many of them readahead windows): every read
 *     returns the file's bytes in full, or fails, or comes short with the
 *     right bytes; the whole file reads back right afterwards (no folio
 *     of a failed window left uptodate).
 *  2. Every read of a range failing: a stream's reads there fail with
 *     -EIO (the failed window is read again and the error reported),
 *     never zeros; with the rule gone they read right.
 *  3. A window held in flight while a writer writes into one of its
 *     folios (the writer waits for the folio), then failed or let
 *     through: the read after sees the writer's bytes and the disk's
 *     around them, not the window's old data nor zeros.
 * Fails unless faults hit readahead windows (the trace: reads submitted
 * to a channel).
 */
#include <pthread.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define FSIZE	(2u << 20)
#define RD	16384

static uint8_t *disk;
static const char *path;

static struct wtio_ctx *ctx_over(struct wtio_fault *fault)
{
	struct wtio_config cfg;

	t_fault_config(&cfg, BS, 2048);
	cfg.readahead_max = 256 << 10;
	return t_fault_async_ctx(&cfg, fault);
}

/* Faulted reads that went to a channel (readahead windows). */
static uint64_t chan_faults(struct wtio_fault *fault)
{
	return t_fault_trace_count(fault, WTIO_FAULT_READ, 0, true, true,
				   NULL);
}

/* A read's result: the bytes in full, a short count of right bytes, or
 * an error. Returns whether it failed or came short. */
static bool check_read(const uint8_t *buf, ssize_t n, off_t off, size_t len,
		       const uint8_t *want, const char *what)
{
	CHECKF(n == -EIO || (n > 0 && (size_t)n <= len), "%s: read of %zu at "
	       "%lld returned %zd", what, len, (long long)off, n);
	if (n > 0)
		CHECKF(t_memdiff(buf, want + off, (size_t)n) < 0, "%s: read "
		       "at %lld: wrong byte at %lld", what, (long long)off,
		       (long long)off + t_memdiff(buf, want + off, (size_t)n));
	return n != (ssize_t)len;
}

static void read_all(struct wtio_file *f, const uint8_t *want,
		     const char *what)
{
	uint8_t *buf = t_malloc(FSIZE);

	CHECK_EQ(wtio_pread(f, buf, FSIZE, 0, 0), FSIZE);
	CHECKF(t_memdiff(buf, want, FSIZE) < 0, "%s: the file reads wrong "
	       "at %lld afterwards", what, t_memdiff(buf, want, FSIZE));
	free(buf);
}

/* 1: one read faulted a time, at many points of sequential streams. */
static uint64_t single_faults(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	uint8_t *buf = t_malloc(RD);
	uint64_t bad = 0, hits;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int round, kind;
	off_t off;

	CHECK(fault);
	ctx = ctx_over(fault);
	for (round = 0; round < 24; round++) {
		struct wtio_fault_rule r = { .ops = WTIO_FAULT_READ,
			.skip = (uint64_t)round % 6, .count = 1 };

		kind = round % 3;
		if (kind == 0)
			r.error = EIO;
		else
			r.short_bytes = kind == 1 ? 5 * 512 : BS + 512;
		/* A cold cache each round: a new open of a dropped file. */
		f = t_open(ctx, path, O_RDONLY);
		CHECK_OK(wtio_fault_add_rule(fault, &r));
		for (off = 0; off < FSIZE; off += RD)
			bad += check_read(buf, wtio_pread(f, buf, RD, off, 0),
					  off, RD, disk, "single faults");
		wtio_fault_clear_rules(fault);
		read_all(f, disk, "single faults");
		CHECK_OK(wtio_close(f));
		CHECK_OK(wtio_ctx_destroy(ctx));
		ctx = ctx_over(fault);
	}
	hits = chan_faults(fault);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(buf);
	printf("1. one read faulted (EIO, short) in 24 cold streams: %llu "
	       "reads failed or short, %llu faults hit readahead windows, "
	       "no wrong byte\n", (unsigned long long)bad,
	       (unsigned long long)hits);
	return hits;
}

/* 2: every read of a range fails. */
static uint64_t range_fails(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_READ, .error = EIO,
				     .start = 512 << 10, .end = 640 << 10 };
	uint8_t *buf = t_malloc(RD);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint64_t failed = 0, hits;
	off_t off;

	CHECK(fault);
	ctx = ctx_over(fault);
	f = t_open(ctx, path, O_RDONLY);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	for (off = 0; off < FSIZE; off += RD) {
		ssize_t n = wtio_pread(f, buf, RD, off, 0);

		check_read(buf, n, off, RD, disk, "range fails");
		if (off >= r.start && off < r.end) {
			CHECKF(n == -EIO, "read at %lld inside the failing "
			       "range returned %zd", (long long)off, n);
			failed++;
		} else if (off >= r.end) {
			/* Past it every I/O starts past it: whole. (Before
			 * it, a read's I/O may reach into it.) */
			CHECKF(n == RD, "read at %lld returned %zd",
			       (long long)off, n);
		}
	}
	wtio_fault_clear_rules(fault);
	read_all(f, disk, "range fails");
	hits = chan_faults(fault);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(buf);
	printf("2. a failing range: %llu reads there -EIO, %llu faulted "
	       "readahead windows, the file right afterwards\n",
	       (unsigned long long)failed, (unsigned long long)hits);
	return hits;
}

struct writer {
	struct wtio_file *f;
	off_t off;
	uint8_t data[300];
	ssize_t res;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;

	w->res = wtio_pwrite(w->f, w->data, sizeof(w->data), w->off, 0);
	return NULL;
}

/* 3: a window held while a writer writes into it. outcome: the window's
 * (0 or EIO). */
static uint64_t held_window(int outcome)
{
	struct wtio_fault *fault = wtio_fault_create();
	/* The first read past the stream's first windows is held: the next
	 * window (asynchronous readahead) is the first to come there. Only
	 * it: a writer's read-modify-write after a failed window must not
	 * be held too. */
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_READ, .hold = 1,
				     .count = 1, .start = 64 << 10 };
	uint8_t *want = t_malloc(FSIZE), *buf = t_malloc(RD);
	struct wtio_fault_io io;
	struct writer w = { 0 };
	struct wtio_ctx *ctx;
	pthread_t th;
	uint64_t i, hits = 0;
	off_t off;

	CHECK(fault);
	memcpy(want, disk, FSIZE);
	ctx = ctx_over(fault);
	w.f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	/* A stream's start: reads below 64 KiB, windows beyond go out. */
	for (off = 0; off < (64 << 10); off += RD)
		CHECK_EQ(wtio_pread(w.f, buf, RD, off, 0), RD);
	CHECKF(wtio_fault_wait_held(fault, 1, 10000) == 0,
	       "no readahead window went out");
	for (i = 0; i < wtio_fault_nr_ios(fault); i++) {
		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_READ && io.faulted)
			break;
	}
	CHECK(i < wtio_fault_nr_ios(fault));
	CHECKF(io.chan, "the held read is not a readahead window");
	hits++;
	/* Into the middle of the held window's first folio. */
	w.off = io.off + 100;
	t_fill(w.data, sizeof(w.data), 71, (uint64_t)w.off);
	memcpy(want + w.off, w.data, sizeof(w.data));
	CHECK_OK(pthread_create(&th, NULL, writer_thread, &w));
	/* Give it time to reach the folio (correct either way). */
	usleep(20000);
	CHECK_OK(wtio_fault_release_one(fault, 0, outcome));
	wtio_fault_clear_rules(fault);
	CHECK_OK(pthread_join(th, NULL));
	CHECK_EQ(w.res, sizeof(w.data));
	CHECK_EQ(wtio_pread(w.f, buf, BS, io.off, 0), BS);
	CHECKF(t_memdiff(buf, want + io.off, BS) < 0, "window %s, written "
	       "into: wrong byte at %lld", outcome ? "failed" : "read",
	       (long long)io.off + t_memdiff(buf, want + io.off, BS));
	read_all(w.f, want, "held window");
	CHECK_OK(wtio_close(w.f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	t_write_disk(path, disk, FSIZE);
	free(want);
	free(buf);
	printf("3. readahead window held, a write into it, the window %s: "
	       "the write and the disk's bytes read back\n",
	       outcome ? "failed (EIO)" : "completed");
	return hits;
}

int main(void)
{
	uint64_t hits = 0;

	t_require_odirect();
	t_watchdog(120, "readahead fault test hung");
	path = t_tmpfile("fault-ra");
	disk = t_malloc(FSIZE);
	t_fill(disk, FSIZE, 70, 0);
	t_write_disk(path, disk, FSIZE);
	hits += single_faults();
	hits += range_fails();
	hits += held_window(0);
	hits += held_window(EIO);
	CHECKF(hits > 0, "no fault ever hit a readahead window");
	free(disk);
	printf("PASS\n");
	return T_EXIT_PASS;
}
