/* SPDX-License-Identifier: MIT */
/*
 * shim_size.h - the one parser of a cache size (--cache-size=,
 * WTIO_CACHE_SIZE) and of a folio size (--folio-size=, WTIO_FOLIO_SIZE),
 * shared by wtio-run, the preload library and the holder so that all
 * accept and refuse the same values.
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
 * "DIGITS[K|M|G|T]" (binary units, an optional trailing "B" or "iB") into
 * *out: 0, or -EINVAL (not a size), -ERANGE (too large); *why says which.
 */
static inline int shim_parse_bytes(const char *s, uint64_t *out,
				   const char **why)
{
	uint64_t v = 0;
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
	*out = v << shift;
	return 0;
}

/*
 * A cache size: at least SHIM_CACHE_MIN and at most the machine's
 * physical memory. 0 and *out set, or -EINVAL, -ERANGE with *why.
 */
static inline int shim_parse_size(const char *s, uint64_t *out,
				  const char **why)
{
	uint64_t v, mem;
	int ret = shim_parse_bytes(s, &v, why);

	if (ret)
		return ret;
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

/*
 * A folio size (--folio-size=, WTIO_FOLIO_SIZE): a power of two from 4K
 * to 1M, as wtio_config's folio_size. 0 and *out set, or -EINVAL with
 * *why.
 */
static inline int shim_parse_folio_size(const char *s, uint32_t *out,
					const char **why)
{
	uint64_t v;
	int ret = shim_parse_bytes(s, &v, why);

	if (ret)
		return ret;
	if (v < 4096 || v > (1u << 20) || (v & (v - 1))) {
		*why = "not a power of two from 4K to 1M";
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* The budget must hold WTIO_MIN_FOLIOS folios: 0, or -ERANGE with *why. */
static inline int shim_check_budget(uint64_t cache, uint32_t folio,
				    const char **why)
{
	if (cache / folio < WTIO_MIN_FOLIOS) {
		*why = "the cache holds fewer than 16 folios of that size";
		return -ERANGE;
	}
	return 0;
}

#endif
