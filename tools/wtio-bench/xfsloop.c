/* SPDX-License-Identifier: MIT */
/* xfsloop.c - the XFS-on-loop-on-/dev/shm test target. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "xfsloop.h"

static char img[256], loopdev[256], mnt[256];
static int mounted;

int xfsloop_sh(const char *cmd, char *out, size_t outlen)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[256] = "";
	if (fgets(line, sizeof(line), p) && out) {
		line[strcspn(line, "\n")] = 0;
		snprintf(out, outlen, "%s", line);
	}
	while (fgets(line, sizeof(line), p))
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void xfsloop_umount(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "umount '%s' 2>&1", dir);
	if (xfsloop_sh(cmd, NULL, 0)) {
		sleep(1);
		snprintf(cmd, sizeof(cmd), "umount -l '%s' 2>&1", dir);
		xfsloop_sh(cmd, NULL, 0);
	}
}

void xfsloop_teardown(void)
{
	char cmd[512];

	if (mounted) {
		xfsloop_umount(mnt);
		mounted = 0;
	}
	if (mnt[0]) {
		rmdir(mnt);
		mnt[0] = 0;
	}
	if (loopdev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d '%s' 2>&1", loopdev);
		xfsloop_sh(cmd, NULL, 0);
		loopdev[0] = 0;
	}
	if (img[0]) {
		unlink(img);
		img[0] = 0;
	}
}

int xfsloop_setup(uint64_t size, uint64_t su, unsigned int sw, char *dir,
		  size_t dirlen)
{
	char cmd[768], out[256];

	snprintf(img, sizeof(img), "/dev/shm/wtio-bench-xfs.%d.img", (int)getpid());
	int fd = open(img, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		fprintf(stderr, "wtio-bench: --xfs-loop: %s: %s\n", img, strerror(errno));
		img[0] = 0;
		return -1;
	}
	cleanup_add_final(xfsloop_teardown);
	/*
	 * Every page of the image now, before any measured mode and outside
	 * the kernel modes' memory cgroup: a loop device over shmem would
	 * otherwise charge the pages it allocates to the writer's cgroup.
	 */
	int err = posix_fallocate(fd, 0, (off_t)size);
	close(fd);
	if (err) {
		fprintf(stderr, "wtio-bench: --xfs-loop: cannot allocate the %llu MiB image %s "
			"in full: %s\n", (unsigned long long)(size >> 20), img, strerror(err));
		xfsloop_teardown();
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "losetup --direct-io=on -f --show '%s' 2>&1", img);
	if (xfsloop_sh(cmd, out, sizeof(out)) || strncmp(out, "/dev/loop", 9)) {
		fprintf(stderr, "wtio-bench: --xfs-loop: losetup failed: %s\n", out);
		xfsloop_teardown();
		return -1;
	}
	snprintf(loopdev, sizeof(loopdev), "%s", out);
	char stripe[96] = "";
	if (su)
		snprintf(stripe, sizeof(stripe), " -d su=%llu,sw=%u",
			 (unsigned long long)su, sw);
	snprintf(cmd, sizeof(cmd), "mkfs.xfs -f -q%s '%s' 2>&1", stripe, loopdev);
	if (xfsloop_sh(cmd, out, sizeof(out))) {
		fprintf(stderr, "wtio-bench: --xfs-loop: mkfs.xfs failed: %s\n", out);
		xfsloop_teardown();
		return -1;
	}
	snprintf(mnt, sizeof(mnt), "/tmp/wtio-bench-xfs.XXXXXX");
	if (!mkdtemp(mnt)) {
		mnt[0] = 0;
		fprintf(stderr, "wtio-bench: --xfs-loop: mkdtemp: %s\n", strerror(errno));
		xfsloop_teardown();
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "mount -t xfs '%s' '%s' 2>&1", loopdev, mnt);
	if (xfsloop_sh(cmd, out, sizeof(out))) {
		fprintf(stderr, "wtio-bench: --xfs-loop: mount failed: %s\n", out);
		xfsloop_teardown();
		return -1;
	}
	mounted = 1;
	snprintf(dir, dirlen, "%s", mnt);
	return 0;
}
