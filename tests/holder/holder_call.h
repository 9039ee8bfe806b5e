/* SPDX-License-Identifier: MIT */
/*
 * holder_call.h - the test clients' side of the holder protocol
 * (preload/holder_proto.h) spoken by hand: one request, one reply, a
 * descriptor passed either way, and a failure that names the process.
 */
#ifndef TESTS_HOLDER_CALL_H
#define TESTS_HOLDER_CALL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../preload/holder_proto.h"

#define CHECKF(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d (pid %d): %s: ", __FILE__,	\
			__LINE__, (int)getpid(), #cond);		\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		exit(1);						\
	}								\
} while (0)

/* Send req on sock (fd_in with it unless -1) and read its reply into
 * *out (may be NULL); a descriptor that came with it goes to *fd_out
 * (-1 if none), or is closed where fd_out is NULL. Returns its status. */
static inline int64_t holder_call(int sock, const struct holder_req *req,
				  int fd_in, struct holder_reply *out,
				  int *fd_out)
{
	struct holder_reply rep;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)req, sizeof(*req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (fd_in >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd_in, sizeof(int));
	}
	n = sendmsg(sock, &m, MSG_NOSIGNAL);
	CHECKF(n == sizeof(*req), "sendmsg: %s", strerror(errno));
	memset(&m, 0, sizeof(m));
	iov.iov_base = &rep;
	iov.iov_len = sizeof(rep);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	CHECKF(n == sizeof(rep), "recvmsg: %zd %s", n, strerror(errno));
	if (fd_out)
		*fd_out = -1;
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_type == SCM_RIGHTS) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
			if (fd_out)
				*fd_out = fd;
			else
				close(fd);
		}
	if (out)
		*out = rep;
	return rep.status;
}

#endif /* TESTS_HOLDER_CALL_H */
