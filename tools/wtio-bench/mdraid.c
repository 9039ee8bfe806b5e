/* SPDX-License-Identifier: MIT */
/*
 * mdraid.c - --md-raid: a real md RAID over loop devices on /dev/shm
 * images, XFS on it (mkfs.xfs takes the stripe from md), mounted for the
 * run and torn down at the end or on Ctrl-C. Needs root, mdadm and a
 * kernel with md; where md is missing it says so and nothing is made.
 * Not run on the machine this was written on (its kernel has no md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "raidtarget.h"
#include "raid_io.h"
#include "xfsloop.h"

static char img[RAID_MAX_DISKS][128], loopdev[RAID_MAX_DISKS][256];
static char mddev[128], mnt[128];
static unsigned int nr_img;
static int mounted;

static void mdraid_teardown(void)
{
	char cmd[1024];
	unsigned int k;

	if (mounted) {
		xfsloop_umount(mnt);
		mounted = 0;
	}
	if (mnt[0])
		rmdir(mnt);
	mnt[0] = 0;
	if (mddev[0]) {
		snprintf(cmd, sizeof(cmd), "mdadm --stop '%s' 2>&1", mddev);
		xfsloop_sh(cmd, NULL, 0);
		mddev[0] = 0;
	}
	for (k = 0; k < nr_img; k++) {
		if (loopdev[k][0]) {
			snprintf(cmd, sizeof(cmd), "losetup -d '%.255s' 2>&1",
				 loopdev[k]);
			xfsloop_sh(cmd, NULL, 0);
		}
		unlink(img[k]);
		loopdev[k][0] = img[k][0] = 0;
	}
	nr_img = 0;
}

static int fail(const char *what, const char *out)
{
	fprintf(stderr, "wtio-bench: --md-raid: %s%s%s\n", what,
		out && *out ? ": " : "", out ? out : "");
	mdraid_teardown();
	return -1;
}

int mdraid_setup(const struct raid_spec *rs, uint64_t size, char *dir,
		 size_t dirlen)
{
	unsigned int nd = rs->disks - (rs->level == 5 ? 1 : 2), k;
	uint64_t msize = size / nd + (64u << 20);
	char cmd[4096], out[256];
	size_t n;

	if (access("/proc/mdstat", R_OK) && access("/sys/module/md_mod", F_OK)) {
		fprintf(stderr, "wtio-bench: --md-raid: this kernel has no md "
			"RAID (no /proc/mdstat, no /sys/module/md_mod: "
			"CONFIG_MD is off, or md_mod is not loaded - try "
			"modprobe md_mod). --raid=%u,%u,%lluk runs the wtio "
			"modes on the user-space RAID instead.\n", rs->level,
			rs->disks, (unsigned long long)rs->chunk >> 10);
		return -1;
	}
	if (geteuid() != 0)
		return fail("needs root (losetup, mdadm, mount)", NULL);
	if (xfsloop_sh("command -v mdadm 2>&1", out, sizeof(out)))
		return fail("mdadm is not installed", NULL);
	cleanup_add_final(mdraid_teardown);
	for (k = 0; k < rs->disks; k++) {
		int fd;

		snprintf(img[k], sizeof(img[k]), "/dev/shm/wtio-bench-md.%d.%u.img",
			 (int)getpid(), k);
		nr_img = k + 1;
		fd = open(img[k], O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || posix_fallocate(fd, 0, (off_t)msize)) {
			if (fd >= 0)
				close(fd);
			return fail("cannot make a member image in /dev/shm",
				    strerror(errno));
		}
		close(fd);
		snprintf(cmd, sizeof(cmd),
			 "losetup --direct-io=on -f --show '%s' 2>&1", img[k]);
		if (xfsloop_sh(cmd, out, sizeof(out)) ||
		    strncmp(out, "/dev/loop", 9))
			return fail("losetup failed", out);
		snprintf(loopdev[k], sizeof(loopdev[k]), "%s", out);
	}
	snprintf(mddev, sizeof(mddev), "/dev/md/wtio-bench-%d", (int)getpid());
	n = (size_t)snprintf(cmd, sizeof(cmd),
			     "mdadm --create '%s' --run --assume-clean "
			     "--metadata=1.2 --level=%u --raid-devices=%u "
			     "--chunk=%llu", mddev, rs->level, rs->disks,
			     (unsigned long long)rs->chunk >> 10);
	for (k = 0; k < rs->disks && n < sizeof(cmd); k++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " '%s'",
				      loopdev[k]);
	if (n < sizeof(cmd))
		snprintf(cmd + n, sizeof(cmd) - n, " 2>&1");
	if (xfsloop_sh(cmd, out, sizeof(out))) {
		mddev[0] = 0;
		return fail("mdadm --create failed", out);
	}
	snprintf(cmd, sizeof(cmd), "mkfs.xfs -f -q '%s' 2>&1", mddev);
	if (xfsloop_sh(cmd, out, sizeof(out)))
		return fail("mkfs.xfs failed", out);
	snprintf(mnt, sizeof(mnt), "/tmp/wtio-bench-md.XXXXXX");
	if (!mkdtemp(mnt)) {
		mnt[0] = 0;
		return fail("mkdtemp", strerror(errno));
	}
	snprintf(cmd, sizeof(cmd), "mount -t xfs '%s' '%s' 2>&1", mddev, mnt);
	if (xfsloop_sh(cmd, out, sizeof(out)))
		return fail("mount failed", out);
	mounted = 1;
	snprintf(dir, dirlen, "%s", mnt);
	fprintf(stderr, "wtio-bench: --md-raid: md RAID-%u over %u loop "
		"devices (images in /dev/shm), chunk %llu KiB, XFS mounted at "
		"%s; every mode runs on it\n", rs->level, rs->disks,
		(unsigned long long)rs->chunk >> 10, mnt);
	return 0;
}
