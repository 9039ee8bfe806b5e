/* SPDX-License-Identifier: MIT */
/*
 * remote_io.c - the calls on a descriptor the holder serves (shared mode):
 * data through the connection's buffer (split at its largest size), and
 * every other request on the OFD, by path (stat's size), or on all of the
 * process's served descriptors (exec, spawn, an io_uring). A reply
 * HOLDER_DEMOTED has switched the descriptor to the kernel (remote_ops.c):
 * the caller then makes the real call.
 */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "remote.h"
#include "shim.h"

/* ---- data ---- */

/* Copy n bytes between the iovecs (from byte skip on) and buf. */
static void iov_copy(const struct iovec *iov, int cnt, size_t skip,
		     char *buf, size_t n, bool to_buf)
{
	int i;

	for (i = 0; i < cnt && n; i++) {
		size_t l = iov[i].iov_len, k;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		k = l - skip < n ? l - skip : n;
		if (to_buf)
			memcpy(buf, (char *)iov[i].iov_base + skip, k);
		else
			memcpy((char *)iov[i].iov_base + skip, buf, k);
		buf += k;
		n -= k;
		skip = 0;
	}
}

int64_t remote_fsize_arg(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= (rlim_t)INT64_MAX)
		return 0;
	return (int64_t)rl.rlim_cur + 1;
}

int64_t remote_fsize_reply(int64_t status, int64_t val)
{
	if (status == -EFBIG && val == 1)
		raise(SIGXFSZ);
	return status;
}

ssize_t remote_rw(int fd, const struct iovec *iov, int cnt, off_t off,
		  int rwf, bool write, bool *passthrough)
{
	struct rconn tmp, *c;
	size_t total = 0, done = 0;
	ssize_t ret = 0;
	int i;

	*passthrough = false;
	if (off < -1 || cnt < 0 || cnt > IOV_MAX)
		return -EINVAL;
	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
			return -EINVAL;
		total += iov[i].iov_len;
	}
	if (rwf & ~SHIM_RWF_KNOWN)
		return -EOPNOTSUPP;
	c = rc_get(&tmp);
	if (!c)
		return -EIO;
	/* best effort: a buffer that cannot grow splits the call */
	rc_buffer(c, total);
	do {
		struct holder_req rq = { .op = write ? HOP_WRITE : HOP_READ };
		struct holder_reply rp;
		size_t chunk = total - done < c->size ? total - done : c->size;
		int r;

		rq.arg[0] = off < 0 ? -1 : off + (off_t)done;
		/* nothing to write moves no position, O_APPEND or not (the
		 * kernel checks the access mode and returns): a pwrite */
		if (write && !total)
			rq.arg[0] = 0;
		rq.arg[1] = (int64_t)chunk;
		rq.arg[2] = rwf;
		if (write) {
			rq.arg[3] = remote_fsize_arg();
			iov_copy(iov, cnt, done, c->buf, chunk, true);
		}
		r = remote_ask_fd(c, fd, &rq, &rp);
		if (r == 0) {
			*passthrough = !done;
			break;
		}
		if (r < 0 || rp.status < 0) {
			/* a signal only where the call fails: bytes moved
			 * before are what it did (the kernel cut it) */
			ret = r < 0 ? r : done ? rp.status :
				remote_fsize_reply(rp.status, rp.val);
			break;
		}
		if ((uint64_t)rp.status > chunk) {
			ret = -EPROTO;
			break;
		}
		if (!write)
			iov_copy(iov, cnt, done, c->buf, (size_t)rp.status,
				 false);
		done += (size_t)rp.status;
		if ((size_t)rp.status < chunk)
			break;
	} while (done < total);
	rc_trim(c, total);
	rc_put(c);
	/* bytes moved before an error are what the call did */
	return done ? (ssize_t)done : ret;
}

/* ---- everything else on an OFD ---- */

int remote_fd_op(int fd, int op, int64_t a0, int64_t a1, int64_t a2,
		 int64_t *res, int64_t *val)
{
	struct holder_req rq = { .op = (uint32_t)op, .arg = { a0, a1, a2 } };
	struct holder_reply rp;
	struct rconn tmp, *c;
	int r;

	if (!remote_served(fd))
		return 0;
	c = rc_get(&tmp);
	if (!c)
		return -EIO;
	r = remote_ask_fd(c, fd, &rq, &rp);
	rc_put(c);
	if (r == 1) {
		*res = rp.status;
		if (val)
			*val = rp.val;
	}
	return r;
}

/* A request about no OFD: 0 (*rp set) or -EIO. */
static int ask(int op, int64_t a0, int64_t a1, struct holder_reply *rp)
{
	struct holder_req rq = { .op = (uint32_t)op, .arg = { a0, a1 } };
	struct rconn tmp, *c = rc_get(&tmp);
	int r;

	if (!c)
		return -EIO;
	r = rc_call(c, &rq, -1, rp, NULL, true);
	rc_put(c);
	return r;
}

int remote_size_ino(dev_t dev, ino_t ino, off_t *size)
{
	struct holder_reply rp;

	if (!remote_on || remote_dead() || !remote_dev_known(dev) ||
	    ask(HOP_SIZE_INO, (int64_t)dev, (int64_t)ino, &rp) < 0)
		return SHIM_SIZE_KERNEL;
	if (rp.status == HOLDER_NOT_SERVED)
		return rp.val == 1 ? SHIM_SIZE_AGAIN : SHIM_SIZE_KERNEL;
	if (rp.status != 0)
		return SHIM_SIZE_KERNEL;
	*size = (off_t)rp.val;
	return SHIM_SIZE_SERVED;
}

int remote_demote_fd(int fd, int reason)
{
	int64_t res;
	int r;

	if (!remote_served(fd) || shim_vfork_child())
		return 0;
	r = remote_fd_op(fd, HOP_DEMOTE, reason, 0, 0, &res, NULL);
	if (r == 0)		/* HOLDER_DEMOTED: switched */
		return 1;
	if (r < 0)
		return r;
	return res < 0 ? (int)res : -EPROTO;
}

void remote_demote_inheritable(bool all, int reason)
{
	int i, high = remote_tab_high();

	if (!remote_on || !remote_tab_count())
		return;
	for (i = 0; i < high; i++) {
		int fl;

		if (!remote_served(i))
			continue;
		fl = real.fcntl(i, F_GETFD);
		if (all || (fl >= 0 && !(fl & FD_CLOEXEC)))
			remote_demote_fd(i, reason);
	}
}

/* exec: the inherited descriptors pass through (the new image may run
 * without the shim), then the holder is told; it drops the old image's
 * references when the new one says HELLO_EXEC, or when the pid exits.
 * -EIO: the holder is gone (a served descriptor would reach the new
 * image with its data lost). */
int remote_before_exec(void)
{
	struct holder_reply rp;
	int i, high;

	if (!remote_on || shim_vfork_child() || !remote_tab_count())
		return 0;
	remote_demote_inheritable(false, HDEMOTE_EXEC);
	high = remote_tab_high();
	for (i = 0; i < high; i++) {
		int fl;

		if (!remote_served(i))
			continue;
		fl = real.fcntl(i, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			return -EIO;	/* could not be passed through */
	}
	return ask(HOP_EXEC, 0, 0, &rp);
}

int remote_syncfs(void)
{
	struct holder_reply rp;
	int r;

	if (!remote_on || remote_foreign())
		return 0;
	r = ask(HOP_SYNCFS, 0, 0, &rp);
	if (r < 0)
		return r;
	return rp.status < 0 ? (int)rp.status : 0;
}
