/* SPDX-License-Identifier: MIT */
/*
 * test_sync_range.c - wtio_sync_range: WRITE then WAIT_AFTER puts the
 * range's data on disk (read back with a separate O_DIRECT descriptor)
 * and the dirty count drops; data outside the range stays dirty;
 * nbytes 0 means to end of file; WAIT_BEFORE alone writes nothing.
 *
 * sparse(): dirty folios scattered over a large file among clean
 * cached ones and holes, and random ranges shorter than the dirty list
 * (found by looking up the range's folios, not by walking the list):
 * after each range's WRITE + WAIT_AFTER exactly its dirty folios are
 * clean and on disk, every other one still dirty; then ranges longer
 * than what is left dirty (the list's walk) finish the job.
 */
#include "helpers.h"

static uint64_t dirty(struct wtio_ctx *ctx)
{
	struct wtio_stats st;

	CHECK_OK(wtio_stats(ctx, &st));
	return st.dirty_folios + st.writeback_folios;
}

/* A context of folios of fs, the flushers effectively off (huge expiry,
 * high thresholds), so that only the test's syncs write. */
static struct wtio_ctx *quiet_ctx(uint32_t fs, uint64_t folios)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;

	wtio_config_init(&cfg);
	cfg.folio_size = fs;
	cfg.cache_size = (uint64_t)fs * folios;
	cfg.readahead_max = 4 * fs;
	cfg.dirty_background_ratio = 80;
	cfg.dirty_ratio = 90;
	cfg.dirty_expire_ms = 600000;
	cfg.writeback_interval_ms = 600000;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	return ctx;
}

static void run(uint32_t fs)
{
	struct wtio_ctx *ctx = quiet_ctx(fs, 1024);
	const char *path = t_tmpfile("sync_range");
	const size_t len = 64 * (size_t)fs;
	uint8_t *data = t_malloc(len), *disk;
	uint8_t *zeros = t_zalloc(len);
	struct wtio_file *f;
	size_t dlen;
	uint64_t d0, d1, d2;

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

static void sparse(uint32_t fs, uint64_t seed)
{
	struct wtio_ctx *ctx = quiet_ctx(fs, 8192);
	const char *path = t_tmpfile("sync_range_sparse");
	const size_t nf = 4096, len = nf * fs;
	uint8_t *data = t_zalloc(len), *disk, *is_dirty = t_zalloc(nf);
	struct t_rng rng = { seed };
	struct wtio_file *f;
	uint64_t want = 0, ranges = 0;
	size_t dlen;

	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_OK(wtio_ftruncate(f, (off_t)len));
	/* Clean cached folios in the first half (written and synced). */
	t_fill(data, len / 2, seed, 0);
	CHECK_EQ(wtio_pwrite(f, data, len / 2, 0, 0), (long long)(len / 2));
	CHECK_OK(wtio_fsync(f));
	/* Then 800 dirty folios anywhere, some twice. */
	for (int k = 0; k < 800; k++) {
		size_t i = t_rand_below(&rng, nf);

		t_fill(data + i * fs, fs, seed + 7 * (uint64_t)k + 1, 0);
		CHECK_EQ(wtio_pwrite(f, data + i * fs, fs, (off_t)(i * fs), 0),
			 (long long)fs);
		want += !is_dirty[i];
		is_dirty[i] = 1;
	}
	CHECK_EQ(dirty(ctx), want);
	while (want > 40) {
		size_t i = t_rand_below(&rng, nf), n = 1 + t_rand_below(&rng, 24);

		if (i + n > nf)
			n = nf - i;
		CHECK_OK(wtio_sync_range(f, (off_t)(i * fs), (off_t)(n * fs),
					 WTIO_SYNC_RANGE_WRITE |
					 WTIO_SYNC_RANGE_WAIT_AFTER));
		for (size_t j = i; j < i + n; j++) {
			want -= is_dirty[j];
			is_dirty[j] = 0;
		}
		CHECKF(dirty(ctx) == want, "range [%zu, +%zu): %llu dirty, "
		       "want %llu", i, n, (unsigned long long)dirty(ctx),
		       (unsigned long long)want);
		ranges++;
	}
	/* On disk: every folio synced holds its data, every dirty one the
	 * old contents (zeros in the second half, the synced fill in the
	 * first); compared folio by folio. */
	disk = t_read_disk(path, &dlen);
	CHECK_EQ(dlen, len);
	for (size_t i = 0; i < nf; i++)
		if (!is_dirty[i])
			CHECKF(!memcmp(disk + i * fs, data + i * fs, fs),
			       "folio %zu synced but not on disk", i);
	free(disk);
	/* The rest: ranges as long as the file (the list's walk). */
	CHECK_OK(wtio_sync_range(f, 0, (off_t)len,
				 WTIO_SYNC_RANGE_WRITE | WTIO_SYNC_RANGE_WAIT_AFTER));
	CHECK_EQ(dirty(ctx), 0);
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("  folio %u: 800 scattered writes, %llu short ranges synced "
	       "one by one, disk verified\n", fs, (unsigned long long)ranges);
	free(data);
	free(is_dirty);
	unlink(path);
}

int main(void)
{
	t_require_odirect();
	run(4096);
	run(16384);
	run(65536);
	sparse(4096, 11);
	sparse(16384, 12);
	printf("sync_range: PASS\n");
	return T_EXIT_PASS;
}
