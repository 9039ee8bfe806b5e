/* SPDX-License-Identifier: MIT */
/*
 * ops.h - one connection's requests (holder_proto.h) mapped to the wtio
 * calls of the holder's context.
 */
#ifndef WTIO_HOLDER_OPS_H
#define WTIO_HOLDER_OPS_H

#include <stddef.h>
#include <sys/types.h>

#include "../holder_proto.h"
#include "creds.h"

struct hproc;

/* One client thread's connection. */
struct hconn {
	int sock;
	pid_t pid;		/* SO_PEERCRED */
	struct hcreds_peer peer;	/* pid again, its pidfd (creds.c) */
	pid_t req_pid;		/* the request's sender (SCM_CREDENTIALS),
				 * 0 if the kernel named none */
	struct hproc *proc;	/* after HELLO */
	char *buf;		/* the client's memfd, mapped */
	size_t buf_size;
};

/* Map the client's buffer (memfd taken: closed here). 0 or -errno. */
int hops_set_buffer(struct hconn *c, int memfd, uint64_t size);
/* One request after HELLO. fds: the descriptors that came with it (one
 * used is set to -1; the caller closes the rest). *send_fd: a descriptor
 * to send with the reply, or -1 (the caller closes it after sending). */
void hops_handle(struct hconn *c, const struct holder_req *req, int *fds,
		 int nfds, struct holder_reply *rep, int *send_fd);

#endif
