/* SPDX-License-Identifier: MIT */
/*
 * shim_size.h - the one parser of a cache size (--cache-size=,
 * WTIO_CACHE_SIZE), shared by wtio-run and the preload library so that
 * both accept and refuse the same values.
 */
#ifndef WTIO_SHIM_SIZE_H
#define WTIO_SHIM_SIZE_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "wtio.h"

/* The smallest cache wtio accepts: WTIO_MIN_FOLIOS 4 KiB folios. */
#define SHIM_CACHE_MIN	((uint64_t)WTIO_MIN_FOLIOS * 4096)

/* Physical memory, or 0 if unknown. */
static inline uint64_t shim_phys_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/*
 * "DIGITS[K|M|G|T]" (binary units, an optional trailing "B" or "iB"), at
 * least SHIM_CACHE_MIN and at most the machine's physical memory.
 * 0 and *out set, or -EINVAL (not a size), -ERANGE (too small or larger
 * than memory); *why says which, for the message.
 */
static inline int shim_parse_size(const char *s, uint64_t *out,
				  const char **why)
{
	uint64_t v = 0, mem;
	unsigned int shift = 0;
	const char *p = s;

	*why = "not a size (digits, then an optional K, M, G or T)";
	if (!s || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - 9) / 10) {
			*why = "too large";
			return -ERANGE;
		}
		v = v * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	case 't': case 'T': shift = 40; p++; break;
	default: break;
	}
	if (shift && *p == 'i' && p[1] == 'B')
		p += 2;
	else if (*p == 'B')
		p++;
	if (*p)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift)) {
		*why = "too large";
		return -ERANGE;
	}
	v <<= shift;
	if (v < SHIM_CACHE_MIN) {
		*why = "smaller than wtio's minimum (64K: 16 blocks of 4K)";
		return -ERANGE;
	}
	mem = shim_phys_mem();
	if (mem && v > mem) {
		*why = "larger than this machine's memory";
		return -ERANGE;
	}
	*out = v;
	return 0;
}

#endif
