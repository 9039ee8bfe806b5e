/* SPDX-License-Identifier: MIT */
/*
 * fdtable.c - which descriptors wtio serves: the fd table (fd -> open file
 * description), the per-process registry of served files with their write
 * leases, adoption of a freshly opened descriptor, demotion to passthrough,
 * and the fork/exec/exit hooks.
 *
 * Coherence between processes (docs/SHIM.md, "Two processes on one file"):
 * a file is served only while its one open file description in the whole
 * system is this process's, held with a write lease (lease.c). wtio's
 * O_DIRECT descriptor is a dup of that description (handed to libwtio's
 * open, see shim_lib_open), O_DIRECT set on it with F_SETFL. Any other open
 * or truncate of the file, by any process, breaks the lease; the shim's
 * lease thread then demotes the file (writes back with the exact size,
 * drops the cache, clears O_DIRECT) and releases the lease, and only then
 * does the other open return.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "size.h"

#define TABLE_MAX (1 << 16)

static _Atomic(struct shim_ofd *) table[TABLE_MAX];
static atomic_int table_high;		/* highest fd ever installed + 1 */
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
/* Registry of served inodes; also orders demotions and closes. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_inode *inodes;

int fd_table_size(void)
{
	return TABLE_MAX;
}

bool fd_is_served(int fd)
{
	return fd >= 0 && fd < TABLE_MAX &&
	       atomic_load_explicit(&table[fd], memory_order_acquire);
}

struct shim_ofd *fd_get(int fd)
{
	struct shim_ofd *o;

	if (!fd_is_served(fd))
		return NULL;
	pthread_rwlock_rdlock(&table_lock);
	o = atomic_load(&table[fd]);
	if (o)
		atomic_fetch_add(&o->refs, 1);
	pthread_rwlock_unlock(&table_lock);
	return o;
}

void fd_install(int fd, struct shim_ofd *o)
{
	struct shim_ofd *old;
	int high;

	atomic_fetch_add(&o->refs, 1);
	pthread_rwlock_wrlock(&table_lock);
	/* A stale slot (the descriptor was closed behind the shim's back,
	 * e.g. by close_range in a child) is simply replaced. */
	old = atomic_exchange(&table[fd], o);
	high = atomic_load(&table_high);
	while (fd + 1 > high &&
	       !atomic_compare_exchange_weak(&table_high, &high, fd + 1))
		;
	pthread_rwlock_unlock(&table_lock);
	if (old)
		ofd_put(old);
}

/* Another descriptor of o other than fd, or -1. Table lock held. */
static int other_fd(struct shim_ofd *o, int fd)
{
	int i, high = atomic_load(&table_high);

	for (i = 0; i < high; i++)
		if (i != fd && atomic_load(&table[i]) == o)
			return i;
	return -1;
}

struct shim_ofd *fd_remove(int fd)
{
	struct shim_ofd *o;

	if (!fd_is_served(fd))
		return NULL;
	pthread_rwlock_wrlock(&table_lock);
	o = atomic_exchange(&table[fd], NULL);
	if (o && o->realfd == fd) {
		int other = other_fd(o, fd);

		if (other >= 0)
			o->realfd = other;
	}
	pthread_rwlock_unlock(&table_lock);
	return o;
}

/* The served description's status flags back to the program's (no
 * O_DIRECT, its O_APPEND) and the lease given up: from here the kernel
 * serves the file. Closes the shim's descriptor of it. reg_lock held. */
static void inode_release(struct shim_inode *ino)
{
	struct shim_ofd *o;
	int fl;

	if (ino->lock_fd < 0)
		return;
	fl = real.fcntl(ino->lock_fd, F_GETFL);
	if (fl >= 0) {
		fl &= ~(O_DIRECT | O_APPEND);
		for (o = ino->ofds; o; o = o->inode_next)
			fl |= o->oflags & O_APPEND;
		real.fcntl(ino->lock_fd, F_SETFL, fl);
	}
	shim_lease_drop(ino->lock_fd);
	shim_close_own(ino->lock_fd);
	ino->lock_fd = -1;
}

/* Drop a reference to ino; the last one unregisters it and frees it. A
 * later open of the file may be served again: the lease tells whether it
 * is the only open of the file then (a mapping keeps its description
 * open, so a mapped file is never leased). reg_lock held. */
static void inode_unref_locked(struct shim_inode *ino)
{
	struct shim_inode **pi;

	if (--ino->refs)
		return;
	for (pi = &inodes; *pi; pi = &(*pi)->next)
		if (*pi == ino) {
			*pi = ino->next;
			break;
		}
	inode_release(ino);
	free(ino);
}

/* Close o's wtio handle, if it has one (which writes its dirty data
 * back); the real descriptor stays open. Returns wtio_close's result. */
static int ofd_close_wf(struct shim_ofd *o)
{
	int ret;

	if (!o->wf)
		return 0;
	ofd_guard_size(o);
	ret = wtio_close(o->wf);
	o->wf = NULL;
	shim_times_restore(o);
	return ret;
}

/* Free a description nobody refers to any more: close its wtio handle
 * (which writes its dirty data back) and drop its inode reference. */
static int ofd_free(struct shim_ofd *o)
{
	struct shim_inode *ino = o->inode;
	struct shim_ofd **po;
	int ret;

	pthread_mutex_lock(&reg_lock);
	for (po = &ino->ofds; *po; po = &(*po)->inode_next)
		if (*po == o) {
			*po = o->inode_next;
			break;
		}
	ret = ofd_close_wf(o);
	inode_unref_locked(ino);
	pthread_mutex_unlock(&reg_lock);
	pthread_rwlock_destroy(&o->io_lock);
	pthread_mutex_destroy(&o->io_gate);
	pthread_mutex_destroy(&o->pos_lock);
	free(o);
	return ret;
}

static __thread int last_close_err;

void ofd_put(struct shim_ofd *o)
{
	if (atomic_fetch_sub(&o->refs, 1) == 1)
		last_close_err = ofd_free(o);
}

/* close(2) helper: the writeback error of the last put on this thread. */
int shim_take_close_err(void);
int shim_take_close_err(void)
{
	int e = last_close_err;

	last_close_err = 0;
	return e;
}

static int proc_path(int fd, char *buf, size_t len)
{
	return snprintf(buf, len, "/proc/self/fd/%d", fd) < (int)len ? 0 : -1;
}

/* The registered inode of (dev, ino), or NULL. reg_lock held. */
static struct shim_inode *inode_find(dev_t dev, ino_t inum)
{
	struct shim_inode *ino;

	for (ino = inodes; ino; ino = ino->next)
		if (ino->dev == dev && ino->ino == inum)
			return ino;
	return NULL;
}

/*
 * wtio reads whole blocks around partial writes, so the one description
 * must be readable: an O_WRONLY open is replaced (dup3, same fd number) by
 * an O_RDWR description of the file, if it is the only open of the file
 * (a lease test: then the process holds no record lock on it that the
 * implicit close could drop). The program's O_WRONLY stays in o->oflags
 * (wtio refuses reads on the handle). 0, or -errno: pass through;
 * *reopen says whether the read-write open failed (not the lease test).
 */
static int upgrade_rdwr(int fd, int oflags, const char *pp, bool *reopen)
{
	int nfd, err, keep = oflags & (O_APPEND | O_NONBLOCK | O_DSYNC |
					 O_SYNC | O_NOATIME | O_LARGEFILE);

	err = shim_lease_take(fd);
	if (err < 0)
		return err;
	shim_lease_drop(fd);
	nfd = real.open(pp, O_RDWR | O_NOCTTY | O_CLOEXEC | keep);
	*reopen = nfd < 0;
	if (nfd < 0)
		return -errno;
	if (real.dup3(nfd, fd, (oflags & O_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		err = -errno;
		real.close(nfd);
		return err;
	}
	real.close(nfd);
	return 0;
}

/*
 * Passed through, a description upgrade_rdwr made readable goes back to
 * what the kernel gave the program: a write-only one, at the same
 * position, on each of its descriptors (else reads, sendfile, mmap and
 * an exec'd child could read through a write-only descriptor). Not
 * where the program may hold a lock on the file: the dup3 would drop a
 * POSIX record lock, an OFD lock or a flock would stay with the old
 * description; there it stays readable (docs/SHIM.md, Limits). reg_lock
 * and o's io_lock held.
 */
static void restore_wronly(struct shim_ofd *o)
{
	int i, fl, fdf, nfd = -1, high = atomic_load(&table_high);
	char pp[64];
	off_t pos;

	if ((o->oflags & O_ACCMODE) != O_WRONLY)
		return;
	/* The table read and the dup3s under table_lock: a close of one of
	 * the numbers (fd_remove, then the real close) is either before
	 * (the number is not o's any more) or after (it closes ours). */
	pthread_rwlock_rdlock(&table_lock);
	for (i = 0; i < high; i++) {
		if (atomic_load(&table[i]) != o)
			continue;
		if (nfd < 0) {
			fl = real.fcntl(i, F_GETFL);
			if (fl < 0 || (fl & O_ACCMODE) != O_RDWR ||
			    shim_lock_held_on(i) || proc_path(i, pp, sizeof(pp)))
				break;
			pos = real.lseek(i, 0, SEEK_CUR);
			nfd = real.open(pp, O_WRONLY | O_NOCTTY | O_CLOEXEC |
					(fl & (O_APPEND | O_NONBLOCK | O_DSYNC |
					       O_SYNC | O_NOATIME | O_LARGEFILE |
					       O_DIRECT | O_ASYNC)));
			if (nfd < 0 || (pos >= 0 &&
					real.lseek(nfd, pos, SEEK_SET) != pos)) {
				shim_debug("fd %d: stays readable: no write-only reopen (%s)",
					   i, strerror(errno));
				if (nfd >= 0)
					real.close(nfd);
				nfd = -1;
				break;
			}
		}
		fdf = real.fcntl(i, F_GETFD);
		real.dup3(nfd, i, fdf >= 0 && (fdf & FD_CLOEXEC) ? O_CLOEXEC : 0);
	}
	pthread_rwlock_unlock(&table_lock);
	if (nfd >= 0)
		real.close(nfd);
}

void shim_lock_note_served(int fd)
{
	struct shim_ofd *o = fd_get(fd);

	/* Not while a pass-through swaps the description (restore_wronly,
	 * under the exclusive io_lock): noted before it looks, or taken
	 * on the new description after it. */
	if (o)
		ofd_io_read(o);
	shim_lock_note(fd);
	if (o) {
		ofd_io_done(o);
		ofd_put(o);
	}
}

static const char *lease_why(int err)
{
	switch (err) {
	case -EAGAIN:
		return "the file is open elsewhere (or again in this process)";
	case -EACCES:
		return "not the file's owner";
	case -EINVAL:
		return "no leases here (filesystem, or fs.leases-enable = 0)";
	default:
		return "no write lease";
	}
}

int shim_adopt(int fd, int oflags)
{
	int acc = oflags & O_ACCMODE, woflags, ret, lfd = -1, fl = -1;
	bool reopen = false;
	char pp[64], path[PATH_MAX];
	struct shim_inode *ino;
	struct shim_ofd *o;
	struct wtio_ctx *ctx;
	struct wtio_file *wf = NULL;
	struct stat st;
	ssize_t n;

	shim_init();
	/* Never 0, 1 or 2: stdio of the program (and of a shell's builtins)
	 * writes there from inside libc, past any interposer. And nothing new
	 * in a vfork child, whose tables are its parent's. */
	if (shim_cfg.disabled || remote_on || fd <= STDERR_FILENO ||
	    fd >= TABLE_MAX || shim_vfork_child() ||
	    (oflags & (O_PATH | __O_TMPFILE)) || acc == O_ACCMODE)
		goto passthrough;
	if (real.fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto passthrough;
	if (proc_path(fd, pp, sizeof(pp)))
		goto passthrough;
	n = readlink(pp, path, sizeof(path) - 1);
	if (n <= 0)
		goto passthrough;
	path[n] = 0;
	if (path[0] != '/' || !shim_path_served(path))
		goto passthrough;
	ctx = shim_ctx();
	if (!ctx)
		goto passthrough;

	/* Another description of the file in this process: our own open
	 * broke its lease, and the lease thread has demoted it before the
	 * open returned; this one passes through too. */
	pthread_mutex_lock(&reg_lock);
	ino = inode_find(st.st_dev, st.st_ino);
	if (ino && !ino->passthrough) {
		/* not seen as broken yet (cannot happen with the lease
		 * held): never two served descriptions of one file */
		ino->refs++;
		pthread_mutex_unlock(&reg_lock);
		inode_around(ino, NULL, NULL, true);
		pthread_mutex_lock(&reg_lock);
		inode_unref_locked(ino);
	}
	pthread_mutex_unlock(&reg_lock);
	if (ino) {
		shim_debug("%s: open twice in this process; passing through",
			   path);
		goto passthrough;
	}
	/* No shim lock is held from here to the registration: the opens
	 * below would wait for this process's own lease thread. */
	ret = acc == O_WRONLY ? upgrade_rdwr(fd, oflags, pp, &reopen) : 0;
	if (ret < 0 && reopen) {
		shim_debug("%s: write-only and not readable here (%s): wtio "
			   "reads around partial blocks; passing through",
			   path, strerror(-ret));
		goto passthrough;
	}
	if (ret == 0)
		ret = shim_lease_take(fd);
	if (ret < 0) {
		shim_debug("%s: no write lease (%s): %s; passing through", path,
			   strerror(-ret), lease_why(ret));
		goto passthrough;
	}
	lfd = shim_dupfd_own(fd);
	if (lfd < 0)
		goto undo;
	fl = real.fcntl(fd, F_GETFL);
	/* a racing real call meeting O_DIRECT from here waits for the end
	 * of the adoption and is made again (fdrace.c) */
	fd_adopting(fd, true);
	if (fl < 0 || real.fcntl(fd, F_SETFL, (fl & ~O_APPEND) | O_DIRECT) < 0) {
		fl = -1;
		goto undo;
	}
	woflags = acc | (oflags & (O_DSYNC | O_SYNC | O_NOATIME));
	shim_handoff_fd = lfd;	/* libwtio's open gets a dup of it */
	ret = wtio_open(ctx, pp, woflags | (oflags & O_TRUNC), 0,
			shim_cfg.default_flags, &wf);
	shim_handoff_fd = -1;
	if (ret) {
		shim_debug("%s: wtio_open: %s; passing through", path,
			   wtio_strerror(ret));
		goto undo;
	}
	ino = calloc(1, sizeof(*ino));
	o = calloc(1, sizeof(*o));
	if (!ino || !o) {
		free(ino);
		free(o);
		wtio_close(wf);
		goto undo_truncated;
	}
	ino->dev = st.st_dev;
	ino->ino = st.st_ino;
	ino->lock_fd = lfd;
	ino->refs = 1;
	ofd_io_init(o);
	pthread_mutex_init(&o->pos_lock, NULL);
	o->wf = wf;
	{
		struct wtio_file_info info;

		o->block_size = wtio_file_info(wf, &info) == 0 ?
				info.block_size : 4096;
	}
	o->inode = ino;
	o->realfd = fd;
	o->oflags = oflags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY);
	o->wtio_oflags = woflags;
	o->inode_next = ino->ofds;
	ino->ofds = o;
	pthread_mutex_lock(&reg_lock);
	ino->next = inodes;
	inodes = ino;
	fd_install(fd, o);
	pthread_mutex_unlock(&reg_lock);
	fd_adopting(fd, false);
	shim_debug("fd %d: %s served by wtio (oflags %#x, largest size %lld)",
		   fd, path, oflags, (long long)wtio_file_max_size(wf));
	/* A break that came before the registration found nothing to
	 * demote: look now. The lease thread's own test, made here: while a
	 * break is pending F_GETLEASE no longer says F_WRLCK, and a break
	 * from now on finds the file registered. Waking the thread at every
	 * open cost a context switch per served file. */
	if (real.fcntl(lfd, F_GETLEASE) != F_WRLCK)
		shim_lease_kick();
	return 0;

undo_truncated:
	oflags &= ~O_TRUNC;
undo:
	if (fl >= 0)
		real.fcntl(fd, F_SETFL, fl);
	fd_adopting(fd, false);
	shim_lease_drop(fd);
	if (lfd >= 0)
		shim_close_own(lfd);
passthrough:
	/* The truncation the open was asked for, which the kernel's open
	 * refuses (an append-only or sealed file: EPERM) with no descriptor
	 * made: so must this one. */
	if ((oflags & O_TRUNC) && (acc == O_WRONLY || acc == O_RDWR) &&
	    fd >= 0) {
		if (real.fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    real.ftruncate(fd, 0) < 0)
			return -errno;
	}
	return 0;
}

int shim_adopt_open(int fd, int oflags)
{
	int saved = errno, ret = shim_adopt(fd, oflags);

	if (ret < 0) {
		real.close(fd);
		errno = -ret;
		return -1;
	}
	errno = saved;
	return fd;
}

struct shim_ofd *shim_inode_ofd(dev_t dev, ino_t inum)
{
	struct shim_inode *ino;
	struct shim_ofd *o = NULL;

	if (!atomic_load(&table_high))
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next)
		if (ino->dev == dev && ino->ino == inum)
			break;
	if (ino && !ino->passthrough)
		for (o = ino->ofds; o; o = o->inode_next)
			if (o->wf) {
				atomic_fetch_add(&o->refs, 1);
				break;
			}
	pthread_mutex_unlock(&reg_lock);
	return o;
}

bool shim_inode_size(dev_t dev, ino_t inum, off_t *size)
{
	struct shim_inode *ino;
	struct shim_ofd *o;
	bool found = false;

	if (!atomic_load(&table_high))
		return false;
	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next)
		if (ino->dev == dev && ino->ino == inum)
			break;
	if (ino && !ino->passthrough)
		for (o = ino->ofds; o; o = o->inode_next) {
			off_t s;

			ofd_io_read(o);
			s = o->wf ? wtio_file_size(o->wf) : -1;
			ofd_io_done(o);
			if (s >= 0) {
				*size = s;
				found = true;
				break;
			}
		}
	pthread_mutex_unlock(&reg_lock);
	return found;
}

/*
 * io_lock is glibc's default rwlock, which prefers readers: with two
 * threads doing I/O on a description their shared holds overlap for
 * ever, and a demotion, an open or a fork waiting to take it exclusive
 * (holding reg_lock, which everything else then queues behind) waited as
 * long as the I/O went on: seconds, or without end. A writer-preferring
 * rwlock would deadlock a thread that takes it shared twice (a signal
 * handler's I/O in the middle of the thread's own). So an exclusive
 * taker holds io_gate and raises excl_wait while it waits, and a reader
 * that holds no io_lock yet passes through the gate first; a reader that
 * already holds one (this thread, any description) goes straight on, as
 * the reader-preferring lock lets it.
 */
static __thread int io_held;

void ofd_io_init(struct shim_ofd *o)
{
	pthread_rwlock_init(&o->io_lock, NULL);
	pthread_mutex_init(&o->io_gate, NULL);
	atomic_store(&o->excl_wait, 0);
}

void ofd_io_read(struct shim_ofd *o)
{
	if (!io_held &&
	    atomic_load_explicit(&o->excl_wait, memory_order_relaxed)) {
		pthread_mutex_lock(&o->io_gate);
		pthread_mutex_unlock(&o->io_gate);
	}
	pthread_rwlock_rdlock(&o->io_lock);
	io_held++;
}

void ofd_io_write(struct shim_ofd *o)
{
	pthread_mutex_lock(&o->io_gate);
	atomic_fetch_add(&o->excl_wait, 1);
	pthread_rwlock_wrlock(&o->io_lock);
	atomic_fetch_sub(&o->excl_wait, 1);
	pthread_mutex_unlock(&o->io_gate);
	io_held++;
}

void ofd_io_done(struct shim_ofd *o)
{
	io_held--;
	pthread_rwlock_unlock(&o->io_lock);
}

/* ofd_flush with o's io_lock held. */
static int ofd_flush_locked(struct shim_ofd *o, bool durable)
{
	int ret = 0;

	if (o->wf) {
		ofd_guard_size(o);
		ret = durable ? wtio_fsync(o->wf) : wtio_fdatasync(o->wf);
	}
	return ret;
}

int ofd_flush(struct shim_ofd *o, bool durable)
{
	int ret;

	ofd_io_read(o);
	ret = ofd_flush_locked(o, durable);
	ofd_io_done(o);
	return ret;
}

/* Close the wtio handles of every description of ino (exclusive io_lock
 * held on each), giving the kernel's view to the real descriptors. */
long inode_around(struct shim_inode *ino, around_fn fn, void *arg,
		  bool keep_passthrough)
{
	struct shim_ofd *o;
	struct wtio_ctx *ctx = shim_ctx();
	bool failed = false, was_served;
	long ret = 0;
	char pp[64];

	pthread_mutex_lock(&reg_lock);
	/* Passed through already: the kernel has the positions and the
	 * flags; nothing to close, nothing to put back. */
	was_served = !ino->passthrough;
	for (o = ino->ofds; o; o = o->inode_next) {
		ofd_io_write(o);
		ofd_close_wf(o);
	}
	if (fn && was_served) {
		for (o = ino->ofds; o; o = o->inode_next)
			real.lseek(o->realfd, o->pos, SEEK_SET);
		ret = fn(arg);
		for (o = ino->ofds; o; o = o->inode_next) {
			off_t p = real.lseek(o->realfd, 0, SEEK_CUR);

			if (p >= 0)
				o->pos = p;
		}
	} else if (fn) {
		ret = fn(arg);
	}
	if (!keep_passthrough && !ino->passthrough && ctx &&
	    ino->lock_fd >= 0) {
		for (o = ino->ofds; o; o = o->inode_next) {
			int r;

			proc_path(ino->lock_fd, pp, sizeof(pp));
			shim_handoff_fd = ino->lock_fd;
			r = wtio_open(ctx, pp, o->wtio_oflags, 0,
				      shim_cfg.default_flags, &o->wf);
			shim_handoff_fd = -1;
			if (r) {
				o->wf = NULL;
				failed = true;
				break;
			}
		}
	}
	if (was_served && (keep_passthrough || failed || !ctx)) {
		ino->passthrough = true;
		for (o = ino->ofds; o; o = o->inode_next) {
			if (o->wf) {
				wtio_close(o->wf);
				o->wf = NULL;
			}
			real.lseek(o->realfd, o->pos, SEEK_SET);
		}
		/* after the write-back: then another opener may go on */
		inode_release(ino);
		for (o = ino->ofds; o; o = o->inode_next)
			restore_wronly(o);
	}
	for (o = ino->ofds; o; o = o->inode_next)
		ofd_io_done(o);
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

/*
 * wtio makes the backing size its own at fsync and close. If the file has
 * grown past the end of wtio's last block, another process (a passthrough
 * peer, or a forked child) extended it: take that size first, so that
 * wtio does not cut the other writer's data. io_lock held, o->wf set.
 */
bool ofd_guard_size(struct shim_ofd *o)
{
	off_t ws, bs = o->block_size ? o->block_size : 4096;
	int64_t size;
	bool grew = false;

	if ((o->wtio_oflags & O_ACCMODE) == O_RDONLY)
		return false;
	/* Not o->realfd: when dup2/dup3 replaced that descriptor, it names
	 * another file by now (a shell restoring its stdout). The size
	 * without the times: an fstat marks the ctime queried, and the next
	 * direct write then goes to an io-wq worker (size.c). */
	if (wtio_backing_size(o->inode->lock_fd, &size) < 0)
		return false;
	ws = wtio_file_size(o->wf);
	if (ws >= 0 && size > ((ws + bs - 1) / bs) * bs) {
		shim_debug("fd %d: file grew outside the cache (%lld > %lld)",
			   o->realfd, (long long)size, (long long)ws);
		grew = wtio_ftruncate(o->wf, size) == 0;
	}
	return grew;
}

void ofd_demote(struct shim_ofd *o)
{
	shim_debug("fd %d: passing the file through from now on", o->realfd);
	inode_around(o->inode, NULL, NULL, true);
}

int shim_demote_fd(int fd, const char *why)
{
	struct shim_ofd *o;

	shim_resolve();
	if (remote_served(fd))
		return remote_demote_fd(fd, HDEMOTE_PROGRAM) > 0;
	if (shim_vfork_child() || !(o = fd_get(fd)))
		return 0;
	if (__atomic_load_n(&o->inode->passthrough, __ATOMIC_RELAXED)) {
		ofd_put(o);
		return 0;
	}
	shim_debug("fd %d: %s: passing the file through from now on", fd,
		   why ? why : "demoted");
	inode_around(o->inode, NULL, NULL, true);
	ofd_put(o);
	return 1;
}

/*
 * The lease thread (lease.c), after a lease-break signal or on its poll:
 * demote every served file whose lease is being broken (F_GETLEASE then
 * shows the type the breaker allows, no longer F_WRLCK), or every served
 * file whose descriptor a child will inherit (all = true: fork; or the
 * ones without FD_CLOEXEC on some descriptor: inheritable = true).
 */
static bool inode_inheritable(struct shim_inode *ino)
{
	int i, high = atomic_load(&table_high);
	struct shim_ofd *o;

	for (o = ino->ofds; o; o = o->inode_next)
		for (i = 0; i < high; i++)
			if (atomic_load(&table[i]) == o) {
				int fdf = real.fcntl(i, F_GETFD);

				if (fdf >= 0 && !(fdf & FD_CLOEXEC))
					return true;
			}
	return false;
}

static void demote_where(int what, const char *why)
{
	struct shim_inode *ino;

again:
	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next) {
		if (ino->passthrough || ino->lock_fd < 0)
			continue;
		if (what == DEMOTE_BROKEN &&
		    real.fcntl(ino->lock_fd, F_GETLEASE) == F_WRLCK)
			continue;
		if (what == DEMOTE_INHERITABLE && !inode_inheritable(ino))
			continue;
		ino->refs++;
		pthread_mutex_unlock(&reg_lock);
		shim_debug("%s: passing the file through from now on",
			   why);
		inode_around(ino, NULL, NULL, true);
		pthread_mutex_lock(&reg_lock);
		inode_unref_locked(ino);
		pthread_mutex_unlock(&reg_lock);
		goto again;
	}
	pthread_mutex_unlock(&reg_lock);
}

void shim_demote_where(int what, const char *why)
{
	if (!atomic_load(&table_high))
		return;
	demote_where(what, why);
}

/* Write back every served file and make its size exact (durable). */
void shim_flush_all(bool durable)
{
	struct shim_inode *ino;
	struct shim_ofd *o;

	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next)
		for (o = ino->ofds; o; o = o->inode_next) {
			ofd_io_read(o);
			ofd_flush_locked(o, durable);
			/* a spawned child: the kernel position must be right;
			 * once passed through the kernel's is the program's,
			 * and o->pos is stale */
			if (o->wf)
				real.lseek(o->realfd, o->pos, SEEK_SET);
			ofd_io_done(o);
		}
	pthread_mutex_unlock(&reg_lock);
}

/* Process exit: close every wtio handle so that everything is written;
 * descriptors stay open and pass through from here on. Then WTIO_STATS'
 * counters, which include that last write-back. */
void shim_close_all(void)
{
	struct shim_inode *ino;
	struct shim_ofd *o;

	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next) {
		if (ino->passthrough)
			continue;
		ino->passthrough = true;
		for (o = ino->ofds; o; o = o->inode_next) {
			ofd_io_write(o);
			if (o->wf) {
				ofd_close_wf(o);
				real.lseek(o->realfd, o->pos, SEEK_SET);
			}
		}
		inode_release(ino);
		for (o = ino->ofds; o; o = o->inode_next)
			ofd_io_done(o);
	}
	pthread_mutex_unlock(&reg_lock);
	shim_stats_report();
}

/* ---- fork ---- */
static void atfork_prepare(void)
{
	/* The child inherits every served description (and its lease: its
	 * use of the description breaks nothing), so each served file is
	 * written back and passed through for good before the fork. */
	for (;;) {
		struct shim_inode *ino;

		shim_demote_where(DEMOTE_ALL, "fork");
		pthread_mutex_lock(&reg_lock);
		/* another thread may have served a file meanwhile */
		for (ino = inodes; ino; ino = ino->next)
			if (!ino->passthrough)
				break;
		if (!ino)
			break;
		pthread_mutex_unlock(&reg_lock);
	}
	pthread_rwlock_wrlock(&table_lock);
	shim_locks_atfork_prepare();	/* after reg_lock: the lock order */
}

static void atfork_parent(void)
{
	shim_locks_atfork_parent();
	pthread_rwlock_unlock(&table_lock);
	pthread_mutex_unlock(&reg_lock);
}

static void atfork_child(void)
{
	struct shim_inode *ino;
	struct shim_ofd *o;

	pthread_rwlock_init(&table_lock, NULL);
	pthread_mutex_init(&reg_lock, NULL);
	shim_locks_atfork_child();
	/* The parent's context stays the parent's: its handles are dropped
	 * unused (never written back from here), inherited files pass
	 * through, and new opens get a fresh context. */
	for (ino = inodes; ino; ino = ino->next) {
		ino->passthrough = true;
		for (o = ino->ofds; o; o = o->inode_next) {
			ofd_io_init(o);
			pthread_mutex_init(&o->pos_lock, NULL);
			o->wf = NULL;
		}
	}
	shim_ctx_forget();
	shim_lease_atfork_child();
	shim_pid = getpid();
}

extern pid_t shim_pid;

static void on_exit_close(void)
{
	if (getpid() == shim_pid)
		shim_close_all();
}

__attribute__((constructor)) static void shim_ctor(void)
{
	shim_resolve();
	shim_init();
	shim_pid = getpid();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atexit(on_exit_close);
}

__attribute__((destructor)) static void shim_dtor(void)
{
	if (getpid() == shim_pid)
		shim_close_all();
}
