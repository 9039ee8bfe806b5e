/* SPDX-License-Identifier: MIT */
/* read.h - the buffered read path (buffered_read.c) and filling folios
 * from disk (read_io.c). */
#ifndef WTIO_READ_H
#define WTIO_READ_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct wtio_file;
struct wtio_folio;
struct wtio_inode;

ssize_t wtio_buffered_read(struct wtio_file *file, const struct iovec *iov,
			   int iovcnt, off_t off, unsigned int flags);
/* Read the blocks in mask that are not uptodate from disk into a locked
 * folio; zero what lies past EOF. Returns 0 or a negative errno. */
int wtio_folio_read_blocks(struct wtio_inode *inode, struct wtio_folio *folio,
			   uint64_t mask);

#endif /* WTIO_READ_H */
