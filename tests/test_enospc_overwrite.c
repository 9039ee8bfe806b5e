/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_overwrite.c - on a full XFS, what needs no new space is
 * accepted, and a refusal is not reported twice:
 *
 *  - an overwrite of blocks the file already has succeeds in every mode,
 *    as the kernel's buffered write and O_DIRECT accept it: blocks wtio
 *    itself wrote through earlier in the same context, and blocks past a
 *    hole of a file that existed before the open. (XFS refuses to
 *    fallocate blocks a file already has when the filesystem is nearly
 *    full: it reserves for the worst case before it looks; wtio's space
 *    reservation used to take that ENOSPC for the write's.)
 *    Blocks past the backing file's size (another writer's speculative
 *    preallocation) are not counted: XFS takes them back on ENOSPC, and
 *    a write counted on them was lost (case_past_others_eof).
 *  - a write-through write that runs out of space part way returns the
 *    part on disk (a short count) and leaves the size there, and changes
 *    nothing past it (past EOF, over a hole);
 *  - an untorn write refused with ENOSPC is not reported again by the
 *    next fsync;
 *  - a write-through write refused with ENOSPC, whose I/O also carried
 *    an earlier write-back write's dirty block of the same folio, leaves
 *    that block dirty; the next fsync writes it and returns 0, since
 *    every acknowledged byte is then on disk (it used to return ENOSPC).
 *
 * Each case first shows the filesystem full (a write into a hole is
 * refused), so that none can pass on a filesystem with room.
 */
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>

#include "helpers.h"
#include "t_fill.h"

#define IMG_SIZE	(128ll << 20)
#define OVER_LEN	3000

/* The file a case starts from: LEN bytes of BUF, on disk. */
static void write_old_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, buf, len, 0), (long long)len);
	CHECK(fsync(fd) == 0);
	close(fd);
}

/* The filesystem is full: a write into a hole of a new file is refused.
 * Without this, the cases below could pass on a filesystem with room. */
static void check_full(struct wtio_ctx *ctx, unsigned int flags)
{
	char p[256];
	struct wtio_file *h;
	uint8_t buf[8192];
	ssize_t n;

	snprintf(p, sizeof(p), "%s", t_fill_probe());
	h = t_open(ctx, p, O_RDWR);
	memset(buf, 'h', sizeof(buf));
	n = wtio_pwrite(h, buf, sizeof(buf), 1 << 20, flags);
	CHECKF(n == -ENOSPC, "the filesystem is not full: a write of 8 KiB into a hole returned %zd",
	       n);
	CHECK_OK(wtio_close(h));
}

/* Is [off, off + len) allocated (written or not) in fd's file? */
static bool allocated_at(int fd, off_t off, size_t len)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent e[8];
	} b;
	uint64_t end = (uint64_t)off + len;

	memset(&b, 0, sizeof(b));
	b.fm.fm_start = (uint64_t)off;
	b.fm.fm_length = len;
	b.fm.fm_extent_count = 8;
	if (ioctl(fd, FS_IOC_FIEMAP, &b) != 0)
		return false;
	for (unsigned int i = 0; i < b.fm.fm_mapped_extents; i++) {
		struct fiemap_extent *e = &b.e[i];

		if (e->fe_logical <= (uint64_t)off &&
		    e->fe_logical + e->fe_length >= end &&
		    !(e->fe_flags & (FIEMAP_EXTENT_DELALLOC |
				     FIEMAP_EXTENT_UNKNOWN)))
			return true;
	}
	return false;
}

static void check_disk(const char *path, off_t off, const uint8_t *want,
		       size_t len, const char *what)
{
	uint8_t *got = t_malloc(len);
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, got, len, off), (long long)len);
	close(fd);
	CHECKF(memcmp(got, want, len) == 0, "%s: the disk at %lld differs",
	       what, (long long)off);
	free(got);
}

/* Overwrite OVER_LEN bytes at each of offs[] with flags; every one must
 * be accepted whole, fsync must return 0, and the disk hold them. */
static void overwrite_all(struct wtio_file *f, const char *path,
			  const off_t *offs, int n, unsigned int flags,
			  const char *what)
{
	uint8_t buf[OVER_LEN];
	ssize_t r;
	int i, ret;

	for (i = 0; i < n; i++) {
		memset(buf, 'a' + (int)((flags + (unsigned)i) % 26), sizeof(buf));
		r = wtio_pwrite(f, buf, sizeof(buf), offs[i], flags);
		CHECKF(r == OVER_LEN,
		       "%s, flags %#x: overwrite of allocated bytes at %lld on a full fs: %zd (%s)",
		       what, flags, (long long)offs[i], r,
		       r < 0 ? strerror((int)-r) : "short");
	}
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "%s, flags %#x: fsync: %d (%s)", what, flags, ret,
	       strerror(-ret));
	for (i = 0; i < n; i++) {
		memset(buf, 'a' + (int)((flags + (unsigned)i) % 26), sizeof(buf));
		check_disk(path, offs[i], buf, sizeof(buf), what);
	}
}

static const unsigned int modes[] = {
	0, WTIO_DONTCACHE, WTIO_ADAPTIVE, WTIO_WRITETHROUGH,
	WTIO_WRITETHROUGH | WTIO_NOSERIAL, WTIO_DSYNC,
};
#define NR_MODES (sizeof(modes) / sizeof(modes[0]))

/* A file extended through wtio (write-through, in this context), then
 * the filesystem filled: its blocks are overwritten in every mode. */
static void case_written_through(void)
{
	static const off_t offs[] = { 5000, 105003, 400000, 1000000 };
	char path[256];
	struct wtio_ctx *ctx = t_ctx(4096, 64, WTIO_BACKEND_AUTO);
	struct wtio_file *f;
	uint8_t *buf = t_malloc(256 << 10);
	size_t m;
	int i;

	xl_path(path, sizeof(path), "through.bin");
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	memset(buf, 'A', 256 << 10);
	/* A block at a time, each extending the file: each reserves its
	 * block and keeps a chunk ahead of the file's end, which the
	 * close gives back (else the first refusal on the full fs would,
	 * and check_full would find room); reopened, the file's blocks
	 * are found in its map. */
	for (i = 0; i < 256; i++)
		CHECK_EQ(wtio_pwrite(f, buf, 4096, (off_t)i << 12,
				     WTIO_WRITETHROUGH), 4096);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	f = t_open(ctx, path, O_RDWR);
	t_fill_fs(4096, -1);
	check_full(ctx, 0);
	for (m = 0; m < NR_MODES; m++)
		overwrite_all(f, path, offs, 4, modes[m], "written through");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_unfill_fs();
	unlink(path);
	free(buf);
	printf("  blocks written through earlier, overwritten on a full fs in %zu modes: ok\n",
	       NR_MODES);
}

/* Blocks wtio's own reservation allocated past the backing file's size
 * (write-back data not written back yet), after the writer moved on to
 * another part of the file: an overwrite of them needs no space, in
 * every mode. It used to be refused (-ENOSPC): the reservation tracks
 * one range, the second write had moved it, XFS refused the fallocate
 * over the first range's blocks and the map was not looked at past the
 * backing file's size, where XFS may trim blocks - but not those of a
 * file with persistent preallocation, as our fallocate makes it. */
static void case_own_past_size(void)
{
	static const off_t offs[] = { 5000, 30000 };
	static uint8_t buf[65536];
	char path[256], tpath[256];
	size_t m;

	xl_path(path, sizeof(path), "own.bin");
	xl_path(tpath, sizeof(tpath), "trim-probe");
	for (m = 0; m < NR_MODES; m++) {
		struct wtio_ctx *ctx = t_ctx(4096, 1024, WTIO_BACKEND_AUTO);
		struct wtio_file *f, *t;

		f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
		memset(buf, 'A', sizeof(buf));
		CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf), 0, 0),
			 (long long)sizeof(buf));
		CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf), 10 << 20, 0),
			 (long long)sizeof(buf));
		t = t_open(ctx, tpath, O_RDWR | O_CREAT | O_TRUNC);
		t_fill_fs(4096, -1);
		/* A write that finds no room makes wtio give back what it
		 * reserved ahead for other files (past the first write's
		 * 64 KiB, say) and try again: whether this one then fits or
		 * not, a second fill takes what came back. */
		(void)wtio_pwrite(t, buf, 4096, 0, 0);
		CHECK_OK(wtio_close(t));
		t_fill_fs(4096, -1);
		check_full(ctx, 0);
		overwrite_all(f, path, offs, 2, modes[m],
			      "reserved by wtio past the disk's size");
		check_disk(path, 10 << 20, buf, sizeof(buf),
			   "the write-back write the writer moved on to");
		CHECK_OK(wtio_close(f));
		CHECK_OK(wtio_ctx_destroy(ctx));
		t_unfill_fs();
		unlink(path);
		unlink(tpath);
	}
	printf("  blocks wtio reserved past the disk's size, overwritten on a full fs in %zu modes: ok\n",
	       NR_MODES);
}

/* A sparse file written by the kernel before the open: its blocks past
 * the first hole are overwritten in every mode. */
static void case_past_hole(void)
{
	static const off_t offs[] = { 5000, 1100000, 1500000, 2000000 };
	char path[256];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t *buf = t_malloc(1 << 20);
	size_t m;
	int fd;

	xl_path(path, sizeof(path), "sparse.bin");
	memset(buf, 'S', 1 << 20);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, buf, 64 << 10, 0), 64 << 10);
	CHECK_EQ(pwrite(fd, buf, 1 << 20, 1 << 20), 1 << 20);
	CHECK(fsync(fd) == 0);
	close(fd);
	t_fill_fs(4096, -1);
	for (m = 0; m < NR_MODES; m++) {
		/* A context per mode: each finds the file anew (its
		 * reservation state starts at its first write). */
		ctx = t_ctx(4096, 64, WTIO_BACKEND_AUTO);
		if (m == 0)
			check_full(ctx, 0);
		f = t_open(ctx, path, O_RDWR);
		overwrite_all(f, path, offs, 4, modes[m], "past a hole");
		CHECK_OK(wtio_close(f));
		CHECK_OK(wtio_ctx_destroy(ctx));
	}
	t_unfill_fs();
	unlink(path);
	free(buf);
	printf("  blocks past a hole of an existing file, overwritten on a full fs in %zu modes: ok\n",
	       NR_MODES);
}

/* 16 KiB folios: a write-back write dirties block 0 of a folio, a
 * write-through write into the folio's hole at 4096 is refused; its I/O
 * carried block 0 too. fsync writes block 0 and has nothing to report. */
static void case_fsync_after_refusal(unsigned int wt_flags)
{
	char path[256];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t buf[4096], b100[100];
	ssize_t n;
	int ret;

	xl_path(path, sizeof(path), "fsync.bin");
	memset(buf, 'A', sizeof(buf));
	write_old_file(path, buf, sizeof(buf));
	t_fill_fs(4096, -1);
	ctx = t_ctx(16384, 64, WTIO_BACKEND_AUTO);
	check_full(ctx, 0);
	f = t_open(ctx, path, O_RDWR);
	memset(b100, 'B', sizeof(b100));
	CHECK_EQ(wtio_pwrite(f, b100, sizeof(b100), 0, 0), (long long)sizeof(b100));
	memset(b100, 'C', sizeof(b100));
	n = wtio_pwrite(f, b100, sizeof(b100), 4096, wt_flags);
	CHECKF(n == -ENOSPC, "flags %#x: a write into the hole at 4096 on a full fs: %zd",
	       wt_flags, n);
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "flags %#x: fsync after the refused write: %d (%s), though the write-back data is on disk",
	       wt_flags, ret, strerror(-ret));
	memset(b100, 'B', sizeof(b100));
	check_disk(path, 0, b100, sizeof(b100), "the write-back write");
	check_disk(path, 100, buf + 100, sizeof(buf) - 100, "the rest of block 0");
	CHECK_EQ(wtio_fsync(f), 0);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_unfill_fs();
	unlink(path);
	printf("  flags %#x refused, the dirty block it carried written by fsync, which returns 0: ok\n",
	       wt_flags);
}

/* A write-through write past the end of an allocated file on a full fs:
 * its I/Os inside the file (1 MiB each, the file's end on a boundary)
 * succeed, those past it find no space. The write returns the part on
 * disk, as the kernel's buffered write returns what it copied, and the
 * size stays there; fsync returns 0. It used to return -ENOSPC with that
 * part written, in the cache and on disk. (An I/O that straddles the
 * backing file's end fails whole although XFS wrote the part inside:
 * the count then stops before it.) */
static void case_wt_cut_short(unsigned int wt_flags)
{
	static const int64_t have = 4 << 20, want = 6 << 20;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t *buf = t_malloc((size_t)want);
	char path[256];
	ssize_t n;
	int ret;

	xl_path(path, sizeof(path), "wt-short.bin");
	memset(buf, 'o', (size_t)want);
	write_old_file(path, buf, (size_t)have);
	ctx = t_ctx(4096, 2048, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	t_fill_fs(4096, -1);
	check_full(ctx, 0);
	memset(buf, 'n', (size_t)want);
	n = wtio_pwrite(f, buf, (size_t)want, 0, wt_flags);
	CHECKF(n == have, "flags %#x: a write-through write of %lld bytes over a file of %lld on a full fs: %zd (%s)",
	       wt_flags, (long long)want, (long long)have, n,
	       n < 0 ? strerror((int)-n) : "count");
	CHECK_EQ(wtio_file_size(f), have);
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "flags %#x: fsync after the write cut short: %d",
	       wt_flags, ret);
	CHECK_EQ(t_disk_size(path), have);
	check_disk(path, 0, buf, (size_t)have, "the part of a write cut short");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_unfill_fs();
	unlink(path);
	free(buf);
	printf("  flags %#x: a write-through write past a full fs's room cut short at what is on disk: ok\n",
	       wt_flags);
}

/* Writes on a full fs whose range needs new space part way, after bytes
 * that need none. Whatever one returns, nothing past the count changed:
 * the disk and the cache hold the old file with the count's bytes
 * written, the size is the old one or the count's end, and fsync
 * returns 0. */
struct past_case {
	const char *name;
	uint32_t folio;		/* 512 KiB: blocks of ours of 8 KiB */
	int64_t old_size;
	int64_t hole, hole_end;	/* a hole the kernel left, or none */
	off_t off;
	size_t len;
	int64_t min_end;	/* the count reaches it at least (0: a
				 * refusal is right too) */
};

static const struct past_case past_cases[] = {
	/* The write-through I/O straddles the backing file's end: the
	 * kernel fails it whole although it wrote its first part (wtio
	 * returned -ENOSPC with 95000 new bytes on disk). */
	{ "past EOF", 4096, 100000, 0, 0, 5000, 6 << 20, 100000 },
	/* Over a hole between two runs of data: the I/Os past the hole
	 * were written although the count stops at it. */
	{ "over a hole", 4096, 3 << 20, 1 << 20, 2 << 20, 512 << 10, 2 << 20,
	  1 << 20 },
	/* One block of ours (8 KiB) over an allocated 4 KiB and a hole:
	 * a "one-block" write that is two of the filesystem's (was
	 * -ENOSPC with the first 4 KiB new on disk). */
	{ "one big block over a hole", 512 << 10, 8192, 4096, 8192, 0, 8192,
	  0 },
	/* The file's blocks end inside one of ours (295000 bytes: 4 KiB
	 * blocks to 299008, ours 8 KiB): the count stops there, the new
	 * end, whose block's I/O stops at its filesystem block (first cut
	 * at 299008 with the block written whole - write-through: -ENOSPC
	 * with the part new on disk; write-back: that block's write-back
	 * failed, fsync ENOSPC, acknowledged bytes lost; then cut at our
	 * block before, 294912). */
	{ "allocation ending inside a big block", 512 << 10, 295000, 0, 0,
	  290364, 79473, 299008 },
	/* 1 MiB folios: blocks of ours of 16 KiB over a 100-byte file (one
	 * 4 KiB block allocated). The kernel accepts an overwrite of its
	 * bytes, and an append inside that block, with no new space; wtio
	 * refused both (-ENOSPC): the end's block was written whole. */
	{ "overwrite at the end inside a big block", 1 << 20, 100, 0, 0, 0,
	  100, 100 },
	{ "append inside the end's filesystem block", 1 << 20, 100, 0, 0, 100,
	  3000, 3100 },
};

static void case_nothing_past(unsigned int flags, const struct past_case *c)
{
	const size_t img_len = 8 << 20;
	int64_t size_exp;
	uint8_t *buf = t_malloc(c->len), *img = t_zalloc(img_len);
	uint8_t *got = t_malloc(img_len);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256];
	ssize_t n;
	int fd, ret;

	xl_path(path, sizeof(path), "past.bin");
	memset(img, 'o', (size_t)c->old_size);
	if (c->hole_end > c->hole)
		memset(img + c->hole, 0, (size_t)(c->hole_end - c->hole));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (c->hole_end > c->hole) {
		CHECK_EQ(pwrite(fd, img, (size_t)c->hole, 0), c->hole);
		if (c->old_size > c->hole_end)
			CHECK_EQ(pwrite(fd, img + c->hole_end,
					(size_t)(c->old_size - c->hole_end),
					c->hole_end), c->old_size - c->hole_end);
		CHECK(ftruncate(fd, c->old_size) == 0);
	} else {
		CHECK_EQ(pwrite(fd, img, (size_t)c->old_size, 0), c->old_size);
	}
	CHECK(fsync(fd) == 0);
	close(fd);
	ctx = t_ctx(c->folio, (64 << 20) / c->folio, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	t_fill_fs(4096, -1);
	check_full(ctx, 0);
	memset(buf, 'n', c->len);
	n = wtio_pwrite(f, buf, c->len, c->off, flags);
	CHECKF(c->min_end ? n >= c->min_end - c->off : n >= 0 || n == -ENOSPC,
	       "flags %#x, %s: a write of %zu at %lld on a full fs returned %zd (%s); the first %lld bytes need no new space",
	       flags, c->name, c->len, (long long)c->off, n,
	       n < 0 ? strerror((int)-n) : "count",
	       (long long)(c->min_end - c->off));
	if (n > 0)
		memset(img + c->off, 'n', (size_t)n);
	size_exp = n > 0 && c->off + n > c->old_size ? c->off + n :
						       c->old_size;
	CHECK_EQ(wtio_file_size(f), size_exp);
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "flags %#x, %s: fsync after a write of %zd: %d (%s)",
	       flags, c->name, n, ret, strerror(-ret));
	CHECK_EQ(wtio_pread(f, got, img_len, 0, 0), size_exp);
	CHECKF(memcmp(got, img, (size_t)size_exp) == 0,
	       "flags %#x, %s: the cache differs from the old file with the %zd bytes counted written",
	       flags, c->name, n);
	CHECK_EQ(t_disk_size(path), size_exp);
	check_disk(path, 0, img, (size_t)size_exp,
		   "the old file with the count's bytes written");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_unfill_fs();
	unlink(path);
	free(buf);
	free(img);
	free(got);
	printf("  flags %#x: a write %s on a full fs: %zd, nothing past it: ok\n",
	       flags, c->name, n);
}

/*
 * 1 MiB folios (blocks of ours of 16 KiB): a write-back write dirties a
 * 100-byte file's bytes, which needs no new space (the end's block is
 * written to its 4 KiB filesystem block only). Then the size moves past
 * that block, by a truncate on the full filesystem or by a write further
 * on before it filled: the dirty block is now written further, and must
 * find its space. fsync returns 0 and the disk holds every byte.
 */
static void case_end_block_grows(bool by_truncate)
{
	static uint8_t far[4096];
	const int64_t far_off = 256 << 10, new_size = 1 << 20;
	uint8_t *img = t_zalloc((size_t)new_size);
	uint8_t *got = t_malloc((size_t)new_size);
	const char *what = by_truncate ? "a truncate on the full fs" :
					 "a write further on, then the fs filled";
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256];
	int64_t size_exp;
	int ret;

	xl_path(path, sizeof(path), "grow.bin");
	memset(img, 'o', 100);
	write_old_file(path, img, 100);
	ctx = t_ctx(1 << 20, 64, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	/* On the full filesystem, so that nothing is reserved past the
	 * end's filesystem block (with room, the write reserves ahead). */
	t_fill_fs(4096, -1);
	check_full(ctx, 0);
	memset(img, 'n', 60);
	CHECK_EQ(wtio_pwrite(f, img, 60, 0, 0), 60);
	if (by_truncate) {
		CHECK_OK(wtio_ftruncate(f, new_size));
		size_exp = new_size;
	} else {
		t_unfill_fs();
		memset(far, 'f', sizeof(far));
		memcpy(img + far_off, far, sizeof(far));
		CHECK_EQ(wtio_pwrite(f, far, sizeof(far), far_off, 0),
			 (long long)sizeof(far));
		size_exp = far_off + (int64_t)sizeof(far);
		t_fill_fs(4096, -1);
		check_full(ctx, 0);
	}
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "%s: fsync: %d (%s)", what, ret, strerror(-ret));
	CHECK_EQ(wtio_file_size(f), size_exp);
	CHECK_EQ(t_disk_size(path), size_exp);
	CHECK_EQ(wtio_pread(f, got, (size_t)size_exp, 0, 0), size_exp);
	CHECKF(memcmp(got, img, (size_t)size_exp) == 0,
	       "%s: the cache differs", what);
	check_disk(path, 0, img, (size_t)size_exp, what);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_unfill_fs();
	unlink(path);
	free(img);
	free(got);
	printf("  a dirty end block of 16 KiB with 4 KiB of space, then %s: fsync 0, every byte on disk: ok\n",
	       what);
}

/*
 * 1 MiB folios again, a 100-byte file, the filesystem filled and then
 * `room` bytes freed: a write of alen at 16 KiB (past the end's block of
 * ours) needs alen, as the kernel's, which accepts both rows below. The
 * end's block, clean (overwritten, then fsync) or dirty (overwritten),
 * needs nothing more: a clean one is never written whole, a dirty one is
 * written back at the old size first. Reserving the block's rest
 * instead (the first version of the end's trim) took the room the write
 * needed: -ENOSPC in the first two rows. In the third, the overwrite
 * reserved ahead of appends, to the end of its block: -ENOSPC (also
 * before the end's trim). from_empty: the file starts empty and wtio
 * appends its 100 bytes, reserving ahead to the end of its block; the
 * write past it finds no room until that block's rest goes back, as
 * XFS gives back its speculative preallocation (before: -ENOSPC). Last
 * close leaves the file no more blocks than the kernel's.
 */
static void case_write_past_end_block(bool from_empty, bool clean,
				      int64_t room, size_t alen)
{
	struct stat st;
	static uint8_t buf[16384];
	uint8_t img[100];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256], p[256];
	ssize_t n;
	int fd, ret;

	xl_path(path, sizeof(path), "past-end.bin");
	memset(img, 'o', sizeof(img));
	write_old_file(path, img, from_empty ? 0 : sizeof(img));
	t_fill_fs(4096, -1);
	fd = open(t_filler(), O_RDWR);
	CHECK(fd >= 0);
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			room) == 0);
	CHECK(fsync(fd) == 0);
	close(fd);
	/* Not more room than that (a pass with plenty proves nothing);
	 * the probe file exists already (a create needs room too). */
	fd = open(xl_path(p, sizeof(p), "hole-probe"), O_RDWR);
	CHECK(fd >= 0);
	CHECKF(fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 << 20,
			 room + (64 << 10)) != 0 && errno == ENOSPC,
	       "the filesystem has more room than the %lld bytes freed",
	       (long long)room);
	close(fd);
	ctx = t_ctx(1 << 20, 64, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	memset(img, 'n', from_empty ? sizeof(img) : 60);
	CHECK_EQ(wtio_pwrite(f, img, from_empty ? sizeof(img) : 60, 0, 0),
		 from_empty ? (ssize_t)sizeof(img) : 60);
	if (clean)
		CHECK_OK(wtio_fsync(f));
	memset(buf, 'x', sizeof(buf));
	n = wtio_pwrite(f, buf, alen, 16384, 0);
	CHECKF(n == (ssize_t)alen,
	       "%s end block%s, %lld bytes free: a write of %zu at 16384 returned %zd (%s); the kernel accepts it",
	       clean ? "a clean" : "a dirty",
	       from_empty ? " appended" : "", (long long)room, alen, n,
	       n < 0 ? strerror((int)-n) : "short");
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "fsync: %d (%s)", ret, strerror(-ret));
	CHECK_EQ(t_disk_size(path), 16384 + (int64_t)alen);
	check_disk(path, 0, img, sizeof(img), "the end block");
	check_disk(path, 16384, buf, alen, "the write past it");
	CHECK_OK(wtio_close(f));
	CHECK(stat(path, &st) == 0);
	CHECKF((int64_t)st.st_blocks * 512 == 4096 + (int64_t)alen,
	       "closed, the file holds %lld bytes of blocks; the kernel's %lld",
	       (long long)st.st_blocks * 512, 4096 + (long long)alen);
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_unfill_fs();
	unlink(path);
	printf("  a %s end block of 16 KiB%s, %lld bytes free: a write of %zu past it accepted, fsync 0: ok\n",
	       clean ? "clean" : "dirty", from_empty ? " appended" : "",
	       (long long)room, alen);
}

/* 1 MiB folios (16 KiB blocks of ours on 4 KiB XFS), room to spare: a
 * 4 KiB file appended reserves ahead to the end of its block; its last
 * close gives all but the end's filesystem block back, leaving what the
 * kernel's leaves (before: the whole 16 KiB block; a size that is not a
 * multiple of 4 KiB hid it, its fix-up truncate freed the rest). */
static void case_close_gives_back_tail(void)
{
	uint8_t img[4096];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct stat st;
	char path[256];

	xl_path(path, sizeof(path), "small-append.bin");
	memset(img, 'a', sizeof(img));
	ctx = t_ctx(1 << 20, 64, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_EQ(wtio_pwrite(f, img, sizeof(img), 0, 0), (ssize_t)sizeof(img));
	CHECK_OK(wtio_close(f));
	CHECK(stat(path, &st) == 0);
	CHECKF(st.st_blocks * 512 == 4096,
	       "a closed 4096-byte file holds %lld bytes of blocks; the kernel's 4096",
	       (long long)st.st_blocks * 512);
	check_disk(path, 0, img, sizeof(img), "the file");
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	printf("  a 4096-byte file appended with 16 KiB blocks of ours, closed: 4 KiB of blocks left: ok\n");
}

/* An untorn write refused for space (XFS writes one larger than a block
 * out of place, so even an overwrite needs new blocks) reports it and
 * changes nothing; the next fsync, which finds the write-back data of
 * the range on disk, returns 0, as the kernel's does after a refused
 * RWF_ATOMIC write. It used to return the write's ENOSPC again. */
static void case_atomic_refused(void)
{
	static uint8_t buf[65536], old[4096];
	struct wtio_file_info fi;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256];
	uint32_t len;
	ssize_t n;
	int fd, i, ret;

	xl_path(path, sizeof(path), "atomic.bin");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	memset(buf, 'k', sizeof(buf));
	for (i = 0; i < 64; i++)
		CHECK_EQ(write(fd, buf, sizeof(buf)), (long long)sizeof(buf));
	CHECK(fsync(fd) == 0);
	close(fd);
	ctx = t_ctx(4096, 1024, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_file_info(f, &fi));
	len = fi.atomic_unit_max < sizeof(buf) ? fi.atomic_unit_max :
						 (uint32_t)sizeof(buf);
	if (len <= fi.block_size) {
		printf("  skipped part: no untorn write larger than a block here (atomic_unit_max %u)\n",
		       fi.atomic_unit_max);
		goto out;
	}
	/* Dirty write-back data in the range: the untorn write settles it
	 * (writes it back) first. */
	memset(old, 'd', sizeof(old));
	CHECK_EQ(wtio_pwrite(f, old, sizeof(old), 0, 0), (long long)sizeof(old));
	t_fill_fs(4096, -1);
	check_full(ctx, 0);
	memset(buf, 'U', sizeof(buf));
	n = wtio_pwrite(f, buf, len, 0, WTIO_ATOMIC);
	if (n == (ssize_t)len) {
		printf("  skipped part: an untorn %u-byte overwrite fits on a full fs here\n",
		       len);
		goto out_unfill;
	}
	CHECKF(n == -ENOSPC, "an untorn overwrite on a full fs: %zd", n);
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "fsync after a refused untorn write: %d (%s)", ret,
	       strerror(-ret));
	check_disk(path, 0, old, sizeof(old),
		   "write-back data under a refused untorn write");
	printf("  an untorn write refused for space, then fsync 0: ok\n");
out_unfill:
	t_unfill_fs();
out:
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
}

/* Another program's file with blocks past its EOF (XFS's speculative
 * preallocation of a buffered writer that keeps it dirty and open):
 * they are not the file's to count on, since XFS frees them when space
 * runs out. A write there on a full fs is refused, or, if accepted, is
 * on disk after fsync even once the other writer has closed and the
 * space was taken again. Before 0d8d905 it was accepted (FIEMAP showed
 * the blocks allocated), stayed dirty in a cache with room (1024
 * folios: under the background threshold), XFS gave the blocks to the
 * second filler, and fsync returned ENOSPC: the write was lost. */
static void case_past_others_eof(void)
{
	char path[256], p2[256];
	static uint8_t buf[65536];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	ssize_t n;
	int fd, fd2, i, ret;
	bool exercised;

	xl_path(path, sizeof(path), "others.bin");
	memset(buf, 'x', sizeof(buf));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	for (i = 0; i < 256; i++)
		CHECK_EQ(write(fd, buf, sizeof(buf)), (long long)sizeof(buf));
	CHECK(fsync(fd) == 0);
	/* the second filler is made while a create still fits */
	xl_path(p2, sizeof(p2), "filler1");
	fd2 = open(p2, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd2 >= 0);
	t_fill_fs(4096, fd);
	ctx = t_ctx(4096, 1024, WTIO_BACKEND_AUTO);
	check_full(ctx, 0);
	exercised = allocated_at(fd, (16 << 20) + 65536, sizeof(buf));
	f = t_open(ctx, path, O_RDWR);
	memset(buf, 'W', sizeof(buf));
	n = wtio_pwrite(f, buf, sizeof(buf), (16 << 20) + 65536, 0);
	CHECKF(n == -ENOSPC || n == (ssize_t)sizeof(buf),
	       "a write past another writer's EOF on a full fs: %zd", n);
	/* The other writer finishes; the space past its EOF goes to
	 * whoever asks next. */
	CHECK(fsync(fd) == 0);
	close(fd);
	for (int64_t len = 64ll << 20, cur = 0; len >= 4096; len /= 2)
		while (fallocate(fd2, 0, cur, len) == 0)
			cur += len;
	close(fd2);
	ret = wtio_fsync(f);
	if (n > 0) {
		CHECKF(ret == 0, "fsync after an accepted write past another writer's EOF: %d (%s)",
		       ret, strerror(-ret));
		check_disk(path, (16 << 20) + 65536, buf, sizeof(buf),
			   "the write past another writer's EOF");
	}
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(p2);
	t_unfill_fs();
	unlink(path);
	printf("  a write past another writer's EOF on a full fs: %s: ok\n",
	       n > 0 ? "accepted and on disk" : "refused");
	if (!exercised)
		printf("  skipped part: XFS kept no preallocation past the other writer's EOF here, so the write had nothing to be wrongly counted on\n");
}

int main(void)
{
	t_watchdog(300, "enospc_overwrite hung");
	xl_setup_shm_or_exit("enospc-ow", IMG_SIZE, "");
	case_written_through();
	case_past_hole();
	case_own_past_size();
	case_fsync_after_refusal(WTIO_WRITETHROUGH);
	case_fsync_after_refusal(WTIO_WRITETHROUGH | WTIO_DSYNC);
	case_atomic_refused();
	case_wt_cut_short(WTIO_WRITETHROUGH);
	case_wt_cut_short(WTIO_WRITETHROUGH | WTIO_DSYNC);
	case_wt_cut_short(WTIO_WRITETHROUGH | WTIO_NOSERIAL);
	for (size_t c = 0; c < sizeof(past_cases) / sizeof(past_cases[0]);
	     c++) {
		case_nothing_past(0, &past_cases[c]);
		case_nothing_past(WTIO_WRITETHROUGH, &past_cases[c]);
		case_nothing_past(WTIO_WRITETHROUGH | WTIO_DSYNC,
				  &past_cases[c]);
		case_nothing_past(WTIO_WRITETHROUGH | WTIO_NOSERIAL,
				  &past_cases[c]);
	}
	case_past_others_eof();
	case_end_block_grows(true);
	case_end_block_grows(false);
	case_write_past_end_block(false, true, 20480, 16384);
	case_write_past_end_block(false, false, 12288, 4096);
	case_write_past_end_block(false, false, 20480, 16384);
	case_close_gives_back_tail();
	case_write_past_end_block(true, false, 16384, 4096);
	case_write_past_end_block(true, true, 16384, 4096);
	case_write_past_end_block(true, false, 20480, 16384);
	xl_cleanup();
	printf("enospc_overwrite: PASS\n");
	return T_EXIT_PASS;
}
