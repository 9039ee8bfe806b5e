/* SPDX-License-Identifier: MIT */
/*
 * test_sync_range.c - wtio_sync_range: WRITE then WAIT_AFTER puts the
 * range's data on disk (read back with a separate O_DIRECT descriptor)
 * and the dirty count drops; data outside the range stays dirty;
 * nbytes 0 means to end of file; WAIT_BEFORE alone writes nothing.
 */
#include "helpers.h"

static uint64_t dirty(struct wtio_ctx *ctx)
{
	struct wtio_stats st;

	CHECK_OK(wtio_stats(ctx, &st));
	return st.dirty_folios + st.writeback_folios;
}

static void run(uint32_t fs)
{
	/* Flushers effectively off: huge expiry, high thresholds. */
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	const char *path = t_tmpfile("sync_range");
	const size_t len = 64 * (size_t)fs;
	uint8_t *data = t_malloc(len), *disk;
	uint8_t *zeros = t_zalloc(len);
	struct wtio_file *f;
	size_t dlen;
	uint64_t d0, d1, d2;

	wtio_config_init(&cfg);
	cfg.folio_size = fs;
	cfg.cache_size = (uint64_t)fs * 1024;
	cfg.readahead_max = 4 * fs;
	cfg.dirty_background_ratio = 80;
	cfg.dirty_ratio = 90;
	cfg.dirty_expire_ms = 600000;
	cfg.writeback_interval_ms = 600000;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);

	/* Make the file exist on disk at full size, zeros. */
	CHECK_OK(wtio_ftruncate(f, (off_t)len));
	t_fill(data, len, 21, 0);
	CHECK_EQ(wtio_pwrite(f, data, len, 0, 0), (long long)len);
	d0 = dirty(ctx);
	CHECK_EQ(d0, 64);

	/* WAIT_BEFORE alone starts nothing. */
	CHECK_OK(wtio_sync_range(f, 0, (off_t)len, WTIO_SYNC_RANGE_WAIT_BEFORE));
	CHECK_EQ(dirty(ctx), 64);
	disk = t_read_disk(path, &dlen);
	CHECK_EQ(dlen, len);
	CHECK(memcmp(disk, zeros, len) == 0);
	free(disk);

	/* The first 16 folios, by an unaligned range [1, 16 folios). */
	CHECK_OK(wtio_sync_range(f, 1, (off_t)(16 * fs) - 1,
				 WTIO_SYNC_RANGE_WRITE | WTIO_SYNC_RANGE_WAIT_AFTER));
	d1 = dirty(ctx);
	CHECKF(d1 == 48, "dirty after first sync_range: %llu",
	       (unsigned long long)d1);
	disk = t_read_disk(path, &dlen);
	CHECK(memcmp(disk, data, 16 * (size_t)fs) == 0);
	CHECK(memcmp(disk + 16 * fs, zeros, len - 16 * (size_t)fs) == 0);
	free(disk);

	/* nbytes 0: from 40 folios on to EOF. */
	CHECK_OK(wtio_sync_range(f, (off_t)(40 * fs), 0,
				 WTIO_SYNC_RANGE_WAIT_BEFORE |
				 WTIO_SYNC_RANGE_WRITE | WTIO_SYNC_RANGE_WAIT_AFTER));
	d2 = dirty(ctx);
	CHECKF(d2 == 24, "dirty after to-EOF sync_range: %llu",
	       (unsigned long long)d2);
	disk = t_read_disk(path, &dlen);
	CHECK(memcmp(disk, data, 16 * (size_t)fs) == 0);
	CHECK(memcmp(disk + 16 * fs, zeros, 24 * (size_t)fs) == 0);
	CHECK(memcmp(disk + 40 * fs, data + 40 * fs, 24 * (size_t)fs) == 0);
	free(disk);

	/* WRITE without WAIT_AFTER, then WAIT_AFTER alone. */
	CHECK_OK(wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WRITE));
	CHECK_OK(wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WAIT_AFTER));
	CHECK_EQ(dirty(ctx), 0);
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("  folio %u: dirty %llu -> %llu -> %llu -> 0, disk verified\n",
	       fs, (unsigned long long)d0, (unsigned long long)d1,
	       (unsigned long long)d2);
	free(data);
	free(zeros);
	unlink(path);
}

int main(void)
{
	t_require_odirect();
	run(4096);
	run(16384);
	run(65536);
	printf("sync_range: PASS\n");
	return T_EXIT_PASS;
}
