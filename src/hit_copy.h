/* SPDX-License-Identifier: MIT */
/*
 * hit_copy.h - the copy of a cache hit into the caller's buffer: 32-byte
 * vector loads and stores where the CPU has AVX2. For 4 KiB, glibc's
 * memcpy takes `rep movsb`, which was measured about 9% slower per hit
 * on this project's machine (AMD EPYC, docs/BENCHMARKS.md "Cached 4 KiB
 * hits at memory speed"); elsewhere it is memcpy. Plain loads either
 * way: the lockless hit's argument (docs/DESIGN.md) holds for it as for
 * memcpy, the bytes only stored, never looked at before the re-check.
 */
#ifndef WTIO_HIT_COPY_H
#define WTIO_HIT_COPY_H

#include <stddef.h>
#include <string.h>

#include "iov_iter.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WTIO_HIT_COPY_AVX2 1

__attribute__((target("avx2")))
static void wtio_hit_copy_avx2(char *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i + 128 <= n; i += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
		__m256i d = _mm256_loadu_si256((const __m256i *)(src + i + 96));

		_mm256_storeu_si256((__m256i *)(dst + i), a);
		_mm256_storeu_si256((__m256i *)(dst + i + 32), b);
		_mm256_storeu_si256((__m256i *)(dst + i + 64), c);
		_mm256_storeu_si256((__m256i *)(dst + i + 96), d);
	}
	memcpy(dst + i, src + i, n - i);
}
#else
#define WTIO_HIT_COPY_AVX2 0
#endif

/* wtio_iter_copy into the iovecs of n bytes of a hit at src. */
static inline void wtio_iter_copy_hit(struct wtio_iov_iter *it,
				      const char *src, size_t n)
{
#if WTIO_HIT_COPY_AVX2
	if (n >= 128 && it->idx < it->nr &&
	    it->iov[it->idx].iov_len - it->off >= n &&
	    __builtin_cpu_supports("avx2")) {
		wtio_hit_copy_avx2((char *)it->iov[it->idx].iov_base + it->off,
				   src, n);
		wtio_iter_skip(it, n);
		return;
	}
#endif
	wtio_iter_copy(it, (char *)src, n, true);
}

#endif /* WTIO_HIT_COPY_H */
