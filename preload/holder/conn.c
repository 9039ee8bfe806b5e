/* SPDX-License-Identifier: MIT */
/*
 * conn.c - the holder's SOCK_SEQPACKET socket at an abstract address: the
 * accepting thread, and one thread per connection that reads a request,
 * does it (ops.c) and answers, until the client closes. Only the
 * holder's own user may connect (an abstract address has no file
 * permissions). The first message must be HOP_HELLO. Each request comes
 * with its sender's pid from the kernel (SO_PASSCRED), for the check of
 * its credentials at each open (creds.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "creds.h"
#include "deadline.h"
#include "log.h"
#include "ops.h"
#include "proc.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define MAX_FDS 4

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conns_cond = PTHREAD_COND_INITIALIZER;
static int nr_conns;

static void conn_gone(void)
{
	pthread_mutex_lock(&conns_lock);
	if (--nr_conns == 0)
		pthread_cond_broadcast(&conns_cond);
	pthread_mutex_unlock(&conns_lock);
}

int hconn_listen(char *name, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint64_t rnd = 0;
	socklen_t alen;
	int s, n;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
		     "wtio-holder-%d-%016llx", (int)getpid(),
		     (unsigned long long)rnd);
	if (n < 0 || (size_t)n + 2 > len)
		return -ENAMETOOLONG;
	snprintf(name, len, "@%s", a.sun_path + 1);
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&a, alen) < 0 || listen(s, 128) < 0) {
		int err = -errno;

		close(s);
		return err;
	}
	return s;
}

/* One message in: the request, up to MAX_FDS descriptors and its
 * sender's pid as the kernel attached it (SO_PASSCRED; 0 if none).
 * Returns its size, 0 at the end, -errno. */
static ssize_t recv_req(int s, struct holder_req *req, int *fds, int *nfds,
			pid_t *pid)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int)) +
			 CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { req, sizeof(*req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	*pid = 0;
	do {
		n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		size_t k, cnt;

		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred cr;

			memcpy(&cr, CMSG_DATA(c), sizeof(cr));
			*pid = cr.pid;
			continue;
		}
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(fd));
			if (*nfds < MAX_FDS)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (n > 0 && (m.msg_flags & MSG_TRUNC))
		return -EPROTO;
	return n;
}

static int send_reply(int s, const struct holder_reply *rep, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)rep, sizeof(*rep) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do {
		n = sendmsg(s, &m, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*rep) ? 0 : -1;
}

static void close_fds(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* HELLO: version, buffer, the process (exec, fork claim). */
static int hello(struct hconn *c, const struct holder_req *req, int *fds,
		 int nfds)
{
	int pidfd = -1, ret;
	socklen_t len = sizeof(pidfd);

	if (req->op != HOP_HELLO)
		return -EPROTO;
	if (req->arg[0] != HOLDER_PROTO_VERSION)
		return -EPROTO;
	if (nfds < 1 || fds[0] < 0)
		return -EBADF;
	ret = hops_set_buffer(c, fds[0], (uint64_t)req->arg[1]);
	fds[0] = -1;
	if (ret)
		return ret;
	if (getsockopt(c->sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = -1;
	c->proc = hproc_hello(c->pid, pidfd, (unsigned int)req->arg[2],
			      (uint64_t)req->arg[3]);
	return c->proc ? 0 : -ENOMEM;
}

static void *conn_thread(void *arg)
{
	struct hconn *c = arg;
	struct holder_req req;
	struct holder_reply rep;
	int fds[MAX_FDS], nfds, send_fd;
	ssize_t n;

	for (;;) {
		n = recv_req(c->sock, &req, fds, &nfds, &c->req_pid);
		if (n <= 0) {
			close_fds(fds, nfds);
			break;
		}
		if (n != (ssize_t)sizeof(req)) {
			memset(&rep, 0, sizeof(rep));
			rep.status = -EPROTO;
			send_fd = -1;
		} else if (!c->proc) {
			memset(&rep, 0, sizeof(rep));
			rep.status = hello(c, &req, fds, nfds);
			if (rep.status == 0)
				hcreds_report(&rep.val, &rep.val2, &rep.val3);
			send_fd = -1;
		} else {
			hops_handle(c, &req, fds, nfds, &rep, &send_fd);
		}
		close_fds(fds, nfds);
		n = send_reply(c->sock, &rep, send_fd);
		if (send_fd >= 0)
			close(send_fd);
		if (n < 0 || (!c->proc && rep.status))
			break;
	}
	if (c->proc)
		hproc_put(c->proc);
	if (c->buf)
		munmap(c->buf, c->buf_size);
	close(c->sock);
	hcreds_peer_close(&c->peer);
	free(c);
	conn_gone();
	return NULL;
}

/* The connection's process (its pidfd, which says when that pid stops
 * naming it: creds.c), and each request's sender from the kernel. */
static int conn_creds(struct hconn *c)
{
	socklen_t len = sizeof(c->peer.pidfd);
	int one = 1;

	c->peer.pid = c->pid;
	c->peer.status_fd = -1;
	if (getsockopt(c->sock, SOL_SOCKET, SO_PEERPIDFD, &c->peer.pidfd,
		       &len) < 0)
		c->peer.pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (c->peer.pidfd >= 0)
		fcntl(c->peer.pidfd, F_SETFD, FD_CLOEXEC);
	return setsockopt(c->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
}

static void *accept_thread(void *arg)
{
	int lsock = (int)(long)arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		struct ucred cr;
		socklen_t len = sizeof(cr);
		struct hconn *c;
		pthread_t t;
		int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);

		if (s < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);	/* EMFILE and the like */
			continue;
		}
		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
		    cr.uid != geteuid() || !(c = calloc(1, sizeof(*c)))) {
			close(s);
			continue;
		}
		c->sock = s;
		c->pid = cr.pid;
		c->peer.pidfd = c->peer.status_fd = -1;
		/* without the senders' pids no open is served (creds.c) */
		if (conn_creds(c) < 0)
			hlog("no SO_PASSCRED on a connection of process %d: %s",
			     (int)cr.pid, strerror(errno));
		pthread_mutex_lock(&conns_lock);
		nr_conns++;
		pthread_mutex_unlock(&conns_lock);
		if (pthread_create(&t, &attr, conn_thread, c)) {
			hlog("no thread for a connection of process %d",
			     (int)cr.pid);
			close(s);
			hcreds_peer_close(&c->peer);
			free(c);
			conn_gone();
		}
	}
	return NULL;
}

int hconn_start(int lsock)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, accept_thread, (void *)(long)lsock);
	pthread_attr_destroy(&attr);
	return -err;
}

bool hconn_wait_idle(int timeout_ms)
{
	struct timespec ts;
	bool idle;

	if (timeout_ms >= 0)
		hdeadline(&ts, timeout_ms);
	pthread_mutex_lock(&conns_lock);
	while (nr_conns > 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&conns_cond, &conns_lock);
		else if (pthread_cond_timedwait(&conns_cond, &conns_lock, &ts))
			break;
	}
	idle = nr_conns == 0;
	pthread_mutex_unlock(&conns_lock);
	return idle;
}
