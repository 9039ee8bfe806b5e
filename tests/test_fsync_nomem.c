/* SPDX-License-Identifier: MIT */
/*
 * test_fsync_nomem.c - the durability calls never report success for
 * data they did not write when an allocation fails (issue 16, defect 3).
 *
 * fsync once dropped wtio_writeback_range's -ENOMEM (its batch array
 * could not be allocated), fixed the size, flushed, and returned 0 with
 * zeros on disk; wtio_wait_writeback_range skipped waiting when its own
 * array could not be had. This program is linked against the static
 * library with malloc and calloc wrapped (-Wl,--wrap), and fails the
 * allocations of this thread while one call runs:
 *  1. a sweep over fsync, fdatasync, sync_file_range (wait, write,
 *     wait) and close: fail the k-th allocation the call makes, for
 *     k = 0, 1, ... until the call makes fewer; then fail all of them.
 *     A call that returns 0 must have put the data in the backing file
 *     (read back through the kernel); one that fails must not lose it:
 *     a later fsync writes it (close aside: the handle is gone).
 *  2. an fsync while another thread's writeback is in flight (held back
 *     by the fault backend's delay) with every allocation failing: it
 *     must not return before that data is in the file.
 * Exit 0 pass, 1 fail.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "t_fault.h"
#include "inode.h"
#include "sync.h"

/* ---- failing allocations on this thread ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t nmemb, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t nmemb, size_t n);

static __thread bool t_armed;
static __thread long t_pass;		/* allocations let through */
static __thread long t_nfail;		/* then fail this many (-1: all) */
static __thread long t_seen, t_failed;

static bool fail_now(void)
{
	if (!t_armed)
		return false;
	t_seen++;
	if (t_pass > 0) {
		t_pass--;
		return false;
	}
	if (t_nfail == 0)
		return false;
	if (t_nfail > 0)
		t_nfail--;
	t_failed++;
	return true;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t nmemb, size_t n)
{
	return fail_now() ? NULL : __real_calloc(nmemb, n);
}

static void arm(long skip, long fail)
{
	t_seen = t_failed = 0;
	t_pass = skip;
	t_nfail = fail;
	t_armed = true;
}

static void disarm(void)
{
	t_armed = false;
}

/* ---- the checks ---- */

#define NR_FOLIOS 8u
#define FS 4096u

enum op { OP_FSYNC, OP_FDATASYNC, OP_SYNC_RANGE, OP_CLOSE, NR_OPS };
static const char *op_name[NR_OPS] = { "fsync", "fdatasync",
				       "sync_file_range", "close" };

static char path[64];
static uint64_t pattern_seq;

static void fill(uint64_t *buf, uint64_t tag, uint64_t folio)
{
	unsigned int k;

	for (k = 0; k < FS / 8; k++)
		buf[k] = (tag << 16) | folio;
}

/* The backing file, through the kernel, holds tag's data. */
static bool on_disk(uint64_t tag)
{
	uint64_t *buf = malloc(FS), *want = malloc(FS);
	int fd = open(path, O_RDONLY);
	bool ok = fd >= 0;
	unsigned int i;

	CHECK(buf && want);
	for (i = 0; ok && i < NR_FOLIOS; i++) {
		fill(want, tag, i);
		ok = pread(fd, buf, FS, (off_t)i * FS) == FS &&
		     !memcmp(buf, want, FS);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	free(want);
	return ok;
}

static void ctx_new(struct wtio_ctx **ctx, struct wtio_fault *fault)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = 64ull * FS;
	/* No flusher may write the data before the call under test. */
	cfg.dirty_background_ratio = 90;
	cfg.dirty_ratio = 90;
	cfg.dirty_expire_ms = 600000;
	cfg.writeback_interval_ms = 600000;
	cfg.flags = WTIO_CONFIG_NO_READAHEAD;
	if (fault)
		CHECK_OK(wtio_fault_ctx_create(&cfg, fault, ctx));
	else
		CHECK_OK(wtio_ctx_create(&cfg, ctx));
}

/* A file with NR_FOLIOS dirty folios of a new tag; returns the tag. */
static uint64_t dirty_file(struct wtio_ctx *ctx, struct wtio_file **filep)
{
	uint64_t *buf = aligned_alloc(4096, FS);
	uint64_t tag = ++pattern_seq;
	unsigned int i;

	CHECK(buf);
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   filep));
	/* This thread's I/O state exists before anything is armed. */
	CHECK_OK(wtio_fsync(*filep));
	for (i = 0; i < NR_FOLIOS; i++) {
		fill(buf, tag, i);
		CHECK_EQ(wtio_pwrite(*filep, buf, FS, (off_t)i * FS, 0), FS);
	}
	CHECKF(!on_disk(tag), "data on disk before the call under test");
	free(buf);
	return tag;
}

static int do_op(enum op op, struct wtio_file *file)
{
	switch (op) {
	case OP_FSYNC:
		return wtio_fsync(file);
	case OP_FDATASYNC:
		return wtio_fdatasync(file);
	case OP_SYNC_RANGE:
		return wtio_sync_file_range(file, 0, 0,
				WTIO_SYNC_RANGE_WAIT_BEFORE |
				WTIO_SYNC_RANGE_WRITE |
				WTIO_SYNC_RANGE_WAIT_AFTER);
	default:
		return wtio_close(file);
	}
}

static uint64_t nr_calls, nr_injected, nr_errors;

/* One call with allocations skip.. failing (fail -1: all). Returns how
 * many the call made. */
static long one(enum op op, long skip, long fail)
{
	struct wtio_ctx *ctx;
	struct wtio_file *file;
	uint64_t tag;
	long seen, failed;
	int ret, r2;

	ctx_new(&ctx, NULL);
	tag = dirty_file(ctx, &file);
	arm(skip, fail);
	ret = do_op(op, file);
	disarm();
	seen = t_seen;
	failed = t_failed;
	nr_calls++;
	nr_injected += (uint64_t)failed;
	if (ret == 0) {
		CHECKF(on_disk(tag), "%s returned 0 with allocation %ld%s "
		       "failing (%ld failed), but the data is not in the file",
		       op_name[op], skip, fail < 0 ? " and later" : "",
		       failed);
	} else {
		CHECKF(failed > 0, "%s failed (%d) with no allocation failed",
		       op_name[op], ret);
		nr_errors++;
		if (op != OP_CLOSE) {
			/* The error was reported, the data not lost: the
			 * next fsync (or the one after, which no longer
			 * reports an error seen) writes it. */
			r2 = wtio_fsync(file);
			if (r2)
				r2 = wtio_fsync(file);
			CHECKF(r2 == 0, "%s: fsync after the failure: %d",
			       op_name[op], r2);
			CHECKF(on_disk(tag), "%s failed (%d), and the data "
			       "was lost", op_name[op], ret);
		}
	}
	if (op != OP_CLOSE)
		CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	return seen;
}

/* ---- 2: waiting for writeback in flight ---- */

struct bg {
	struct wtio_file *file;
	int ret;
};

static void *bg_fsync(void *arg)
{
	struct bg *b = arg;

	b->ret = wtio_fsync(b->file);
	return NULL;
}

static void wait_in_flight(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule delay = {
		.ops = WTIO_FAULT_WRITE, .delay_us = 400 * 1000,
	};
	struct wtio_ctx *ctx;
	struct bg b = { 0 };
	uint64_t *buf = aligned_alloc(4096, FS);
	pthread_t t;
	uint64_t tag;
	int ret, i;

	CHECK(fault);
	CHECK(buf);
	ctx_new(&ctx, fault);
	/* Written once, so that the writes in flight do not extend the
	 * file (fixing the size would wait for those), then dirtied again. */
	dirty_file(ctx, &b.file);
	CHECK_OK(wtio_fsync(b.file));
	tag = ++pattern_seq;
	for (i = 0; i < (int)NR_FOLIOS; i++) {
		fill(buf, tag, (uint64_t)i);
		CHECK_EQ(wtio_pwrite(b.file, buf, FS, (off_t)i * FS, 0), FS);
	}
	free(buf);
	CHECK_OK(wtio_fault_add_rule(fault, &delay));
	CHECK_OK(pthread_create(&t, NULL, bg_fsync, &b));
	/* Until the other thread's writes are in flight. */
	for (i = 0; i < 2000 && !atomic_load(&b.file->inode->nr_writeback); i++)
		usleep(100);
	CHECKF(atomic_load(&b.file->inode->nr_writeback), "the other fsync "
	       "never started writeback");
	arm(0, -1);
	ret = wtio_fsync(b.file);
	disarm();
	if (ret == 0)
		CHECKF(on_disk(tag), "fsync returned 0 with every allocation "
		       "failing (%ld) while writeback was in flight, before "
		       "that data was in the file", t_failed);
	printf("fsync during another's writeback, allocations failing: %d "
	       "(%ld allocations failed), data in the file\n", ret, t_failed);
	pthread_join(t, NULL);
	/* The other fsync ran while allocations failed too: an ioend it
	 * could not allocate is an error it may report (-ENOMEM, recorded
	 * for fsync as any write-back error), never a false success. Then
	 * the data is still dirty and the next fsync writes it. */
	CHECKF(b.ret == 0 || b.ret == -ENOMEM, "the other fsync: %d", b.ret);
	if (b.ret) {
		ret = wtio_fsync(b.file);
		CHECKF(ret == 0 || ret == -ENOMEM, "fsync after -ENOMEM: %d",
		       ret);
		CHECK_OK(wtio_fsync(b.file));
		CHECKF(on_disk(tag), "data not in the file after a clean fsync");
	}
	wtio_fault_clear_rules(fault);
	CHECK_OK(wtio_close(b.file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	unlink(path);
}

int main(void)
{
	unsigned int op;

	t_watchdog(240, "test_fsync_nomem: hung\n");
	snprintf(path, sizeof(path), "fsync_nomem.%d", (int)getpid());
	for (op = 0; op < NR_OPS; op++) {
		long k, seen = 0;

		for (k = 0; k < 200; k++) {
			seen = one((enum op)op, k, 1);
			if (k >= seen)
				break;
		}
		CHECKF(k < 200, "%s: the sweep did not end", op_name[op]);
		one((enum op)op, 0, -1);
		printf("%s: %ld allocations, each failed in turn, then all: "
		       "never a success without the data\n", op_name[op], seen);
	}
	wait_in_flight();
	printf("PASS: %llu calls, %llu allocations failed, %llu errors "
	       "returned, none a success without the data\n",
	       (unsigned long long)nr_calls, (unsigned long long)nr_injected,
	       (unsigned long long)nr_errors);
	return T_EXIT_PASS;
}
