/* SPDX-License-Identifier: MIT */
/*
 * shim.h - internals of libwtio-preload.so, the LD_PRELOAD shim that serves
 * files under the chosen paths through wtio (see docs/SHIM.md).
 */
#ifndef WTIO_SHIM_H
#define WTIO_SHIM_H

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "wtio.h"
#include "remote.h"

#define SHIM_API __attribute__((visibility("default")))

/* Per-call flags of preadv2/pwritev2 that older headers lack. */
#ifndef RWF_HIPRI
#define RWF_HIPRI	0x01
#endif
#ifndef RWF_DSYNC
#define RWF_DSYNC	0x02
#endif
#ifndef RWF_SYNC
#define RWF_SYNC	0x04
#endif
#ifndef RWF_NOWAIT
#define RWF_NOWAIT	0x08
#endif
#ifndef RWF_APPEND
#define RWF_APPEND	0x10
#endif
#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND	0x20
#endif
#ifndef RWF_ATOMIC
#define RWF_ATOMIC	0x40
#endif
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE	0x80
#endif
/* The write-through series' proposed flag, and the shim's own NOSERIAL
 * (not a kernel value; it implies write-through). */
#define SHIM_RWF_WRITETHROUGH	0x200
#define SHIM_RWF_NOSERIAL	0x400
#define SHIM_RWF_KNOWN	(RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | \
			 RWF_APPEND | RWF_NOAPPEND | RWF_ATOMIC | \
			 RWF_DONTCACHE | SHIM_RWF_WRITETHROUGH | \
			 SHIM_RWF_NOSERIAL)

/* ---- real.c: the next definitions of the interposed functions ---- */
struct real_fns {
	int (*open)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*close)(int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*pread)(int, void *, size_t, off_t);
	ssize_t (*pwrite)(int, const void *, size_t, off_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*preadv)(int, const struct iovec *, int, off_t);
	ssize_t (*pwritev)(int, const struct iovec *, int, off_t);
	ssize_t (*preadv2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*pwritev2)(int, const struct iovec *, int, off_t, int);
	off_t (*lseek)(int, off_t, int);
	int (*fsync)(int);
	int (*fdatasync)(int);
	int (*sync_file_range)(int, off_t, off_t, unsigned int);
	int (*syncfs)(int);
	void (*sync)(void);
	int (*ftruncate)(int, off_t);
	int (*truncate)(const char *, off_t);
	int (*fallocate)(int, int, off_t, off_t);
	int (*posix_fallocate)(int, off_t, off_t);
	ssize_t (*copy_file_range)(int, off_t *, int, off_t *, size_t,
				   unsigned int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*splice)(int, off_t *, int, off_t *, size_t, unsigned int);
	int (*fstat)(int, struct stat *);
	int (*stat)(const char *, struct stat *);
	int (*lstat)(const char *, struct stat *);
	int (*fstatat)(int, const char *, struct stat *, int);
	int (*statx)(int, const char *, int, unsigned int, struct statx *);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	FILE *(*fopen)(const char *, const char *);
	FILE *(*fdopen)(int, const char *);
	FILE *(*freopen)(const char *, const char *, FILE *);
	int (*__xstat)(int, const char *, struct stat *);
	int (*__lxstat)(int, const char *, struct stat *);
	int (*__fxstat)(int, int, struct stat *);
	int (*__fxstatat)(int, int, const char *, struct stat *, int);
};
extern struct real_fns real;
/* Also hands libwtio its system calls (src/sys.h): the next definitions,
 * and shim_lib_open / shim_close_internal for its open and close. */
void shim_resolve(void);
bool shim_sys_ok(void);		/* false: libwtio's table was refused */
/* The shim's and libwtio's own descriptors (a served file's lease dup,
 * wtio's O_DIRECT dup, its rings) sit from SHIM_FD_BASE up, out of the
 * way of the small numbers a program names itself (a shell's "exec
 * 3<file" is a dup2 onto 3, which would replace one of them unseen);
 * from 3 where that is refused (a low RLIMIT_NOFILE). A close-on-exec
 * dup of fd, or -1. */
#define SHIM_FD_BASE 100
int shim_dupfd_own(int fd);

/* ---- config.c ---- */
struct shim_config {
	unsigned int default_flags;	/* WTIO_* of every write */
	uint64_t cache_size;
	uint32_t folio_size;		/* WTIO_FOLIO_SIZE, 4096 by default */
	char **paths;			/* realpath'd, no trailing slash */
	size_t *path_lens;
	int nr_paths;
	bool debug;
	const char *stats;		/* WTIO_STATS: counters at exit */
	bool disabled;			/* WTIO_DISABLE=1 or bad config */
};
extern struct shim_config shim_cfg;
void shim_init(void);
extern pid_t shim_pid;		/* exec.c: this process, not a vfork child */
/* A vfork child (or clone(CLONE_VM)) shares the parent's memory, tables
 * and cache: it must only make the real calls, never change them. */
bool shim_vfork_child(void);
bool shim_path_served(const char *abs_path);
struct wtio_ctx *shim_ctx(void);	/* created on first use; NULL = failed */
void shim_ctx_forget(void);		/* child after fork */
void shim_stats_report(void);		/* WTIO_STATS: counters to a file */
void shim_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- fdtable.c ---- */
/* One served file (dev, ino) of this process. Served, it has exactly one
 * open file description in the whole system, this process's, held with a
 * write lease (lease.c); lock_fd is a close-on-exec dup of it (the lease
 * is taken there, fstat looks there), -1 once passed through. */
struct shim_inode {
	dev_t dev;
	ino_t ino;
	int lock_fd;
	int refs;			/* open file descriptions using it */
	bool passthrough;		/* demoted for good (lease broken, mmap) */
	struct shim_ofd *ofds;		/* list of its open descriptions */
	struct shim_inode *next;
};

/* One open file description (what dup shares). */
struct shim_ofd {
	pthread_rwlock_t io_lock;	/* shared: I/O; exclusive: wf changes */
	/* held by a thread waiting to take io_lock exclusive, with
	 * excl_wait up: new readers queue behind it (fdtable.c) */
	pthread_mutex_t io_gate;
	atomic_int excl_wait;
	pthread_mutex_t pos_lock;	/* f_pos_lock: read/write/lseek */
	atomic_int refs;		/* table slots + calls in progress */
	struct wtio_file *wf;		/* NULL once passed through */
	struct shim_inode *inode;
	int realfd;			/* a descriptor of the description */
	int oflags;			/* access mode, O_APPEND, O_NONBLOCK.. */
	int wtio_oflags;		/* what wtio_open was given (reopen) */
	off_t pos;
	uint32_t block_size;		/* wtio's block: rounds its size */
	struct shim_ofd *inode_next;
	/* Times the program set (futimens) with nothing written since:
	 * put back after wtio's last write-back of the file (times.c). */
	_Atomic bool times_kept;
	struct timespec times[2];
};

struct shim_ofd *fd_get(int fd);	/* referenced, or NULL */
void ofd_put(struct shim_ofd *o);
void fd_install(int fd, struct shim_ofd *o);	/* takes a reference */
struct shim_ofd *fd_remove(int fd);	/* returns the slot's reference */
bool fd_is_served(int fd);
int fd_table_size(void);
/* fdrace.c: calls racing a close or an open of their number. fd_shield:
 * an open served fd now names an O_PATH placeholder (EBADF to I/O), for
 * the time from its slot's removal to its close. */
bool fd_shield(int fd);
/* An open is about to set O_DIRECT on fd's new description (on), or fd
 * is served or given back its flags (off). */
void fd_adopting(int fd, bool on);
/* Before a real call on fd: the adoptions of fd so far (and whether one
 * is in progress). After it failed with EINVAL: wait for an adoption in
 * progress; true if one was in progress or began since (the EINVAL may
 * be its O_DIRECT: make the call again). */
unsigned int fd_adopt_gen(int fd);
bool fd_adopted_since(int fd, unsigned int gen);
/* The program closed fd; the shim's own descriptors avoid the numbers
 * closed lately (shim_dupfd_own). */
void fd_note_closed(int fd);
bool fd_closed_lately(int fd);
/* The program closed or replaced fd, or the range: if it was the shim's
 * placeholder, another is made. */
void fd_not_placeholder(int fd);
void fd_range_closed(unsigned int first, unsigned int last);
/* Hold the free numbers closed lately with placeholders (blk: 64 slots)
 * while the kernel makes a descriptor at the lowest free number; their
 * count, for fd_unblock. */
int fd_block_lately(int *blk);
void fd_unblock(const int *blk, int n);
/* A close-on-exec dup of fd at base or above, on no number closed
 * lately; -1 with errno. */
int fd_dup_avoiding(int fd, int base);

/* Serve an already opened real fd through wtio, or leave it alone.
 * oflags: the program's flags. Fails (-errno; the caller closes fd and
 * fails the open) only where the truncation O_TRUNC asks for is refused,
 * as the kernel's open fails then. */
int shim_adopt(int fd, int oflags);
/* shim_adopt for an open that made fd: the open's result (fd, or -1 with
 * errno where the adoption failed it, fd closed). */
int shim_adopt_open(int fd, int oflags);
/* The served inode of (dev, ino), locked registry; size through wtio. */
bool shim_inode_size(dev_t dev, ino_t ino, off_t *size);
/* stat.c: wtio's size of (dev, ino), served here or by the holder.
 * Asked after the kernel's stat: SHIM_SIZE_SERVED (*size is the size),
 * SHIM_SIZE_KERNEL (not served: the kernel's answer stands), or
 * SHIM_SIZE_AGAIN (not served, but its last close or demotion by the
 * holder may have ended after the kernel answered, its write-back still
 * growing the file then: the caller stats it once more). */
enum { SHIM_SIZE_KERNEL, SHIM_SIZE_SERVED, SHIM_SIZE_AGAIN };
int shim_served_size(dev_t dev, ino_t ino, off_t *size);
/* A served description of (dev, ino), referenced (ofd_put), or NULL. */
struct shim_ofd *shim_inode_ofd(dev_t dev, ino_t ino);
/* Flush the file's dirty data and make its backing size exact. */
int ofd_flush(struct shim_ofd *o, bool durable);
/* o's io_lock: shared (I/O), exclusive (its wtio handle changes), given
 * back. Always through these: a waiting exclusive taker is not starved
 * by readers that overlap. */
void ofd_io_read(struct shim_ofd *o);
void ofd_io_write(struct shim_ofd *o);
void ofd_io_done(struct shim_ofd *o);
void ofd_io_init(struct shim_ofd *o);
/* Close every wtio handle of the inode (writing everything back), run fn
 * with the cache empty, then reopen them (or pass through for good when
 * keep_passthrough). Returns fn's result. */
typedef long (*around_fn)(void *arg);
long inode_around(struct shim_inode *ino, around_fn fn, void *arg,
		  bool keep_passthrough);
/* Pass one description through from now on (after writing back). */
void ofd_demote(struct shim_ofd *o);
/*
 * For the interposers of the other ways around the cache (ioctl, syscall,
 * io_uring): if fd is served, write its file back with the exact size,
 * drop its cached blocks and pass every descriptor of the file through,
 * for the rest of the process's life; the real descriptor is then the
 * kernel's view (and loses the O_DIRECT the shim may have set on it).
 * why goes to the --debug line. Call it with no shim lock held, before
 * the real call. Returns 1 if fd was served (now demoted), 0 if it was
 * not (nothing done); never fails the caller's call.
 */
int shim_demote_fd(int fd, const char *why);
/* ---- ioctl.c, syscall.c, aio.c: the other ways around the cache ---- */
/* A served fd: write its file back (data and exact size), cache kept.
 * Returns wtio's result, 0 when fd is not served. */
int shim_flush_fd(int fd);
/* ---- times.c ---- */
/* After wtio's last write to o's file: put back the times the program
 * set, if it wrote nothing since (the kernel's write-back keeps them). */
void shim_times_restore(struct shim_ofd *o);
/* The program has an io_uring: every file passes through from now on.
 * (libwtio's own rings are set up through its table, src/sys.h, and never
 * reach the interposers.) */
void shim_ring_seen(const char *why);
/* open.c: the open everything funnels into (syscall's SYS_open*). */
int shim_openat(int dirfd, const char *path, int flags, mode_t mode);
bool ofd_guard_size(struct shim_ofd *o);
void shim_flush_all(bool durable);
void shim_close_all(void);
/* Demote (write back, pass through for good) the served files whose lease
 * is being broken, or that a child will inherit. No shim lock held. */
enum { DEMOTE_BROKEN, DEMOTE_ALL, DEMOTE_INHERITABLE };
void shim_demote_where(int what, const char *why);

/* ---- lease.c ---- */
/* The lease-break signal, directed at the shim's own thread only. */
#define SHIM_LEASE_SIG	(SIGRTMIN + 11)
/* F_SETLEASE F_WRLCK on fd, signalled to the lease thread: 0, or -errno
 * (-EAGAIN: the file is open elsewhere, this process included; -EACCES:
 * not the file's owner). */
int shim_lease_take(int fd);
void shim_lease_drop(int fd);
void shim_lease_kick(void);		/* make the thread look now */
void shim_lease_atfork_child(void);
/* open.c: while >= 0, libwtio's next open (shim_lib_open) gets a dup of
 * this descriptor instead of a new open file description of the file. */
extern __thread int shim_handoff_fd;
int shim_lib_open(const char *path, int flags, ...);

/* ---- locks.c: the program's POSIX record locks vs the shim's closes ---- */
/* Before the program takes a lock on fd: a POSIX record lock
 * (F_SETLK/F_SETLKW), an OFD lock or a flock. */
void shim_lock_note(int fd);
/* Close a descriptor the shim or libwtio opened itself (not in the table);
 * kept open ("parked") while the program may hold POSIX locks on its file,
 * since closing any descriptor of a file drops them. */
int shim_close_own(int fd);
/* The program is about to close fd (or dup2 over it): its locks on the
 * file go, and so do the file's parked descriptors. */
void shim_lock_prog_close(int fd);
void shim_lock_range_closed(unsigned int first, unsigned int last);
bool shim_locks_any(void);
/* Whether the program may hold a lock on fd's file (a POSIX record lock,
 * an OFD lock or a flock noted before it was taken). */
bool shim_lock_held_on(int fd);
/* shim_lock_note for the program's lock calls (fdtable.c): ordered with
 * a pass-through's swap of a write-only descriptor's description. */
void shim_lock_note_served(int fd);
/* An open by libwtio (shim_lib_open): a parked descriptor to reuse, or
 * -1. */
int shim_unpark(int dirfd, const char *path, int flags);
void shim_locks_atfork_prepare(void);
void shim_locks_atfork_parent(void);
void shim_locks_atfork_child(void);
/* open.c: close a descriptor the shim opened for itself (freopen's
 * probe) or libwtio did (it is libwtio's close, see real.c): as close(),
 * but parked. */
int shim_close_internal(int fd);

/* errno helpers: wtio returns -errno, libc calls set errno. */
static inline long shim_ret(long r)
{
	if (r < 0) {
		extern int *__errno_location(void);
		*__errno_location() = (int)-r;
		return -1;
	}
	return r;
}

/* wtio flags for a read or write call given its RWF_* flags. */
int shim_rwf(int rwf, bool write, unsigned int *wflags, bool *append);

#endif
