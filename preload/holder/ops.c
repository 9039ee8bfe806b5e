/* SPDX-License-Identifier: MIT */
/*
 * ops.c - the requests of a connection, on the holder's OFDs: data
 * (read/write at an offset or at the OFD's position, O_APPEND atomic
 * across the program), positions, sizes, truncation, allocation, the
 * fsync family, flags, demotion, fork, exec and the counters.
 *
 * Every request on a served file holds an OFD reference and the file's
 * io_lock shared for its whole length, so that a demotion (exclusive)
 * waits for it and no request sees a handle go. A request on a demoted
 * OFD is answered HOLDER_DEMOTED with the OFD's own description.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../shim_rw.h"
#include "creds.h"
#include "ctx.h"
#include "demote.h"
#include "log.h"
#include "ops.h"
#include "proc.h"
#include "record.h"
#include "serve.h"
#include "shm.h"
#include "world.h"

#define SETFL_FLAGS (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK)
/* F_GETFL on a 64-bit kernel always shows O_LARGEFILE's bit */
#define KERNEL_LARGEFILE 0100000

int hops_set_buffer(struct hconn *c, int memfd, uint64_t size)
{
	struct stat st;
	void *m;

	if (size < 4096 || size > HOLDER_BUF_MAX) {
		close(memfd);
		return -EINVAL;
	}
	if (fstat(memfd, &st) < 0 || (uint64_t)st.st_size < size) {
		close(memfd);
		return -EINVAL;
	}
	/* a client shrinking its buffer under a copy would kill the holder
	 * (SIGBUS): sealed against that if the client allowed sealing */
	fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	close(memfd);
	if (m == MAP_FAILED)
		return -errno;
	if (c->buf)
		munmap(c->buf, c->buf_size);
	c->buf = m;
	c->buf_size = size;
	return 0;
}

/* The answer on a demoted OFD. io_lock held (shared at least). */
static void demoted(struct hofd *o, struct holder_reply *rep, int *send_fd)
{
	*send_fd = o->demoted_fd >= 0 ?
		   fcntl(o->demoted_fd, F_DUPFD_CLOEXEC, 3) : -1;
	rep->status = *send_fd >= 0 ? HOLDER_DEMOTED : -EIO;
	/* the demotion's write-back error, for the client to report once */
	if (*send_fd >= 0)
		rep->val = atomic_exchange(&o->pending_err, 0);
}

/* A sync's result, after an error kept from a closed handle. */
static int64_t synced(struct hofd *o, int64_t r)
{
	int e = atomic_exchange(&o->pending_err, 0);

	return e ? e : r;
}

/*
 * Take o's file for a request: io_lock shared, the file served (1), or
 * demoted (0, answered, lock released). A file between a fallocate's
 * close and its demotion has no handle for a moment: wait for it.
 */
static int enter(struct hofd *o, struct holder_reply *rep, int *send_fd)
{
	for (;;) {
		pthread_rwlock_rdlock(&o->ino->io_lock);
		if (o->demoted) {
			demoted(o, rep, send_fd);
			pthread_rwlock_unlock(&o->ino->io_lock);
			return 0;
		}
		if (o->ino->wf)
			return 1;
		pthread_rwlock_unlock(&o->ino->io_lock);
		usleep(1000);
	}
}

static void leave(struct hofd *o)
{
	pthread_rwlock_unlock(&o->ino->io_lock);
}

/* wtio flags of a call's RWF_* flags and the OFD's. */
static int call_flags(int rwf, int oflags, bool write, unsigned int *wf,
		      bool *append)
{
	int r;

	*append = write && (oflags & O_APPEND);
	r = shim_rwf_map(rwf, write, wf, append);
	if (r)
		return r;
	if (write && (oflags & (O_DSYNC | O_SYNC)))
		*wf |= WTIO_DSYNC;
	/* O_DIRECT of the program: no copy kept, on disk at return */
	if (oflags & O_DIRECT)
		*wf |= write ? WTIO_WRITETHROUGH | WTIO_DONTCACHE :
			       WTIO_DONTCACHE;
	return 0;
}

/* The caller's ulimit -f on a write at off, as the kernel's
 * generic_write_check_limits: len cut to it, or -EFBIG (*xfsz: the
 * caller sends itself SIGXFSZ) at or past it. arg is HOP_WRITE's. */
static ssize_t fsize_cut(int64_t arg, off_t off, size_t *len, bool *xfsz)
{
	int64_t limit = arg - 1;

	if (arg <= 0)
		return 0;
	if (off >= limit) {
		*xfsz = true;
		return -EFBIG;
	}
	if ((int64_t)*len > limit - off)
		*len = (size_t)(limit - off);
	return 0;
}

/* The write itself, size_lock taken as it needs. io_lock held. */
static ssize_t do_write(struct hinode *ino, const void *buf, size_t len,
			off_t *off, unsigned int flags, bool append,
			int64_t fsize_arg, bool *xfsz)
{
	ssize_t r;

	if (append) {
		pthread_rwlock_wrlock(&ino->size_lock);
		*off = wtio_file_size(ino->wf);
		r = *off < 0 ? *off : fsize_cut(fsize_arg, *off, &len, xfsz);
		if (!r)
			r = wtio_pwrite(ino->wf, buf, len, *off, flags);
		pthread_rwlock_unlock(&ino->size_lock);
		return r;
	}
	r = fsize_cut(fsize_arg, *off, &len, xfsz);
	if (r)
		return r;
	pthread_rwlock_rdlock(&ino->size_lock);
	if ((off_t)len > wtio_file_size(ino->wf) - *off) {
		/* it moves the end: one at a time with the appends */
		pthread_rwlock_unlock(&ino->size_lock);
		pthread_rwlock_wrlock(&ino->size_lock);
	}
	r = wtio_pwrite(ino->wf, buf, len, *off, flags);
	pthread_rwlock_unlock(&ino->size_lock);
	return r;
}

static void rw(struct hconn *c, struct hofd *o, const struct holder_req *req,
	       struct holder_reply *rep, int *send_fd)
{
	bool write = req->op == HOP_WRITE, use_pos = req->arg[0] == -1, append;
	size_t len = (size_t)req->arg[1];
	off_t off = req->arg[0];
	unsigned int flags;
	int oflags, acc;
	ssize_t r;

	if (req->arg[1] < 0 || len > c->buf_size || !c->buf || off < -1) {
		rep->status = -EINVAL;
		return;
	}
	if (use_pos)
		pthread_mutex_lock(&o->pos_lock);
	if (!enter(o, rep, send_fd))
		goto out;
	oflags = atomic_load(&o->oflags);
	acc = oflags & O_ACCMODE;
	if (acc == (write ? O_RDONLY : O_WRONLY)) {
		r = -EBADF;
		goto done;
	}
	r = call_flags((int)req->arg[2], oflags, write, &flags, &append);
	if (r)
		goto done;
	if (use_pos)
		off = o->pos = hshm_take_pos(o, o->pos);
	if (write) {
		bool xfsz = false;

		r = do_write(o->ino, c->buf, len, &off, flags, append,
			     req->arg[3], &xfsz);
		rep->val = xfsz;
		hshm_publish(o->ino);
		if (r > 0) {
			HSTAT_INC(writes);
			HSTAT_ADD(bytes_written, (uint64_t)r);
			/* before the answer: what the holder's death would
			 * lose is in the record first */
			hrec_wrote(o->ino->rec, (uint64_t)r,
				   flags | hctx_default_flags());
		}
	} else {
		r = wtio_pread(o->ino->wf, c->buf, len, off,
			       flags & (WTIO_NOWAIT | WTIO_DONTCACHE));
		if (r > 0) {
			HSTAT_INC(reads);
			HSTAT_ADD(bytes_read, (uint64_t)r);
		}
	}
	/* (an empty write moves no position, O_APPEND or not: the kernel
	 * looks at the count before it takes the end) */
	if (use_pos && r > 0)
		o->pos = off + r;
done:
	rep->status = r;
	leave(o);
out:
	if (use_pos)
		pthread_mutex_unlock(&o->pos_lock);
}

static void do_lseek(struct hofd *o, const struct holder_req *req,
		     struct holder_reply *rep, int *send_fd)
{
	off_t off = req->arg[0], r, size;

	pthread_mutex_lock(&o->pos_lock);
	if (!enter(o, rep, send_fd)) {
		pthread_mutex_unlock(&o->pos_lock);
		return;
	}
	size = wtio_file_size(o->ino->wf);
	o->pos = hshm_take_pos(o, o->pos);
	r = shim_seek_to(o->pos, size, off, (int)req->arg[1]);
	if (r >= 0)
		r = shim_seek_limit(r, off, (int)req->arg[1],
				    wtio_file_max_size(o->ino->wf));
	HSTAT_INC(seeks);
	if (r >= 0)
		o->pos = r;
	rep->status = r;
	leave(o);
	pthread_mutex_unlock(&o->pos_lock);
}

struct falloc_args {
	int mode;
	off_t off, len;
};

static long falloc_fn(int fd, void *arg)
{
	struct falloc_args *a = arg;

	return fallocate(fd, a->mode, a->off, a->len) < 0 ? -errno : 0;
}

static void do_fallocate(struct hofd *o, const struct holder_req *req,
			 struct holder_reply *rep, int *send_fd)
{
	struct falloc_args a = { (int)req->arg[0], req->arg[1], req->arg[2] };
	long r;

	if ((atomic_load(&o->oflags) & O_ACCMODE) == O_RDONLY) {
		rep->status = -EBADF;
		return;
	}
	/* wtio's limit, as the shim's own fallocate keeps it (shim_rw.h) */
	pthread_rwlock_rdlock(&o->ino->io_lock);
	r = o->demoted || !o->ino->wf ? 0 :
	    shim_falloc_limit(a.off, a.len, wtio_file_max_size(o->ino->wf));
	pthread_rwlock_unlock(&o->ino->io_lock);
	if (r) {
		rep->status = r;
		return;
	}
	r = hino_around(o->ino, falloc_fn, &a);
	pthread_rwlock_rdlock(&o->ino->io_lock);
	if (r == HOLDER_DEMOTED) {
		demoted(o, rep, send_fd);
		pthread_rwlock_unlock(&o->ino->io_lock);
		return;
	}
	if (!o->demoted)
		hshm_publish(o->ino);
	pthread_rwlock_unlock(&o->ino->io_lock);
	rep->status = r;
}

static void do_syncfs(struct holder_reply *rep)
{
	struct hinode **all;
	int n, i, ret = 0, r;
	uint64_t snap;

	n = hino_all(&all);
	if (n < 0) {
		rep->status = n;
		return;
	}
	for (i = 0; i < n; i++) {
		pthread_rwlock_rdlock(&all[i]->io_lock);
		/* (with its handle, the file keeps its record slot until
		 * io_lock is released) */
		r = 0;
		if (all[i]->wf) {
			snap = hrec_snap(all[i]->rec);
			r = wtio_fsync(all[i]->wf);
			if (!r)
				hrec_clean(all[i]->rec, snap);
		}
		pthread_rwlock_unlock(&all[i]->io_lock);
		if (r && !ret)
			ret = r;
		hino_put(all[i]);
	}
	free(n > 0 ? all : NULL);
	HSTAT_INC(syncs);
	rep->status = ret;
}

static void size_ino(const struct holder_req *req, struct holder_reply *rep)
{
	bool moved;
	struct hinode *ino = hino_lookup((dev_t)req->arg[0], (ino_t)req->arg[1],
					 &moved);

	rep->status = HOLDER_NOT_SERVED;
	if (!ino) {
		/* 1: it left the holder just now (closed, demoted): the
		 * client's kernel answer may predate the end of its
		 * write-back, it asks the kernel again */
		rep->val = moved;
		return;
	}
	pthread_rwlock_rdlock(&ino->io_lock);
	if (ino->wf) {
		rep->val = wtio_file_size(ino->wf);
		rep->status = rep->val < 0 ? rep->val : 0;
	}
	pthread_rwlock_unlock(&ino->io_lock);
	hino_put(ino);
}

/*
 * The mode to create with. The holder's umask is 0 and its threads
 * share it; a connection thread takes a file-system context of its own
 * (unshare CLONE_FS, once) and creates under the program's umask, so
 * that the kernel applies it, or a directory's default ACL instead. Where
 * it cannot, the umask is applied here (a default ACL then loses).
 * The caller sets the umask back to 0 after its create.
 */
static mode_t create_mode(const struct holder_req *req)
{
	static __thread int own_fs;	/* 0 not tried, 1 own, -1 cannot */
	mode_t mode = (mode_t)req->arg[1] & 07777;
	mode_t um = (mode_t)req->arg[3] & 0777;

	if (!(req->arg[3] & HOPEN_UMASK))
		return mode;
	if (!own_fs)
		own_fs = unshare(CLONE_FS) == 0 ? 1 : -1;
	if (own_fs < 0)
		return mode & ~um;
	umask(um);
	return mode;
}

static void do_open(struct hconn *c, const struct holder_req *req, int *fds,
		    int nfds, struct holder_reply *rep, int *send_fd)
{
	int dirfd = AT_FDCWD, ret;
	const char *why;
	struct hofd *o;

	if (!c->buf || !memchr(c->buf, 0, c->buf_size < PATH_MAX ?
				c->buf_size : PATH_MAX)) {
		rep->status = -ENAMETOOLONG;
		return;
	}
	/* paths of another mount namespace or root name other files */
	if (!hworld_same(hproc_pid(c->proc))) {
		HSTAT_INC(opens_not_served);
		HSTAT_INC(not_served_other);
		hdebug("%s: not served: opened from another mount namespace or root (process %d)",
		       c->buf, (int)hproc_pid(c->proc));
		rep->status = HOLDER_NOT_SERVED;
		return;
	}
	/* the holder opens with its own credentials: only for a sender
	 * that has them now (creds.c); another's open is the kernel's */
	why = hcreds_differ(&c->peer, c->req_pid);
	if (why) {
		HSTAT_INC(opens_not_served);
		HSTAT_INC(not_served_creds);
		hdebug("%s: not served: process %d has other credentials than the holder's (%s)",
		       c->buf, (int)c->req_pid, why);
		rep->status = HOLDER_NOT_SERVED;
		return;
	}
	if (req->arg[2]) {
		if (nfds < 1 || fds[0] < 0) {
			rep->status = -EBADF;
			return;
		}
		dirfd = fds[0];
	} else if (c->buf[0] != '/') {
		rep->status = -EINVAL;
		return;
	}
	ret = hserve_open(dirfd, c->buf, (int)req->arg[0],
			  create_mode(req), &o, send_fd);
	if (req->arg[3] & HOPEN_UMASK)
		umask(0);
	if (ret == HSERVE_NOT_SERVED) {
		rep->status = HOLDER_NOT_SERVED;
	} else if (ret < 0) {
		rep->status = ret;
	} else {
		rep->status = HOLDER_SERVED;
		rep->val = (int64_t)o->id;
		rep->val2 = o->ino->block_size ? o->ino->block_size : 4096;
		/* the size an O_TRUNC or a new file left, before any seek */
		pthread_rwlock_rdlock(&o->ino->io_lock);
		if (!o->demoted)
			hshm_publish(o->ino);
		pthread_rwlock_unlock(&o->ino->io_lock);
		hproc_adopt(c->proc, o);
	}
}

static void do_setfl(struct hconn *c, struct hofd *o,
		     const struct holder_req *req, struct holder_reply *rep,
		     int *send_fd)
{
	int v = (int)req->arg[0], old;
	struct stat st;

	if (!enter(o, rep, send_fd))
		return;
	old = atomic_load(&o->oflags);
	/* the sender's right, as the kernel's F_SETFL asks it, not the
	 * holder's */
	if ((v & O_NOATIME) && !(old & O_NOATIME) &&
	    (fstat(o->ino->fd, &st) < 0 ||
	     hcreds_may_own(&c->peer, c->req_pid, st.st_uid))) {
		rep->status = -EPERM;
	} else {
		atomic_store(&o->oflags, (old & ~SETFL_FLAGS) | (v & SETFL_FLAGS));
		rep->status = 0;
	}
	leave(o);
}

/* A request on one OFD, from enter() on when it needs the file. */
static void on_ofd(struct hconn *c, struct hofd *o, const struct holder_req *req,
		   struct holder_reply *rep, int *send_fd)
{
	int acc = atomic_load(&o->oflags) & O_ACCMODE;
	uint64_t snap;

	switch (req->op) {
	case HOP_READ:
	case HOP_WRITE:
		rw(c, o, req, rep, send_fd);
		return;
	case HOP_LSEEK:
		do_lseek(o, req, rep, send_fd);
		return;
	case HOP_FALLOCATE:
		do_fallocate(o, req, rep, send_fd);
		return;
	case HOP_SETFL:
		do_setfl(c, o, req, rep, send_fd);
		return;
	case HOP_DEMOTE:
		hdemote(o->ino, req->arg[0] >= 0 && req->arg[0] < 4 ?
			(int)req->arg[0] : HDEMOTE_PROGRAM);
		/* If another thread's demotion began first, hdemote left it
		 * to that one, which marks o demoted under io_lock exclusive
		 * but may not hold it yet: wait for its end, or o looks
		 * served (two processes' first locks at once got EIO). */
		hino_wait_not_busy(o->ino);
		pthread_rwlock_rdlock(&o->ino->io_lock);
		if (o->demoted)
			demoted(o, rep, send_fd);
		else	/* closed meanwhile: cannot happen with o referenced */
			rep->status = -EIO;
		pthread_rwlock_unlock(&o->ino->io_lock);
		return;
	}
	if (!enter(o, rep, send_fd))
		return;
	switch (req->op) {
	case HOP_SIZE:
		HSTAT_INC(sizes);
		rep->val = wtio_file_size(o->ino->wf);
		rep->status = rep->val < 0 ? rep->val : 0;
		break;
	case HOP_FTRUNCATE:
		if (acc == O_RDONLY || req->arg[0] < 0) {
			rep->status = -EINVAL;
			break;
		}
		pthread_rwlock_wrlock(&o->ino->size_lock);
		/* the caller's ulimit -f, as inode_newsize_ok */
		if (req->arg[1] > 0 && req->arg[0] > req->arg[1] - 1 &&
		    req->arg[0] > wtio_file_size(o->ino->wf)) {
			rep->status = -EFBIG;
			rep->val = 1;
		} else {
			rep->status = wtio_ftruncate(o->ino->wf, req->arg[0]);
		}
		pthread_rwlock_unlock(&o->ino->size_lock);
		hshm_publish(o->ino);
		break;
	case HOP_FSYNC:
	case HOP_FDATASYNC:
		snap = hrec_snap(o->ino->rec);
		rep->status = synced(o, req->op == HOP_FSYNC ?
				     wtio_fsync(o->wf) : wtio_fdatasync(o->wf));
		if (!rep->status)
			hrec_clean(o->ino->rec, snap);
		HSTAT_INC(syncs);
		break;
	case HOP_SYNC_RANGE:
		if ((req->arg[2] & ~7) || req->arg[0] < 0 || req->arg[1] < 0 ||
		    req->arg[1] > INT64_MAX - req->arg[0]) {
			rep->status = -EINVAL;
			break;
		}
		rep->status = wtio_sync_range(o->wf, req->arg[0], req->arg[1],
					      (unsigned int)req->arg[2]);
		/* the waits report errors, as file_fdatawait_range */
		if (req->arg[2] & 5)
			rep->status = synced(o, rep->status);
		break;
	case HOP_GETFL:
		rep->val = atomic_load(&o->oflags) | KERNEL_LARGEFILE;
		rep->status = 0;
		break;
	default:
		rep->status = -EINVAL;
	}
	leave(o);
}

void hops_handle(struct hconn *c, const struct holder_req *req, int *fds,
		 int nfds, struct holder_reply *rep, int *send_fd)
{
	struct holder_stats st;
	struct hofd *o;

	memset(rep, 0, sizeof(*rep));
	*send_fd = -1;
	switch (req->op) {
	case HOP_BUFFER:
		if (nfds < 1 || fds[0] < 0) {
			rep->status = -EBADF;
			return;
		}
		rep->status = hops_set_buffer(c, fds[0], (uint64_t)req->arg[0]);
		fds[0] = -1;
		return;
	case HOP_OPEN:
		do_open(c, req, fds, nfds, rep, send_fd);
		return;
	case HOP_REF:
		rep->status = hproc_ref(c->proc, req->ofd);
		return;
	case HOP_UNREF:
		rep->status = hproc_unref(c->proc, req->ofd);
		return;
	case HOP_SIZE_INO:
		size_ino(req, rep);
		return;
	case HOP_SYNCFS:
		do_syncfs(rep);
		return;
	case HOP_FORK_PREPARE:
		rep->status = hproc_fork_prepare(c->proc);
		return;
	case HOP_FORK_DONE:
		rep->status = hproc_fork_done(c->proc, (uint64_t)req->arg[0],
					      req->arg[1]);
		return;
	case HOP_EXEC:
		hproc_exec(c->proc);
		rep->status = 0;
		return;
	case HOP_STATS:
		if (!c->buf || c->buf_size < sizeof(st)) {
			rep->status = -EINVAL;
			return;
		}
		hstats_get(&st);
		memcpy(c->buf, &st, sizeof(st));
		rep->status = sizeof(st);
		return;
	case HOP_HELLO:
		rep->status = -EINVAL;	/* once per connection */
		return;
	case HOP_SHM:
		*send_fd = hshm_dup();
		rep->status = *send_fd >= 0 ? 0 : *send_fd;
		if (*send_fd < 0)
			*send_fd = -1;
		return;
	}
	o = hproc_ofd(c->proc, req->ofd);
	if (!o) {
		rep->status = -EBADF;
		return;
	}
	on_ofd(c, o, req, rep, send_fd);
	hofd_put(o, 1);
}
