/* SPDX-License-Identifier: MIT */
/*
 * remote_ops.c - served descriptors in shared mode (wtio-run --shared):
 * the table fd -> the holder's OFD, one holder reference per slot (open,
 * close, dup, fork), and the switch of a passed-through OFD to its kernel
 * description. The calls on a served OFD are in remote_io.c. The descriptor itself is a
 * dup of the holder's one open file description of the file (it came
 * with the open), so every call the shim does not handle (fchmod, record
 * locks, F_GETFD) works on the real file. When the holder answers
 * HOLDER_DEMOTED, every descriptor of this process naming that OFD gets
 * the kernel description the holder made for it (dup3 onto the same
 * number, FD_CLOEXEC kept) and is the kernel's from then on; its slot
 * keeps the reference (RTAB_DEMOTED), dropped at close as any other, so
 * that the holder can let go of the file's last description.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote.h"
#include "shim.h"

_Atomic uint64_t remote_tab[RTAB_MAX];
bool remote_on;
static atomic_int tab_high;		/* highest fd ever installed + 1 */
static atomic_int tab_count;		/* slots in use */
/* Read: a change of this process's references (open, close, dup, a
 * demotion); write: fork, from the token to the fork, so that the
 * child's table is exactly what the token pins for it. */
static pthread_rwlock_t change_lock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_uint cur_umask;
/* The devices of the paths and of served files: a stat elsewhere does
 * not ask the holder. */
#define NDEV 16
static _Atomic dev_t devs[NDEV];
static atomic_int ndev;

static void dev_note(dev_t d)
{
	int i, n = atomic_load(&ndev);

	for (i = 0; i < n && i < NDEV; i++)
		if (atomic_load(&devs[i]) == d)
			return;
	i = atomic_fetch_add(&ndev, 1);
	if (i < NDEV)
		atomic_store(&devs[i], d);
	else
		atomic_store(&ndev, NDEV);
}

bool remote_dev_known(dev_t d)
{
	int i, n = atomic_load(&ndev);

	for (i = 0; i < n && i < NDEV; i++)
		if (atomic_load(&devs[i]) == d)
			return true;
	return false;
}

static mode_t (*next_umask)(mode_t);

void remote_setup(void)
{
	struct stat st;
	mode_t m;
	int i;

	next_umask = (__typeof__(next_umask))dlsym(RTLD_NEXT, "umask");
	if (next_umask) {
		/* at load, before the program has threads */
		m = next_umask(022);
		next_umask(m);
		atomic_store(&cur_umask, m);
	}
	for (i = 0; i < shim_cfg.nr_paths; i++)
		if (real.stat && real.stat(shim_cfg.paths[i], &st) == 0)
			dev_note(st.st_dev);
	remote_on = true;
}

SHIM_API mode_t umask(mode_t mask)
{
	mode_t (*f)(mode_t) = __atomic_load_n(&next_umask, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (__typeof__(f))dlsym(RTLD_NEXT, "umask");
		__atomic_store_n(&next_umask, f, __ATOMIC_RELEASE);
	}
	atomic_store(&cur_umask, mask & 0777);
	return f(mask);
}

/* fd's slot becomes v (OFD id + 1, maybe RTAB_DEMOTED); what it held
 * before (a reference to drop), or 0. */
static uint64_t slot_put(int fd, uint64_t v)
{
	int high = atomic_load(&tab_high);
	uint64_t old = atomic_exchange(&remote_tab[fd], v);

	if (!old)
		atomic_fetch_add(&tab_count, 1);
	while (fd + 1 > high &&
	       !atomic_compare_exchange_weak(&tab_high, &high, fd + 1))
		;
	return old;
}

/* The slot's value (OFD id + 1, maybe RTAB_DEMOTED), emptied; 0 if it
 * was empty. */
static uint64_t slot_take(int fd)
{
	uint64_t v = atomic_exchange(&remote_tab[fd], 0);

	if (v)
		atomic_fetch_sub(&tab_count, 1);
	return v;
}

/* fd (a descriptor of the holder's description) becomes a copy of the
 * kernel description kfd, with its own FD_CLOEXEC. */
static void put_kernel(int fd, int kfd)
{
	int fl = real.fcntl(fd, F_GETFD);

	real.dup3(kfd, fd, fl >= 0 && (fl & FD_CLOEXEC) ? O_CLOEXEC : 0);
}

/* Write-back errors a demotion hit (HOLDER_DEMOTED's val), one per OFD,
 * for the next fsync, fdatasync or close of a descriptor of it: its
 * kernel description cannot report them. */
#define NERR 32
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uint64_t ofd; int err; } errs[NERR];
static atomic_int nerrs;		/* read unlocked: none is the usual */

static void err_note(uint64_t ofd, int err)
{
	pthread_mutex_lock(&err_lock);
	if (nerrs < NERR) {
		errs[nerrs].ofd = ofd;
		errs[nerrs++].err = err;
	}
	pthread_mutex_unlock(&err_lock);
	shim_debug("ofd %llu: its write-back failed at the switch (%s): for the next fsync or close",
		   (unsigned long long)ofd, strerror(-err));
}

/* The error kept for slot value v's OFD (0 if none), given once. */
static int err_take(uint64_t v)
{
	uint64_t ofd = (v & ~RTAB_DEMOTED) - 1;
	int i, err = 0;

	if (!(v & RTAB_DEMOTED) || !atomic_load(&nerrs))
		return 0;
	pthread_mutex_lock(&err_lock);
	for (i = 0; i < nerrs; i++)
		if (errs[i].ofd == ofd) {
			err = errs[i].err;
			errs[i] = errs[--nerrs];
			break;
		}
	pthread_mutex_unlock(&err_lock);
	return err;
}

int remote_take_err(int fd)
{
	return err_take(remote_slot(fd));
}

/* HOLDER_DEMOTED for ofd, with kfd its kernel description: every
 * descriptor of the process naming ofd gets it (and extra, a new dup not
 * in the table yet, if >= 0); each slot is marked after its dup3, so
 * that no call sees it unserved while it still names the holder's
 * description. Closes kfd. */
static void convert(uint64_t ofd, int kfd, int extra)
{
	int i, high = atomic_load(&tab_high);

	pthread_rwlock_rdlock(&change_lock);
	for (i = 0; i < high; i++) {
		uint64_t v = ofd + 1;

		if (atomic_load(&remote_tab[i]) != v)
			continue;
		put_kernel(i, kfd);
		atomic_compare_exchange_strong(&remote_tab[i], &v,
					       v | RTAB_DEMOTED);
	}
	if (extra >= 0)
		put_kernel(extra, kfd);
	pthread_rwlock_unlock(&change_lock);
	real.close(kfd);
	shim_debug("ofd %llu: passed through by the holder; the kernel's from now on",
		   (unsigned long long)ofd);
}

/*
 * One request on the OFD ofd. 1 = answered (*rp), 0 = demoted (every
 * descriptor of it, and extra, is the kernel's now: make the real call),
 * -errno (-EIO: the holder is gone).
 */
static int ask_ofd(struct rconn *c, uint64_t ofd, struct holder_req *rq,
		   struct holder_reply *rp, int extra)
{
	int kfd, r;

	rq->ofd = ofd;
	r = rc_call(c, rq, -1, rp, &kfd, true);
	if (r < 0)
		return r;
	if (rp->status == HOLDER_DEMOTED) {
		if (kfd < 0)	/* the descriptor did not fit (EMFILE) */
			return -EMFILE;
		if (rp->val < 0)
			err_note(ofd, (int)rp->val);
		convert(ofd, kfd, extra);
		return 0;
	}
	if (kfd >= 0)
		real.close(kfd);
	return 1;
}

/* As ask_ofd, for the OFD fd names now; 0 if it names none (or it
 * passed through). */
int remote_ask_fd(struct rconn *c, int fd, struct holder_req *rq,
		  struct holder_reply *rp)
{
	uint64_t v = atomic_load(&remote_tab[fd]);

	if (!v || (v & RTAB_DEMOTED))
		return 0;
	return ask_ofd(c, v - 1, rq, rp, -1);
}

/* A reference dropped; a DEMOTED answer converts the process's other
 * descriptors of it. 0 or -errno. */
static int unref(struct rconn *c, uint64_t v)
{
	struct holder_req rq = { .op = HOP_UNREF };
	struct holder_reply rp;
	int r = ask_ofd(c, (v & ~RTAB_DEMOTED) - 1, &rq, &rp, -1);

	if (r <= 0)
		return r;
	/* the last reference of a demoted OFD: the kernel's close errs */
	if (v & RTAB_DEMOTED)
		return 0;
	return rp.status < 0 ? (int)rp.status : 0;
}

/* ---- the open ---- */

/* The absolute path an open names ("." and ".." taken as written): only
 * to tell whether it can be under the paths (the holder looks at the
 * real one). false: cannot tell, the kernel opens it. */
static bool abs_path(int dirfd, const char *path, char *out, size_t len)
{
	size_t n = 0;

	if (path[0] != '/' && dirfd == AT_FDCWD) {
		if (!getcwd(out, len))
			return false;
		n = strlen(out);
	} else if (path[0] != '/') {
		char pp[40];
		ssize_t r;

		snprintf(pp, sizeof(pp), "/proc/self/fd/%d", dirfd);
		r = readlink(pp, out, len - 1);
		if (r <= 0 || out[0] != '/')
			return false;
		n = (size_t)r;
	}
	if (n + strlen(path) + 2 > len)
		return false;
	if (n && out[n - 1] != '/')
		out[n++] = '/';
	strcpy(out + n, path);
	return true;
}

/* Collapse "//", "." and ".." of an absolute path, in place. */
static void normalize(char *p)
{
	const char *in = p;
	size_t o = 0;

	while (*in) {
		const char *s;
		size_t l;

		while (*in == '/')
			in++;
		if (!*in)
			break;
		s = in;
		while (*in && *in != '/')
			in++;
		l = (size_t)(in - s);
		if (l == 1 && s[0] == '.')
			continue;
		if (l == 2 && s[0] == '.' && s[1] == '.') {
			while (o > 0 && p[--o] != '/')
				;
			continue;
		}
		p[o++] = '/';
		memmove(p + o, s, l);
		o += l;
	}
	if (!o)
		p[o++] = '/';
	p[o] = 0;
}

/* path (at dirfd) is under the paths, made absolute: joined as written
 * after the directory, norm collapsed (both PATH_MAX + 64). */
static bool under_paths(int dirfd, const char *path, char *joined, char *norm)
{
	if (!path || !*path || !abs_path(dirfd, path, joined, PATH_MAX + 64))
		return false;
	strcpy(norm, joined);
	normalize(norm);
	return shim_path_served(norm);
}

bool remote_path_served(int dirfd, const char *path)
{
	char joined[PATH_MAX + 64], norm[PATH_MAX + 64];

	return under_paths(dirfd, path, joined, norm);
}

/* ofd passed through at once (a new descriptor the holder cannot serve
 * on this number: 0-2, or past the table), fd its descriptor. */
static int demote_new(struct rconn *c, uint64_t ofd, int fd)
{
	struct holder_req rq = { .op = HOP_DEMOTE, .arg = { HDEMOTE_PROGRAM } };
	struct holder_reply rp;
	int r = ask_ofd(c, ofd, &rq, &rp, fd);

	if (r == 0)
		return 0;
	return r < 0 ? r : (rp.status < 0 ? (int)rp.status : -EPROTO);
}

int remote_open(int dirfd, const char *path, int flags, mode_t mode, int *fdp)
{
	char joined[PATH_MAX + 64], norm[PATH_MAX + 64];
	struct holder_req rq = { .op = HOP_OPEN };
	struct holder_reply rp;
	struct rconn tmp, *c;
	const char *send = path;
	bool with_dir = false;
	uint64_t old;
	size_t len;
	int fd, r;

	if (!under_paths(dirfd, path, joined, norm))
		return 0;
	if (path[0] != '/' && dirfd == AT_FDCWD)
		send = joined;
	else if (path[0] != '/')
		with_dir = true;
	c = rc_get(&tmp);
	if (!c)		/* not the holder's user: the kernel's open */
		return remote_open_kernel() ? 0 : -EIO;
	/* the holder would open it with rights this thread may not have
	 * (it would answer "not served" itself): the kernel's open */
	{
		const char *why = remote_creds_differ();

		if (why) {
			rc_put(c);
			shim_debug("%s: not served: this thread has other credentials than the holder's (%s)",
				   norm, why);
			return 0;
		}
	}
	len = strlen(send) + 1;
	if (len > c->size) {
		rc_put(c);
		return -ENAMETOOLONG;
	}
	memcpy(c->buf, send, len);
	rq.arg[0] = flags;
	/* the mode as asked, with the umask: the holder creates under the
	 * program's umask, so a default ACL of the directory overrides it
	 * as the kernel does */
	rq.arg[1] = (flags & (O_CREAT | __O_TMPFILE)) ? (int64_t)(mode & 07777) : 0;
	rq.arg[3] = (int64_t)(atomic_load(&cur_umask) & 0777) | HOPEN_UMASK;
	rq.arg[2] = with_dir;
	pthread_rwlock_rdlock(&change_lock);
	r = rc_call(c, &rq, with_dir ? dirfd : -1, &rp, &fd,
		    (flags & O_CLOEXEC) != 0);
	if (r < 0)
		goto out;
	if (rp.status == HOLDER_NOT_SERVED || rp.status < 0) {
		if (fd >= 0)
			real.close(fd);
		r = rp.status < 0 ? (int)rp.status : 0;
		goto out;
	}
	if (rp.status != HOLDER_SERVED) {
		if (fd >= 0)
			real.close(fd);
		r = -EPROTO;
		goto out;
	}
	if (fd < 0) {		/* no room for the descriptor */
		unref(c, (uint64_t)rp.val + 1);
		r = -EMFILE;
		goto out;
	}
	*fdp = fd;
	r = 1;
	if (fd <= STDERR_FILENO || fd >= RTAB_MAX) {
		/* 0-2: stdio inside libc writes there past the shim */
		r = demote_new(c, (uint64_t)rp.val, fd);
		if (r < 0) {
			unref(c, (uint64_t)rp.val + 1);
			real.close(fd);
			goto out;
		}
		r = 1;
		if (fd < RTAB_MAX)	/* the reference stays with fd */
			slot_put(fd, ((uint64_t)rp.val + 1) | RTAB_DEMOTED);
		else
			unref(c, (uint64_t)rp.val + 1);
		shim_debug("fd %d: %s: not served on this number; passed through",
			   fd, norm);
		goto out;
	}
	/* a slot left by a close the shim did not see: its reference goes */
	old = slot_put(fd, (uint64_t)rp.val + 1);
	if (old)
		unref(c, old);
	{
		struct stat st;

		if (real.fstat(fd, &st) == 0)
			dev_note(st.st_dev);
	}
	shim_debug("fd %d: %s served by the holder (ofd %lld)", fd, norm,
		   (long long)rp.val);
out:
	pthread_rwlock_unlock(&change_lock);
	rc_put(c);
	return r;
}

/* ---- references ---- */

int remote_close(int fd)
{
	struct rconn tmp, *c;
	uint64_t v;
	int r, e;

	if (!remote_slot(fd) || shim_vfork_child())
		return 1;
	pthread_rwlock_rdlock(&change_lock);
	v = slot_take(fd);
	if (!v) {
		pthread_rwlock_unlock(&change_lock);
		return 1;
	}
	/* The kernel's close first: once the holder has the last reference
	 * back, another process's open must find no descriptor of the old
	 * description here (its lease would fail). */
	r = real.close(fd) < 0 ? -errno : 0;
	c = rc_get(&tmp);
	/* a passed-through descriptor's close is the kernel's alone, even
	 * with the holder gone */
	e = c ? unref(c, v) : (v & RTAB_DEMOTED) ? 0 : -EIO;
	rc_put(c);
	if (!e)
		e = err_take(v);
	pthread_rwlock_unlock(&change_lock);
	return r < 0 ? r : e;
}

void remote_replaced(int newfd)
{
	struct rconn tmp, *c;
	uint64_t v;

	if (!remote_slot(newfd) || shim_vfork_child())
		return;
	pthread_rwlock_rdlock(&change_lock);
	v = slot_take(newfd);
	if (v && (c = rc_get(&tmp))) {
		unref(c, v);
		rc_put(c);
	}
	pthread_rwlock_unlock(&change_lock);
}

int remote_dup(int oldfd, int newfd)
{
	struct holder_req rq = { .op = HOP_REF };
	struct holder_reply rp;
	struct rconn tmp, *c;
	uint64_t v, old;
	int r;

	if (newfd < 0 || newfd == oldfd || !remote_slot(oldfd) ||
	    shim_vfork_child())
		return newfd;
	pthread_rwlock_rdlock(&change_lock);
	v = atomic_load(&remote_tab[oldfd]);
	c = rc_get(&tmp);
	if (!v || (!c && !(v & RTAB_DEMOTED))) {
		r = v ? -EIO : 0;
		goto out;
	}
	if (!c) {		/* the kernel's dup; nothing to count */
		r = 0;
		goto out;
	}
	if (!(v & RTAB_DEMOTED) &&
	    (newfd <= STDERR_FILENO || newfd >= RTAB_MAX)) {
		/* 0-2 are never served (a shell's >> then its builtins):
		 * the file passes through, here and everywhere */
		r = demote_new(c, (v & ~RTAB_DEMOTED) - 1, newfd);
		if (r < 0)
			goto out;
		v |= RTAB_DEMOTED;
	}
	r = 0;
	if (newfd >= RTAB_MAX)
		goto out;
	r = ask_ofd(c, (v & ~RTAB_DEMOTED) - 1, &rq, &rp, newfd);
	if (r < 0)
		goto out;
	if (r == 0) {		/* demoted meanwhile: newfd converted too */
		v |= RTAB_DEMOTED;
	} else if (rp.status < 0) {
		r = (int)rp.status;
		goto out;
	}
	old = slot_put(newfd, v);
	if (old)
		unref(c, old);
	r = 0;
out:
	rc_put(c);
	pthread_rwlock_unlock(&change_lock);
	if (r < 0) {
		real.close(newfd);
		errno = -r;
		return -1;
	}
	return newfd;
}

void remote_forget(int fd)
{
	remote_replaced(fd);
}

int remote_tab_high(void)
{
	return atomic_load(&tab_high);
}

int remote_tab_count(void)
{
	return atomic_load(&tab_count);
}

/*
 * fork: the holder pins every reference of this process for the child
 * (HOP_FORK_PREPARE's token); the child's first HELLO claims it; the
 * parent then reports the child's pid (or the failure), so that a child
 * dying before it claims releases the pins. The child claims lazily, at
 * its first call on a served file (or at exit, by the pid's death): most
 * children exec at once or never touch a served file, and a connection
 * in the child would cost a holder thread for nothing.
 */
pid_t remote_fork(pid_t (*real_fork)(void))
{
	struct holder_req rq = { .op = HOP_FORK_PREPARE };
	struct holder_reply rp;
	struct rconn tmp, *c;
	uint64_t token = 0;
	pid_t pid;
	int e;

	if (!remote_on || shim_vfork_child())
		return real_fork();
	pthread_rwlock_wrlock(&change_lock);
	if (atomic_load(&tab_count) && (c = rc_get(&tmp))) {
		if (!c->temp && rc_call(c, &rq, -1, &rp, NULL, true) == 0 &&
		    rp.status >= 0)
			token = rp.status > 0 ? (uint64_t)rp.status :
						(uint64_t)rp.val;
		rc_put(c);
	}
	rc_atfork_prepare();
	pid = real_fork();
	if (pid == 0) {
		rc_atfork_child(token);
		pthread_rwlock_init(&change_lock, NULL);
		return 0;
	}
	e = errno;
	rc_atfork_parent();
	if (token && (c = rc_get(&tmp))) {
		rq.op = HOP_FORK_DONE;
		rq.arg[0] = (int64_t)token;
		rq.arg[1] = pid > 0 ? pid : -e;
		rc_call(c, &rq, -1, &rp, NULL, true);
		rc_put(c);
	}
	pthread_rwlock_unlock(&change_lock);
	errno = e;
	return pid;
}
