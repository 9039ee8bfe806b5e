/* SPDX-License-Identifier: MIT */
/*
 * test_throttle.c - a writer far faster than writeback (each write I/O is
 * delayed by the fault backend) with a small budget and small dirty
 * ratios is throttled (throttle_waits > 0), writes back its own file
 * from its own thread before it would sleep (seen in the fault trace),
 * never deadlocks (an alarm fails the test) and never exceeds the
 * budget; the data is verified.
 *
 * And without timing or the library's counters: with every write-back
 * I/O held (a fault hold rule), a writer thread must stop (blocked, no
 * progress) having had acknowledged no more than the dirty limit plus one
 * write plus what the held I/Os carry; then the I/O is released and the
 * writer finishes, every byte verified.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#include "helpers.h"
#include "t_fault.h"

static struct {
	struct wtio_file *f;
	const uint8_t *data;
	size_t size, chunk;
	atomic_size_t acked;	/* bytes whose write returned */
	atomic_int tid;
} hw;

static void *held_writer(void *arg)
{
	size_t off;

	(void)arg;
	atomic_store(&hw.tid, (int)syscall(SYS_gettid));
	for (off = 0; off < hw.size; off += hw.chunk) {
		size_t len = hw.size - off < hw.chunk ? hw.size - off : hw.chunk;

		CHECK_EQ(wtio_pwrite(hw.f, hw.data + off, len, (off_t)off, 0),
			 (long long)len);
		atomic_store(&hw.acked, off + len);
	}
	return NULL;
}

static void held(uint32_t fs, uint64_t budget, uint32_t bg, uint32_t ratio)
{
	const size_t size = (size_t)fs * budget * 2;
	uint8_t *data = t_malloc(size);
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = { .ops = WTIO_FAULT_WRITE, .hold = 1 };
	const char *path = t_tmpfile("throttle-held");
	uint64_t limit = budget * ratio / 100, held_bytes = 0, i, n;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	size_t acked, bound, last = (size_t)-1;
	pthread_t th;
	int stable = 0, tries;

	CHECK(fault);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	t_fault_config(&cfg, fs, budget);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	cfg.dirty_background_ratio = bg;
	cfg.dirty_ratio = ratio;
	ctx = t_fault_ctx_create(&cfg, fault);
	hw.f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	t_fill(data, size, 77, 0);
	hw.data = data;
	hw.size = size;
	/* Whole folios: the writer never waits for a folio of its own
	 * under (held) writeback, only on the dirty limit. */
	hw.chunk = 3 * (size_t)fs;
	atomic_store(&hw.acked, 0);
	atomic_store(&hw.tid, 0);
	CHECK_OK(pthread_create(&th, NULL, held_writer, NULL));
	CHECKF(wtio_fault_wait_held(fault, 1, 30000) == 0,
	       "no write-back I/O was issued");
	/* Blocked ('S') with no progress, five looks in a row. */
	for (tries = 0; tries < 20000 && stable < 5; tries++) {
		usleep(200);
		acked = atomic_load(&hw.acked);
		CHECKF(acked < size, "folio %u: the writer wrote all %zu bytes "
		       "with every write-back I/O held: never throttled", fs,
		       size);
		if (atomic_load(&hw.tid) &&
		    t_task_state(atomic_load(&hw.tid)) == 'S' && acked == last)
			stable++;
		else
			stable = 0;
		last = acked;
	}
	CHECKF(stable == 5, "folio %u: the writer never stopped", fs);
	n = wtio_fault_nr_ios(fault);
	for (i = 0; i < n; i++) {
		struct wtio_fault_io io;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_WRITE)
			held_bytes += io.len;
	}
	if (limit < 1)
		limit = 1;
	bound = (size_t)(limit + 2) * fs + hw.chunk + (size_t)held_bytes;
	printf("  held: folio %u budget %llu ratio %u%%: writer stopped after "
	       "%zu bytes (limit %llu folios + one write + %llu held bytes = "
	       "%zu), %llu I/Os held\n", fs, (unsigned long long)budget,
	       ratio, last, (unsigned long long)limit,
	       (unsigned long long)held_bytes, bound,
	       (unsigned long long)wtio_fault_held(fault));
	CHECKF(last <= bound, "folio %u: %zu bytes acknowledged with no "
	       "write-back done, the dirty limit allows %zu", fs, last,
	       bound);
	wtio_fault_clear_rules(fault);
	wtio_fault_release(fault);
	CHECK_OK(pthread_join(th, NULL));
	t_check_wtio_range(hw.f, data, size, 0, size);
	CHECK_OK(wtio_close(hw.f));
	t_check_disk_equals(path, data, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(data);
}

static void run(uint32_t fs, uint64_t budget, uint32_t bg, uint32_t ratio,
		uint32_t delay_us)
{
	const size_t size = 8u << 20;
	uint8_t *shadow = t_malloc(size);
	uint8_t *buf = t_malloc(size);
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .delay_us = delay_us,
	};
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	struct wtio_file *f;
	struct wtio_stats st;
	const char *path = t_tmpfile("throttle");
	uint64_t max_dirty = 0;
	size_t off, chunk = 3 * (size_t)fs + 100;
	int pass;

	CHECK(fault);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	t_fault_config(&cfg, fs, budget);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	cfg.dirty_background_ratio = bg;
	cfg.dirty_ratio = ratio;
	ctx = t_fault_ctx_create(&cfg, fault);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);

	for (pass = 0; pass < 2; pass++) {
		t_fill(shadow, size, 100 + (uint64_t)pass, 0);
		for (off = 0; off < size; off += chunk) {
			size_t len = size - off < chunk ? size - off : chunk;

			CHECK_EQ(wtio_pwrite(f, shadow + off, len, (off_t)off, 0),
				 (long long)len);
			CHECK_OK(wtio_stats(ctx, &st));
			CHECK(st.cached_folios <= st.total_folios);
			if (st.dirty_folios > max_dirty)
				max_dirty = st.dirty_folios;
		}
	}
	CHECK_OK(wtio_stats(ctx, &st));
	printf("  folio %u budget %llu bg %u%% ratio %u%%: throttle_waits %llu "
	       "max dirty %llu write_ios %llu\n", fs,
	       (unsigned long long)budget, bg, ratio,
	       (unsigned long long)st.throttle_waits,
	       (unsigned long long)max_dirty,
	       (unsigned long long)st.write_ios);
	CHECKF(st.throttle_waits > 0, "writer was never throttled");
	/* Over the limit, the writer writes back its own file before it
	 * sleeps: some write-back I/O came from its thread, not only from
	 * the flusher's (the fault trace records the submitter). */
	{
		int me = (int)syscall(SYS_gettid);
		uint64_t i, n = wtio_fault_nr_ios(fault), mine = 0, all = 0;

		for (i = 0; i < n; i++) {
			struct wtio_fault_io io;

			CHECK_OK(wtio_fault_get_io(fault, i, &io));
			if (io.op != WTIO_FAULT_WRITE)
				continue;
			all++;
			mine += io.tid == me;
		}
		printf("    write I/Os from the writer's thread: %llu of %llu\n",
		       (unsigned long long)mine, (unsigned long long)all);
		CHECKF(mine > 0, "the throttled writer never wrote back its "
		       "own file (every write I/O was the flusher's)");
	}
	/* One writer: after each write it returns at or below the limit, so
	 * dirty data never exceeds the limit by more than one write. */
	{
		uint64_t limit = budget * ratio / 100;

		if (limit < 1)
			limit = 1;
		CHECKF(max_dirty <= limit + chunk / fs + 2,
		       "dirty folios reached %llu, limit %llu",
		       (unsigned long long)max_dirty,
		       (unsigned long long)limit);
	}
	CHECK(wtio_fault_injected(fault) > 0);
	t_check_wtio_range(f, shadow, size, 0, size);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	unlink(path);
	free(shadow);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	t_watchdog(120, "FAIL: throttled writer hung (watchdog)\n");
	run(4096, 256, 2, 5, 300);
	run(65536, 32, 5, 10, 500);
	run(4096, 64, 1, 1, 100);
	held(4096, 256, 2, 5);
	held(65536, 32, 5, 10);
	printf("throttle: PASS\n");
	return T_EXIT_PASS;
}
