/* SPDX-License-Identifier: MIT */
/*
 * stat.c - the stat family and statx: a served file's size is wtio's
 * (the backing file may briefly be longer or shorter than what the
 * program wrote until the next fsync or close). In shared mode the size
 * of a file the holder serves is the holder's.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shim.h"

int shim_served_size(dev_t dev, ino_t ino, off_t *size)
{
	if (remote_on)
		return remote_size_ino(dev, ino, size);
	return shim_inode_size(dev, ino, size) ? SHIM_SIZE_SERVED :
						 SHIM_SIZE_KERNEL;
}

/* true: the kernel's answer may be stale, the caller stats again (once:
 * the holder had settled the file when it answered) */
static bool fix(struct stat *st)
{
	off_t size;

	if (!S_ISREG(st->st_mode))
		return false;
	switch (shim_served_size(st->st_dev, st->st_ino, &size)) {
	case SHIM_SIZE_SERVED:
		st->st_size = size;
		return false;
	case SHIM_SIZE_AGAIN:
		return true;
	}
	return false;
}

static int do_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	bool again = true;
	int r;

	shim_resolve();
restat:
	if (real.fstatat)
		r = real.fstatat(dirfd, path, st, flags);
	else
		r = (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
	/* the holder gone, the size of a file it may have served died with
	 * it: EIO, as every call on such a file */
	if (r == 0 && remote_on && remote_dead() && S_ISREG(st->st_mode) &&
	    path && *path && remote_path_served(dirfd, path))
		return (int)shim_ret(-EIO);
	if (r == 0 && fix(st) && again) {
		again = false;
		goto restat;
	}
	return r;
}

static int do_fstat(int fd, struct stat *st)
{
	int r;

	shim_resolve();
	if (remote_served(fd)) {
		int64_t res, size;
		off_t ls;
		int rr;

		if (remote_size_local(fd, &ls)) {
			r = real.fstat(fd, st);
			if (r == 0 && S_ISREG(st->st_mode))
				st->st_size = ls;
			return r;
		}
		rr = remote_fd_op(fd, HOP_SIZE, 0, 0, 0, &res, &size);

		if (rr < 0 || (rr == 1 && res < 0))
			return (int)shim_ret(rr < 0 ? rr : res);
		r = real.fstat(fd, st);
		if (r == 0 && rr == 1 && S_ISREG(st->st_mode))
			st->st_size = (off_t)size;
		return r;
	}
	if (real.fstat)
		r = real.fstat(fd, st);
	else
		r = (int)syscall(SYS_fstat, fd, st);
	/* only descriptors the table knows: no other one is served, and
	 * the registry's lock is not taken for them */
	if (r == 0 && fd_is_served(fd))
		fix(st);
	return r;
}

SHIM_API int stat(const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, 0);
}

SHIM_API int lstat(const char *path, struct stat *st)
{
	return do_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

SHIM_API int fstat(int fd, struct stat *st)
{
	return do_fstat(fd, st);
}

SHIM_API int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return do_fstatat(dirfd, path, st, flags);
}

/* On 64-bit Linux struct stat64 is struct stat. */
SHIM_API int stat64(const char *path, struct stat64 *st) __attribute__((alias("stat")));
SHIM_API int lstat64(const char *path, struct stat64 *st) __attribute__((alias("lstat")));
SHIM_API int fstat64(int fd, struct stat64 *st) __attribute__((alias("fstat")));
SHIM_API int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
	__attribute__((alias("fstatat")));

/* glibc before 2.33 compiled stat calls into these. */
SHIM_API int __xstat(int ver, const char *path, struct stat *st);
SHIM_API int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return do_fstatat(AT_FDCWD, path, st, 0);
}

SHIM_API int __lxstat(int ver, const char *path, struct stat *st);
SHIM_API int __lxstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return do_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

SHIM_API int __fxstat(int ver, int fd, struct stat *st);
SHIM_API int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return do_fstat(fd, st);
}

SHIM_API int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
			int flags);
SHIM_API int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
			int flags)
{
	(void)ver;
	return do_fstatat(dirfd, path, st, flags);
}

SHIM_API int __xstat64(int ver, const char *path, struct stat *st)
	__attribute__((alias("__xstat")));
SHIM_API int __lxstat64(int ver, const char *path, struct stat *st)
	__attribute__((alias("__lxstat")));
SHIM_API int __fxstat64(int ver, int fd, struct stat *st)
	__attribute__((alias("__fxstat")));
SHIM_API int __fxstatat64(int ver, int dirfd, const char *path,
			  struct stat *st, int flags)
	__attribute__((alias("__fxstatat")));

SHIM_API int statx(int dirfd, const char *path, int flags, unsigned int mask,
		   struct statx *stx)
{
	bool again = true;
	off_t size;
	int r;

	shim_resolve();
restat:
	if (real.statx)
		r = real.statx(dirfd, path, flags, mask, stx);
	else
		r = (int)syscall(SYS_statx, dirfd, path, flags, mask, stx);
	if (r == 0 && (stx->stx_mask & STATX_SIZE) &&
	    (stx->stx_mask & STATX_INO) && S_ISREG(stx->stx_mode)) {
		switch (shim_served_size(makedev(stx->stx_dev_major,
						 stx->stx_dev_minor),
					 stx->stx_ino, &size)) {
		case SHIM_SIZE_SERVED:
			stx->stx_size = (uint64_t)size;
			break;
		case SHIM_SIZE_AGAIN:
			if (again) {
				again = false;
				goto restat;
			}
			break;
		}
	}
	return r;
}
