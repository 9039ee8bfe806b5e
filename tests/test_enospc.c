/* SPDX-License-Identifier: MIT */
/*
 * test_enospc.c - a full XFS, through the library, in every write mode
 * (write-back, write-through, write-through NOSERIAL, DONTCACHE, DSYNC):
 *
 *  - a small XFS image on a loop device over /dev/shm is filled to a few
 *    MiB of free space; a file is appended in odd-sized writes until a
 *    write returns -ENOSPC. Every write returns its full count, a short
 *    count, or -ENOSPC: never EIO, never accepted data that cannot be
 *    written (the write-back modes: fsync then returns 0);
 *  - a write into a hole of a sparse file is refused too (-ENOSPC) and
 *    leaves the hole reading zeros;
 *  - reads of another file, interleaved with the writes through the same
 *    small cache, keep returning its data;
 *  - everything acknowledged is in the file after close and again after
 *    a remount; fsync reports nothing false (0 where every acknowledged
 *    byte is on disk, in every mode).
 *
 * And, with room to spare: space reserved ahead of an append is given
 * back at close and by a truncate; a sparse file still reads zeros where
 * nothing was written.
 *
 * Before space was reserved for dirty data, the write-back modes
 * accepted every write, their write-back failed with ENOSPC, the failed
 * folios filled the cache and the next allocation - a read of the other
 * file, or a write - failed with EIO.
 */

#include "helpers.h"
#include "xfs_loop.h"

#define IMG_SIZE	(128ll << 20)
#define FREE_LEFT	(6ll << 20)
#define CHUNK		(256 * 1024 + 1000)
#define B_LEN		(2u << 20)
#define C_LEN		(4u << 20)

static char filler[256], bpath[256], cpath[256], apath[256];
static uint8_t *bdata;

static int64_t fs_avail(void)
{
	long long avail = xl_avail();

	CHECK(avail >= 0);
	return avail;
}

static int64_t disk_blocks_bytes(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st) == 0);
	return (int64_t)st.st_blocks * 512;
}

/* Let XFS finish freeing what unlinks gave back, then fill the
 * filesystem up to FREE_LEFT bytes free. Returns the free bytes. */
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
	fd = open(filler, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(fsync(fd) == 0);
	avail = fs_avail();
	for (len = avail - FREE_LEFT; len > 0; len -= 1 << 20)
		if (fallocate(fd, 0, 0, len) == 0)
			break;
	CHECK(len > 0);
	CHECK(fsync(fd) == 0);
	close(fd);
	avail = fs_avail();
	CHECKF(avail > 0 && avail <= FREE_LEFT + (2 << 20),
	       "free after filling: %lld", (long long)avail);
	return avail;
}

static void check_b(struct wtio_file *b, uint8_t *buf, off_t off, size_t len)
{
	ssize_t n = wtio_pread(b, buf, len, off, 0);

	CHECKF(n == (ssize_t)len, "read of the other file at %lld: %zd (%s)",
	       (long long)off, n, n < 0 ? strerror((int)-n) : "short");
	CHECKF(memcmp(buf, bdata + off, len) == 0,
	       "other file differs at %lld", (long long)off);
}

static void check_disk_prefix(const char *path, int64_t acked, bool exact)
{
	size_t len;
	uint8_t *d = t_read_disk(path, &len);

	CHECKF((int64_t)len >= acked, "%s: %zu bytes on disk, %lld acknowledged",
	       path, len, (long long)acked);
	if (exact)
		CHECKF((int64_t)len == acked, "%s: size %zu, %lld written",
		       path, len, (long long)acked);
	CHECKF(t_verify(d, (size_t)acked, 21, 0) < 0,
	       "%s: acknowledged data differs at %lld", path,
	       t_verify(d, (size_t)acked, 21, 0));
	free(d);
}

/* c: C_LEN bytes, all hole. */
static void reset_c(void)
{
	int fd = open(cpath, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && ftruncate(fd, C_LEN) == 0);
	close(fd);
}

static void run_mode(const char *name, unsigned int flags, uint32_t fs)
{
	bool wt = flags & WTIO_WRITETHROUGH;
	uint8_t *wbuf = t_malloc(CHUNK), *rbuf = t_malloc(C_LEN);
	struct wtio_file *a, *b, *c;
	struct wtio_ctx *ctx;
	int64_t avail, acked = 0;
	int shorts = 0, iter = 0, ret;
	size_t c_acked;
	ssize_t n;

	unlink(apath);
	reset_c();
	avail = fill_to_brim();
	ctx = t_ctx(fs, (1 << 20) / fs < 64 ? 64 : (1 << 20) / fs,
		    WTIO_BACKEND_AUTO);
	a = t_open(ctx, apath, O_RDWR | O_CREAT | O_TRUNC);
	b = t_open(ctx, bpath, O_RDONLY);
	c = t_open(ctx, cpath, O_RDWR);

	for (;;) {
		t_fill(wbuf, CHUNK, 21, (uint64_t)acked);
		n = wtio_pwrite(a, wbuf, CHUNK, acked, flags);
		if (n == -ENOSPC)
			break;
		CHECKF(n > 0, "%s: append at %lld: %zd (%s)", name,
		       (long long)acked, n, n < 0 ? strerror((int)-n) : "0");
		acked += n;
		if (n < CHUNK)
			shorts++;
		CHECKF(shorts <= 4, "%s: short writes go on without ENOSPC",
		       name);
		CHECKF(acked <= avail + (4 << 20),
		       "%s: %lld bytes accepted, only %lld were free", name,
		       (long long)acked, (long long)avail);
		iter++;
		check_b(b, rbuf, (off_t)((iter * 77777) % (B_LEN - 65536)),
			65536);
	}
	CHECKF(acked >= avail / 2, "%s: refused at %lld of %lld free", name,
	       (long long)acked, (long long)avail);
	/* What a smaller write still fits (a direct write that does not
	 * fit whole is refused whole), until nothing does. */
	for (;;) {
		t_fill(wbuf, 4096, 21, (uint64_t)acked);
		n = wtio_pwrite(a, wbuf, 4096, acked, flags);
		if (n == -ENOSPC)
			break;
		CHECKF(n > 0, "%s: small append at %lld: %zd", name,
		       (long long)acked, n);
		acked += n;
		CHECKF(++shorts <= 128, "%s: small appends go on", name);
	}
	/* Full now: a write into a hole of another file is refused (or
	 * takes what XFS has freed meanwhile: a short count). */
	t_fill(wbuf, 65536, 22, 0);
	n = wtio_pwrite(c, wbuf, 65536, 1 << 20, flags);
	CHECKF(n == -ENOSPC || (n > 0 && n < 65536),
	       "%s: write into a hole of a full fs: %zd", name, n);
	c_acked = n > 0 ? (size_t)n : 0;
	/* The other file reads whole. */
	check_b(b, rbuf, 0, B_LEN);

	/* fsync: only what had space was acknowledged, so every byte
	 * reaches the disk, and a write-through write's refusal was its
	 * writer's alone (as with the kernel, whose write-through
	 * allocates first): fsync has no error to report in any mode. */
	ret = wtio_fsync(a);
	CHECKF(ret == 0, "%s: fsync after ENOSPC at write: %d (%s)",
	       name, ret, strerror(-ret));
	CHECK_EQ(wtio_fsync(a), 0);
	ret = wtio_fsync(c);
	CHECKF(ret == 0, "%s: fsync c: %d (%s)", name, ret, strerror(-ret));
	CHECK_EQ(wtio_fsync(c), 0);
	/* The refused write left the hole as it was. */
	n = wtio_pread(c, rbuf, C_LEN, 0, 0);
	CHECK_EQ(n, (long long)C_LEN);
	CHECK(t_verify(rbuf + (1 << 20), c_acked, 22, 0) < 0);
	memset(rbuf + (1 << 20), 0, c_acked);
	for (size_t i = 0; i < C_LEN; i++)
		CHECKF(rbuf[i] == 0, "%s: hole of c not zero at %zu", name, i);
	CHECK_OK(wtio_close(c));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_close(a));
	CHECK_OK(wtio_ctx_destroy(ctx));
	check_disk_prefix(apath, acked, !wt);

	/* And after a remount: nothing acknowledged was only in memory. */
	CHECKF(xl_umount() == XL_OK, "umount: %s", xl.why);
	CHECKF(xl_mount_loop() == XL_OK, "mount: %s", xl.why);
	check_disk_prefix(apath, acked, !wt);
	{
		size_t len;
		uint8_t *d = t_read_disk(bpath, &len);

		CHECK_EQ(len, B_LEN);
		CHECK(memcmp(d, bdata, B_LEN) == 0);
		free(d);
	}
	printf("  %s, folio %u: %lld of %lld free bytes accepted (%d short), then -ENOSPC; other file read %d times; data intact after remount: ok\n",
	       name, fs, (long long)acked, (long long)avail, shorts, iter + 1);
	unlink(apath);
	free(wbuf);
	free(rbuf);
}

/* With room: what is reserved ahead of appends is given back. */
static void check_release(uint32_t fs)
{
	char dpath[256];
	struct wtio_ctx *ctx;
	struct wtio_file *d;
	uint8_t *buf = t_malloc(3 << 20), *rbuf = t_malloc(6 << 20);
	int64_t held;

	unlink(filler);
	unlink(apath);
	sync();
	xl_path(dpath, sizeof(dpath), "d.bin");
	/* 64 MiB: below the background threshold, the data is still in the
	 * cache at the truncate, which then grows the backing file (XFS
	 * frees nothing past a larger size: wtio must punch). */
	ctx = t_ctx(fs, (64u << 20) / fs, WTIO_BACKEND_AUTO);
	d = t_open(ctx, dpath, O_RDWR | O_CREAT | O_TRUNC);
	t_fill(buf, 100000, 31, 0);
	CHECK_EQ(wtio_pwrite(d, buf, 100000, 0, 0), 100000);
	CHECK_OK(wtio_fsync(d));
	held = disk_blocks_bytes(dpath);
	CHECKF(held >= 100000, "appended data not allocated: %lld",
	       (long long)held);
	CHECK_OK(wtio_close(d));
	CHECKF(disk_blocks_bytes(dpath) <= 128 * 1024,
	       "%lld bytes still allocated after close of a 100000-byte file",
	       (long long)disk_blocks_bytes(dpath));

	/* Truncate gives back what lies past the new end. */
	d = t_open(ctx, dpath, O_RDWR | O_TRUNC);
	t_fill(buf, 3 << 20, 32, 0);
	CHECK_EQ(wtio_pwrite(d, buf, 3 << 20, 0, 0), 3 << 20);
	CHECK_OK(wtio_ftruncate(d, 1 << 20));
	CHECKF(disk_blocks_bytes(dpath) <= (1 << 20) + 65536,
	       "%lld bytes allocated after a truncate to 1 MiB",
	       (long long)disk_blocks_bytes(dpath));
	/* Sparse: a write at 5 MiB; between reads zeros, before and after
	 * the reservation was given back. */
	CHECK_EQ(wtio_pwrite(d, buf, 4096, 5 << 20, 0), 4096);
	CHECK_EQ(wtio_pread(d, rbuf, 6 << 20, 0, 0), (5 << 20) + 4096);
	CHECK(t_verify(rbuf, 1 << 20, 32, 0) < 0);
	for (size_t i = 1 << 20; i < 5 << 20; i++)
		CHECKF(rbuf[i] == 0, "gap not zero at %zu", i);
	CHECK(memcmp(rbuf + (5 << 20), buf, 4096) == 0);
	CHECK_OK(wtio_close(d));
	CHECK_OK(wtio_ctx_destroy(ctx));
	{
		size_t len;
		uint8_t *x = t_read_disk(dpath, &len);

		CHECK_EQ(len, (5 << 20) + 4096);
		CHECK(t_verify(x, 1 << 20, 32, 0) < 0);
		for (size_t i = 1 << 20; i < 5 << 20; i++)
			CHECKF(x[i] == 0, "gap on disk not zero at %zu", i);
		CHECK(memcmp(x + (5 << 20), buf, 4096) == 0);
		free(x);
	}
	CHECKF(disk_blocks_bytes(dpath) <= (1 << 20) + (128 << 10),
	       "%lld bytes allocated for 1 MiB + 4 KiB of data",
	       (long long)disk_blocks_bytes(dpath));
	unlink(dpath);
	free(buf);
	free(rbuf);
	printf("  folio %u: reservation ahead given back at close and truncate, holes read zeros: ok\n",
	       fs);
}

/* A write past the chunk reserved ahead of appends (a seek over a hole)
 * and a truncate that grows the file leave holes, as the kernel does:
 * the chunk is given back, not left allocated for zeros inside the file
 * (dd conv=sparse under the shim kept 1.5 MiB of it). */
static void check_holes_unallocated(uint32_t fs, unsigned int flags)
{
	static const struct { int64_t off; size_t len; } w[] = {
		{ 0, 100000 }, { 100000, 65536 },	/* appends: a chunk ahead */
		{ 10 << 20, 4096 },			/* past it */
		{ (10 << 20) + 4096, 65536 },		/* appends again */
	};
	const int64_t end = 20 << 20;
	char dpath[256];
	struct wtio_ctx *ctx;
	struct wtio_file *d;
	uint8_t *buf = t_malloc(65536 * 2), *x;
	int64_t data = 0, alloc;
	size_t i, len;

	xl_path(dpath, sizeof(dpath), "holes.bin");
	ctx = t_ctx(fs, (64u << 20) / fs, WTIO_BACKEND_AUTO);
	d = t_open(ctx, dpath, O_RDWR | O_CREAT | O_TRUNC);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		t_fill(buf, w[i].len, 40 + i, 0);
		CHECK_EQ(wtio_pwrite(d, buf, w[i].len, w[i].off, flags),
			 (long long)w[i].len);
		data += (int64_t)w[i].len;
	}
	CHECK_OK(wtio_ftruncate(d, end));
	CHECK_OK(wtio_fsync(d));
	alloc = disk_blocks_bytes(dpath);
	CHECKF(alloc <= data + (256 << 10),
	       "folio %u, flags %#x: %lld bytes allocated for %lld of data in a %lld-byte sparse file",
	       fs, flags, (long long)alloc, (long long)data, (long long)end);
	CHECK_OK(wtio_close(d));
	CHECK_OK(wtio_ctx_destroy(ctx));
	x = t_read_disk(dpath, &len);
	CHECK_EQ(len, end);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		CHECK(t_verify(x + w[i].off, w[i].len, 40 + i, 0) < 0);
		memset(x + w[i].off, 0, w[i].len);
	}
	for (i = 0; i < len; i++)
		CHECKF(x[i] == 0, "hole on disk not zero at %zu", i);
	free(x);
	free(buf);
	unlink(dpath);
	printf("  folio %u, flags %#x: a write past the chunk ahead and a growing truncate leave holes unallocated (%lld bytes for %lld): ok\n",
	       fs, flags, (long long)alloc, (long long)data);
}

/* Another program's preallocation past EOF (fallocate KEEP_SIZE, a
 * space guarantee) stays after wtio appended into it and closed, as the
 * kernel keeps it: the chunk reserved ahead covered it, and the last
 * close's giving back past EOF used to punch it out (8 MiB preallocated,
 * 7.25 MiB left). */
static void check_theirs_kept(unsigned int flags)
{
	const int64_t prealloc = 8 << 20;
	char path[256];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t buf[65536];
	int64_t alloc;
	int fd, i;

	xl_path(path, sizeof(path), "theirs.bin");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, prealloc) == 0);
	close(fd);
	ctx = t_ctx(4096, (64u << 20) / 4096, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	memset(buf, 'p', sizeof(buf));
	for (i = 0; i < 20; i++)
		CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf), (off_t)i << 16, flags),
			 (long long)sizeof(buf));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	alloc = disk_blocks_bytes(path);
	CHECKF(alloc >= prealloc,
	       "flags %#x: %lld bytes allocated after wtio's appends and close; another program had preallocated %lld",
	       flags, (long long)alloc, (long long)prealloc);
	CHECK_EQ(t_disk_size(path), 20 << 16);
	unlink(path);
	printf("  flags %#x: another program's preallocation past EOF kept after appends and close (%lld bytes): ok\n",
	       flags, (long long)alloc);
}

int main(void)
{
	static const struct {
		const char *name;
		unsigned int flags;
	} modes[] = {
		{ "write-back", 0 },
		{ "write-through", WTIO_WRITETHROUGH },
		{ "write-through NOSERIAL", WTIO_WRITETHROUGH | WTIO_NOSERIAL },
		{ "DONTCACHE", WTIO_DONTCACHE },
		{ "DSYNC", WTIO_DSYNC },
	};
	int fd;
	size_t i;

	t_watchdog(600, "enospc hung");
	xl_setup_shm_or_exit("enospc", IMG_SIZE, "");
	xl_path(filler, sizeof(filler), "filler");
	xl_path(bpath, sizeof(bpath), "b.bin");
	xl_path(cpath, sizeof(cpath), "c.bin");
	xl_path(apath, sizeof(apath), "a.bin");
	bdata = t_malloc(B_LEN);
	t_fill(bdata, B_LEN, 20, 0);
	fd = open(bpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	close(fd);
	t_write_disk(bpath, bdata, B_LEN);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		run_mode(modes[i].name, modes[i].flags, 4096);
	run_mode("write-back", 0, 65536);
	check_release(4096);
	check_release(65536);
	/* Write-through too: its appends reserve a chunk ahead, and its
	 * one-block write past it (which reserves nothing) must give the
	 * chunk back all the same. */
	check_holes_unallocated(4096, 0);
	check_holes_unallocated(65536, 0);
	check_holes_unallocated(4096, WTIO_WRITETHROUGH);
	check_holes_unallocated(65536, WTIO_WRITETHROUGH);
	check_theirs_kept(0);
	check_theirs_kept(WTIO_WRITETHROUGH);
	check_theirs_kept(WTIO_WRITETHROUGH | WTIO_DSYNC);
	free(bdata);
	xl_cleanup();
	printf("enospc: PASS\n");
	return T_EXIT_PASS;
}
