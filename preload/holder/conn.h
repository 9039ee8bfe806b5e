/* SPDX-License-Identifier: MIT */
/*
 * conn.h - the holder's socket: listening, accepting, one thread per
 * connection (one client thread each).
 */
#ifndef WTIO_HOLDER_CONN_H
#define WTIO_HOLDER_CONN_H

#include <stdbool.h>
#include <stddef.h>

/* Bind and listen at a fresh abstract address; its name, "@...", into
 * name (for HOLDER_ENV). The listening descriptor, or -errno. */
int hconn_listen(char *name, size_t len);
/* Start accepting on it (a thread). 0 or -errno. */
int hconn_start(int lsock);
/* Wait until no connection is open, at most timeout_ms (< 0: no limit).
 * true if none is. */
bool hconn_wait_idle(int timeout_ms);

#endif
