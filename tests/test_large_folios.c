/* SPDX-License-Identifier: MIT */
/*
 * test_large_folios.c - WTIO_CONFIG_LARGE_FOLIOS: one cache, files of two
 * folio sizes.
 *
 *  1. A file first written in 256 KiB writes gets 64 KiB folios, one
 *     first written in 4 KiB writes 4 KiB ones (the inode's folio size is
 *     looked at: the test can fail), and both read back right, through
 *     wtio and from the disk.
 *  2. Under pressure (a 4 MiB cache, 8 MiB streamed with write-back while
 *     another file takes random 4 KiB writes and reads), every read of
 *     either file matches its shadow, and once every file is closed the
 *     cache holds nothing: every unit of every chunk came back (an
 *     allocator that lost one, or kept a split chunk from coming whole
 *     again, fails here or in the next stream's allocations).
 *  3. A file's size changes only while nothing of it is cached: small,
 *     then closed (its cache dropped), then large at a 1 MiB read, with
 *     the data the same.
 *  4. One 4 KiB miss in a cache full of large folios evicts a few of
 *     them, not 32 (half the cache); under 64 large folios every file
 *     keeps the context's folio size.
 *  5. Threads: a reader checks 4 KiB reads of a file with a known pattern
 *     (lockless hits included) while two others make its folio size
 *     change back and forth (DONTCACHE reads of 1 MiB, 8 KiB and 4 KiB
 *     leave its cache empty between them). A hit that used a folio
 *     index of another size would return another offset's bytes.
 *  6. Sizes between: a file's first I/O of 8, 16, 20 or 32 KiB gives it
 *     folios of 8, 16, 16, 32 KiB; five files of five sizes in a 4 MiB
 *     cache take random writes and reads of random lengths (every read
 *     checked against a shadow), and once closed the cache holds
 *     nothing and a file of large folios can fill it again (a slot of
 *     one size lost, or a chunk kept split, fails there).
 *  7. A miss of a size no split chunk has room for, in a cache whose
 *     every chunk holds one dirty 4 KiB folio among clean ones, waits
 *     for writeback rather than evict the clean folios of the whole
 *     cache (review: an 8 KiB miss took 992 of 1024 units); and a read
 *     of a 12-byte file in 32 KiB or 128 KiB takes one 4 KiB folio, not
 *     a folio of the read's size (review: 8 and 16 units a file).
 */
#include <pthread.h>

#include "helpers.h"
#include "ctx.h"
#include "inode.h"

#define MIB (1u << 20)

static struct wtio_ctx *make_ctx_any(uint64_t cache)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;

	wtio_config_init(&cfg);
	cfg.cache_size = cache;
	cfg.folio_size = 4096;
	cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	return ctx;
}

static struct wtio_ctx *make_ctx(uint64_t cache)
{
	struct wtio_ctx *ctx = make_ctx_any(cache);

	CHECKF(ctx->large_size == 16 * 4096, "large folio %u",
	       ctx->large_size);
	return ctx;
}

static uint8_t pat(uint64_t off)
{
	return (uint8_t)((off * 2654435761u) >> 13);
}

static void fill_pat(uint8_t *b, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(off + i);
}

static void check_disk(const char *path, const uint8_t *want, size_t len)
{
	uint8_t *b = t_malloc(len);
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, b, len, 0), (ssize_t)len);
	CHECKF(!memcmp(b, want, len), "%s differs on disk", path);
	close(fd);
	free(b);
}

static uint32_t fsize_of(struct wtio_file *f)
{
	return atomic_load(&f->inode->folio_size);
}

static void part_sizes(void)
{
	struct wtio_ctx *ctx = make_ctx(16 * MIB);
	const char *pa = t_tmpfile("lf-stream"), *pb = t_tmpfile("lf-rand");
	uint8_t *a = t_malloc(2 * MIB), *b = t_zalloc(MIB), *r = t_malloc(2 * MIB);
	struct wtio_file *fa, *fb;
	struct t_rng rng = { 7 };

	CHECK_OK(wtio_open(ctx, pa, O_RDWR, 0, 0, &fa));
	CHECK_OK(wtio_open(ctx, pb, O_RDWR, 0, 0, &fb));
	fill_pat(a, 0, 2 * MIB);
	for (size_t o = 0; o < 2 * MIB; o += 256 << 10)
		CHECK_EQ(wtio_pwrite(fa, a + o, 256 << 10, (off_t)o, 0),
			 256 << 10);
	CHECKF(fsize_of(fa) == 65536, "streamed file: folio %u",
	       fsize_of(fa));
	for (int i = 0; i < 400; i++) {
		uint64_t o = t_rand_below(&rng, MIB / 4096) * 4096;

		fill_pat(b + o, o ^ (uint64_t)i << 20, 4096);
		CHECK_EQ(wtio_pwrite(fb, b + o, 4096, (off_t)o,
				     i & 1 ? WTIO_WRITETHROUGH : 0), 4096);
	}
	CHECKF(fsize_of(fb) == 4096, "random file: folio %u", fsize_of(fb));
	CHECK_EQ(wtio_pread(fa, r, 2 * MIB, 0, 0), 2 * MIB);
	CHECK(!memcmp(r, a, 2 * MIB));
	CHECK_EQ(wtio_pread(fb, r, MIB, 0, 0), MIB);
	CHECK(!memcmp(r, b, MIB));
	CHECK_OK(wtio_close(fa));
	CHECK_OK(wtio_close(fb));
	check_disk(pa, a, 2 * MIB);
	check_disk(pb, b, MIB);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(a);
	free(b);
	free(r);
}

static void part_pressure(uint64_t seed)
{
	struct wtio_ctx *ctx = make_ctx(4 * MIB);
	const char *ps = t_tmpfile("lf-press-s"), *pr = t_tmpfile("lf-press-r");
	size_t slen = 8 * MIB, rlen = 2 * MIB;
	uint8_t *s = t_malloc(slen), *rs = t_zalloc(rlen), *buf = t_malloc(MIB);
	struct wtio_file *fs, *fr;
	struct wtio_stats st;
	struct t_rng rng = { seed };
	size_t done = 0;

	CHECK_OK(wtio_open(ctx, ps, O_RDWR, 0, 0, &fs));
	CHECK_OK(wtio_open(ctx, pr, O_RDWR, 0, 0, &fr));
	fill_pat(s, seed, slen);
	/* The random file is made first: 4 KiB folios. */
	CHECK_EQ(wtio_pwrite(fr, rs, 4096, 0, 0), 4096);
	CHECK_OK(wtio_ftruncate(fr, (off_t)rlen));
	while (done < slen) {
		size_t n = (size_t)(64 + t_rand_below(&rng, 448)) << 10;
		uint64_t o;

		if (n > slen - done)
			n = slen - done;
		CHECK_EQ(wtio_pwrite(fs, s + done, n, (off_t)done,
				     t_rand_below(&rng, 4) ? 0 : WTIO_DONTCACHE),
			 (ssize_t)n);
		done += n;
		for (int k = 0; k < 24; k++) {
			o = t_rand_below(&rng, rlen / 4096) * 4096;
			if (t_rand_below(&rng, 3)) {
				fill_pat(rs + o, o + (uint64_t)k * 77 + done, 4096);
				CHECK_EQ(wtio_pwrite(fr, rs + o, 4096, (off_t)o, 0),
					 4096);
			} else {
				CHECK_EQ(wtio_pread(fr, buf, 4096, (off_t)o, 0),
					 4096);
				CHECKF(!memcmp(buf, rs + o, 4096),
				       "random file at %llu", (unsigned long long)o);
			}
		}
		/* Read back part of the stream: large-folio misses. */
		o = t_rand_below(&rng, done / 4096) * 4096;
		n = done - o < MIB ? done - o : MIB;
		CHECK_EQ(wtio_pread(fs, buf, n, (off_t)o, 0), (ssize_t)n);
		CHECKF(!memcmp(buf, s + o, n), "stream at %llu",
		       (unsigned long long)o);
	}
	CHECKF(fsize_of(fs) == 65536 && fsize_of(fr) == 4096,
	       "folios %u and %u", fsize_of(fs), fsize_of(fr));
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(st.cached_folios <= st.total_folios, "%llu of %llu",
	       (unsigned long long)st.cached_folios,
	       (unsigned long long)st.total_folios);
	CHECK_OK(wtio_close(fs));
	CHECK_OK(wtio_close(fr));
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(st.cached_folios == 0, "%llu units still in use after close",
	       (unsigned long long)st.cached_folios);
	check_disk(ps, s, slen);
	check_disk(pr, rs, rlen);
	/* Every chunk whole again: a file of large folios may fill the
	 * whole cache. */
	CHECK_OK(wtio_open(ctx, ps, O_RDWR, 0, 0, &fs));
	for (size_t o = 0; o < 4 * MIB; o += MIB) {
		CHECK_EQ(wtio_pread(fs, buf, MIB, (off_t)o, 0), MIB);
		CHECK(!memcmp(buf, s + o, MIB));
	}
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(st.cached_folios >= st.total_folios / 2,
	       "a 4 MiB read left %llu of %llu units cached",
	       (unsigned long long)st.cached_folios,
	       (unsigned long long)st.total_folios);
	CHECK_OK(wtio_close(fs));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(s);
	free(rs);
	free(buf);
}

static void part_switch(void)
{
	struct wtio_ctx *ctx = make_ctx(8 * MIB);
	const char *p = t_tmpfile("lf-switch");
	uint8_t *d = t_malloc(2 * MIB), *r = t_malloc(2 * MIB);
	struct wtio_file *f;

	fill_pat(d, 99, 2 * MIB);
	t_write_disk(p, d, 2 * MIB);
	CHECK_OK(wtio_open(ctx, p, O_RDWR, 0, 0, &f));
	CHECK_EQ(wtio_pread(f, r, 4096, 8192, 0), 4096);
	CHECK(!memcmp(r, d + 8192, 4096));
	CHECKF(fsize_of(f) == 4096, "after a 4 KiB read: %u", fsize_of(f));
	/* Cached now: a large read keeps the small folios. */
	CHECK_EQ(wtio_pread(f, r, MIB, 0, 0), MIB);
	CHECK(!memcmp(r, d, MIB));
	CHECKF(fsize_of(f) == 4096, "changed with data cached: %u",
	       fsize_of(f));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_open(ctx, p, O_RDWR, 0, 0, &f));
	CHECK_EQ(wtio_pread(f, r, MIB, MIB, 0), MIB);
	CHECK(!memcmp(r, d + MIB, MIB));
	CHECKF(fsize_of(f) == 65536, "after a 1 MiB read: %u", fsize_of(f));
	/* An unaligned write across large folios, then everything back. */
	fill_pat(d + 100000, 12345, 300000);
	CHECK_EQ(wtio_pwrite(f, d + 100000, 300000, 100000, 0), 300000);
	CHECK_EQ(wtio_pread(f, r, 2 * MIB, 0, 0), 2 * MIB);
	CHECK(!memcmp(r, d, 2 * MIB));
	CHECK_OK(wtio_close(f));
	check_disk(p, d, 2 * MIB);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(d);
	free(r);
}

/* One small miss in a cache full of clean large folios evicts what it
 * needs (CLOCK's batch counted in units), not 32 large folios. */
static void part_overevict(void)
{
	struct wtio_ctx *ctx = make_ctx(8 * MIB);
	const char *pa = t_tmpfile("lf-ev-a"), *pb = t_tmpfile("lf-ev-b");
	uint8_t *d = t_malloc(8 * MIB), *r = t_malloc(MIB);
	struct wtio_stats s0, s1;
	struct wtio_file *fa, *fb;

	fill_pat(d, 5, 8 * MIB);
	t_write_disk(pa, d, 8 * MIB);
	t_write_disk(pb, d, MIB);
	CHECK_OK(wtio_open(ctx, pa, O_RDONLY, 0, 0, &fa));
	CHECK_OK(wtio_open(ctx, pb, O_RDONLY, 0, 0, &fb));
	for (size_t o = 0; o < 8 * MIB; o += MIB)
		CHECK_EQ(wtio_pread(fa, r, MIB, (off_t)o, 0), MIB);
	CHECK_OK(wtio_stats(ctx, &s0));
	CHECKF(s0.cached_folios == s0.total_folios, "%llu of %llu cached",
	       (unsigned long long)s0.cached_folios,
	       (unsigned long long)s0.total_folios);
	CHECK_EQ(wtio_pread(fb, r, 4096, 0, 0), 4096);
	CHECK(!memcmp(r, d, 4096));
	CHECKF(fsize_of(fb) == 4096, "4 KiB reader: folio %u", fsize_of(fb));
	CHECK_OK(wtio_stats(ctx, &s1));
	CHECKF(s1.cached_folios + 64 >= s0.cached_folios,
	       "one 4 KiB miss took the cache from %llu to %llu units",
	       (unsigned long long)s0.cached_folios,
	       (unsigned long long)s1.cached_folios);
	CHECK_OK(wtio_close(fa));
	CHECK_OK(wtio_close(fb));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(d);
	free(r);
}

/* Under 64 large folios the flag has no effect, as documented (not a
 * smaller "large" size). */
static void part_threshold(void)
{
	static const struct { uint64_t cache; uint32_t want; } c[] = {
		{ 4 * MIB, 65536 }, { 4 * MIB - 4096, 4096 },
		{ 2 * MIB, 4096 }, { 512 * 1024, 4096 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct wtio_ctx *ctx = make_ctx_any(c[i].cache);
		const char *p = t_tmpfile("lf-thr");
		uint8_t *d = t_zalloc(MIB);
		struct wtio_file *f;

		CHECK_OK(wtio_open(ctx, p, O_RDWR, 0, 0, &f));
		CHECK_EQ(wtio_pwrite(f, d, MIB, 0, 0), MIB);
		CHECKF(fsize_of(f) == c[i].want,
		       "cache %llu: folio %u, want %u",
		       (unsigned long long)c[i].cache, fsize_of(f), c[i].want);
		CHECK_OK(wtio_close(f));
		CHECK_OK(wtio_ctx_destroy(ctx));
		free(d);
	}
}

struct race {
	struct wtio_file *f;
	size_t len;
	_Atomic bool stop;
	_Atomic uint64_t reads, bad;
	uint64_t seed;
	size_t rlen;
	unsigned int flags;
};

static void *race_reader(void *arg)
{
	struct race *rc = arg;
	struct t_rng rng = { rc->seed };
	uint8_t *b = t_malloc(MIB), *w = t_malloc(MIB);

	while (!atomic_load(&rc->stop)) {
		size_t rlen = t_rand_below(&rng, 4) ? rc->rlen : MIB;
		uint64_t o = t_rand_below(&rng, (rc->len - rlen) / 4096 + 1) *
			     4096;
		ssize_t n = wtio_pread(rc->f, b, rlen, (off_t)o, rc->flags);

		if (n != (ssize_t)rlen) {
			fprintf(stderr, "read at %llu: %zd\n",
				(unsigned long long)o, n);
			atomic_fetch_add(&rc->bad, 1);
			break;
		}
		fill_pat(w, o, rlen);
		if (memcmp(b, w, rlen)) {
			fprintf(stderr, "read at %llu (%zu bytes) returned "
				"other bytes\n", (unsigned long long)o, rlen);
			atomic_fetch_add(&rc->bad, 1);
			break;
		}
		atomic_fetch_add(&rc->reads, 1);
	}
	free(b);
	free(w);
	return NULL;
}

static void part_race(void)
{
	struct wtio_ctx *ctx = make_ctx(4 * MIB);
	const char *p = t_tmpfile("lf-race");
	size_t len = 4 * MIB;
	uint8_t *d = t_malloc(len);
	struct race rc[3];
	pthread_t th[3];
	uint32_t seen_large = 0, seen_small = 0;
	struct wtio_file *f;
	uint64_t end;

	fill_pat(d, 0, len);
	t_write_disk(p, d, len);
	CHECK_OK(wtio_open(ctx, p, O_RDONLY, 0, 0, &f));
	for (int i = 0; i < 3; i++) {
		memset(&rc[i], 0, sizeof(rc[i]));
		rc[i].f = f;
		rc[i].len = len;
		rc[i].seed = 100 + (uint64_t)i;
	}
	/* Reads of 1 MiB (a quarter) pick 64 KiB folios, the others 8 KiB
	 * (reader 0) or 4 KiB ones; DONTCACHE leaves the cache empty between them, and every
	 * read first tries hits (lockless or not) on what the others have
	 * cached for the moment. */
	rc[0].rlen = 8192;
	rc[0].flags = WTIO_DONTCACHE;
	rc[1].rlen = 4096;
	rc[1].flags = WTIO_DONTCACHE;
	rc[2].rlen = 4096;
	rc[2].flags = WTIO_DONTCACHE;
	for (int i = 0; i < 3; i++)
		CHECK(!pthread_create(&th[i], NULL, race_reader, &rc[i]));
	end = t_now_ms() + 3000;
	while (t_now_ms() < end && !atomic_load(&rc[0].bad) &&
	       !atomic_load(&rc[1].bad) && !atomic_load(&rc[2].bad)) {
		if (fsize_of(f) == 65536)
			seen_large++;
		else
			seen_small++;
		usleep(100);
	}
	for (int i = 0; i < 3; i++)
		atomic_store(&rc[i].stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 3; i++)
		CHECKF(!atomic_load(&rc[i].bad), "reader %d read wrong bytes",
		       i);
	printf("race: %llu, %llu, %llu reads; folio size seen large %u, "
	       "small %u times\n", (unsigned long long)rc[0].reads,
	       (unsigned long long)rc[1].reads,
	       (unsigned long long)rc[2].reads, seen_large, seen_small);
	CHECK(rc[0].reads && rc[1].reads && rc[2].reads);
	CHECKF(seen_large && seen_small, "the folio size never changed");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(d);
}

static void part_between(uint64_t seed)
{
	static const struct { size_t first; uint32_t want; } c[] = {
		{ 4096, 4096 }, { 8192, 8192 }, { 16384, 16384 },
		{ 20480, 16384 }, { 32768, 32768 },
	};
	enum { NF = sizeof(c) / sizeof(c[0]) };
	struct wtio_ctx *ctx = make_ctx(4 * MIB);
	size_t flen = 2 * MIB;
	uint8_t *shadow[NF], *buf = t_malloc(MIB);
	const char *path[NF];
	struct wtio_file *f[NF];
	struct t_rng rng = { seed * 31 + 5 };
	struct wtio_stats st;

	for (int i = 0; i < NF; i++) {
		path[i] = t_tmpfile("lf-between");
		shadow[i] = t_zalloc(flen);
		CHECK_OK(wtio_open(ctx, path[i], O_RDWR, 0, 0, &f[i]));
		fill_pat(shadow[i], (uint64_t)i << 32, c[i].first);
		CHECK_EQ(wtio_pwrite(f[i], shadow[i], c[i].first, 0, 0),
			 (ssize_t)c[i].first);
		CHECKF(fsize_of(f[i]) == c[i].want,
		       "first I/O of %zu: folio %u, want %u", c[i].first,
		       fsize_of(f[i]), c[i].want);
		CHECK_OK(wtio_ftruncate(f[i], (off_t)flen));
	}
	for (int k = 0; k < 3000; k++) {
		int i = (int)t_rand_below(&rng, NF);
		size_t n = 1 + t_rand_below(&rng, 3 * c[i].want);
		uint64_t o = t_rand_below(&rng, flen - n + 1);
		unsigned int fl = t_rand_below(&rng, 8) ? 0 :
				  t_rand_below(&rng, 2) ? WTIO_DONTCACHE :
				  WTIO_WRITETHROUGH;

		if (t_rand_below(&rng, 2)) {
			fill_pat(shadow[i] + o, o + (uint64_t)k * 7919, n);
			CHECK_EQ(wtio_pwrite(f[i], shadow[i] + o, n, (off_t)o,
					     fl), (ssize_t)n);
		} else {
			CHECK_EQ(wtio_pread(f[i], buf, n, (off_t)o,
					    fl & WTIO_DONTCACHE), (ssize_t)n);
			CHECKF(!memcmp(buf, shadow[i] + o, n),
			       "file %d (folio %u): %zu bytes at %llu differ",
			       i, c[i].want, n, (unsigned long long)o);
		}
	}
	for (int i = 0; i < NF; i++) {
		CHECKF(fsize_of(f[i]) == c[i].want, "file %d: folio %u", i,
		       fsize_of(f[i]));
		CHECK_EQ(wtio_pread(f[i], buf, MIB, MIB, 0), MIB);
		CHECK(!memcmp(buf, shadow[i] + MIB, MIB));
		CHECK_OK(wtio_close(f[i]));
		check_disk(path[i], shadow[i], flen);
	}
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(st.cached_folios == 0, "%llu units still in use after close",
	       (unsigned long long)st.cached_folios);
	CHECK_OK(wtio_open(ctx, path[0], O_RDONLY, 0, 0, &f[0]));
	CHECK_EQ(wtio_pread(f[0], buf, MIB, 0, 0), MIB);
	CHECK(!memcmp(buf, shadow[0], MIB));
	CHECK_EQ(wtio_pread(f[0], buf, MIB, MIB, 0), MIB);
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(fsize_of(f[0]) == 65536 &&
	       st.cached_folios >= st.total_folios / 2,
	       "folio %u, %llu of %llu units cached after 2 MiB of reads",
	       fsize_of(f[0]), (unsigned long long)st.cached_folios,
	       (unsigned long long)st.total_folios);
	CHECK_OK(wtio_close(f[0]));
	CHECK_OK(wtio_ctx_destroy(ctx));
	for (int i = 0; i < NF; i++)
		free(shadow[i]);
	free(buf);
}

static void part_pinned(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	const char *pa = t_tmpfile("lf-pin-a"), *pb = t_tmpfile("lf-pin-b");
	uint8_t *d = t_malloc(4 * MIB), *r = t_malloc(MIB);
	struct wtio_stats s0, s1;
	struct wtio_file *fa, *fb;

	wtio_config_init(&cfg);
	cfg.cache_size = 4 * MIB;
	cfg.folio_size = 4096;
	cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS | WTIO_CONFIG_NO_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	fill_pat(d, 3, 4 * MIB);
	t_write_disk(pa, d, 4 * MIB);
	t_write_disk(pb, d, MIB);
	CHECK_OK(wtio_open(ctx, pa, O_RDWR, 0, 0, &fa));
	CHECK_OK(wtio_open(ctx, pb, O_RDONLY, 0, 0, &fb));
	for (size_t o = 0; o < 4 * MIB; o += 4096)
		CHECK_EQ(wtio_pread(fa, r, 4096, (off_t)o, 0), 4096);
	for (size_t o = 0; o < 4 * MIB; o += 65536) {
		d[o] ^= 0xff;
		CHECK_EQ(wtio_pwrite(fa, d + o, 1, (off_t)o, 0), 1);
	}
	CHECK_OK(wtio_stats(ctx, &s0));
	CHECK_EQ(wtio_pread(fb, r, 8192, 0, 0), 8192);
	fill_pat(r + 8192, 3, 8192);	/* b as written, before a's flips */
	CHECK(!memcmp(r, r + 8192, 8192));
	CHECKF(fsize_of(fb) == 8192, "8 KiB reader: folio %u", fsize_of(fb));
	CHECK_OK(wtio_stats(ctx, &s1));
	CHECKF(s1.evictions - s0.evictions <= 128,
	       "one 8 KiB miss evicted %llu units of %llu",
	       (unsigned long long)(s1.evictions - s0.evictions),
	       (unsigned long long)s1.total_folios);
	CHECK_OK(wtio_close(fa));
	CHECK_OK(wtio_close(fb));
	check_disk(pa, d, 4 * MIB);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(d);
	free(r);
}

static void part_small_file(void)
{
	static const size_t rl[] = { 4096, 32768, 131072 };
	struct wtio_ctx *ctx = make_ctx(8 * MIB);
	uint8_t *r = t_malloc(131072);
	struct wtio_file *f;

	for (size_t i = 0; i < sizeof(rl) / sizeof(rl[0]); i++) {
		const char *p = t_tmpfile("lf-small");

		t_write_disk(p, "twelve bytes", 12);
		CHECK_OK(wtio_open(ctx, p, O_RDONLY, 0, 0, &f));
		CHECK_EQ(wtio_pread(f, r, rl[i], 0, 0), 12);
		CHECK(!memcmp(r, "twelve bytes", 12));
		CHECKF(fsize_of(f) == 4096, "12-byte file read in %zu: "
		       "folio %u", rl[i], fsize_of(f));
		CHECK_OK(wtio_close(f));
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(r);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;

	t_watchdog(240, "large folios");
	t_require_odirect();
	part_sizes();
	printf("sizes: ok\n");
	part_pressure(seed);
	printf("pressure: ok\n");
	part_switch();
	printf("switch: ok\n");
	part_overevict();
	printf("overevict: ok\n");
	part_threshold();
	printf("threshold: ok\n");
	part_race();
	printf("race: ok\n");
	part_between(seed);
	printf("between: ok\n");
	part_pinned();
	printf("pinned: ok\n");
	part_small_file();
	printf("PASS\n");
	return T_EXIT_PASS;
}
