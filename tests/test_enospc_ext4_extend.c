/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_ext4_extend.c - write-back that extends a file into blocks
 * it has past its end, on an ext4 whose free blocks are all gone, reserve
 * pool included: fsync succeeds and the disk holds every accepted byte,
 * as with the kernel's page cache.
 *
 * Two ext4 behaviours make that hard for direct I/O. A direct write into
 * an unwritten extent past the end of file that must split it, and needs
 * a block for the extent tree, fails with ENOSPC where the kernel's own
 * writeback takes that block from its reserve. And a write that extends
 * the file and fails makes ext4 truncate the file to its size, freeing
 * every block past the end (fallocate FALLOC_FL_KEEP_SIZE ones too): the
 * blocks of other accepted data past the end go with it. wtio writes
 * such an I/O again through the kernel's cache and takes the freed
 * blocks back (ioend_end.c, wtio_reserve_regain).
 *
 * First the premise is shown with plain system calls on this kernel (else
 * a skip: nothing to test): on a file preallocated past its end, a direct
 * write at 1 MiB succeeds, one at 2 MiB fails with ENOSPC. Then wtio
 * writes at 3 MiB of such a file, then at 1 and 2 MiB (in write-back, and
 * as write-through writes), puts those two on disk, and fsyncs after the
 * filesystem was filled again: fsync must return 0, and the disk must
 * hold the data (before: ENOSPC from the write at 2 MiB; without taking
 * back the freed blocks, ENOSPC from 3 MiB's). Skips (77) where an ext4
 * loop image cannot be mounted or its reserve cannot be set.
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
#include <sys/sysmacros.h>

#include "helpers.h"
#include "t_fill.h"

#define PRE	(4 << 20)	/* preallocated past the end */
#define WLEN	4096
#define NW	3		/* writes at 1, 2, 3 MiB */

static char resv_path[256];

/* ext4's reserve pool (sysfs reserved_clusters), for the loop device the
 * image is mounted on; false where it cannot be set. */
static bool set_reserve(long clusters)
{
	char dev[256], link[256];
	struct stat st;
	ssize_t n;
	FILE *f;

	if (!resv_path[0]) {
		CHECK(stat(xl.mnt, &st) == 0);
		snprintf(dev, sizeof(dev), "/sys/dev/block/%u:%u",
			 major(st.st_dev), minor(st.st_dev));
		n = readlink(dev, link, sizeof(link) - 1);
		if (n <= 0)
			return false;
		link[n] = 0;
		snprintf(resv_path, sizeof(resv_path),
			 "/sys/fs/ext4/%s/reserved_clusters",
			 strrchr(link, '/') + 1);
	}
	f = fopen(resv_path, "w");
	if (!f)
		return false;
	fprintf(f, "%ld\n", clusters);
	return fclose(f) == 0;
}

static void make_preallocated(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, PRE) == 0);
	CHECK(fsync(fd) == 0);
	close(fd);
}

/* The premise, with plain system calls; false: this ext4 does not refuse. */
static bool premise(void)
{
	char path[256];
	void *buf;
	ssize_t a, b;
	int fd;

	xl_path(path, sizeof(path), "premise.bin");
	make_preallocated(path);
	t_fill_fs(4096, -1);
	CHECK(posix_memalign(&buf, 4096, WLEN) == 0);
	memset(buf, 'p', WLEN);
	fd = open(path, O_RDWR | O_DIRECT);
	CHECK(fd >= 0);
	a = pwrite(fd, buf, WLEN, 1 << 20);
	b = pwrite(fd, buf, WLEN, 2 << 20);
	printf("  plain O_DIRECT writes past the end into preallocated blocks: %zd, %zd (%s)\n",
	       a, b, b < 0 ? strerror(errno) : "ok");
	close(fd);
	free(buf);
	unlink(path);
	t_unfill_fs();
	CHECK_EQ(a, WLEN);
	return b < 0 && errno == ENOSPC;
}

static void write_at(struct wtio_file *f, uint8_t *img, int mib,
		     unsigned int flags, const char *name)
{
	uint8_t buf[WLEN];
	ssize_t n;

	t_fill(buf, WLEN, 80 + mib, (uint64_t)mib << 20);
	n = wtio_pwrite(f, buf, WLEN, (off_t)mib << 20, flags);
	CHECKF(n == WLEN, "%s: write at %d MiB returned %zd (%s)", name, mib,
	       n, n < 0 ? strerror((int)-n) : "short");
	memcpy(img + ((size_t)mib << 20), buf, WLEN);
}

/*
 * Write-back data at 3 MiB, then writes at 1 and 2 MiB (flags), those
 * two put on disk (the one at 2 MiB is refused there, and ext4 frees the
 * blocks past the end, 3 MiB's with them), the filesystem filled again
 * (whatever was freed and not taken back is gone), then fsync.
 */
static void run_case(unsigned int flags, const char *name)
{
	uint8_t *img = t_zalloc((NW + 1) << 20);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char path[256];
	int ret;

	xl_path(path, sizeof(path), "extend.bin");
	make_preallocated(path);
	ctx = t_ctx(4096, 256, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	t_fill_fs(4096, -1);
	write_at(f, img, 3, 0, name);
	write_at(f, img, 1, flags, name);
	write_at(f, img, 2, flags, name);
	ret = wtio_sync_range(f, 0, (2 << 20) + WLEN,
			      WTIO_SYNC_RANGE_WAIT_BEFORE |
			      WTIO_SYNC_RANGE_WRITE |
			      WTIO_SYNC_RANGE_WAIT_AFTER);
	CHECKF(ret == 0, "%s: sync_range of 1 and 2 MiB returned %d (%s)",
	       name, ret, strerror(-ret));
	t_fill_fs(4096, -1);
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "%s: fsync returned %d (%s); the kernel's page cache writes the same data",
	       name, ret, strerror(-ret));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, img, ((size_t)NW << 20) + WLEN);
	unlink(path);
	t_unfill_fs();
	free(img);
	printf("  %s: appends into preallocated blocks on a full ext4: ok\n",
	       name);
}

int main(void)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	xl.fstype = "ext4";
	ret = xl_setup_shm("enospc-ext4-extend", 64ll << 20, "-b 4096 -m 0");
	if (ret != XL_OK) {
		printf("%s: %s\n", ret == XL_SKIP ? "SKIP" : "FAIL", xl.why);
		return ret == XL_SKIP ? 77 : 1;
	}
	if (!set_reserve(0)) {
		printf("SKIP: cannot set ext4's reserved_clusters (%s)\n",
		       resv_path[0] ? resv_path : "no sysfs entry");
		xl_cleanup();
		return 77;
	}
	if (!premise()) {
		printf("SKIP: this kernel's ext4 accepts a direct write that splits an extent on a full filesystem: nothing to test\n");
		xl_cleanup();
		return 77;
	}
	run_case(0, "write-back");
	run_case(WTIO_WRITETHROUGH, "write-through");
	xl_cleanup();
	printf("PASS\n");
	return 0;
}
