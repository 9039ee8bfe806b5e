/* SPDX-License-Identifier: MIT */
/*
 * test_geometry - wtio_geometry_probe() on real files.
 *
 *  1. A file in the current directory, the directory itself, /dev/null and
 *     bad descriptors: sane values, or the documented fallbacks.
 *  2. As root with loop devices and xfsprogs: an XFS image made with
 *     "mkfs.xfs -d su=64k,sw=4", mounted with "mount -o loop" and again
 *     over "losetup --direct-io=on"; the probe must report
 *     stripe_unit 65536, stripe_width 262144 from "xfs", and alignments
 *     that an O_DIRECT write actually accepts.
 *
 * Exit status: 0 pass, 1 fail, 77 skip (part 2 impossible here; the
 * reason is printed). Everything mounted or attached is undone on every
 * path, including SIGTERM from the test harness.
 */
#include "geometry.h"
#include "xfs_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define SKIP 77

static int failures;

#define CHECK(cond, what)                                                    \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__,    \
				__LINE__, (what), #cond);                    \
			failures++;                                          \
		}                                                            \
	} while (0)

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void print_geo(const char *label, const struct wtio_geometry *g)
{
	printf("%s: dio_mem_align=%u dio_offset_align=%u blksize=%u "
	       "atomic=%u..%u/%u stripe=%u/%u (%s)\n",
	       label, g->dio_mem_align, g->dio_offset_align, g->blksize,
	       g->atomic_unit_min, g->atomic_unit_max, g->atomic_segments_max,
	       g->stripe_unit, g->stripe_width,
	       g->stripe_source ? g->stripe_source : "(null)");
}

static void check_sane(const char *label, const struct wtio_geometry *g)
{
	print_geo(label, g);
	CHECK(is_pow2(g->dio_mem_align), label);
	CHECK(g->dio_mem_align >= 512, label);
	CHECK(g->dio_mem_align <= (1u << 24), label);
	CHECK(is_pow2(g->dio_offset_align), label);
	CHECK(g->dio_offset_align >= 512, label);
	CHECK(g->dio_offset_align <= (1u << 24), label);
	CHECK(g->blksize > 0, label);
	if (g->atomic_unit_min || g->atomic_unit_max) {
		CHECK(is_pow2(g->atomic_unit_min), label);
		CHECK(is_pow2(g->atomic_unit_max), label);
		CHECK(g->atomic_unit_min <= g->atomic_unit_max, label);
	} else {
		CHECK(g->atomic_segments_max == 0, label);
	}
	CHECK(g->stripe_source != NULL, label);
	if (!g->stripe_source)
		return;
	CHECK(!strcmp(g->stripe_source, "xfs") ||
	      !strcmp(g->stripe_source, "sysfs") ||
	      !strcmp(g->stripe_source, "none"), label);
	if (!strcmp(g->stripe_source, "none")) {
		CHECK(g->stripe_unit == 0, label);
		CHECK(g->stripe_width == 0, label);
	} else {
		CHECK(g->stripe_unit > 0, label);
		CHECK(g->stripe_width >= g->stripe_unit, label);
		CHECK(g->stripe_unit && g->stripe_width % g->stripe_unit == 0,
		      label);
	}
}

static void check_fallbacks(const char *label, const struct wtio_geometry *g)
{
	print_geo(label, g);
	CHECK(g->dio_mem_align == 4096, label);
	CHECK(g->dio_offset_align == 4096, label);
	CHECK(g->atomic_unit_min == 0 && g->atomic_unit_max == 0, label);
	CHECK(g->stripe_unit == 0 && g->stripe_width == 0, label);
	CHECK(g->stripe_source && !strcmp(g->stripe_source, "none"), label);
}

/* Part 1: whatever filesystem the current directory is on. */
static void test_local(void)
{
	struct wtio_geometry g;
	char name[] = "test_geometry.tmp.XXXXXX";
	struct stat st;
	int fd, ret;

	fd = mkstemp(name);
	if (fd < 0) {
		perror("mkstemp in the current directory");
		failures++;
		return;
	}
	unlink(name);
	CHECK(write(fd, "wtio", 4) == 4, "write temp file");
	ret = wtio_geometry_probe(fd, &g);
	CHECK(ret == 0, "probe cwd file");
	check_sane("cwd file", &g);
	if (fstat(fd, &st) == 0 && st.st_blksize > 0)
		CHECK(g.blksize == (uint32_t)st.st_blksize,
		      "blksize matches st_blksize");
	close(fd);

	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd >= 0, "open cwd");
	if (fd >= 0) {
		ret = wtio_geometry_probe(fd, &g);
		CHECK(ret == 0, "probe cwd directory");
		check_sane("cwd directory", &g);
		close(fd);
	}

	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		ret = wtio_geometry_probe(fd, &g);
		CHECK(ret == 0, "probe /dev/null");
		check_sane("/dev/null", &g);
		close(fd);
	}

	/* Bad descriptors: an error, and the fallbacks filled in anyway. */
	memset(&g, 0xa5, sizeof(g));
	ret = wtio_geometry_probe(-1, &g);
	CHECK(ret == -EBADF, "probe fd -1");
	check_fallbacks("fd -1", &g);

	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		memset(&g, 0xa5, sizeof(g));
		ret = wtio_geometry_probe(fd, &g);
		CHECK(ret == -EBADF, "probe closed fd");
		check_fallbacks("closed fd", &g);
	}
}

/* ---- Part 2: a striped XFS image on a loop device (xfs_loop.h). ---- */

/* Probe a file on the mounted image and do one O_DIRECT write with the
 * reported alignment. */
static void check_striped(const char *label)
{
	struct wtio_geometry g;
	char path[256];
	void *buf = NULL;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/file", xl.mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC,
		  0644);
	CHECK(fd >= 0, label);
	if (fd < 0) {
		perror(path);
		return;
	}
	ret = wtio_geometry_probe(fd, &g);
	CHECK(ret == 0, label);
	check_sane(label, &g);
	CHECK(g.stripe_unit == 65536, label);
	CHECK(g.stripe_width == 262144, label);
	CHECK(g.stripe_source && !strcmp(g.stripe_source, "xfs"), label);
	CHECK(g.blksize >= 4096, label);

	/* The alignment must be enough for the kernel. */
	if (posix_memalign(&buf, g.dio_mem_align, g.dio_offset_align) == 0) {
		memset(buf, 'x', g.dio_offset_align);
		ret = (int)pwrite(fd, buf, g.dio_offset_align,
				  (off_t)g.dio_offset_align);
		if (ret < 0)
			perror("O_DIRECT pwrite with the probed alignment");
		CHECK(ret == (int)g.dio_offset_align,
		      "O_DIRECT write at probed alignment");
		free(buf);
	}
	close(fd);
	unlink(path);

	/* The directory gives the same stripe. */
	fd = open(xl.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		ret = wtio_geometry_probe(fd, &g);
		CHECK(ret == 0 && g.stripe_unit == 65536 &&
		      g.stripe_width == 262144, "mount point directory");
		close(fd);
	}
}

/* Returns 0 done, SKIP with a printed reason when it cannot run here. */
static int test_xfs_loop(void)
{
	int fd, ret;

	ret = xl_make("geometry", "-d su=64k,sw=4");
	if (ret == XL_SKIP) {
		printf("SKIP: %s\n", xl.why);
		return SKIP;
	}
	if (ret != XL_OK) {
		fprintf(stderr, "FAIL: %s\n", xl.why);
		failures++;
		return 0;
	}

	/* 1: mount -o loop. */
	ret = xl_mount_loop();
	if (ret != XL_OK) {
		printf("SKIP: %s\n", xl.why);
		return SKIP;
	}
	check_striped("xfs via mount -o loop");
	if (xl_umount() != XL_OK) {
		fprintf(stderr, "FAIL: %s\n", xl.why);
		failures++;
		return 0;
	}

	/* 2: losetup --direct-io=on, then mount the loop device. */
	ret = xl_mount_dio();
	if (ret != XL_OK) {
		printf("SKIP: %s\n", xl.why);
		return SKIP;
	}
	check_striped("xfs via losetup --direct-io=on");

	/* The loop block device itself: sane, and no XFS stripe. */
	fd = open(xl.loopdev, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		struct wtio_geometry g;

		CHECK(wtio_geometry_probe(fd, &g) == 0, "probe loop device");
		check_sane("loop block device", &g);
		CHECK(g.stripe_source && strcmp(g.stripe_source, "xfs"),
		      "block device is not XFS");
		close(fd);
	}
	return 0;
}

int main(void)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);

	test_local();
	ret = test_xfs_loop();
	xl_cleanup();

	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	if (ret == SKIP)
		return SKIP;
	printf("PASS\n");
	return 0;
}
