/* SPDX-License-Identifier: MIT */
/* iov_iter.h - walking a caller's iovec array while copying. */
#ifndef WTIO_IOV_ITER_H
#define WTIO_IOV_ITER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

static inline void wtio_copy_nt(char *dst, const char *src, size_t n);

/* How wtio_iter_copy_how copies. */
enum wtio_iter_how { WTIO_ITER_FROM, WTIO_ITER_TO, WTIO_ITER_FROM_NT };

/* Copy n bytes out of the iovecs (FROM, or FROM_NT: wtio_copy_nt) or
 * into them (TO). */
static inline void wtio_iter_copy_how(struct wtio_iov_iter *it, char *buf,
				      size_t n, enum wtio_iter_how how)
{
	while (n && it->idx < it->nr) {
		const struct iovec *v = &it->iov[it->idx];
		size_t chunk = v->iov_len - it->off;

		if (chunk > n)
			chunk = n;
		if (how == WTIO_ITER_TO)
			memcpy((char *)v->iov_base + it->off, buf, chunk);
		else if (how == WTIO_ITER_FROM_NT)
			wtio_copy_nt(buf, (const char *)v->iov_base + it->off,
				     chunk);
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

/* Copy n bytes out of the iovecs (to_iov false) or into them (true). */
static inline void wtio_iter_copy(struct wtio_iov_iter *it, char *buf,
				  size_t n, bool to_iov)
{
	wtio_iter_copy_how(it, buf, n, to_iov ? WTIO_ITER_TO : WTIO_ITER_FROM);
}

/* memcpy with non-temporal stores where dst is 16-byte aligned: for data
 * the cache will not read again (drop-behind writes), which then does
 * not read the destination's lines in before overwriting them, nor push
 * other data out of the CPU's caches. The stores are ordered (sfence)
 * before this returns, so the folio's unlock publishes them. */
static inline void wtio_copy_nt(char *dst, const char *src, size_t n)
{
#if defined(__SSE2__)
	size_t head = (size_t)(-(uintptr_t)dst & 15);

	if (n < 256) {
		memcpy(dst, src, n);
		return;
	}
	memcpy(dst, src, head);
	dst += head;
	src += head;
	n -= head;
	for (; n >= 64; n -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + 48));

		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
	_mm_sfence();
	memcpy(dst, src, n);
#else
	memcpy(dst, src, n);
#endif
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
