/* SPDX-License-Identifier: MIT */
/*
 * test_eviction.c - a working set ten times the cache budget: random
 * writes and reads, every byte read verified against a shadow; the stats
 * show evictions and never more cached folios than the budget.
 */
#include "helpers.h"

static uint64_t ops, bytes;

static void run(uint32_t fs, uint64_t budget, uint64_t seed)
{
	size_t ws = (size_t)fs * budget * 10;
	uint8_t *shadow = t_zalloc(ws);
	uint8_t *buf = t_malloc(4 * (size_t)fs);
	struct wtio_ctx *ctx = t_ctx(fs, budget, WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("eviction");
	struct wtio_file *f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	struct t_rng r = { seed };
	struct wtio_stats st;
	size_t size = 0;
	int i;

	/* Fill the whole working set first. */
	for (size_t off = 0; off < ws; off += 3 * fs) {
		size_t len = ws - off < 3 * (size_t)fs ? ws - off : 3 * (size_t)fs;

		t_fill(buf, len, seed, off);
		CHECK_EQ(wtio_pwrite(f, buf, len, (off_t)off, 0), (long long)len);
		memcpy(shadow + off, buf, len);
	}
	size = ws;
	for (i = 0; i < 3000; i++) {
		size_t len = 1 + t_rand_below(&r, 3 * fs);
		off_t off = (off_t)t_rand_below(&r, ws - len);

		if (t_rand_below(&r, 2)) {
			t_fill(buf, len, seed + (uint64_t)i, (uint64_t)off);
			CHECK_EQ(wtio_pwrite(f, buf, len, off, 0), (long long)len);
			memcpy(shadow + off, buf, len);
		} else {
			t_check_wtio_range(f, shadow, size, off, len);
			bytes += len;
		}
		ops++;
		CHECK_OK(wtio_stats(ctx, &st));
		CHECKF(st.cached_folios <= st.total_folios,
		       "cached %llu > total %llu",
		       (unsigned long long)st.cached_folios,
		       (unsigned long long)st.total_folios);
		CHECK(st.dirty_folios + st.writeback_folios <= st.total_folios);
	}
	t_check_wtio_range(f, shadow, size, 0, size);
	bytes += size;
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(st.evictions > 0, "no evictions with a working set 10x the budget");
	CHECK(st.total_folios == budget);
	CHECK(st.misses > 0);
	printf("  folio %u budget %llu ws %zu: evictions %llu misses %llu hits %llu\n",
	       fs, (unsigned long long)budget, ws,
	       (unsigned long long)st.evictions, (unsigned long long)st.misses,
	       (unsigned long long)st.hits);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	free(shadow);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	run(4096, 32, 1);
	run(16384, 32, 2);
	run(65536, 16, 3);
	printf("eviction: %llu ops, %llu bytes verified: PASS\n",
	       (unsigned long long)ops, (unsigned long long)bytes);
	return T_EXIT_PASS;
}
