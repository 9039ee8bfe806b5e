/* SPDX-License-Identifier: MIT */
/*
 * test_dead_device.c - a device that refuses every write never hangs the
 * process: with a small cache and write-back writes of ten times the
 * budget, every write returns (bytes, or -EIO), fsync and close report
 * the error, and the context can be destroyed. A watchdog fails the test
 * instead of hanging. Once the cache is full of data the disk refused,
 * that data is given up (its error stays recorded, see DESIGN.md) and
 * the writes go on being accepted, as on Linux.
 */
#include <signal.h>
#include <unistd.h>

#include "helpers.h"
#include "t_fault.h"

int main(void)
{
	struct wtio_fault_rule rule = { .ops = WTIO_FAULT_WRITE, .error = EIO };
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	struct wtio_file *f;
	const char *path;
	char buf[4096];
	long ok = 0, failed = 0;
	int i, ret;

	t_require_odirect();
	t_watchdog(120, "FAIL: dead device test hung (watchdog)\n");
	CHECK(fault != NULL);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	t_fault_config(&cfg, 4096, 32);
	cfg.readahead_max = 4096;
	ctx = t_fault_ctx_create(&cfg, fault);
	path = t_tmpfile("dead");
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);

	memset(buf, 'd', sizeof(buf));
	for (i = 0; i < 320; i++) {
		ssize_t w = wtio_pwrite(f, buf, sizeof(buf), (off_t)i * 4096, 0);

		if (w == (ssize_t)sizeof(buf)) {
			ok++;
		} else {
			CHECKF(w == -EIO, "write %d: %zd", i, w);
			failed++;
		}
	}
	printf("320 writes to a dead device: %ld accepted into the cache, "
	       "%ld refused with -EIO\n", ok, failed);
	CHECK(ok >= 16);
	ret = wtio_fsync(f);
	CHECK_EQ(ret, -EIO);
	CHECK(wtio_fault_injected(fault) > 0);
	ret = wtio_close(f);
	CHECKF(ret == -EIO || ret == 0, "close: %d", ret);
	{
		/* Data a failed last close kept is tried once more as the
		 * context goes: on a dead device that fails, and says so. */
		int d = wtio_ctx_destroy(ctx);

		CHECKF(d == 0 || (ret && d == -EIO),
		       "destroy: %d after close %d", d, ret);
	}
	wtio_fault_destroy(fault);
	printf("fsync reported -EIO, close returned %d, context destroyed\n",
	       ret);
	return T_EXIT_PASS;
}
