/* SPDX-License-Identifier: MIT */
/* read_io.h - filling folios from disk (read_io.c), for the read paths. */
#ifndef WTIO_READ_IO_H
#define WTIO_READ_IO_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct wtio_folio;
struct wtio_inode;

/* Read len bytes at off into the iovecs (which it advances), resubmitting
 * after short counts. A zero-byte read is end of file: the caller
 * zero-fills the rest. Returns bytes read or a negative errno. */
ssize_t wtio_read_full(struct wtio_inode *inode, struct iovec *iov,
		       int iovcnt, off_t off, size_t len);
/* The same for one iovec per folio, nr_folios of them, of a contiguous
 * file range: those whose memory follows each other are merged (in
 * place) into one buffer, which an io_uring ring reads without pinning
 * pages when it lies in the registered arena. */
ssize_t wtio_read_folios(struct wtio_inode *inode, struct iovec *iov,
			 int nr_folios, off_t off, size_t len);
/* Merge the iovecs whose memory follows the one before, in place;
 * returns how many are left. */
int wtio_iov_merge(struct iovec *iov, int n);
/* After got bytes came from disk for [from, to) of a folio: zero what
 * the disk did not give and what lies past i_size (cached bytes past
 * i_size are zero). */
void wtio_zero_past_eof(struct wtio_inode *inode, struct wtio_folio *folio,
			uint32_t from, uint32_t to, size_t got);
/* Blocks of folio index that lie (at least partly) below size. */
uint64_t wtio_blocks_below(struct wtio_inode *inode, uint64_t index,
			   int64_t size);

#endif /* WTIO_READ_IO_H */
