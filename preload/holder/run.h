/* SPDX-License-Identifier: MIT */
/*
 * run.h - wtio-run --shared: the cache holder and the program under it.
 */
#ifndef WTIO_HOLDER_RUN_H
#define WTIO_HOLDER_RUN_H

/*
 * Run argv (the environment already set for the shim) under a cache
 * holder. log_fd: where the holder's messages go (-1: stderr). Returns
 * wtio-run's exit status (the program's, or 126/127 as exec's failure);
 * a program killed by a signal makes this process die of the same one.
 */
int holder_run(char **argv, int log_fd);

#endif
