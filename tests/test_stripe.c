/* SPDX-License-Identifier: MIT */
/*
 * test_stripe.c - stripe-aligned I/O: every I/O wtio builds is either a
 * whole number of aligned full stripes (the stripe WIDTH: unit x data
 * disks) or lies inside one stripe, no write is larger than max_io_size
 * rounded down to whole stripes, and a full stripe is never cut in two.
 *
 * Part 1 (any filesystem): the FAULT backend with a config override
 * stripe_unit 64 KiB and stripe_width 256 KiB (four data disks: the
 * width divides the 1 MiB cap), then 192 KiB (three: it does not, so the
 * cap is 960 KiB), folio sizes 4 KiB, 64 KiB and 1 MiB (larger than the
 * stripe); and 192 KiB with max_io_size 128 KiB (the cap becomes one
 * stripe), folios of 4 and 64 KiB. Workloads: sequential and random write-back writes then fsync,
 * write-through writes (sequential, random), readahead reads on a cold
 * cache, read-modify-write reads: after each, the I/O trace is walked and
 * every READ and WRITE obeys the rule (reads too: the fault backend has no
 * channel, so none is asynchronous readahead, which reads whole windows); the data on disk (or read back) is
 * checked against a shadow copy. Then exact sequences in fresh contexts
 * whose cache is large enough that only fsync writes: one aligned stripe,
 * aligned whole stripes, and a range that starts inside a stripe and is
 * longer than the cap, through write-back and write-through, must go out
 * as exactly the I/Os the rule gives (head to the first boundary, whole
 * stripes up to the cap, the tail apart), and stats stripe_splits grows
 * where the rule ended an I/O that would have gone on.
 *
 * Part 2 ("test_stripe xfs", its own test stripe_xfs; root, loop devices,
 * xfsprogs, else it exits 77 with the printed reason): an XFS image made
 * with "mkfs.xfs -d su=64k,sw=3": wtio_file_info reports 65536/196608
 * from "xfs", and part 1's workloads on a FAULT-backend context without
 * override, on files in the mounted XFS, obey the same rule.
 */
#include "helpers.h"
#include "t_fault.h"
#include "xfs_loop.h"

#define SU 65536u

static uint32_t SW;		/* the stripe width of this round */
static uint32_t MAX_IO;		/* its max_io_size */
static uint64_t CAP;		/* MAX_IO in whole stripes, or one stripe */

static void set_round(uint32_t sw, uint32_t max_io)
{
	SW = sw;
	MAX_IO = max_io;
	CAP = sw > max_io ? sw : max_io / sw * sw;
}

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
	cfg.max_io_size = MAX_IO;
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
	uint64_t reads, writes, max_len, whole;
};

/* Every READ/WRITE in the trace from index `from` is whole aligned
 * stripes or inside one stripe; no WRITE is over CAP. */
static struct tstat check_trace(struct wtio_fault *fault, uint64_t from,
				const char *what)
{
	uint64_t i, n = wtio_fault_nr_ios(fault);
	struct tstat t = { 0 };

	for (i = from; i < n; i++) {
		struct wtio_fault_io io;
		const char *op;
		bool inside, whole;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_FLUSH)
			continue;
		op = io.op == WTIO_FAULT_READ ? "READ" : "WRITE";
		CHECKF(io.len > 0, "%s: I/O %llu has length 0", what,
		       (unsigned long long)i);
		inside = (uint64_t)io.off / SW == (io.off + io.len - 1) / SW;
		whole = io.off % SW == 0 && io.len % SW == 0;
		CHECKF(inside || whole,
		       "%s: %s I/O %llu [%lld, +%llu) crosses a %u KiB stripe "
		       "boundary and is not whole stripes", what, op,
		       (unsigned long long)i, (long long)io.off,
		       (unsigned long long)io.len, SW >> 10);
		CHECKF(io.op == WTIO_FAULT_READ || io.len <= CAP,
		       "%s: WRITE %llu [%lld, +%llu) is over the cap of %llu "
		       "(%u KiB in whole %u KiB stripes)", what,
		       (unsigned long long)i, (long long)io.off,
		       (unsigned long long)io.len, (unsigned long long)CAP,
		       MAX_IO >> 10, SW >> 10);
		if (io.op == WTIO_FAULT_READ)
			t.reads++;
		else
			t.writes++;
		if (whole)
			t.whole++;
		if (io.len > t.max_len)
			t.max_len = io.len;
	}
	return t;
}

static void report(const char *label, uint32_t fsz, const char *what,
		   struct tstat t, uint64_t splits)
{
	printf("%s sw %uK cap %lluK folio %uK %-26s: %4llu reads %4llu "
	       "writes (%llu whole stripes, largest %llu), %llu stripe "
	       "splits\n", label, SW >> 10, (unsigned long long)CAP >> 10,
	       fsz >> 10, what, (unsigned long long)t.reads,
	       (unsigned long long)t.writes, (unsigned long long)t.whole,
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
	/* Each 100000-byte write-through write is its own I/O range, and
	 * some start inside a stripe and go on past its end. (Write-back
	 * here is cut where the flusher's passes end: not predictable.) */
	if (flags)
		CHECKF(b.stripe_splits > a.stripe_splits, "%s: no stripe "
		       "split", what);
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
 * [off, off + len) written at once and fsynced must go out as exactly the
 * I/Os the rule gives: up to the first stripe boundary, then whole
 * stripes, CAP at most, then what is left. A fresh context whose cache is
 * large enough that nothing but fsync writes (no background writeback),
 * and offsets and lengths in whole 64 KiB, so that no block is partial.
 */
static void exact_ios(const char *label, uint32_t fsz,
		      struct wtio_fault *fault, unsigned int flags,
		      off_t off, size_t len)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	const char *path = new_file("exact");
	struct wtio_file *f;
	uint8_t *shadow = t_zalloc(off + len);
	size_t size = 0;
	uint64_t from = wtio_fault_nr_ios(fault), i, n, k = 0, cuts = 0;
	uint64_t pos = (uint64_t)off, end = (uint64_t)off + len;
	struct wtio_stats a, b;
	char what[64];

	t_fault_config(&cfg, fsz, (64u << 20) / fsz);
	cfg.max_io_size = MAX_IO;
	if (!dir) {
		cfg.stripe_unit = SU;
		cfg.stripe_width = SW;
	}
	ctx = t_fault_ctx_create(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	a = t_stats(ctx);
	snprintf(what, sizeof(what), "%zuK at %lldK %s", len >> 10,
		 (long long)off >> 10, flags ? "write-through" : "write-back");
	t_pwrite_shadow(f, shadow, &size, off, len, 77, flags);
	CHECK_OK(wtio_fsync(f));
	b = t_stats(ctx);
	n = wtio_fault_nr_ios(fault);
	for (i = from; i < n; i++) {
		struct wtio_fault_io io;
		uint64_t in = pos % SW, want = end - pos;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_FLUSH)
			continue;
		if (getenv("WTIO_TEST_VERBOSE"))
			printf("  io %llu: op %u [%lld, +%llu) segs %u\n",
			       (unsigned long long)i, io.op, (long long)io.off,
			       (unsigned long long)io.len, io.nr_segs);
		CHECKF(io.op == WTIO_FAULT_WRITE, "%s: unexpected READ", what);
		/* The rule, stated apart from wtio's code. */
		if (in)
			want = want < SW - in ? want : SW - in;
		else if (want >= SW)
			want = (want < CAP ? want : CAP) / SW * SW;
		CHECKF(pos < end && (uint64_t)io.off == pos && io.len == want,
		       "%s: write %llu is [%lld, +%llu), want [%llu, +%llu)",
		       what, (unsigned long long)k, (long long)io.off,
		       (unsigned long long)io.len, (unsigned long long)pos,
		       (unsigned long long)want);
		/* Ended by the rule where the data went on: a head, or
		 * whole stripes ended under the 1 MiB cap. */
		if (pos + want < end && (in || want < MAX_IO))
			cuts++;
		pos += want;
		k++;
	}
	CHECKF(pos == end, "%s: %llu writes end at %llu, want %llu", what,
	       (unsigned long long)k, (unsigned long long)pos,
	       (unsigned long long)end);
	CHECKF(b.stripe_splits - a.stripe_splits == cuts,
	       "%s: %llu stripe splits counted, want %llu", what,
	       (unsigned long long)(b.stripe_splits - a.stripe_splits),
	       (unsigned long long)cuts);
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
	exact_ios(label, fsz, fault, 0, SW, SW);
	exact_ios(label, fsz, fault, 0, 0, 4 * (size_t)SW);
	exact_ios(label, fsz, fault, 0, 128 << 10, (2u << 20) + (64u << 10));
	exact_ios(label, fsz, fault, WTIO_WRITETHROUGH, 0, 1 << 20);
	exact_ios(label, fsz, fault, WTIO_WRITETHROUGH, 64 << 10,
		  (2u << 20) + (128u << 10));
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

/* Stripe widths of four and three data disks of 64 KiB (the second does
 * not divide 1 MiB), and one wider than a smaller max_io_size. */
static const struct {
	uint32_t sw, max_io;
	bool all_folio_sizes;
} rounds[] = {
	{ 4 * SU, 1u << 20, true },
	{ 3 * SU, 1u << 20, true },
	{ 3 * SU, 128u << 10, false },
};

static void part_override(void)
{
	unsigned int r, i;

	for (r = 0; r < sizeof(rounds) / sizeof(rounds[0]); r++) {
		struct wtio_fault *fault = wtio_fault_create();
		struct wtio_ctx *ctx;

		CHECK(fault);
		set_round(rounds[r].sw, rounds[r].max_io);
		ctx = mk_ctx(65536, fault, true);
		check_info("override", ctx, new_file("info"), "config");
		CHECK_OK(wtio_ctx_destroy(ctx));
		wtio_fault_destroy(fault);
		for (i = 0; i < 3; i++)
			if (rounds[r].all_folio_sizes || folio_sizes[i] <= 65536)
				run_folio_size("override", folio_sizes[i]);
	}
}

/* Returns XL_OK when it ran, XL_SKIP (reason in xl.why). */
static int part_xfs(void)
{
	struct wtio_ctx *ctx;
	struct wtio_fault *fault;
	struct wtio_config cfg;
	unsigned int i;
	int ret;

	ret = xl_setup("stripe", "-d su=64k,sw=3");
	set_round(3 * SU, 1u << 20);
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
