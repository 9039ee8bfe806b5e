/* SPDX-License-Identifier: MIT */
/*
 * test_eof_holes.c - reads across EOF return exactly the bytes up to EOF,
 * reads at or past EOF return 0; sparse writes leave holes that read as
 * zeros, in the cache and on disk after fsync; the size moves in the
 * write path.
 */
#include "helpers.h"

static uint64_t checks;

static void expect_read(struct wtio_file *f, const uint8_t *shadow,
			size_t size, off_t off, size_t len)
{
	t_check_wtio_range(f, shadow, size, off, len);
	checks++;
}

static void write_at(struct wtio_file *f, uint8_t *shadow, size_t *size,
		     off_t off, size_t len, uint64_t seed)
{
	t_pwrite_shadow(f, shadow, size, off, len, seed, 0);
	/* The size moves in the write path, before any writeback. */
	CHECK_EQ(wtio_file_size(f), (long long)*size);
	checks++;
}

static void run(uint32_t fs, uint64_t budget)
{
	const size_t max = 4u << 20;
	uint8_t *shadow = t_zalloc(max);
	size_t size = 0;
	struct wtio_ctx *ctx = t_ctx(fs, budget, WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("eof_holes");
	struct wtio_file *f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	char b[64];
	struct wtio_stats st;

	/* Empty file: every read returns 0. */
	CHECK_EQ(wtio_file_size(f), 0);
	CHECK_EQ(wtio_pread(f, b, sizeof(b), 0, 0), 0);
	CHECK_EQ(wtio_pread(f, b, sizeof(b), 12345, 0), 0);

	write_at(f, shadow, &size, 0, 10, 1);
	CHECK_EQ(wtio_pread(f, b, sizeof(b), 0, 0), 10);	/* across EOF */
	CHECK_EQ(wtio_pread(f, b, sizeof(b), 5, 0), 5);
	CHECK_EQ(wtio_pread(f, b, sizeof(b), 10, 0), 0);	/* at EOF */
	CHECK_EQ(wtio_pread(f, b, sizeof(b), 11, 0), 0);	/* past EOF */
	CHECK_EQ(wtio_pread(f, b, 1, 9, 0), 1);
	expect_read(f, shadow, size, 0, 64);

	/* Same block, past EOF: the gap 10..3000 must read as zeros. */
	write_at(f, shadow, &size, 3000, 7, 2);
	expect_read(f, shadow, size, 0, 4096);
	expect_read(f, shadow, size, 2990, 100);

	/* A hole of whole folios and a write straddling a folio boundary. */
	write_at(f, shadow, &size, (off_t)(3 * fs) - 5, 11, 3);
	write_at(f, shadow, &size, (off_t)(1u << 20) + 7, 100, 4);
	expect_read(f, shadow, size, 0, size + 4096);
	expect_read(f, shadow, size, (off_t)size - 1, 4096);
	expect_read(f, shadow, size, (off_t)size, 4096);
	CHECK_EQ(wtio_pread(f, b, sizeof(b), (off_t)size + 1, 0), 0);

	/* Hole check before and after writeback. */
	CHECK_OK(wtio_fsync(f));
	CHECK_EQ(t_disk_size(path), (long long)size);
	t_check_disk_equals(path, shadow, size);
	expect_read(f, shadow, size, 0, size + 10);

	/* Extend from a cached, clean, partial last block. */
	write_at(f, shadow, &size, (off_t)size + 1234, 1, 5);
	expect_read(f, shadow, size, (off_t)size - 5000, 6000);
	/* Big sparse extension far out, unaligned. */
	write_at(f, shadow, &size, (off_t)(3u << 20) + 4097, 70000, 6);
	expect_read(f, shadow, size, (off_t)(1u << 20), size);
	CHECK_OK(wtio_fsync(f));
	CHECK_EQ(t_disk_size(path), (long long)size);
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK_OK(wtio_close(f));

	/* Reopen (fresh cache): the tail is read from disk; block tail past
	 * EOF must not show. */
	f = t_open(ctx, path, O_RDWR);
	CHECK_EQ(wtio_file_size(f), (long long)size);
	expect_read(f, shadow, size, (off_t)size - 100, 8192);
	CHECK_EQ(wtio_pread(f, b, sizeof(b), (off_t)size, 0), 0);
	expect_read(f, shadow, size, 0, size);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
}

/* A file with an unaligned size written outside wtio. */
static void run_foreign(void)
{
	const char *path = t_tmpfile("eof_foreign");
	uint8_t data[5000], buf[16384];
	int fd = open(path, O_WRONLY);
	struct wtio_ctx *ctx = t_ctx(4096, 64, WTIO_BACKEND_AUTO);
	struct wtio_file *f;
	uint8_t shadow[20000];
	size_t size = 5000;

	CHECK(fd >= 0);
	t_fill(data, sizeof(data), 9, 0);
	CHECK_EQ(pwrite(fd, data, sizeof(data), 0), 5000);
	CHECK_OK(fsync(fd));
	close(fd);
	memset(shadow, 0, sizeof(shadow));
	memcpy(shadow, data, 5000);

	f = t_open(ctx, path, O_RDWR);
	CHECK_EQ(wtio_file_size(f), 5000);
	CHECK_EQ(wtio_pread(f, buf, sizeof(buf), 4000, 0), 1000);
	CHECK(memcmp(buf, data + 4000, 1000) == 0);
	CHECK_EQ(wtio_pread(f, buf, sizeof(buf), 0, 0), 5000);
	CHECK(memcmp(buf, data, 5000) == 0);
	CHECK_EQ(wtio_pread(f, buf, sizeof(buf), 5000, 0), 0);
	/* Extend past the unaligned EOF inside the same block. */
	write_at(f, shadow, &size, 6000, 10, 10);
	expect_read(f, shadow, size, 0, sizeof(buf));
	write_at(f, shadow, &size, 15000, 10, 11);
	expect_read(f, shadow, size, 0, sizeof(buf));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
}

int main(void)
{
	t_require_odirect();
	run(4096, 1024);
	run(4096, 16);
	run(16384, 256);
	run(65536, 64);
	run(65536, 16);
	run(1u << 20, 16);
	run_foreign();
	printf("eof_holes: %llu checks: PASS\n", (unsigned long long)checks);
	return T_EXIT_PASS;
}
