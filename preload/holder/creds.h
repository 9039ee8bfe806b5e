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

/*
 * The sender of a request: pid, as the kernel attached it to the message
 * (SCM_CREDENTIALS; 0 if none came), conn_pid and conn_pidfd the
 * connection's process (SO_PEERCRED and SO_PEERPIDFD at accept). NULL if
 * its current credentials are the holder's in every way a permission
 * decision can depend on, else why not (for --debug).
 */
const char *hcreds_differ(pid_t pid, pid_t conn_pid, int conn_pidfd);

/*
 * The sender may set O_NOATIME on a file owned by owner (the kernel's
 * inode_owner_or_capable: its fsuid, or CAP_FOWNER in the holder's user
 * namespace). 0 or -EPERM.
 */
int hcreds_may_own(pid_t pid, pid_t conn_pid, int conn_pidfd, uid_t owner);

/* What HOP_HELLO's reply carries for the client's own cheap check
 * (holder_proto.h, HELLO_CREDS). */
void hcreds_report(int64_t *val, int64_t *val2, int64_t *val3);

#endif
