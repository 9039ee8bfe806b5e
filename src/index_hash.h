/* SPDX-License-Identifier: MIT */
/*
 * index_hash.h - where (inode, folio index) lies in the context's hash
 * table: cache.c's locked lookups and cache_peek.c's lockless one.
 */
#ifndef WTIO_INDEX_HASH_H
#define WTIO_INDEX_HASH_H

#include <stdint.h>

struct wtio_inode;

static inline uint64_t wtio_index_hash(const struct wtio_inode *inode,
				       uint64_t index)
{
	uint64_t h = (uint64_t)(uintptr_t)inode * 0x9e3779b97f4a7c15ull;

	h ^= index * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0x165667b19e3779f9ull;
	return h ^ (h >> 32);
}

#endif /* WTIO_INDEX_HASH_H */
