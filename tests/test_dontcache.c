/* SPDX-License-Identifier: MIT */
/*
 * test_dontcache.c - WTIO_DONTCACHE (drop-behind).
 *
 *  1. Write-back + DONTCACHE: when the call returns the data is on disk
 *     (separate O_DIRECT read) and the folios have left the cache
 *     (cached_folios back to its level, dropbehind_folios grew, nothing
 *     dirty), aligned and unaligned (read-modify-write) writes.
 *  2. Write-through + DONTCACHE: the same.
 *  3. DONTCACHE reads: uncached data is dropped after the copy (and no
 *     readahead is done, but the read is one I/O); already-cached data
 *     stays cached; a read half over cached data drops only what it
 *     brought in.
 *  4. Interplay: a DONTCACHE write leaves another folio dirtied by a
 *     normal write alone; a DONTCACHE folio whose write-back failed stays
 *     (dirty) and, if a normal write wants it again, stays cached after it
 *     is finally written, while the untouched ones leave then.
 *  5. Streaming 4x the cache budget with 1 MiB DONTCACHE writes, then
 *     reading it back with DONTCACHE: file A's hot data is never evicted
 *     (re-read with no new misses, evictions 0) and cached_folios never
 *     exceeds total_folios.
 *
 * Runs on whatever filesystem the current directory is on.
 */
#include "helpers.h"
#include "t_fault.h"

#define FS 4096u

static struct wtio_ctx *mk_ctx(uint64_t nr_folios, struct wtio_fault *fault)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = (uint64_t)FS * nr_folios;
	cfg.readahead_max = 64 * 1024;
	if (fault)
		return t_fault_ctx_create(&cfg, fault);
	cfg.backend = WTIO_BACKEND_PSYNC;
	return t_ctx_create(&cfg);
}

static struct wtio_stats st(struct wtio_ctx *ctx)
{
	struct wtio_stats s = t_stats(ctx);

	CHECKF(s.cached_folios <= s.total_folios, "cached %llu > total %llu",
	       (unsigned long long)s.cached_folios,
	       (unsigned long long)s.total_folios);
	return s;
}

/* Folios touched by [off, off+len). */
static uint64_t nr_folios_of(off_t off, size_t len)
{
	return ((uint64_t)off + len + FS - 1) / FS - (uint64_t)off / FS;
}

static void write_dontcache(unsigned int mode, const char *name)
{
	struct wtio_ctx *ctx = mk_ctx(256, NULL);
	const char *path = t_tmpfile("dc-write");
	size_t cap = 1 << 20, size = 0;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_stats a, b;
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	struct {
		off_t off;
		size_t len;
	} w[] = {
		/* None begins where the one before ended: a write that
		 * does is a stream's (test_dontcache_stream.c). */
		{ 0, 64 * 1024 },		/* aligned, extends */
		{ 5000, 10000 },		/* unaligned: RMW reads */
		{ 64 * 1024, 128 * 1024 },	/* aligned, extends */
		{ 190 * 1024 + 7, 20000 },	/* unaligned, extends */
		{ 300 * 1024, 4096 },		/* leaves a hole */
	};
	unsigned int i;

	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		uint64_t n = nr_folios_of(w[i].off, w[i].len);

		a = st(ctx);
		t_pwrite_shadow(f, shadow, &size, w[i].off, w[i].len, 100 + i,
				mode | WTIO_DONTCACHE);
		b = st(ctx);
		/* The data is on disk now, without fsync or close: the
		 * backing file may be block-rounded past wtio's size. */
		{
			size_t dlen;
			uint8_t *d = t_read_disk(path, &dlen);
			long long at;

			CHECKF(dlen >= size, "%s: disk size %zu < %zu", name,
			       dlen, size);
			at = t_memdiff(d, shadow, size);
			CHECKF(at < 0, "%s write %u: disk differs at %lld",
			       name, i, at);
			free(d);
		}
		CHECKF(b.cached_folios == a.cached_folios,
		       "%s write %u: cached %llu -> %llu", name, i,
		       (unsigned long long)a.cached_folios,
		       (unsigned long long)b.cached_folios);
		CHECKF(b.dropbehind_folios - a.dropbehind_folios == n,
		       "%s write %u: dropbehind grew by %llu, want %llu", name,
		       i, (unsigned long long)(b.dropbehind_folios -
					       a.dropbehind_folios),
		       (unsigned long long)n);
		CHECK_EQ(b.dirty_folios, 0);
		CHECK_EQ(b.writeback_folios, 0);
		CHECK_EQ(b.evictions, 0);
		CHECKF(b.bytes_written > a.bytes_written, "%s: nothing written",
		       name);
		/* Partial blocks below the old size are read first. */
		if (w[i].off % FS || w[i].len % FS)
			CHECKF(b.rmw_reads > a.rmw_reads,
			       "%s write %u: no RMW read", name, i);
	}
	/* Reading back through wtio comes from disk: all misses. */
	a = st(ctx);
	t_check_wtio_range(f, shadow, size, 0, size);
	b = st(ctx);
	CHECK(b.misses > a.misses);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
	printf("%s + DONTCACHE: %zu writes on disk at return, folios dropped, "
	       "cache back to its level\n", name, sizeof(w) / sizeof(w[0]));
}

static void read_dontcache(void)
{
	struct wtio_ctx *ctx = mk_ctx(256, NULL);
	const char *path = t_tmpfile("dc-read");
	size_t size = 512 * 1024;
	uint8_t *shadow = t_malloc(size);
	uint8_t *buf = t_malloc(size);
	struct wtio_stats a, b;
	struct wtio_file *f;
	int fd;

	t_fill(shadow, size, 7, 0);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, shadow, size, 0), (long long)size);
	close(fd);
	f = t_open(ctx, path, O_RDWR);

	/* Uncached: read, copied, dropped; no readahead. */
	a = st(ctx);
	CHECK_EQ(wtio_pread(f, buf, 128 * 1024, 0, WTIO_DONTCACHE), 128 * 1024);
	CHECK(t_memdiff(buf, shadow, 128 * 1024) < 0);
	b = st(ctx);
	CHECK_EQ(b.cached_folios, a.cached_folios);
	CHECK_EQ(b.dropbehind_folios - a.dropbehind_folios, 32);
	CHECK_EQ(b.misses - a.misses, 32);
	CHECK_EQ(b.readahead_folios, a.readahead_folios);
	/* In one I/O, not one per folio (two where a stripe unit cuts). */
	CHECKF(b.read_ios - a.read_ios <= 2, "128 KiB read in %llu I/Os",
	       (unsigned long long)(b.read_ios - a.read_ios));
	/* Unaligned, crossing folios. */
	a = b;
	CHECK_EQ(wtio_pread(f, buf, 10000, 130 * 1024 + 5, WTIO_DONTCACHE),
		 10000);
	CHECK(t_memdiff(buf, shadow + 130 * 1024 + 5, 10000) < 0);
	b = st(ctx);
	CHECK_EQ(b.cached_folios, a.cached_folios);
	CHECK_EQ(b.dropbehind_folios - a.dropbehind_folios, 3);
	printf("DONTCACHE read of uncached data: copied, %llu folios dropped, "
	       "no readahead\n", (unsigned long long)b.dropbehind_folios);

	/* Cached: a normal read brings [256K, 384K) in; DONTCACHE reads of
	 * it are hits and leave it cached. */
	CHECK_EQ(wtio_pread(f, buf, 128 * 1024, 256 * 1024, 0), 128 * 1024);
	a = st(ctx);
	CHECK(a.cached_folios >= b.cached_folios + 32);
	CHECK_EQ(wtio_pread(f, buf, 128 * 1024, 256 * 1024, WTIO_DONTCACHE),
		 128 * 1024);
	CHECK(t_memdiff(buf, shadow + 256 * 1024, 128 * 1024) < 0);
	b = st(ctx);
	CHECK_EQ(b.cached_folios, a.cached_folios);
	CHECK_EQ(b.dropbehind_folios, a.dropbehind_folios);
	CHECK_EQ(b.hits - a.hits, 32);
	CHECK_EQ(b.misses, a.misses);
	/* And a normal read of it afterwards is all hits too. */
	CHECK_EQ(wtio_pread(f, buf, 128 * 1024, 256 * 1024, 0), 128 * 1024);
	a = st(ctx);
	CHECK_EQ(a.misses, b.misses);
	printf("DONTCACHE read of cached data: 32 hits, stays cached\n");

	/* Half cached: [224K, 288K) = 8 uncached + 8 cached folios (the
	 * readahead above may have cached more past 384K: not in range). */
	a = st(ctx);
	CHECK_EQ(wtio_pread(f, buf, 64 * 1024, 224 * 1024, WTIO_DONTCACHE),
		 64 * 1024);
	CHECK(t_memdiff(buf, shadow + 224 * 1024, 64 * 1024) < 0);
	b = st(ctx);
	CHECK_EQ(b.cached_folios, a.cached_folios);
	CHECK_EQ(b.dropbehind_folios - a.dropbehind_folios, 8);
	CHECK_EQ(b.misses - a.misses, 8);
	CHECK_EQ(b.hits - a.hits, 8);
	/* The cached half is still there. */
	CHECK_EQ(wtio_pread(f, buf, 32 * 1024, 256 * 1024, 0), 32 * 1024);
	a = st(ctx);
	CHECK_EQ(a.misses, b.misses);
	printf("DONTCACHE read half over cached data: drops only the 8 it "
	       "brought in\n");

	/* Reading past EOF with DONTCACHE: short, and nothing left behind. */
	a = st(ctx);
	CHECK_EQ(wtio_pread(f, buf, 8192, (off_t)size - 4096, WTIO_DONTCACHE),
		 4096);
	b = st(ctx);
	CHECK(b.cached_folios <= a.cached_folios);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
	free(buf);
}

/* Is folio index idx of f cached? (A normal 1-byte read that is a hit.) */
static bool is_cached(struct wtio_ctx *ctx, struct wtio_file *f, uint64_t idx)
{
	struct wtio_stats a, b;
	char c;

	a = st(ctx);
	CHECK_EQ(wtio_pread(f, &c, 1, (off_t)(idx * FS), WTIO_DONTCACHE), 1);
	b = st(ctx);
	return b.misses == a.misses;
}

static void interplay(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_ctx *ctx;
	const char *path = t_tmpfile("dc-redirty");
	size_t cap = 256 * 1024, size = 0;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_fault_rule rule = { 0 };
	struct wtio_stats a, b;
	struct wtio_file *f;
	int ret;

	CHECK(fault);
	/* 4 MiB: the 128 KiB below stays under the background threshold,
	 * so no flusher is kicked: in a context that kicked one, it may
	 * still owe a pass and write folio 0 behind our back. */
	ctx = mk_ctx(1024, fault);
	f = t_open(ctx, path, O_RDWR);
	t_pwrite_shadow(f, shadow, &size, 0, 128 * 1024, 1, 0);
	CHECK_OK(wtio_fsync(f));

	/* A: folio 0 dirtied by a normal write; a DONTCACHE write of
	 * folios 4..6 writes and drops only those. (Not 4..7: B's write
	 * would begin where it ended, a stream's, left waiting.) */
	t_pwrite_shadow(f, shadow, &size, 100, 200, 2, 0);
	a = st(ctx);
	CHECK_EQ(a.dirty_folios, 1);
	t_pwrite_shadow(f, shadow, &size, 4 * FS, 3 * FS, 3, WTIO_DONTCACHE);
	b = st(ctx);
	CHECK_EQ(b.dirty_folios, 1);
	CHECK_EQ(b.cached_folios, a.cached_folios - 3);
	CHECK_EQ(b.dropbehind_folios - a.dropbehind_folios, 3);
	CHECK(is_cached(ctx, f, 0));
	CHECK(!is_cached(ctx, f, 5));
	CHECK_OK(wtio_fsync(f));
	CHECK(is_cached(ctx, f, 0));
	t_check_disk_equals(path, shadow, size);
	printf("DONTCACHE write leaves a normally dirtied folio dirty and "
	       "cached\n");

	/* B: a DONTCACHE write of folios 8..11 whose write-back fails: they
	 * stay (dirty, nothing to drop). A normal write then wants folio 9
	 * again. When fsync finally writes them, 8, 10, 11 leave and 9
	 * stays cached. */
	rule.ops = WTIO_FAULT_WRITE;
	rule.count = 1;
	rule.error = EIO;
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	a = st(ctx);
	t_pwrite_shadow(f, shadow, &size, 8 * FS, 4 * FS, 4, WTIO_DONTCACHE);
	b = st(ctx);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	CHECK_EQ(b.dirty_folios, 4);
	CHECK_EQ(b.dropbehind_folios, a.dropbehind_folios);
	t_pwrite_shadow(f, shadow, &size, 9 * FS + 10, 20, 5, 0);
	CHECK_EQ(st(ctx).dirty_folios, 4);
	wtio_fault_clear_rules(fault);
	a = st(ctx);
	ret = wtio_fsync(f);
	CHECKF(ret == -EIO, "fsync after a failed write-back: %d", ret);
	b = st(ctx);
	CHECK_EQ(b.dirty_folios, 0);
	CHECK_EQ(b.dropbehind_folios - a.dropbehind_folios, 3);
	CHECK_EQ(b.cached_folios, a.cached_folios - 3);
	CHECK_OK(wtio_fsync(f));
	t_check_disk_equals(path, shadow, size);
	CHECK(is_cached(ctx, f, 9));
	CHECK(!is_cached(ctx, f, 8));
	CHECK(!is_cached(ctx, f, 10));
	CHECK(!is_cached(ctx, f, 11));
	printf("DONTCACHE folio re-dirtied by a normal write stays cached "
	       "after write-back; the others leave\n");

	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
}

static void streaming(void)
{
	const uint64_t budget_folios = 1024;		/* 4 MiB */
	const size_t a_size = 256 * 1024, chunk = 1 << 20;
	const size_t b_size = 4 * budget_folios * FS;	/* 16 MiB */
	struct wtio_ctx *ctx = mk_ctx(budget_folios, NULL);
	const char *pa = t_tmpfile("dc-hot"), *pb = t_tmpfile("dc-stream");
	uint8_t *buf = t_malloc(chunk), *abuf = t_malloc(a_size);
	struct wtio_file *fa = t_open(ctx, pa, O_RDWR);
	struct wtio_file *fb = t_open(ctx, pb, O_RDWR);
	struct wtio_stats s0, s, s1;
	uint64_t max_cached = 0;
	size_t off;

	/* Warm A: written, synced, read: all its folios cached. */
	t_fill(abuf, a_size, 11, 0);
	CHECK_EQ(wtio_pwrite(fa, abuf, a_size, 0, 0), (long long)a_size);
	CHECK_OK(wtio_fsync(fa));
	CHECK_EQ(wtio_pread(fa, abuf, a_size, 0, 0), (long long)a_size);
	CHECK(t_verify(abuf, a_size, 11, 0) < 0);
	s0 = st(ctx);
	CHECK_EQ(s0.cached_folios, a_size / FS);

	for (off = 0; off < b_size; off += chunk) {
		t_fill(buf, chunk, 12, off);
		CHECK_EQ(wtio_pwrite(fb, buf, chunk, (off_t)off,
				     WTIO_DONTCACHE), (long long)chunk);
		s = st(ctx);
		if (s.cached_folios > max_cached)
			max_cached = s.cached_folios;
		CHECKF(s.cached_folios == s0.cached_folios,
		       "after DONTCACHE write at %zu: cached %llu, was %llu",
		       off, (unsigned long long)s.cached_folios,
		       (unsigned long long)s0.cached_folios);
	}
	for (off = 0; off < b_size; off += chunk) {
		CHECK_EQ(wtio_pread(fb, buf, chunk, (off_t)off, WTIO_DONTCACHE),
			 (long long)chunk);
		CHECKF(t_verify(buf, chunk, 12, off) < 0,
		       "streamed data wrong at %zu", off);
		s = st(ctx);
		if (s.cached_folios > max_cached)
			max_cached = s.cached_folios;
		CHECK_EQ(s.cached_folios, s0.cached_folios);
	}
	s = st(ctx);
	CHECK_EQ(s.evictions, 0);
	CHECK_EQ(s.dropbehind_folios - s0.dropbehind_folios, 2 * b_size / FS);
	/* A is still all there: re-reading it misses nothing. */
	CHECK_EQ(wtio_pread(fa, abuf, a_size, 0, 0), (long long)a_size);
	CHECK(t_verify(abuf, a_size, 11, 0) < 0);
	s1 = st(ctx);
	CHECKF(s1.misses == s.misses, "A lost %llu folios",
	       (unsigned long long)(s1.misses - s.misses));
	CHECK_EQ(s1.hits - s.hits, a_size / FS);

	CHECK_OK(wtio_close(fa));
	CHECK_OK(wtio_close(fb));
	{
		size_t dlen, i;
		uint8_t *d = t_read_disk(pb, &dlen);

		CHECK_EQ(dlen, b_size);
		for (i = 0; i < b_size; i += chunk)
			CHECK(t_verify(d + i, chunk, 12, i) < 0);
		free(d);
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
	free(abuf);
	printf("streamed %zu MiB (4x the %llu KiB budget) with DONTCACHE "
	       "writes and reads: A's %zu folios stayed cached, max cached "
	       "%llu of %llu, 0 evictions\n", b_size >> 20,
	       (unsigned long long)(budget_folios * FS / 1024), a_size / FS,
	       (unsigned long long)max_cached,
	       (unsigned long long)s1.total_folios);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	write_dontcache(0, "write-back");
	write_dontcache(WTIO_WRITETHROUGH, "write-through");
	read_dontcache();
	interplay();
	streaming();
	printf("PASS\n");
	return T_EXIT_PASS;
}
