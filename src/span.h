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
	struct wtio_span sp;
	size_t room;

	sp.pos = off + (off_t)done;
	sp.index = (uint64_t)sp.pos >> inode->folio_shift;
	sp.from = (uint32_t)(sp.pos & (inode->folio_size - 1));
	room = inode->folio_size - sp.from;
	sp.to = sp.from + (uint32_t)(len - done < room ? len - done : room);
	return sp;
}

#endif /* WTIO_SPAN_H */
