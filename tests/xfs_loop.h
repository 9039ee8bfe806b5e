/* SPDX-License-Identifier: MIT */
/*
 * xfs_loop.h - make and mount an XFS image on a loop device, for tests
 * that need a real XFS (stripe geometry, RWF_ATOMIC).
 *
 * One image per program (the state is global so that the signal handlers
 * and the atexit hook can undo it): a sparse file in a fresh directory
 * /tmp/wtio-<tag>-XXXXXX, mkfs.xfs with the given -d options, mounted on
 * <dir>/mnt either with "mount -o loop" or over "losetup --direct-io=on".
 * Everything mounted or attached is undone on every path: xl_cleanup() at
 * the end, at exit() (a failed CHECK), and on SIGTERM/SIGINT/SIGHUP.
 *
 * Every function that can fail returns XL_OK, XL_SKIP (cannot run here;
 * the reason is in xl.why) or XL_FAIL (a real failure; reason in xl.why).
 * The caller decides how to report: a skip prints "SKIP: <why>" or
 * "skipped part X: <why>" and exits 77 only if nothing else ran.
 */
#ifndef WTIO_TEST_XFS_LOOP_H
#define WTIO_TEST_XFS_LOOP_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define XL_OK 0
#define XL_SKIP 77
#define XL_FAIL (-1)

static struct {
	char dir[64];
	char img[128];
	char mnt[128];
	char loopdev[64];
	int mounted;
	int hooks;
	char why[256];
	/* NULL: xfs; "ext4" for the tests that compare the two */
	const char *fstype;
} xl;

static inline const char *xl_fstype(void)
{
	return xl.fstype ? xl.fstype : "xfs";
}

static inline int xl_run(const char *cmd)
{
	int st;

	printf("+ %s\n", cmd);
	fflush(stdout);
	st = system(cmd);
	if (st == -1)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128;
}

static inline int xl_set(int ret, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int xl_set(int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(xl.why, sizeof(xl.why), fmt, ap);
	va_end(ap);
	return ret;
}

/* Unmount the image (lazily if busy); keeps image and directory. */
static inline int xl_umount(void)
{
	char cmd[512];
	int ret = XL_OK;

	if (xl.mounted) {
		int tries;

		/* A file the test just closed can keep the mount busy for a
		 * moment (an I/O completing in another thread, a lazy final
		 * fput): a few tries before calling it busy. */
		snprintf(cmd, sizeof(cmd), "umount '%s' 2>/dev/null", xl.mnt);
		for (tries = 0; tries < 10 && xl_run(cmd) != 0; tries++)
			usleep(200 * 1000);
		snprintf(cmd, sizeof(cmd), "umount '%s'", xl.mnt);
		if (tries == 10 && xl_run(cmd) != 0) {
			snprintf(cmd, sizeof(cmd), "umount -l '%s'", xl.mnt);
			xl_run(cmd);
			ret = xl_set(XL_FAIL, "umount %s failed (busy?)", xl.mnt);
		}
		xl.mounted = 0;
	}
	if (xl.loopdev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d '%s'", xl.loopdev);
		if (xl_run(cmd) != 0 && ret == XL_OK)
			ret = xl_set(XL_FAIL, "losetup -d %s failed", xl.loopdev);
		xl.loopdev[0] = '\0';
	}
	return ret;
}

/* Undo everything: unmount, detach, remove image and directories. */
static inline void xl_cleanup(void)
{
	xl_umount();
	if (xl.img[0]) {
		unlink(xl.img);
		xl.img[0] = '\0';
	}
	if (xl.mnt[0]) {
		rmdir(xl.mnt);
		xl.mnt[0] = '\0';
	}
	if (xl.dir[0]) {
		rmdir(xl.dir);
		xl.dir[0] = '\0';
	}
}

static inline void xl_on_signal(int sig)
{
	/* Not async-signal-safe, but leaving a mount behind is worse. */
	xl_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static inline void xl_hooks(void)
{
	if (xl.hooks)
		return;
	xl.hooks = 1;
	atexit(xl_cleanup);
	signal(SIGTERM, xl_on_signal);
	signal(SIGINT, xl_on_signal);
	signal(SIGHUP, xl_on_signal);
}

static inline int xl_have_cmd(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

/* Can an XFS image be made and mounted here at all? */
static inline int xl_check_env(void)
{
	if (geteuid() != 0)
		return xl_set(XL_SKIP, "not root, cannot mount a loop device");
	if (access("/dev/loop-control", F_OK) != 0 &&
	    access("/dev/loop0", F_OK) != 0)
		return xl_set(XL_SKIP,
			      "no loop devices (/dev/loop-control missing)");
	char mkfs[32];

	snprintf(mkfs, sizeof(mkfs), "mkfs.%s", xl_fstype());
	if (!xl_have_cmd(mkfs) || !xl_have_cmd("losetup") ||
	    !xl_have_cmd("mount") || !xl_have_cmd("umount"))
		return xl_set(XL_SKIP, "%s, losetup or mount missing", mkfs);
	return XL_OK;
}

/*
 * Check the environment, then make a sparse image of size bytes in a
 * fresh <base>/wtio-<tag>-XXXXXX and run "mkfs.xfs -f -q <mkfs_opts>" on
 * it. Under 300 MiB mkfs.xfs refuses unless it believes it runs under
 * fstests (its TEST_DIR/TEST_DEV/QA_CHECK_FS bypass), which small images
 * set; their refusal is a skip, a large image's a failure.
 */
static inline int xl_make_sized(const char *base, const char *tag,
				long long size, const char *mkfs_opts)
{
	bool small = size < (300LL << 20);
	char cmd[512];
	int fd, ret;

	ret = xl_check_env();
	if (ret != XL_OK)
		return ret;
	xl_hooks();
	snprintf(xl.dir, sizeof(xl.dir), "%s/wtio-%s-XXXXXX", base, tag);
	if (!mkdtemp(xl.dir)) {
		ret = errno;
		xl.dir[0] = '\0';
		return xl_set(small ? XL_SKIP : XL_FAIL, "mkdtemp in %s: %s",
			      base, strerror(ret));
	}
	snprintf(xl.img, sizeof(xl.img), "%s/xfs.img", xl.dir);
	snprintf(xl.mnt, sizeof(xl.mnt), "%s/mnt", xl.dir);
	if (mkdir(xl.mnt, 0755) != 0) {
		xl.mnt[0] = '\0';
		return xl_set(XL_FAIL, "mkdir mount point: %s", strerror(errno));
	}
	fd = open(xl.img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size) != 0) {
		ret = errno;
		if (fd >= 0)
			close(fd);
		return xl_set(XL_FAIL, "create image %s: %s", xl.img,
			      strerror(ret));
	}
	close(fd);
	if (xl.fstype)
		snprintf(cmd, sizeof(cmd), "mkfs.%s -F -q %s '%s'", xl.fstype,
			 mkfs_opts, xl.img);
	else
		snprintf(cmd, sizeof(cmd), "%smkfs.xfs -f -q %s '%s'",
			 small ? "TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1 " : "",
			 mkfs_opts, xl.img);
	if (xl_run(cmd) != 0)
		return xl_set(small ? XL_SKIP : XL_FAIL,
			      "mkfs.%s %s refuses a %lld MiB image",
			      xl_fstype(), mkfs_opts, size >> 20);
	return XL_OK;
}

/* A sparse 1 GiB image in /tmp (XFS needs a 64 MiB log, so 300 MiB is
 * not enough); mkfs_opts e.g. "-d su=64k,sw=4". */
static inline int xl_make(const char *tag, const char *mkfs_opts)
{
	return xl_make_sized("/tmp", tag, 1024LL << 20, mkfs_opts);
}

/* Mount the image with "mount -o loop" (the loop device auto-clears). */
static inline int xl_mount_loop(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "mount -t %s -o loop '%s' '%s'",
		 xl_fstype(), xl.img, xl.mnt);
	if (xl_run(cmd) != 0)
		return xl_set(XL_SKIP, "cannot mount an %s image here (mount "
			      "-o loop failed: no privilege, no loop device or "
			      "no %s)", xl_fstype(), xl_fstype());
	xl.mounted = 1;
	return XL_OK;
}

/* Attach the image with "losetup --direct-io=on" and mount the device. */
static inline int xl_mount_dio(void)
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "losetup --find --show --direct-io=on '%s'", xl.img);
	printf("+ %s\n", cmd);
	fflush(stdout);
	p = popen(cmd, "r");
	if (p) {
		if (!fgets(xl.loopdev, sizeof(xl.loopdev), p))
			xl.loopdev[0] = '\0';
		if (pclose(p) != 0)
			xl.loopdev[0] = '\0';
		xl.loopdev[strcspn(xl.loopdev, "\n")] = '\0';
	}
	if (strncmp(xl.loopdev, "/dev/", 5) != 0) {
		xl.loopdev[0] = '\0';
		return xl_set(XL_SKIP, "losetup --direct-io=on failed");
	}
	snprintf(cmd, sizeof(cmd), "mount -t xfs '%s' '%s'", xl.loopdev,
		 xl.mnt);
	if (xl_run(cmd) != 0)
		return xl_set(XL_SKIP, "cannot mount XFS from %s", xl.loopdev);
	xl.mounted = 1;
	return XL_OK;
}

/* xl_make + xl_mount_dio: a mounted striped (or not) XFS, or why not. */
static inline int xl_setup(const char *tag, const char *mkfs_opts)
{
	int ret = xl_make(tag, mkfs_opts);

	if (ret == XL_OK)
		ret = xl_mount_dio();
	if (ret != XL_OK)
		xl_cleanup();
	return ret;
}

/* A small XFS (size bytes, "-d"/"-m" options in mkfs_opts) with its
 * image in /dev/shm, mounted with "mount -o loop": the filesystem the
 * ENOSPC tests fill in a moment. */
static inline int xl_setup_shm(const char *tag, long long size,
			       const char *mkfs_opts)
{
	int ret = xl_make_sized("/dev/shm", tag, size, mkfs_opts);

	if (ret == XL_OK)
		ret = xl_mount_loop();
	if (ret != XL_OK)
		xl_cleanup();
	return ret;
}

/* xl_setup_shm, or the end of the program: "SKIP: <why>" and exit 77
 * where it cannot run here, "FAIL: ..." and exit 1 where it failed. */
static inline void xl_setup_shm_or_exit(const char *tag, long long size,
					const char *mkfs_opts)
{
	int ret = xl_setup_shm(tag, size, mkfs_opts);

	if (ret == XL_OK)
		return;
	if (ret == XL_SKIP) {
		printf("SKIP: %s\n", xl.why);
		exit(XL_SKIP);
	}
	printf("FAIL: XFS setup: %s\n", xl.why);
	exit(1);
}

/* Bytes an unprivileged writer may still allocate on the mounted image
 * (-1: statvfs failed). */
static inline long long xl_avail(void)
{
	struct statvfs sv;

	if (statvfs(xl.mnt, &sv) != 0)
		return -1;
	return (long long)sv.f_bavail * (long long)sv.f_frsize;
}

/* "<mnt>/<name>" into buf. */
static inline const char *xl_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", xl.mnt, name);
	return buf;
}

#endif /* WTIO_TEST_XFS_LOOP_H */
