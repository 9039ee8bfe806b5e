/* SPDX-License-Identifier: MIT */
/*
 * test_wt_eio - EIO injected on a write-through I/O: the write returns
 * -EIO; a later read returns what the disk has (old data, or zeros / EOF
 * past the old end), never the rejected data; fsync reports -EIO once;
 * a rejected extending write leaves the size where it was (wtio_file_size,
 * and the backing file after fsync and after close); after the rules are
 * cleared a retried write-through succeeds.
 */
#include "helpers.h"
#include "t_fault.h"

#define FSIZE	65536
#define BS	4096

int main(void)
{
	struct wtio_fault *fault;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .count = 1,
				     .error = EIO };
	const char *path;
	uint8_t *data = t_malloc(FSIZE + 2 * BS), *buf = t_malloc(FSIZE),
		*rb = t_malloc(FSIZE);
	ssize_t n;
	size_t i;

	t_require_odirect();
	path = t_tmpfile("wteio");
	t_fill(data, FSIZE, 1, 0);
	t_write_disk(path, data, FSIZE);

	fault = wtio_fault_create();
	CHECK(fault);
	t_fault_config(&cfg, BS, 256);
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);

	/* Overwrite of cached data, unaligned, two folios. */
	CHECK_EQ(wtio_pread(f, rb, FSIZE, 0, 0), FSIZE);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	t_fill(buf, 2 * BS, 2, BS + 100);
	CHECK_EQ(wtio_pwrite(f, buf, 2 * BS, BS + 100, WTIO_WRITETHROUGH),
		 -EIO);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	wtio_fault_clear_rules(fault);
	CHECK_EQ(wtio_pread(f, rb, FSIZE, 0, 0), FSIZE);
	CHECKF(t_memdiff(rb, data, FSIZE) < 0,
	       "read after failed write-through differs from disk at %lld",
	       t_memdiff(rb, data, FSIZE));
	t_check_disk_equals(path, data, FSIZE);
	printf("write-through with EIO -> -EIO; read returns the old disk "
	       "data, not the rejected bytes\n");

	/* The error is recorded for the file: fsync reports it once. */
	CHECK_EQ(wtio_fsync(f), -EIO);
	CHECK_EQ(wtio_fsync(f), 0);
	printf("fsync reports -EIO once, then 0\n");

	/* Extending write rejected: reads give zeros or EOF there. */
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	t_fill(buf, BS, 3, FSIZE);
	CHECK_EQ(wtio_pwrite(f, buf, BS, FSIZE, WTIO_WRITETHROUGH), -EIO);
	wtio_fault_clear_rules(fault);
	n = wtio_pread(f, rb, BS, FSIZE, 0);
	CHECKF(n >= 0 && n <= BS, "pread past old end: %zd", n);
	for (i = 0; i < (size_t)n; i++)
		CHECKF(rb[i] == 0, "rejected extending data served at +%zu "
		       "(%02x)", i, rb[i]);
	CHECKF(wtio_file_size(f) == FSIZE, "failed extending write moved "
	       "the size to %lld (was %d)", (long long)wtio_file_size(f),
	       FSIZE);
	CHECK_EQ(n, 0);
	CHECK_EQ(wtio_fsync(f), -EIO);
	CHECKF(t_disk_size(path) == FSIZE, "backing file %lld bytes after "
	       "fsync, want %d", (long long)t_disk_size(path), FSIZE);
	t_check_disk_equals(path, data, FSIZE);
	printf("extending write-through with EIO -> -EIO; size stays %d, in "
	       "wtio and on disk after fsync\n", FSIZE);

	/* Retry succeeds and reads back, in the cache and on disk. */
	t_fill(buf, 2 * BS, 2, BS + 100);
	CHECK_EQ(wtio_pwrite(f, buf, 2 * BS, BS + 100, WTIO_WRITETHROUGH),
		 2 * BS);
	memcpy(data + BS + 100, buf, 2 * BS);
	t_fill(buf, BS, 3, FSIZE);
	CHECK_EQ(wtio_pwrite(f, buf, BS, FSIZE, WTIO_WRITETHROUGH), BS);
	memcpy(data + FSIZE, buf, BS);
	t_check_wtio_range(f, data, FSIZE + BS, 0, FSIZE + BS);
	CHECK_EQ(wtio_fsync(f), 0);
	t_check_disk_equals(path, data, FSIZE + BS);
	printf("retries after clearing rules succeed, cache and disk match\n");

	/* A rejected append just before close: close reports it and the
	 * backing file keeps the old size. */
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	t_fill(buf, 2 * BS, 4, FSIZE + BS);
	CHECK_EQ(wtio_pwrite(f, buf, 2 * BS, FSIZE + BS, WTIO_WRITETHROUGH),
		 -EIO);
	wtio_fault_clear_rules(fault);
	CHECK_EQ(wtio_file_size(f), FSIZE + BS);
	CHECK_EQ(wtio_close(f), -EIO);
	CHECKF(t_disk_size(path) == FSIZE + BS, "backing file %lld bytes "
	       "after close, want %d", (long long)t_disk_size(path),
	       FSIZE + BS);
	t_check_disk_equals(path, data, FSIZE + BS);
	printf("rejected append before close: close -> -EIO, size stays %d\n",
	       FSIZE + BS);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(data);
	free(buf);
	free(rb);
	printf("PASS\n");
	return T_EXIT_PASS;
}
