/* SPDX-License-Identifier: MIT */
/*
 * test_short_write.c - short write-back I/Os are resubmitted until the
 * data is completely on disk (fsync returns 0); an injected ENOSPC makes
 * fsync report -ENOSPC.
 */
#include "helpers.h"
#include "t_fault.h"

static void test_short(uint32_t fs, uint64_t count, uint32_t short_bytes)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = count, .error = 0,
		.short_bytes = short_bytes,
	};
	struct wtio_ctx *ctx = t_fault_ctx(fault, fs, 256);
	const char *path = t_tmpfile("short");
	const size_t len = 700001;
	uint8_t *data = t_malloc(len);
	struct wtio_file *f;
	struct wtio_stats st;

	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	t_fill(data, len, 3, 0);
	CHECK_EQ(wtio_pwrite(f, data, len, 0, 0), (long long)len);
	CHECK_OK(wtio_fsync(f));
	CHECK(wtio_fault_injected(fault) >= 1);
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK_EQ(st.writeback_errors, 0);
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, data, len);
	printf("  folio %u: %llu short writes of %u bytes (0: half) injected, %llu write I/Os, data complete\n",
	       fs, (unsigned long long)wtio_fault_injected(fault), short_bytes,
	       (unsigned long long)st.write_ios);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(data);
	unlink(path);
}

static void test_enospc(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 0, .error = ENOSPC,
	};
	struct wtio_ctx *ctx = t_fault_ctx(fault, fs, 256);
	const char *path = t_tmpfile("enospc");
	const size_t len = 100000;
	uint8_t *data = t_malloc(len);
	struct wtio_file *f;

	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	t_fill(data, len, 4, 0);
	CHECK_EQ(wtio_pwrite(f, data, len, 0, 0), (long long)len);
	CHECK_EQ(wtio_fsync(f), -ENOSPC);
	/* Space comes back: the kept-dirty data is written. */
	wtio_fault_clear_rules(fault);
	CHECK_OK(wtio_fsync(f));
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(data);
	unlink(path);
	printf("  folio %u: ENOSPC reported by fsync, retried after: ok\n", fs);
}

int main(void)
{
	t_require_odirect();
	test_short(4096, 1, 4096);
	test_short(4096, 0, 4096);	/* every write short */
	test_short(65536, 3, 4096);
	/* Half of the I/O, several times in a row. (Not every I/O forever:
	 * half of a one-block I/O rounds to 0 bytes, a write that makes no
	 * progress, which wtio rightly reports as an error.) */
	test_short(65536, 4, 0);
	test_short(4096, 4, 0);
	test_enospc(4096);
	test_enospc(65536);
	printf("short_write: PASS\n");
	return T_EXIT_PASS;
}
