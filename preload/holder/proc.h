/* SPDX-License-Identifier: MIT */
/*
 * proc.h - the program's processes as the holder sees them: each one's
 * references to OFDs (its descriptors of served files), fork tokens,
 * exec, and death (pidfds).
 */
#ifndef WTIO_HOLDER_PROC_H
#define WTIO_HOLDER_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "table.h"

struct hproc;

/* Start the thread that hears processes end. 0 or -errno. */
int hproc_start(void);
/* A connection's HELLO from pid (SO_PEERCRED), pidfd its pidfd (taken:
 * kept or closed), HELLO_* flags, a fork token. The process, with a
 * reference for the connection (hproc_put). NULL: no memory. */
struct hproc *hproc_hello(pid_t pid, int pidfd, unsigned int flags,
			  uint64_t token);
void hproc_put(struct hproc *p);
pid_t hproc_pid(const struct hproc *p);
/* The process now names o (a new open): takes the caller's reference. */
void hproc_adopt(struct hproc *p, struct hofd *o);
/* HOP_REF / HOP_UNREF of an OFD the process names: 0 (HOP_UNREF: or the
 * last close's write-back result), -EBADF if it names none of that id. */
int hproc_ref(struct hproc *p, uint64_t id);
int hproc_unref(struct hproc *p, uint64_t id);
/* The OFD id, referenced (hofd_put), if p names it: a process reaches
 * only the opens it was given (its own, a claimed fork's), never another
 * process's by guessing an id. NULL: it names none of that id (EBADF). */
struct hofd *hproc_ofd(struct hproc *p, uint64_t id);
/* fork: a token pinning every reference of p for its child (> 0), or
 * -errno; then the child's pid (or -errno: pins dropped). If p dies in
 * between, the pins go to the processes that may be its child (orphan.c),
 * or are released when there is none. */
int64_t hproc_fork_prepare(struct hproc *p);
int hproc_fork_done(struct hproc *p, uint64_t token, int64_t child);
/* The process is about to exec: its references go at its new image's
 * HELLO_EXEC (or its death). */
void hproc_exec(struct hproc *p);

/* Wait until the end of every process that said HELLO has been heard
 * (their references dropped), at most timeout_ms. true if so. */
bool hproc_wait_ended(int timeout_ms);

#endif
