/* SPDX-License-Identifier: MIT */
/*
 * huge_map.c - the anonymous mappings that cache hits touch at random
 * (the arena, the folio descriptors, the hash buckets, the inodes' slot
 * chunks), advised to huge pages: the kernel's page cache reaches its
 * struct pages and data through huge mappings, and a TLB miss per hit
 * (a two-dimensional walk under a hypervisor) would cost more than the
 * lookup itself. From 1 MiB on, the length is rounded up to whole 2 MiB
 * pages, which also makes the kernel align the mapping to one.
 */
#include <sys/mman.h>

#include "huge_map.h"
#include "sys.h"

#define WTIO_HUGE_SIZE (2ul << 20)

static size_t huge_len(size_t bytes)
{
	if (bytes >= WTIO_HUGE_SIZE / 2)
		bytes = (bytes + WTIO_HUGE_SIZE - 1) & ~(WTIO_HUGE_SIZE - 1);
	return bytes;
}

void *wtio_huge_map(size_t bytes)
{
	void *p = wtio_sys_mmap(NULL, huge_len(bytes), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* Advice only: without transparent huge pages it does nothing. */
	madvise(p, huge_len(bytes), MADV_HUGEPAGE);
	return p;
}

void wtio_huge_unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, huge_len(bytes));
}
