/* SPDX-License-Identifier: MIT */
/*
 * test_fsx_regress.c - regressions found by wtio-fsx.
 *
 * 1. A read miss on a block that straddles the backing file's end, while
 *    i_size is larger (dirty write-back data past it is only cached): the
 *    direct read comes back short off an alignment boundary, and the retry
 *    from there was an unaligned direct read (-EINVAL from pread).
 *    (wtio-fsx -S 3 -N 3000, op 2130.)
 * 2. wtio_close() fixed the backing file's size while a flusher's
 *    writeback was still in flight; its completion then left the file a
 *    block tail longer than wtio's size.
 *    (wtio-fsx -S 18 -f 64k -l 512k -o 128k, op 18, timing-dependent.)
 */
#include <pthread.h>

#include "helpers.h"
#include "wtio_fault.h"

/*
 * The race, made deterministic: a read miss comes back short at the
 * backing file's (unaligned) end; while the rest is being read (the
 * second read I/O is delayed), the backing file grows, as when a flusher
 * writes a block past it. The rest must be read from an aligned offset.
 */
static const char *grow_path;

static void *grow_backing(void *arg)
{
	int fd;

	(void)arg;
	usleep(50000);
	fd = open(grow_path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_OK(ftruncate(fd, 8192));
	close(fd);
	return NULL;
}

static void read_while_disk_grows(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule slow = { .ops = WTIO_FAULT_READ, .skip = 1,
					.count = 1, .delay_us = 200000 };
	const char *path = t_tmpfile("rg-grow");
	uint8_t *want = t_zalloc(3 * 65536);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	pthread_t th;
	int fd;

	CHECK(fault);
	t_fill(want, 5000, 1, 0);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, want, 5000, 0), 5000);
	close(fd);
	ctx = t_fault_ctx(fault, fs, 64);
	f = t_open(ctx, path, O_RDWR);
	/* i_size well past the disk's end, with cached data there. */
	t_fill(want + 2 * 65536, 1000, 2, 2 * 65536);
	CHECK_EQ(wtio_pwrite(f, want + 2 * 65536, 1000, 2 * 65536, 0), 1000);
	CHECK_OK(wtio_fault_add_rule(fault, &slow));
	grow_path = path;
	CHECK_OK(pthread_create(&th, NULL, grow_backing, NULL));
	t_check_wtio_range(f, want, 2 * 65536 + 1000, 0, 8192);
	CHECK_OK(pthread_join(th, NULL));
	CHECK_EQ(wtio_fault_injected(fault), 1);
	wtio_fault_clear_rules(fault);
	t_check_wtio_range(f, want, 2 * 65536 + 1000, 0, 2 * 65536 + 1000);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, want, 2 * 65536 + 1000);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(want);
}

/* A read over the disk's (unaligned) end while i_size is larger. */
static void read_over_disk_eof(uint32_t fs)
{
	struct wtio_ctx *ctx = t_ctx(fs, 64, WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("rg-eof");
	uint8_t *want = t_zalloc(3 * 65536);
	struct wtio_file *f;
	int fd;

	t_fill(want, 5000, 1, 0);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, want, 5000, 0), 5000);
	close(fd);
	f = t_open(ctx, path, O_RDWR);
	t_fill(want + 2 * 65536, 1000, 2, 2 * 65536);
	CHECK_EQ(wtio_pwrite(f, want + 2 * 65536, 1000, 2 * 65536, 0), 1000);
	t_check_wtio_range(f, want, 2 * 65536 + 1000, 0, 2 * 65536 + 1000);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, want, 2 * 65536 + 1000);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(want);
}

/* Close while a flusher's (slow) writeback of an extending, unaligned
 * write is in flight: the backing size must end equal to wtio's. */
static void close_with_flusher_io(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule slow = { .ops = WTIO_FAULT_WRITE,
					.delay_us = 100000 };
	const char *path = t_tmpfile("rg-close");
	size_t len = (size_t)fs * 24 + 1000;	/* over the background ratio */
	uint8_t *buf = t_malloc(len);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int i;

	CHECK(fault);
	ctx = t_fault_ctx(fault, fs, 64);
	CHECK_OK(wtio_fault_add_rule(fault, &slow));
	for (i = 0; i < 3; i++) {
		f = t_open(ctx, path, O_RDWR | O_TRUNC);
		t_fill(buf, len, 3 + (uint64_t)i, 0);
		CHECK_EQ(wtio_pwrite(f, buf, len, 0, 0), (long long)len);
		usleep(30000);	/* the flusher has picked it up */
		CHECK_OK(wtio_close(f));
		CHECKF(t_disk_size(path) == (off_t)len, "disk size %lld after "
		       "close, wtio's size %zu", (long long)t_disk_size(path), len);
		t_check_disk_equals(path, buf, len);
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	read_while_disk_grows(4096);
	read_while_disk_grows(65536);
	read_over_disk_eof(4096);
	read_over_disk_eof(65536);
	close_with_flusher_io(4096);
	close_with_flusher_io(65536);
	printf("fsx_regress: PASS\n");
	return T_EXIT_PASS;
}
