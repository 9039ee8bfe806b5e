/* SPDX-License-Identifier: MIT */
/* span.h - cutting a file range into the parts that single folios hold. */
#ifndef WTIO_SPAN_H
#define WTIO_SPAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inode.h"

/* The part of [off, off + len) from byte done on that one folio holds. */
struct wtio_span {
	off_t pos;		/* file offset where the part starts */
	uint64_t index;		/* the folio */
	uint32_t from, to;	/* bytes [from, to) of the folio */
};

static inline struct wtio_span wtio_span_at(const struct wtio_inode *inode,
					    off_t off, size_t len, size_t done)
{
	/* One load of the shape: a lockless reader racing a change of the
	 * file's folio size (folio_size.c) gets one size or the other. */
	uint32_t shift = inode->folio_shift;
	struct wtio_span sp;
	size_t room;

	sp.pos = off + (off_t)done;
	sp.index = (uint64_t)sp.pos >> shift;
	sp.from = (uint32_t)(sp.pos & ((1u << shift) - 1));
	room = (1u << shift) - sp.from;
	sp.to = sp.from + (uint32_t)(len - done < room ? len - done : room);
	return sp;
}

#endif /* WTIO_SPAN_H */
