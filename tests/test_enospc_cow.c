/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_cow.c - overwriting a reflinked file on a nearly full XFS.
 *
 * A block shared with another file (FICLONE, "cp --reflink") counts as
 * allocated, but an O_DIRECT overwrite of it needs a new copy-on-write
 * block at write-back. So on a small XFS (-m reflink=1) a 16 MiB file is
 * cloned, the filesystem filled to about 2 MiB free, and the clone is
 * overwritten in 1 MiB writes through an 8 MiB cache, in write-back,
 * DONTCACHE and DSYNC modes:
 *
 *  - every write returns its full count, a short count or -ENOSPC;
 *  - fsync returns 0, and after close and a remount every acknowledged
 *    byte is on disk, every refused byte still holds the old data, and
 *    the source file is unchanged;
 *  - writing the acknowledged ranges again makes no second unshare call,
 *    and overwrites of a file without shared extents make no fallocate
 *    call at all (this program answers the library's fallocate calls: it
 *    links the static library).
 *
 * Without unsharing (reserve.c before it looked at shared extents) every
 * write-back write was accepted, fsync returned -ENOSPC and most of the
 * acknowledged data never reached the disk.
 */
#include <dlfcn.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include "helpers.h"
#include "xfs_loop.h"

#define IMG_SIZE	(128ll << 20)
#define FREE_LEFT	(2ll << 20)
#define SRC_LEN		(16u << 20)
#define U_LEN		(4u << 20)
#define WLEN		(1u << 20)
#define NW		(SRC_LEN / WLEN)
#define UNSHARE		0x40	/* FALLOC_FL_UNSHARE_RANGE */

static char filler[256], apath[256], bpath[256], upath[256];
static int nr_falloc, nr_unshare;

int fallocate(int fd, int mode, off_t off, off_t len)
{
	static int (*real)(int, int, off_t, off_t);

	nr_falloc++;
	if (mode == UNSHARE)
		nr_unshare++;
	if (!real)
		real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT,
							      "fallocate");
	return real(fd, mode, off, len);
}

static int64_t fs_avail(void)
{
	long long avail = xl_avail();

	CHECK(avail >= 0);
	return avail;
}

/* b: a fresh clone of a (FICLONE). Returns 0, or the errno. */
static int clone_b(void)
{
	int a = open(apath, O_RDONLY), b, err = 0;

	CHECK(a >= 0);
	b = open(bpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(b >= 0);
	if (ioctl(b, FICLONE, a) != 0)
		err = errno;
	else
		CHECK(fsync(b) == 0);
	close(b);
	close(a);
	return err;
}

/* Let XFS finish freeing, then fill up to FREE_LEFT free. */
static int64_t fill_to_brim(void)
{
	int64_t avail, len;
	int fd, i;

	sync();
	for (i = 0; i < 20; i++) {
		int64_t a = fs_avail();

		usleep(50 * 1000);
		if (fs_avail() == a)
			break;
	}
	fd = open(filler, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	avail = fs_avail();
	for (len = avail - FREE_LEFT; len > 0; len -= 256 << 10)
		if (fallocate(fd, 0, 0, len) == 0)
			break;
	CHECK(len > 0);
	CHECK(fsync(fd) == 0);
	close(fd);
	avail = fs_avail();
	CHECKF(avail > 0 && avail <= FREE_LEFT + (1 << 20),
	       "free after filling: %lld", (long long)avail);
	return avail;
}

static void run_mode(const char *name, unsigned int flags, uint32_t fs)
{
	uint8_t *wbuf = t_malloc(WLEN), *d;
	ssize_t acked[NW], n;
	int64_t avail, total = 0;
	int full = 0, shorts = 0, refused = 0, unshares, ret;
	struct wtio_file *b, *u;
	struct wtio_ctx *ctx;
	size_t len, k;

	unlink(filler);
	CHECK_EQ(clone_b(), 0);
	avail = fill_to_brim();
	ctx = t_ctx(fs, (8u << 20) / fs, WTIO_BACKEND_AUTO);
	b = t_open(ctx, bpath, O_RDWR);
	u = t_open(ctx, upath, O_RDWR);

	nr_unshare = 0;
	for (k = 0; k < NW; k++) {
		off_t off = (off_t)k * WLEN;

		t_fill(wbuf, WLEN, 61, (uint64_t)off);
		n = wtio_pwrite(b, wbuf, WLEN, off, flags);
		CHECKF(n == -ENOSPC || (n > 0 && n <= (ssize_t)WLEN),
		       "%s: overwrite at %lld: %zd (%s)", name, (long long)off,
		       n, n < 0 ? strerror((int)-n) : "0");
		acked[k] = n > 0 ? n : 0;
		total += acked[k];
		if (n == (ssize_t)WLEN)
			full++;
		else if (n > 0)
			shorts++;
		else
			refused++;
	}
	unshares = nr_unshare;
	CHECKF(total <= avail + (1 << 20),
	       "%s: %lld bytes of overwrite accepted, %lld were free", name,
	       (long long)total, (long long)avail);
	CHECKF(refused > 0, "%s: every overwrite accepted on a full fs", name);
	/* Once private, a range is not unshared again. */
	nr_unshare = 0;
	for (k = 0; k < NW; k++) {
		off_t off = (off_t)k * WLEN;

		if (!acked[k])
			continue;
		t_fill(wbuf, (size_t)acked[k], 61, (uint64_t)off);
		CHECK_EQ(wtio_pwrite(b, wbuf, (size_t)acked[k], off, flags),
			 (long long)acked[k]);
	}
	CHECKF(nr_unshare == 0, "%s: %d unshare calls for ranges unshared already",
	       name, nr_unshare);
	/* A file with no shared extents pays nothing. */
	nr_falloc = 0;
	for (k = 0; k < U_LEN / WLEN; k++) {
		t_fill(wbuf, WLEN, 63, (uint64_t)k * WLEN);
		CHECK_EQ(wtio_pwrite(u, wbuf, WLEN, (off_t)k * WLEN, flags),
			 (long long)WLEN);
	}
	CHECKF(nr_falloc == 0, "%s: %d fallocate calls overwriting an unshared file",
	       name, nr_falloc);

	ret = wtio_fsync(b);
	CHECKF(ret == 0, "%s: fsync of the clone: %d (%s)", name, ret,
	       strerror(-ret));
	CHECK_EQ(wtio_fsync(b), 0);
	CHECK_EQ(wtio_fsync(u), 0);
	CHECK_OK(wtio_close(u));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_ctx_destroy(ctx));

	CHECKF(xl_umount() == XL_OK, "umount: %s", xl.why);
	CHECKF(xl_mount_loop() == XL_OK, "mount: %s", xl.why);
	d = t_read_disk(bpath, &len);
	CHECK_EQ(len, SRC_LEN);
	for (k = 0; k < NW; k++) {
		size_t off = k * WLEN;
		long long bad;

		bad = t_verify(d + off, (size_t)acked[k], 61, off);
		CHECKF(bad < 0, "%s: acknowledged byte %lld not on disk", name,
		       (long long)off + bad);
		bad = t_verify(d + off + acked[k], WLEN - (size_t)acked[k], 60,
			       off + (size_t)acked[k]);
		CHECKF(bad < 0, "%s: refused write changed byte %lld", name,
		       (long long)(off + (size_t)acked[k]) + bad);
	}
	free(d);
	d = t_read_disk(apath, &len);
	CHECK_EQ(len, SRC_LEN);
	CHECKF(t_verify(d, SRC_LEN, 60, 0) < 0, "%s: the source changed", name);
	free(d);
	d = t_read_disk(upath, &len);
	CHECK_EQ(len, U_LEN);
	CHECK(t_verify(d, U_LEN, 63, 0) < 0);
	free(d);
	printf("  %s, folio %u: %lld free; %d full, %d short, %d refused writes (%lld bytes acknowledged), %d unshare calls, 0 again; unshared file 0 fallocate; fsync 0, data intact after remount: ok\n",
	       name, fs, (long long)avail, full, shorts, refused,
	       (long long)total, unshares);
	unlink(bpath);
	free(wbuf);
}

/* With room: writes scattered over a clone split its shared range; each
 * piece is unshared once, and the rest stays shared until written. */
static void check_scattered(void)
{
	static const struct {
		off_t off;
		size_t len;
		int calls;
	} w[] = {
		{ 8 << 20, 65536, 1 },
		{ 0, 4096, 1 },
		{ SRC_LEN - 65536, 65536, 1 },
		{ (8 << 20) + 1000, 30000, 0 },		/* inside the first */
		{ (8 << 20) + 60000, 100000, 1 },	/* half inside */
		{ (8 << 20) - 5000, 5000, 1 },		/* just before */
		{ 100, 3000, 0 },			/* inside block 0 */
	};
	uint8_t *shadow = t_malloc(SRC_LEN), *d;
	struct wtio_ctx *ctx;
	struct wtio_file *b;
	size_t i, len;
	int before;

	unlink(filler);
	CHECK_EQ(clone_b(), 0);
	t_fill(shadow, SRC_LEN, 60, 0);
	ctx = t_ctx(65536, 128, WTIO_BACKEND_AUTO);
	b = t_open(ctx, bpath, O_RDWR);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		before = nr_unshare;
		t_fill(shadow + w[i].off, w[i].len, 64 + i, (uint64_t)w[i].off);
		CHECK_EQ(wtio_pwrite(b, shadow + w[i].off, w[i].len, w[i].off, 0),
			 (long long)w[i].len);
		CHECKF(nr_unshare - before == w[i].calls,
		       "write %zu at %lld: %d unshare calls, want %d", i,
		       (long long)w[i].off, nr_unshare - before, w[i].calls);
	}
	CHECK_OK(wtio_fsync(b));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_ctx_destroy(ctx));
	CHECKF(xl_umount() == XL_OK, "umount: %s", xl.why);
	CHECKF(xl_mount_loop() == XL_OK, "mount: %s", xl.why);
	d = t_read_disk(bpath, &len);
	CHECK_EQ(len, SRC_LEN);
	CHECKF(t_memdiff(d, shadow, SRC_LEN) < 0, "clone differs at %lld",
	       t_memdiff(d, shadow, SRC_LEN));
	free(d);
	d = t_read_disk(apath, &len);
	CHECKF(len == SRC_LEN && t_verify(d, SRC_LEN, 60, 0) < 0,
	       "the source changed");
	free(d);
	unlink(bpath);
	free(shadow);
	printf("  scattered overwrites of a clone: one unshare call per new piece, none within pieces done: ok\n");
}

int main(void)
{
	static const struct {
		const char *name;
		unsigned int flags;
		uint32_t fs;
	} modes[] = {
		{ "write-back", 0, 65536 },
		{ "write-back", 0, 4096 },
		{ "DONTCACHE", WTIO_DONTCACHE, 65536 },
		{ "DSYNC", WTIO_DSYNC, 65536 },
	};
	uint8_t *data;
	size_t i;
	int ret;

	t_watchdog(600, "enospc_cow hung");
	xl_setup_shm_or_exit("cow", IMG_SIZE, "-m reflink=1");
	xl_path(filler, sizeof(filler), "filler");
	xl_path(apath, sizeof(apath), "a.bin");
	xl_path(bpath, sizeof(bpath), "b.bin");
	xl_path(upath, sizeof(upath), "u.bin");
	data = t_malloc(SRC_LEN);
	t_fill(data, SRC_LEN, 60, 0);
	ret = open(apath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(ret >= 0);
	close(ret);
	t_write_disk(apath, data, SRC_LEN);
	t_fill(data, U_LEN, 62, 0);
	ret = open(upath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(ret >= 0);
	close(ret);
	t_write_disk(upath, data, U_LEN);
	free(data);
	ret = clone_b();
	if (ret) {
		printf("SKIP: FICLONE on XFS -m reflink=1: %s\n", strerror(ret));
		xl_cleanup();
		return T_EXIT_SKIP;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		run_mode(modes[i].name, modes[i].flags, modes[i].fs);
	check_scattered();
	xl_cleanup();
	printf("enospc_cow: PASS\n");
	return T_EXIT_PASS;
}
