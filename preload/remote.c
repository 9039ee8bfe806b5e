/* SPDX-License-Identifier: MIT */
/*
 * remote.c - the transport to the cache holder in shared mode (wtio-run
 * --shared): one SOCK_SEQPACKET connection per thread, made at the
 * thread's first call on a served file, with its data buffer (a memfd the
 * holder maps too); one synchronous request and reply at a time;
 * descriptors as SCM_RIGHTS. The first HELLO of a process image says
 * where it comes from: HELLO_CLAIM with the fork token after a fork (the
 * parent's references become the child's), HELLO_EXEC otherwise (a new
 * image: whatever an earlier image of this pid held is dropped; for a pid
 * the holder has never seen, a plain HELLO).
 *
 * Once the holder is gone (a send or a receive fails, or the connection
 * ends) every call answers EIO, for good: the dirty data of its files died
 * with it, and the kernel's copy would be stale.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/capability.h>

#include "memfd_size.h"
#include "remote.h"
#include "shim.h"

static struct sockaddr_un holder_addr;
static socklen_t holder_len;
static atomic_bool dead;

/* Every connection of the process (a fork child closes them all). */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rconn *conns;
static __thread struct rconn *me;
static pthread_key_t conn_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_made;

/* The image's first HELLO (one at a time: it claims or drops state). */
static pthread_mutex_t hello_lock = PTHREAD_MUTEX_INITIALIZER;
static bool hello_done;
static unsigned int hello_flags = HELLO_EXEC;
static uint64_t hello_token;

static ssize_t (*next_sendmsg)(int, const struct msghdr *, int);

/*
 * The connections' descriptors are the process's too: a shell's
 * `exec 3<file` dup2s over a low number, a child closes everything before
 * its exec. So a connection lives at a high number (three quarters of the
 * descriptor limit, at most 3072: fd tables grow with the highest
 * number), and a close, dup2 or close_range of it moves it away first.
 */
static _Atomic unsigned char own[RTAB_MAX];

static int high_fd(int fd)
{
	struct rlimit rl;
	rlim_t base = 768;
	int nfd;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		base = (rl.rlim_cur < 4096 ? rl.rlim_cur : 4096) * 3 / 4;
	nfd = real.fcntl(fd, F_DUPFD_CLOEXEC, (int)base);
	if (nfd < 0)
		return fd;
	real.close(fd);
	return nfd;
}

static void own_set(int fd, bool on)
{
	if (fd >= 0 && fd < RTAB_MAX)
		atomic_store(&own[fd], on);
}

bool rc_own_fd(int fd)
{
	return fd >= 0 && fd < RTAB_MAX &&
	       atomic_load_explicit(&own[fd], memory_order_relaxed);
}

void rc_evict(int fd)
{
	struct rconn *c;

	pthread_mutex_lock(&reg_lock);
	for (c = conns; c; c = c->next)
		if (c->sock == fd) {
			int nfd = real.fcntl(fd, F_DUPFD_CLOEXEC, 3);

			if (nfd < 0)
				break;
			nfd = high_fd(nfd);
			c->sock = nfd;
			own_set(nfd, true);
			own_set(fd, false);
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

int rc_close_range(unsigned int first, unsigned int last, int flags,
		   int (*next)(unsigned int, unsigned int, int))
{
	unsigned int from = first, fd;
	int r = 0;

	/* the pieces between the connections; CLOSE_RANGE_CLOEXEC (4)
	 * closes nothing */
	if (flags & 4)
		return next(first, last, flags);
	for (fd = first; fd <= last && fd < RTAB_MAX; fd++) {
		if (!rc_own_fd((int)fd))
			continue;
		if (fd > from && (r = next(from, fd - 1, flags)) < 0)
			return r;
		from = fd + 1;
	}
	if (from <= last)
		r = next(from, last, flags);
	return r;
}

bool remote_config(const char *addr)
{
	size_t n;

	if (!addr || addr[0] != '@')
		return false;
	n = strlen(addr + 1);
	if (!n || n >= sizeof(holder_addr.sun_path))
		return false;
	holder_addr.sun_family = AF_UNIX;
	holder_addr.sun_path[0] = 0;
	memcpy(holder_addr.sun_path + 1, addr + 1, n);
	holder_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	/* not through sendmsg's interposer (lease.c), which would look at
	 * our SCM_RIGHTS */
	next_sendmsg = (__typeof__(next_sendmsg))dlsym(RTLD_NEXT, "sendmsg");
	return next_sendmsg != NULL;
}

static atomic_bool foreign;
static __thread bool fsize_short;

bool remote_foreign(void)
{
	return atomic_load_explicit(&foreign, memory_order_relaxed);
}

bool remote_open_kernel(void)
{
	return remote_foreign() || fsize_short;
}

bool remote_dead(void)
{
	return atomic_load_explicit(&dead, memory_order_relaxed);
}

static int gone(const char *why)
{
	if (!atomic_exchange(&dead, true))
		shim_debug("the cache holder is gone (%s): every call on a served file fails with EIO from now on",
			   why);
	return -EIO;
}

/* A memfd of size bytes, mapped: 0 or -errno. */
static int buffer_make(size_t size, int *mfd, void **map)
{
	/* sealable: the holder seals it against shrinking (a shrink would
	 * fault its copies) */
	int fd = memfd_create("wtio-holder-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;
	int e;

	if (fd < 0)
		return -errno;
	/* -EFBIG under a small ulimit -f, instead of SIGXFSZ */
	e = memfd_size(fd, (off_t)size, real.ftruncate);
	if (e < 0) {
		real.close(fd);
		return e;
	}
	p = real.mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		e = -errno;
		real.close(fd);
		return e;
	}
	*mfd = fd;
	*map = p;
	return 0;
}

static int xfer(struct rconn *c, const struct holder_req *rq, int send_fd,
		struct holder_reply *rp, int *recv_fd, bool cloexec)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 4)];
	} cb;
	struct iovec iov = { (void *)rq, sizeof(*rq) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t r;

	if (recv_fd)
		*recv_fd = -1;
	if (send_fd >= 0) {
		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &send_fd, sizeof(int));
	}
	/* A request sent is always answered and waited for, signals or
	 * not: a reply left unread would answer the next request. */
	do
		r = next_sendmsg(c->sock, &mh, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(*rq))
		return r < 0 ? -errno : -EIO;
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = rp;
	iov.iov_len = sizeof(*rp);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cb.b;
	mh.msg_controllen = sizeof(cb.b);
	do
		r = recvmsg(c->sock, &mh, cloexec ? MSG_CMSG_CLOEXEC : 0);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(*rp))
		return -EIO;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t i, n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (recv_fd && *recv_fd < 0)
				*recv_fd = fd;
			else
				real.close(fd);
		}
	}
	return 0;
}

int rc_call(struct rconn *c, const struct holder_req *rq, int send_fd,
	    struct holder_reply *rp, int *recv_fd, bool cloexec)
{
	int r;

	if (recv_fd)
		*recv_fd = -1;
	if (remote_dead())
		return -EIO;
	r = xfer(c, rq, send_fd, rp, recv_fd, cloexec);
	if (r < 0)
		return gone(strerror(-r));
	return 0;
}

static void conn_close(struct rconn *c)
{
	if (c->buf)
		munmap(c->buf, c->size);
	if (c->sock >= 0)
		real.close(c->sock);
	c->buf = NULL;
	c->sock = -1;
}

/*
 * The holder's credentials (HOP_HELLO's report): an open by a thread
 * whose own differ is the kernel's, without a round trip. Only a
 * shortcut: the holder checks every open itself (holder/creds.c), since
 * a process with fewer rights could speak the protocol without this
 * library. Asked at each open, of the calling thread (credentials are
 * per thread): a process may drop rights at any time after it connected.
 */
static struct {
	_Atomic bool known;
	uint32_t fsuid, fsgid;
	uint64_t cap_eff, groups;
} holder_cr;

static void creds_note(const struct holder_reply *rp)
{
	if (!((uint64_t)rp->val3 & HELLO_CREDS) || atomic_load(&holder_cr.known))
		return;
	holder_cr.fsuid = (uint32_t)rp->val;
	holder_cr.fsgid = (uint32_t)((uint64_t)rp->val >> 32);
	holder_cr.cap_eff = (uint64_t)rp->val2;
	holder_cr.groups = (uint64_t)rp->val3 & ~HELLO_CREDS;
	atomic_store(&holder_cr.known, true);
}

const char *remote_creds_differ(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct cap[2];
	gid_t groups[HOLDER_GROUPS_REPORTED];
	uint32_t g32[HOLDER_GROUPS_REPORTED];
	int n, i;

	if (!atomic_load(&holder_cr.known))
		return NULL;
	/* an invalid id changes nothing and returns the current one */
	if ((uint32_t)setfsuid((uid_t)-1) != holder_cr.fsuid)
		return "another fsuid";
	if ((uint32_t)setfsgid((gid_t)-1) != holder_cr.fsgid)
		return "another fsgid";
	n = getgroups(HOLDER_GROUPS_REPORTED, groups);
	if (n < 0)
		return "other supplementary groups";
	for (i = 0; i < n; i++)
		g32[i] = (uint32_t)groups[i];
	if (holder_groups_hash(g32, n) != holder_cr.groups)
		return "other supplementary groups";
	if (syscall(SYS_capget, &hdr, cap) == 0 &&
	    ((uint64_t)cap[1].effective << 32 | cap[0].effective) !=
	    holder_cr.cap_eff)
		return "other effective capabilities";
	return NULL;
}

/* Connect and greet; 0 or -errno (c closed again). */
static int conn_open(struct rconn *c)
{
	struct holder_req rq = { .op = HOP_HELLO };
	struct holder_reply rp;
	int mfd = -1, r;

	c->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	c->buf = NULL;
	if (c->sock < 0)
		return -errno;
	c->sock = high_fd(c->sock);
	do
		r = connect(c->sock, (struct sockaddr *)&holder_addr, holder_len);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		r = -errno;
		goto fail;
	}
	{
		/* the holder serves its own user only (conn.c): a process
		 * that changed its uid is not its client */
		struct ucred cr;
		socklen_t cl = sizeof(cr);

		if (getsockopt(c->sock, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 &&
		    cr.uid != geteuid()) {
			r = -EPERM;
			goto fail;
		}
	}
	r = buffer_make(HOLDER_BUF_MIN, &mfd, &c->buf);
	if (r < 0) {
		c->buf = NULL;
		goto fail;
	}
	c->size = HOLDER_BUF_MIN;
	pthread_mutex_lock(&hello_lock);
	rq.arg[0] = HOLDER_PROTO_VERSION;
	rq.arg[1] = (int64_t)c->size;
	rq.arg[2] = hello_done ? 0 : hello_flags;
	rq.arg[3] = (int64_t)(hello_done ? 0 : hello_token);
	r = xfer(c, &rq, mfd, &rp, NULL, true);
	if (r == 0 && rp.status < 0)
		r = (int)rp.status;
	if (r == 0) {
		hello_done = true;
		creds_note(&rp);
	}
	pthread_mutex_unlock(&hello_lock);
	real.close(mfd);
	if (r < 0)
		goto fail;
	return 0;
fail:
	conn_close(c);
	return r;
}

static void conn_free(void *p)
{
	struct rconn *c = p, **pc;

	pthread_mutex_lock(&reg_lock);
	for (pc = &conns; *pc; pc = &(*pc)->next)
		if (*pc == c) {
			*pc = c->next;
			break;
		}
	own_set(c->sock, false);
	pthread_mutex_unlock(&reg_lock);
	conn_close(c);
	free(c);
}

static void key_make(void)
{
	key_made = pthread_key_create(&conn_key, conn_free) == 0;
}

/* This thread is making its connection (a signal handler's call then
 * gets EIO: the greeting's lock may be this thread's). */
static __thread bool connecting;

struct rconn *rc_get(struct rconn *tmp)
{
	struct rconn *c = me;
	int r;

	if (remote_dead() || connecting || remote_foreign())
		return NULL;
	if (c && !c->busy) {
		c->busy = true;
		return c;
	}
	if (c) {
		/* a signal handler's call in the middle of this thread's:
		 * a connection of its own, closed after the call */
		memset(tmp, 0, sizeof(*tmp));
		tmp->temp = true;
		if (conn_open(tmp) < 0)
			return NULL;
		tmp->busy = true;
		return tmp;
	}
	pthread_once(&key_once, key_make);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	connecting = true;
	r = conn_open(c);
	connecting = false;
	if (r == -EFBIG) {
		/* the buffer's memfd is past RLIMIT_FSIZE (the program
		 * lowered its ulimit -f): no connection for this thread */
		free(c);
		fsize_short = true;
		return NULL;
	}
	fsize_short = false;
	if (r == -EPERM) {
		free(c);
		if (!atomic_exchange(&foreign, true))
			shim_debug("the cache holder is another user's (this process changed its uid): this process's opens are the kernel's");
		return NULL;
	}
	if (r < 0) {
		free(c);
		gone(strerror(-r));
		return NULL;
	}
	pthread_mutex_lock(&reg_lock);
	c->next = conns;
	conns = c;
	own_set(c->sock, true);
	pthread_mutex_unlock(&reg_lock);
	pthread_setspecific(conn_key, c);
	me = c;
	c->busy = true;
	return c;
}

void rc_put(struct rconn *c)
{
	if (!c)
		return;
	if (c->temp)
		conn_close(c);
	else
		c->busy = false;
}

int rc_buffer(struct rconn *c, size_t need)
{
	struct holder_req rq = { .op = HOP_BUFFER };
	struct holder_reply rp;
	size_t size = c->size;
	void *map;
	int mfd, r;

	if (need <= c->size)
		return 0;
	if (need > HOLDER_BUF_MAX)
		need = HOLDER_BUF_MAX;
	while (size < need)
		size *= 2;
	r = buffer_make(size, &mfd, &map);
	if (r < 0)
		return r;
	rq.arg[0] = (int64_t)size;
	r = rc_call(c, &rq, mfd, &rp, NULL, true);
	real.close(mfd);
	if (r == 0 && rp.status < 0)
		r = (int)rp.status;
	if (r < 0) {
		munmap(map, size);
		return r;
	}
	munmap(c->buf, c->size);
	c->buf = map;
	c->size = size;
	c->used_hi = 0;	/* a new memfd: nothing allocated yet */
	return 0;
}

/*
 * The pages of a grown buffer past HOLDER_BUF_MIN go back once the thread
 * has gone back to small calls (REVIEW B10): otherwise one 64 MiB call
 * left 64 MiB resident for the connection's life, in this process and in
 * the holder, which maps the same memfd. Not after every large call: the
 * next one would fault every page in again, in both processes, and a run
 * of 16 MiB reads went ten times slower (318 against 2703 MiB/s, on a
 * shared 2-core VM). The mapping and the memfd keep their size (the
 * holder sealed it against shrinking: a shrink under its copy would
 * fault it); MADV_REMOVE punches the pages out of the memfd itself, so
 * both mappings lose them, and a later large call faults in zeroed pages.
 * Safe between calls: one request at a time on a connection, and the
 * holder touches the buffer only while it serves one. Best effort: a
 * kernel that refuses keeps the pages, as before.
 */
void rc_trim(struct rconn *c, size_t used)
{
	static atomic_bool said;
	long pg = sysconf(_SC_PAGESIZE);
	size_t end;

	if (used > HOLDER_BUF_MIN) {
		end = used < c->size ? used : c->size;
		if (end > c->used_hi)
			c->used_hi = end;
		c->small_calls = 0;
		return;
	}
	if (c->used_hi <= HOLDER_BUF_MIN || ++c->small_calls < RC_TRIM_AFTER)
		return;
	end = c->used_hi;
	if (pg > 0)
		end = (end + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	if (end > c->size)
		end = c->size;
	c->used_hi = 0;
	c->small_calls = 0;
	if (madvise((char *)c->buf + HOLDER_BUF_MIN, end - HOLDER_BUF_MIN,
		    MADV_REMOVE) < 0 && !atomic_exchange(&said, true))
		shim_debug("a grown buffer keeps its memory (madvise MADV_REMOVE: %s)",
			   strerror(errno));
}

void rc_atfork_prepare(void)
{
	pthread_mutex_lock(&hello_lock);
	pthread_mutex_lock(&reg_lock);
}

void rc_atfork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
	pthread_mutex_unlock(&hello_lock);
}

void rc_atfork_child(uint64_t token)
{
	struct rconn *c;

	/* The parent's connections are the parent's: the holder knows a
	 * connection's process from SO_PEERCRED at connect. Closed unused
	 * (the structures are left behind: no malloc here). */
	for (c = conns; c; c = c->next) {
		if (c->buf)
			munmap(c->buf, c->size);
		if (c->sock >= 0) {
			own_set(c->sock, false);
			real.close(c->sock);
		}
	}
	conns = NULL;
	me = NULL;
	/* or this thread's exit would close the numbers again */
	if (key_made)
		pthread_setspecific(conn_key, NULL);
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&hello_lock, NULL);
	hello_done = false;
	hello_flags = token ? HELLO_CLAIM : 0;
	hello_token = token;
}
