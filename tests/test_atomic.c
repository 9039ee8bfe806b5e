/* SPDX-License-Identifier: MIT */
/*
 * test_atomic.c - untorn writes (WTIO_ATOMIC).
 *
 * Two tests from one program, so that neither passes with a part it could
 * not run: "atomic" (no argument) runs part 1, "atomic_xfs" (argument
 * "xfs") part 2; each exits 77 with the reason when its part cannot run.
 *
 * Part 1 (the current directory's filesystem): where statx reports no
 * atomic write unit (atomic_unit_max 0, e.g. ext4 without bigalloc), every
 * WTIO_ATOMIC write is -EOPNOTSUPP (never a silent fallback) and changes
 * nothing; WTIO_ATOMIC is not a read flag (-EINVAL). A filesystem here
 * that takes atomic writes makes it exit 77.
 *
 * Part 2 (root, loop devices, xfsprogs; else exit 77): an XFS image
 * ("mkfs.xfs -d su=64k,sw=4") on a loop device:
 *  a. shape checks: not a power of two, misaligned, below the minimum,
 *     above the maximum -> -EINVAL, and nothing changed;
 *  b. real RWF_ATOMIC writes (default backend) of 16 KiB, 64 KiB and the
 *     maximum, with DSYNC, DONTCACHE, several iovecs, extending the file:
 *     they succeed, stats atomic_writes grows, the data is on disk; a
 *     DONTCACHE one drops the cached folios of its range and caches none;
 *  c. the FAULT backend's trace: each atomic write is exactly ONE write
 *     I/O with RWF_ATOMIC, covering the whole range in one segment, with
 *     folios of 4 KiB, 64 KiB and 1 MiB and stripe units of 4 KiB (config)
 *     and 64 KiB (XFS), and fsync writes nothing more in the range;
 *  d. folio-dirty interplay: write-back data in the same folio (same block
 *     even) as an atomic write: after fsync both are on disk; write-back
 *     data the atomic write overwrites is superseded; a failed atomic
 *     write - the fault on its RWF_ATOMIC I/O itself, which the trace
 *     shows was issued after the flush of the range's dirty data - leaves
 *     the range as it was in the cache and on disk (earlier write-back
 *     data included), and an extending one leaves the size;
 *  e. crash and replay: atomic writes, write-back writes and fsyncs, then
 *     wtio_ctx_crash; for every prefix of the record and several seeds,
 *     each atomic slot holds exactly one whole version (initial or one of
 *     the writes), never a mix, and never one older than what an fsync
 *     (or DSYNC) made durable;
 *  f. a context over a backend of the test's that lacks
 *     WTIO_IO_CAP_ATOMIC (psync's ops, that bit cleared): WTIO_ATOMIC is
 *     -EOPNOTSUPP though the device takes untorn writes, and no I/O is
 *     issued.
 */
#include "helpers.h"
#include "t_fault.h"
#include "xfs_loop.h"
#include "io/ops.h"	/* RWF_ATOMIC, RWF_DSYNC; backends */

#include <sys/uio.h>

/* A new file on the XFS image. */
static const char *xfs_file(const char *tag)
{
	return t_dir_file(xl.mnt, tag);
}

static struct wtio_ctx *mk_ctx(uint32_t fsz, uint64_t cache,
			       struct wtio_fault *fault, uint32_t su)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = fsz;
	cfg.cache_size = cache;
	cfg.readahead_max = 0;
	cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	cfg.stripe_unit = su;
	cfg.stripe_width = su;
	return fault ? t_fault_ctx_create(&cfg, fault) : t_ctx_create(&cfg);
}

/* As mk_ctx, but the flushers write nothing on their own during a test
 * (no expiry, a background threshold far above what it dirties): tests
 * that count the writes in a range rely on it. */
static struct wtio_ctx *mk_ctx_quiet(uint32_t fsz, uint64_t cache,
				     struct wtio_fault *fault)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = fsz;
	cfg.cache_size = cache;
	cfg.readahead_max = 0;
	cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	cfg.dirty_expire_ms = 3600 * 1000;
	cfg.dirty_background_ratio = 50;
	cfg.dirty_ratio = 60;
	return t_fault_ctx_create(&cfg, fault);
}

static ssize_t wr(struct wtio_file *f, uint8_t *shadow, size_t *size,
		  off_t off, size_t len, uint64_t seed, unsigned int flags)
{
	uint8_t *buf = t_malloc(len);
	ssize_t r;

	t_fill(buf, len, seed, (uint64_t)off);
	r = wtio_pwrite(f, buf, len, off, flags);
	if (r == (ssize_t)len && shadow) {
		memcpy(shadow + off, buf, len);
		if ((size_t)off + len > *size)
			*size = (size_t)off + len;
	}
	free(buf);
	return r;
}

/* ---- part 1 ---- */

/* Returns whether the -EOPNOTSUPP checks could run here. */
static bool part_unsupported(void)
{
	bool applied = true;
	unsigned int b;

	/* b 0: the AUTO backend, b 1: the fault backend. */
	for (b = 0; b < 2; b++) {
		struct wtio_fault *fault = wtio_fault_create();
		struct wtio_ctx *ctx = mk_ctx(4096, 4u << 20, b ? fault : NULL,
					      0);
		const char *path = t_tmpfile("atomic-cwd");
		struct wtio_file *f = t_open(ctx, path, O_RDWR);
		struct wtio_file_info info;
		uint8_t *buf = t_zalloc(65536);
		struct wtio_stats a, s;
		size_t size = 0;

		CHECK_OK(wtio_file_info(f, &info));
		printf("cwd (%s): atomic unit %u..%u\n",
		       wtio_ctx_backend_name(ctx), info.atomic_unit_min,
		       info.atomic_unit_max);
		CHECK_EQ(wtio_pread(f, buf, 4096, 0, WTIO_ATOMIC), -EINVAL);
		if (info.atomic_unit_max) {
			printf("cwd filesystem supports atomic writes: the "
			       "-EOPNOTSUPP check does not apply here\n");
			applied = false;
		} else {
			size_t lens[] = { 4096, 16384, 65536, 12288, 2048 };
			off_t offs[] = { 0, 16384, 65536, 0, 4096 };
			unsigned int i;

			CHECK_EQ(info.atomic_unit_min, 0);
			CHECK_EQ(wr(f, NULL, &size, 0, 8192, 1, 0), 8192);
			CHECK_OK(wtio_fsync(f));
			a = t_stats(ctx);
			for (i = 0; i < 5; i++) {
				CHECK_EQ(wr(f, NULL, &size, offs[i], lens[i], 2,
					    WTIO_ATOMIC), -EOPNOTSUPP);
				CHECK_EQ(wr(f, NULL, &size, offs[i], lens[i], 2,
					    WTIO_ATOMIC | WTIO_DSYNC |
					    WTIO_WRITETHROUGH), -EOPNOTSUPP);
			}
			s = t_stats(ctx);
			CHECK_EQ(s.cached_folios, a.cached_folios);
			CHECK_EQ(s.dirty_folios, 0);
			CHECK_EQ(s.write_ios, a.write_ios);
			CHECK_EQ(s.atomic_writes, 0);
			CHECK_EQ(wtio_file_size(f), 8192);
			printf("cwd (%s): 10 WTIO_ATOMIC writes -> -EOPNOTSUPP, "
			       "nothing changed\n", wtio_ctx_backend_name(ctx));
		}
		CHECK_OK(wtio_close(f));
		CHECK_EQ(t_disk_size(path), info.atomic_unit_max ? 0 : 8192);
		CHECK_OK(wtio_ctx_destroy(ctx));
		wtio_fault_destroy(fault);
		free(buf);
	}
	return applied;
}

/* ---- part 2a: shapes ---- */

static void expect_einval(struct wtio_ctx *ctx, struct wtio_file *f,
			  const char *path, off_t off, size_t len,
			  const char *why)
{
	struct wtio_stats a = t_stats(ctx), b;
	off_t size = wtio_file_size(f);
	size_t d0len, d1len;
	uint8_t *d0 = t_read_disk(path, &d0len), *d1;
	ssize_t r = wr(f, NULL, NULL, off, len, 99, WTIO_ATOMIC);

	CHECKF(r == -EINVAL, "%s (%zu @ %lld): %zd, want -EINVAL", why, len,
	       (long long)off, r);
	CHECK_EQ(wr(f, NULL, NULL, off, len, 99,
		    WTIO_ATOMIC | WTIO_WRITETHROUGH | WTIO_DSYNC), -EINVAL);
	b = t_stats(ctx);
	CHECK_EQ(b.cached_folios, a.cached_folios);
	CHECK_EQ(b.dirty_folios, a.dirty_folios);
	CHECK_EQ(b.write_ios, a.write_ios);
	CHECK_EQ(b.atomic_writes, a.atomic_writes);
	CHECK_EQ(wtio_file_size(f), size);
	d1 = t_read_disk(path, &d1len);
	CHECK_EQ(d1len, d0len);
	CHECK(t_memdiff(d0, d1, d0len) < 0);
	free(d0);
	free(d1);
	printf("  %-28s %7zu @ %-7lld -> -EINVAL, nothing changed\n", why,
	       len, (long long)off);
}

/* A write of zero bytes is 0 where untorn writes are supported, as the
 * kernel's, whatever its offset (a misaligned one too), and does
 * nothing; where they are not it is want (-EOPNOTSUPP: the support
 * check comes first, as in the kernel). */
static void zero_length(struct wtio_ctx *ctx, struct wtio_file *f, int want)
{
	struct wtio_stats a = t_stats(ctx), s;
	char byte = 0;
	struct iovec v = { &byte, 0 };
	off_t size = wtio_file_size(f);

	CHECK_EQ(wtio_pwrite(f, &byte, 0, 0, WTIO_ATOMIC), want);
	CHECK_EQ(wtio_pwrite(f, &byte, 0, 100, WTIO_ATOMIC | WTIO_DSYNC),
		 want);
	CHECK_EQ(wtio_pwritev(f, NULL, 0, 4096, WTIO_ATOMIC), want);
	CHECK_EQ(wtio_pwritev(f, &v, 1, size + 65536,
			      WTIO_ATOMIC | WTIO_WRITETHROUGH), want);
	s = t_stats(ctx);
	CHECK_EQ(s.write_ios, a.write_ios);
	CHECK_EQ(s.atomic_writes, a.atomic_writes);
	CHECK_EQ(s.dirty_folios, a.dirty_folios);
	CHECK_EQ(wtio_file_size(f), size);
	printf("  zero-length untorn writes -> %d, nothing changed\n", want);
}

static void shapes(void)
{
	struct wtio_ctx *ctx = mk_ctx(4096, 8u << 20, NULL, 0);
	const char *path = xfs_file("shapes");
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	struct wtio_file_info info;
	size_t size = 0;

	CHECK_OK(wtio_file_info(f, &info));
	printf("xfs (%s): atomic unit %u..%u, stripe %u/%u (%s)\n",
	       wtio_ctx_backend_name(ctx), info.atomic_unit_min,
	       info.atomic_unit_max, info.stripe_unit, info.stripe_width,
	       info.stripe_source);
	CHECKF(info.atomic_unit_max >= 65536 && info.atomic_unit_min >= 512 &&
	       info.atomic_unit_min <= 4096,
	       "XFS on kernel 6.18 should allow 4 KiB..64 KiB atomic writes "
	       "(statx says %u..%u)", info.atomic_unit_min,
	       info.atomic_unit_max);
	CHECK_EQ(wr(f, NULL, &size, 0, 256 * 1024, 1, 0), 256 * 1024);
	CHECK_OK(wtio_fsync(f));
	expect_einval(ctx, f, path, 0, 12288, "not a power of two");
	expect_einval(ctx, f, path, 0, 3 * info.atomic_unit_min,
		      "3 x minimum");
	expect_einval(ctx, f, path, 4096, 16384, "misaligned");
	expect_einval(ctx, f, path, 8192, 65536, "misaligned");
	expect_einval(ctx, f, path, 100, 4096, "misaligned (odd offset)");
	if (info.atomic_unit_min > 512)
		expect_einval(ctx, f, path, 0, info.atomic_unit_min / 2,
			      "below minimum");
	expect_einval(ctx, f, path, 0, 2 * (size_t)info.atomic_unit_max,
		      "above maximum");
	expect_einval(ctx, f, path, 2 * (off_t)info.atomic_unit_max,
		      2 * (size_t)info.atomic_unit_max, "above maximum (aligned)");
	zero_length(ctx, f, 0);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
}

/* ---- part 2b: real RWF_ATOMIC writes ---- */

static void real_writes(void)
{
	struct wtio_ctx *ctx = mk_ctx(4096, 8u << 20, NULL, 0);
	const char *path = xfs_file("real");
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	size_t cap = 4u << 20, size = 0;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_file_info info;
	struct wtio_stats a, b;
	size_t lens[3], dlen;
	unsigned int i;
	uint8_t *d;

	CHECK_OK(wtio_file_info(f, &info));
	lens[0] = 16384;
	lens[1] = 65536;
	lens[2] = info.atomic_unit_max > (1u << 20) ? (1u << 20) :
		  info.atomic_unit_max;
	CHECK_EQ(wr(f, shadow, &size, 0, 2u << 20, 1, 0), 2u << 20);
	CHECK_OK(wtio_fsync(f));
	for (i = 0; i < 3; i++) {
		off_t off = (off_t)lens[i];

		a = t_stats(ctx);
		CHECK_EQ(wr(f, shadow, &size, off, lens[i], 10 + i,
			    WTIO_ATOMIC), (long long)lens[i]);
		b = t_stats(ctx);
		CHECK_EQ(b.atomic_writes - a.atomic_writes, 1);
		CHECK(b.bytes_written - a.bytes_written >= lens[i]);
		/* On disk at return, without fsync. */
		d = t_read_disk(path, &dlen);
		CHECK_EQ(dlen, size);
		CHECKF(t_memdiff(d, shadow, size) < 0,
		       "atomic %zu: disk differs", lens[i]);
		free(d);
		t_check_wtio_range(f, shadow, size, 0, size);
		printf("  RWF_ATOMIC write %7zu @ %-7lld ok, on disk at return\n",
		       lens[i], (long long)off);
	}
	/* DSYNC, DONTCACHE, write-through flag, several iovecs. */
	a = t_stats(ctx);
	CHECK_EQ(wr(f, shadow, &size, 32768, 32768, 20,
		    WTIO_ATOMIC | WTIO_DSYNC), 32768);
	CHECK_EQ(wr(f, shadow, &size, 8192, 8192, 21,
		    WTIO_ATOMIC | WTIO_WRITETHROUGH), 8192);
	b = t_stats(ctx);
	CHECK_EQ(b.atomic_writes - a.atomic_writes, 2);
	{
		/* Data for [1.5M, +64K) from three iovecs, one unaligned. */
		uint8_t *buf = t_malloc(65536 + 1);
		struct iovec iov[3] = {
			{ buf + 1, 5000 }, { buf + 1 + 5000, 7000 },
			{ buf + 1 + 12000, 65536 - 12000 },
		};
		off_t off = 1536 * 1024;

		t_fill(buf + 1, 65536, 22, (uint64_t)off);
		CHECK_EQ(wtio_pwritev(f, iov, 3, off, WTIO_ATOMIC), 65536);
		memcpy(shadow + off, buf + 1, 65536);
		free(buf);
	}
	/* DONTCACHE over the 16 folios the write above left cached: they
	 * leave the cache. Then past the end: nothing is cached. */
	a = t_stats(ctx);
	CHECK_EQ(wr(f, shadow, &size, 1536 * 1024, 65536, 24,
		    WTIO_ATOMIC | WTIO_DONTCACHE), 65536);
	b = t_stats(ctx);
	CHECK_EQ(b.dropbehind_folios - a.dropbehind_folios, 16);
	CHECK_EQ(a.cached_folios - b.cached_folios, 16);
	a = t_stats(ctx);
	CHECK_EQ(wr(f, shadow, &size, 3u << 20, 65536, 23,
		    WTIO_ATOMIC | WTIO_DONTCACHE), 65536);
	b = t_stats(ctx);
	CHECK_EQ(b.dropbehind_folios, a.dropbehind_folios);
	CHECK_EQ(b.cached_folios, a.cached_folios);
	CHECK_EQ(wtio_file_size(f), (3u << 20) + 65536);
	CHECK_EQ(b.atomic_writes - a.atomic_writes, 1);
	d = t_read_disk(path, &dlen);
	CHECK(dlen >= size);
	CHECK(t_memdiff(d, shadow, size) < 0);
	free(d);
	t_check_wtio_range(f, shadow, size, 0, size);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
	printf("  DSYNC, WRITETHROUGH, 3 iovecs, DONTCACHE (+extending) "
	       "atomic writes ok\n");
}

/* ---- part 2c: the trace ---- */

/*
 * The trace from `from`: exactly one RWF_ATOMIC write overlapping
 * [off, off+len), of exactly that range in one segment, and no plain
 * write overlapping the range after it (the atomic data never goes out in
 * pieces). Plain writes before it are write-back data that was dirty in
 * the range before the atomic write (flushed first, as old data).
 */
static void check_one_atomic(struct wtio_fault *fault, uint64_t from,
			     off_t off, size_t len, bool dsync,
			     const char *what)
{
	uint64_t i, n = wtio_fault_nr_ios(fault), hits = 0;

	for (i = from; i < n; i++) {
		struct wtio_fault_io io;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op != WTIO_FAULT_WRITE)
			continue;
		if (io.off + (int64_t)io.len <= off ||
		    io.off >= off + (int64_t)len) {
			CHECKF(!(io.rw_flags & RWF_ATOMIC),
			       "%s: stray RWF_ATOMIC write [%lld, +%llu)", what,
			       (long long)io.off, (unsigned long long)io.len);
			continue;
		}
		if (!(io.rw_flags & RWF_ATOMIC)) {
			CHECKF(hits == 0, "%s: plain write [%lld, +%llu) in "
			       "the atomic range after the atomic write", what,
			       (long long)io.off, (unsigned long long)io.len);
			continue;
		}
		hits++;
		CHECKF(io.off == off && io.len == len && io.nr_segs == 1,
		       "%s: atomic write is [%lld, +%llu) in %u segments, want "
		       "[%lld, +%zu) in 1", what, (long long)io.off,
		       (unsigned long long)io.len, io.nr_segs, (long long)off,
		       len);
		CHECKF(!dsync || (io.rw_flags & RWF_DSYNC),
		       "%s: no RWF_DSYNC", what);
	}
	CHECKF(hits == 1, "%s: %llu RWF_ATOMIC writes in the range, want "
	       "exactly 1", what, (unsigned long long)hits);
}

static void trace_checks(void)
{
	const uint32_t fszs[] = { 4096, 65536, 1u << 20 };
	const uint32_t sus[] = { 4096, 0 };
	unsigned int a, b, i;

	for (a = 0; a < 3; a++) {
		for (b = 0; b < 2; b++) {
			struct wtio_fault *fault = wtio_fault_create();
			struct wtio_ctx *ctx = mk_ctx(fszs[a], 32u << 20,
						      fault, sus[b]);
			const char *path = xfs_file("trace");
			struct wtio_file *f = t_open(ctx, path, O_RDWR);
			size_t cap = 16u << 20, size = 0;
			uint8_t *shadow = t_zalloc(cap);
			struct wtio_file_info info;
			size_t lens[] = { 4096, 16384, 65536, 262144, 1u << 20 };
			char what[96];

			CHECK_OK(wtio_file_info(f, &info));
			CHECK_EQ(wr(f, shadow, &size, 0, 3u << 20, 1, 0),
				 3u << 20);
			CHECK_OK(wtio_fsync(f));
			for (i = 0; i < 5; i++) {
				/* Over data; beyond EOF (extending); over
				 * dirty data; with DSYNC. */
				off_t offs[4] = {
					(off_t)lens[i],
					(off_t)((4u << 20) + i * (1u << 20)),
					(off_t)(2u << 20),
					(off_t)(lens[i] * 2),
				};
				unsigned int k;

				if (lens[i] > info.atomic_unit_max)
					continue;
				for (k = 0; k < 4; k++) {
					bool dsync = k == 3;
					uint64_t from;
					struct wtio_stats s0, s1;

					if (k == 2)	/* dirty it first */
						CHECK_EQ(wr(f, shadow, &size,
							    offs[k] + 100, 3000,
							    2, 0), 3000);
					snprintf(what, sizeof(what),
						 "folio %uK stripe %u (%s) "
						 "atomic %zuK @ %lldK%s",
						 fszs[a] >> 10,
						 info.stripe_unit,
						 info.stripe_source,
						 lens[i] >> 10,
						 (long long)offs[k] >> 10,
						 dsync ? " DSYNC" : "");
					from = wtio_fault_nr_ios(fault);
					s0 = t_stats(ctx);
					CHECK_EQ(wr(f, shadow, &size, offs[k],
						    lens[i], 30 + i * 4 + k,
						    WTIO_ATOMIC |
						    (dsync ? WTIO_DSYNC : 0)),
						 (long long)lens[i]);
					s1 = t_stats(ctx);
					CHECK_EQ(s1.atomic_writes -
						 s0.atomic_writes, 1);
					CHECK_OK(wtio_fsync(f));
					check_one_atomic(fault, from, offs[k],
							 lens[i], dsync, what);
				}
				printf("  folio %4uK stripe %5u (%-6s) atomic "
				       "%4zuK: one RWF_ATOMIC I/O, 1 segment, "
				       "x4 (over data, extending, over dirty, "
				       "DSYNC)\n", fszs[a] >> 10,
				       info.stripe_unit, info.stripe_source,
				       lens[i] >> 10);
			}
			t_check_wtio_range(f, shadow, size, 0, size);
			CHECK_OK(wtio_close(f));
			t_check_disk_equals(path, shadow, size);
			CHECK_OK(wtio_ctx_destroy(ctx));
			wtio_fault_destroy(fault);
			free(shadow);
		}
	}
}

/* ---- part 2d: dirty folios around atomic writes ---- */

/*
 * An atomic write over [off, off + len) whose RWF_ATOMIC I/O fails with
 * EIO: the rule lets the first `flushes` writes in the range through (the
 * flush of its dirty write-back data, which must come first) and fails
 * the next one. The trace must show exactly those plain writes, then one
 * RWF_ATOMIC write of the whole range; the stats one more failed write
 * and no atomic write done. Then, without an fsync, the file reads back
 * as shadow (size bytes) through wtio and on disk, size included.
 */
static void failing_atomic(struct wtio_ctx *ctx, struct wtio_fault *fault,
			   struct wtio_file *f, const char *path,
			   const uint8_t *shadow, size_t size, off_t off,
			   size_t len, uint64_t flushes, const char *what)
{
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .skip = flushes, .count = 1,
		.error = EIO, .start = off, .end = off + (off_t)len,
	};
	uint64_t inj = wtio_fault_injected(fault);
	uint64_t from = wtio_fault_nr_ios(fault), i, plain = 0, atomics = 0;
	uint8_t *buf = t_malloc(len), *d;
	struct wtio_stats a, b;
	size_t dlen;
	ssize_t r;
	int ret;

	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	a = t_stats(ctx);
	t_fill(buf, len, 0xdead, (uint64_t)off);
	r = wtio_pwrite(f, buf, len, off, WTIO_ATOMIC);
	b = t_stats(ctx);
	wtio_fault_clear_rules(fault);
	CHECKF(r == -EIO, "%s: failing atomic write returned %zd", what, r);
	CHECK_EQ(wtio_fault_injected(fault) - inj, 1);
	for (i = from; i < wtio_fault_nr_ios(fault); i++) {
		struct wtio_fault_io io;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op != WTIO_FAULT_WRITE || io.off >= off + (off_t)len ||
		    io.off + (int64_t)io.len <= off)
			continue;
		if (io.rw_flags & RWF_ATOMIC) {
			CHECKF(io.off == off && io.len == len &&
			       io.nr_segs == 1, "%s: atomic I/O [%lld, +%llu)",
			       what, (long long)io.off,
			       (unsigned long long)io.len);
			atomics++;
		} else {
			CHECKF(!atomics, "%s: a plain write in the range after "
			       "the atomic one", what);
			plain++;
		}
	}
	CHECKF(plain == flushes && atomics == 1, "%s: %llu plain and %llu "
	       "RWF_ATOMIC writes in the range, want %llu and 1", what,
	       (unsigned long long)plain, (unsigned long long)atomics,
	       (unsigned long long)flushes);
	CHECK_EQ(b.atomic_writes, a.atomic_writes);
	CHECK_EQ(b.writeback_errors - a.writeback_errors, 1);
	CHECKF(wtio_file_size(f) == (off_t)size, "%s: size %lld, want %zu",
	       what, (long long)wtio_file_size(f), size);
	t_check_wtio_range(f, shadow, size, 0, size);
	/* On disk before any fsync: what the flush wrote, and the old data
	 * (the backing file may end in the zero tail of the last block a
	 * write-back I/O wrote, until fsync sets the size). */
	d = t_read_disk(path, &dlen);
	CHECKF(dlen >= size && dlen - size < 16384 /* largest block */ &&
	       t_memdiff(d, shadow, size) < 0, "%s: disk (%zu bytes) differs "
	       "from the %zu bytes before the write", what, dlen, size);
	free(d);
	/* The error is also reported once to fsync, as a failed
	 * write-through write's; nothing else changes. */
	ret = wtio_fsync(f);
	CHECKF(ret == 0 || ret == -EIO, "%s: fsync: %d", what, ret);
	CHECK_OK(wtio_fsync(f));
	t_check_wtio_range(f, shadow, size, 0, size);
	t_check_disk_equals(path, shadow, size);
	free(buf);
}

static void interplay(void)
{
	const uint32_t fszs[] = { 65536, 1u << 20 };
	unsigned int a;

	for (a = 0; a < 2; a++) {
		struct wtio_fault *fault = wtio_fault_create();
		struct wtio_ctx *ctx = mk_ctx_quiet(fszs[a], 32u << 20, fault);
		const char *path = xfs_file("interplay");
		struct wtio_file *f = t_open(ctx, path, O_RDWR);
		size_t cap = 4u << 20, size = 0;
		uint8_t *shadow = t_zalloc(cap);
		struct wtio_file_info info;

		CHECK_OK(wtio_file_info(f, &info));
		CHECK_EQ(wr(f, shadow, &size, 0, 2u << 20, 1, 0), 2u << 20);
		CHECK_OK(wtio_fsync(f));

		/* 1: write-back [0, 8K) dirty, atomic [16K, 32K): same folio,
		 * other blocks. */
		CHECK_EQ(wr(f, shadow, &size, 0, 8192, 2, 0), 8192);
		CHECK_EQ(wr(f, shadow, &size, 16384, 16384, 3, WTIO_ATOMIC),
			 16384);
		CHECK_OK(wtio_fsync(f));
		t_check_disk_equals(path, shadow, size);

		/* 2: write-back [68K, 72K) dirty, atomic [64K, 68K): the
		 * same folio and, with 1 MiB folios (block 16K), the same
		 * block. */
		CHECK_EQ(wr(f, shadow, &size, 69632, 4096, 4, 0), 4096);
		CHECK_EQ(wr(f, shadow, &size, 65536, 4096, 5, WTIO_ATOMIC),
			 4096);
		t_check_wtio_range(f, shadow, size, 0, size);
		CHECK_OK(wtio_fsync(f));
		t_check_disk_equals(path, shadow, size);

		/* 3: the atomic write covers dirty write-back data: it
		 * supersedes it. */
		CHECK_EQ(wr(f, shadow, &size, 131072 + 100, 100, 6, 0), 100);
		CHECK_EQ(wr(f, shadow, &size, 131072, 16384, 7, WTIO_ATOMIC),
			 16384);
		CHECK_OK(wtio_fsync(f));
		t_check_disk_equals(path, shadow, size);

		/* 4: the atomic write fails (EIO on its RWF_ATOMIC I/O)
		 * over dirty write-back data: the flush of that data comes
		 * first and succeeds; the range reads back as it was before
		 * the atomic write, in the cache and on disk. */
		CHECK_EQ(wr(f, shadow, &size, 196608 + 4096, 4096, 8, 0), 4096);
		failing_atomic(ctx, fault, f, path, shadow, size, 196608, 16384,
			       1, "over dirty data");
		/* 5: over clean data. */
		failing_atomic(ctx, fault, f, path, shadow, size, 262144, 16384,
			       0, "over clean data");
		/* 6: extending, past the end: the size does not move. */
		failing_atomic(ctx, fault, f, path, shadow, size,
			       (off_t)size + 65536, 16384, 0, "extending");
		/* 7: extending over a write-back append: that append's data
		 * and size stay, the atomic write's do not come. */
		CHECK_EQ(wr(f, shadow, &size, (off_t)size + 65536 + 4096, 4096,
			    9, 0), 4096);
		failing_atomic(ctx, fault, f, path, shadow, size,
			       (off_t)size - 8192, 16384, 1,
			       "extending over a write-back append");

		printf("  folio %4uK (block %u): write-back + atomic in one "
		       "folio/block both on disk; superseded dirty data; a "
		       "failed RWF_ATOMIC I/O (over dirty and clean data, "
		       "extending) leaves the range and the size as they "
		       "were\n", fszs[a] >> 10, info.block_size);

		CHECK_OK(wtio_close(f));
		CHECK_OK(wtio_ctx_destroy(ctx));
		wtio_fault_destroy(fault);
		free(shadow);
	}
}

/* ---- part 2e: crash and replay ---- */

#define NSLOT 8
#define SLOT_STRIDE (128 * 1024)
#define MAXV 64
#define CR_FILE (NSLOT * SLOT_STRIDE)

struct slot {
	off_t off;
	size_t len;
	int nv;
	uint64_t seed[MAXV];
	uint64_t durable_at[MAXV];	/* prefix from which v is durable */
};

static void crash_replay_one(uint32_t fsz, uint32_t su, uint64_t run_seed)
{
	struct wtio_fault *fault = wtio_fault_create();
	const char *path = xfs_file("crash");
	const char *rpath = t_tmpfile("atomic-replay");
	static const size_t lens[] = { 4096, 16384, 65536, 8192 };
	struct slot slots[NSLOT];
	struct t_rng rng = { run_seed };
	uint8_t *init = t_malloc(CR_FILE), *rb = t_malloc(CR_FILE + 65536);
	uint8_t *exp = t_malloc(65536);
	uint64_t nev, n, seed, replays = 0;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int i, op, rfd;

	/* The initial content, durable before recording begins. */
	t_fill(init, CR_FILE, 0xabc, 0);
	t_write_disk(path, init, CR_FILE);
	for (i = 0; i < NSLOT; i++) {
		slots[i].off = (off_t)i * SLOT_STRIDE;
		slots[i].len = lens[i % 4];
		slots[i].nv = 0;
	}

	ctx = mk_ctx(fsz, 16u << 20, fault, su);
	f = t_open(ctx, path, O_RDWR);
	for (op = 0; op < 80; op++) {
		uint64_t r = t_rand_below(&rng, 100);
		int s = (int)t_rand_below(&rng, NSLOT);

		if (r < 55) {
			struct slot *sl = &slots[s];
			bool dsync = t_rand_below(&rng, 4) == 0;
			uint64_t sd = run_seed * 1000 + (uint64_t)op + 1;

			CHECK(sl->nv < MAXV);
			CHECK_EQ(wr(f, NULL, NULL, sl->off, sl->len, sd,
				    WTIO_ATOMIC | (dsync ? WTIO_DSYNC : 0)),
				 (long long)sl->len);
			sl->seed[sl->nv] = sd;
			sl->durable_at[sl->nv] = dsync ?
				wtio_fault_nr_events(fault) : UINT64_MAX;
			sl->nv++;
		} else if (r < 90) {
			/* Write-back data beside the slots (never in them). */
			off_t o = (off_t)s * SLOT_STRIDE + 65536 +
				  (off_t)t_rand_below(&rng, 60000);
			size_t len = 1 + t_rand_below(&rng, 5000);

			CHECK_EQ(wr(f, NULL, NULL, o, len, 7000 + (uint64_t)op,
				    0), (long long)len);
		} else {
			uint64_t at;

			CHECK_OK(wtio_fsync(f));
			at = wtio_fault_nr_events(fault);
			for (i = 0; i < NSLOT; i++) {
				int v;

				for (v = 0; v < slots[i].nv; v++)
					if (slots[i].durable_at[v] > at)
						slots[i].durable_at[v] = at;
			}
		}
	}
	wtio_ctx_crash(ctx);
	nev = wtio_fault_nr_events(fault);

	rfd = open(rpath, O_RDWR);
	CHECK(rfd >= 0);
	for (n = 0; n <= nev; n++) {
		for (seed = 0; seed < 5; seed++) {
			ssize_t got;

			CHECK_OK(ftruncate(rfd, 0));
			CHECK_EQ(pwrite(rfd, init, CR_FILE, 0), CR_FILE);
			CHECK_OK(wtio_fault_replay(fault, path, n, seed, rfd));
			got = pread(rfd, rb, CR_FILE, 0);
			CHECK(got >= (ssize_t)CR_FILE);
			for (i = 0; i < NSLOT; i++) {
				struct slot *sl = &slots[i];
				const uint8_t *have = rb + sl->off;
				int v, which = -2, min_v = -1;

				for (v = 0; v < sl->nv; v++)
					if (sl->durable_at[v] <= n)
						min_v = v;
				if (!memcmp(have, init + sl->off, sl->len))
					which = -1;
				for (v = sl->nv - 1; v >= 0 && which == -2; v--) {
					t_fill(exp, sl->len, sl->seed[v],
					       (uint64_t)sl->off);
					if (!memcmp(have, exp, sl->len))
						which = v;
				}
				CHECKF(which != -2,
				       "torn atomic range [%lld, +%zu) after "
				       "%llu of %llu events, seed %llu",
				       (long long)sl->off, sl->len,
				       (unsigned long long)n,
				       (unsigned long long)nev,
				       (unsigned long long)seed);
				/* An older version than the durable one may
				 * be the same bytes only if seeds collide:
				 * they do not. */
				CHECKF(which >= min_v,
				       "slot %d: version %d after %llu events, "
				       "but version %d was durable", i, which,
				       (unsigned long long)n, min_v);
			}
			replays++;
		}
	}
	close(rfd);
	wtio_fault_destroy(fault);
	printf("  crash/replay folio %uK stripe %u: %llu events, %llu "
	       "replays, %d slots: never torn, never older than durable\n",
	       fsz >> 10, su, (unsigned long long)nev,
	       (unsigned long long)replays, NSLOT);
	free(init);
	free(rb);
	free(exp);
}

static void crash_replay(void)
{
	crash_replay_one(4096, 4096, 1);
	crash_replay_one(65536, 0, 2);
	crash_replay_one(1u << 20, 0, 3);
}

/* ---- part 2f: a backend that cannot pass RWF_ATOMIC ---- */

/* psync, but without WTIO_IO_CAP_ATOMIC (a backend of the test's). */
static struct wtio_io_ops noatomic_ops;

static void backend_without_atomic(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	const char *path = xfs_file("noatomic");
	struct wtio_file *f;
	struct wtio_file_info info;
	struct wtio_stats a, s;
	size_t size = 0;

	noatomic_ops = wtio_io_psync_ops;
	noatomic_ops.name = "psync-noatomic";
	noatomic_ops.caps &= ~WTIO_IO_CAP_ATOMIC;
	wtio_config_init(&cfg);
	cfg.cache_size = 8u << 20;
	CHECK_OK(wtio_ctx_create_io(&cfg, &noatomic_ops, NULL, &ctx));
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_file_info(f, &info));
	CHECKF(info.atomic_unit_max >= 65536, "the image takes untorn "
	       "writes (statx says up to %u)", info.atomic_unit_max);
	CHECK_EQ(wr(f, NULL, &size, 0, 65536, 1, 0), 65536);
	CHECK_OK(wtio_fsync(f));
	a = t_stats(ctx);
	CHECK_EQ(wr(f, NULL, &size, 0, 4096, 2, WTIO_ATOMIC), -EOPNOTSUPP);
	CHECK_EQ(wr(f, NULL, &size, 0, 65536, 2,
		    WTIO_ATOMIC | WTIO_DSYNC | WTIO_WRITETHROUGH), -EOPNOTSUPP);
	zero_length(ctx, f, -EOPNOTSUPP);
	s = t_stats(ctx);
	CHECK_EQ(s.write_ios, a.write_ios);
	CHECK_EQ(s.atomic_writes, 0);
	CHECK_EQ(s.dirty_folios, 0);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("xfs (%s): WTIO_ATOMIC -> -EOPNOTSUPP where the device takes "
	       "it but the backend cannot pass RWF_ATOMIC\n",
	       noatomic_ops.name);
}

static int part_xfs(void)
{
	int ret = xl_setup("atomic", "-d su=64k,sw=4");

	if (ret == XL_SKIP)
		return ret;
	CHECKF(ret == XL_OK, "%s", xl.why);
	printf("part 2a: shapes\n");
	shapes();
	printf("part 2b: real RWF_ATOMIC writes\n");
	real_writes();
	printf("part 2c: one RWF_ATOMIC I/O per atomic write (fault trace)\n");
	trace_checks();
	printf("part 2d: dirty folios around atomic writes\n");
	interplay();
	printf("part 2e: crash and replay\n");
	crash_replay();
	printf("part 2f: a backend without WTIO_IO_CAP_ATOMIC\n");
	backend_without_atomic();
	t_remove_dir_files();
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	return XL_OK;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	if (argc > 1 && !strcmp(argv[1], "xfs")) {
		if (part_xfs() == XL_SKIP)
			t_skip("part 2 (XFS image): %s", xl.why);
	} else {
		printf("part 1: no atomic unit here\n");
		if (!part_unsupported())
			t_skip("part 1: the current directory's filesystem "
			       "takes atomic writes, so -EOPNOTSUPP cannot be "
			       "checked here");
	}
	printf("PASS\n");
	return T_EXIT_PASS;
}
