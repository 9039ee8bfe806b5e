/* SPDX-License-Identifier: MIT */
/*
 * test_readahead.c - a sequential read of a 16 MiB file from a cold cache
 * reads ahead (readahead_folios > 0, far fewer read I/Os than folios);
 * random reads do not trigger readahead; without readahead a read of
 * many folios is still one I/O.
 */
#include "helpers.h"

#define SIZE (16u << 20)

int main(void)
{
	const char *path;
	uint8_t *data = t_malloc(SIZE), *buf = t_malloc(1u << 20);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct wtio_config cfg;
	struct wtio_stats st;
	struct t_rng r = { 77 };
	uint64_t nr_folios = SIZE / 4096;
	size_t off;
	int i;

	t_require_odirect();
	path = t_tmpfile("readahead");
	t_fill(data, SIZE, 31, 0);
	t_write_disk(path, data, SIZE);

	/* Sequential, 16 KiB reads, fresh context. */
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 64u << 20;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	f = t_open(ctx, path, O_RDONLY);
	for (off = 0; off < SIZE; off += 16384) {
		CHECK_EQ(wtio_pread(f, buf, 16384, (off_t)off, 0), 16384);
		CHECKF(memcmp(buf, data + off, 16384) == 0, "bad data at %zu", off);
	}
	CHECK_OK(wtio_stats(ctx, &st));
	printf("  sequential: %llu folios, readahead_folios %llu, read_ios %llu, "
	       "misses %llu\n", (unsigned long long)nr_folios,
	       (unsigned long long)st.readahead_folios,
	       (unsigned long long)st.read_ios, (unsigned long long)st.misses);
	CHECKF(st.readahead_folios > nr_folios / 2, "too little readahead");
	CHECKF(st.read_ios * 8 < nr_folios, "too many read I/Os: %llu",
	       (unsigned long long)st.read_ios);
	CHECK_EQ(st.bytes_read, SIZE);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));

	/* Random 4 KiB reads, fresh context. */
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	f = t_open(ctx, path, O_RDONLY);
	for (i = 0; i < 2000; i++) {
		off_t o = (off_t)t_rand_below(&r, SIZE / 4096 - 1) * 4096 + 1;

		CHECK_EQ(wtio_pread(f, buf, 4096, o, 0), 4096);
		CHECK(memcmp(buf, data + o, 4096) == 0);
	}
	CHECK_OK(wtio_stats(ctx, &st));
	printf("  random: 2000 reads, readahead_folios %llu, read_ios %llu\n",
	       (unsigned long long)st.readahead_folios,
	       (unsigned long long)st.read_ios);
	/* Random reads are not sequential: at most an occasional window,
	 * when a read happens to land right after the previous one. */
	CHECKF(st.readahead_folios < 100, "random reads read ahead %llu folios",
	       (unsigned long long)st.readahead_folios);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));

	/* Readahead off: no readahead on a sequential read. */
	cfg.flags = WTIO_CONFIG_NO_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	f = t_open(ctx, path, O_RDONLY);
	for (off = 0; off < (4u << 20); off += 65536)
		CHECK_EQ(wtio_pread(f, buf, 65536, (off_t)off, 0), 65536);
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK_EQ(st.readahead_folios, 0);
	/* But a read of many folios is still one I/O, not one per folio
	 * (two where a stripe unit cuts it). */
	printf("  no readahead: 64 reads of 64 KiB, read_ios %llu\n",
	       (unsigned long long)st.read_ios);
	CHECKF(st.read_ios <= 2 * 64, "64 KiB reads made %llu I/Os",
	       (unsigned long long)st.read_ios);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(data);
	free(buf);
	printf("readahead: PASS\n");
	return T_EXIT_PASS;
}
