/* SPDX-License-Identifier: MIT */
/*
 * open.c - the open family, close, dup, fcntl, lockf and flock. In
 * shared mode (remote.h) a served file is the holder's: its open, the
 * references of its descriptors and its flags are requests to it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "shim.h"
#include "stdio_std.h"

int shim_take_close_err(void);

__thread int shim_handoff_fd = -1;

static bool takes_mode(int flags)
{
	return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE;
}

/* The open everything funnels into: the kernel opens the file (without
 * O_DIRECT, and without O_TRUNC, which wtio or the passthrough applies
 * unless the open created the file), then the descriptor is served by
 * wtio if its file is under the paths. */
int shim_openat(int dirfd, const char *path, int flags, mode_t mode);
int shim_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd, kflags = flags, saved;

	shim_resolve();
	shim_init();
	if (shim_cfg.disabled || (flags & (O_PATH | O_DIRECTORY)) ||
	    (flags & __O_TMPFILE) == __O_TMPFILE)
		return real.openat(dirfd, path, flags, mode);
	saved = errno;
	if (remote_on) {
		int r = remote_open(dirfd, path, flags, mode, &fd);

		if (r == 1)
			errno = saved;
		if (r)
			return r == 1 ? fd : (int)shim_ret(r);
		return real.openat(dirfd, path, flags, mode);
	}
	kflags &= ~O_DIRECT;
	fd = -1;
	/* Access mode 3 (no reading or writing, for ioctls) truncates in
	 * the kernel's open too, and is never served: the kernel does it. */
	if ((flags & O_ACCMODE) != O_RDONLY &&
	    (flags & O_ACCMODE) != O_ACCMODE) {
		kflags &= ~O_TRUNC;
		/* A file this open creates has nothing to truncate (the
		 * kernel skips it): ask for the creation alone first, and
		 * spare it the ftruncate (a transaction for the times). */
		if ((flags & (O_CREAT | O_EXCL | O_TRUNC)) ==
		    (O_CREAT | O_TRUNC)) {
			fd = real.openat(dirfd, path, kflags | O_EXCL, mode);
			if (fd >= 0)
				flags &= ~O_TRUNC;
		}
	}
	if (fd < 0)
		fd = real.openat(dirfd, path, kflags, mode);
	if (fd < 0)
		return fd;
	errno = saved;
	return shim_adopt_open(fd, flags);
}

#define MODE_ARG(flags, mode)					\
	do {							\
		if (takes_mode(flags)) {			\
			va_list ap;				\
			va_start(ap, flags);			\
			mode = (mode_t)va_arg(ap, int);		\
			va_end(ap);				\
		}						\
	} while (0)

/* libwtio's own open, installed in its system call table (real.c): a
 * served file's descriptor must be the program's description (one
 * description per leased file), and a descriptor parked for the file is
 * reused before a new one is opened. */
int shim_lib_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	int fd;

	MODE_ARG(flags, mode);
	if (shim_handoff_fd >= 0) {
		fd = shim_dupfd_own(shim_handoff_fd);
		shim_handoff_fd = -1;
		return fd;
	}
	fd = shim_unpark(AT_FDCWD, path, flags);
	return fd >= 0 ? fd : real.open(path, flags, mode);
}

SHIM_API int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return shim_openat(AT_FDCWD, path, flags, mode);
}

SHIM_API int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return shim_openat(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

SHIM_API int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return shim_openat(dirfd, path, flags, mode);
}

SHIM_API int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return shim_openat(dirfd, path, flags | O_LARGEFILE, mode);
}

/* _FORTIFY_SOURCE entry points (no mode argument: O_CREAT is refused at
 * compile time). */
SHIM_API int __open_2(const char *path, int flags);
SHIM_API int __open_2(const char *path, int flags)
{
	return shim_openat(AT_FDCWD, path, flags, 0);
}

SHIM_API int __open64_2(const char *path, int flags);
SHIM_API int __open64_2(const char *path, int flags)
{
	return shim_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}

SHIM_API int __openat_2(int dirfd, const char *path, int flags);
SHIM_API int __openat_2(int dirfd, const char *path, int flags)
{
	return shim_openat(dirfd, path, flags, 0);
}

SHIM_API int __openat64_2(int dirfd, const char *path, int flags);
SHIM_API int __openat64_2(int dirfd, const char *path, int flags)
{
	return shim_openat(dirfd, path, flags | O_LARGEFILE, 0);
}

SHIM_API int creat(const char *path, mode_t mode)
{
	return shim_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

SHIM_API int creat64(const char *path, mode_t mode)
{
	return shim_openat(AT_FDCWD, path,
			   O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}

/* close, by the program (own = false) or by the shim for a descriptor it
 * opened itself (own: parked while the program holds POSIX locks on the
 * file, see locks.c). */
static int close_fd(int fd, bool own)
{
	struct shim_ofd *o;
	bool shielded = false;
	int ret, err = 0;

	if (!own) {
		fd_note_closed(fd);
		/* from here a call racing the close gets EBADF, never the
		 * served description unserved (fdrace.c); the program's
		 * locks go as at the close */
		if (fd_is_served(fd)) {
			shim_lock_prog_close(fd);
			shielded = fd_shield(fd);
		}
	}
	o = fd_remove(fd);
	if (o) {
		/* may park wtio's and the lock descriptor of the file */
		ofd_put(o);
		err = shim_take_close_err();
	}
	if (own) {
		ret = shim_close_own(fd);
	} else {
		if (!shielded)
			shim_lock_prog_close(fd);
		ret = real.close(fd);
	}
	if (ret == 0 && err < 0) {
		errno = -err;
		return -1;
	}
	return ret;
}

int shim_close_internal(int fd)
{
	return close_fd(fd, true);
}

SHIM_API int close(int fd)
{
	shim_resolve();
	if (shim_vfork_child())
		return real.close(fd);
	if (remote_on && rc_own_fd(fd))	/* the holder connection moves */
		rc_evict(fd);
	if (remote_slot(fd)) {
		int r = remote_close(fd);

		if (r != 1)
			return (int)shim_ret(r);
	}
	/* libwtio's own closes come through shim_close_internal (its
	 * system call table, real.c), never here */
	return close_fd(fd, false);
}

/* newfd is about to be replaced: forget what the table knew of it. */
static void drop_slot(int newfd)
{
	struct shim_ofd *o = fd_remove(newfd);

	if (o) {
		ofd_put(o);
		shim_take_close_err();
	}
}

/*
 * May a served description be moved onto newfd (dup2, dup3, F_DUPFD)?
 * Libc's stdio (a shell's builtins, dd's stdout stream) reads and writes
 * 0 and 1 from inside libc: those two only once its streams go through
 * the shim (stdio_std.c). Never 2: libc's fatal messages write there
 * directly. Otherwise the description is shared, so the file is written
 * back and passed through from now on.
 */
static bool dup_target_ok(int newfd)
{
	if (newfd > STDERR_FILENO)
		return true;
	if (newfd == STDERR_FILENO || !shim_std_hooked())
		return false;
	shim_debug("fd %d: served on this number too", newfd);
	return true;
}

static int dup_to(int oldfd, int newfd)
{
	struct shim_ofd *o;

	if (newfd < 0)
		return newfd;
	if (remote_on)
		return remote_dup(oldfd, newfd);
	o = fd_get(oldfd);
	if (o) {
		if (newfd < fd_table_size() && dup_target_ok(newfd))
			fd_install(newfd, o);
		else
			ofd_demote(o);
		ofd_put(o);
	}
	return newfd;
}

SHIM_API int dup(int fd)
{
	shim_resolve();
	if (shim_vfork_child())
		return real.dup(fd);
	return dup_to(fd, real.dup(fd));
}

/* dup2/dup3 onto a served newfd: release its description while newfd
 * still names its file (writing back looks at the file), unless the call
 * is bound to fail on a bad oldfd and must leave newfd alone. */
static void release_newfd(int oldfd, int newfd)
{
	bool served = fd_is_served(newfd);

	fd_not_placeholder(newfd);
	if (oldfd == newfd || (!served && !shim_locks_any()) ||
	    real.fcntl(oldfd, F_GETFD) < 0)
		return;
	/* the implicit close of newfd drops the program's locks on its file */
	shim_lock_prog_close(newfd);
	if (served) {
		/* a racing call gets EBADF until the dup lands, not the
		 * served description unserved (fdrace.c) */
		fd_note_closed(newfd);
		fd_shield(newfd);
		drop_slot(newfd);
	}
}

/* Shared mode, after the dup2/dup3 call: the new descriptor is oldfd's
 * OFD, or whatever it named before is dropped. */
static int shared_dup(int oldfd, int r)
{
	if (r < 0)
		return r;
	if (remote_slot(oldfd))
		return remote_dup(oldfd, r);
	remote_replaced(r);
	return r;
}

SHIM_API int dup2(int oldfd, int newfd)
{
	int r;

	shim_resolve();
	if (oldfd == newfd || shim_vfork_child())
		return real.dup2(oldfd, newfd);
	if (remote_on && rc_own_fd(newfd))
		rc_evict(newfd);
	if (remote_on)
		return shared_dup(oldfd, real.dup2(oldfd, newfd));
	release_newfd(oldfd, newfd);
	r = real.dup2(oldfd, newfd);
	if (r < 0)
		return r;
	drop_slot(newfd);
	return dup_to(oldfd, r);
}

SHIM_API int dup3(int oldfd, int newfd, int flags)
{
	int r;

	shim_resolve();
	if (shim_vfork_child())
		return real.dup3(oldfd, newfd, flags);
	if (remote_on && rc_own_fd(newfd))
		rc_evict(newfd);
	if (remote_on)
		return shared_dup(oldfd, real.dup3(oldfd, newfd, flags));
	release_newfd(oldfd, newfd);
	r = real.dup3(oldfd, newfd, flags);
	if (r < 0)
		return r;
	drop_slot(newfd);
	return dup_to(oldfd, r);
}

static bool is_lock_cmd(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK ||
	       cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
}

/* The lock call with fl (SEEK_CUR made SEEK_SET); a lock found by
 * F_GETLK goes back to the program's user. */
static int lock_call(int fd, int cmd, struct flock *fl, struct flock *user)
{
	int r = real.fcntl(fd, cmd, fl);

	if (r == 0 && (cmd == F_GETLK || cmd == F_OFD_GETLK)) {
		user->l_type = fl->l_type;
		if (fl->l_type != F_UNLCK) {
			user->l_whence = SEEK_SET;
			user->l_start = fl->l_start;
			user->l_len = fl->l_len;
			user->l_pid = fl->l_pid;
		}
	}
	return r;
}

/* A held lock would be dropped by the dup3 that hands the descriptor
 * its kernel description at a demotion (closing any descriptor of a file
 * drops the process's POSIX locks on it), and flock and OFD locks belong
 * to the description, which is the holder's: the file passes through
 * before its first lock. */
static bool takes_lock(int cmd, const struct flock *fl)
{
	if (cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW)
		return true;
	return (cmd == F_SETLK || cmd == F_SETLKW) && fl &&
	       fl->l_type != F_UNLCK;
}

/* fcntl on a descriptor the holder serves; *done false: fd is the
 * kernel's (now), the caller goes on. */
static int shared_fcntl(int fd, int cmd, void *arg, bool *done)
{
	int64_t res, val;
	int r;

	*done = true;
	if (is_lock_cmd(cmd)) {
		struct flock fl, *user = arg;

		if (takes_lock(cmd, user)) {
			r = remote_demote_fd(fd, HDEMOTE_LOCK);
			if (r < 0)
				return (int)shim_ret(r);
			*done = false;
			return 0;
		}
		if (!user || user->l_whence != SEEK_CUR) {
			*done = false;
			return 0;
		}
		r = remote_fd_op(fd, HOP_LSEEK, 0, SEEK_CUR, 0, &res, NULL);
		if (r < 0 || (r == 1 && res < 0))
			return (int)shim_ret(r < 0 ? r : res);
		if (r == 0) {
			*done = false;
			return 0;
		}
		fl = *user;
		fl.l_start += res;
		fl.l_whence = SEEK_SET;
		return lock_call(fd, cmd, &fl, user);
	}
	switch (cmd) {
	case F_GETFL: {
		/* O_ASYNC too: the kernel sets FASYNC on a description
		 * when the holder's lease is put on it; the program cannot
		 * have set it (that F_SETFL passes the file through) */
		const int mine = O_ACCMODE | O_APPEND | O_ASYNC | O_DIRECT |
				 O_NONBLOCK | O_NOATIME;

		r = remote_fd_op(fd, HOP_GETFL, 0, 0, 0, &res, &val);
		if (r < 0 || (r == 1 && res < 0))
			return (int)shim_ret(r < 0 ? r : res);
		if (r == 0)
			break;
		/* the description is the holder's (O_RDWR, O_DIRECT): the
		 * flags the program has are its OFD's */
		if (res > 0)
			val = res;
		r = real.fcntl(fd, F_GETFL);
		return r < 0 ? r : (r & ~mine) | ((int)val & mine);
	}
	case F_SETFL:
		if ((int)(long)arg & O_ASYNC)	/* a signal owner: the kernel's */
			break;
		r = remote_fd_op(fd, HOP_SETFL, (int)(long)arg, 0, 0, &res, NULL);
		if (r < 0)
			return (int)shim_ret(r);
		if (r == 1)
			return (int)shim_ret(res < 0 ? res : 0);
		*done = false;
		return 0;
	default:
		*done = false;
		return 0;
	}
	if (cmd == F_SETFL && remote_demote_fd(fd, HDEMOTE_PROGRAM) < 0)
		return (int)shim_ret(-EIO);
	*done = false;
	return 0;
}

static int shim_fcntl(int fd, int cmd, void *arg)
{
	struct shim_ofd *o;
	int r;

	if (remote_served(fd) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) {
		bool done;

		r = shared_fcntl(fd, cmd, arg, &done);
		if (done)
			return r;
	}

	if (is_lock_cmd(cmd)) {
		struct flock fl, *user = arg;

		if (!user)
			return real.fcntl(fd, cmd, arg);
		fl = *user;
		if (fl.l_whence == SEEK_CUR && (o = fd_get(fd))) {
			/* the served position is not the kernel's */
			pthread_mutex_lock(&o->pos_lock);
			fl.l_start += o->wf ? o->pos :
				real.lseek(fd, 0, SEEK_CUR);
			pthread_mutex_unlock(&o->pos_lock);
			fl.l_whence = SEEK_SET;
			ofd_put(o);
		}
		/* noted first: a close by the shim meanwhile must not drop
		 * the lock (see locks.c) */
		if ((cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK ||
		     cmd == F_OFD_SETLKW) && fl.l_type != F_UNLCK)
			shim_lock_note_served(fd);
		return lock_call(fd, cmd, &fl, user);
	}
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		if (shim_vfork_child())
			return real.fcntl(fd, cmd, arg);
		return dup_to(fd, real.fcntl(fd, cmd, arg));
	case F_GETFL:
		r = real.fcntl(fd, cmd, arg);
		if (r >= 0 && (o = fd_get(fd))) {
			/* served, the description has O_DIRECT and no
			 * O_APPEND (wtio's writes); show the program's */
			ofd_io_read(o);
			/* and the lease set FASYNC on it: the program's own
			 * O_ASYNC is in oflags */
			if (o->wf)
				r = (r & ~(O_APPEND | O_ASYNC)) |
				    (o->oflags & (O_APPEND | O_ASYNC));
			/* an O_WRONLY open is served on O_RDWR (fdtable.c) */
			r = (r & ~(O_DIRECT | O_ACCMODE)) |
			    (o->oflags & (O_DIRECT | O_ACCMODE));
			ofd_io_done(o);
			ofd_put(o);
		}
		return r;
	case F_SETFL: {
		const int settable = O_APPEND | O_ASYNC | O_DIRECT |
				     O_NOATIME | O_NONBLOCK;
		int v = (int)(long)arg;

		o = fd_get(fd);
		if (!o)
			return real.fcntl(fd, cmd, arg);
		/* Served: the description keeps wtio's O_DIRECT and no
		 * O_APPEND; passed through: the program's flags, but never
		 * O_DIRECT (the shim does that through wtio's flags). */
		ofd_io_read(o);
		if (o->wf)
			r = real.fcntl(fd, cmd, (void *)(long)
				       ((v & ~O_APPEND) | O_DIRECT));
		else
			r = real.fcntl(fd, cmd, (void *)(long)(v & ~O_DIRECT));
		if (r == 0)
			o->oflags = (o->oflags & ~settable) | (v & settable);
		ofd_io_done(o);
		ofd_put(o);
		return r;
	}
	case F_SETLEASE:
	case F_GETLEASE:
	case F_SETSIG:
	case F_SETOWN:
	case F_SETOWN_EX:
	case F_NOTIFY:
		/* the program's own lease or signal owner on the description
		 * would be the shim's: the file is the kernel's from now on */
		shim_demote_fd(fd, "the program sets a lease or an owner");
		return real.fcntl(fd, cmd, arg);
	default:
		return real.fcntl(fd, cmd, arg);
	}
}

SHIM_API int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	shim_resolve();
	return shim_fcntl(fd, cmd, arg);
}

SHIM_API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* glibc's lockf calls fcntl internally, past the interposer: redo it
 * here so that its whole-file form is clipped too. */
SHIM_API int lockf(int fd, int cmd, off_t len)
{
	struct flock fl = { .l_whence = SEEK_CUR, .l_start = 0, .l_len = len };

	shim_resolve();
	switch (cmd) {
	case F_TEST:
		fl.l_type = F_RDLCK;
		if (shim_fcntl(fd, F_GETLK, &fl) < 0)
			return -1;
		if (fl.l_type == F_UNLCK || fl.l_pid == getpid())
			return 0;
		errno = EACCES;
		return -1;
	case F_ULOCK:
		fl.l_type = F_UNLCK;
		return shim_fcntl(fd, F_SETLK, &fl);
	case F_LOCK:
		fl.l_type = F_WRLCK;
		return shim_fcntl(fd, F_SETLKW, &fl);
	case F_TLOCK:
		fl.l_type = F_WRLCK;
		return shim_fcntl(fd, F_SETLK, &fl);
	}
	errno = EINVAL;
	return -1;
}

SHIM_API int lockf64(int fd, int cmd, off_t len) __attribute__((alias("lockf")));

/* close_range(2): forget what the table knew of the closed range. */
SHIM_API int close_range(unsigned int first, unsigned int last, int flags);
SHIM_API int close_range(unsigned int first, unsigned int last, int flags)
{
	static int (*next)(unsigned int, unsigned int, int);
	unsigned int fd, top = (unsigned int)fd_table_size() - 1;

	shim_resolve();
	if (!next)
		next = (__typeof__(next))dlsym(RTLD_NEXT, "close_range");
	/* CLOSE_RANGE_CLOEXEC (4) closes nothing now */
	if (!(flags & 4) && !shim_vfork_child() && remote_on)
		for (fd = first; fd <= last && fd < RTAB_MAX; fd++)
			remote_close((int)fd);
	if (!(flags & 4) && !shim_vfork_child())
		for (fd = first; fd <= last && fd <= top; fd++) {
			struct shim_ofd *o;

			if (fd_is_served((int)fd)) {
				fd_note_closed((int)fd);
				fd_shield((int)fd);	/* fdrace.c */
			}
			o = fd_remove((int)fd);
			if (o) {
				ofd_put(o);
				shim_take_close_err();
			}
		}
	if (!(flags & 4) && !shim_vfork_child()) {
		shim_lock_range_closed(first, last);
		fd_range_closed(first, last);
	}
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (remote_on && !shim_vfork_child())
		return rc_close_range(first, last, flags, next);
	return next(first, last, flags);
}

/* flock: the lock belongs to the description, which is the holder's
 * while served (shared by every open of the file in the program). */
SHIM_API int flock(int fd, int op)
{
	static int (*next)(int, int);
	int r;

	if (!next)
		next = (__typeof__(next))dlsym(RTLD_NEXT, "flock");
	shim_resolve();
	if (remote_served(fd) && (r = remote_demote_fd(fd, HDEMOTE_LOCK)) < 0)
		return (int)shim_ret(r);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	/* the description must stay the program's (fdtable.c's
	 * restore_wronly replaces it otherwise) */
	if (!(op & LOCK_UN))
		shim_lock_note_served(fd);
	return next(fd, op);
}

/* closefrom(3) (glibc 2.34): its close_range is made inside libc. */
SHIM_API void closefrom(int lowfd);
SHIM_API void closefrom(int lowfd)
{
	static void (*next)(int);

	if (lowfd < 0)
		lowfd = 0;
	if (close_range((unsigned int)lowfd, ~0u, 0) == 0)
		return;
	if (!next)
		next = (__typeof__(next))dlsym(RTLD_NEXT, "closefrom");
	if (next)	/* no close_range in this kernel: libc's loop */
		next(lowfd);
}
