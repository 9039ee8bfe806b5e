/* SPDX-License-Identifier: MIT */
/*
 * t_fill.h - fill the image of xfs_loop.h to its last block, for the
 * tests of a full filesystem: fallocate into <mnt>/filler0 in halving
 * sizes until even the smallest is refused. The file <mnt>/hole-probe is
 * made first (a create needs room too), for the test's own check that
 * no room is left.
 */
#ifndef WTIO_T_FILL_H
#define WTIO_T_FILL_H

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include "helpers.h"
#include "xfs_loop.h"

/* <mnt>/filler0, for a test that punches room into it or reads it. */
static inline const char *t_filler(void)
{
	static char p[256];

	return xl_path(p, sizeof(p), "filler0");
}

static inline const char *t_fill_probe(void)
{
	static char p[256];

	return xl_path(p, sizeof(p), "hole-probe");
}

/*
 * Take every block down to `min` bytes. The sync() before cleans every
 * file; redirty_fd, if not -1, is dirtied again after it, so that the
 * refusals (after which XFS trims the speculative preallocation of clean
 * files) leave its preallocation be.
 */
static inline void t_fill_fs(int64_t min, int redirty_fd)
{
	int64_t len;
	off_t cur;
	struct stat st;
	int fd;

	fd = open(t_fill_probe(), O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	close(fd);
	sync();
	if (redirty_fd != -1)
		CHECK_EQ(pwrite(redirty_fd, "x", 1, 0), 1);
	fd = open(t_filler(), O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	for (len = 256ll << 20; len >= min; len /= 2) {
		CHECK(fstat(fd, &st) == 0);
		cur = st.st_size;
		while (fallocate(fd, 0, cur, len) == 0)
			cur += len;
	}
	CHECK(fsync(fd) == 0);
	close(fd);
}

/* Every block taken (to 1 KiB), then `room` bytes freed from the
 * filler's middle, and checked: no more room than that. */
static inline void t_fill_fs_leaving(int64_t room)
{
	int fd;

	t_fill_fs(1024, -1);
	fd = open(t_filler(), O_RDWR);
	CHECK(fd >= 0);
	if (room)
		CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				1 << 20, room) == 0);
	CHECK(fsync(fd) == 0);
	close(fd);
	fd = open(t_fill_probe(), O_RDWR);
	CHECK(fd >= 0);
	CHECKF(fallocate(fd, 0, 0, room + (64 << 10)) != 0 && errno == ENOSPC,
	       "the filesystem has more room than the %lld bytes freed",
	       (long long)room);
	CHECK(ftruncate(fd, 0) == 0);
	close(fd);
}

static inline void t_unfill_fs(void)
{
	unlink(t_filler());
	unlink(t_fill_probe());
	sync();
}

#endif
