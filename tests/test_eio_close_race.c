/* SPDX-License-Identifier: MIT */
/*
 * test_eio_close_race.c - a close (or fsync) that begins while a failed
 * write-back I/O is ending still writes the data that I/O gives back
 * dirty. The I/O's error is recorded before its folios leave writeback
 * dirty again; a sync pass that began in between found them neither
 * dirty nor its to wait for, and the check "did an error come meanwhile"
 * saw nothing new, so close returned -EIO and dropped the data (it
 * happened once in CI, under load: eio_writeback_async, "disk differs
 * from shadow at byte 3"). The test hook holds the completion in that
 * window while the test closes the file.
 */
#include <stdatomic.h>

#include "helpers.h"
#include "t_fault.h"
#include "test_hooks.h"

static atomic_int armed, in_window;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	(void)f;
	if (tp == WTIO_TP_WB_FAILED && atomic_exchange(&armed, 0)) {
		atomic_store(&in_window, 1);
		usleep(200 * 1000);
		atomic_store(&in_window, 0);
	}
	return 0;
}

/* Write len bytes, fail their background write-back once, and with the
 * failure held in its window call fin (close or fsync): it must return
 * -EIO and the data must be on disk when it returns. */
static void race(uint32_t fs, size_t len, off_t off, bool use_close)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 1, .error = EIO,
	};
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	const char *path = t_tmpfile("eio-close-race");
	size_t total = (size_t)off + len;
	uint8_t *shadow = t_malloc(total);
	struct wtio_file *f;
	int ret;

	CHECK(fault != NULL);
	t_fault_config(&cfg, fs, 256);
	ctx = t_fault_async_ctx(&cfg, fault);
	memset(shadow, 0, total);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	t_fill(shadow + off, len, 11, (uint64_t)off);
	CHECK_EQ(wtio_pwrite(f, shadow + off, len, off, 0), (long long)len);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	atomic_store(&armed, 1);
	/* Started write-back: completed (and failed) in another thread. */
	ret = wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WRITE);
	CHECKF(ret == 0 || ret == -EIO, "sync_range: %d", ret);
	for (int i = 0; i < 5000 && !atomic_load(&in_window); i++)
		usleep(1000);
	CHECKF(atomic_load(&in_window), "the failed I/O never reached the hook");
	if (use_close) {
		CHECK_EQ(wtio_close(f), -EIO);
		t_check_disk_equals(path, shadow, total);
	} else {
		CHECK_EQ(wtio_fsync(f), -EIO);
		t_check_disk_equals(path, shadow, total);
		CHECK_OK(wtio_fsync(f));
		CHECK_OK(wtio_close(f));
	}
	CHECK_EQ(wtio_fault_injected(fault), 1);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	unlink(path);
	printf("  folio %u, %zu bytes at %lld, %s in the window: data written, "
	       "-EIO once: ok\n", fs, len, (long long)off,
	       use_close ? "close" : "fsync");
}

int main(void)
{
	t_require_odirect();
	wtio_test_hook = hook;
	race(4096, 5000, 3, true);
	race(65536, 200000, 0, true);
	race(4096, 5000, 3, false);
	race(16384, 70000, 12345, false);
	printf("eio_close_race: PASS\n");
	return T_EXIT_PASS;
}
