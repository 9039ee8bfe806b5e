/* SPDX-License-Identifier: MIT */
/*
 * world.c - the holder opens the paths the program's processes send in
 * its own mount namespace and from its own root. A process that has
 * entered another (unshare -m and a bind mount, chroot, pivot_root: a
 * sandbox or a build root inside the program) names other files by the
 * same paths: served by the holder it would read and write the holder's
 * file of that path instead of its own. Its opens are not served: its
 * own open is then the kernel's, and if that names a file the holder
 * serves, it breaks the lease and the file passes through, coherent.
 * Asked at every open, since a process can chroot or unshare at any
 * time after its first connection.
 */
#include <stdio.h>
#include <sys/stat.h>

#include "world.h"

static bool same_inode(const char *mine, const char *theirs_fmt, pid_t pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof(path), theirs_fmt, (int)pid);
	return stat(mine, &a) == 0 && stat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool hworld_same(pid_t pid)
{
	return same_inode("/proc/self/ns/mnt", "/proc/%d/ns/mnt", pid) &&
	       same_inode("/proc/self/root/", "/proc/%d/root/", pid);
}
