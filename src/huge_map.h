/* SPDX-License-Identifier: MIT */
/* huge_map.h - zeroed anonymous mappings advised to huge pages (huge_map.c). */
#ifndef WTIO_HUGE_MAP_H
#define WTIO_HUGE_MAP_H

#include <stddef.h>

/* bytes of zeroed memory, page-aligned, or NULL. */
void *wtio_huge_map(size_t bytes);
/* Unmap what wtio_huge_map(bytes) gave (NULL: nothing). */
void wtio_huge_unmap(void *p, size_t bytes);

#endif /* WTIO_HUGE_MAP_H */
