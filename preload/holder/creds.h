/* SPDX-License-Identifier: MIT */
/*
 * creds.h - whether the process that sent a request has the holder's
 * credentials (so that the holder's open is the one the kernel would let
 * it make).
 */
#ifndef WTIO_HOLDER_CREDS_H
#define WTIO_HOLDER_CREDS_H

#include <stdint.h>
#include <sys/types.h>

/* The holder's own credentials, read once before the first connection.
 * 0 or -errno (then every open is answered "not served"). */
int hcreds_init(void);

/* The process of a connection, as the holder reads its credentials (one
 * connection thread uses it at a time). */
struct hcreds_peer {
	pid_t pid;		/* SO_PEERCRED at accept */
	int pidfd;		/* SO_PEERPIDFD of it, or -1 */
	int status_fd;		/* its /proc/PID/status, once known to be
				 * its, or -1 */
};

/* Close what p holds. */
void hcreds_peer_close(struct hcreds_peer *p);

/*
 * The sender of a request: sender, as the kernel attached it to the
 * message (SCM_CREDENTIALS; 0 if none came), on p's connection. NULL if
 * it is p's process and its current credentials are the holder's in
 * every way a permission decision can depend on, else why not (for
 * --debug).
 */
const char *hcreds_differ(struct hcreds_peer *p, pid_t sender);

/*
 * The sender may set O_NOATIME on a file owned by owner (the kernel's
 * inode_owner_or_capable: its fsuid, or CAP_FOWNER in the holder's user
 * namespace). 0 or -EPERM.
 */
int hcreds_may_own(struct hcreds_peer *p, pid_t sender, uid_t owner);

/* What HOP_HELLO's reply carries for the client's own cheap check
 * (holder_proto.h, HELLO_CREDS). */
void hcreds_report(int64_t *val, int64_t *val2, int64_t *val3);

#endif
