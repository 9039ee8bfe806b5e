/* SPDX-License-Identifier: MIT */
/*
 * test_throttle.c - a writer far faster than writeback (each write I/O is
 * delayed by the fault backend) with a small budget and small dirty
 * ratios is throttled (throttle_waits > 0), never deadlocks (an alarm
 * fails the test) and never exceeds the budget; the data is verified.
 */
#include <signal.h>

#include "helpers.h"
#include "wtio_fault.h"

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
	t_fault_config(&cfg, fault, fs, budget);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	cfg.dirty_background_ratio = bg;
	cfg.dirty_ratio = ratio;
	ctx = t_ctx_create(&cfg);
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
	printf("throttle: PASS\n");
	return T_EXIT_PASS;
}
