/* SPDX-License-Identifier: MIT */
/*
 * test_geometry_cache - the geometry an open sets up from the per-mount
 * cache is the answer a fresh probe gives, on every filesystem, and a
 * filesystem made again on the same device is probed again.
 *
 *  1. Files in the current directory and in /dev/shm, opened through one
 *     context (the second file of each filesystem comes from the cache):
 *     wtio_file_info equals wtio_geometry_probe on a fresh descriptor,
 *     the size limit refuses one byte past it (-EFBIG) for both, and the
 *     size comes from the open's statx.
 *  2. The size-limit hint: whatever the hint (right, one off, a block off,
 *     the cap, past it), the answer is the binary search's, and the
 *     descriptor's position is left at 0.
 *  3. O_CREAT | O_TRUNC: a file the open creates is empty; an existing
 *     file is truncated, its mtime moved (the truncation was not skipped).
 *  4. As root with loop devices and xfsprogs: an XFS with su=64k,sw=4 and
 *     the current directory's filesystem at once, then the same image
 *     unmounted, made again with su=32k,sw=2 and mounted on the same
 *     loop device: a file opened in the same context reports the new
 *     stripe.
 *
 * Exit status: 0 pass, 1 fail, 77 skip (nothing could run). Part 4 is
 * skipped with a reason where it cannot run.
 */
#include <sys/time.h>

#include "helpers.h"
#include "geometry.h"
#include "xfs_loop.h"

#define CAP ((int64_t)1 << 62)

static struct wtio_ctx *new_ctx(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;

	wtio_config_init(&cfg);
	cfg.cache_size = 16 << 20;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	return ctx;
}

/* wtio's view of path (opened in ctx) against a fresh probe of it; the
 * stripe is dropped by wtio when it is not whole blocks. Returns the
 * open handle. */
static struct wtio_file *check_same(struct wtio_ctx *ctx, const char *path,
				    struct wtio_file_info *out)
{
	struct wtio_file_info info;
	struct wtio_geometry g;
	struct wtio_file *f;
	uint32_t su, sw;
	int fd, ret;

	ret = wtio_open(ctx, path, O_RDWR | O_CREAT, 0644, 0, &f);
	CHECKF(ret == 0, "wtio_open %s: %s", path, strerror(-ret));
	CHECK_OK(wtio_file_info(f, &info));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_OK(wtio_geometry_probe(fd, &g));
	close(fd);
	su = g.stripe_unit;
	sw = g.stripe_width;
	if (su % info.block_size) {
		su = 0;
		sw = 0;
		g.stripe_source = "none";
	}
	printf("%s: align %u/%u atomic %u..%u stripe %u/%u (%s); fresh "
	       "probe: %u/%u %u..%u %u/%u (%s)\n", path, info.dio_mem_align,
	       info.dio_offset_align, info.atomic_unit_min,
	       info.atomic_unit_max, info.stripe_unit, info.stripe_width,
	       info.stripe_source, g.dio_mem_align, g.dio_offset_align,
	       g.atomic_unit_min, g.atomic_unit_max, su, sw, g.stripe_source);
	CHECK_EQ(info.dio_mem_align, g.dio_mem_align);
	CHECK_EQ(info.dio_offset_align, g.dio_offset_align);
	CHECK_EQ(info.atomic_unit_min, g.atomic_unit_min);
	CHECK_EQ(info.atomic_unit_max, g.atomic_unit_max);
	CHECK_EQ(info.stripe_unit, su);
	CHECK_EQ(info.stripe_width, sw);
	CHECK(!strcmp(info.stripe_source, g.stripe_source));
	if (out)
		*out = info;
	return f;
}

/* The limit wtio enforces on f is the fresh search's, to the block. */
static void check_limit(struct wtio_file *f, const char *path)
{
	struct wtio_file_info info;
	int64_t max;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_OK(wtio_file_info(f, &info));
	max = wtio_geometry_max_bytes(fd, 0) & ~(int64_t)(info.block_size - 1);
	close(fd);
	CHECK_EQ(wtio_ftruncate(f, (off_t)max + 1), -EFBIG);
	CHECK_EQ(wtio_file_size(f), 0);
	CHECK_OK(wtio_ftruncate(f, (off_t)max));
	CHECK_OK(wtio_ftruncate(f, 0));
}

/* Part 1 on one directory; returns false when wtio cannot serve it. */
static bool part_dir(struct wtio_ctx *ctx, const char *dir)
{
	struct wtio_file *a, *b, *c;
	char pa[256], pb[256], pc[256];
	char data[5000];
	struct wtio_file *probe;
	int fd, ret;

	snprintf(pa, sizeof(pa), "%s/wtio-geocache-a.%d", dir, (int)getpid());
	snprintf(pb, sizeof(pb), "%s/wtio-geocache-b.%d", dir, (int)getpid());
	snprintf(pc, sizeof(pc), "%s/wtio-geocache-c.%d", dir, (int)getpid());
	ret = wtio_open(ctx, pa, O_RDWR | O_CREAT, 0644, 0, &probe);
	if (ret) {
		printf("%s: not served (%s), skipped\n", dir, strerror(-ret));
		unlink(pa);
		return false;
	}
	CHECK_OK(wtio_close(probe));
	a = check_same(ctx, pa, NULL);
	b = check_same(ctx, pb, NULL);
	check_limit(a, pa);
	check_limit(b, pb);
	/* The size of an existing file, from the open's statx. */
	memset(data, 'g', sizeof(data));
	fd = open(pc, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, sizeof(data)), sizeof(data));
	close(fd);
	c = check_same(ctx, pc, NULL);
	CHECK_EQ(wtio_file_size(c), sizeof(data));
	CHECK_OK(wtio_close(a));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_close(c));
	unlink(pa);
	unlink(pb);
	unlink(pc);
	return true;
}

/* Part 2: the hint never changes the answer. */
static void part_hint(void)
{
	const char *p = t_tmpfile("geocache-hint");
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	int64_t truth, hints[10];
	int i;

	CHECK(fd >= 0);
	truth = wtio_geometry_max_bytes(fd, 0);
	CHECK(truth > 0 && truth <= CAP);
	hints[0] = truth;
	hints[1] = truth - 1;
	hints[2] = truth + 1;
	hints[3] = truth - 4096;
	hints[4] = truth + 4096;
	hints[5] = CAP;
	hints[6] = CAP - 1;
	hints[7] = INT64_MAX;
	hints[8] = 1;
	hints[9] = (int64_t)17592186040320LL;	/* ext4's, 4 KiB blocks */
	for (i = 0; i < 10; i++) {
		CHECK(lseek(fd, 12345, SEEK_SET) == 12345);
		CHECKF(wtio_geometry_max_bytes(fd, hints[i]) == truth,
		       "hint %lld: not the search's %lld",
		       (long long)hints[i], (long long)truth);
		CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0);
	}
	close(fd);
	printf("size limit %lld: every hint gives the search's answer\n",
	       (long long)truth);
}

/* Part 3: O_CREAT | O_TRUNC, created or existing. */
static void part_trunc(struct wtio_ctx *ctx)
{
	char path[64];
	struct timeval old[2] = { { 946684800, 0 }, { 946684800, 0 } };
	struct wtio_file *f;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "wtio-geocache-trunc.%d", (int)getpid());
	unlink(path);
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &f));
	CHECK_EQ(wtio_file_size(f), 0);
	CHECK_EQ(wtio_pwrite(f, "abc", 3, 0, 0), 3);
	CHECK_OK(wtio_close(f));
	CHECK_OK(stat(path, &st));
	CHECK_EQ(st.st_size, 3);
	/* Existing, with content: truncated. */
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &f));
	CHECK_EQ(wtio_file_size(f), 0);
	CHECK_OK(wtio_close(f));
	CHECK_OK(stat(path, &st));
	CHECK_EQ(st.st_size, 0);
	/* Existing and empty: still truncated, as the kernel's O_TRUNC,
	 * which moves the mtime. */
	CHECK_OK(utimes(path, old));
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &f));
	CHECK_OK(wtio_close(f));
	CHECK_OK(stat(path, &st));
	CHECKF(st.st_mtime > 946684800, "O_TRUNC of an existing empty file "
	       "left its mtime");
	/* O_EXCL stays the caller's. */
	CHECK_EQ(wtio_open(ctx, path, O_RDWR | O_CREAT | O_EXCL | O_TRUNC,
			   0644, 0, &f), -EEXIST);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	close(fd);
	unlink(path);
	printf("O_CREAT|O_TRUNC: created, existing and existing empty\n");
}

static void check_xfs_stripe(struct wtio_ctx *ctx, const char *name,
			     uint32_t su, uint32_t sw)
{
	struct wtio_file_info info;
	struct wtio_file *f;
	char path[256];

	f = check_same(ctx, xl_path(path, sizeof(path), name), &info);
	CHECK_EQ(info.stripe_unit, su);
	CHECK_EQ(info.stripe_width, sw);
	CHECK(!strcmp(info.stripe_source, "xfs"));
	CHECK_OK(wtio_close(f));
	unlink(path);
}

/* Part 4: two filesystems at once, then a new one on the same device. */
static int part_xfs(struct wtio_ctx *ctx)
{
	struct wtio_file *f;
	char cmd[512];
	int ret;

	ret = xl_make("geocache", "-d su=64k,sw=4");
	if (ret == XL_OK)
		ret = xl_mount_dio();
	if (ret != XL_OK) {
		printf("skipped part 4: %s\n", xl.why);
		xl_cleanup();
		return ret == XL_SKIP ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	check_xfs_stripe(ctx, "a", 65536, 262144);
	/* The other filesystem between two files of this one. */
	f = check_same(ctx, t_tmpfile("geocache-other"), NULL);
	CHECK_OK(wtio_close(f));
	check_xfs_stripe(ctx, "b", 65536, 262144);

	CHECK_EQ(xl_umount(), XL_OK);
	snprintf(cmd, sizeof(cmd), "mkfs.xfs -f -q -d su=32k,sw=2 '%s'",
		 xl.img);
	CHECK_EQ(xl_run(cmd), 0);
	CHECK_EQ(xl_mount_dio(), XL_OK);
	check_xfs_stripe(ctx, "c", 32768, 65536);
	xl_cleanup();
	printf("XFS made again on the same loop device: the new stripe\n");
	return T_EXIT_PASS;
}

int main(void)
{
	struct wtio_ctx *ctx;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_watchdog(120, "test_geometry_cache: hung\n");
	t_require_odirect();
	ctx = new_ctx();
	CHECK(part_dir(ctx, "."));
	if (access("/dev/shm", W_OK) == 0)
		part_dir(ctx, "/dev/shm");
	part_hint();
	part_trunc(ctx);
	ret = part_xfs(ctx);
	CHECK(ret != T_EXIT_FAIL);
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
