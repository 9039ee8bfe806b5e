/* SPDX-License-Identifier: MIT */
/*
 * stdio.c - fopen and fdopen on served files. glibc's stdio calls its own
 * internal read/write/lseek, which no preload can reach, so a served file
 * gets a stream of its own made with fopencookie(3) whose callbacks are
 * the shim's read/write/lseek/close on the descriptor; fileno() of it
 * returns the descriptor. freopen cannot be given such a stream (the
 * FILE object is the caller's): a file freopen'ed on the paths passes
 * through, after the shim has written back and stopped caching it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

int shim_openat(int dirfd, const char *path, int flags, mode_t mode);

static int mode_flags(const char *mode, int *flags)
{
	int f;

	switch (mode[0]) {
	case 'r': f = O_RDONLY; break;
	case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return -EINVAL;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++) {
		switch (*m) {
		case '+': f = (f & ~O_ACCMODE) | O_RDWR; break;
		case 'x': f |= O_EXCL; break;
		case 'e': f |= O_CLOEXEC; break;
		default: break;
		}
	}
	*flags = f;
	return 0;
}

static ssize_t ck_read(void *c, char *buf, size_t n)
{
	return read((int)(long)c, buf, n);
}

static ssize_t ck_write(void *c, const char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = write((int)(long)c, buf + done, n - done);

		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;	/* fewer bytes than asked: the stream errs */
}

static int ck_seek(void *c, off64_t *off, int whence)
{
	off_t r = lseek((int)(long)c, *off, whence);

	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int ck_close(void *c)
{
	return close((int)(long)c);
}

/* A stream over served descriptor fd; closes fd on failure. */
static FILE *cookie_stream(int fd, const char *mode)
{
	cookie_io_functions_t io = {
		.read = ck_read, .write = ck_write,
		.seek = ck_seek, .close = ck_close,
	};
	char m[8];
	size_t i = 0;
	FILE *f;

	/* fopencookie takes the plain mode letters only */
	m[i++] = mode[0];
	for (const char *p = mode + 1; *p && *p != ',' && i < 3; p++)
		if (*p == '+')
			m[i++] = '+';
	m[i] = 0;
	f = fopencookie((void *)(long)fd, m, io);
	if (!f)
		return NULL;
	f->_fileno = fd;	/* fileno() works; the cookie calls use fd */
	if (mode[0] == 'a')
		fseeko(f, 0, SEEK_END);
	return f;
}

SHIM_API FILE *fopen(const char *path, const char *mode)
{
	int flags, fd, e;
	FILE *f;

	shim_resolve();
	if (!path || !mode || mode_flags(mode, &flags))
		return real.fopen(path, mode);
	shim_init();
	if (shim_cfg.disabled)
		return real.fopen(path, mode);
	fd = shim_openat(AT_FDCWD, path, flags, 0666);
	if (fd < 0)
		return NULL;
	if (fd_is_served(fd) || remote_served(fd))
		f = cookie_stream(fd, mode);
	else
		f = real.fdopen(fd, mode);
	if (!f) {
		e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

SHIM_API FILE *fopen64(const char *path, const char *mode)
	__attribute__((alias("fopen")));

SHIM_API FILE *fdopen(int fd, const char *mode)
{
	int flags;

	shim_resolve();
	if ((fd_is_served(fd) || remote_served(fd)) && mode &&
	    !mode_flags(mode, &flags))
		return cookie_stream(fd, mode);
	return real.fdopen(fd, mode);
}

SHIM_API FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	struct shim_ofd *o;
	FILE *f;
	int fd;

	shim_resolve();
	f = real.freopen(path, mode, stream);
	if (!f)
		return f;
	/* the stream's descriptor was opened inside libc: if the table
	 * knew that number it is stale now */
	fd = fileno(f);
	if ((o = fd_remove(fd)))
		ofd_put(o);
	/* shared: libc's own open of the file broke the holder's lease, and
	 * the holder has passed it through already */
	if (remote_on) {
		remote_forget(fd);
		return f;
	}
	/* Another descriptor of this process may serve the same file:
	 * stop that, the stream writes past the cache. */
	if (fd >= 0) {
		int probe = open(path ? path : "/dev/null", O_RDONLY | O_CLOEXEC);

		if (probe >= 0) {
			if ((o = fd_get(probe))) {
				ofd_demote(o);
				ofd_put(o);
			}
			shim_close_internal(probe);
		}
	}
	return f;
}

SHIM_API FILE *freopen64(const char *path, const char *mode, FILE *stream)
	__attribute__((alias("freopen")));
