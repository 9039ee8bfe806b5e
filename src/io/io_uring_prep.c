/* SPDX-License-Identifier: MIT */
/*
 * io_uring_prep.c - one request as one SQE: the fixed-buffer form where
 * the buffer lies in one registered chunk of the arena, the non-vectored
 * form for one iovec (5.6+), the vectored one otherwise.
 */
#include <limits.h>
#include <stdint.h>

#include "uring.h"

/* The registered chunk holding all of [buf, buf + len), or -1. */
static int uring_fixed_index(const struct wtio_io_backend *be,
			     const struct uring_dom *ud, const void *buf,
			     size_t len)
{
	uintptr_t start = (uintptr_t)be->arena, p = (uintptr_t)buf;
	uint64_t rel;

	if (!len || p < start || p - start >= be->arena_size ||
	    len > be->arena_size - (p - start))
		return -1;
	rel = p - start;
	if (rel / URING_BUF_CHUNK != (rel + len - 1) / URING_BUF_CHUNK)
		return -1;
	return (int)(rel / URING_BUF_CHUNK);
}

void wtio_uring_prep(struct wtio_io_backend *be, bool fixed,
		     struct io_uring_sqe *sqe, struct wtio_io_req *req)
{
	struct uring_dom *ud = be->private;
	bool rd = req->op == WTIO_IO_READ, one;
	unsigned int len;
	void *buf;
	int idx;

	switch (req->op) {
	case WTIO_IO_READ:
	case WTIO_IO_WRITE:
		buf = req->iov[0].iov_base;
		len = (unsigned int)req->iov[0].iov_len;
		/* The non-vectored ops take a 32-bit length. */
		one = req->iovcnt == 1 && req->iov[0].iov_len <= UINT_MAX;
		idx = -1;
		if (one && fixed)
			idx = uring_fixed_index(be, ud, buf, len);
		if (idx >= 0 && rd)
			io_uring_prep_read_fixed(sqe, req->fd, buf, len,
						 req->off, idx);
		else if (idx >= 0)
			io_uring_prep_write_fixed(sqe, req->fd, buf, len,
						  req->off, idx);
		else if (one && ud->have_rw && rd)
			io_uring_prep_read(sqe, req->fd, buf, len, req->off);
		else if (one && ud->have_rw)
			io_uring_prep_write(sqe, req->fd, buf, len, req->off);
		else if (rd)
			io_uring_prep_readv(sqe, req->fd, req->iov,
					    req->iovcnt, req->off);
		else
			io_uring_prep_writev(sqe, req->fd, req->iov,
					     req->iovcnt, req->off);
		/* Like psync: the flags are write flags (RWF_DSYNC, ...). */
		sqe->rw_flags = rd ? 0 : req->rw_flags;
		break;
	case WTIO_IO_FSYNC:
		io_uring_prep_fsync(sqe, req->fd, 0);
		break;
	case WTIO_IO_FDATASYNC:
		io_uring_prep_fsync(sqe, req->fd, IORING_FSYNC_DATASYNC);
		break;
	}
	io_uring_sqe_set_data(sqe, req);
}
