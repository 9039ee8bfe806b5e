/* SPDX-License-Identifier: MIT */
/*
 * times.c - futimens, utimensat and futimes on served files.
 *
 * tar, gzip and xz write a file and then set its times with futimens()
 * before they close it. On the kernel those times stay: write-back of the
 * page cache never touches them. wtio's write-back at close is a direct
 * write (and the exact-size step an ftruncate), both of which set the
 * mtime to the time of the close. So the file is written back first (data
 * and exact size, the cache kept), the times are set, the result is
 * remembered, and after wtio's last write of the file (its handle's
 * close, a demotion) they are put back, unless the program wrote since,
 * as the kernel would then have moved the mtime too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#include "shim.h"

static int (*next_futimens)(int, const struct timespec[2]);
static int (*next_utimensat)(int, const char *, const struct timespec[2],
			     int);

static void times_resolve(void)
{
	if (!__atomic_load_n(&next_utimensat, __ATOMIC_ACQUIRE)) {
		next_futimens = (__typeof__(next_futimens))
			dlsym(RTLD_NEXT, "futimens");
		__atomic_store_n(&next_utimensat, (__typeof__(next_utimensat))
				 dlsym(RTLD_NEXT, "utimensat"),
				 __ATOMIC_RELEASE);
	}
}

/* The description of a served fd (referenced), or NULL. */
static struct shim_ofd *served(int fd)
{
	if (fd < 0)
		return NULL;
	return fd_get(fd);
}

/* What the kernel made of the times just set, to put back later. */
static void remember(struct shim_ofd *o)
{
	struct stat st;

	if (real.fstat(o->realfd, &st) == 0) {
		o->times[0] = st.st_atim;
		o->times[1] = st.st_mtim;
		atomic_store(&o->times_kept, o->wf != NULL);
	}
}

/* Set ts on o's file after writing it back; remember what was set. */
static int served_set(struct shim_ofd *o, const struct timespec ts[2])
{
	int ret;

	/* Nothing left for a later write-back to stamp with its own time. */
	ofd_flush(o, false);
	ret = next_futimens(o->realfd, ts);
	if (ret == 0)
		remember(o);
	return ret;
}

void shim_times_restore(struct shim_ofd *o)
{
	/* the shim's own descriptor of the description: the program's may
	 * be closing (a placeholder by now, fdrace.c) or replaced by dup2 */
	int fd = o->inode->lock_fd >= 0 ? o->inode->lock_fd : o->realfd;

	if (!atomic_exchange(&o->times_kept, false))
		return;
	times_resolve();
	if (next_futimens(fd, o->times) < 0)
		shim_debug("fd %d: could not put back the times it set: %m",
			   o->realfd);
}

SHIM_API int futimens(int fd, const struct timespec ts[2])
{
	struct shim_ofd *o;
	int ret;

	times_resolve();
	/* shared: the holder's later write-back would move them */
	if (remote_served(fd) && (ret = remote_demote_fd(fd, HDEMOTE_PROGRAM)) < 0)
		return (int)shim_ret(ret);
	if (!(o = served(fd)))
		return next_futimens(fd, ts);
	ret = served_set(o, ts);
	ofd_put(o);
	return ret;
}

SHIM_API int utimensat(int dirfd, const char *path,
		       const struct timespec ts[2], int flags)
{
	struct shim_ofd *o;
	int ret;

	/* glibc declares path nonnull (and fails a NULL one with EINVAL,
	 * which next_utimensat keeps): hide it from the optimiser so that
	 * the NULL tests stay. */
	__asm__("" : "+r"(path));
	times_resolve();
	/* An empty path with AT_EMPTY_PATH is the descriptor's own file,
	 * as futimens. By path, a file this process serves is rare (tar and
	 * gzip use the descriptor): it is written back first all the same. */
	if (path && !*path && (flags & AT_EMPTY_PATH) && remote_served(dirfd))
		return futimens(dirfd, ts);
	if (path && !*path && (flags & AT_EMPTY_PATH) && (o = served(dirfd))) {
		ret = served_set(o, ts);
		ofd_put(o);
		return ret;
	}
	if (path && *path) {
		struct stat st;

		if (fstatat(dirfd, path, &st, flags & AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) &&
		    (o = shim_inode_ofd(st.st_dev, st.st_ino))) {
			ofd_flush(o, false);
			ret = next_utimensat(dirfd, path, ts, flags);
			if (ret == 0)
				remember(o);
			ofd_put(o);
			return ret;
		}
	}
	return next_utimensat(dirfd, path, ts, flags);
}

SHIM_API int futimes(int fd, const struct timeval tv[2])
{
	struct timespec ts[2];

	if (!tv)
		return futimens(fd, NULL);
	for (int i = 0; i < 2; i++) {
		ts[i].tv_sec = tv[i].tv_sec;
		ts[i].tv_nsec = tv[i].tv_usec * 1000;
	}
	return futimens(fd, ts);
}
