/* SPDX-License-Identifier: MIT */
/*
 * aliases.c - glibc's public second names of the file calls. libc.so.6
 * exports __read, __write, __pread64, __pwrite64, __lseek, __close,
 * __open and __open64 at its base version: a program or library that
 * calls them (assembly, some runtimes) would reach the kernel past the
 * interposers of read, write, ... They are the same calls here.
 * (__libc_pread, __mmap and the *_nocancel names are GLIBC_PRIVATE: a
 * program cannot link against them.)
 */
#include <stdarg.h>
#include <unistd.h>

#include "shim.h"

SHIM_API ssize_t __read(int fd, void *buf, size_t n);
SHIM_API ssize_t __read(int fd, void *buf, size_t n)
{
	return read(fd, buf, n);
}

SHIM_API ssize_t __write(int fd, const void *buf, size_t n);
SHIM_API ssize_t __write(int fd, const void *buf, size_t n)
{
	return write(fd, buf, n);
}

SHIM_API ssize_t __pread64(int fd, void *buf, size_t n, off_t off);
SHIM_API ssize_t __pread64(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off);
}

SHIM_API ssize_t __pwrite64(int fd, const void *buf, size_t n, off_t off);
SHIM_API ssize_t __pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

SHIM_API off_t __lseek(int fd, off_t off, int whence);
SHIM_API off_t __lseek(int fd, off_t off, int whence)
{
	return lseek(fd, off, whence);
}

SHIM_API int __close(int fd);
SHIM_API int __close(int fd)
{
	return close(fd);
}

static mode_t mode_arg(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE)
		return (mode_t)va_arg(ap, int);
	return 0;
}

SHIM_API int __open(const char *path, int flags, ...);
SHIM_API int __open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return shim_openat(AT_FDCWD, path, flags, mode);
}

SHIM_API int __open64(const char *path, int flags, ...);
SHIM_API int __open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return shim_openat(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}
