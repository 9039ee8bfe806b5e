/* SPDX-License-Identifier: MIT */
/*
 * test_dontcache_ra.c - WTIO_CONFIG_DONTCACHE_READAHEAD: a sequential
 * WTIO_DONTCACHE reader is read ahead in I/Os of max_io_size (about one
 * a MiB, not one a read), gets the right bytes at odd read sizes, drops
 * what it read (the cache holds at most a window more than before),
 * evicts nothing, and leaves another file's hot data cached; with the
 * cache full of that data it still reads the right bytes. A file
 * ending inside a folio is read once (its last folio not again, its
 * tail not twice), in every backend.
 */
#include "helpers.h"

#define SIZE (16u << 20)
#define HOT (4u << 20)
#define PIECE 100000u	/* crosses folios, never aligned */

static struct wtio_stats st(struct wtio_ctx *ctx)
{
	struct wtio_stats s;

	CHECK_OK(wtio_stats(ctx, &s));
	return s;
}

/* Read all of f with DONTCACHE in PIECE-byte reads, checking each. */
static void stream(struct wtio_file *f, const uint8_t *data, uint8_t *buf)
{
	size_t off, n;

	for (off = 0; off < SIZE; off += n) {
		n = SIZE - off < PIECE ? SIZE - off : PIECE;
		CHECK_EQ(wtio_pread(f, buf, n, (off_t)off, WTIO_DONTCACHE),
			 (long long)n);
		CHECKF(memcmp(buf, data + off, n) == 0, "bad data at %zu", off);
	}
}

/*
 * A file whose size is not a folio multiple, streamed with DONTCACHE in
 * 4 KiB reads then read at its end: every byte comes from disk once
 * (bytes_read is the size: the last, partial folio read ahead is kept
 * for the reader, not read again, nor is its tail read twice at the
 * backing file's end), the read at EOF costs no I/O, and a write
 * extending the file then reads back right (the bytes past the old end
 * were never taken as data).
 */
static void tail(const struct wtio_config *cfg, size_t size, const char *how)
{
	uint8_t *data = t_malloc(size + 8192), *buf = t_malloc(size + 8192);
	const char *path = t_tmpfile("dcra-tail");
	struct wtio_stats a, b;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	size_t off, n;

	t_fill(data, size + 8192, 43, 0);
	t_write_disk(path, data, size);
	CHECK_OK(wtio_ctx_create(cfg, &ctx));
	f = t_open(ctx, path, O_RDWR);
	a = st(ctx);
	for (off = 0; off < size; off += n) {
		n = size - off < 4096 ? size - off : 4096;
		CHECK_EQ(wtio_pread(f, buf, 4096, (off_t)off, WTIO_DONTCACHE),
			 (long long)n);
		CHECKF(memcmp(buf, data + off, n) == 0, "bad data at %zu", off);
	}
	b = st(ctx);
	CHECK_EQ(wtio_pread(f, buf, 4096, (off_t)size, WTIO_DONTCACHE), 0);
	CHECK_EQ(st(ctx).read_ios, b.read_ios);
	printf("  %s, %zu bytes: read_ios %llu, bytes_read %llu\n", how, size,
	       (unsigned long long)(b.read_ios - a.read_ios),
	       (unsigned long long)(b.bytes_read - a.bytes_read));
	CHECKF(b.bytes_read - a.bytes_read == size,
	       "%s: %llu bytes read for a %zu-byte file", how,
	       (unsigned long long)(b.bytes_read - a.bytes_read), size);
	CHECK_EQ(wtio_pwrite(f, data + size, 8192, (off_t)size, 0), 8192);
	CHECK_EQ(wtio_pread(f, buf, size + 8192, 0, WTIO_DONTCACHE),
		 (long long)(size + 8192));
	CHECKF(memcmp(buf, data, size + 8192) == 0, "%s: extended file wrong",
	       how);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, data, size + 8192);
	free(data);
	free(buf);
}

static void hot_read(struct wtio_file *f, const uint8_t *hot, uint8_t *buf,
		     size_t len)
{
	CHECK_EQ(wtio_pread(f, buf, len, 0, 0), (long long)len);
	CHECK(memcmp(buf, hot, len) == 0);
}

int main(void)
{
	uint8_t *data = t_malloc(SIZE), *hot = t_malloc(HOT);
	uint8_t *buf = t_malloc(HOT);
	const char *path, *hpath;
	struct wtio_config cfg;
	struct wtio_stats a, b;
	struct wtio_ctx *ctx;
	struct wtio_file *f, *h;
	uint64_t window = 2u << 20, nr = SIZE / 4096;

	t_require_odirect();
	path = t_tmpfile("dcra");
	hpath = t_tmpfile("dcra-hot");
	t_fill(data, SIZE, 41, 0);
	t_fill(hot, HOT, 42, 0);
	t_write_disk(path, data, SIZE);
	t_write_disk(hpath, hot, HOT);

	wtio_config_init(&cfg);
	cfg.cache_size = 64u << 20;
	cfg.readahead_max = (uint32_t)window;
	cfg.flags |= WTIO_CONFIG_DONTCACHE_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	h = t_open(ctx, hpath, O_RDONLY);
	hot_read(h, hot, buf, HOT);
	f = t_open(ctx, path, O_RDONLY);
	a = st(ctx);
	stream(f, data, buf);
	b = st(ctx);
	printf("  stream: read_ios %llu, readahead %llu, dropbehind %llu, "
	       "cached %llu -> %llu\n",
	       (unsigned long long)(b.read_ios - a.read_ios),
	       (unsigned long long)(b.readahead_folios - a.readahead_folios),
	       (unsigned long long)(b.dropbehind_folios - a.dropbehind_folios),
	       (unsigned long long)a.cached_folios,
	       (unsigned long long)b.cached_folios);
	/* One I/O a MiB, and the window's ramp from 16 KiB. */
	CHECKF(b.read_ios - a.read_ios <= SIZE / (1u << 20) + 12,
	       "%llu read I/Os for 16 MiB",
	       (unsigned long long)(b.read_ios - a.read_ios));
	CHECK_EQ(b.bytes_read - a.bytes_read, SIZE);
	CHECK(b.readahead_folios > a.readahead_folios);
	CHECK_EQ(b.evictions, a.evictions);
	CHECKF(b.cached_folios <= a.cached_folios + window / 4096 + 1,
	       "cached %llu -> %llu", (unsigned long long)a.cached_folios,
	       (unsigned long long)b.cached_folios);
	CHECK(b.dropbehind_folios - a.dropbehind_folios >=
	      nr - window / 4096 - 1);
	/* The hot file is all hits still. */
	a = b;
	hot_read(h, hot, buf, HOT);
	b = st(ctx);
	CHECK_EQ(b.misses, a.misses);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_close(h));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("DONTCACHE stream read ahead, dropped, hot data kept\n");

	/* A cache full of hot data: no free folio to read ahead into. */
	cfg.cache_size = HOT;
	cfg.readahead_max = HOT / 4;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	h = t_open(ctx, hpath, O_RDONLY);
	hot_read(h, hot, buf, HOT / 2);
	hot_read(h, hot, buf, HOT);
	f = t_open(ctx, path, O_RDONLY);
	stream(f, data, buf);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_close(h));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("DONTCACHE stream in a full cache: right bytes\n");

	/* Files ending inside a folio, read ahead (on the completion
	 * thread) and read synchronously (psync: no completion thread). */
	cfg.cache_size = 64u << 20;
	cfg.readahead_max = (uint32_t)window;
	tail(&cfg, 100000, "io_uring");
	tail(&cfg, 3 * 4096 + 1, "io_uring");
	tail(&cfg, (1u << 20) + 1696, "io_uring");
	cfg.backend = WTIO_BACKEND_PSYNC;
	tail(&cfg, 100000, "psync");
	tail(&cfg, (1u << 20) + 1696, "psync");
	cfg.backend = WTIO_BACKEND_AUTO;
	cfg.flags &= ~WTIO_CONFIG_DONTCACHE_READAHEAD;
	tail(&cfg, 100000, "no readahead");
	printf("DONTCACHE streams ending inside a folio: each byte read once\n");
	free(data);
	free(hot);
	free(buf);
	printf("dontcache_ra: PASS\n");
	return 0;
}
