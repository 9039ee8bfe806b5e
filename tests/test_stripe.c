/* SPDX-License-Identifier: MIT */
/*
 * test_stripe.c - stripe-aligned I/O: no I/O wtio builds crosses a stripe
 * unit boundary.
 *
 * Part 1 (any filesystem): the FAULT backend with a config override
 * stripe_unit 64 KiB / stripe_width 256 KiB, folio sizes 4 KiB, 64 KiB
 * and 1 MiB (larger than the stripe unit). Workloads: sequential and
 * random write-back writes then fsync, one whole-stripe write (must go
 * out as exactly four aligned 64 KiB writes), write-through writes
 * (sequential, one aligned 1 MiB, random), readahead reads on a cold
 * cache, read-modify-write reads. After each, the I/O trace is walked:
 * every READ and WRITE lies within one 64 KiB unit; the data on disk (or
 * read back) is checked against a shadow copy; stats stripe_splits grew
 * where merging would have crossed a boundary.
 *
 * Part 2 ("test_stripe xfs", its own test stripe_xfs; root, loop devices,
 * xfsprogs, else it exits 77 with the printed reason): an XFS image made with "mkfs.xfs -d su=64k,sw=4":
 * wtio_file_info reports 65536/262144 from "xfs", and part 1's workloads
 * on a FAULT-backend context without override, on files in the mounted
 * XFS, obey the same rule.
 */
#include "helpers.h"
#include "t_fault.h"
#include "xfs_loop.h"

#define SU 65536u
#define SW 262144u

static const char *dir;		/* NULL: current directory */
static const char *new_file(const char *tag)
{
	if (!dir)
		return t_tmpfile(tag);
	return t_dir_file(dir, tag);
}

static struct wtio_ctx *mk_ctx(uint32_t fsz, struct wtio_fault *fault,
			       bool override)
{
	struct wtio_config cfg;
	uint64_t nr = (4u << 20) / fsz;

	if (nr < 32)
		nr = 32;
	t_fault_config(&cfg, fsz, nr);
	cfg.readahead_max = 4 * fsz > 512 * 1024 ? 4 * fsz : 512 * 1024;
	if (cfg.readahead_max > cfg.cache_size / 4)
		cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	if (override) {
		cfg.stripe_unit = SU;
		cfg.stripe_width = SW;
	}
	return t_fault_ctx_create(&cfg, fault);
}

struct tstat {
	uint64_t reads, writes, max_len;
};

/* Every READ/WRITE in the trace from index `from` stays inside one stripe
 * unit. */
static struct tstat check_trace(struct wtio_fault *fault, uint64_t from,
				const char *what)
{
	uint64_t i, n = wtio_fault_nr_ios(fault);
	struct tstat t = { 0 };

	for (i = from; i < n; i++) {
		struct wtio_fault_io io;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_FLUSH)
			continue;
		CHECKF(io.len > 0, "%s: I/O %llu has length 0", what,
		       (unsigned long long)i);
		CHECKF((uint64_t)io.off / SU == (io.off + io.len - 1) / SU,
		       "%s: %s I/O %llu [%lld, +%llu) crosses a 64 KiB stripe "
		       "unit boundary", what,
		       io.op == WTIO_FAULT_READ ? "READ" : "WRITE",
		       (unsigned long long)i, (long long)io.off,
		       (unsigned long long)io.len);
		if (io.op == WTIO_FAULT_READ)
			t.reads++;
		else
			t.writes++;
		if (io.len > t.max_len)
			t.max_len = io.len;
	}
	return t;
}

static void report(const char *label, uint32_t fsz, const char *what,
		   struct tstat t, uint64_t splits)
{
	printf("%s folio %uK %-26s: %4llu reads %4llu writes, none crosses "
	       "64K (largest %llu), %llu stripe splits\n", label, fsz >> 10,
	       what, (unsigned long long)t.reads, (unsigned long long)t.writes,
	       (unsigned long long)t.max_len, (unsigned long long)splits);
}

#define FILE_CAP (4u << 20)
#define FILE_LEN ((3u << 20) + 12345)

/* Sequential writes of odd-sized chunks, then random ones, through
 * write-back (flags 0) or write-through. Returns the file's path. */
static const char *seq_and_random(const char *label, uint32_t fsz,
				  struct wtio_fault *fault,
				  struct wtio_ctx *ctx, unsigned int flags,
				  uint8_t *shadow, size_t *size)
{
	const char *mode = flags ? "write-through" : "write-back";
	const char *path = new_file(flags ? "wt" : "wb");
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	struct t_rng rng = { fsz * 7 + flags };
	struct wtio_stats a, b;
	uint64_t from;
	char what[64];
	size_t off;
	int i;

	memset(shadow, 0, FILE_CAP);
	*size = 0;
	from = wtio_fault_nr_ios(fault);
	a = t_stats(ctx);
	for (off = 0; off < FILE_LEN; off += 100000) {
		size_t len = FILE_LEN - off < 100000 ? FILE_LEN - off : 100000;

		t_pwrite_shadow(f, shadow, size, (off_t)off, len, 1 + off,
				flags);
	}
	CHECK_OK(wtio_fsync(f));
	b = t_stats(ctx);
	snprintf(what, sizeof(what), "sequential %s", mode);
	report(label, fsz, what, check_trace(fault, from, what),
	       b.stripe_splits - a.stripe_splits);
	CHECKF(b.stripe_splits > a.stripe_splits, "%s: no stripe split", what);
	t_check_disk_equals(path, shadow, *size);

	from = wtio_fault_nr_ios(fault);
	a = t_stats(ctx);
	for (i = 0; i < 200; i++) {
		size_t len = 1 + t_rand_below(&rng, 70000);
		off_t o = (off_t)t_rand_below(&rng, FILE_LEN + 100000);

		if ((size_t)o + len > FILE_CAP)
			len = FILE_CAP - (size_t)o;
		t_pwrite_shadow(f, shadow, size, o, len, 1000 + (uint64_t)i,
				flags);
	}
	CHECK_OK(wtio_fsync(f));
	b = t_stats(ctx);
	snprintf(what, sizeof(what), "random %s", mode);
	report(label, fsz, what, check_trace(fault, from, what),
	       b.stripe_splits - a.stripe_splits);
	t_check_disk_equals(path, shadow, *size);
	t_check_wtio_range(f, shadow, *size, 0, *size);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, *size);
	return path;
}

/*
 * Aligned whole stripes go out as exactly the aligned stripe units. A
 * fresh context: in one that throttled writers before, a flusher may still
 * owe a kick and write part of the range beside fsync, which cuts the
 * I/Os differently (still never across a unit).
 */
static void whole_stripes(const char *label, uint32_t fsz,
			  struct wtio_fault *fault, unsigned int flags,
			  off_t off, size_t len)
{
	struct wtio_ctx *ctx = mk_ctx(fsz, fault, !dir);
	const char *path = new_file("stripes");
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	uint8_t *shadow = t_zalloc(off + len);
	size_t size = 0;
	uint64_t from = wtio_fault_nr_ios(fault), i, n, k = 0;
	struct wtio_stats a = t_stats(ctx), b;
	char what[64];

	snprintf(what, sizeof(what), "%zuK aligned %s", len >> 10,
		 flags ? "write-through" : "write-back");
	t_pwrite_shadow(f, shadow, &size, off, len, 77, flags);
	CHECK_OK(wtio_fsync(f));
	b = t_stats(ctx);
	n = wtio_fault_nr_ios(fault);
	for (i = from; i < n; i++) {
		struct wtio_fault_io io;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_FLUSH)
			continue;
		if (getenv("WTIO_TEST_VERBOSE"))
			printf("  io %llu: op %u [%lld, +%llu) segs %u\n",
			       (unsigned long long)i, io.op, (long long)io.off,
			       (unsigned long long)io.len, io.nr_segs);
		CHECKF(io.op == WTIO_FAULT_WRITE, "%s: unexpected READ", what);
		CHECKF(io.off == off + (int64_t)(k * SU) && io.len == SU,
		       "%s: write %llu is [%lld, +%llu), want [%lld, +%u)",
		       what, (unsigned long long)k, (long long)io.off,
		       (unsigned long long)io.len,
		       (long long)(off + (int64_t)(k * SU)), SU);
		k++;
	}
	CHECKF(k == len / SU, "%s: %llu writes, want %zu", what,
	       (unsigned long long)k, len / SU);
	CHECKF(b.stripe_splits > a.stripe_splits, "%s: no split counted", what);
	report(label, fsz, what, check_trace(fault, from, what),
	       b.stripe_splits - a.stripe_splits);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, shadow, size);
	free(shadow);
}

/* Cold cache: sequential reads (readahead), then unaligned writes
 * (read-modify-write). */
static void cold_reads(const char *label, uint32_t fsz,
		       struct wtio_fault *fault, const char *path,
		       uint8_t *shadow, size_t size)
{
	struct wtio_ctx *ctx = mk_ctx(fsz, fault, !dir);
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	struct t_rng rng = { fsz };
	uint8_t *buf = t_malloc(32768);
	struct wtio_stats a, b;
	size_t off, sz = size;
	uint64_t from;
	int i;

	from = wtio_fault_nr_ios(fault);
	a = t_stats(ctx);
	for (off = 0; off < size; off += 32768) {
		size_t want = size - off < 32768 ? size - off : 32768;

		CHECK_EQ(wtio_pread(f, buf, 32768, (off_t)off, 0),
			 (long long)want);
		CHECKF(t_memdiff(buf, shadow + off, want) < 0,
		       "readahead data wrong at %zu", off);
	}
	b = t_stats(ctx);
	report(label, fsz, "sequential readahead reads",
	       check_trace(fault, from, "readahead"),
	       b.stripe_splits - a.stripe_splits);
	CHECKF(b.readahead_folios > a.readahead_folios, "no readahead");
	CHECKF(b.stripe_splits > a.stripe_splits, "readahead: no split");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));

	/* Cold again: partial-block writes read their blocks first. */
	ctx = mk_ctx(fsz, fault, !dir);
	f = t_open(ctx, path, O_RDWR);
	from = wtio_fault_nr_ios(fault);
	a = t_stats(ctx);
	for (i = 0; i < 100; i++) {
		size_t len = 1 + t_rand_below(&rng, 3000);
		off_t o = (off_t)t_rand_below(&rng, size - len);

		t_pwrite_shadow(f, shadow, &sz, o, len, 5000 + (uint64_t)i, 0);
	}
	CHECK_OK(wtio_fsync(f));
	b = t_stats(ctx);
	CHECKF(b.rmw_reads > a.rmw_reads, "no RMW reads");
	report(label, fsz, "RMW reads + write-back",
	       check_trace(fault, from, "rmw"),
	       b.stripe_splits - a.stripe_splits);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, sz);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
}

static void run_folio_size(const char *label, uint32_t fsz)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_ctx *ctx;
	uint8_t *shadow = t_malloc(FILE_CAP);
	const char *path;
	size_t size;

	CHECK(fault);
	whole_stripes(label, fsz, fault, 0, SW, SW);
	whole_stripes(label, fsz, fault, WTIO_WRITETHROUGH, 0, 1 << 20);
	ctx = mk_ctx(fsz, fault, !dir);
	path = seq_and_random(label, fsz, fault, ctx, 0, shadow, &size);
	seq_and_random(label, fsz, fault, ctx, WTIO_WRITETHROUGH, shadow,
		       &size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	/* The write-back file again, shadow rebuilt from the disk. */
	{
		size_t dlen;
		uint8_t *d = t_read_disk(path, &dlen);

		memcpy(shadow, d, dlen);
		size = dlen;
		free(d);
	}
	cold_reads(label, fsz, fault, path, shadow, size);
	wtio_fault_destroy(fault);
	free(shadow);
}

static void check_info(const char *label, struct wtio_ctx *ctx,
		       const char *path, const char *source)
{
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	struct wtio_file_info info;

	CHECK_OK(wtio_file_info(f, &info));
	printf("%s: %s: block %u, stripe %u/%u from \"%s\"\n", label,
	       wtio_ctx_backend_name(ctx), info.block_size, info.stripe_unit,
	       info.stripe_width, info.stripe_source);
	CHECK_EQ(info.stripe_unit, SU);
	CHECK_EQ(info.stripe_width, SW);
	CHECKF(!strcmp(info.stripe_source, source), "source \"%s\", want \"%s\"",
	       info.stripe_source, source);
	CHECK_OK(wtio_close(f));
}

static const uint32_t folio_sizes[] = { 4096, 65536, 1u << 20 };

static void part_override(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_ctx *ctx;
	unsigned int i;

	CHECK(fault);
	ctx = mk_ctx(65536, fault, true);
	check_info("override", ctx, new_file("info"), "config");
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	for (i = 0; i < 3; i++)
		run_folio_size("override", folio_sizes[i]);
}

/* Returns XL_OK when it ran, XL_SKIP (reason in xl.why). */
static int part_xfs(void)
{
	struct wtio_ctx *ctx;
	struct wtio_fault *fault;
	struct wtio_config cfg;
	unsigned int i;
	int ret;

	ret = xl_setup("stripe", "-d su=64k,sw=4");
	if (ret == XL_SKIP)
		return ret;
	CHECKF(ret == XL_OK, "%s", xl.why);
	dir = xl.mnt;

	wtio_config_init(&cfg);
	cfg.cache_size = 4u << 20;
	ctx = t_ctx_create(&cfg);
	check_info("xfs", ctx, new_file("info"), "xfs");
	CHECK_OK(wtio_ctx_destroy(ctx));
	fault = wtio_fault_create();
	CHECK(fault);
	ctx = mk_ctx(4096, fault, false);
	check_info("xfs", ctx, new_file("info"), "xfs");
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);

	for (i = 0; i < 3; i++)
		run_folio_size("xfs", folio_sizes[i]);
	t_remove_dir_files();
	dir = NULL;
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	return XL_OK;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "xfs")) {
		if (part_xfs() == XL_SKIP)
			t_skip("striped XFS image: %s", xl.why);
	} else {
		CHECKF(argc == 1, "usage: %s [xfs]", argv[0]);
		t_require_odirect();
		part_override();
	}
	printf("PASS\n");
	return T_EXIT_PASS;
}
