/* SPDX-License-Identifier: MIT */
/*
 * ioctl.c - ioctl(2) on served files: the requests that let the kernel
 * read or change a file's data or size behind the cache (reflink clones,
 * dedupe, the XFS space calls, extent maps, freezes).
 *
 * Each request is put in one class (docs/SHIM.md lists them):
 *   PASS    descriptor or inode metadata only: the real call.
 *   FIONREAD  answered from wtio (size - position), as the kernel does.
 *   FLUSH   the kernel reads the file's data or layout: write back (data
 *           and exact size) first, then the real call; the cache stays.
 *   AROUND  the kernel changes the file's data or size: write back, drop
 *           the cache (every wtio handle closed), the real call with the
 *           kernel positions set, then serve the file again.
 *   DEMOTE  anything else on a served file, whose effect the shim cannot
 *           know: write back, drop the cache and pass the file through
 *           for the rest of the process's life, then the real call.
 * Descriptors named inside the argument (a clone's source, dedupe's
 * destinations, an extent swap's other file) are handled too, whether or
 * not the ioctl's own descriptor is served. In shared mode (the holder
 * has the cache) FLUSH is the holder's write-back, and AROUND passes the
 * file through as DEMOTE does (the protocol has no reopen).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include "shim.h"

/* Values from the kernel's uapi headers that older ones may lack. */
#ifndef FIOQSIZE
#define FIOQSIZE	0x5460
#endif
struct shim_fsuuid2 { uint8_t len, uuid[16]; };
struct shim_fs_sysfs_path { uint8_t len, name[128]; };
#ifndef FS_IOC_GETFSUUID
#define FS_IOC_GETFSUUID	_IOR(0x15, 0, struct shim_fsuuid2)
#endif
#ifndef FS_IOC_GETFSSYSFSPATH
#define FS_IOC_GETFSSYSFSPATH	_IOR(0x15, 1, struct shim_fs_sysfs_path)
#endif

/* XFS (xfs_fs.h): the space calls take a struct xfs_flock64 (48 bytes),
 * and are also the generic FS_IOC_RESVSP* family (fs/ioctl.c). */
struct shim_xfs_flock64 {
	int16_t l_type, l_whence;
	int64_t l_start, l_len;
	int32_t l_sysid;
	uint32_t l_pid;
	int32_t l_pad[4];
};
#define X_ALLOCSP	_IOW('X', 10, struct shim_xfs_flock64)
#define X_FREESP	_IOW('X', 11, struct shim_xfs_flock64)
#define X_ALLOCSP64	_IOW('X', 36, struct shim_xfs_flock64)
#define X_FREESP64	_IOW('X', 37, struct shim_xfs_flock64)
#define X_RESVSP	_IOW('X', 40, struct shim_xfs_flock64)
#define X_UNRESVSP	_IOW('X', 41, struct shim_xfs_flock64)
#define X_RESVSP64	_IOW('X', 42, struct shim_xfs_flock64)
#define X_UNRESVSP64	_IOW('X', 43, struct shim_xfs_flock64)
#define X_ZERO_RANGE	_IOW('X', 57, struct shim_xfs_flock64)
/* read-only XFS requests, by number (their sizes vary by version) */
#define X_NR_DIOINFO		30
#define X_NR_FSGETXATTRA	45
#define X_NR_GETBMAP		38
#define X_NR_GETBMAPA		44
#define X_NR_GETBMAPX		56
#define X_NR_FSGEOMETRY_V1	100
#define X_NR_FSCOUNTS		113
#define X_NR_GET_RESBLKS	115
#define X_NR_FSGEOMETRY_V4	124
#define X_NR_FSGEOMETRY		126
#define X_NR_GOINGDOWN		125
/* two files' data exchanged: both pass through */
struct shim_xfs_swapext {
	int64_t sx_version;
	int64_t sx_fdtarget;
	int64_t sx_fdtmp;
	/* offsets, length, pad, bulkstat follow */
};
#define X_NR_SWAPEXT		109
struct shim_xfs_exchange_range {
	int32_t file1_fd;
	/* offsets, length, flags follow */
};
#define X_NR_EXCHANGE_RANGE	129
/* ext4's EXT4_IOC_MOVE_EXT: struct move_extent { u32 reserved, donor_fd } */
#define EXT4_NR_MOVE_EXT	15

static int (*next_ioctl)(int, unsigned long, ...);

static int real_ioctl(int fd, unsigned long req, unsigned long arg)
{
	int (*f)(int, unsigned long, ...) =
		__atomic_load_n(&next_ioctl, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (__typeof__(f))dlsym(RTLD_NEXT, "ioctl");
		__atomic_store_n(&next_ioctl, f, __ATOMIC_RELEASE);
	}
	return f(fd, req, arg);
}

int shim_flush_fd(int fd)
{
	struct shim_ofd *o;
	int64_t res;
	int ret;

	ret = remote_fd_op(fd, HOP_FDATASYNC, 0, 0, 0, &res, NULL);
	if (ret)
		return ret < 0 ? ret : (int)res;
	if (!(o = fd_get(fd)))
		return 0;
	ret = ofd_flush(o, false);
	ofd_put(o);
	return ret;
}

enum { C_PASS, C_FIONREAD, C_FLUSH, C_AROUND, C_DEMOTE, C_FLUSH_ALL };

static int classify(unsigned long req)
{
	unsigned int type = _IOC_TYPE(req), nr = _IOC_NR(req);

	switch (req) {
	case FIONREAD:
		return C_FIONREAD;
	case FIOCLEX: case FIONCLEX: case FIONBIO: case FIOASYNC:
	case FIGETBSZ:
	case FS_IOC_GETFLAGS: case FS_IOC_SETFLAGS:
	case FS_IOC32_GETFLAGS: case FS_IOC32_SETFLAGS:
	case FS_IOC_GETVERSION: case FS_IOC_SETVERSION:
	case FS_IOC_FSGETXATTR: case FS_IOC_FSSETXATTR:
	case FS_IOC_GETFSLABEL: case FS_IOC_SETFSLABEL:
	case FS_IOC_GETFSUUID: case FS_IOC_GETFSSYSFSPATH:
	case FITHAW: case FITRIM:
		return C_PASS;
	case FIBMAP: case FS_IOC_FIEMAP: case FIOQSIZE:
		return C_FLUSH;
	case FIFREEZE:
		/* the filesystem stops taking writes: everything first */
		return C_FLUSH_ALL;
	case FICLONE: case FICLONERANGE:
	case X_ALLOCSP: case X_FREESP: case X_ALLOCSP64: case X_FREESP64:
	case X_RESVSP: case X_UNRESVSP: case X_RESVSP64: case X_UNRESVSP64:
	case X_ZERO_RANGE:
		return C_AROUND;
	case FIDEDUPERANGE:
		/* dedupe changes nothing a read can see (the kernel shares
		 * only ranges whose bytes are equal): the source and every
		 * destination are written back first, so that the kernel
		 * compares what the program wrote; the caches stay valid */
		return C_FLUSH;
	}
	if (type == 'X') {
		switch (nr) {
		case X_NR_DIOINFO: case X_NR_FSGETXATTRA:
		case X_NR_FSGEOMETRY_V1: case X_NR_FSGEOMETRY_V4:
		case X_NR_FSGEOMETRY: case X_NR_FSCOUNTS:
		case X_NR_GET_RESBLKS:
			return C_PASS;
		case X_NR_GETBMAP: case X_NR_GETBMAPA: case X_NR_GETBMAPX:
			return C_FLUSH;
		case X_NR_GOINGDOWN:
			/* a shutdown: what the kernel would have had dirty
			 * (the default flag flushes it first) */
			return C_FLUSH_ALL;
		}
	}
	/* The terminal requests ('T') get ENOTTY on a regular file without
	 * touching it (isatty, tcgetattr), and so do the FIONREAD-style
	 * ones above; a sizeless read-only request of type 0 neither. */
	if (type == 'T')
		return C_PASS;
	return C_DEMOTE;
}

/* The source of a clone: written back first (the clone takes what is on
 * disk), and its cache reopened, because after the clone its blocks are
 * shared: a fresh wtio inode looks for shared extents again at its first
 * write and unshares before it accepts an overwrite (src/reserve.c);
 * the one open before the clone would not. Done before the ioctl (a
 * clone that then fails only cost a reopen); the new inode looks at its
 * first write, after the clone, unless another thread of the program
 * writes the source between the two (racing its own clone): then that
 * overwrite's space shows at write-back again. */
static void clone_source(int fd)
{
	struct shim_ofd *o;

	if (remote_served(fd)) {
		shim_demote_fd(fd, "a clone's source");
		return;
	}
	if (!(o = fd_get(fd)))
		return;
	ofd_flush(o, false);
	inode_around(o->inode, NULL, NULL, false);
	ofd_put(o);
}

/* The descriptors an argument names, besides the ioctl's own fd, and
 * whether they are read (a source: flushed) or changed (demoted). */
static void arg_fds(unsigned long req, unsigned long arg, int fd)
{
	unsigned int type = _IOC_TYPE(req), nr = _IOC_NR(req);

	if (req == FICLONE) {
		clone_source((int)arg);
	} else if (req == FICLONERANGE && arg) {
		clone_source((int)((struct file_clone_range *)arg)->src_fd);
	} else if (req == FIDEDUPERANGE && arg) {
		struct file_dedupe_range *d = (void *)arg;

		shim_flush_fd(fd);
		for (unsigned int i = 0; i < d->dest_count; i++)
			shim_flush_fd((int)d->info[i].dest_fd);
	} else if (type == 'X' && nr == X_NR_SWAPEXT && arg) {
		struct shim_xfs_swapext *s = (void *)arg;

		shim_demote_fd((int)s->sx_fdtarget, "XFS_IOC_SWAPEXT");
		shim_demote_fd((int)s->sx_fdtmp, "XFS_IOC_SWAPEXT");
	} else if (type == 'X' && nr == X_NR_EXCHANGE_RANGE && arg) {
		shim_demote_fd(((struct shim_xfs_exchange_range *)arg)->file1_fd,
			       "XFS_IOC_EXCHANGE_RANGE");
	} else if (type == 'f' && nr == EXT4_NR_MOVE_EXT && arg) {
		shim_demote_fd((int)((uint32_t *)arg)[1], "EXT4_IOC_MOVE_EXT");
	}
}

struct ioctl_call {
	int fd;
	unsigned long req, arg;
	int ret, err;
};

static long real_ioctl_fn(void *p)
{
	struct ioctl_call *c = p;

	c->ret = real_ioctl(c->fd, c->req, c->arg);
	c->err = errno;
	return 0;
}

/* FIONREAD on a regular file: bytes between the position and EOF. */
static int fionread(struct shim_ofd *o, int *out)
{
	off_t size;

	pthread_mutex_lock(&o->pos_lock);
	ofd_io_read(o);
	if (!o->wf) {
		ofd_io_done(o);
		pthread_mutex_unlock(&o->pos_lock);
		return 0;
	}
	size = wtio_file_size(o->wf);
	*out = size > o->pos ? (int)(size - o->pos > INT32_MAX ? INT32_MAX :
				     size - o->pos) : 0;
	ofd_io_done(o);
	pthread_mutex_unlock(&o->pos_lock);
	return 1;
}

/* Shared mode: fd is the holder's (or cls is C_FLUSH_ALL). */
static int shared_ioctl(int fd, unsigned long req, unsigned long arg,
			int cls)
{
	int64_t pos, size;
	int r;

	switch (cls) {
	case C_FLUSH_ALL:
		remote_syncfs();
		break;
	case C_FIONREAD:
		if (!arg)
			break;
		/* bytes between the OFD's position and the holder's size */
		r = remote_fd_op(fd, HOP_LSEEK, 0, SEEK_CUR, 0, &pos, NULL);
		if (r == 1 && pos >= 0) {
			int64_t res;

			r = remote_fd_op(fd, HOP_SIZE, 0, 0, 0, &res, &size);
			if (r == 1 && res >= 0) {
				*(int *)arg = size > pos ? (int)(size - pos >
					INT32_MAX ? INT32_MAX : size - pos) : 0;
				return 0;
			}
		}
		if (r < 0)
			return (int)shim_ret(r);
		break;
	case C_FLUSH:
		r = shim_flush_fd(fd);
		if (r < 0)
			return (int)shim_ret(r);
		break;
	case C_AROUND:
	case C_DEMOTE: {
		char why[48];

		snprintf(why, sizeof(why), "ioctl %#lx", req);
		shim_debug("fd %d: %s: passing the file through", fd, why);
		r = remote_demote_fd(fd, HDEMOTE_PROGRAM);
		if (r < 0)
			return (int)shim_ret(r);
		break;
	}
	default:
		break;
	}
	return real_ioctl(fd, req, arg);
}

SHIM_API int ioctl(int fd, unsigned long req, ...)
{
	struct ioctl_call c = { .fd = fd, .req = req };
	struct shim_ofd *o;
	va_list ap;
	int cls;

	va_start(ap, req);
	c.arg = va_arg(ap, unsigned long);
	va_end(ap);
	shim_resolve();
	if (shim_vfork_child())
		return real_ioctl(fd, req, c.arg);
	cls = classify(req);
	if (remote_on) {
		/* named in the argument: sources and others passed through,
		 * dedupe's written back */
		arg_fds(req, c.arg, fd);
		if (cls == C_FLUSH_ALL || remote_served(fd))
			return shared_ioctl(fd, req, c.arg, cls);
		return real_ioctl(fd, req, c.arg);
	}
	if (cls == C_FLUSH_ALL) {
		shim_flush_all(false);
		return real_ioctl(fd, req, c.arg);
	}
	/* named in the argument: sources written back, others demoted */
	arg_fds(req, c.arg, fd);
	o = fd_get(fd);
	if (!o)
		return real_ioctl(fd, req, c.arg);
	switch (cls) {
	case C_FIONREAD: {
		int n;

		if (c.arg && fionread(o, &n)) {
			ofd_put(o);
			*(int *)c.arg = n;
			return 0;
		}
		break;
	}
	case C_FLUSH:
		ofd_flush(o, false);
		break;
	case C_AROUND:
		shim_debug("fd %d: ioctl %#lx changes the file: cache dropped around it",
			   fd, req);
		inode_around(o->inode, real_ioctl_fn, &c, false);
		ofd_put(o);
		errno = c.err;
		return c.ret;
	case C_DEMOTE: {
		char why[48];

		ofd_put(o);
		snprintf(why, sizeof(why), "ioctl %#lx", req);
		shim_demote_fd(fd, why);
		return real_ioctl(fd, req, c.arg);
	}
	default:
		break;
	}
	ofd_put(o);
	return real_ioctl(fd, req, c.arg);
}
