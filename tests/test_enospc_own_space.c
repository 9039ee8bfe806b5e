/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_own_space.c - a write that finds no room on a nearly full
 * filesystem first takes back what its own file holds past its end,
 * as XFS gives back its speculative preallocation before it reports
 * ENOSPC; on XFS and on ext4 (1 KiB blocks), where a punch past the end
 * of file frees nothing and only a truncate does.
 *
 * 1. A file with a chunk reserved ahead of appends (write-back appends
 *    past a truncated size), then a 900000-byte write into a hole of it
 *    with 1.5 MB free: the kernel accepts it whole (before: 351968),
 *    in write-back and as a NOSERIAL write-through write (which holds
 *    the file lock shared, and takes it exclusive for the give-back).
 * 2. ext4 keeps what a failed fallocate allocated: an append whose chunk
 *    did not fit left blocks past the end counted nowhere, and a 2-block
 *    write into a hole with 8 KiB free got ENOSPC (the kernel: accepted;
 *    on XFS, with 4 KiB blocks and its allocations' own needs, 32 KiB).
 *
 * Each case first shows that the filesystem has no more room than it
 * freed (a pass with plenty of room proves nothing), and ends with fsync
 * 0 and the disk holding every accepted byte. Skips (77) where a loop
 * image cannot be mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include "helpers.h"
#include "t_fill.h"

static void write_old_file(const char *path, size_t len, uint8_t *img)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	for (size_t i = 0; i < len; i++)
		img[i] = (uint8_t)(i * 7 + 1);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, img, len, 0), (long long)len);
	CHECK(fsync(fd) == 0);
	close(fd);
}

/* The end of a case: fsync 0, the disk holds img, the fs emptied. */
static void finish_case(struct wtio_ctx *ctx, struct wtio_file *f,
			const char *path, const uint8_t *img, size_t size)
{
	int ret = wtio_fsync(f);

	CHECKF(ret == 0, "fsync: %d (%s)", ret, strerror(-ret));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, img, size);
	t_unfill_fs();
	unlink(path);
}

/* Case 1: the file's own chunk ahead given back. */
static void case_own_chunk(const char *fs, unsigned int flags)
{
	const int64_t size0 = 100000, tsize = 2000000, alen = 70000;
	const int64_t hoff = 500000, hlen = 900000;
	uint8_t *img = t_malloc(tsize + alen);
	uint8_t *buf = t_malloc(hlen);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256];
	ssize_t n;

	xl_path(path, sizeof(path), "chunk.bin");
	write_old_file(path, size0, img);
	memset(img + size0, 0, tsize + alen - size0);
	t_fill_fs_leaving(1500000);
	ctx = t_ctx(4096, 2048, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_ftruncate(f, tsize));
	memset(img + tsize, 'a', alen);
	/* an append: reserves a chunk past its end */
	CHECK_EQ(wtio_pwrite(f, img + tsize, alen, tsize, 0), alen);
	memset(buf, 'h', hlen);
	n = wtio_pwrite(f, buf, hlen, hoff, flags);
	CHECKF(n == hlen,
	       "%s, flags 0x%x: a write of %lld into a hole with 1.5 MB free returned %zd (%s); the kernel accepts it",
	       fs, flags, (long long)hlen, n, n < 0 ? strerror((int)-n) : "short");
	memcpy(img + hoff, buf, hlen);
	finish_case(ctx, f, path, img, tsize + alen);
	free(img);
	free(buf);
	printf("  %s, flags 0x%x: a file's own chunk ahead given back for a write into its hole: ok\n",
	       fs, flags);
}

/* Case 2: what a failed chunk left past the end given back. */
static void case_failed_chunk(const char *fs, int64_t room)
{
	const int64_t size0 = 58685, aoff = 81213, alen = 765;
	const int64_t hoff = 66982, hlen = 1133;
	uint8_t img[82000], buf[2048];
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256];
	ssize_t n;

	xl_path(path, sizeof(path), "leftover.bin");
	write_old_file(path, size0, img);
	memset(img + size0, 0, sizeof(img) - size0);
	t_fill_fs_leaving(room);
	ctx = t_ctx(4096, 2048, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	memset(buf, 'a', sizeof(buf));
	CHECK_EQ(wtio_pwrite(f, buf, alen, aoff, 0), alen);
	memcpy(img + aoff, buf, alen);
	memset(buf, 'h', sizeof(buf));
	n = wtio_pwrite(f, buf, hlen, hoff, 0);
	CHECKF(n == hlen,
	       "%s: a write of %lld into a hole with %lld bytes free, after an append, returned %zd (%s); the kernel accepts it",
	       fs, (long long)hlen, (long long)room, n, n < 0 ? strerror((int)-n) : "short");
	memcpy(img + hoff, buf, hlen);
	finish_case(ctx, f, path, img, aoff + alen);
	printf("  %s: what a chunk that did not fit left past the end given back: ok\n",
	       fs);
}

int main(void)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("enospc_own_space: XFS\n");
	xl_setup_shm_or_exit("enospc-own-xfs", 128ll << 20, "");
	case_own_chunk("xfs", 0);
	case_own_chunk("xfs", WTIO_WRITETHROUGH | WTIO_NOSERIAL);
	case_failed_chunk("xfs", 32768);
	xl_cleanup();

	printf("enospc_own_space: ext4, 1 KiB blocks\n");
	xl.fstype = "ext4";
	ret = xl_setup_shm("enospc-own-ext4", 64ll << 20, "-b 1024 -m 0");
	if (ret != XL_OK) {
		printf("%s: %s\n", ret == XL_SKIP ? "SKIP" : "FAIL", xl.why);
		return ret == XL_SKIP ? 77 : 1;
	}
	case_own_chunk("ext4", 0);
	case_own_chunk("ext4", WTIO_WRITETHROUGH | WTIO_NOSERIAL);
	case_failed_chunk("ext4", 8192);
	xl_cleanup();
	printf("enospc_own_space: PASS\n");
	return 0;
}
