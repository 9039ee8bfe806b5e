/* SPDX-License-Identifier: MIT */
/*
 * world.h - whether a process of the program names files as the holder
 * does: the same mount namespace and the same root.
 */
#ifndef WTIO_HOLDER_WORLD_H
#define WTIO_HOLDER_WORLD_H

#include <stdbool.h>
#include <sys/types.h>

/* pid resolves paths as the holder does (false also when it cannot be
 * told: a process gone, /proc unreadable). */
bool hworld_same(pid_t pid);

#endif
