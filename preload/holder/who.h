/* SPDX-License-Identifier: MIT */
/*
 * who.h - who else has a file open, for the holder's "open elsewhere".
 */
#ifndef WTIO_HOLDER_WHO_H
#define WTIO_HOLDER_WHO_H

#include <stddef.h>

/* "open elsewhere (pid P (comm) fd N flags 0F, ...; the holder closed or
 * created it M ms ago)" for the file of fd, in buf. The holder's own fd
 * and skip are not counted. Walks /proc: for --debug only. */
void hwho_elsewhere(int fd, int skip, char *buf, size_t len);

#endif
