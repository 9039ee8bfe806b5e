/* SPDX-License-Identifier: MIT */
/*
 * test_size_ahead.c - WTIO_CONFIG_SIZE_AHEAD: appending write-through
 * writes leave the backing file longer than wtio's size, with zeros past
 * it; reads stop at wtio's size; fsync and close make the backing size
 * exact; a truncate resets it. Without the flag the backing file never
 * runs ahead.
 */
#include "helpers.h"

static void run(bool ahead)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	struct wtio_file *f;
	const char *path = t_tmpfile(ahead ? "ahead" : "noahead");
	uint8_t buf[4096], back[8192];
	off_t size = 0, disk_max = 0;
	int i;

	wtio_config_init(&cfg);
	cfg.cache_size = 64 * 4096;
	cfg.readahead_max = 4096;
	if (ahead)
		cfg.flags |= WTIO_CONFIG_SIZE_AHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	for (i = 0; i < 300; i++) {
		size_t len = 1000 + (size_t)(i * 37) % 3000;

		t_fill(buf, len, 7, (uint64_t)size);
		CHECK_EQ(wtio_pwrite(f, buf, len, size, WTIO_WRITETHROUGH),
			 (ssize_t)len);
		size += (off_t)len;
		CHECK_EQ(wtio_file_size(f), size);
		if (t_disk_size(path) > disk_max)
			disk_max = t_disk_size(path);
		if (!ahead)
			CHECK(t_disk_size(path) <= ((size + 4095) & ~4095));
	}
	if (ahead)
		CHECKF(disk_max >= size + (1 << 20) - 4096,
		       "backing file never ran ahead: %lld for %lld",
		       (long long)disk_max, (long long)size);
	/* Reads end at wtio's size, not the backing file's. */
	CHECK_EQ(wtio_pread(f, back, sizeof(back), size - 100, 0), 100);
	CHECK_EQ(t_verify(back, 100, 7, (uint64_t)size - 100), -1);
	CHECK_OK(wtio_fsync(f));
	CHECK_EQ(t_disk_size(path), size);
	CHECK_EQ(wtio_pwrite(f, buf, 100, size, WTIO_WRITETHROUGH), 100);
	CHECK_OK(wtio_ftruncate(f, size / 2));
	CHECK_EQ(t_disk_size(path), size / 2);
	CHECK_EQ(wtio_pwrite(f, buf, 100, size / 2, WTIO_WRITETHROUGH), 100);
	CHECK_OK(wtio_close(f));
	CHECK_EQ(t_disk_size(path), size / 2 + 100);
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("%s: 300 appends to %lld bytes, backing file at most %lld; "
	       "exact after fsync, truncate and close\n",
	       ahead ? "size ahead" : "default", (long long)size,
	       (long long)disk_max);
}

int main(void)
{
	t_require_odirect();
	run(false);
	run(true);
	return T_EXIT_PASS;
}
