/* SPDX-License-Identifier: MIT */
/*
 * fds.h - whether the holder has descriptors to spare for one more
 * served file.
 */
#ifndef WTIO_HOLDER_FDS_H
#define WTIO_HOLDER_FDS_H

#include <stdbool.h>

/* Serving one more file would leave the holder fewer than its reserve of
 * descriptors (for connections, demotions and replies): the open is not
 * served. Cheap: the descriptors are counted only now and then. */
bool hfds_short(void);

#endif
