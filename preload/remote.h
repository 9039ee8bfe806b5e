/* SPDX-License-Identifier: MIT */
/*
 * remote.h - the shim's client side of the cache holder (wtio-run
 * --shared: WTIO_HOLDER set; docs/SHIM.md, "--shared"; the wire protocol
 * is holder_proto.h). remote.c is the transport (a connection per thread,
 * request and reply), remote_ops.c the table of served descriptors and
 * the calls on them.
 */
#ifndef WTIO_REMOTE_H
#define WTIO_REMOTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "holder_proto.h"

/* ---- remote.c: the transport ---- */
struct rconn {
	_Atomic int sock;	/* moved by rc_evict */
	void *buf;		/* the data buffer shared with the holder */
	size_t size;
	bool busy;		/* a call in progress (a signal handler's
				 * call gets a connection of its own) */
	bool temp;		/* that one: closed after the call */
	size_t used_hi;		/* pages up to here may hold a large
				 * call's data (past HOLDER_BUF_MIN) */
	unsigned int small_calls;	/* since the last large call */
	struct rconn *next;
};

/* WTIO_HOLDER's value ("@name"): false if it is not an abstract address. */
bool remote_config(const char *addr);
bool remote_dead(void);
/* The holder belongs to another user than this process (it changed its
 * uid: runuser, su, a daemon dropping root), which the holder does not
 * serve: this process's opens are the kernel's (an open of a served file
 * then passes it through for the program, as another program's would). */
bool remote_foreign(void);
/* An open here is the kernel's: remote_foreign(), or this thread's
 * connection could not be made under the program's RLIMIT_FSIZE. */
bool remote_open_kernel(void);
/* NULL if the calling thread's credentials are the holder's as far as
 * it can tell cheaply (fsuid, fsgid, groups, effective capabilities;
 * NULL too before the holder said), else why not: its open is then the
 * kernel's. The holder checks every open again itself. */
const char *remote_creds_differ(void);
/* This thread's connection (made and greeted on first use), or a
 * temporary one inside a signal handler's call; NULL when the holder is
 * gone, or foreign. Give it back with rc_put. */
struct rconn *rc_get(struct rconn *tmp);
void rc_put(struct rconn *c);
/* Grow c's buffer to at least need bytes (up to HOLDER_BUF_MAX); 0 or
 * -errno (c keeps the buffer it had). */
int rc_buffer(struct rconn *c, size_t need);
/* A data call that used the buffer's first used bytes is done: after
 * RC_TRIM_AFTER calls of at most HOLDER_BUF_MIN in a row, the pages a
 * larger one used past HOLDER_BUF_MIN are given back (the buffer keeps
 * its size, its memory returns to HOLDER_BUF_MIN). */
#define RC_TRIM_AFTER 16
void rc_trim(struct rconn *c, size_t used);
/* One request and its reply. send_fd >= 0 travels with it; a descriptor
 * in the reply lands in *recv_fd (-1 if none; closed if recv_fd is NULL),
 * close-on-exec when cloexec. 0, or -EIO once the holder is gone (then
 * for good). */
int rc_call(struct rconn *c, const struct holder_req *rq, int send_fd,
	    struct holder_reply *rp, int *recv_fd, bool cloexec);
/* The program is about to close fd, or dup2 over it, and fd is one of
 * the connections: move the connection to another number first. */
bool rc_own_fd(int fd);
void rc_evict(int fd);
/* close_range(first, last) without closing the connections. */
int rc_close_range(unsigned int first, unsigned int last, int flags,
		   int (*next)(unsigned int, unsigned int, int));
/* fork: prepare (locks the registry), then in the parent or the child. */
void rc_atfork_prepare(void);
void rc_atfork_parent(void);
/* Async-signal-safe: drop the inherited connections without a word to
 * the holder (close them), and make the child's first HELLO claim token
 * (0: nothing to claim). */
void rc_atfork_child(uint64_t token);

/* ---- remote_ops.c: served descriptors ---- */
#define RTAB_MAX (1 << 16)
/* fd -> OFD id + 1 (0: no reference to the holder), RTAB_DEMOTED set
 * once the OFD passed through: the descriptor is the kernel's, but it
 * still holds its reference (dropped at close). */
extern _Atomic uint64_t remote_tab[RTAB_MAX];
extern bool remote_on;		/* shared mode */
#define RTAB_DEMOTED	(1ull << 63)

static inline uint64_t remote_slot(int fd)
{
	if (!remote_on || fd < 0 || fd >= RTAB_MAX)
		return 0;
	return atomic_load_explicit(&remote_tab[fd], memory_order_acquire);
}

/* Served now: calls on fd are requests to the holder. */
static inline bool remote_served(int fd)
{
	uint64_t v = remote_slot(fd);

	return v && !(v & RTAB_DEMOTED);
}

/* The open: 1 = served (*fd set), 0 = the caller opens it (not under the
 * paths, or not served), -errno = the open's error. */
int remote_open(int dirfd, const char *path, int flags, mode_t mode,
		int *fd);
/* A write-back error that fd's switch to the kernel hit, for its first
 * fsync or fdatasync (given once), or 0. */
int remote_take_err(int fd);
/* path (at dirfd) lies under the paths (lexically: what an open sends). */
bool remote_path_served(int dirfd, const char *path);
/* close/close_range: close fd (served or passed through) and drop its
 * reference. 0, or -errno: the close's, or the holder's (a write-back
 * error at the last reference, or one its switch to the kernel hit);
 * 1 if fd was not the holder's (nothing done). */
int remote_close(int fd);
/* newfd is now a duplicate of oldfd (dup, dup2, dup3, F_DUPFD): mirror it.
 * Returns newfd, or -1 with errno (newfd closed again). */
int remote_dup(int oldfd, int newfd);
/* newfd was replaced by something else (dup2 of an unserved fd over it). */
void remote_replaced(int newfd);
/* Data: as rw.c's served_rw. *passthrough: not (or no longer) served,
 * nothing done. */
ssize_t remote_rw(int fd, const struct iovec *iov, int cnt, off_t off,
		  int rwf, bool write, bool *passthrough);
/* Any other request on fd's OFD: 1 = answered (*res: its result, >= 0 or
 * -errno; *val: the reply's val), 0 = not served (make the real call),
 * -EIO. */
/* This process's RLIMIT_FSIZE as HOP_WRITE and HOP_FTRUNCATE carry it
 * (limit + 1, 0 for none). */
int64_t remote_fsize_arg(void);
/* A reply's -EFBIG past that limit: SIGXFSZ to this thread first, as
 * the kernel sends it. Returns status. */
int64_t remote_fsize_reply(int64_t status, int64_t val);
int remote_fd_op(int fd, int op, int64_t a0, int64_t a1, int64_t a2,
		 int64_t *res, int64_t *val);
/* st_size of (dev, ino) if the holder serves it: SHIM_SIZE_SERVED
 * (*size set), SHIM_SIZE_KERNEL (the kernel's answer stands) or
 * SHIM_SIZE_AGAIN (the file left the holder just now: stat it again). */
int remote_size_ino(dev_t dev, ino_t ino, off_t *size);
/* Pass fd's file through, for every process of the program, for good:
 * 1 = done (fd is now a kernel descriptor), 0 = not served, -errno. */
int remote_demote_fd(int fd, int reason);
/* Before a spawned child (all: every served fd, else those without
 * FD_CLOEXEC), before exec, an io_uring: pass those files through. */
void remote_demote_inheritable(bool all, int reason);
int remote_before_exec(void);
int remote_syncfs(void);
pid_t remote_fork(pid_t (*real_fork)(void));
/* remote_ops.c for remote_io.c: a request on fd's OFD (1 answered, 0
 * not served or switched to the kernel now, -errno), the devices seen,
 * the table's extent and slots in use. */
int remote_ask_fd(struct rconn *c, int fd, struct holder_req *rq,
		  struct holder_reply *rp);
bool remote_dev_known(dev_t d);
int remote_tab_high(void);
int remote_tab_count(void);
/* A descriptor libc opened past the shim (freopen): a stale slot goes. */
void remote_forget(int fd);
/* remote_shm.c: lseek(fd, off, whence) answered from the holder's shared
 * page: 1 (*res: the position, or -EINVAL), 0 = ask the holder. */
int remote_seek_local(int fd, off_t off, int whence, off_t *res);
/* fd's file size from that page: 1 (*size set), 0 = ask the holder. */
int remote_size_local(int fd, off_t *size);
/* Shared mode on (config.c, after the paths are known). */
void remote_setup(void);

#endif
