/* SPDX-License-Identifier: MIT */
/* iov_iter.h - walking a caller's iovec array while copying. */
#ifndef WTIO_IOV_ITER_H
#define WTIO_IOV_ITER_H

#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>

struct wtio_iov_iter {
	const struct iovec *iov;
	int nr;
	int idx;
	size_t off;	/* into iov[idx] */
};

static inline void wtio_iter_init(struct wtio_iov_iter *it,
				  const struct iovec *iov, int nr)
{
	it->iov = iov;
	it->nr = nr;
	it->idx = 0;
	it->off = 0;
}

/* Total bytes of an iovec array (checked by the API beforehand). */
static inline size_t wtio_iov_length(const struct iovec *iov, int nr)
{
	size_t len = 0;

	while (nr-- > 0)
		len += iov[nr].iov_len;
	return len;
}

/* Copy n bytes out of the iovecs (to_iov false) or into them (true). */
static inline void wtio_iter_copy(struct wtio_iov_iter *it, char *buf,
				  size_t n, bool to_iov)
{
	while (n && it->idx < it->nr) {
		const struct iovec *v = &it->iov[it->idx];
		size_t chunk = v->iov_len - it->off;

		if (chunk > n)
			chunk = n;
		if (to_iov)
			memcpy((char *)v->iov_base + it->off, buf, chunk);
		else
			memcpy(buf, (const char *)v->iov_base + it->off, chunk);
		buf += chunk;
		n -= chunk;
		it->off += chunk;
		if (it->off == v->iov_len) {
			it->idx++;
			it->off = 0;
		}
	}
}

/* Step over n bytes without copying them. */
static inline void wtio_iter_skip(struct wtio_iov_iter *it, size_t n)
{
	while (n && it->idx < it->nr) {
		size_t chunk = it->iov[it->idx].iov_len - it->off;

		if (chunk > n) {
			it->off += n;
			return;
		}
		n -= chunk;
		it->idx++;
		it->off = 0;
	}
}

#endif
