/* SPDX-License-Identifier: MIT */
/*
 * fdtable.c - which descriptors wtio serves: the fd table (fd -> open file
 * description), the per-process registry of served files with their OFD
 * locks, adoption of a freshly opened descriptor, demotion to passthrough,
 * and the fork/exec/exit hooks.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

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

static int set_lock(int fd, int type, off_t start, int cmd);

/* Drop a reference to ino; the last one of a served inode unregisters it,
 * releases its lock and frees it. reg_lock held. */
static void inode_unref_locked(struct shim_inode *ino)
{
	struct shim_inode **pi;

	if (--ino->refs || ino->passthrough)
		return;
	for (pi = &inodes; *pi; pi = &(*pi)->next)
		if (*pi == ino) {
			*pi = ino->next;
			break;
		}
	/* Parked while the program holds record locks on the file (see
	 * locks.c): then give up the sentinel now, the file is not served. */
	if (shim_locks_any())
		set_lock(ino->lock_fd, F_UNLCK, SHIM_LOCK_BYTE, F_OFD_SETLK);
	shim_close_own(ino->lock_fd);
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
	BUSY_ENTER();
	ret = wtio_close(o->wf);
	BUSY_LEAVE();
	o->wf = NULL;
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

static int set_lock(int fd, int type, off_t start, int cmd)
{
	struct flock fl = {
		.l_type = (short)type, .l_whence = SEEK_SET,
		.l_start = start, .l_len = 1,
	};

	return real.fcntl(fd, cmd, &fl);
}

static int proc_path(int fd, char *buf, size_t len)
{
	return snprintf(buf, len, "/proc/self/fd/%d", fd) < (int)len ? 0 : -1;
}

/* Register (dev, ino) or find it; take or upgrade the lock. Returns the
 * inode with a reference, or NULL: pass the file through. reg_lock held. */
static struct shim_inode *inode_get(int fd, const struct stat *st,
				    bool writable)
{
	struct shim_inode *ino;
	int want = writable ? F_WRLCK : F_RDLCK;
	char pp[64];

	for (ino = inodes; ino; ino = ino->next)
		if (ino->dev == st->st_dev && ino->ino == st->st_ino)
			break;
	if (ino) {
		if (ino->passthrough)
			return NULL;
		if (want == F_WRLCK && ino->lock_type == F_RDLCK) {
			if (set_lock(ino->lock_fd, F_WRLCK, SHIM_LOCK_BYTE,
				     F_OFD_SETLK) < 0) {
				shim_debug("fd %d: no write lock, passing the file through",
					   fd);
				ino->refs++;	/* around() needs it held */
				pthread_mutex_unlock(&reg_lock);
				inode_around(ino, NULL, NULL, true);
				pthread_mutex_lock(&reg_lock);
				ino->refs--;
				return NULL;
			}
			ino->lock_type = F_WRLCK;
		}
		ino->refs++;
		return ino;
	}
	if (proc_path(fd, pp, sizeof(pp)))
		return NULL;
	{
		/* Served by another process already: pass through without
		 * opening (and closing again) a lock descriptor, whose close
		 * would drop the program's record locks on the file. */
		struct flock fl = {
			.l_type = (short)want, .l_whence = SEEK_SET,
			.l_start = SHIM_LOCK_BYTE, .l_len = 1,
		};

		if (real.fcntl(fd, F_OFD_GETLK, &fl) == 0 &&
		    fl.l_type != F_UNLCK)
			goto peer;
	}
	ino = calloc(1, sizeof(*ino));
	if (!ino)
		return NULL;
	ino->lock_fd = real.open(pp, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (ino->lock_fd < 0 && !writable)
		ino->lock_fd = real.open(pp, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (ino->lock_fd < 0) {
		free(ino);
		return NULL;
	}
	if (set_lock(ino->lock_fd, want, SHIM_LOCK_BYTE, F_OFD_SETLK) < 0) {
		shim_close_own(ino->lock_fd);
		free(ino);
		goto peer;
	}
	ino->dev = st->st_dev;
	ino->ino = st->st_ino;
	ino->lock_type = want;
	ino->refs = 1;
	ino->next = inodes;
	inodes = ino;
	return ino;

peer:
	shim_debug("fd %d: another process serves this file; passing through",
		   fd);
	/* Announce this passthrough user to the process that serves the
	 * file (see shim_peer_check); held by the program's own
	 * description, so it goes when that does. */
	if (set_lock(fd, F_RDLCK, SHIM_LOCK_BYTE + 1, F_OFD_SETLK) < 0)
		set_lock(fd, F_WRLCK, SHIM_LOCK_BYTE + 1, F_OFD_SETLK);
	return NULL;
}

void shim_adopt(int fd, int oflags)
{
	int acc = oflags & O_ACCMODE, woflags, ret;
	bool writable = acc != O_RDONLY;
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
	if (shim_cfg.disabled || fd <= STDERR_FILENO || fd >= TABLE_MAX ||
	    shim_vfork_child() ||
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

	pthread_mutex_lock(&reg_lock);
	ino = inode_get(fd, &st, writable);
	if (!ino) {
		pthread_mutex_unlock(&reg_lock);
		goto passthrough;
	}
	woflags = acc | (oflags & (O_DSYNC | O_SYNC | O_NOATIME));
	BUSY_ENTER();
	ret = wtio_open(ctx, pp, woflags | (oflags & O_TRUNC), 0,
			shim_cfg.default_flags, &wf);
	BUSY_LEAVE();
	if (ret) {
		shim_debug("%s: wtio_open: %s; passing through", path,
			   wtio_strerror(ret));
		inode_unref_locked(ino);
		pthread_mutex_unlock(&reg_lock);
		goto passthrough;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		BUSY_ENTER();
		wtio_close(wf);
		BUSY_LEAVE();
		inode_unref_locked(ino);
		pthread_mutex_unlock(&reg_lock);
		goto passthrough_truncated;
	}
	pthread_rwlock_init(&o->io_lock, NULL);
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
	pthread_mutex_unlock(&reg_lock);
	fd_install(fd, o);
	shim_debug("fd %d: %s served by wtio (oflags %#x)", fd, path, oflags);
	return;

passthrough:
	if ((oflags & O_TRUNC) && acc != O_RDONLY && fd >= 0) {
		if (real.fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			real.ftruncate(fd, 0);
	}
	return;
passthrough_truncated:
	return;
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

			pthread_rwlock_rdlock(&o->io_lock);
			s = o->wf ? wtio_file_size(o->wf) : -1;
			pthread_rwlock_unlock(&o->io_lock);
			if (s >= 0) {
				*size = s;
				found = true;
				break;
			}
		}
	pthread_mutex_unlock(&reg_lock);
	return found;
}

/* ofd_flush with o's io_lock held. */
static int ofd_flush_locked(struct shim_ofd *o, bool durable)
{
	int ret = 0;

	if (o->wf) {
		ofd_guard_size(o);
		BUSY_ENTER();
		ret = durable ? wtio_fsync(o->wf) : wtio_fdatasync(o->wf);
		BUSY_LEAVE();
	}
	return ret;
}

int ofd_flush(struct shim_ofd *o, bool durable)
{
	int ret;

	pthread_rwlock_rdlock(&o->io_lock);
	ret = ofd_flush_locked(o, durable);
	pthread_rwlock_unlock(&o->io_lock);
	return ret;
}

/* Close the wtio handles of every description of ino (exclusive io_lock
 * held on each), giving the kernel's view to the real descriptors. */
long inode_around(struct shim_inode *ino, around_fn fn, void *arg,
		  bool keep_passthrough)
{
	struct shim_ofd *o;
	struct wtio_ctx *ctx = shim_ctx();
	bool failed = false;
	long ret = 0;
	char pp[64];

	pthread_mutex_lock(&reg_lock);
	for (o = ino->ofds; o; o = o->inode_next) {
		pthread_rwlock_wrlock(&o->io_lock);
		ofd_close_wf(o);
	}
	if (fn) {
		for (o = ino->ofds; o; o = o->inode_next)
			real.lseek(o->realfd, o->pos, SEEK_SET);
		ret = fn(arg);
		for (o = ino->ofds; o; o = o->inode_next) {
			off_t p = real.lseek(o->realfd, 0, SEEK_CUR);

			if (p >= 0)
				o->pos = p;
		}
	}
	if (!keep_passthrough && !ino->passthrough && ctx) {
		for (o = ino->ofds; o; o = o->inode_next) {
			int r;

			proc_path(o->realfd, pp, sizeof(pp));
			BUSY_ENTER();
			r = wtio_open(ctx, pp, o->wtio_oflags, 0,
				      shim_cfg.default_flags, &o->wf);
			BUSY_LEAVE();
			if (r) {
				o->wf = NULL;
				failed = true;
				break;
			}
		}
	}
	if (keep_passthrough || ino->passthrough || failed || !ctx) {
		ino->passthrough = true;
		for (o = ino->ofds; o; o = o->inode_next) {
			if (o->wf) {
				BUSY_ENTER();
				wtio_close(o->wf);
				BUSY_LEAVE();
				o->wf = NULL;
			}
			real.lseek(o->realfd, o->pos, SEEK_SET);
		}
	}
	for (o = ino->ofds; o; o = o->inode_next)
		pthread_rwlock_unlock(&o->io_lock);
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
	struct stat st;
	off_t ws, bs = o->block_size ? o->block_size : 4096;

	bool grew = false;

	if ((o->wtio_oflags & O_ACCMODE) == O_RDONLY)
		return false;
	/* Not o->realfd: when dup2/dup3 replaced that descriptor, it names
	 * another file by now (a shell restoring its stdout). */
	if (real.fstat(o->inode->lock_fd, &st) < 0)
		return false;
	BUSY_ENTER();
	ws = wtio_file_size(o->wf);
	if (ws >= 0 && st.st_size > ((ws + bs - 1) / bs) * bs) {
		shim_debug("fd %d: file grew outside the cache (%lld > %lld)",
			   o->realfd, (long long)st.st_size, (long long)ws);
		grew = wtio_ftruncate(o->wf, st.st_size) == 0;
	}
	BUSY_LEAVE();
	return grew;
}

/*
 * Before an O_APPEND write: since the file was written back for a child
 * (fork, vfork, posix_spawn), the child may have appended through its own
 * descriptor, within wtio's last block where ofd_guard_size cannot tell its
 * data from wtio's own block tail. While wtio has not changed the size
 * since, a larger kernel size can only be the child's: take it, and drop
 * the cached blocks (the last one holds zeros where the child wrote) by
 * closing and reopening the handles, so that the append lands at the true
 * end. Once this process changed the size, there is nothing to tell apart.
 */
void ofd_append_check(struct shim_ofd *o)
{
	struct shim_inode *ino = o->inode;
	bool adopt = false;
	struct stat st;
	off_t ws;

	if (!__atomic_load_n(&ino->handed, __ATOMIC_RELAXED))
		return;
	pthread_rwlock_rdlock(&o->io_lock);
	if (o->wf && real.fstat(ino->lock_fd, &st) == 0) {
		BUSY_ENTER();
		ws = wtio_file_size(o->wf);
		if (ws != ino->handed_size)
			__atomic_store_n(&ino->handed, false, __ATOMIC_RELAXED);
		else if (st.st_size > ws)
			adopt = wtio_ftruncate(o->wf, st.st_size) == 0;
		BUSY_LEAVE();
	}
	pthread_rwlock_unlock(&o->io_lock);
	if (adopt) {
		shim_debug("fd %d: a child appended (%lld > %lld); rereading",
			   o->realfd, (long long)st.st_size, (long long)ws);
		inode_around(ino, NULL, NULL, false);
	}
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
	if (shim_busy || shim_vfork_child() || !(o = fd_get(fd)))
		return 0;
	shim_debug("fd %d: %s: passing the file through from now on", fd,
		   why ? why : "demoted");
	inode_around(o->inode, NULL, NULL, true);
	ofd_put(o);
	return 1;
}

/*
 * Before the program takes a record lock on a served file: if a process
 * that had to pass the file through has announced itself, the two are
 * sharing the file, so stop caching it here too (after writing back).
 */
int shim_peer_check(struct shim_ofd *o)
{
	struct flock fl = {
		.l_type = F_WRLCK, .l_whence = SEEK_SET,
		.l_start = SHIM_LOCK_BYTE + 1, .l_len = 1,
	};
	int lfd;

	pthread_mutex_lock(&reg_lock);
	lfd = o->inode->passthrough ? -1 : o->inode->lock_fd;
	pthread_mutex_unlock(&reg_lock);
	if (lfd < 0)
		return 0;
	if (real.fcntl(lfd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) {
		shim_debug("fd %d: another process uses the file directly",
			   o->realfd);
		ofd_demote(o);
		return 1;
	}
	return 0;
}

/* Write back every served file and make its size exact (durable). */
void shim_flush_all(bool durable)
{
	struct shim_inode *ino;
	struct shim_ofd *o;

	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next)
		for (o = ino->ofds; o; o = o->inode_next) {
			pthread_rwlock_rdlock(&o->io_lock);
			if (ofd_flush_locked(o, durable) == 0 && o->wf &&
			    (o->wtio_oflags & O_ACCMODE) != O_RDONLY) {
				/* see ofd_append_check */
				BUSY_ENTER();
				ino->handed_size = wtio_file_size(o->wf);
				BUSY_LEAVE();
				__atomic_store_n(&ino->handed, true,
						 __ATOMIC_RELAXED);
			}
			/* exec/fork: the kernel position must be right */
			real.lseek(o->realfd, o->pos, SEEK_SET);
			pthread_rwlock_unlock(&o->io_lock);
		}
	pthread_mutex_unlock(&reg_lock);
}

/* Process exit: close every wtio handle so that everything is written;
 * descriptors stay open and pass through from here on. */
void shim_close_all(void)
{
	struct shim_inode *ino;
	struct shim_ofd *o;

	pthread_mutex_lock(&reg_lock);
	for (ino = inodes; ino; ino = ino->next) {
		ino->passthrough = true;
		for (o = ino->ofds; o; o = o->inode_next) {
			pthread_rwlock_wrlock(&o->io_lock);
			if (o->wf) {
				ofd_close_wf(o);
				real.lseek(o->realfd, o->pos, SEEK_SET);
			}
			pthread_rwlock_unlock(&o->io_lock);
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

/* ---- fork ---- */
static void atfork_prepare(void)
{
	/* The child will see the kernel's view of every inherited file:
	 * put everything there first. Nothing dirty is then duplicated. */
	shim_flush_all(false);
	pthread_mutex_lock(&reg_lock);
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
			pthread_rwlock_init(&o->io_lock, NULL);
			pthread_mutex_init(&o->pos_lock, NULL);
			o->wf = NULL;
		}
	}
	shim_ctx_forget();
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
