/* SPDX-License-Identifier: MIT */
/*
 * test_flushers.c - two flushers split write-back across inodes: with
 * many dirty files both flushers write, no file is ever written by two
 * threads at once (the fault backend counts a write that begins while
 * another thread's write of its file is under way), and every byte
 * reaches the disk; with one file, still no two writers at once.
 *
 * Each write-back I/O is slowed (a delay rule) so that a second flusher
 * on a file already being written would be caught in the act.
 *
 * And a flusher with nothing it can write sleeps: with dirty data over
 * the background threshold on a file the other flusher is busy with
 * (its I/O held), files holding only data a failed write-back gave back
 * (fsync's to retry, never a flusher's) used to be taken, passed over
 * and queued again by the idle flusher, a whole CPU for as long as the
 * I/O was held.
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#include "helpers.h"
#include "t_fault.h"

#define FS 4096u
#define MAX_FILES 24

struct wfile {
	const char *path;
	struct wtio_file *f;
	uint8_t *shadow;
	size_t size;
};

/* Every other folio of [0, nr_folios): I/Os that cannot merge. */
static void write_round(struct wfile *w, int nfiles, size_t nr_folios,
			uint64_t seed)
{
	size_t i;
	int k;

	for (i = 0; i < nr_folios; i += 2)
		for (k = 0; k < nfiles; k++)
			t_pwrite_shadow(w[k].f, w[k].shadow, &w[k].size,
					(off_t)(i * FS), FS,
					seed + (uint64_t)k, 0);
}

/* Wait (at most 20 s) until the flushers left nothing dirty. */
static void wait_clean(struct wtio_ctx *ctx)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	struct wtio_stats st;
	int i;

	for (i = 0; i < 4000; i++) {
		st = t_stats(ctx);
		if (!st.dirty_folios && !st.writeback_folios)
			return;
		nanosleep(&ts, NULL);
	}
	CHECKF(0, "the flushers left %llu folios dirty for 20 s",
	       (unsigned long long)st.dirty_folios);
}

/* Writers of the trace other than this thread, and this thread's
 * writes. */
static int flusher_threads(struct wtio_fault *fault, uint64_t *own)
{
	int me = (int)syscall(SYS_gettid), tids[8], nt = 0, j;
	uint64_t i, n = wtio_fault_nr_ios(fault);
	struct wtio_fault_io io;

	*own = 0;
	for (i = 0; i < n; i++) {
		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op != WTIO_FAULT_WRITE)
			continue;
		if (io.tid == me) {
			(*own)++;
			continue;
		}
		for (j = 0; j < nt && tids[j] != io.tid; j++)
			;
		if (j == nt && nt < 8)
			tids[nt++] = io.tid;
	}
	return nt;
}

static void run(int nfiles, size_t nr_folios)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule slow = {
		.ops = WTIO_FAULT_WRITE, .delay_us = 200,
	};
	struct wfile w[MAX_FILES];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	uint64_t own;
	int k, nt;

	CHECK(fault);
	CHECK_OK(wtio_fault_add_rule(fault, &slow));
	t_fault_config(&cfg, FS, 4096);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	cfg.nr_flushers = 2;
	/* Writeback from the first few dirty folios on, everything
	 * written soon after: the test waits for the flushers alone. */
	cfg.dirty_background_ratio = 1;
	cfg.dirty_ratio = 60;
	cfg.dirty_expire_ms = 20;
	cfg.writeback_interval_ms = 10;
	ctx = t_fault_ctx_create(&cfg, fault);
	for (k = 0; k < nfiles; k++) {
		w[k].path = t_tmpfile("flushers");
		w[k].f = t_open(ctx, w[k].path, O_RDWR | O_CREAT | O_TRUNC);
		w[k].shadow = t_zalloc(nr_folios * FS);
		w[k].size = 0;
	}
	/* Twice: the second round re-dirties files while the flushers are
	 * still writing the first. */
	write_round(w, nfiles, nr_folios, 1000);
	write_round(w, nfiles, nr_folios, 2000);
	wait_clean(ctx);

	nt = flusher_threads(fault, &own);
	printf("  %d file(s) x %zu folios: %llu write I/Os, by %d flusher "
	       "thread(s), %llu by the writer, %llu begun beside another "
	       "thread's write of the same file\n", nfiles, nr_folios,
	       (unsigned long long)wtio_fault_nr_ios(fault), nt,
	       (unsigned long long)own,
	       (unsigned long long)wtio_fault_write_overlaps(fault));
	CHECKF(own == 0, "the writer wrote back %llu I/Os itself, before any "
	       "fsync or close", (unsigned long long)own);
	CHECKF(wtio_fault_write_overlaps(fault) == 0,
	       "a file was written by two threads at once");
	if (nfiles > 1)
		CHECKF(nt == 2, "%d of the 2 flushers wrote", nt);
	else
		CHECKF(nt >= 1, "no flusher wrote");

	for (k = 0; k < nfiles; k++) {
		t_check_wtio_range(w[k].f, w[k].shadow, w[k].size, 0, w[k].size);
		CHECK_OK(wtio_close(w[k].f));
		t_check_disk_equals(w[k].path, w[k].shadow, w[k].size);
		free(w[k].shadow);
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	CHECK_OK(getrusage(RUSAGE_SELF, &ru));
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void idle_with_failed_files(void)
{
	const size_t big = 12u << 20;
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule eio = {
		.ops = WTIO_FAULT_WRITE, .error = EIO, .end = 1u << 20,
	};
	struct wtio_fault_rule hold = {
		.ops = WTIO_FAULT_WRITE, .start = 1u << 20, .hold = 1,
	};
	uint8_t page[FS], *data = t_malloc(big);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	double used;
	int k, ret;

	CHECK(fault);
	CHECK_OK(wtio_fault_add_rule(fault, &eio));
	CHECK_OK(wtio_fault_add_rule(fault, &hold));
	t_fault_config(&cfg, FS, 16384);
	cfg.nr_flushers = 2;
	cfg.dirty_expire_ms = 600000;
	cfg.writeback_interval_ms = 600000;
	ctx = t_fault_ctx_create(&cfg, fault);
	memset(page, 'x', sizeof(page));
	for (k = 0; k < 20; k++) {
		f = t_open(ctx, t_tmpfile("flushers-failed"),
			   O_RDWR | O_CREAT | O_TRUNC);
		CHECK_EQ(wtio_pwrite(f, page, sizeof(page), 0, 0), FS);
		CHECK(wtio_fsync(f) == -EIO);
		/* Left cached with its failed data (file.c). */
		CHECK(wtio_close(f) == -EIO);
	}
	/* 12 MiB of cleanable data, over the background threshold, on a
	 * file whose first write-back I/O stays held. */
	memset(data, 'y', big);
	f = t_open(ctx, t_tmpfile("flushers-busy"), O_RDWR | O_CREAT | O_TRUNC);
	CHECK_EQ(wtio_pwrite(f, data, big, 1u << 20, 0), (long long)big);
	CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
	used = cpu_seconds();
	usleep(1500000);
	used = cpu_seconds() - used;
	printf("  20 files with failed data, one busy over the threshold: "
	       "%.2f CPU s in 1.5 s idle\n", used);
	CHECKF(used < 0.3, "the flushers used %.2f CPU s while nothing could "
	       "be written", used);
	wtio_fault_clear_rules(fault);
	wtio_fault_release(fault);
	CHECK_OK(wtio_close(f));
	/* The faults gone, leaving the cache retries the failed data. */
	ret = wtio_ctx_destroy(ctx);
	CHECKF(ret == 0, "wtio_ctx_destroy: %d", ret);
	wtio_fault_destroy(fault);
	free(data);
}

int main(void)
{
	t_require_odirect();
	t_watchdog(120, "FAIL: flushers hung (watchdog)\n");
	run(MAX_FILES, 48);
	run(1, 256);
	idle_with_failed_files();
	printf("flushers: PASS\n");
	return T_EXIT_PASS;
}
