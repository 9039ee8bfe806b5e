/* SPDX-License-Identifier: MIT */
/*
 * tight.c - --tight: keep the filesystem under the file nearly full with
 * a filler file beside it (FILE.fill), so that writes meet ENOSPC. A
 * write may then be refused or cut short, as the kernel's is; whatever a
 * call acknowledged must reach the disk, and fsync, sync_file_range and
 * close must still succeed: dirty data that finds no room at write-back
 * is data lost after the write reported success.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fsx.h"

static int fill_fd = -1;
static char fill_path[4096];

int fsx_tight_start(const char *path)
{
	int n = snprintf(fill_path, sizeof(fill_path), "%s.fill", path);

	if (n < 0 || (size_t)n >= sizeof(fill_path)) {
		fprintf(stderr, "wtio-fsx: --tight: path too long\n");
		return -1;
	}
	fill_fd = open(fill_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fill_fd < 0) {
		fprintf(stderr, "wtio-fsx: --tight: %s: %s\n", fill_path,
			strerror(errno));
		return -1;
	}
	/* A failure exits: the filesystem is not left full. */
	atexit(fsx_tight_end);
	return 0;
}

static int64_t fs_free(void)
{
	struct statvfs sv;

	if (fstatvfs(fill_fd, &sv))
		return -1;
	/* root may take ext4's reserved blocks too */
	return (int64_t)(geteuid() ? sv.f_bavail : sv.f_bfree) *
	       (int64_t)sv.f_frsize;
}

static int64_t fill_size(void)
{
	struct stat st;

	return fstat(fill_fd, &st) ? -1 : st.st_size;
}

/*
 * What statvfs calls free is not what a write can take (ext4 keeps
 * clusters back for metadata, an allocation needs its own), so: fill
 * the filesystem until not even 4 KiB more fits, then cut want_free
 * bytes off the filler's end.
 */
uint64_t fsx_tight_set(uint64_t want_free)
{
	int64_t len = fs_free(), size;

	if (len < 0)
		return 0;
	len = (len + 4095) & ~(int64_t)4095;
	if (len < 4096)
		len = 4096;
	while (len >= 4096) {
		size = fill_size();
		if (size < 0)
			return 0;
		if (fallocate(fill_fd, 0, size, len) != 0)
			len = (len / 2) & ~(int64_t)4095;
	}
	size = fill_size();
	if (size < 0)
		return 0;
	if (ftruncate(fill_fd, size > (int64_t)want_free ?
			       size - (int64_t)want_free : 0) != 0)
		return 0;
	len = fs_free();
	return len < 0 ? 0 : (uint64_t)len;
}

void fsx_tight_end(void)
{
	if (fill_fd < 0)
		return;
	close(fill_fd);
	unlink(fill_path);
	fill_fd = -1;
}
