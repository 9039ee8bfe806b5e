/* SPDX-License-Identifier: MIT */
/*
 * test_rw_basic.c - read-after-write through the cache for every folio
 * size, with random unaligned offsets and lengths (1-byte writes, block
 * straddling writes, writes spanning many folios), checked against an
 * in-memory shadow; with a large and a tiny (16 folio) cache so eviction
 * and read-modify-write run; after close the disk must equal the shadow.
 */
#include "helpers.h"

#define NR_OPS 400

static uint64_t total_ops, total_bytes_verified;

static size_t pick_len(struct t_rng *r, uint32_t fs, size_t max)
{
	size_t len;

	switch (t_rand_below(r, 6)) {
	case 0: len = 1; break;
	case 1: len = 1 + t_rand_below(r, 600); break;		/* sub-block */
	case 2: len = 512 + t_rand_below(r, 8192); break;	/* straddles blocks */
	case 3: len = fs - 1 + t_rand_below(r, 3); break;	/* about a folio */
	case 4: len = fs * (2 + t_rand_below(r, 6)) + t_rand_below(r, 4096); break;
	default: len = 1 + t_rand_below(r, 3 * fs); break;
	}
	if (len > max)
		len = max;
	return len;
}

static void run(uint32_t fs, uint64_t nr_folios, uint64_t seed)
{
	size_t max_size = fs >= (1u << 20) ? (6u << 20) : (2u << 20);
	uint8_t *shadow = t_zalloc(max_size);
	uint8_t *buf = t_malloc(max_size);
	size_t size = 0;
	struct t_rng r = { seed };
	struct wtio_ctx *ctx = t_ctx(fs, nr_folios, WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("rw_basic");
	struct wtio_file *f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	struct wtio_stats st;
	int i;

	for (i = 0; i < NR_OPS; i++) {
		size_t len = pick_len(&r, fs, max_size);
		off_t off;
		ssize_t n;

		/* Mostly near existing data, sometimes block/folio aligned. */
		if (t_rand_below(&r, 2))
			off = (off_t)t_rand_below(&r, max_size - len + 1);
		else	/* grow the file gradually, so EOF moves a lot */
			off = (off_t)t_rand_below(&r, (size + 2 * fs <
					max_size - len ? size + 2 * fs :
					max_size - len) + 1);
		if (t_rand_below(&r, 4) == 0)
			off &= ~(off_t)511;
		if (t_rand_below(&r, 8) == 0)
			off &= ~(off_t)(fs - 1);
		if ((size_t)off + len > max_size)
			len = max_size - (size_t)off;
		if (!len)
			continue;
		if (t_rand_below(&r, 3)) {
			t_fill(buf, len, seed + (uint64_t)i, (uint64_t)off);
			n = wtio_pwrite(f, buf, len, off, 0);
			CHECKF(n == (ssize_t)len, "pwrite(%zu @ %lld) = %zd",
			       len, (long long)off, n);
			memcpy(shadow + off, buf, len);
			if ((size_t)off + len > size)
				size = (size_t)off + len;
			CHECK_EQ(wtio_file_size(f), (long long)size);
			/* read it straight back */
			t_check_wtio_range(f, shadow, size, off, len);
			total_bytes_verified += len;
		} else {
			t_check_wtio_range(f, shadow, size, off, len);
			total_bytes_verified += len;
		}
		total_ops++;
	}
	/* Whole-file verification through the cache, in odd-sized pieces. */
	for (size_t pos = 0; pos < size + 5000;) {
		size_t len = 1 + t_rand_below(&r, 3 * fs);

		t_check_wtio_range(f, shadow, size, (off_t)pos, len);
		pos += len;
	}
	total_bytes_verified += size;
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK(st.cached_folios <= st.total_folios);
	CHECK(st.total_folios == nr_folios);
	if (nr_folios == 16 && size > 16 * (size_t)fs)
		CHECKF(st.evictions > 0, "tiny cache but no evictions");
	printf("  folio %7u budget %4llu: size %zu evictions %llu rmw_reads %llu\n",
	       fs, (unsigned long long)nr_folios, size,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.rmw_reads);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	total_bytes_verified += size;

	/* Reopen in a fresh context: everything comes from disk. */
	f = t_open(ctx, path, O_RDONLY);
	CHECK_EQ(wtio_file_size(f), (long long)size);
	t_check_wtio_range(f, shadow, size, 0, size + 100);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	free(shadow);
	free(buf);
}

int main(void)
{
	static const uint32_t sizes[] = { 4096, 16384, 65536, 1u << 20 };
	unsigned int i;
	uint64_t seed;

	t_require_odirect();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (seed = 1; seed <= 2; seed++) {
			run(sizes[i], 1024 > (64u << 20) / sizes[i] ?
			    (64u << 20) / sizes[i] : 1024, seed * 1000 + i);
			run(sizes[i], 16, seed * 7777 + i);
		}
	}
	printf("rw_basic: %llu ops, %llu bytes verified: PASS\n",
	       (unsigned long long)total_ops,
	       (unsigned long long)total_bytes_verified);
	return T_EXIT_PASS;
}
