/* SPDX-License-Identifier: MIT */
/* shadow.c - the in-memory copy of what the file must hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsx.h"

void fsx_shadow_init(struct fsx_shadow *s, uint64_t cap)
{
	s->data = calloc(1, cap ? cap : 1);
	if (!s->data) {
		fprintf(stderr, "wtio-fsx: out of memory\n");
		exit(2);
	}
	s->size = 0;
	s->cap = cap;
	s->sh = NULL;
}

void fsx_shadow_write(struct fsx_shadow *s, const void *buf, size_t len,
		      uint64_t off)
{
	memcpy(s->data + off, buf, len);
	if (off + len > s->size)
		s->size = off + len;
}

void fsx_shadow_truncate(struct fsx_shadow *s, uint64_t len)
{
	if (len < s->size)
		memset(s->data + len, 0, s->size - len);
	s->size = len;
}

uint8_t fsx_pattern(uint64_t opnum, uint64_t off)
{
	uint64_t z = opnum * 0x9e3779b97f4a7c15ull + off * 0xbf58476d1ce4e5b9ull;

	z ^= z >> 31;
	z *= 0x94d049bb133111ebull;
	return (uint8_t)((z >> 40) % 255 + 1);
}

void fsx_fill(uint8_t *buf, size_t len, uint64_t opnum, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = fsx_pattern(opnum, off + i);
}
